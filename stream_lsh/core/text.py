"""Text normalisation and visible-text extraction for news pages (pure: no I/O).

Shingles are only comparable if two copies of a story produce the same tokens, so
`normalize` folds away differences that readers never see (compatibility forms, case,
invisible format characters, typographic apostrophes, whitespace), and `html_blocks`
returns the text a browser would show, one block per paragraph-like element.

HTML goes through Lexbor (selectolax): fast, but its tree builder walks the stack of open
elements on most tags (100k nested <div> take ~14 s) and its formatting-element bookkeeping
is quadratic in distinct unclosed <b>/<a>/... and can clone them into every later block.
So one vectorised numpy pass over the bytes first finds every tag name; from it `_route`
bounds Lexbor's work (over budget: `_fallback_extract`, a linear scanner) and `_mark`
puts "\n" before block-level tags (a block's text becomes one line of the body text) and
renames formatting tags (`<b>` -> `<b_>`: a plain inline element to Lexbor).
"""

from __future__ import annotations

import html as _html
import re
import unicodedata
from itertools import zip_longest
from typing import NamedTuple

import numpy as np
from selectolax.lexbor import LexborHTMLParser

__all__ = [
    "FLATTENED_WORDS",
    "LONG_BLOCK_WORDS",
    "article_start",
    "byline",
    "ends_sentence",
    "flattened",
    "heading",
    "html_blocks",
    "html_to_text",
    "inline_list",
    "kicker",
    "normalize",
    "normalize_blocks",
    "sentence_starts",
    "sentences",
    "text_blocks",
    "without_lists",
]

