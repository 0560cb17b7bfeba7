"""Hard cases on request: short stories, teasers (duplicates), quoting pages and digests (not
duplicates).

Real feeds carry pages that pull a Jaccard threshold in opposite directions. A teaser (an RSS item,
a partner site's excerpt, an "in brief" column) holds only the first third of a story, yet it IS
that story; a page quoting a long passage of an earlier story (a statement, a court ruling, a wire
paragraph) shares much of its text, yet it is NOT that story. A digest (a newsletter, a "morning
briefing") gives the day's stories' headlines and first sentences: it holds a teaser of each of
them whole, yet it is none of them. Short stories of 60-100 words have few shingles, so a few edits
move their similarity a lot.

Which story is short, which copy a teaser excerpts or a quoting page quotes, which sentences,
share band, outlet and time: every such choice comes from a generator of its own, seeded from the
corpus seed, so that with every share at 0 the main generator's draws, and so the corpus, are
exactly those of the plain world. Text the hard cases need (names, titles, own sentences) is
written by the world as all text is, from the main generator: that changes the rest of the
corpus, but only when a hard case is asked for.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import accumulate
from typing import TypeVar

from .language import _word_count
from .outlets import _Draft, _Outlet, _read_more, _Story
from .shapes import EARLY_TEASER_LEAD_S
from .world import COPY_DELAY_HOURS, STORY_ENTITIES, STORY_WINDOW_HOURS, _paragraphs, _World

# --- Shares and shapes --------------------------------------------------------------------------

#: The largest share that ``teasers``, ``quotes``, ``digests`` or ``short_stories`` may ask for.
MAX_HARD_CASE_SHARE = 0.5
#: Article words (the product's tokens, inclusive) of a short story.
SHORT_STORY_WORDS = (60, 100)
#: A teaser is the first whole sentences (at least one) of one copy of a story, this share of the
#: copy's words (inclusive). It comes 1 s to COPY_DELAY_HOURS after that copy.
TEASER_SHARE_OF_STORY = (0.25, 0.40)
#: Chance that a teaser is at the outlet of the copy it excerpts (an "in brief" column); otherwise
#: it is at an outlet of the language that carries no copy of the story, if there is one.
TEASER_SAME_OUTLET_CHANCE = 0.25
#: Chance that a teaser keeps the excerpted copy's headline (an RSS item); otherwise the outlet
#: retitles the story, as copies do.
TEASER_SAME_TITLE_CHANCE = 0.5
#: Chance that a teaser ends with its outlet's "Read more" line (a link to the excerpted page).
TEASER_READ_MORE_CHANCE = 0.7
#: A quoted passage is a run of whole sentences of one copy of an earlier story: this many words
#: (inclusive), at most QUOTE_MAX_SHARE_OF_QUOTED of the copy's words, and never from its first
#: sentence if it has three or more (a statement or a ruling is quoted from the middle).
QUOTE_PASSAGE_WORDS = (30, 250)
QUOTE_MAX_SHARE_OF_QUOTED = 0.60
#: The passage's share of the quoting page's article words (inclusive): QUOTE_HIGH_SHARE, or
#: QUOTE_LOW_SHARE for QUOTE_LOW_SHARE_CHANCE of quoting pages (drawn per page). The quoting
#: story's own words are sized to land in the band, so it holds to the word.
QUOTE_HIGH_SHARE = (0.35, 0.50)
QUOTE_LOW_SHARE = (0.20, 0.30)
QUOTE_LOW_SHARE_CHANCE = 1 / 3
#: Chance that an own one-sentence paragraph naming the quoted story's first name introduces the
#: passage, and its words (inclusive; fewer than the passage's least, so own text remains).
QUOTE_INTRO_CHANCE = 0.5
QUOTE_INTRO_WORDS = (8, 16)
#: A quoting page comes 1 minute to this many hours after the page it quotes.
QUOTE_DELAY_HOURS = 24
#: A digest lists this many stories (inclusive) of one language, consecutive in publication time
#: (the day's stories), each as a copy's first sentences (this many, inclusive), under the copy's
#: headline for DIGEST_HEADLINE_CHANCE of them. It comes 1 minute to DIGEST_DELAY_HOURS after the
#: last copy it lists, at an outlet of that language.
DIGEST_ITEMS = (4, 9)
DIGEST_ITEM_SENTENCES = (1, 2)
DIGEST_HEADLINE_CHANCE = 0.8
DIGEST_DELAY_HOURS = 12

# A sentence: up to a full stop before a space or the end ("3.3 per cent" is one sentence of real
# prose; the pseudo-word text has no full stop inside a sentence, and splits as it always did).
_SENTENCE = re.compile(r".+?\.(?=\s|$)")
_Told = tuple[_Story, list[_Draft]]  # a story and the drafts carrying it
_Run = tuple[int, int, int]  # a start sentence, and the first and last end (exclusive) from it
_T = TypeVar("_T")


@dataclass(frozen=True)
class HardCases:
    """The shares asked for: teasers, quoting pages and digests of the pages, short stories of the
    stories."""

    teasers: float = 0.0
    quotes: float = 0.0
    short_stories: float = 0.0
    digests: float = 0.0

    def check(self) -> None:
        """Refuse a share outside [0, MAX_HARD_CASE_SHARE] (NaN included), naming the argument."""
        for name, share in (
            ("teasers", self.teasers),
            ("quotes", self.quotes),
            ("short_stories", self.short_stories),
            ("digests", self.digests),
        ):
            if not 0.0 <= share <= MAX_HARD_CASE_SHARE:
                raise ValueError(f"{name} must be a share in [0, {MAX_HARD_CASE_SHARE}], got {share!r}")


# --- The planner's helper -----------------------------------------------------------------------


class _HardCasePlanner:
    """Draws the hard cases for one run; its choices use ``self.rng``, never the world's."""

    def __init__(self, world: _World, seed: int, shares: HardCases) -> None:
        self.world = world
        self.shares = shares
        # A string seed is hashed with SHA-512 (not hash()): the same in every process and machine.
        self.rng = random.Random(f"hard-cases:{seed}")

    def story_words(self) -> int | None:
        """Exact article words for a short story, or None for a story of the usual length."""
        if self.shares.short_stories and self.rng.random() < self.shares.short_stories:
            return self.rng.randint(*SHORT_STORY_WORDS)
        return None

    def page_counts(self, pages: int, room: int) -> tuple[int, int, int]:
        """Teasers, quoting pages and digests among ``pages``, of which ``room`` may carry
        articles: at least one of those stays a story for them to excerpt or quote (this only
        bites in a corpus of a handful of pages)."""
        teasers = min(round(pages * self.shares.teasers), max(0, room - 1))
        quotes = min(round(pages * self.shares.quotes), max(0, room - 1 - teasers))
        digests = min(round(pages * self.shares.digests), max(0, room - 1 - teasers - quotes))
        return teasers, quotes, digests

    def drafts(
        self, told: Sequence[_Told], counts: tuple[int, int, int], seq: int, label: int
    ) -> list[_Draft]:
        """The teasers, quoting pages and digests (``counts``) of the stories told, with seq
        numbers from ``seq`` and new story labels from ``label``.

        A slot no story can fill (a corpus of a handful of stories) becomes one more story, so the
        corpus keeps its size; it never happens at the sizes the tests use.
        """
        teasers, quotes, digests = counts
        drafts: list[_Draft] = []
        quotable = _with_copies(told, _passages) if quotes else []
        for _ in range(quotes):
            quote = self._quote(quotable, seq + len(drafts), label)
            drafts.append(quote or self._stand_in(seq + len(drafts), label))
            label += 1
        excerptable = _with_copies(told, _teaser_sizes) if teasers else []
        for _ in range(teasers):
            teaser = self._teaser(excerptable, seq + len(drafts))
            if teaser is None:
                teaser, label = self._stand_in(seq + len(drafts), label), label + 1
            drafts.append(teaser)
        for _ in range(digests):
            digest = self._digest(told, seq + len(drafts), label)
            drafts.append(digest or self._stand_in(seq + len(drafts), label))
            label += 1
        return drafts

    def _stand_in(self, seq: int, label: int) -> _Draft:
        """The first page of one more story, in place of a hard case that cannot be made."""
        world, rng = self.world, self.rng
        lang = rng.choices(world.codes, cum_weights=world.lang_cum)[0]
        story = world.story(f"s{label:05d}", lang, rng.randrange(STORY_WINDOW_HOURS * 3600), None)
        return world.drafts_of(story, seq)[0]

    # Teasers ---------------------------------------------------------------------------------------

    def _teaser(
        self, excerptable: Sequence[tuple[_Told, list[tuple[_Draft, list[int]]]]], seq: int
    ) -> _Draft | None:
        """The first sentences of a copy of a story, later, often at another outlet; None if no copy
        of any story has a start of TEASER_SHARE_OF_STORY of its words."""
        if not excerptable:
            return None
        rng, world = self.rng, self.world
        (story, copies), sized = rng.choice(excerptable)
        copy, sizes = rng.choice(sized)
        excerpt = _tagged(copy.paragraphs)[: rng.choice(sizes)]
        outlet = self._teaser_outlet(copy, copies)
        keep_title = rng.random() < TEASER_SAME_TITLE_CHANCE
        more = _read_more(outlet) if rng.random() < TEASER_READ_MORE_CHANCE else None
        return _Draft(
            when=self._teaser_time(copy, copies),
            seq=seq,
            outlet=outlet,
            label=story.label,
            kind="teaser",
            event=story.event,
            title=copy.title if keep_title else world.retitle(story.lang, story.title),
            paragraphs=_paragraphs(excerpt),
            entities=story.entities,
            excerpt_of=copy.seq,
            more=more,
        )

    def _teaser_time(self, copy: _Draft, copies: Sequence[_Draft]) -> int:
        """After the excerpted copy; with the ``early-teasers`` shape, before the story's first page."""
        if self.world.shapes.early_teasers:
            return min(other.when for other in copies) - self.rng.randint(*EARLY_TEASER_LEAD_S)
        return copy.when + self.rng.randint(1, COPY_DELAY_HOURS * 3600)

    def _teaser_outlet(self, copy: _Draft, copies: Sequence[_Draft]) -> _Outlet:
        """The excerpted copy's outlet now and then, else one of the language without a copy."""
        outlets = self.world.by_lang[copy.outlet.lang]
        if self.rng.random() < TEASER_SAME_OUTLET_CHANCE:
            return copy.outlet
        others = [outlet for outlet in outlets if all(outlet is not other.outlet for other in copies)]
        others = others or [outlet for outlet in outlets if outlet is not copy.outlet] or [copy.outlet]
        return self.rng.choice(others)

    # Quoting pages ---------------------------------------------------------------------------------

    def _quote(
        self, quotable: Sequence[tuple[_Told, list[tuple[_Draft, list[_Run]]]]], seq: int, label: int
    ) -> _Draft | None:
        """A local story of its own that quotes a passage of a copy of an earlier story after its
        first paragraph; None if no copy of any story holds a passage."""
        if not quotable:
            return None
        rng, world = self.rng, self.world
        (story, _), runs_of = rng.choice(quotable)
        copy, runs = rng.choice(runs_of)
        start, first_end, last_end = rng.choice(runs)
        passage = _tagged(copy.paragraphs)[start : rng.randint(first_end, last_end)]
        low_band = rng.random() < QUOTE_LOW_SHARE_CHANCE
        own = rng.randint(*_own_words(sum(_word_count(text) for _, text in passage), low_band))
        intro: tuple[str, ...] = ()
        if rng.random() < QUOTE_INTRO_CHANCE:
            intro_words = rng.randint(*QUOTE_INTRO_WORDS)
            intro = (world.sentence_of(story.lang, story.entities[:1], intro_words, lede=True),)
            own -= intro_words
        entities = tuple(world.name(story.lang) for _ in range(rng.randint(*STORY_ENTITIES)))
        paragraphs = _paragraphs(
            world.in_paragraphs(world.sentences_of(story.lang, entities, own, lede=True))
        )
        cut = rng.randint(1, max(1, len(paragraphs) - 1))  # after the first; not last if it can
        return _Draft(
            when=copy.when + rng.randint(60, QUOTE_DELAY_HOURS * 3600),
            seq=seq,
            outlet=rng.choice(world.by_lang[story.lang]),
            label=f"s{label:05d}",
            kind="quote",
            event=None,
            title=tuple(world.headline(story.lang, entities)),
            paragraphs=(*paragraphs[:cut], *intro, *_paragraphs(passage), *paragraphs[cut:]),
            entities=entities,
            quoted=story.label,
        )

    # Digests ---------------------------------------------------------------------------------------

    def _digest(self, told: Sequence[_Told], seq: int, label: int) -> _Draft | None:
        """A newsletter of the day's stories of one language: each a copy's headline and first
        sentences; None if that language has fewer than two stories told."""
        rng, world = self.rng, self.world
        carried = [(story, copies) for story, copies in told if copies]
        if not carried:
            return None
        anchor, _ = rng.choice(carried)
        day = sorted(
            ((rng.choice(copies), story) for story, copies in carried if story.lang == anchor.lang),
            key=lambda item: (item[0].when, item[0].seq),
        )
        if len(day) < 2:
            return None
        count = min(len(day), rng.randint(*DIGEST_ITEMS))
        start = rng.randrange(len(day) - count + 1)
        paragraphs: list[str] = []
        for copy, _ in day[start : start + count]:
            if rng.random() < DIGEST_HEADLINE_CHANCE:
                paragraphs.append(" ".join(copy.title).capitalize())
            sentences = _tagged(copy.paragraphs)[: rng.randint(*DIGEST_ITEM_SENTENCES)]
            paragraphs.append(" ".join(sentence for _, sentence in sentences))
        last = max(copy.when for copy, _ in day[start : start + count])
        return _Draft(
            when=last + rng.randint(60, DIGEST_DELAY_HOURS * 3600),
            seq=seq,
            outlet=rng.choice(world.by_lang[anchor.lang]),
            label=f"s{label:05d}",
            kind="digest",
            event=None,
            title=tuple(world.headline(anchor.lang, anchor.entities[:1])),
            paragraphs=tuple(paragraphs),
            entities=anchor.entities[:1],
        )


