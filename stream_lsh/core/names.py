"""The names a page gives: what tells two items of one template apart.

Local papers, newsrooms and wires fill templates: funeral notices ("Passed away peacefully at
Greystone Hospital on Saturday 9 November, aged 101 years. Beloved husband of Dorothy ..."), police
appeals, school closures, match results, "X to report fourth quarter results on <date>". Two items
of one template share most of their words, so their shingles resemble each other as much as a
story and its edited copy do (Jaccard similarity 0.3 to 0.9), yet each is a story of its own.
Shingles cannot tell them apart; what they name can: every item of a template names its own
person, town, team or figure, while a copy of a story names what the story names. A trimmed copy
or a teaser names less, but little the story does not; an edited copy a name or two more.

So each page keeps the *names* of its article: words written with a capital inside a sentence, and
numbers (not times of day), less stop words, days, months and titles. They are taken from its text
before it is case-folded, and only from the blocks the boilerplate learner keeps (none without the
learner, ``--no-boilerplate``: a site's chrome names the site), never from a heading (a headline in
title case, a byline, a dateline, a credit line: each outlet writes its own), a line in headline
case of any length (another story's headline in a related-links box: :func:`gives_names`) nor from a
line that points to another story. Two pages are *named apart* when each gives at least
:data:`MIN_MISSING` names the other does not, and at least :data:`MIN_SHARE` of its names: pages so
named apart are no copies, whatever their words' resemblance (:class:`~.dedup.Deduplicator` measures
them as unlike). Both ways, because a trimmed copy names less than its story but adds few names,
while two items of a template each name what the other does not. A page of fewer names (a card, an
alert, a short teaser, a site's terms of use) misses the other's when it shares none of them: a card
names some of what its story names, while one outlet's "By accessing Prairie Star you agree to these
terms" and another's name nothing alike.

Names are kept as a bottom-k sketch (the :data:`SKETCH_SIZE` smallest 32-bit hashes) and a count,
~260 bytes a page: exact for pages of up to that many names (a template's item names 10 to 40),
an estimate for longer ones.

Measured on three sets built blind from real news (docs/accuracy.md, "What makes it work"): a
network of sister papers' funeral notices, police appeals and school closures, F1 0.69 to 0.88; a
media-monitoring crawl's templated corporate notices, 0.968 to 0.986; a wire aggregator's edited
copies, 0.929 to 0.932. Items of a template that differ in one or two names (one school's closure
and another's) are not named apart; the wording those names are set in tells them apart
(:mod:`.wording`).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import xxhash

from .roundup import points_elsewhere
from .stopwords import package_words
from .text import ends_sentence, heading

__all__ = [
    "CAPITALS",
    "EARLIER_NAMES_RULES",
    "MIN_MISSING",
    "MIN_SHARE",
    "NAMES_RULE",
    "NO_NAMES",
    "NO_SLOTS",
    "SKETCH_SIZE",
    "NameSketch",
    "common_word",
    "gives_names",
    "name_hash",
    "name_hashes",
    "named_apart",
    "names_in",
    "sketch_from",
    "sketch_of",
]

#: The rule's version and constants, part of the scheme: sketches of another rule do not compare.
NAMES_RULE = "names-2:64:4:0.35:4:0.9"
#: Earlier names rules whose sketches this one reads as they are (:func:`.scheme.check_compatible`):
#: ``names-1`` took names from lines in headline case too (:func:`gives_names`). A page indexed so
#: keeps the names of such a line as its own, and parts from another page as it did under the
#: older rule, never more.
EARLIER_NAMES_RULES = frozenset({"names-1:64:4:0.35"})
SKETCH_SIZE = 64
MIN_MISSING = 4  # names each page gives that the other does not, from which they are apart
MIN_SHARE = 0.35  # ... and the share of its names they must be
TITLE_WORDS = 4  # a line in headline case has at least this many words that are no stop words ...
TITLE_SHARE = 0.9  # ... and at least this share of them begin with a capital

# a word that may be a name: one after a space that begins with a digit or a capital of the Latin,
# Greek or Cyrillic alphabets (Latin Extended-A mixes both cases: asked again in Python), unless
# the space follows a mark that opens a sentence (or another space); its trailing marks are cut.
# Most words begin with a small letter, and are skipped in C: the pattern starts with its space,
# which the regex engine searches for without trying each position
#: The first letters of a word that may be a name: a digit, or a capital of the Latin, Greek or
#: Cyrillic alphabets (Latin Extended-A mixes both cases: asked again in Python). :mod:`.wording`
#: reads capitals with the same class.
CAPITALS = "A-Z0-9À-ÖØ-ÞĀ-ſΑ-ΩЁА-Я"
_CANDIDATE = re.compile(rf""" (?<![\s.!?:;"“”‘(—–\-|•] )([{CAPITALS}][\w'\-.:]*)""")
_TRAILING = "'-.:"
_WORD = re.compile(r"[^\W\d_][\w'-]*")  # a word of letters (figures are no headline's sign)
_CALENDAR = frozenset(
    "january february march april may june july august september october november december "
    "jan feb mar apr jun jul aug sep sept oct nov dec "
    "monday tuesday wednesday thursday friday saturday sunday mon tue tues wed thu thurs fri sat sun "
    "mr mrs ms dr am pm".split()
)
_COMMON = frozenset(package_words("en")) | _CALENDAR
_ALL = 0xFFFFFFFF  # the largest 32-bit hash: a sketch that holds all its page's names reaches it
NO_SLOTS = np.zeros(0, np.uint32)  # a page whose names are set in no wording kept (.wording)


def common_word(word: str) -> bool:
    """Whether a word (lower-cased) is no name however it is written: a stop word, a day, a
    month or a title."""
    return word in _COMMON


def names_in(piece: str) -> list[str]:
    """The names a piece of text (a sentence or a paragraph, as written) gives, lower-cased: words
    with a capital that do not open a sentence, and numbers (not times of day), less stop words,
    days, months and titles. None from a line that points to another story, nor from a heading (a
    headline in title case, a byline, a dateline, a credit line: each outlet writes its own)."""
    found: list[str] = []
    text = piece.strip()
    if "’" in text:
        text = text.replace("’", "'")
    if not gives_names(text):
        return found
    common, trailing = _COMMON, _TRAILING
    for word in _CANDIDATE.findall(text):
        word = word.rstrip(trailing)
        if not word or ":" in word or not (word[0].isupper() or word[0].isdigit()):
            continue
        word = word.lower()  # its trailing marks, full stops included, are cut already
        if word.endswith("'s"):
            word = word[:-2]
        if word and word not in common:
            found.append(word)
    return found


def gives_names(text: str) -> bool:
    """Whether a line of a page's text (stripped) may give the page's names: not a heading (a
    headline, a byline, a dateline, a credit line: each outlet writes its own), not a line that
    points to another story ("Related: <its headline>"), and not a line in headline case: one that
    does not end like a sentence and whose words that are no stop words, :data:`TITLE_WORDS` or
    more, begin with a capital, :data:`TITLE_SHARE` of them or more. A related-links box under a
    teaser or a trimmed copy lists other stories' headlines ("Gilead Announces Topline Results From
    Phase 2 ATLAS Study in Patients with ..."), too long to be headings: read as names, one such line
    gave a copy 15 to 25 names its story lacks, and the twenty-seventh outside set's teasers and
    first versions parted from their stories (recall 0.970 to 0.981). A sentence sets its names
    among words in small letters, and ends like one."""
    if heading(text) or points_elsewhere(text):
        return False
    if ends_sentence(text):
        return True
    words = [word for word in _WORD.findall(text) if word.lower() not in _COMMON]
    return len(words) < TITLE_WORDS or sum(word[0].isupper() for word in words) < TITLE_SHARE * len(words)


def name_hashes(pieces: Sequence[str], seed: int) -> list[tuple[int, ...]]:
    """Each piece's names, hashed (32 bits): what a page's blocks carry to the site partition that
    keeps some of them. A site prints its chrome on every page: its pieces are looked up once."""
    return [_hashed(piece, seed & 0xFFFFFFFF) for piece in pieces]


@functools.lru_cache(maxsize=1 << 15)
def _hashed(piece: str, seed: int) -> tuple[int, ...]:
    return tuple(sorted({name_hash(name, seed) for name in names_in(piece)}))


def name_hash(name: str, seed: int) -> int:
    """A name's 32-bit hash, as the sketch keeps it (:mod:`.wording` keeps its low half)."""
    return xxhash.xxh32_intdigest(name.encode(), seed)


@dataclass(frozen=True, eq=False)
class NameSketch:
    """The names of a page: the smallest :data:`SKETCH_SIZE` of their hashes, sorted, and how many
    names there are; and the wording each is set in (``slots``: :mod:`.wording`)."""

    hashes: np.ndarray  # uint32, sorted, unique
    count: int
    slots: np.ndarray = field(default_factory=lambda: NO_SLOTS)  # uint32, sorted, unique (.wording)

    def __post_init__(self) -> None:
        for array, what in ((self.hashes, "hashes"), (self.slots, "slots")):
            if array.dtype != np.uint32 or array.ndim != 1:
                raise ValueError(f"a name sketch's {what} must be a 1-d uint32 array")
        if self.count < self.hashes.size or self.hashes.size > SKETCH_SIZE:
            raise ValueError(f"a name sketch holds at most {SKETCH_SIZE} of its count's hashes")

    @functools.cached_property
    def known(self) -> frozenset[int]:
        """The hashes as a set: a sketch holds at most 64, which Python compares faster than numpy."""
        return frozenset(self.hashes.tolist())

    @functools.cached_property
    def reach(self) -> int:
        """The largest hash up to which the sketch knows every name of its page (all: not truncated)."""
        return int(self.hashes[-1]) if self.count > self.hashes.size else _ALL


NO_NAMES = NameSketch(np.zeros(0, np.uint32), 0)


def sketch_of(hashes: Iterable[int], slots: np.ndarray = NO_SLOTS) -> NameSketch:
    """The sketch of a page's names, from their hashes (repeats counted once), with its slots
    (:func:`.wording.page_slots`)."""
    unique = sorted(set(hashes))
    kept = unique if len(unique) <= SKETCH_SIZE else unique[:SKETCH_SIZE]
    if not unique and not slots.size:
        return NO_NAMES
    return NameSketch(np.array(kept, dtype=np.uint32), len(unique), slots)


def sketch_from(hashes: np.ndarray | None, count: int, slots: np.ndarray | None = None) -> NameSketch:
    """A sketch as it was stored (its hashes and slots in any unsigned dtype, and its count);
    :data:`NO_NAMES` for a page that gives none, or was stored before names were kept."""
    slots = NO_SLOTS if slots is None else np.asarray(slots).astype(np.uint32)
    if not count and not slots.size:
        return NO_NAMES
    found = np.asarray(hashes).astype(np.uint32) if count else np.zeros(0, np.uint32)
    return NameSketch(found, count, slots)


def named_apart(one: NameSketch, other: NameSketch) -> bool:
    """Whether two pages name different things (see the module doc): each gives at least
    :data:`MIN_MISSING` names the other does not, and at least :data:`MIN_SHARE` of its names.
    Both ways, because a trimmed copy that adds a line of its own (a local intro, a reader's
    comment) names things its story does not, while the story names what the copy cut."""
    return _misses(one, other) and _misses(other, one)


def _misses(one: NameSketch, other: NameSketch) -> bool:
    """Whether many of ``one``'s names are not ``other``'s, estimated from the sketches: among
    ``one``'s hashes within both sketches' reach, the share ``other`` lacks. A page of fewer than
    :data:`MIN_MISSING` names (its sketch then holds them all) misses when it shares none, as far
    as the other's sketch reaches."""
    if one.count < MIN_MISSING:
        return 0 < one.count and int(one.hashes[-1]) <= other.reach and one.known.isdisjoint(other.known)
    seen = one.known
    reach = min(one.reach, other.reach)
    if reach != _ALL:
        seen = frozenset(value for value in seen if value <= reach)
    if not seen:
        return False
    share = len(seen - other.known) / len(seen)
    return share >= MIN_SHARE and share * one.count >= MIN_MISSING
