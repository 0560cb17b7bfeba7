"""A page's opening: how a teaser too short to compare is still found to be its story's.

A teaser of one sentence ("Six Swiss tour company staff have been found guilty of manslaughter
over the…", a headline and the start of the first sentence) holds a few stop-word shingles. Its
Jaccard similarity with the story is far below any threshold, too few of its rows in a signature
let containment be judged (:data:`.verification.MIN_SHARE`), and under ``min_shingles`` it is not
signed at all (``no_content``). In the outside sets of docs/accuracy.md such teasers were most of
the pages kept apart from their story.

What such a teaser does share with its story is where both begin: the story's article opens with
the very words the teaser holds. So every page has an **opening key**, a hash of its first
:data:`OPENING_SHINGLES` shingles in text order, counted from where its article begins (after the
headline, byline and dateline lines, as the lead is: :mod:`.lead`; a label such as "Just in:"
before its first sentence is no part of its text: :func:`.text.kicker`). The window remembers the
earliest page with each opening, in the map it keeps for exact copies (the key is tagged, so it
never equals a content hash).

A **short** page, one that is all lead (at most :data:`SHORT_SHINGLES` shingles from where its
article begins), whose opening is that of an earlier page, is a copy of that page, unless it
matched another page by the usual measures, or (when it is signed) less than
:data:`MIN_SHARE_IN_ORIGINAL` of it lies in that page. A page of ordinary length is never joined
this way: a digest, a roundup or a quoting page may open with another story's first sentence and
go on with other text.

The other way round, a **story after its teaser**: a push alert, a feed card or a teaser of the
story's first sentence often comes before the story. It founds a cluster, and the story, far too
long to match it by Jaccard similarity, would found a second one that every later copy joins. So a
page that matches nothing else joins the earliest page it opens like when that page is at most
:data:`MAX_SIZE_OF_HELD` of its size and it holds that page as containment means it (the share of
the page's shingles that lies in the other reaches the containment threshold,
:func:`holds_earlier_opening`): the page begins with the teaser and holds it. With containment
off (Jaccard similarity alone), no page joins this way. The share is read
from the two signatures' rows where the teaser holds the minimum, which a teaser wholly inside the
page never does, so it is sharp even for a teaser of a few shingles. A digest that opens with a
teaser's sentence holds the teaser too: it joins it unless its sentences open three earlier
stories, which makes it a roundup (:mod:`.roundup`).

A **brief after its story**, a page of a story's first two or three paragraphs, is too long to
be short and, beside the story, too small for its bands to meet. When nothing else takes a page of
ordinary length, it joins the earlier page it opens like if it lies in that page as containment
means it and is at most :data:`MAX_SIZE_OF_HELD` of its size (:func:`lies_in_earlier_opening`),
unless the two set other names in one wording (:func:`.wording.worded_apart`). A quoting page or a
roundup that opens with a story's first sentence goes on with its own text, so little of it lies
in the story.

Four shingles are about ten words in one order, from where an article begins. On three outside sets
this joined 6 to 16 teasers a seed to their stories, and over nine runs one to another story's
page (the numbers and their commands: docs/accuracy.md).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .hashing import fmix64
from .lead import LEAD_MIN_SHINGLES
from .shingles import ShingleBatch

__all__ = [
    "MAX_SIZE_OF_HELD",
    "MIN_SHARE_IN_ORIGINAL",
    "OPENING_SHINGLES",
    "SHORT_SHINGLES",
    "holds_earlier_opening",
    "joins_by_opening",
    "lies_in_earlier_opening",
    "openings",
    "sentence_openings",
]

#: Shingles, in text order from where the article begins, that make a page's opening.
OPENING_SHINGLES = 4
#: A page with at most this many shingles from where its article begins is short: all lead.
SHORT_SHINGLES = LEAD_MIN_SHINGLES
#: A signed short page joins the earlier page it opens like only if this share of it lies there.
MIN_SHARE_IN_ORIGINAL = 0.5
#: A page joins an earlier page it opens like and holds when that page is at most this share of its size.
MAX_SIZE_OF_HELD = 0.5
_TAG = fmix64(np.array([0x0BE9_1A55_0BE9_1A55], dtype=np.uint64))[0]


def openings(batch: ShingleBatch, begins: Sequence[int] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each page's opening key (uint64; 0 when fewer than :data:`OPENING_SHINGLES` shingles follow
    where its article begins) and whether it is short (bool), as two arrays. ``begins[i]``: where
    page i's article begins, in the units of ``batch.starts``, as for :func:`.lead.with_lead`."""
    counts = batch.counts()
    pages = counts.size
    page_of = np.repeat(np.arange(pages), counts)
    body = np.ones(batch.values.size, dtype=bool)
    if begins is not None and batch.starts is not None:
        body = batch.starts >= np.asarray(begins, dtype=np.int64)[page_of]
    sizes = np.bincount(page_of[body], minlength=pages)  # shingles from where each article begins
    before = np.cumsum(body) - body  # body shingles before each shingle, over the whole batch
    rank = before - (np.cumsum(sizes) - sizes)[page_of]
    keys = np.zeros(pages, dtype=np.uint64)
    for position in range(OPENING_SHINGLES):
        at = body & (rank == position)
        keys[page_of[at]] = fmix64(keys[page_of[at]] ^ batch.values[at] ^ _TAG)
    keys[sizes < OPENING_SHINGLES] = 0
    keys[(sizes >= OPENING_SHINGLES) & (keys == 0)] = 1  # 0 means "none"
    return keys, sizes <= SHORT_SHINGLES


