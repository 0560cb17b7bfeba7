"""Wording: two items of one template say the same thing of different names.

A funeral notice, a police appeal, a school closure, a road notice, a company's results: each
item fills the same sentences with its own person, street, school or company. "Taylor Park
Primary School will be closed today, Tuesday 12 November, due to severe storm damage" and
"Millbrook Primary School will be closed today, ..." share 85% of their shingles, and the names
rule (:mod:`.names`) needs each page to give four names the other does not, which two items
that differ in a school's name, a town or a company do not reach.

What does tell them apart is *where* they differ. An edited copy of a story adds sentences (a
local intro, a credit line), cuts them (a trimmed ending), or rewrites them; it does not put
another name into a sentence it keeps word for word. So each page keeps its *slots*: for each
clause of its article, the clause's wording with its names blanked out (its *skeleton*: the words
in small letters, one blank for each run of words with a capital or a digit), and the names set
in it. Two pages are *worded apart* when skeletons both give set, in each page, names that the
other page never gives anywhere (not in that clause, not in its names), :data:`OWN_NAMES` or
more between them: one school of two words and another of one, one town and street and another.

What keeps copies together:

* only clauses of at least :data:`MIN_WORDS` words in small letters have a skeleton ("Smith
  said on Tuesday" has none);
* a sentence's first word is written with a capital whatever it is: it is a name only at the
  head of a run of them ("Millbrook Primary School will ...", not "Officers attended ..."), and
  otherwise a word of the skeleton like the others ("please quote reference _": the blank it made
  before left a police appeal's "Please quote reference E51383826" two words short of a skeleton,
  and the nineteenth set's appeals of one template, each with its own reference, joined);
* a skeleton said twice on one page is no slot: a live page's "Goal! X scores for Y" lines, a
  results table, a list of like items (a page fetched again with new entries is still the page);
* a wire dateline before a dash ("SYDNEY (AAP) -", "CHARLOTTE, N.C., March 13 (Business
  Newsline) --") is not read: one agency's copy and another's credit differ there;
* a name the other page gives anywhere does not count: an edited copy moves names between
  sentences; names are compared in American spelling, for an outlet's house style respells
  "Defense Department" and "Trauma Center" ("Defence", "Centre": the twenty-sixth outside set's
  British outlets did, and 15 pairs of one story's copies parted); a word that starts with a digit
  does not count either (a toll updated from 12 to
  15, a forecast from 44C to 45C, is the same story), nor do days, months, titles, ranks and
  offices written out or cut short ("Det Sgt"), and accents are folded ("Sao Paulo");
* a name present on one side only (a copy that drops "Mr" or adds a town) is an addition, not
  another item: each page must set a name of its own;
* one word for one word is as often an edit as another item (a copy-editor's "Yesterday" for
  "Today" before a name, the generated grid's word swaps): at two names between them (every
  clause read), the grid's plain copies of real prose fell from F1 0.992 to 0.988, its
  pseudo-word rows by 0.005; at three they are as before, and the nineteenth's two schools of one
  word each stay joined;
* but an identifier each way is enough (:data:`ID_DIGITS`): a name of a letter and five digits or
  more, a police appeal's reference ("QP17032965028"), a case's or a lot's number. Two items of
  one template that each quote their own in the same wording are other items, whatever else they
  share; an edit does not renumber. Such a name is marked by a second value beside it in the same
  wording (:func:`_mark`), so that slots saved under the earlier rules, which mark none, still
  compare as they did. On the twenty-third outside set, built blind, police briefs of one template
  and one station each way joined by the hundred (precision 0.871, means of seeds 1-3): with the
  mark, 0.990. A copy may correct a transposed pair of digits ("FCA-2024-163723" printed for
  "...136723"): an identifier's characters in order are a value beside it, marked too, and two
  that give the same in one wording are one identifier (:func:`_identified_apart`; the
  twenty-fourth set's ten such copies: 5 stayed apart, none does);
* a clause is cut after an identifier that more words follow, and the part that ends at it is a
  skeleton from two words in small letters (:func:`_at_identifiers`): an agency's tender notices
  give their reference in one wording ("The Sydney Water has released Tender RFT20247896") and
  then each its own service. On the twenty-fourth outside set, built blind, press releases of four
  templates, the tender notices joined by the dozen (precision 0.791): so cut, 0.996;
* a sentence that sets names gives one more slot: its *opening*, the first :data:`OPENING_WORDS`
  words in small letters ("will be closed between", "drivers are facing delays"), over the names
  set in the clauses those words come from (:func:`_skeleton`). Road notices and traffic
  reports of one template vary its small words too ("between the roundabout and the bridge ... for
  tree removal"), so their clauses share no skeleton; their sentences open alike, and each sets its
  own street and town. Two copies of a story open their sentences alike and set the same names
  there, or one of them sets none the other lacks (a trimmed copy, a local intro of its own); an
  attribution after the opening ("..., the mayor told The Age") is not read. Two copies whose local
  intros set each its own town in one template sentence do part;
* a wire service's credit written close ("SAN JOSE, Calif.--(BUSINESS WIRE)--") is read as a
  dateline, as its spaced form is: read as names, it gave a release's first sentence names its
  copy on the company's own site lacks, and with openings the two parted.

Only the pieces that begin within the first :data:`LEAD_WORDS` words of prose are read (headings
do not count): an item sets its own names in its lead (the person, the school, the company, the
street), and reading every clause of a 600-word story ran batch at 0.55× its speed before, its
first 100 words at 0.85-0.91× (docs/speed.md), and the outside sets score the same.

The slots are kept as 32-bit values, the skeleton's hash in the high half and the name's in the
low half (the low half of the name's hash in :mod:`.names`, so that they compare with the
sketch), for the :data:`SKELETONS` smallest skeletons of the page: a sample that two versions of
one text draw alike, at most :data:`MAX_SLOTS` values: on the nineteenth, twenty-third and
twenty-fifth outside sets' pages 22 values a page (12 before openings), about 90 bytes on disk and
210 in memory with the array's header; 11 of their 5,053 pages reach the cap.

Copies can still part: two sister sites whose learners have not yet seen their chrome, each
printing "Follow <its name> on social media" inside a flattened article, set their own names in
one wording (the grid's real-prose one-line bodies: F1 0.989 to 0.987). A town's paper names its
town in its template items, so a site's own name cannot be left out (left out, the nineteenth's
F1 fell from 0.981 to 0.951, seed 1).

Measured (docs/accuracy.md), with the rules on listings (:mod:`.roundup`, :mod:`.prepare`), means
of seeds 1-3: the nineteenth outside set, a network of sister papers' template items, precision
0.787 to 0.919, 0.971 since a sentence's first word is a word of the skeleton (its police
appeals' references; figures no longer count: a forecast updated parted from its copy), and 0.975
with identifiers; the twenty-first, whose "template variants" swap a company's name and figures in
real BBC items, 0.952 to 0.992; the twenty-third, 0.871 to 0.990 with identifiers; the
twenty-fourth, 0.791 to 0.996 with clauses cut after them; the nineteenth 0.976 to 0.985 and the
twenty-fifth, built blind, 0.855 to 0.925 with sentences' openings.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence

import numpy as np
import xxhash

from .names import CAPITALS, NO_SLOTS, NameSketch, common_word, gives_names, name_hash, named_apart
from .text import heading

__all__ = [
    "EARLIER_RULES",
    "LEAD_WORDS",
    "MAX_SLOTS",
    "MIN_WORDS",
    "OWN_NAMES",
    "SKELETONS",
    "WORDING_RULE",
    "different_items",
    "page_slots",
    "slot_hashes",
    "slots_in",
    "worded_apart",
]

#: The rule's version and constants, part of the scheme (through :data:`.names.NAMES_RULE`).
WORDING_RULE = "wording-8:3:16:64:3:100:5:2:4"
#: Earlier wording rules whose slots this one reads as they are (:func:`.scheme.check_compatible`).
#: ``wording-1`` blanked a sentence's first word where this rule keeps it: a clause that opens a
#: sentence has another skeleton under each, so their slots never share it and never part two
#: pages; every other skeleton is the same string under both. Neither marked identifiers
#: (:data:`ID_DIGITS`): their pages' names are compared by the count of names alone.
#: ``wording-3`` did not cut a clause after an identifier (:func:`_at_identifiers`), and
#: ``wording-4`` read no sentence's opening (:func:`_skeleton`): the skeletons and openings one
#: rule has and the other lacks are never shared between them (but for a collision of 16-bit keys),
#: so they part nothing either. ``wording-4`` read a wire credit written close (:data:`_WIRE_CREDIT`)
#: as names: the skeleton after it is the same under both rules, and its names under the older a
#: superset of the newer's, which one page's names alone never part. Up to ``wording-5`` a name
#: was kept as spelled (:data:`_ENDINGS`): a British spelling saved so ("centre") is not the newer
#: rule's ("center"), and two copies of a text one spells each way part as they did under the
#: older rule, no more. Up to ``wording-6`` an identifier gave no value for its characters in
#: order (:func:`_identified_apart`): such a page's identifiers part a corrected copy as they did.
#: Up to ``wording-7`` a line in headline case gave slots (:func:`.names.gives_names`): a page
#: indexed so keeps them, and parts from another as it did under the older rule, never more.
EARLIER_RULES = frozenset(
    {
        "wording-1:3:16:64:3:100",
        "wording-2:3:16:64:3:100",
        "wording-3:3:16:64:3:100:5",
        "wording-4:3:16:64:3:100:5:2",
        "wording-5:3:16:64:3:100:5:2:4",
        "wording-6:3:16:64:3:100:5:2:4",
        "wording-7:3:16:64:3:100:5:2:4",
    }
)
MIN_WORDS = 3  # words in small letters a clause needs to have a skeleton
SKELETONS = 16  # skeletons a page keeps: the smallest hashes
MAX_SLOTS = 64  # ... and at most this many slots in all
OWN_NAMES = 3  # names of their own the two pages set in shared wording, between them
ID_DIGITS = 5  # a name of a letter and this many digits or more is an identifier (a reference number)
ID_MIN_WORDS = 2  # ... and a clause's part that ends at an identifier this many (_at_identifiers)
OPENING_WORDS = 4  # the words in small letters of a sentence's opening (_skeleton)
LEAD_WORDS = 100  # the pieces that begin within an article's first this many words are read
_REPEATED = 0  # the low half of a slot that marks its skeleton as said twice on one page

# a sentence ends at . ! or ? (and closing quotes or brackets) before a space and a capital or
# digit (captured: the cut after a clause that ends a sentence), a clause at a comma, semicolon or
# colon, or at a spaced dash. Each pattern here that is searched for opens with the class of its
# first character, and looks behind only after it: the regex engine then skips in C to where a
# match may start, where a look-behind first is tried at every character (the lead's slots took
# a third longer so)
_CUT = re.compile(
    rf"[.!?,;:—–-](?:(?<=[.!?])([\"”')\]]*)\s+(?=[\"“'(\[]?[{CAPITALS}])|(?<=[,;:])\s+|(?<=\s[—–])\s+|(?<=\s-)-\s+)"
)
# a wire dateline: words that all start with a capital, a digit or a bracket, then a spaced dash
_CAPITAL_WORD = rf"[(\[]?[{CAPITALS}]\S*\s+"
_DATELINE = re.compile(rf"^(?:{_CAPITAL_WORD}){{1,12}}?(?:--|—|–|-)\s+")
# a wire service's credit written close ("SAN JOSE, Calif.--(BUSINESS WIRE)--Halcyon Networks ...")
_WIRE_CREDIT = re.compile(r"^[^\n]{0,80}?--\([A-Z][A-Z .&'-]*\)--\s*")
# a word that starts with a letter and holds a digit (an identifier holds five: _identifier)
_DIGIT_WORD = re.compile(r"[^\W\d_](?<![\w'.\-].)(?:[^\W\d]|['.\-])*\d[\w'.\-]*")
# :data:`ID_DIGITS` digits in one run of word characters, as an identifier holds them (the class
# searched for first: the regex engine skips in C to each digit)
_DIGIT_RUN = re.compile(rf"\d(?:[\w'.\-]*?\d){{{ID_DIGITS - 1}}}")
# a word with a capital or a digit after a space or an opening mark: a piece without one names nothing
_INNER_CAPITAL = re.compile(rf"[\s(\[\"'“‘][{CAPITALS}]")
# a word that starts with a capital or a digit; a run of them, whatever marks stand between
_CAPITALISED = rf"[{CAPITALS}][\w'.\-]*"
_CAPITAL = re.compile(rf"[{CAPITALS}](?<![\w'.\-].)[\w'.\-]*")
_RUN = re.compile(rf"[{CAPITALS}](?<![\w'.\-].)[\w'.\-]*(?:[^\w_]+{_CAPITALISED})*")
# a clause's first word, and whether the word after it has a capital (a run of them)
_LEAD = re.compile(rf"[^\w]*({_CAPITALISED})[^\w]+([{CAPITALS.replace('0-9', '')}])?")
_PLAIN = re.compile(r"[^\W\d](?:(?<!_)[\w']*)?")  # a word of the skeleton, or a blank (a lone "_")
_BLANKS = re.compile(r"_(?: _)+")
_TRAILING = "'’.-"
# ranks, offices and titles, written out or cut short, beside those that are common words
# (.names: mr, mrs, ms, dr): each outlet's style writes them its way
_RANKS = frozenset(
    """det detective sgt sergeant insp inspector supt superintendent const constable cst commissioner
    commander cmdr chief officer prof professor sen senator rep representative gov governor cr cllr
    councillor councilman councilwoman mayor lt lieutenant col colonel gen general capt captain cpl
    corporal pte private maj major adm admiral rev reverend hon honourable honorable sir dame lord lady
    judge justice president minister premier secretary ambassador mx""".split()
)


def slots_in(piece: str, seed: int) -> tuple[int, ...]:
    """A piece of an article's text (a paragraph or a sentence, as written)'s slots: for each of
    its clauses with a skeleton, one value per name set in it. A skeleton said twice in the piece
    gives one value marking it repeated. None from a line that gives no names (a heading, a line
    pointing to another story, a line in headline case: :func:`.names.gives_names`)."""
    return _slots(piece, seed & 0xFFFFFFFF)


@functools.lru_cache(maxsize=1 << 15)  # a site's chrome, on every page: its pieces are read once
def _slots(piece: str, seed: int) -> tuple[int, ...]:
    text = piece.strip()
    if "’" in text:
        text = text.replace("’", "'")
    if _INNER_CAPITAL.search(text) is None or not gives_names(text):
        return ()  # no name but a sentence's first word (most paragraphs of most stories)
    digest = xxhash.xxh32_intdigest
    found: dict[int, set[int]] = {}
    said: dict[int, int] = {}

    def slot(wording: str, lows: set[int]) -> None:
        key = digest(wording.encode("utf-8", "surrogatepass"), seed) >> 16
        said[key] = said.get(key, 0) + 1
        found.setdefault(key, set()).update(lows)

    # a clause, the cut after it (a sentence's end; None: a clause's), the next clause, ...
    dateline = _DATELINE.match(text) or (_WIRE_CREDIT.match(text) if "--(" in text else None)
    parts = _CUT.split(text[dateline.end() :] if dateline else text)
    identifies = _quotes_identifier(text)  # (most pieces quote none)
    opening: list[str] = []  # the sentence's opening words so far ...
    opened: set[int] = set()  # ... and the names set in the clauses they come from (lows)
    for at in range(0, len(parts), 2):
        opens = at == 0 or parts[at - 1] is not None
        if opens:
            opening, opened = [], set()
        in_opening = len(opening) < OPENING_WORDS
        for clause, at_identifier in _at_identifiers(parts[at]) if identifies else ((parts[at], False),):
            skeleton, names, small = _skeleton(
                clause, opens, ID_MIN_WORDS if at_identifier else MIN_WORDS, words=in_opening
            )
            opens = False
            if in_opening:
                opening += small[: OPENING_WORDS - len(opening)]
            if not names:
                continue
            lows = {low for name in names for low in _lows(name, seed)}
            if in_opening:
                opened |= lows
            if skeleton is not None:
                slot(skeleton, lows)
        if opened and len(opening) == OPENING_WORDS and (at + 1 >= len(parts) or parts[at + 1] is not None):
            slot("^" + " ".join(opening), opened)  # the sentence ends; "^": no skeleton is the same
            opened = set()
    values = {
        key << 16 | (name if said[key] == 1 else _REPEATED) for key, names in found.items() for name in names
    }
    return tuple(sorted(values))


@functools.lru_cache(maxsize=1 << 14)
def _lows(name: str, seed: int) -> tuple[int, ...]:
    """The low half of a name's hash (:func:`.names.name_hash`), never :data:`_REPEATED`; and for
    an identifier (:func:`_identifier`), its mark beside it, and the hash of its characters in
    order with that one's mark (:func:`_identified_apart`)."""
    low = (name_hash(name, seed) & 0xFFFF) or 1
    if not _identifier(name):
        return (low,)
    ordered = (name_hash("".join(sorted(name)), seed) & 0xFFFF) or 1
    return (low, _mark(low), ordered, _ordered_mark(ordered))