def _with_copies(
    told: Sequence[_Told], usable: Callable[[_Draft], list[_T]]
) -> list[tuple[_Told, list[tuple[_Draft, list[_T]]]]]:
    """Each story with its copies that have something ``usable`` (a teaser-sized start, passages
    to quote), and what they have; stories without any are left out."""
    found = []
    for story, copies in told:
        usable_copies = [(copy, found_in) for copy in copies if (found_in := usable(copy))]
        if usable_copies:
            found.append(((story, copies), usable_copies))
    return found


def _passages(copy: _Draft) -> list[_Run]:
    """The runs of whole sentences of a copy that may be quoted (see QUOTE_PASSAGE_WORDS)."""
    counts = [_word_count(text) for _, text in _tagged(copy.paragraphs)]
    total, bounds = sum(counts), list(accumulate(counts, initial=0))
    runs = []
    for start in range(1 if len(counts) >= 3 else 0, len(counts)):
        ends = []
        for end in range(start + 1, len(counts) + 1):
            words = bounds[end] - bounds[start]
            if words > QUOTE_PASSAGE_WORDS[1] or words / total > QUOTE_MAX_SHARE_OF_QUOTED:
                break
            if words >= QUOTE_PASSAGE_WORDS[0]:
                ends.append(end)
        if ends:
            runs.append((start, ends[0], ends[-1]))
    return runs


