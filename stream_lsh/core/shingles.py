"""Shingling: normalised page texts -> their shingles, as uint64 hashes, a batch of pages at a time.

Three kinds (MMDS sec. 3.2):

* ``stopword`` (sec. 3.2.4, 3.8.6, the default): a stop word followed by the next ``k - 1`` words
  (``k = 3``: the stop word and the next two words), whether or not those are stop words. News prose
  is dense in stop words and navigation, ads and headline lists are not, so two pages that carry the
  same article share most of their shingles even when their surroundings differ. A stop word with
  fewer than ``k - 1`` words after it (at the very end of the text) starts no shingle.
* ``char``: every run of ``k`` characters of the normalised text (whitespace already collapsed to
  one blank, sec. 3.2.1).
* ``word``: every run of ``k`` consecutive words.

The stop-word list of a page is the one of its ``lang`` (ISO 639-1) when there is one, else the one
whose stop words cover most of its words.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .hashing import TokenHasher, combine, words
from .stopwords import StopWordLists, StopWordMatcher, canonical_language

__all__ = ["ShingleBatch", "ShingleKind", "ShingleSpec", "Shingler", "tokenize"]

_EMPTY = np.zeros(0, dtype=np.uint64)


def tokenize(normalized_text: str) -> list[str]:
    """Words of an already normalised text: runs of letters/digits, with inner apostrophes kept."""
    return words(normalized_text)


class ShingleKind(str, enum.Enum):
    STOPWORD = "stopword"
    CHAR = "char"
    WORD = "word"


_DEFAULT_SIZE = {ShingleKind.STOPWORD: 3, ShingleKind.CHAR: 9, ShingleKind.WORD: 3}
_SIZE_RANGE = {ShingleKind.STOPWORD: (2, 8), ShingleKind.CHAR: (1, 32), ShingleKind.WORD: (1, 8)}


@dataclass(frozen=True)
class ShingleSpec:
    """What a shingle is: its kind and its length ``k`` in words (characters for ``char``).

    For ``stopword`` shingles, ``k`` counts the stop word: ``k = 3`` is MMDS's stop word plus the
    next two words.
    """

    kind: ShingleKind = ShingleKind.STOPWORD
    k: int | None = None

    def __post_init__(self) -> None:
        try:
            kind = ShingleKind(self.kind)
        except ValueError:
            choices = ", ".join(k.value for k in ShingleKind)
            raise ValueError(f"unknown shingle kind {self.kind!r}; choose one of {choices}") from None
        object.__setattr__(self, "kind", kind)
        if self.k is None:
            object.__setattr__(self, "k", _DEFAULT_SIZE[kind])
        low, high = _SIZE_RANGE[kind]
        if not isinstance(self.k, int) or not low <= self.k <= high:
            raise ValueError(
                f"{kind.value} shingle size must be an integer in [{low}, {high}], got {self.k!r}"
            )

    @property
    def size(self) -> int:
        assert self.k is not None  # set in __post_init__
        return self.k


@dataclass(frozen=True)
class ShingleBatch:
    """Shingle hashes of several pages: page i owns ``values[offsets[i]:offsets[i + 1]]``.

    A page's shingles are in text order and may repeat; :meth:`page_set` gives the set. ``starts``
    says where in its page each shingle begins (:mod:`.lead` counts the lead from there).
    """

    values: np.ndarray
    offsets: np.ndarray
    starts: np.ndarray | None = None  # each shingle's first token in its page (words; characters for char)

    def __len__(self) -> int:
        return self.offsets.size - 1

    def counts(self) -> np.ndarray:
        """Shingles per page, repeats included."""
        return np.diff(self.offsets)

    def page_set(self, i: int) -> np.ndarray:
        """Sorted unique shingle hashes of page i."""
        return np.unique(self.values[self.offsets[i] : self.offsets[i + 1]])


class Shingler:
    """Turns normalised texts into shingle hashes.

    Args:
        spec: kind and size of shingles.
        hasher: token hasher (its seed is part of the scheme).
        stop_words: needed for ``stopword`` shingles.
    """

    def __init__(
        self, spec: ShingleSpec, hasher: TokenHasher, stop_words: StopWordLists | None = None
    ) -> None:
        if spec.kind is ShingleKind.STOPWORD and stop_words is None:
            raise ValueError("stop-word shingles need stop-word lists")
        self.spec = spec
        self.hasher = hasher
        self._matcher = StopWordMatcher(stop_words, hasher) if stop_words is not None else None

    def shingles(self, normalized_text: str, language: str | None = None) -> np.ndarray:
        """One page's shingle set: sorted unique uint64 hashes (possibly empty)."""
        return self.shingle_batch([normalized_text], [language]).page_set(0)

    def shingle_batch(self, texts: Sequence[str], languages: Sequence[str | None]) -> ShingleBatch:
        """Shingles of every text; ``languages[i]`` is text i's language hint (or None)."""
        if len(texts) != len(languages):
            raise ValueError("one language hint per text, please")
        k = self.spec.size
        if self.spec.kind is ShingleKind.CHAR:
            hashes, offsets = self._characters(texts)
        else:
            hashes, offsets = self.hasher.hash_words_batch(texts)
        page_of = np.repeat(np.arange(len(texts)), np.diff(offsets))
        if self.spec.kind is ShingleKind.STOPWORD:
            starts = self._stop_word_positions(hashes, page_of, languages)
        else:
            starts = np.arange(hashes.size)
        starts = starts[starts + (k - 1) < offsets[page_of[starts] + 1]] if starts.size else starts
        values = combine([hashes[starts + j] for j in range(k)]) if starts.size else _EMPTY
        first = np.searchsorted(starts, offsets)
        return ShingleBatch(values, first, starts - np.repeat(offsets[:-1], np.diff(first)))

    def language_of(self, normalized_text: str, language: str | None = None) -> str | None:
        """The stop-word language that :meth:`shingles` would use (None for char/word shingles)."""
        if self._matcher is None:
            return None
        hashes, _ = self.hasher.hash_words_batch([normalized_text])
        masks = self._matcher.language_masks(hashes)
        index = int(self._language_indexes(masks, np.zeros(hashes.size, int), [language])[0])
        return self._matcher.languages[index]

    def _characters(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        pieces = [self.hasher.hash_tokens(text) for text in texts]
        offsets = np.cumsum([0] + [p.size for p in pieces])
        return (np.concatenate(pieces) if pieces else _EMPTY), offsets

    def _language_indexes(
        self, masks: np.ndarray, page_of: np.ndarray, hints: Sequence[str | None]
    ) -> np.ndarray:
        """Index (into the matcher's languages) of each page's stop-word language."""
        assert self._matcher is not None
        known = self._matcher.languages
        chosen = np.array([known.index(c) if (c := canonical_language(h)) in known else -1 for h in hints])
        undecided = np.flatnonzero(chosen < 0)
        if undecided.size:
            counts = self._matcher.counts_per_page(masks, page_of, len(hints))
            chosen[undecided] = np.argmax(counts[undecided], axis=1)  # first maximum: earlier language wins
        return chosen

    def _stop_word_positions(
        self, hashes: np.ndarray, page_of: np.ndarray, hints: Sequence[str | None]
    ) -> np.ndarray:
        assert self._matcher is not None
        masks = self._matcher.language_masks(hashes)
        chosen = self._language_indexes(masks, page_of, hints)
        bits = np.left_shift(np.uint64(1), chosen.astype(np.uint64))
        return np.flatnonzero(masks & bits[page_of])