def _quotes_identifier(text: str) -> bool:
    """Whether a text holds a word that starts with a letter and holds :data:`ID_DIGITS` digits or
    more; asked first whether that many digits stand in one run of word characters, which few
    paragraphs' do (a date's and a toll's digits stand apart), then of its ASCII digits."""
    if _DIGIT_RUN.search(text) is None or sum(text.count(digit) for digit in "0123456789") < ID_DIGITS:
        return False
    return any(map(_identifier, _DIGIT_WORD.findall(text)))


def _at_identifiers(clause: str) -> list[tuple[str, bool]]:
    """A clause cut after each identifier that more words follow, each part with whether it ends at
    one. Two tender notices of one agency say "The Sydney Water has released Tender RFT20247896
    seeking offers for cleaning services" and "... Tender RFT20244723 seeking offers for supply of
    bulk diesel": what follows the reference differs in its small words, so the whole clauses have
    no skeleton in common, and the references never faced each other. Cut after it, both say
    "_ has released _", which takes only :data:`ID_MIN_WORDS` words in small letters: a reference
    names what the words before it introduce ("quoting reference _", "has released _"), and a copy
    keeps it."""
    if not _quotes_identifier(clause):
        return [(clause, False)]
    pieces, start = [], 0
    for word in _CAPITAL.finditer(clause):
        if _identifier(word.group()) and _name(word.group()) and _PLAIN.search(clause, word.end()):
            pieces.append((clause[start : word.end()], True))
            start = word.end()
    pieces.append((clause[start:], False))
    return pieces


