"""Learning site-wide boilerplate from the stream itself.

Real pages carry prose that every page of a site repeats: a cookie notice, a newsletter pitch, an
"about us" blurb, a comment policy, a sidebar of headlines. It is as dense in stop words as the
article, so it adds shingles that make two different stories of one site look alike and two copies
of one story at different sites look less alike than they are.

What sets it apart is its company. A boilerplate block repeats next to *different* content on
every page of a site; an article paragraph repeats only next to (nearly) the same content, in the
copies and updated versions of its own story. So for every block of at least ``min_words`` words
the learner keeps, per site, the distinct *contexts* it has been seen in (:class:`Context`: a
weighted sample of a page's blocks), and a page is a new context for a block only if it is not the
same page as any context stored for that block:

* pages of alike size are the same page when their *words* are at least ``same_page_similarity``
  alike (estimated Jaccard similarity, each block weighing its words). Two versions of one story
  share most of their text (a 12-paragraph story with one rewritten: J ~ 0.85; four paragraphs
  with one rewritten: 0.6, more with the site's prose beside them), two stories of one site only
  the site's prose. Words, not blocks: a one-line article beside eleven lines of chrome is one
  block of twelve, but two thirds of the page's words. The bar is 0.6, not one half: a site's
  briefs of 50-100 words beside 130 words of its prose share just over half their words, and at
  one half looked like one story updated, so the prose was never learnt and the briefs matched
  through it;
* a page and one at least ``excerpt_ratio`` times its size are the same page when the smaller is
  the larger's *lead*: at least ``same_page_containment`` of its words are in the larger page,
  most of them in that page's first half. A teaser after its story is the story again; a story
  after its teaser or an early version of it *supersedes* that context (the story stands for it
  from then on), so a site that sends the teaser first does not learn its story's lead as prose.
  A page of nothing but site prose (a gallery, a video page) is held by every story page of its
  site too, but after the story: it is no story's lead, and teaches its prose like any page.

Both tests weigh the stored context without the blocks its site has learnt since it was stored. A
page is observed without the blocks already known as its site's prose, while an older page's
context holds those that were not known yet: a release's "About" and forward-looking paragraphs on
a wire's early pages. Counted on one side only, they made a reissue of a release with one paragraph
corrected look like another page (0.46 alike), and its paragraphs were learnt as the wire's prose
and cut from the reissue (the thirtieth outside set).

A page fetched again at its address (:func:`.page.address_key`) is the same page, whatever else it
holds this time: a re-crawl with new sidebars, the story once its readers' comments filled a
section, an update. Judged by its words, a short story beside a sidebar of teasers that changed
shares too little with its first fetch to be its version, and its paragraphs, seen "in two
contexts", were learnt as its site's prose and cut from every later copy (the twentieth outside
set: 11 of 71 pages fetched again with comments, and 5 of 73 re-crawls, lost their story).

Once a block has been seen in ``min_pages`` distinct contexts on one site, it is that site's
boilerplate, and only that site's: a story's sentence that one site repeats in two contexts (an
aggregator's digest and its teaser) is cut at that site only, never from the story's copies
elsewhere. Prose that a network of sites shares is learnt by each of them, within its first few
pages. Learning per site is also what lets the stream learn exactly as batch does: a site's
pages pass through one site partition, in batch's order, so its learner sees what batch's sees;
a block learnt at one site never has to reach the others at a moment that depends on timing.

A page is observed *before* it is filtered, so the second page of a new site already loses the
prose it shares with the first. The signal does not depend on any dedup decision, so a page falsely
matched because of boilerplate still teaches the learner. It does depend on arrival order, like
every streaming decision, and is deterministic given that order.

The state is bounded per site: a table capped at ``max_blocks_per_site`` blocks (the oldest quarter
dropped when it is full), and at most ``max_boilerplate`` boilerplate blocks (the oldest forgotten
first). Per-site bounds, not total ones, keep batch (one learner) and the stream (one learner per
site partition) forgetting alike.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Container, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["BoilerplateLearner", "Context"]

#: The learner's state format: 5 keeps the address of each context's page; 4 keeps boilerplate
#: per site (a block may be listed for several); 3 made a block learnt at two sites everybody's
#: (site None); 2 saved a page's context with each block, not once for all its blocks; 1 counted
#: blocks, and its boilerplate was everybody's (all are read, see load_state).
STATE_FORMAT = 5
#: How a page relates to a context a block was seen in (see BoilerplateLearner._judge).
_OTHER, _SAME, _SUPERSEDED = 0, 1, 2
#: A page's lead: the blocks that start in this part of its words (per mille).
LEAD_REGION = 500


class Context:
    """A page as the learner remembers it: its learnable words, and a weighted sample of its blocks.

    A block weighs its words, so the page is judged by its *text*, not its list of blocks: a
    one-line article of 300 words weighs 300 against the 8 words of a site's header line. The
    sample is the ``k`` blocks of least *priority* ``-ln(u)/w`` (u: the block's fingerprint as a
    number in (0, 1], w: its words), a priority sample: every page holding a block gives it the same
    priority, a heavy block tends to come first, and a page of at most ``k`` blocks is kept whole,
    so its comparisons are exact. Each block keeps where it starts on its page (per mille of the
    page's words), which tells a page's lead from what follows it.

    The learner keeps one context per page for as long as any of its blocks is remembered, so the
    sample is held packed (14 bytes a block, not ~160 as tuples of Python numbers) and its
    priorities, which follow from fingerprints and words, are computed again when it is read.
    ``address``: where the page was fetched (:func:`.page.address_key`; 0: unknown)."""

    __slots__ = ("_packed", "_unpacked", "address", "legacy", "size")

    def __init__(
        self,
        size: int,
        sample: Sequence[tuple[float, int, int, int]],
        legacy: bool = False,
        *,
        unpacked: bool = False,
        address: int = 0,
    ) -> None:
        self.size = size
        self.address = address
        self.legacy = legacy  # of state format 1: its k smallest block fingerprints, unweighed
        n = len(sample)
        self._packed = struct.pack(
            f"<{n}Q{n}I{n}H", *(b[1] for b in sample), *(b[2] for b in sample), *(b[3] for b in sample)
        )
        # ``unpacked``: the page being observed, compared with every context its known blocks were
        # seen in, keeps its sample unpacked until it is stored (pack_away)
        self._unpacked: tuple[tuple[float, int, int, int], ...] | None = tuple(sample) if unpacked else None

    def pack_away(self) -> None:
        """Keep only the packed sample (a stored context is read once per page that meets it)."""
        self._unpacked = None

    @property
    def sample(self) -> tuple[tuple[float, int, int, int], ...]:
        """(priority, fingerprint, words, at ‰) of each sampled block, by priority."""
        if self._unpacked is not None:
            return self._unpacked
        n = len(self._packed) // 14
        values = struct.unpack(f"<{n}Q{n}I{n}H", self._packed)
        fingerprints, words, at = values[:n], values[n : 2 * n], values[2 * n :]
        if self.legacy:
            return tuple((0.0, f, w, a) for f, w, a in zip(fingerprints, words, at))
        return tuple(
            (-math.log(((f >> 11) + 1) * _UNIT) / w, f, w, a) for f, w, a in zip(fingerprints, words, at)
        )

    def saved(self) -> list[Any]:
        """[size, [[fingerprint, words, at], ...], legacy, address], as state keeps it."""
        return [self.size, [[f, w, a] for _, f, w, a in self.sample], self.legacy, self.address]

    def __repr__(self) -> str:
        return (
            f"Context(size={self.size}, sample={self.sample!r}, legacy={self.legacy}, address={self.address})"
        )


_UNIT = 2.0**-53


def weighted_context(
    fingerprints: Sequence[int],
    weights: Sequence[int],
    k: int,
    at: Sequence[int] | None = None,
    *,
    unpacked: bool = False,
    address: int = 0,
) -> Context:
    """The context of a page whose distinct blocks have these fingerprints, word counts and starts
    (per mille of the page's words; all 0 if not given); ``unpacked``, ``address``: see
    :class:`Context`."""
    starts = at if at is not None else [0] * len(fingerprints)
    return Context(
        sum(weights), _prioritised(fingerprints, weights, starts, k), unpacked=unpacked, address=address
    )


def _prioritised(
    fingerprints: Sequence[int], weights: Sequence[int], starts: Sequence[int], k: int
) -> tuple[tuple[float, int, int, int], ...]:
    """The ``k`` blocks of least priority, each as (priority, fingerprint, words, at ‰)."""
    blocks = sorted(
        (-math.log(((f >> 11) + 1) * _UNIT) / w, f, w, a)
        for f, w, a in zip(fingerprints, weights, starts)
        if w > 0
    )
    return tuple(blocks[:k])


def _resampled(sample: list[list[int]], k: int) -> tuple[tuple[float, int, int, int], ...]:
    """A saved sample, [fingerprint, words, at] each, with its priorities (not saved: derived)."""
    if not sample:
        return ()
    fingerprints, weights, at = zip(*((int(f), int(w), int(a)) for f, w, a in sample))
    return _prioritised(fingerprints, weights, at, k)


def _threshold(sample: tuple[tuple[float, int, int, int], ...], k: int) -> float:
    """The priority up to which a context's sample holds every block of its page."""
    return sample[-1][0] if len(sample) >= k else math.inf


def _compared(
    a: Context, b: Context, k: int, learnt: Container[int] = ()
) -> tuple[float, float, float, float]:
    """Estimated words of two pages: (in both, in A only, in B only, in both within B's lead),
    blocks in ``learnt`` (the site's boilerplate) left out.

    Below the smaller of the two thresholds both samples hold every block, so each block there is
    known to be in A, in B or in both; each counts its words divided by its chance to be there
    (``1 - exp(-w·τ)``, Horvitz-Thompson), which makes the sums estimates of the pages' words."""
    sample_a, sample_b = a.sample, b.sample
    limit = min(_threshold(sample_a, k), _threshold(sample_b, k))
    in_a = {f: w for p, f, w, _ in sample_a if p <= limit and f not in learnt}
    in_b = {f: (w, at) for p, f, w, at in sample_b if p <= limit and f not in learnt}
    both = only_a = only_b = lead = 0.0
    for f, w in in_a.items():
        weight = _estimated(w, limit)
        if f in in_b:
            both += weight
            # the part of the block that lies in B's lead: its words before LEAD_REGION
            start, words = in_b[f][1], in_b[f][0] * 1000 / max(b.size, 1)
            lead += weight * min(max((LEAD_REGION - start) / words, 0.0), 1.0)
        else:
            only_a += weight
    for f, (w, _) in in_b.items():
        if f not in in_a:
            only_b += _estimated(w, limit)
    return both, only_a, only_b, lead


def _estimated(words: int, limit: float) -> float:
    """The words a sampled block stands for in its page: its own, divided by its chance to be in
    a sample whose priorities go up to ``limit`` (all of them when the sample is the whole page)."""
    return words if limit == math.inf else words / -math.expm1(-words * limit)


def _similarity(a: Context, b: Context, k: int, learnt: Container[int] = ()) -> float:
    """Estimated Jaccard similarity of two pages' words (weighted by blocks), less ``learnt``."""
    both, only_a, only_b, _ = _compared(a, b, k, learnt)
    return both / (both + only_a + only_b) if both + only_a + only_b else 0.0


def _containment(a: Context, b: Context, k: int) -> float:
    """Estimated share of page A's words that page B holds."""
    both, only_a, _, _ = _compared(a, b, k)
    return both / (both + only_a) if both + only_a else 0.0


def _lead_of(a: Context, b: Context, k: int, bar: float, learnt: Container[int]) -> bool:
    """Whether page A is a part of page B's lead: B holds at least ``bar`` of A's words (less
    ``learnt``), most of them within B's first half. A teaser or an early version of a story is
    its start; site prose that a page of little else carries (a gallery, a brief) sits after the
    story on every story page."""
    both, only_a, _, lead = _compared(a, b, k, learnt)
    return both > 0 and both >= bar * (both + only_a) and lead >= both / 2


def _unlearnt_words(context: Context, k: int, learnt: Container[int]) -> float:
    """A context's words less those of its blocks in ``learnt`` (estimated, as :func:`_compared`
    does, when the sample is not the whole page)."""
    sample = context.sample
    limit = _threshold(sample, k)
    gone = sum(_estimated(w, limit) for _, f, w, _ in sample if f in learnt)
    return max(context.size - gone, 0.0)


@dataclass
class BoilerplateLearner:
    """Tracks the contexts of text blocks per site and flags the ones that recur in many.

    Args:
        min_pages: distinct contexts (pages with different content) that make a block
            boilerplate; >= 2.
        min_pages_unknown_site: the same for pages of no known site (site ''). They are pooled, so
            copies of one wire story at different outlets look like different contexts of its
            paragraphs; a higher bar keeps a story with a few copies from being learnt as prose.
        sketch_size: blocks sampled per context (a page of at most this many is kept whole).
        same_page_similarity: pages of alike size at least this alike (Jaccard similarity of
            their words) are one context.
        same_page_containment: a page and one ``excerpt_ratio`` times its size are one context
            when the larger holds at least this share of the smaller's words, mostly in its lead
            (a teaser and its story, whichever came first)...
        excerpt_ratio: ...and pages that far apart in size are never judged by similarity: a
            gallery of site prose alone is over half of every short story of its site.
        min_words: blocks with fewer words are never learnt, so short fragments ("Share", "Read
            more", a lone word between two links) never remove words from an article.
        max_blocks_per_site: bound on the per-site table.
        max_boilerplate: bound on the boilerplate blocks known for one site.
    """

    min_pages: int = 2
    min_pages_unknown_site: int = 5
    min_words: int = 5
    sketch_size: int = 32
    same_page_similarity: float = 0.6
    same_page_containment: float = 0.5
    excerpt_ratio: float = 1.5
    # ~150-200 pages of a site: prose that site repeats is learnt within a few of its pages, so
    # an older page's blocks are no longer needed, and the learner's memory stops growing with
    # the pages read once every site has filled its table (sites x this, ~175 bytes a block)
    max_blocks_per_site: int = 2_000
    # a site's chrome is a few dozen blocks; a rotating list of headlines adds a few a day
    max_boilerplate: int = 2_000

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
        self._contexts: dict[str, dict[int, tuple[Context, ...]]] = {}
        # site -> its boilerplate blocks (insertion-ordered: oldest first)
        self._boilerplate: dict[str, dict[int, None]] = {}
        # blocks that a learner of state format 1-3 had made everybody's (read, never added to)
        self._everywhere: frozenset[int] = frozenset()

    def is_boilerplate(self, fingerprint: int, site: str) -> bool:
        """Whether a block is boilerplate on a page of ``site``: learnt there."""
        return self.known_for(site)(fingerprint)

    def known_for(self, site: str) -> Callable[[int], bool]:
        """:meth:`is_boilerplate` for the pages of one site (a block's test in one dict lookup),
        blocks the site learns later included."""
        mine = self._boilerplate.setdefault(site, {})
        if not self._everywhere:
            return mine.__contains__
        everywhere = self._everywhere
        return lambda fingerprint: fingerprint in mine or fingerprint in everywhere

    def fingerprints(
        self, blocks: list[str], words: list[int], fingerprint: Callable[[str], int]
    ) -> list[int | None]:
        """``fingerprint(block)`` for each learnable block (``words``: its words), None for the
        others (one pass)."""
        least = self.min_words
        return [fingerprint(block) if n >= least else None for block, n in zip(blocks, words)]

    def learnable(self, block: str) -> bool:
        """Whether a (normalised) block is long enough to be learnt."""
        return block.count(" ") + 1 >= self.min_words

    def observe(
        self,
        site: str,
        fingerprints: Iterable[int],
        weights: Iterable[int] | None = None,
        *,
        address: int = 0,
    ) -> list[int]:
        """Record one page's learnable, not yet boilerplate, blocks, in page order: their
        fingerprints, and their words (``weights``; one each if not given). A block repeated on
        the page counts once, where it first appears. ``address``: where the page was fetched
        (:func:`.page.address_key`; 0: unknown): a context of the same address is the same page.

        Returns the blocks this page made boilerplate of ``site``."""
        fingerprints = list(fingerprints)
        weight_of: dict[int, int] = {}
        starts_at: dict[int, int] = {}  # words before a block's first appearance on the page
        words = 0
        for block, weight in zip(fingerprints, weights if weights is not None else [1] * len(fingerprints)):
            if block not in weight_of:
                weight_of[block], starts_at[block] = weight, words
            words += weight
        blocks = sorted(weight_of)
        flagged: list[int] = []
        if len(blocks) < 2:
            return flagged  # a lone block has no company to judge it by
        table = self._contexts.setdefault(site, {})
        needed = self.min_pages if site else self.min_pages_unknown_site
        context = weighted_context(
            blocks,
            [weight_of[block] for block in blocks],
            self.sketch_size,
            [starts_at[block] * 1000 // words for block in blocks],
            unpacked=True,
            address=address,
        )
        relations: dict[Context, int] = {}  # blocks first seen together share their stored contexts
        learnt = self._boilerplate.get(site, {})  # what the old contexts are judged without
        known = [block for block in blocks if block in table]
        if len(known) < len(blocks):  # most blocks are new: one C-level update for all of them
            first_context = (context,)
            table.update((block, first_context) for block in blocks if block not in table)
        for block in known:
            seen = table[block]
            found = [self._relation(context, old, relations, blocks, learnt) for old in seen]
            if _SAME in found:
                continue
            if _SUPERSEDED in found:
                # a story after its teaser or early version, which was its lead: the story stands
                # for that context now
                kept = tuple(old for old, relation in zip(seen, found) if relation != _SUPERSEDED)
                table[block] = (*kept, context)
                continue
            seen += (context,)
            if len(seen) >= needed:
                table.pop(block, None)
                self._flag(block, site)
                flagged.append(block)
            else:
                table[block] = seen
        if len(table) > self.max_blocks_per_site:
            for block in [
                key for _, key in zip(range(len(table) - self.max_blocks_per_site * 3 // 4), table)
            ]:
                del table[block]
        context.pack_away()
        return flagged

    def _relation(
        self,
        context: Context,
        old: Context,
        relations: dict[Context, int],
        blocks: list[int],
        learnt: Container[int],
    ) -> int:
        """How a page (its context, its sorted distinct blocks) relates to an older context:
        :data:`_SAME` page (a version of it, a part of it, or it fetched again),
        :data:`_SUPERSEDED` (it holds the older page: a story after its teaser or early version),
        or :data:`_OTHER`."""
        relation = relations.get(old)
        if relation is None:
            if context.address and old.address == context.address:
                relation = _SAME  # the same address fetched again
            elif old.legacy:
                relation = self._judge_legacy(tuple(blocks[: self.sketch_size]), old)
            else:
                relation = self._judge(context, old, learnt)
            relations[old] = relation
        return relation

    def _judge(self, context: Context, old: Context, learnt: Container[int]) -> int:
        """Pages of alike size are one context when alike (a version of one story); of a page and
        one at least ``excerpt_ratio`` times its size, the smaller must be the larger's lead (a
        teaser after its story, or a story after its teaser). Parts are never judged by
        similarity: a gallery of nothing but site prose is over half of every short story of its
        site, and as similar to it as an updated version, yet it is not that story's lead."""
        k, bar = self.sketch_size, self.same_page_containment
        old_size = _unlearnt_words(old, k, learnt) if learnt else old.size
        if old_size >= self.excerpt_ratio * context.size:
            return _SAME if _lead_of(context, old, k, bar, learnt) else _OTHER
        if context.size >= self.excerpt_ratio * old_size:
            return _SUPERSEDED if _lead_of(old, context, k, bar, learnt) else _OTHER
        return _SAME if _similarity(context, old, k, learnt) >= self.same_page_similarity else _OTHER

    def _judge_legacy(self, sketch: tuple[int, ...], old: Context) -> int:
        """The rule of state format 1 for its contexts: the ``k`` smallest block fingerprints of
        each page, unweighed, and the excerpt test one way."""
        k, kept = self.sketch_size, tuple(f for _, f, _, _ in old.sample)
        union = sorted(set(sketch) | set(kept))[:k]
        if sum(value in kept and value in sketch for value in union) >= self.same_page_similarity * len(
            union
        ):
            return _SAME
        limit = kept[-1] if len(kept) >= k else None
        answerable = [value for value in sketch if limit is None or value <= limit]
        held = sum(value in kept for value in answerable)
        excerpt = answerable and held >= self.same_page_containment * len(answerable)
        return _SAME if len(kept) >= self.excerpt_ratio * len(sketch) and excerpt else _OTHER

    def _flag(self, fingerprint: int, site: str) -> None:
        """A block is boilerplate of the site that learnt it; a site forgets its oldest block
        beyond ``max_boilerplate``."""
        mine = self._boilerplate.setdefault(site, {})
        mine[fingerprint] = None
        if len(mine) > self.max_boilerplate:
            del mine[next(iter(mine))]

    @property
    def boilerplate_blocks(self) -> int:
        """Blocks known as boilerplate, counted once for every site that learnt them."""
        return sum(map(len, self._boilerplate.values())) + len(self._everywhere)

    def state(self) -> dict[str, Any]:
        """A JSON-friendly snapshot (for saving batch state and the stream's journal)."""
        return {
            "format": STATE_FORMAT,
            "contexts": dict(self.site_states()),
            "boilerplate": self.boilerplate_state(),
        }

    def site_states(self) -> Iterator[tuple[str, dict[str, list[Any]]]]:
        """:meth:`state`'s contexts one site at a time, so that a large learner can be saved
        without a second copy of all of it in memory. A page's context is kept by every block of
        it that is remembered, and saved once: ``pages`` lists the contexts, ``blocks`` each
        block's contexts as places in that list."""
        return self._site_states(self._contexts)

    def _site_states(self, sites: Iterable[str]) -> Iterator[tuple[str, dict[str, list[Any]]]]:
        for site in sites:
            table = self._contexts.get(site)
            if table is None:
                continue
            place: dict[int, int] = {}
            pages: list[list[Any]] = []
            blocks = []
            for block, contexts in table.items():
                at = []
                for context in contexts:
                    number = place.get(id(context))
                    if number is None:
                        number = place[id(context)] = len(pages)
                        pages.append(context.saved())
                    at.append(number)
                blocks.append([block, at])
            yield site, {"pages": pages, "blocks": blocks}

    def boilerplate_state(self) -> list[list[Any]]:
        """:meth:`state`'s boilerplate blocks, each with a site it is boilerplate of (None: every
        site, as a learner of format 1-3 saved it), oldest first within a site."""
        return [[block, site] for site, blocks in self._boilerplate.items() for block in blocks] + [
            [block, None] for block in sorted(self._everywhere)
        ]

    def load_state(self, state: dict[str, Any]) -> None:
        """Load :meth:`state`. Format 3 made a block learnt at two sites everybody's: it stays so
        (it was learnt, and is not relearnt). Format 2 saved each block's contexts in full (read,
        and a context many blocks held is shared again). Format 1 counted blocks and kept one set
        of boilerplate for all sites: its boilerplate blocks are everybody's, and its contexts
        (sketches of block fingerprints) are judged as that version judged them, by their blocks,
        until new ones take their place."""
        version = state.get("format", 1)
        if version == 1:
            self._boilerplate = {}
            self._everywhere = frozenset(int(b) for b in state["boilerplate"])
            self._contexts = {
                site: {
                    int(block): tuple(Context(len(c), tuple((0.0, int(f), 1, 0) for f in c), True) for c in v)
                    for block, v in items
                }
                for site, items in state["contexts"].items()
            }
            return
        sites = state["contexts"].items()
        self.load_parts(state["boilerplate"], sites if version >= 3 else map(_format_2_site, sites))

    def load_parts(
        self, boilerplate: list[list[Any]], sites: Iterable[tuple[str, dict[str, list[Any]]]]
    ) -> None:
        """Load :meth:`boilerplate_state` and :meth:`site_states`, a site at a time."""
        self._boilerplate = {}
        everywhere = set()
        for block, site in boilerplate:
            if site is None:
                everywhere.add(int(block))
            else:
                self._boilerplate.setdefault(site, {})[int(block)] = None
        self._everywhere = frozenset(everywhere)
        self._contexts = {site: self._site_table(saved) for site, saved in sites}

    def parts_of(
        self, sites: Iterable[str]
    ) -> tuple[list[list[Any]], list[tuple[str, dict[str, list[Any]]]]]:
        """What this learner knows of ``sites`` alone, as :meth:`replace_sites` takes it: their
        boilerplate blocks, oldest first, and their contexts (:meth:`site_states`' form)."""
        boilerplate = [[block, site] for site in sites for block in self._boilerplate.get(site, ())]
        return boilerplate, list(self._site_states(sites))

    def replace_sites(
        self,
        sites: Iterable[str],
        boilerplate: list[list[Any]],
        states: Iterable[tuple[str, dict[str, list[Any]]]],
    ) -> None:
        """Forget what this learner knows of ``sites`` and take what another learner knows of them
        instead: its :meth:`boilerplate_state` and :meth:`site_states` of those sites alone. A
        learner that read every page of some sites (batch's signing processes) hands it back so."""
        for site in sites:
            self._contexts.pop(site, None)
            self._boilerplate.pop(site, None)
        for block, site in boilerplate:
            self._boilerplate.setdefault(site, {})[int(block)] = None
        for site, saved in states:
            self._contexts[site] = self._site_table(saved)

    def _site_table(self, saved: dict[str, list[Any]]) -> dict[int, tuple[Context, ...]]:
        """One site's contexts as :meth:`site_states` saved them."""
        k = self.sketch_size
        pages = [
            Context(int(size), _resampled(sample, k), bool(legacy), address=int(rest[0]) if rest else 0)
            for size, sample, legacy, *rest in saved["pages"]  # format 4 and before: no address
        ]
        return {int(block): tuple(pages[i] for i in at) for block, at in saved["blocks"]}


def _format_2_site(item: tuple[str, list[Any]]) -> tuple[str, dict[str, list[Any]]]:
    """A site's contexts as format 2 saved them (each block with its contexts in full), in the form
    of format 3: equal contexts become one."""
    site, items = item
    place: dict[str, int] = {}
    pages: list[Any] = []
    blocks = []
    for block, contexts in items:
        at = []
        for context in contexts:
            key = repr(context)
            if key not in place:
                place[key] = len(pages)
                pages.append(context)
            at.append(place[key])
        blocks.append([block, at])
    return site, {"pages": pages, "blocks": blocks}
