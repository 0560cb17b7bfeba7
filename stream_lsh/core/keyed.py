"""A page too short to compare that is still found: by its keys, never by its similarity.

A push alert is one sentence ("Breaking: UK pledges £1bn to vaccine effort", the story's first
sentence), a feed card a headline and a line. Under ``min_shingles`` shingles such a page is not
signed: its Jaccard similarity with anything means little (two alerts of different stories that
share "the prime minister" would be copies). When it comes *after* its story it still joins it by
the keys it has (:mod:`.opening`, :mod:`.headline`). But an alert comes first: that is what alerts
are for. Unindexed, it was ``no_content``, the story that followed founded a cluster of its own,
and the alert stayed apart from every copy: in the eleventh, fourteenth and fifteenth outside sets
(docs/accuracy.md) such alerts were most of the missed pairs that hold an alert.

So a page is **keyed** when it is unsigned yet has text and a key to be found by: its opening
(:mod:`.opening`: its first four shingles from where its article begins, which for a page this short
is all of its article) or its headline (:mod:`.headline`). A keyed page that nothing takes founds a
cluster (``unique``), and is indexed under its opening and headline keys, but in no band and not
under its content: a later page finds it only by the same opening or the same headline, and is
judged by the rules of those keys, never by a similarity measured against it. A few identical
words are a site's stock line ("Before you continue") as often as a copy, and a copy of an alert
has its opening or headline too. A notice (:mod:`.notice`), a page whose site's learner left it
no text (a consent wall at a story's address has the story's title) and a page with no key stay
``no_content``.

A keyed page's entry holds no band keys, which marks it wherever the window asks (:func:`keyed_only`,
:func:`.window.first_keys`), and the signature of no shingles (:func:`empty_signature`), which
marks it where entries are stored and read back, band keys derived again (:func:`band_keys_of`):
nothing else to keep.
A page that can be compared and comes later with the same key takes the key from it
(:func:`.window.takes_key`); if that page leaves the window first, the keyed page is no longer
found by that key.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .minhash import EMPTY_VALUE

if TYPE_CHECKING:
    from .banding import Banding
    from .index import IndexEntry
    from .prepare import SignedPage

__all__ = ["NO_BAND_KEYS", "band_keys_of", "empty_signature", "is_keyed", "keyed_only", "no_shingles"]

#: The band keys of a keyed page's entry: none (one array shared by all, so read-only).
NO_BAND_KEYS = np.zeros(0, dtype=np.uint64)
NO_BAND_KEYS.setflags(write=False)


def empty_signature(num_perm: int) -> np.ndarray:
    """The signature of no shingles: every value the largest (:meth:`.minhash.MinHasher.signatures`)."""
    return np.full(num_perm, EMPTY_VALUE, dtype=np.uint32)


def no_shingles(signature: np.ndarray) -> bool:
    """Whether a signature is that of no shingles: a keyed page's, as stored."""
    return bool((signature == EMPTY_VALUE).all())


def keyed_only(entry: IndexEntry) -> bool:
    """Whether an indexed page is a keyed page's, found by its keys only: it has no band keys."""
    return not entry.keys


def band_keys_of(signature: np.ndarray, banding: Banding) -> np.ndarray:
    """An entry's band keys from its stored signature: none for a keyed page's."""
    return NO_BAND_KEYS if no_shingles(signature) else banding.band_keys(signature)


def is_keyed(page: SignedPage, no_text: int) -> bool:
    """Whether an unsigned page is found by its keys: it is no notice, has text left (its content
    hash is not ``no_text``, the hash of none), and has an opening or a headline key."""
    prepared = page.prepared
    return (
        not page.signed
        and prepared.notice is None
        and prepared.content_hash != no_text
        and bool(page.opening or page.headline)
    )