def _identifier(name: str) -> bool:
    """Whether a name is an identifier: a letter, then :data:`ID_DIGITS` digits or more among its
    characters ("QP17032965028", "E51383826": a police appeal's reference, a case's number). Two
    items of a template each quote their own; a copy of one quotes its."""
    return name[0].isalpha() and sum(c.isdigit() for c in name) >= ID_DIGITS


def _mark(low: int) -> int:
    """The value beside an identifier's in the same wording that marks it one: an affine map of the
    16-bit values with no fixed point and no cycle of two (so a mark is told from its name), never
    :data:`_REPEATED` (the one value it would send there goes to 0xFFFF, which another value also
    reaches: two names of one mark, one in 2^32 pairs)."""
    return ((low * 0x9E3B + 0x3C6F) & 0xFFFF) or 0xFFFF


def _skeleton(
    clause: str, opens_sentence: bool, min_words: int = MIN_WORDS, *, words: bool = False
) -> tuple[str | None, list[str], list[str]]:
    """A clause's skeleton, the names set in it, and (with ``words``) its words in small letters in
    order; no skeleton for a clause of fewer than :data:`MIN_WORDS` words in small letters, or one
    that sets no name. A sentence's first word is written with a capital whatever it is: it is a
    name only at the head of a run of them ("Millbrook Primary School will ..."; "Officers attended
    ..." sets none), and a word of the skeleton in small letters if it is one. The words are read by
    the regular expressions; only the names pass through Python one by one.

    The words in small letters make a sentence's *opening* (its first :data:`OPENING_WORDS`): the
    slot of a sentence that sets names is its opening over the names set in the clauses the opening
    comes from. Two items of a template that vary its small words too ("between the roundabout and
    the bridge ... for tree removal", "between Railway Pde and High St ... for road resurfacing")
    share no clause's skeleton, but their sentences open alike ("will be closed between"), and each
    sets its own street and town there. Names after the opening's last clause are not read: an
    attribution ("..., the mayor told The Age") is each outlet's own."""
    capitals = _CAPITAL.findall(clause)
    if not capitals:
        return None, [], _PLAIN.findall(clause) if words else []
    opener = None
    if opens_sentence and (lead := _LEAD.match(clause)) is not None and not lead.group(2):
        if capitals[0] == lead.group(1):  # the sentence's first word, alone: no name
            capitals = capitals[1:]
            opener = lead if lead.group(1)[0].isalpha() else None  # (a figure stays a blank)
    names = [name for name in map(_name, capitals) if name]
    if not names and not words:
        return None, names, []
    if opener is not None:
        clause = f"{clause[: opener.start(1)]}{opener.group(1).lower()}{clause[opener.end(1) :]}"
    found = _PLAIN.findall(_RUN.sub(" _ ", clause))
    small = [word for word in found if word != "_"] if words else []
    if not names or len(found) - found.count("_") < min_words:
        return None, names, small
    return _BLANKS.sub("_", " ".join(found)), names, small