def _own_words(passage: int, low_band: bool) -> tuple[int, int]:
    """The quoting story's own words (inclusive) that make the passage's share fall in its band.

    Exact fractions of the band's floats, so a share computed as ``passage / total`` in floats
    is in the band for every count in the range.
    """
    low, high = (Fraction(share) for share in (QUOTE_LOW_SHARE if low_band else QUOTE_HIGH_SHARE))
    return math.ceil(passage * (1 - high) / high), math.floor(passage * (1 - low) / low)


def _tagged(paragraphs: Sequence[str]) -> list[tuple[int, str]]:
    """A page's sentences tagged with their paragraph's index, as :func:`._paragraphs` joins them."""
    return [
        (number, sentence.strip())
        for number, paragraph in enumerate(paragraphs)
        for sentence in _SENTENCE.findall(paragraph)
    ]


def _teaser_sizes(copy: _Draft) -> list[int]:
    """Sentence counts whose start of the copy is TEASER_SHARE_OF_STORY of its words."""
    counts = [_word_count(sentence) for _, sentence in _tagged(copy.paragraphs)]
    total, low, high = sum(counts), *TEASER_SHARE_OF_STORY
    sizes, running = [], 0
    for size, count in enumerate(counts, 1):
        running += count
        if low <= running / total <= high:
            sizes.append(size)
    return sizes
