"""Learning site-wide boilerplate from the stream itself.

Real pages carry prose that every page of a site repeats: a cookie notice, a newsletter pitch, an
"about us" blurb, a comment policy, a sidebar of headlines. It is as dense in stop words as the
article, so it adds shingles that make two different stories of one site look alike and two copies
of one story at different sites look less alike than they are.

What sets it apart is its company. A boilerplate block repeats next to *different* content on
every page of a site; an article paragraph repeats only next to (nearly) the same content, in the
copies and updated versions of its own story. So for every block of at least ``min_words`` words
the learner keeps, per site, the distinct *contexts* it has been seen in: a context is a bottom-k
sketch (the ``sketch_size`` smallest block fingerprints) of a page it was on, and a page is a new
context for a block only if it is neither similar to nor an excerpt of any context stored for
that block. *Similar*: estimated Jaccard similarity over blocks of at least
``same_page_similarity``; two versions of one story share most blocks (a 12-paragraph story with
one paragraph rewritten: J ~ 0.85), two different stories of one site share only the site's
prose (J ~ 0.1-0.4). *An excerpt*: at least ``same_page_containment`` of its blocks are in a
context ``excerpt_ratio`` times its size. A teaser of a story the site published shares only the
story's lead (J ~ 0.3), but half or more of its own blocks are in the story (its headline,
byline and an unlearnt block or two are all it adds), and the story is two to four times its
size; two short stories of one site may be mostly the same prose, but they are alike in size.
Once a block has been seen in ``min_pages`` distinct contexts on one site, it is boilerplate, for
every site from then on (this catches prose shared by a network of sites at the first page of the
next one).

The excerpt test is one-way, the new page in an older one, because a page that came first
cannot know what will quote it: a teaser that arrives *before* its story still teaches the lead as
prose (the generator's teasers, like most real ones, come after the story). On generated news with
teasers (``benchmarks/eval_grid.py``) the excerpt test, with 32-block sketches, keeps the lead of
about 40 more of 240 teasers, at unchanged precision; with 8-block sketches the estimate is too
coarse to help.

What it cannot tell apart: a site whose pages are mostly shared prose around a one-paragraph article
looks like one story updated again and again, so its prose is not learnt (documented in the README).

A page is observed *before* it is filtered, so the second page of a new site already loses the
prose it shares with the first. The signal does not depend on any dedup decision, so a page falsely
matched because of boilerplate still teaches the learner. It does depend on arrival order, like
every streaming decision, and is deterministic given that order.

The state is bounded: per site a counter capped at ``max_blocks_per_site`` (oldest entries dropped
first), and a capped set of boilerplate blocks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["BoilerplateLearner"]

Sketch = tuple[int, ...]


def _similarity(a: Sketch, b: Sketch, k: int) -> float:
    """Bottom-k estimate of the Jaccard similarity of two sets from their k-smallest sketches."""
    union = sorted(set(a) | set(b))[:k]
    both = set(a) & set(b)
    return sum(1 for value in union if value in both) / len(union)


def _containment(a: Sketch, b: Sketch, k: int) -> float:
    """Bottom-k estimate of the share of set A found in set B: of A's sketched values that B's
    sketch can answer for (those below its largest value, when it is full), the share B holds."""
    limit = b[-1] if len(b) >= k else None
    answerable = [value for value in a if limit is None or value <= limit]
    if not answerable:
        return 0.0
    held = set(b)
    return sum(1 for value in answerable if value in held) / len(answerable)


@dataclass
class BoilerplateLearner:
    """Tracks the contexts of text blocks per site and flags the ones that recur in many.

    Args:
        min_pages: distinct contexts (pages with different content) that make a block
            boilerplate; >= 2.
        min_pages_unknown_site: the same for pages of no known site (site ''). They are pooled, so
            copies of one wire story at different outlets look like different contexts of its
            paragraphs; a higher bar keeps a story with a few copies from being learnt as prose.
        sketch_size: fingerprints kept per context (bottom-k sketch of the page's blocks).
        same_page_similarity: pages at least this similar (Jaccard over blocks) are one context.
        same_page_containment: a page with at least this share of its blocks in an older context
            is that context again (a teaser of the story, not a new page around the same prose)...
        excerpt_ratio: ...if that context has at least this many times its blocks (sketches hold
            every block of pages with fewer than ``sketch_size``): a teaser is a part of its story,
            while two short stories of one site, mostly prose, are alike in size.
        min_words: blocks with fewer words are never learnt, so short fragments ("Share", "Read
            more", a lone word between two links) never remove words from an article.
        max_blocks_per_site: bound on the per-site table.
        max_boilerplate: bound on the set of known boilerplate blocks.
    """

    min_pages: int = 2
    min_pages_unknown_site: int = 5
    min_words: int = 5
    sketch_size: int = 32
    same_page_similarity: float = 0.5
    same_page_containment: float = 0.5
    excerpt_ratio: float = 1.5
    max_blocks_per_site: int = 20_000
    max_boilerplate: int = 200_000

    def __post_init__(self) -> None:
        if self.min_pages < 2 or self.min_pages_unknown_site < 2:
            raise ValueError(
                "min_pages and min_pages_unknown_site must be >= 2 (a block on one page is just "
                f"content), got {self.min_pages} and {self.min_pages_unknown_site}"
            )
        if self.min_words < 1:
            raise ValueError(f"min_words must be >= 1, got {self.min_words}")
        if self.excerpt_ratio < 1.0:
            raise ValueError(f"excerpt_ratio must be >= 1, got {self.excerpt_ratio!r}")
        if self.sketch_size < 1:
            raise ValueError(f"sketch_size must be >= 1, got {self.sketch_size}")
        for name in ("same_page_similarity", "same_page_containment"):
            if not 0.0 < getattr(self, name) <= 1.0:
                raise ValueError(f"{name} must be in (0, 1], got {getattr(self, name)!r}")
        if self.max_blocks_per_site < 1 or self.max_boilerplate < 1:
            raise ValueError("the learner's bounds must be positive")
        self._contexts: dict[str, dict[int, tuple[Sketch, ...]]] = {}
        self._boilerplate: dict[int, None] = {}  # an insertion-ordered set

    def is_boilerplate(self, fingerprint: int) -> bool:
        return fingerprint in self._boilerplate

    def fingerprints(self, blocks: list[str], fingerprint: Callable[[str], int]) -> list[int | None]:
        """``fingerprint(block)`` for each learnable block, None for the others (one pass)."""
        learnable = self.learnable
        return [fingerprint(block) if learnable(block) else None for block in blocks]

    def learnable(self, block: str) -> bool:
        """Whether a (normalised) block is long enough to be learnt."""
        return block.count(" ") + 1 >= self.min_words

    def observe(self, site: str, fingerprints: Iterable[int]) -> list[int]:
        """Record one page's learnable, not yet boilerplate, blocks (their fingerprints).

        Returns the blocks this page made boilerplate (the stream shares them with the learners
        of other site partitions, see :meth:`flag`)."""
        blocks = sorted(set(fingerprints))
        flagged: list[int] = []
        if len(blocks) < 2:
            return flagged  # a lone block has no company to judge it by
        table = self._contexts.setdefault(site, {})
        needed = self.min_pages if site else self.min_pages_unknown_site
        sketch: Sketch = tuple(blocks[: self.sketch_size])
        verdicts: dict[Sketch, bool] = {}  # blocks first seen together share their stored sketches
        known = [block for block in blocks if block in table]
        if len(known) < len(blocks):  # most blocks are new: one C-level update for all of them
            first_context = (sketch,)
            table.update((block, first_context) for block in blocks if block not in table)
        for block in known:
            seen = table[block]
            if any(self._same_page(sketch, old, verdicts) for old in seen):
                continue
            seen += (sketch,)
            if len(seen) >= needed:
                table.pop(block, None)
                self._flag(block)
                flagged.append(block)
            else:
                table[block] = seen
        if len(table) > self.max_blocks_per_site:
            for block in [
                key for _, key in zip(range(len(table) - self.max_blocks_per_site * 3 // 4), table)
            ]:
                del table[block]
        return flagged

    def flag(self, fingerprints: Iterable[int]) -> None:
        """Make blocks boilerplate that another learner found (one learner per site partition
        in the stream; the set of boilerplate blocks is shared by all sites, as in batch)."""
        for fingerprint in fingerprints:
            if fingerprint not in self._boilerplate:
                self._flag(fingerprint)

    def _same_page(self, sketch: Sketch, old: Sketch, verdicts: dict[Sketch, bool]) -> bool:
        verdict = verdicts.get(old)
        if verdict is None:
            verdict = verdicts[old] = self._similar(sketch, old) or self._excerpt(sketch, old)
        return verdict

    def _similar(self, sketch: Sketch, old: Sketch) -> bool:
        """The same page again, or a version of it."""
        return _similarity(sketch, old, self.sketch_size) >= self.same_page_similarity

    def _excerpt(self, sketch: Sketch, old: Sketch) -> bool:
        """A part of a larger, older page: a teaser of the site's own story."""
        return (
            len(old) >= self.excerpt_ratio * len(sketch)
            and _containment(sketch, old, self.sketch_size) >= self.same_page_containment
        )

    def _flag(self, fingerprint: int) -> None:
        self._boilerplate[fingerprint] = None
        if len(self._boilerplate) > self.max_boilerplate:
            del self._boilerplate[next(iter(self._boilerplate))]

    @property
    def boilerplate_blocks(self) -> int:
        return len(self._boilerplate)

    def state(self) -> dict[str, Any]:
        """A JSON-friendly snapshot (for saving batch state)."""
        return {
            "contexts": {
                site: [[k, [list(c) for c in v]] for k, v in table.items()]
                for site, table in self._contexts.items()
            },
            "boilerplate": list(self._boilerplate),
        }

    def load_state(self, state: dict[str, Any]) -> None:
        self._contexts = {
            site: {int(k): tuple(tuple(int(x) for x in c) for c in v) for k, v in items}
            for site, items in state["contexts"].items()
        }
        self._boilerplate = dict.fromkeys(int(k) for k in state["boilerplate"])