@functools.lru_cache(maxsize=1 << 14)  # names repeat: a town, a minister, "Police"
def _name(word: str) -> str:
    """A word with a capital as a name (lower-cased, its accents and trailing marks and "'s" cut),
    or "" for a word that starts with a digit (44C, 2.30pm, 5km: a figure updated), a stop word,
    a day, a month, a title, a rank or an office ("Det Sgt" for "Detective Sergeant" is a
    copy-editor's change), or a word whose first letter is small after all."""
    if word[0].isdigit() or not word[0].isupper():
        return ""
    name = word.rstrip(_TRAILING).lower()
    if name.endswith("'s"):
        name = name[:-2]
    if not name.isascii():  # "São Paulo" and "Sao Paulo" are one place: ASCII feeds drop accents
        name = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    if not any(c.isalpha() for c in name) or common_word(name) or name in _RANKS:
        return ""
    return _SPELLING.sub(_american, name) if name.endswith(_BRITISH) and name.isalpha() else name


# a British ending and its American form: an outlet's house style respells "Defense Department",
# "Trauma Center", "Labor Party" in its own way ("Defence", "Centre", "Labour")
_ENDINGS = {"tre": "ter", "tres": "ters", "our": "or", "ours": "ors", "ence": "ense", "isation": "ization"}
_ENDINGS |= {"isations": "izations", "ise": "ize", "ised": "ized", "ogue": "og", "mme": "m", "mmes": "ms"}
_BRITISH = tuple(_ENDINGS)
_SPELLING = re.compile(rf"(?<=[a-z]{{2}})(?:{'|'.join(sorted(_ENDINGS, key=len, reverse=True))})$")


