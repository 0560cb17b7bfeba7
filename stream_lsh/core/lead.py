"""Where the shared text lies: a page's lead counts twice.

A set of shingles forgets where each shingle stood, and that is what tells two kinds of page
apart that share the same text:

* a **copy** shares text where both pages begin. Outlets trim a wire story from the bottom, a
  teaser is a story's first sentences, an early version of a story is its first paragraphs;
* a **quoting page** is a story of its own that quotes a passage of another after its own
  opening. Judged by the sets alone, a page quoting 40% of a story holds 70% or more of a copy
  trimmed to 55% of that story: it looks like the fuller copy of the trimmed one.

So a page's *lead*, its first ``share`` of shingles but at least :data:`LEAD_MIN_SHINGLES`,
counted from where its article begins (after the headline, byline and dateline lines the page
may open with, which differ between outlets), is added to its set :data:`LEAD_COPIES` more times,
each copy *tagged* (rehashed with a tag of its own, so a tagged shingle never equals a plain one).
Two pages share tagged shingles only where the text they share is where each of them begins. For
copies this adds to the intersection and the union alike, so their Jaccard similarity and
containment rise; for a quoting page it adds to the union alone, and both fall. A teaser of one
or two sentences is all lead: it shares its whole tagged lead with its story, which lifts its
Jaccard similarity by half or more (0.09 to 0.15 for 12 shingles of a 130-shingle story).

One tagged copy, not two. A copy that opens with a sentence of its own (a local angle, a
rewritten first line) loses that much of its tagged lead, and on real news briefs of 100-200
words, where the lead's floor of 24 shingles is half the page, two copies counted it three times
against the copy: most copies missed in real prose were of that kind. With one, recall on the
generated real-prose copies rose from 0.968 to 0.984; quoting pages stay apart as often on most
seeds, while on some a quote of a short story joins it at Jaccard similarity just above 0.3
(docs/accuracy.md).

It is part of the signature scheme (:class:`.scheme.Scheme`): the tagged shingles are in every
signature, and state signed otherwise is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .hashing import fmix64
from .shingles import ShingleBatch

__all__ = ["DEFAULT_LEAD_SHARE", "LEAD_COPIES", "LEAD_MIN_SHINGLES", "LEAD_RULE", "with_lead"]

#: The share of a page's shingles that makes its lead (0: position is ignored).
DEFAULT_LEAD_SHARE = 0.25
#: ... but at least this many shingles (a short page is all lead).
LEAD_MIN_SHINGLES = 24
#: Tagged copies of the lead added to the set (see the module doc for why one).
LEAD_COPIES = 1
#: The rule's version and constants, for the scheme.
LEAD_RULE = f"lead-v1:min{LEAD_MIN_SHINGLES}:x{LEAD_COPIES}"
_TAGS = fmix64(np.uint64(0x1EAD_5EED_1EAD_5EED) + np.arange(1, LEAD_COPIES + 1, dtype=np.uint64))


def with_lead(batch: ShingleBatch, share: float, begins: Sequence[int] | None = None) -> ShingleBatch:
    """The batch with each page's lead added again, tagged, :data:`LEAD_COPIES` times, after its own
    shingles (see the module doc). ``begins[i]``: where page i's article begins, in the units of
    ``batch.starts`` (shingles that start before it are never lead). ``share`` 0 returns the batch
    as it is."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"the lead's share must be in [0, 1], got {share!r}")
    counts = batch.counts()
    if share == 0.0 or not batch.values.size:
        return batch
    page_of = np.repeat(np.arange(counts.size), counts)
    skipped = np.zeros(counts.size, np.int64)
    if begins is not None and batch.starts is not None:
        before = batch.starts < np.asarray(begins, dtype=np.int64)[page_of]
        skipped = np.bincount(page_of, weights=before, minlength=counts.size).astype(np.int64)
    body = counts - skipped
    size = np.minimum(body, np.maximum(np.ceil(body * share).astype(np.int64), LEAD_MIN_SHINGLES))
    added = size * LEAD_COPIES
    added_before = np.cumsum(added) - added
    rank = np.arange(int(added.sum())) - np.repeat(added_before, added)
    per_copy = np.repeat(np.maximum(size, 1), added)
    picked = np.repeat(batch.offsets[:-1] + skipped, added) + rank % per_copy
    tags = _TAGS[rank // per_copy]  # one tag per copy
    offsets = batch.offsets + np.concatenate(([0], np.cumsum(added)))
    values = np.empty(int(offsets[-1]), dtype=np.uint64)
    values[np.arange(batch.values.size) + added_before[page_of]] = batch.values
    values[np.repeat(offsets[:-1] + counts, added) + rank] = fmix64(batch.values[picked] ^ tags)
    return ShingleBatch(values, offsets)