def sentence_openings(batch: ShingleBatch, sentences_at: Sequence[Sequence[int]]) -> list[tuple[int, ...]]:
    """Each page's opening keys at each of its sentences of prose (``sentences_at[i]``: where page
    i's sentences begin, in the units of ``batch.starts``), each key once, in text order: the key
    an article beginning there would have (:func:`openings`). What :mod:`.roundup` looks up."""
    pages = len(batch)
    if batch.starts is None or not batch.values.size or not any(sentences_at):
        return [()] * pages
    page_of = np.repeat(np.arange(pages, dtype=np.int64), batch.counts())
    spread = np.int64(1) << np.int64(32)  # (page, start) as one sortable number
    where = page_of * spread + batch.starts.astype(np.int64)
    asked_page = np.repeat(np.arange(pages, dtype=np.int64), [len(at) for at in sentences_at])
    asked_at = np.fromiter((a for at in sentences_at for a in at), dtype=np.int64, count=asked_page.size)
    first = np.searchsorted(where, asked_page * spread + asked_at)
    whole = first + OPENING_SHINGLES <= batch.offsets[asked_page + 1]
    keys = np.zeros(asked_page.size, dtype=np.uint64)
    for position in range(OPENING_SHINGLES):
        values = batch.values[np.minimum(first + position, batch.values.size - 1)]
        keys = fmix64(keys ^ values ^ _TAG)
    keys[keys == 0] = 1  # 0 means "none", as in openings()
    kept = keys[whole].tolist()
    bounds = np.searchsorted(asked_page[whole], np.arange(pages + 1)).tolist()  # asked in page order
    return [tuple(dict.fromkeys(kept[a:b])) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def joins_by_opening(short: bool, share_in_original: float | None) -> bool:
    """Whether a page that opens like an earlier one is a copy of it (see the module doc):
    ``share_in_original`` is the share of the page that lies in that page, None when the page has
    no signature to measure it with."""
    return short and (share_in_original is None or share_in_original >= MIN_SHARE_IN_ORIGINAL)


def holds_earlier_opening(
    share_of_page: float | None, share_of_earlier: float | None, containment: float | None
) -> bool:
    """Whether a page that opens like an earlier, smaller page holds it (see the module doc):
    ``share_of_page`` is the share of the page that lies in the earlier page, ``share_of_earlier``
    the share of the earlier page that lies in the page (their ratio is the ratio of the two
    sizes), ``containment`` the containment threshold (None: containment is off)."""
    if share_of_page is None or share_of_earlier is None or containment is None:
        return False
    if share_of_earlier < containment:
        return False
    return share_of_page <= MAX_SIZE_OF_HELD * share_of_earlier


def lies_in_earlier_opening(
    share_of_page: float | None, share_of_earlier: float | None, containment: float | None
) -> bool:
    """Whether a page that opens like an earlier, larger page lies in it: a brief of a story's
    first paragraphs, too long for the short-page rule and too small beside the story for its
    bands (see the module doc). The mirror of :func:`holds_earlier_opening`."""
    return holds_earlier_opening(share_of_earlier, share_of_page, containment)