def _american(ending: re.Match[str]) -> str:
    """A name's British ending in its American form (:data:`_ENDINGS`); a name that only looks
    British ("Seymour", "Louise") is respelled too, the same way on both pages."""
    return _ENDINGS[ending.group()]


def slot_hashes(pieces: Sequence[str], seed: int) -> list[tuple[int, ...]]:
    """Each piece's slots (:func:`slots_in`), for the pieces that begin within the first
    :data:`LEAD_WORDS` words of prose (none for the rest): what a page's blocks carry to the site
    partition that keeps some of them. Headings do not count ("Listen to this article", "Share",
    a byline); sentences of chrome above the article do, for the boilerplate learner, which would
    tell them, keeps its state at the site partition, after this is read."""
    found: list[tuple[int, ...]] = []
    words = 0
    for piece in pieces:
        if words >= LEAD_WORDS:
            return found + [()] * (len(pieces) - len(found))
        found.append(slots_in(piece, seed))
        if not heading(piece):
            words += piece.count(" ") + 1
    return found


def page_slots(blocks: Iterable[Sequence[int]]) -> np.ndarray:
    """The slots of a page from those of the blocks it keeps: a skeleton said in two blocks, or
    twice in one, is dropped; of the rest, those of the :data:`SKELETONS` smallest skeletons, at
    most :data:`MAX_SLOTS` values (uint32, sorted)."""
    by_skeleton: dict[int, list[int]] = {}
    repeated: set[int] = set()
    for values in blocks:
        if not values:  # most blocks: past the lead, or without a name
            continue
        keys = {value >> 16 for value in values}
        repeated.update(keys & by_skeleton.keys())  # said in an earlier block too
        for value in values:
            if value & 0xFFFF == _REPEATED:
                repeated.add(value >> 16)
            by_skeleton.setdefault(value >> 16, []).append(value)
    if not by_skeleton:
        return NO_SLOTS
    kept: list[int] = []
    for key in sorted(by_skeleton.keys() - repeated)[:SKELETONS]:
        kept.extend(by_skeleton[key])
    return np.array(sorted(set(kept))[:MAX_SLOTS], dtype=np.uint32)