_DROP = (
    "\u00ad\u200b\u200c\u200d\u2060\ufeff"  # soft hyphen, zero-width
    "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)  # bidi controls
_APOSTROPHES = "\u2018\u2019\u02bc\uff07"
_SPACES = "".join(c for c in map(chr, range(0x3001)) if c.isspace() and c != " ")
_SPACES_NOT_NL = _SPACES.replace("\n", "")
_LINE_BREAKS = "\r\v\f\x1c\x1d\x1e\x85\u2028\u2029"  # the other str.splitlines() boundaries


def _replace_all(s: str, chars: str, new: str) -> str:
    """One str.replace per character present: far faster than str.translate on non-ASCII text."""
    for c in chars:
        if c in s:
            s = s.replace(c, new)
    return s


def _collapse(s: str) -> str:
    """Same result as ' '.join(s.split()) (every str.isspace() run -> one space), about 5x faster."""
    s = _replace_all(s, _SPACES, " ")
    while "  " in s:
        s = s.replace("  ", " ")
    return s.strip()


def normalize(text: str) -> str:
    """NFKC + casefold + invisible characters dropped + apostrophes and whitespace unified.

    Format characters go before NFKC so that "e<ZWSP><acute>" composes like "e<acute>".
    casefold() can leave a string that NFKC would change again (e.g. U+01F0), hence the
    second, usually skipped NFKC: it makes the function idempotent. Apostrophes are mapped
    last because NFKC itself produces U+02BC (from U+0149).
    """
    if text.isascii():
        return _collapse(text.lower())
    s = unicodedata.normalize("NFKC", _replace_all(text, _DROP, "")).casefold()
    if not unicodedata.is_normalized("NFKC", s):
        s = unicodedata.normalize("NFKC", s)
    return _collapse(_replace_all(s, _APOSTROPHES, "'"))


def normalize_blocks(blocks: list[str], *, keep_empty: bool = False) -> list[str]:
    """:func:`normalize` of every block of a page, the empty ones dropped (kept, as "", with
    ``keep_empty``: one per block given), in one pass over the page rather than one per block
    (blocks hold no "\\n", which separates them meanwhile)."""
    text = "\n".join(blocks)
    if text.isascii():
        s = text.lower()
    else:
        s = unicodedata.normalize("NFKC", _replace_all(text, _DROP, "")).casefold()
        if not unicodedata.is_normalized("NFKC", s):
            s = unicodedata.normalize("NFKC", s)
        s = _replace_all(s, _APOSTROPHES, "'")
    s = _replace_all(s, _SPACES_NOT_NL, " ")
    while "  " in s:
        s = s.replace("  ", " ")
    if keep_empty:
        return list(map(str.strip, s.split("\n")))
    return [block for block in map(str.strip, s.split("\n")) if block]


def text_blocks(text: str) -> list[str]:
    """Plain text -> one block per non-empty line, inner whitespace collapsed (not normalised).

    A line that the next line goes on from is one block with it: prose hard-wrapped at a fixed
    width (wire copy, e-mail, text-only sites), known by where its lines break
    (:func:`_unwrapped`), and any line followed, with no blank line between, by one starting in
    lower case. Each wrapped line alone reads like a heading, and the first lines of a story's
    paragraphs after its slug, headline and byline were dropped as a list of headlines
    (:func:`without_lists`), which changed where the story begins for the lead and its opening.
    """
    text = _unwrapped(_replace_all(text.replace("\r\n", "\n"), _LINE_BREAKS, "\n"))
    return _split_blocks(_GOES_ON.sub(" ", text))


#: A line broken for the width of hard-wrapped prose is this long at most, and at least
#: :data:`MIN_WRAP_WIDTH` (wire copy wraps at 65-80 characters).
MAX_WRAP_WIDTH = 100
MIN_WRAP_WIDTH = 40
#: A text is hard-wrapped when at least this many of its lines end in the middle of a sentence where
#: the next one's first word would not have fitted.
MIN_WRAPPED_LINES = 3


def _unwrapped(text: str) -> str:
    """Prose hard-wrapped at a fixed width, each paragraph on one line.

    A wrapping program breaks a line only where the next word would not fit. So when the next line's
    first word would have made a line (of :data:`MIN_WRAP_WIDTH` characters or more) longer than the
    width, that line was broken for the width, not by the writer, and the next line goes on from it,
    whatever its case: wire copy starts wrapped lines with names ("Abu Dhabi", "February"), which
    :data:`_GOES_ON` alone leaves apart, and the first lines of its paragraphs then read as a list of
    headlines (:func:`without_lists`) and were dropped. A line that starts indented begins a
    paragraph.

    The width is not given: it is the line length, from :data:`MIN_WRAP_WIDTH` to
    :data:`MAX_WRAP_WIDTH`, at which the most lines were broken so in the middle of a sentence (the
    narrowest of equals), and there must be :data:`MIN_WRAPPED_LINES` of them: lines of one
    sentence each, of similar lengths, can look broken for a width, but they end sentences. A site's
    footer or a "Related" line after wire copy may be longer than the copy's width, and a line longer
    than the width (a paragraph on one line, an address) was not wrapped: it stays.
    """
    if text.count("\n") < MIN_WRAPPED_LINES:
        return text
    lines = text.split("\n")
    sizes = [len(line.rstrip()) for line in lines]
    # (line, its size, the next line's size, the next line's first word, whether the line ends mid-
    # sentence) where the line may have been broken for a width: it is of a width's size, and the next
    # line goes on (not empty, not indented)
    pairs = [
        (i, size, sizes[i + 1], len(following.split(None, 1)[0]), not ends_sentence(lines[i]))
        for i, (size, following) in enumerate(zip(sizes, lines[1:]))
        if MIN_WRAP_WIDTH <= size <= MAX_WRAP_WIDTH
        and sizes[i + 1] <= MAX_WRAP_WIDTH
        and following[:1].strip()
    ]
    if sum(mid for *_, mid in pairs) < MIN_WRAPPED_LINES:
        return text  # the common case: a paragraph a line
    widths = sorted({size for size in sizes if MIN_WRAP_WIDTH <= size <= MAX_WRAP_WIDTH})
    best = max(  # max() keeps the first, the narrowest, of equals
        (
            [
                (i, mid)
                for i, size, after, word, mid in pairs
                if size <= width and after <= width and size + 1 + word > width
            ]
            for width in widths
        ),
        key=lambda broken: sum(mid for _, mid in broken),
    )
    if sum(mid for _, mid in best) < MIN_WRAPPED_LINES:
        return text
    broken = {i for i, _ in best}
    out = [lines[0]]
    for i, line in enumerate(lines[1:]):
        if i in broken:
            out[-1] = f"{out[-1].rstrip()} {line}"
        else:
            out.append(line)
    return "\n".join(out)


def ends_sentence(line: str) -> bool:
    """Whether a line ends like a sentence: with a full stop, an exclamation mark or an ellipsis,
    before any closing quotes or brackets (a question mark ends many headlines)."""
    return line.rstrip().rstrip(_CLOSERS)[-1:] in _SENTENCE_FINAL


def _split_blocks(text: str) -> list[str]:
    """Split on "\\n", collapse other whitespace, drop empty blocks (whole-string C passes)."""
    text = _replace_all(text, _SPACES_NOT_NL, " ")
    while "  " in text:
        text = text.replace("  ", " ")
    return [b for b in map(str.strip, text.split("\n")) if b]


#: Blocks of more words are split into sentences (:func:`sentences`): a one-line article or an
#: extractor's flattened page is one block, and a block is what the boilerplate learner judges.
LONG_BLOCK_WORDS = 100
#: A page that is mostly one block of more words holds a whole article on one line (:func:`flattened`).
FLATTENED_WORDS = 150
#: A piece of fewer words stays with the sentence before it ("Mr." + "Smith said ...", "U.S.").
_MIN_SENTENCE_WORDS = 4
# Capital and small letters of the stop-word languages' scripts (Latin, Latin-1, Cyrillic).
_CAPITAL = "A-Z\u00c0-\u00d6\u00d8-\u00de\u0400-\u042f"
_SMALL = "a-z\u00df-\u00f6\u00f8-\u00ff\u0430-\u045f"
# A line break that a line starting in lower case follows (not an address): the line goes on.
# (from its newline: a pattern that starts with a literal is searched for in C; the spaces before
# the newline are collapsed with the others by _split_blocks)
_GOES_ON = re.compile(f"\\n[^\\S\\n]*(?=[{_SMALL}])(?!https?:|www\\.)")
_OPENERS = "\"'\u201c\u2018\u00ab(["
_CLOSERS = "\"'\u201d\u2019\u00bb)]"
_OPENING, _CLOSING = re.escape(_OPENERS), re.escape(_CLOSERS)  # inside a character class
# Where a sentence ends (see `sentences`): after ".", "!", "?" or "…" and any closing quotes or
# brackets, at the spaces before a word that does not start with a small letter. A full stop
# after a capitalised word of up to three characters (a title or an initial: "Mr.", "J.",
# "U.S.") ends nothing. The block is matched with a space before it, so that a title at its start
# has a word boundary too.
_WORD_CHAR = "[\\w.]"
_NOT_AFTER_TITLE = "".join(f"(?<![\\s{_OPENING}][{_CAPITAL}]{_WORD_CHAR * n}\\.)" for n in range(3))
_SENTENCE_CUT = re.compile(
    f"((?:\\.{_NOT_AFTER_TITLE}|[!?\u2026])[.!?\u2026]*[{_CLOSING}]*)\\s+(?=[{_OPENING}]?[^\\W_{_SMALL}])"
)


#: A run of at least this many title-like blocks is a list (:func:`without_lists`).
MIN_LIST_ITEMS = 3
#: A title-like block has at most this many words.
MAX_ITEM_WORDS = 20
_SENTENCE_FINAL = ".!\u2026"
#: A teaser in a list of stories has at most this many words...
MAX_TEASER_WORDS = 60
#: ...and a run of title-like blocks and teasers is a list of stories when it holds this many.
MIN_TEASERS = 2
# how a teaser cut short ends (before its closing quotes; a last line break is no more text)
_CUT_SHORT = ("...", "\u2026", "...\n", "\u2026\n")


_BYLINE = re.compile(r"^(?:by|von|par|por|di|door|от)\s", re.IGNORECASE)
#: A label before a block's first sentence (:func:`kicker`) has at most this many words.
_KICKER_WORDS = 3
_KICKER = re.compile(rf"(?:[^\s:]+ ){{0,{_KICKER_WORDS - 1}}}[^\s:]+: (?=\S)")
#: A title cut with an ellipsis has at least this many words (:func:`article_start`).
_MIN_CUT_TITLE_WORDS = 4


def heading(block: str) -> bool:
    """A headline, a byline, a dateline or a label: short, and not ending like a sentence."""
    return block.count(" ") < MAX_ITEM_WORDS and not ends_sentence(block)  # the cheaper test first


def byline(block: str) -> bool:
    """Whether a line names who wrote a story: "By Jane Doe", "Von ...", "Par ...", short."""
    return _BYLINE.match(block) is not None and block.count(" ") < MAX_ITEM_WORDS


def article_start(blocks: list[str]) -> int:
    """How many of a page's first blocks come before its article: headings (:func:`heading`), and a
    title cut short that the next lines' first sentence begins with.

    Cards and teasers often give the lead's first words as their headline, cut with an ellipsis
    ("Net browser Opera 8.0, due for official release at the end of..."), then the lead itself.
    Ending with "...", the cut title reads like a sentence; taken for the article's start, the
    page's opening (:mod:`.opening`) and its lead (:mod:`.lead`) were that cut line's words, not
    its story's, and the teaser found no story."""
    start = 0
    while start < len(blocks) and (heading(blocks[start]) or _cut_title(blocks, start)):
        start += 1
    return start


def kicker(block: str) -> str:
    """The label a block opens with, before its first sentence ("breaking news:", "just in:",
    "watch:"): up to :data:`_KICKER_WORDS` words ending with a colon, with a sentence of
    :data:`_KICKER_WORDS` words or more after it; "" when there is none.

    Push alerts and cards put such a label before the story's first sentence, and the story does
    not. Kept in the alert's text, the label's words made its opening (:mod:`.opening`) another
    than its story's and lowered the share of it that lies in the story, so the story never found
    the alert that came before it: on the fourteenth outside set, 17 of 20 push alerts began so.
    A page's text leaves out the label of the block its article begins with."""
    match = _KICKER.match(block)
    if match is None or block.count(" ", match.end()) < _KICKER_WORDS - 1:
        return ""
    return match.group()


def _cut_title(blocks: list[str], at: int) -> bool:
    """Whether ``blocks[at]`` is a title cut with an ellipsis that one of the next three blocks
    begins with and goes on from."""
    block = blocks[at]
    if not block.endswith(("...", "\u2026")):
        return False
    stem = block.rstrip(".\u2026 ")
    if stem.count(" ") < _MIN_CUT_TITLE_WORDS - 1:
        return False
    return any(later.startswith(stem) and len(later) > len(stem) + 1 for later in blocks[at + 1 : at + 4])


def without_lists(blocks: list[str]) -> list[str]:
    """The blocks without lists: runs of ``MIN_LIST_ITEMS`` or more title-like blocks in a row (a
    :func:`heading` that does not start in lower case).

    A list of headlines ("Trending now", "Most read", related stories), a menu or a row of links
    names *other* pages. Kept, it makes two stories of one site alike through what the site
    prints around them, and a rotating list is never the same twice for the boilerplate learner
    to catch. An article's text is sentences: its title, a byline or a subheading stand alone,
    and prose wrapped at a fixed width starts most lines in lower case.

    A list on one line goes too (:func:`inline_list`): a ticker of the latest headlines joined by
    " | " ("Breaking: Sri Lanka court bans ex-PM ... | Qatar's emir in Iran ... | ..."), or a menu.
    Four sites of the seventeenth outside set print one over each page (249 pages), new each time.

    A teaser cut short (:func:`_cut_short`: "Zapata Corp said it does not intend to pay...") is an
    item of such a list too when the run holds :data:`MIN_TEASERS` of them: a "More from" box of
    headlines over the first words of their stories. On a wire brief of one or two paragraphs such
    a box is most of the page: kept, it made the page a copy of no version of its story (the
    twentieth outside set: recall 0.89). One such block is no box: a teaser page's excerpt under
    its headline and over its "Read more", a quote that trails off under a subheading; then only
    the runs of headlines around it go, as they did. A short block between headlines in such a run
    is an item too, even when it ends like a sentence (:func:`_listed_at`).
    """
    kept: list[str] = []
    run: list[str] = []
    listed: set[int] = set()  # places in ``run`` of items that end like sentences (_listed_at)
    teasers = 0
    prose = False  # whether a block of the article came before

    def close() -> None:
        if teasers < MIN_TEASERS or len(run) < MIN_LIST_ITEMS:  # else a box of stories and teasers
            kept.extend(_without_runs_of_headlines(run, listed))

    for at, block in enumerate(blocks):
        if " | " in block and inline_list(block):
            continue
        cut, title = _cut_short(block), _title_like(block)
        if not title and prose and _listed_at(blocks, at, run, listed):  # a headline is an item anyway
            listed.add(len(run))
        elif not (title or cut):
            if run:  # most blocks of an article follow another
                close()
                run, teasers = [], 0
                listed = set()
            kept.append(block)
            prose = True
            continue
        run.append(block)
        teasers += cut
    close()
    return kept


def _listed_at(blocks: list[str], at: int, run: list[str], listed: set[int]) -> bool:
    """Whether ``blocks[at]``, short but ending like a sentence, is an item of the list around it:
    the :data:`MIN_LIST_ITEMS` blocks before it are title-like (or items so found) and the next
    one is an item (:func:`_item`). Not when only items come after it: an article's last short
    paragraph before a "Most read" box, under a "Related:" line or two, is no item.

    Some headlines end with a full stop ("Steve Forbes: Trump is indeed a billionaire.") or are
    cut short with an ellipsis, and a "Most read" box numbers its items ("3In pictures: ..."). Such
    an item broke the run, and it stayed in the page's text: on a gallery or a video page, whose
    own text is a caption or two, it was most of what was left (the twenty-eighth outside set: a
    gallery joined another story through the "Most read" item that named it). Only after the
    article has begun: above it, the blocks before a short first paragraph are its headline, its
    byline and its date."""
    block = blocks[at]
    return (
        len(run) >= MIN_LIST_ITEMS
        and at + 1 < len(blocks)
        and block.count(" ") < MAX_ITEM_WORDS
        and not block[:1].islower()
        and all(
            place in listed or _title_like(run[place]) for place in range(len(run) - MIN_LIST_ITEMS, len(run))
        )
        and _item(blocks[at + 1])
    )


def _item(block: str) -> bool:
    """A block a list of stories holds: a headline or a teaser cut short."""
    return _title_like(block) or _cut_short(block)


def _without_runs_of_headlines(blocks: list[str], listed: set[int]) -> list[str]:
    """Blocks without their runs of ``MIN_LIST_ITEMS`` or more title-like blocks (the others stop a
    run; those at the places ``listed`` are items too)."""
    kept: list[str] = []
    run: list[str] = []
    for at, block in enumerate(blocks):
        if at in listed or _title_like(block):
            run.append(block)
            continue
        if len(run) < MIN_LIST_ITEMS:
            kept += run
        run = []
        kept.append(block)
    if len(run) < MIN_LIST_ITEMS:
        kept += run
    return kept


def _title_like(text: str) -> bool:
    """A headline, a menu entry or a link: it does not start in lower case, does not end like a
    sentence, and is short."""
    return (
        bool(text)
        and not text[0].islower()
        and text.rstrip(_CLOSERS)[-1:] not in _SENTENCE_FINAL
        and text.count(" ") < MAX_ITEM_WORDS
    )


def _cut_short(text: str) -> bool:
    """A teaser: a sentence or two cut short, ending in an ellipsis."""
    return text.rstrip(_CLOSERS).endswith(_CUT_SHORT) and text.count(" ") < MAX_TEASER_WORDS


def inline_list(block: str) -> bool:
    """Whether a block is a list on one line: ``MIN_LIST_ITEMS`` or more title-like items joined
    by " | " (a ticker of headlines, a menu)."""
    items = [item.strip() for item in block.split(" | ")]
    return len(items) >= MIN_LIST_ITEMS and all(_title_like(item) for item in items)


def flattened(blocks: list[str]) -> bool:
    """Whether a page's text is mostly one block of over :data:`FLATTENED_WORDS` words: an article
    on one line, as many feeds and extractors deliver it. It is split into sentences, which works;
    users are told, because text with its paragraphs works better (teasers and versions keep their
    shape). Most of the text (half its characters or more), because real paragraphs run past 150
    words too: a German or Spanish story's longest often does, and on the thirty-first outside set
    111 pages with their paragraphs were counted as flattened."""
    if not blocks:
        return False
    longest = max(blocks, key=len)
    return 2 * len(longest) >= sum(map(len, blocks)) and longest.count(" ") >= FLATTENED_WORDS


def sentences(block: str, max_words: int = LONG_BLOCK_WORDS) -> list[str]:
    """A block of more than ``max_words`` words as its sentences; a shorter block as it is.

    A sentence ends at ``.``, ``!``, ``?`` or ``…`` (closing quotes and brackets kept with it)
    before a space and a word that does not start with a small letter; a full stop after a title
    or an initial ends nothing, and a piece under four words joins the sentence before it. The
    split depends on the block's own text alone, so every copy of a paragraph splits alike.
    """
    if block.count(" ") < max_words:
        return [block]
    parts = _SENTENCE_CUT.split(" " + block)  # text, its sentence's end, text, end ..., text
    parts[0] = parts[0][1:]
    pieces: list[str] = []
    for piece in map("".join, zip_longest(parts[::2], parts[1::2], fillvalue="")):
        if pieces and piece.count(" ") + 1 < _MIN_SENTENCE_WORDS:
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    return pieces


#: Bytes that may end a sentence's final mark or a closer after it: . ! ? " ' ) ] and the last
#: bytes of … ” ’ ».
_MAY_END = np.zeros(256, dtype=bool)
_MAY_END[list(b".!?\"')]") + [0xA6, 0x9D, 0x99, 0xBB]] = True


def sentence_starts(data: np.ndarray) -> np.ndarray:
    """Where sentences begin in normalised text as UTF-8 bytes (``uint8``; texts joined by
    spaces may be given at once), after each text's first: the byte after a sentence's final mark
    (``.``, ``!``, ``?``, ``…``), up to three closing quotes or brackets and a space. Normalised
    text has lost its case, so a title's or an initial's full stop ("mr. smith") starts one too:
    a spare start. Vectorised: one pass of array operations over a whole micro-batch's text."""
    spaces = np.flatnonzero(data == 0x20)
    spaces = spaces[spaces >= 1]
    spaces = spaces[_MAY_END[data[spaces - 1]]]  # the few after a mark's or a closer's last byte
    at = spaces - 1  # the byte before the space, then before each closer
    for _ in range(3):
        byte, before, twice = data[at], data[np.maximum(at - 1, 0)], data[np.maximum(at - 2, 0)]
        one = (byte == 0x22) | (byte == 0x27) | (byte == 0x29) | (byte == 0x5D)  # " ' ) ]
        two = (byte == 0xBB) & (before == 0xC2)  # »
        three = ((byte == 0x9D) | (byte == 0x99)) & (before == 0x80) & (twice == 0xE2)  # ” ’
        at = np.maximum(at - one - 2 * two - 3 * three, 0)
    byte, before, twice = data[at], data[np.maximum(at - 1, 0)], data[np.maximum(at - 2, 0)]
    final = (byte == 0x2E) | (byte == 0x21) | (byte == 0x3F)  # . ! ?
    final |= (byte == 0xA6) & (before == 0x80) & (twice == 0xE2)  # …
    found: np.ndarray = spaces[final] + 1
    return found


_BLOCK = frozenset(
    """address article aside blockquote body br caption center dd details dialog dir div dl
    dt fieldset figcaption figure footer form frameset h1 h2 h3 h4 h5 h6 header hgroup hr html legend li
    listing main menu nav ol p pre search section summary table tbody td tfoot th thead tr ul""".split()
)
_FORMATTING = frozenset("a b big code em font i nobr s small strike strong tt u".split())
_RAWTEXT = frozenset("script style textarea title iframe noembed noframes xmp plaintext".split())
_VOID = frozenset(
    """area base basefont bgsound br col embed frame hr image img input keygen link meta
    param source track wbr""".split()
)
# Elements that close an open element of the same kind instead of nesting in it: deep nesting
# of these needs a counted element in between, so leaving them out of the depth count costs at
# most a constant factor and keeps sloppy pages full of unclosed <p>/<li> cheap.
_UNCOUNTED = _VOID | frozenset("p li dd dt option optgroup rb rp rt rtc".split())
_SKIP = ("head", "template", "noscript", "svg", "math", "object", "canvas", "select", "button")
_STRIP = (*_SKIP, *sorted(_RAWTEXT))  # for Lexbor, which sees raw-text elements unless cut
# Not ``form``: ASP.NET pages wrap the whole body, article and all, in one <form>. A form's own
# text is its controls' (select and button are skipped, inputs have none) and their labels.
# A dialog is never the page's content: cookie and consent banners, newsletter and paywall pop-ups
# (consent platforms mark theirs role="dialog"); their text is often the same across many sites.
_CHROME = frozenset("nav aside footer label dialog".split())
_CHROME_ROLES = frozenset("navigation banner contentinfo complementary dialog alertdialog".split())
# Readers' comments are no part of the article (the outside sets' labels say so too), and every
# copy has its own: kept, they made a teaser with a few comments too long to be all lead, and
# copies less alike. A comment section is known by its container's id or class, as blogging
# platforms and comment services name it (each a whole word: "category-comment", a post in an
# opinion section, is no comment section).
_COMMENT_SECTIONS = frozenset(
    """comments comments-area comment-list commentlist comments-section comment-section
    story-comments article-comments reader-comments user-comments disqus_thread""".split()
)
_HIDDEN_CSS = "[hidden], [aria-hidden='true' i]"
_ROLE_CSS = ", ".join(f"[role~='{r}' i]" for r in sorted(_CHROME_ROLES))
_COMMENTS_CSS = ", ".join(
    f"[{attribute}~='{word}' i]" for word in sorted(_COMMENT_SECTIONS) for attribute in ("id", "class")
)
_HEADER_CSS = "header:not(article header, main header)"

# Work bound for Lexbor: each start/end tag may walk the stack of open elements, measured
# ~1.5-5 ns per (tag x open element); 4e6 + 100/tag keeps the worst case near 20 ms plus
# ~0.5 us per tag. _MAX_DEPTH (2,500 nested <div> parse in ~10 ms) caps a single deep nest.
_MAX_DEPTH = 2500
_WORK_BASE = 4_000_000
_WORK_PER_TAG = 100
_WIN = 16  # tag-name bytes compared exactly; longer names are "long"
_PAD = bytes(_WIN + 4)
_HTML_WS = bytes.maketrans(b"\t\n\r\f", b"    ")
_BLOCK_BIT, _FMT_BIT, _RAW_BIT, _UNCOUNTED_BIT, _SKIP_BIT, _CHROME_BIT = 1, 2, 4, 8, 16, 32


class _Tags(NamedTuple):
    """Every `<name` / `</name` of a document, as parallel numpy arrays."""

    pos: np.ndarray  # offset of '<'
    close: np.ndarray  # bool: end tag
    k0: np.ndarray  # name bytes 0-7, lower-cased, zero-padded (uint64)
    k1: np.ndarray  # name bytes 8-15
    ln: np.ndarray  # name length, capped at 16
    cat: np.ndarray  # _*_BIT flags of known names
    exact: np.ndarray  # bool: the key is the whole name as Lexbor will see it

    def select(self, keep: np.ndarray, shift: np.ndarray | int = 0) -> _Tags:
        return _Tags(*(a[keep] for a in self))._replace(pos=self.pos[keep] - shift)


def _name_key(name: str) -> tuple[int, int]:
    k = np.frombuffer(name.encode().ljust(_WIN, b"\0"), "<u8")
    return int(k[0]), int(k[1])


def _build_table() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    cats: dict[tuple[int, int], int] = {}
    groups = (
        (_BLOCK, _BLOCK_BIT),
        (_FORMATTING, _FMT_BIT),
        (_RAWTEXT, _RAW_BIT),
        (_STRIP, _SKIP_BIT),
        (_UNCOUNTED, _UNCOUNTED_BIT),
        (_CHROME | {"header"}, _CHROME_BIT),
    )
    for names, bit in groups:
        for name in names:
            cats[_name_key(name)] = cats.get(_name_key(name), 0) | bit
    keys = sorted(cats)  # first 8 bytes are unique among these names, so search on k0 alone
    return (
        np.array([k[0] for k in keys], "<u8"),
        np.array([k[1] for k in keys], "<u8"),
        np.array([cats[k] for k in keys], np.int64),
    )


_K0, _K1, _CATS = _build_table()
_NAME_OF = {_name_key(name)[0]: name for name in (*_STRIP, *_CHROME, "header")}
_PLAINTEXT = _name_key("plaintext")[0]
_BYTE_MASKS = np.array([np.frombuffer(bytes([255] * i + [0] * (_WIN - i)), "<u8") for i in range(_WIN + 1)])


def _name_keys(buf: bytes, n: int, start: np.ndarray) -> tuple[np.ndarray, ...]:
    """Lower-cased 16-byte keys of the names starting at `start`: equal keys mean equal names
    up to 16 bytes. Works on (tags x 16) bytes gathered as two unaligned uint64 loads; numpy's
    per-call overhead dominates at page size, hence few calls and no per-axis reductions.
    """
    u = np.ndarray((n + 12,), dtype="<u8", buffer=buf, strides=(1,))  # buf has 20 pad bytes
    words = np.empty((len(start), 2), "<u8")
    words[:, 0], words[:, 1] = u[start], u[start + 8]
    win = words.view(np.uint8)
    win += ((win - np.uint8(65)) < 26).view(np.uint8) << 5  # A-Z -> a-z
    stop = (win == 0x20) | (win == 0x2F) | (win == 0x3E) | (win == 0)
    ln = stop.argmax(axis=1)
    any_stop = stop.view("<u8")
    ln[(any_stop[:, 0] | any_stop[:, 1]) == 0] = _WIN
    mask = _BYTE_MASKS.take(ln, axis=0)  # ~15x faster than fancy indexing here
    lt_in_name = (win == 0x3C).view("<u8") & mask
    keys = words & mask
    return keys[:, 0], keys[:, 1], ln, (lt_in_name[:, 0] | lt_in_name[:, 1]) != 0


def _scan(buf: bytes, n: int) -> tuple[_Tags, np.ndarray]:
    """All tags, plus the offsets of `<!`, `<?` and `</`+non-letter (bogus comments).

    One vectorised pass; chunked so that tag-dense input does not need gigabytes.
    """
    b = np.frombuffer(buf, np.uint8)
    lt = (b[:n] == 0x3C).nonzero()[0]
    c1, c2 = b[lt + 1], b[lt + 2] | 0x20
    close = c1 == 0x2F
    bogus = (c1 == 0x21) | (c1 == 0x3F) | (close & ((c2 < 0x61) | (c2 > 0x7A)))
    first = np.where(close, c2, c1 | 0x20)
    ok = (first >= 0x61) & (first <= 0x7A)
    bogus_pos, lt, close = lt[bogus], lt[ok], close[ok]
    chunk = 1 << 18
    parts = [
        _name_keys(buf, n, lt[i : i + chunk] + 1 + close[i : i + chunk])
        for i in range(0, max(len(lt), 1), chunk)
    ]
    k0, k1, ln, has_lt = (np.concatenate(x) for x in zip(*parts))
    i = np.minimum(np.searchsorted(_K0, k0), len(_K0) - 1)
    cat = np.where((_K0[i] == k0) & (_K1[i] == k1), _CATS[i], 0)
    return _Tags(lt, close, k0, k1, ln, cat, ~has_lt & (ln < _WIN)), bogus_pos


def _first_at(sorted_pos: np.ndarray, at: np.ndarray, eof: int) -> np.ndarray:
    """For each value in `at`, the first element of `sorted_pos` >= it, else `eof`."""
    return np.append(sorted_pos, eof)[np.searchsorted(sorted_pos, at)]


def _regions(a: np.ndarray, n: int, tags: _Tags, bogus: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(starts, ends) of comments, bogus comments and raw-text elements as a browser sees them.

    All ends are found at once (next `>`, `-->` or matching end tag, else EOF: unclosed ones
    run to the end, as in browsers, so k unclosed `<script` cost one search, not k). A start
    inside an earlier region is no start: a short walk over the regions that hold starts.
    """
    raw = (tags.cat & _RAW_BIT) != 0
    if not bogus.size and not (raw & ~tags.close).any():
        return bogus, bogus
    gt = (a[:n] == 0x3E).nonzero()[0]
    ends = _first_at(gt, bogus + 1, n - 1) + 1
    comment = (a[bogus + 1] == 0x21) & (a[bogus + 2] == 0x2D) & (a[bogus + 3] == 0x2D)
    if comment.any():
        arrows = gt[(a[gt - 1] == 0x2D) & (a[gt - 2] == 0x2D)] - 2  # "-->" (a is zero-padded)
        ends[comment] = _first_at(arrows, bogus[comment] + 2, n - 3) + 3
    start_parts, end_parts = [bogus], [ends]
    pos, close, key = tags.pos[raw], tags.close[raw], tags.k0[raw]
    for k in set(key[~close].tolist()):
        opens = pos[~close & (key == k)]
        end_tag = _first_at(pos[close & (key == k)], opens + 1, n)
        start_parts.append(opens)
        end_parts.append(np.full(len(opens), n) if k == _PLAINTEXT else _first_at(gt, end_tag, n - 1) + 1)
    s, e = np.concatenate(start_parts), np.concatenate(end_parts)
    order = np.argsort(s, kind="stable")
    s, e = s[order], e[order]
    nxt = np.searchsorted(s, e)  # index of the first start after each region
    inner = np.zeros(len(s) + 1, np.int64)
    reach = 0
    for i in (nxt > np.arange(1, len(s) + 1)).nonzero()[0].tolist():  # regions holding starts
        if i >= reach:  # this region is real: the starts inside it are not
            reach = int(nxt[i])
            inner[i + 1] += 1
            inner[reach] -= 1
    kept = np.cumsum(inner[:-1]) == 0
    return s[kept], e[kept]


def _encode(html: str) -> bytes:
    """UTF-8 (lone surrogates -> '?'), HTML whitespace -> space, NUL deleted: NUL marks cuts."""
    return html.encode("utf-8", "replace").translate(_HTML_WS, b"\0")


def _cut(data: bytes, tags: _Tags, bogus: np.ndarray) -> tuple[bytes, _Tags]:
    """Replace each comment, `<!...>`, `<?...>` and raw-text element (script, style ...) by
    one NUL byte; return the new bytes and their tags (no rescan: positions are shifted).

    Afterwards no `<` inside such a region can pass for a tag. NUL is dropped from text by
    HTML parsers but, unlike "", cannot join `<` and `div>` across a cut into a new tag.
    """
    n = len(data)
    cs, ce = _regions(np.frombuffer(data + _PAD, np.uint8), n, tags, bogus)
    if not cs.size:
        return data, tags
    arr = np.frombuffer(data, np.uint8).copy()
    arr[cs] = 0
    inside = np.zeros(n + 1, np.int8)  # regions do not overlap: the running sum is 0 or 1
    inside[cs + 1], inside[ce] = 1, -1
    data = arr[np.cumsum(inside[:n], dtype=np.int8) == 0].tobytes()
    j = np.searchsorted(cs, tags.pos, "right") - 1
    removed = np.concatenate(([0], np.cumsum(ce - cs - 1)))
    keep = (j < 0) | (tags.pos >= ce[np.maximum(j, 0)])
    return data, tags.select(keep, removed[j + 1][keep])


def _prepare(html: str) -> tuple[bytes, _Tags]:
    """Encoded and cut document with its tags: the linear extractor's input."""
    data = _encode(html)
    return _cut(data, *_scan(data + _PAD, len(data)))


def _value_starts(a: np.ndarray, qs: np.ndarray) -> np.ndarray:
    """Which quotes at `qs` can open an attribute value: previous non-space byte is `=`."""
    prev = a[qs - 1]  # qs == 0 reads the zero padding at the end: not '='
    valid: np.ndarray = prev == 0x3D
    spaced = prev == 0x20
    if spaced.any():
        run_start = (np.diff((a == 0x20).view(np.int8), prepend=0) == 1).nonzero()[0]
        rs = run_start[np.searchsorted(run_start, qs[spaced] - 1, "right") - 1]
        valid[spaced] = a[rs - 1] == 0x3D
    return valid


def _attribute_hazard(a: np.ndarray, n: int, tag_pos: np.ndarray) -> bool:
    """True if some tag-like `<` may lie inside a tag (attribute value or name).

    The by-name depth count trusts every `</x` to be a real end tag; `<div title="</div>">`
    would fake one. A quoted value starts at a quote whose previous non-space byte is `=`
    and ends at the next equal quote; then every tag must be closed by a `>` outside such
    values before the next tag starts. False alarms only cost the slower extractor.
    """
    starts, ends = [], []
    for quote in (0x22, 0x27):
        qs = (a[:n] == quote).nonzero()[0]
        valid = _value_starts(a, qs)
        starts.append(qs[valid])
        ends.append(np.append(qs[1:], n)[valid])
    s, e = np.concatenate(starts), np.concatenate(ends)
    if np.any(np.searchsorted(tag_pos, s, "right") < np.searchsorted(tag_pos, e, "left")):
        return True
    gt = (a[:n] == 0x3E).nonzero()[0]
    s.sort()
    e.sort()
    gt = gt[np.searchsorted(s, gt, "left") - np.searchsorted(e, gt, "right") <= 0]
    return bool(np.any(np.diff(np.searchsorted(gt, tag_pos)) == 0))


def _depth_by_name(close: np.ndarray, k0: np.ndarray, k1: np.ndarray, step: np.ndarray) -> np.ndarray:
    """Open-element count after each tag, with opens and closes matched per tag name.

    A stray `</x>` cannot cancel a `<div>` this way. Per name the count is a walk clamped
    at zero (d = S - min(0, running min S)); the per-name walks are summed back in
    document order.
    """
    ev = np.flatnonzero(step)
    if not ev.size:
        return np.zeros(len(close), np.int64)
    order = ev[np.lexsort((ev, k1[ev], k0[ev]))]
    v, g0, g1 = step[order], k0[order], k1[order]
    new = np.ones(len(order), bool)
    new[1:] = (g0[1:] != g0[:-1]) | (g1[1:] != g1[:-1])
    gid = np.cumsum(new) - 1
    s = np.cumsum(v)
    s -= (s - v)[new][gid]
    big = 2 * len(v) + 2  # earlier groups never lower the running minimum of later ones
    low = np.minimum.accumulate(s - gid * big) + gid * big
    d = s - np.minimum(low, 0)
    prev = np.concatenate(([0], d[:-1]))
    prev[new] = 0
    delta = np.zeros(len(close), np.int64)
    delta[order] = d - prev
    return np.cumsum(delta)


def _within_budget(depth: np.ndarray) -> bool:
    return not depth.size or (
        int(depth.max()) <= _MAX_DEPTH and int(depth.sum()) <= _WORK_BASE + _WORK_PER_TAG * depth.size
    )


def _route(html: str) -> tuple[bool, bytes, _Tags]:
    """(use Lexbor?, bytes, tags). Lexbor only if its estimated work is within budget.

    First bound: every counted start tag stays open. Phantom tags (in scripts, comments,
    attribute values) only raise it, so it needs no cutting and settles most pages. Else
    the document is cut and opens are matched with end tags per name, which is trusted only
    if no tag-like `<` can sit inside a tag.
    """
    data = _encode(html)
    tags, bogus = _scan(data + _PAD, len(data))
    opens = ~tags.close & ((tags.cat & _UNCOUNTED_BIT) == 0)
    if _within_budget(np.cumsum(opens)):
        return True, data, tags
    data, tags = _cut(data, tags, bogus)
    counted = (tags.cat & _UNCOUNTED_BIT) == 0
    if _attribute_hazard(np.frombuffer(data + _PAD, np.uint8), len(data), tags.pos):
        return False, data, tags
    step = (~tags.close & counted).astype(np.int64) - (tags.close & counted & tags.exact)
    return _within_budget(_depth_by_name(tags.close, tags.k0, tags.k1, step)), data, tags


#: What may stand between two links of a row of links (a menu, a list of headlines without <li>).
_LINK_SEPARATORS = frozenset(
    ["", "|", "\u00b7", "\u2022", "/", "-", "\u2013", "&middot;", "&bull;", "&nbsp;"]
)
_A = _name_key("a")[0]


def _row_of_links(between: str) -> bool:
    """Whether the text between an `</a>` and the next `<a>` makes them items of one row of links."""
    return between.strip() in _LINK_SEPARATORS


def _links_in_rows(data: bytes, tags: _Tags) -> np.ndarray:
    """Which tags are an `<a>` that follows an `</a>` with at most a separator between: such
    links are a list's items ("More news: <a>..</a><a>..</a>"), each a block of its own, not
    one run of headlines glued into words ("...has been cutThe United Nations...")."""
    is_a = (tags.k0 == _A) & (tags.ln == 1) & tags.exact
    follows = np.zeros(len(tags.pos), bool)
    follows[1:] = is_a[1:] & ~tags.close[1:] & is_a[:-1] & tags.close[:-1]
    for i in np.flatnonzero(follows).tolist():
        start = data.find(b">", int(tags.pos[i - 1]), int(tags.pos[i])) + 1
        follows[i] = start > 0 and _row_of_links(data[start : int(tags.pos[i])].decode("utf-8", "replace"))
    return follows


def _mark(data: bytes, tags: _Tags) -> bytes:
    """Insert "\\n" before every block-level tag (the text of a block becomes one line) and
    before every link in a row of links (:func:`_links_in_rows`), and "_" after formatting tag
    names: `<b_>` is a plain inline element to Lexbor, so the adoption agency and formatting
    reconstruction (quadratic, or one new element per unclosed tag per text run) never run.
    Text order is unchanged."""
    cat = np.where(tags.exact, tags.cat, 0)
    block, fmt = ((cat & _BLOCK_BIT) != 0) | _links_in_rows(data, tags), (cat & _FMT_BIT) != 0
    where = np.concatenate([tags.pos[block], (tags.pos + 1 + tags.close + tags.ln)[fmt]])
    what = np.repeat(np.array([10, 95], np.uint8), [int(block.sum()), int(fmt.sum())])
    return np.insert(np.frombuffer(data, np.uint8), where, what).tobytes()


def _lexbor_extract(data: bytes, tags: _Tags, drop_chrome: bool) -> list[str]:
    """Parse, remove what is never shown, take the body text and split it at the marks.

    Only names that occur are stripped (each strip_tags name is a full tree walk); the
    role selectors cost more than a search for "role", the hidden ones less."""
    bits = _SKIP_BIT | (_CHROME_BIT if drop_chrome else 0)
    names = [_NAME_OF[k] for k in set(tags.k0[(tags.cat & bits) != 0].tolist())]
    css = [_HIDDEN_CSS]
    lowered = data.lower() if drop_chrome else b""
    if b"role" in lowered:
        css.append(_ROLE_CSS)
    if b"comment" in lowered:
        css.append(_COMMENTS_CSS)
    if "header" in names:
        names.remove("header")
        css.append(_HEADER_CSS)
    tree = LexborHTMLParser(_mark(data, tags))
    tree.strip_tags(names)
    for node in tree.css(", ".join(css)):
        node.decompose(recursive=False)  # detach only: safe for nested matches, C-level
    body = tree.body
    return _split_blocks(body.text()) if body is not None else []


_TAG_RE = re.compile(r"""<(/?)([A-Za-z][^ />]*)([^>"']*(?:(?:"[^"]*"?|'[^']*'?)[^>"']*)*)>?""")
_ATTR_RE = re.compile(r"""([^\s/>][^\s/>=]*)(?:\s*=\s*(?:"([^"]*)"?|'([^']*)'?|([^\s>]*)))?""")
_CLOSES_SKIP = {  # start tags that implicitly end a skipped element of this name
    "p": _BLOCK - {"br", "td", "th", "tr", "tbody", "thead", "tfoot", "caption", "body", "html"},
    "li": {"li"},
    "dd": {"dd", "dt"},
    "dt": {"dd", "dt"},
}
_MAIN = ("article", "main")


def _hidden_by_attrs(attrs: str, drop_chrome: bool) -> bool:
    low = attrs.lower()
    if "hidden" not in low and not (drop_chrome and ("role" in low or "comment" in low)):
        return False
    found: dict[str, str] = {}
    for m in _ATTR_RE.finditer(low):
        found.setdefault(m.group(1), m.group(2) or m.group(3) or m.group(4) or "")
    return (
        "hidden" in found
        or found.get("aria-hidden") == "true"
        or (drop_chrome and not _CHROME_ROLES.isdisjoint(found.get("role", "").split()))
        or (
            drop_chrome
            and not _COMMENT_SECTIONS.isdisjoint(found.get("id", "").split() + found.get("class", "").split())
        )
    )


def _skipped(name: str, attrs: str, drop_chrome: bool, in_main: int) -> bool:
    if name in _SKIP or _hidden_by_attrs(attrs, drop_chrome):
        return True
    return drop_chrome and (name in _CHROME or (name == "header" and not in_main))


def _fallback_extract(s: str, drop_chrome: bool) -> list[str]:
    """Linear scanner for documents Lexbor could be slow on (input already cut).

    No tree, so nothing can blow up: a skipped element ends at the matching end tag of its
    own name (nesting of that name counted), at a start tag that implicitly closes it
    (`<li>` after `<li hidden>`), or at the end of the input.
    """
    out: list[str] = []
    kept = depth = in_main = 0
    skip = ""
    link_end = -1  # where the last tag ended, if it was an </a>
    for m in _TAG_RE.finditer(s):
        slash, name, attrs = m.groups()
        name = name.lower()
        after_link, link_end = link_end, m.end() if slash and name == "a" else -1
        if skip:
            if slash or name not in _CLOSES_SKIP.get(skip, ()):
                if name == skip:
                    depth += -1 if slash else 1
                    skip = skip if depth else ""
                kept = m.end()
                continue
            skip, kept = "", m.start()
        out.append(s[kept : m.start()])
        kept = m.end()
        if name in _BLOCK or (
            name == "a" and not slash and after_link >= 0 and _row_of_links(s[after_link : m.start()])
        ):
            out.append("\n")
        if slash:
            if name in _MAIN and in_main:
                in_main -= 1
        elif name not in _VOID and _skipped(name, attrs, drop_chrome, in_main):
            skip, depth = name, 1
        elif name in _MAIN:
            in_main += 1
    if not skip:
        out.append(s[kept:])
    return _split_blocks(_html.unescape("".join(out).replace("\0", "")))


def _fallback_blocks(html: str, drop_chrome: bool = True) -> list[str]:
    """The linear extractor on its own (tests compare it with the Lexbor path)."""
    return _fallback_extract(_prepare(html)[0].decode("utf-8", "replace"), drop_chrome)


def html_blocks(html: str, *, drop_chrome: bool = True) -> list[str]:
    """Visible text of an HTML page, one entry per block-level element (see module doc)."""
    if not html or html.isspace():
        return []
    lexbor, data, tags = _route(html)
    if lexbor:
        try:
            return _lexbor_extract(data, tags, drop_chrome)
        except Exception:  # selectolax errors must not escape; the scanner needs no parser
            pass
    return _fallback_blocks(html, drop_chrome)


def html_to_text(html: str) -> str:
    """All visible text, chrome included, one block per line."""
    return "\n".join(html_blocks(html, drop_chrome=False))