def worded_apart(one: NameSketch, other: NameSketch) -> bool:
    """Whether two pages each set names of their own in wording both give, :data:`OWN_NAMES` or
    more between them, or an identifier each (see the module doc). Only a slot one page has and
    the other lacks can set a name of its own (a slot both have sets a name both give), so two
    copies of one text, and pages that differ in fewer slots than it takes, are told at once;
    nothing is kept on the sketches (the window holds them by the million)."""
    if not one.slots.size or not other.slots.size:
        return False
    mine, theirs = set(one.slots.tolist()), set(other.slots.tolist())
    only_mine, only_theirs = mine - theirs, theirs - mine
    # (an identifier each way is two values each way, its name's and its mark's)
    if not only_mine or not only_theirs or len(only_mine) + len(only_theirs) < OWN_NAMES:
        return False
    shared = {value >> 16 for value in mine} & {value >> 16 for value in theirs}
    own = {value for value in only_mine if value >> 16 in shared}
    their_own = {value for value in only_theirs if value >> 16 in shared}
    if not own or not their_own:
        return False
    if _names_in(own) + _names_in(their_own) < OWN_NAMES and not (
        _identifies(own, mine) and _identifies(their_own, theirs)
    ):
        return False  # (marks still count as names here: with fewer, only identifiers part them)
    my_names, their_names = _low_names(one, mine), _low_names(other, theirs)
    own = {value for value in own - _marks(own, mine) if value & 0xFFFF not in their_names}
    their_own = {value for value in their_own - _marks(their_own, theirs) if value & 0xFFFF not in my_names}
    if not own or not their_own:
        return False
    if _names_in(own) + _names_in(their_own) >= OWN_NAMES:
        return True
    return _identified_apart(own, mine, their_own, theirs)


def _names_in(values: set[int]) -> int:
    """How many names slots set (a name set in two clauses is one)."""
    return len({value & 0xFFFF for value in values})


def _ordered_mark(low: int) -> int:
    """The value beside an identifier's characters in order (its sorted characters' hash) that marks
    it so: another affine map than :func:`_mark`'s, never :data:`_REPEATED`."""
    return ((low * 0x7F4B + 0x2D31) & 0xFFFF) or 0xFFFE


def _ordered_marked(value: int) -> int:
    """The slot that marks a slot's value as an identifier's characters in order."""
    return value & ~0xFFFF | _ordered_mark(value & 0xFFFF)


def _marked(value: int) -> int:
    """The slot that marks a slot's name as an identifier: the same wording, the name's mark."""
    return value & ~0xFFFF | _mark(value & 0xFFFF)


def _marks(values: set[int], slots: set[int]) -> set[int]:
    """Those of a page's slot values that are no names: the marks of its identifiers, and their
    characters in order with the marks of those."""
    keys = {value >> 16 for value in values}
    near = [slot for slot in slots if slot >> 16 in keys]
    ordered = {slot for slot in near if _ordered_marked(slot) in slots}
    return ({_marked(slot) for slot in near} | ordered | {_ordered_marked(slot) for slot in ordered}) & values


def _identified_apart(own: set[int], mine: set[int], their_own: set[int], theirs: set[int]) -> bool:
    """Whether each page quotes an identifier of its own in shared wording, other than one whose
    characters both pages give there in one order (a transposed pair of digits corrected)."""
    both = mine & theirs
    transposed = {value >> 16 for value in both if _ordered_marked(value) in both}
    my_ids = {value >> 16 for value in own if _marked(value) in mine} - transposed
    their_ids = {value >> 16 for value in their_own if _marked(value) in theirs} - transposed
    return bool(my_ids) and bool(their_ids)


def _identifies(values: set[int], slots: set[int]) -> bool:
    """Whether a page marks any of these of its slots' names as an identifier."""
    return any(_marked(value) in slots for value in values)


def _low_names(sketch: NameSketch, slots: set[int]) -> set[int]:
    """The low halves of the hashes of every name a page is known to give: its sketch's and its
    slots' (``slots``: the sketch's, as a set already; a name that opens a sentence is in its
    slots only)."""
    return {value & 0xFFFF for value in sketch.hashes.tolist()} | {value & 0xFFFF for value in slots}


def different_items(one: NameSketch, other: NameSketch) -> bool:
    """Whether two pages are different items of a template, however alike their words: named
    apart (:func:`.names.named_apart`) or worded apart (:func:`worded_apart`)."""
    return named_apart(one, other) or worded_apart(one, other)
