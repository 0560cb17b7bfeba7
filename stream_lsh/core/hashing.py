"""64-bit hashing of words and shingles, vectorised over a batch of pages.

Every word is hashed with seeded xxh3-64 of its UTF-8 bytes; a shingle's hash is an
order-sensitive mix of its words' hashes. Hashing words rather than shingle strings, and mixing
them with numpy, is what makes shingling fast; so is working on a whole batch of pages at once:

* words are found with numpy over the batch's UTF-8 bytes, with exactly the semantics of the
  regex :data:`WORD` (``\\w`` is ``str.isalnum()`` or ``_``; an apostrophe between two word
  characters joins them), using a per-codepoint table;
* each word gets a cheap polynomial pre-hash of its bytes (prefix sums, then a 64-bit mixer),
  which indexes a direct-mapped cache of 2**20 slots holding the word's xxh3 hash; only words
  missing from the cache are hashed with xxh3, from their bytes. So the Python-level work is per
  new word, not per word of a page, and a lookup is three numpy gathers for the whole batch.

A pre-hash collision between two different words within one hasher's lifetime would give them the
same hash (probability about n^2 / 2^65 for n distinct words); the tests check the vectorised path
against the regex reference on random text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import xxhash

__all__ = ["WORD", "TokenHasher", "combine", "fmix64", "words", "xxh64_text"]

#: A word: a run of letters/digits/underscore, with inner apostrophes kept ("don't", "rock'n'roll").
WORD = re.compile(r"\w+(?:'\w+)*")

_U64 = np.uint64
# Odd 64-bit constants (from the golden ratio and murmur3); any odd constants work.
_POSITION_MULTIPLIERS = np.array(
    [
        0x9E3779B97F4A7C15,
        0xC2B2AE3D27D4EB4F,
        0x165667B19E3779F9,
        0xD6E8FEB86659FD93,
        0xFF51AFD7ED558CCD,
        0xC4CEB9FE1A85EC53,
        0x27D4EB2F165667C5,
        0x94D049BB133111EB,
    ],
    dtype=_U64,
)
_FMIX_C1 = _U64(0xFF51AFD7ED558CCD)
_FMIX_C2 = _U64(0xC4CEB9FE1A85EC53)
_BASE = 0x100000001B3  # odd, so it is invertible modulo 2**64
_SLOT_BITS = 20  # direct-mapped word cache: 2**20 slots, 16 MB
_MAX_BLOB = 4_000_000  # bytes hashed in one go: bounds the prefix-sum and power arrays (~100 MB)
_APOSTROPHE = ord("'")


def words(normalized_text: str) -> list[str]:
    """The words of a normalised text, in order (the reference tokenizer)."""
    return WORD.findall(normalized_text)


def word_indexes(normalized_texts: Sequence[str], byte_offsets: Sequence[Sequence[int]]) -> list[list[int]]:
    """For each text, the index of the first word at or after each of its ``byte_offsets`` (in its
    UTF-8 bytes), counted as :class:`TokenHasher` splits words: in one vectorised pass over all
    texts, where :func:`words` would run a regex per piece."""
    encoded = [text.encode("utf-8", "surrogatepass") for text in normalized_texts]
    return word_indexes_in(encoded, np.frombuffer(b" ".join(encoded) + b" ", dtype=np.uint8), byte_offsets)


def word_indexes_in(
    encoded: Sequence[bytes], blob: np.ndarray, byte_offsets: Sequence[Sequence[int]]
) -> list[list[int]]:
    """:func:`word_indexes` of texts already encoded, and joined into ``blob`` (``uint8``: each
    text followed by a space), for a caller that reads the blob too."""
    edges = np.flatnonzero(np.diff(_word_bytes(blob).view(np.int8), prepend=np.int8(0)))
    starts = edges[0::2]  # words alternate start, end; the blob ends in a space
    text_starts = np.cumsum([0] + [len(e) + 1 for e in encoded])[:-1]
    firsts = np.searchsorted(starts, text_starts)
    sizes = [len(offsets) for offsets in byte_offsets]
    text_of = np.repeat(np.arange(len(encoded)), sizes)
    asked = text_starts[text_of] + np.fromiter((b for o in byte_offsets for b in o), np.int64, sum(sizes))
    found = (np.searchsorted(starts, asked) - firsts[text_of]).tolist()
    bounds = np.cumsum([0, *sizes]).tolist()
    return [found[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def fmix64(x: np.ndarray) -> np.ndarray:
    """murmur3's 64-bit finaliser: a bijection with full avalanche, applied elementwise (new array)."""
    x = x ^ (x >> _U64(33))
    x *= _FMIX_C1
    x ^= x >> _U64(33)
    x *= _FMIX_C2
    x ^= x >> _U64(33)
    return x


def combine(parts: list[np.ndarray]) -> np.ndarray:
    """Mix k equally long uint64 arrays position-wise into one uint64 array.

    Each position gets its own odd multiplier before the parts are added, so (a, b, c) and (c, b, a)
    hash differently; the finaliser spreads the result over all 64 bits. Arrays are never mutated.
    """
    if not parts:
        raise ValueError("combine needs at least one array")
    acc = parts[0] * _POSITION_MULTIPLIERS[0]
    for position, part in enumerate(parts[1:], start=1):
        acc = (acc ^ (acc >> _U64(29))) + part * _POSITION_MULTIPLIERS[position % len(_POSITION_MULTIPLIERS)]
    return fmix64(acc)


def xxh64_text(text: str, seed: int = 0) -> int:
    """xxh3-64 of a string's UTF-8 bytes; lone surrogates are hashed rather than rejected."""
    return xxhash.xxh3_64_intdigest(text.encode("utf-8", "surrogatepass"), seed)


def _word_code_points(codes: np.ndarray) -> np.ndarray:
    """For each code point: is it a regex ``\\w`` character? Asked once for each distinct one, of
    which a batch holds a few hundred: a table over all 1.1 million took 0.3 s to build, a cost
    each ``dedup`` process paid on its first page beyond ASCII."""
    distinct, at = np.unique(codes, return_inverse=True)
    flags = [chr(c).isalnum() or c == 95 for c in distinct.tolist()]
    return np.array(flags, dtype=bool)[at]


_ASCII_WORD = np.array([chr(c).isalnum() or c == 95 for c in range(128)] + [False] * 128, dtype=bool)


def _word_bytes(data: np.ndarray) -> np.ndarray:
    """For each byte of UTF-8 ``data``: does it belong to a word character?"""
    is_word: np.ndarray = _ASCII_WORD[data]
    high = np.flatnonzero(data >= 0x80)
    if high.size:
        leads = high[data[high] >= 0xC0]
        first = data[leads].astype(np.uint32)
        length = np.where(first >= 0xF0, 4, np.where(first >= 0xE0, 3, 2))
        last = data.size - 1

        def cont(offset: int) -> np.ndarray:
            return data[np.minimum(leads + offset, last)].astype(np.uint32) & 0x3F

        code = np.where(
            length == 2,
            ((first & 0x1F) << 6) | cont(1),
            np.where(
                length == 3,
                ((first & 0x0F) << 12) | (cont(1) << 6) | cont(2),
                ((first & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
            ),
        )
        is_word[high] = np.repeat(_word_code_points(np.minimum(code, 0x10FFFF)), length)
    apostrophes = np.flatnonzero(data[1:-1] == _APOSTROPHE) + 1
    if apostrophes.size:
        joined = apostrophes[is_word[apostrophes - 1] & is_word[apostrophes + 1]]
        is_word[joined] = True
    return is_word


class _Powers:
    """BASE**i and BASE**-i modulo 2**64 for i < size, grown on demand."""

    def __init__(self) -> None:
        self.up = np.ones(1, dtype=_U64)
        self.down = np.ones(1, dtype=_U64)

    def ensure(self, size: int) -> None:
        if self.up.size >= size:
            return
        size = max(size, min(2 * self.up.size, _MAX_BLOB + 2))  # grow by doubling, up to the blob bound
        self.up = self._powers_of(_BASE, size)
        self.down = self._powers_of(pow(_BASE, -1, 1 << 64), size)

    @staticmethod
    def _powers_of(base: int, size: int) -> np.ndarray:
        factors = np.full(size, base, dtype=_U64)
        factors[0] = 1
        return np.cumprod(factors, dtype=_U64)  # wraps modulo 2**64, as intended


class TokenHasher:
    """Seeded xxh3-64 hashes of words (and of single characters, for character shingles).

    The caches only save time: a token's hash never depends on what else is cached, so results
    are identical whether the caches are cold, warm or were just cleared.

    Args:
        seed: xxh3 seed; part of the signature scheme.
        max_cached: caches are cleared when they grow past this many entries (~100 bytes each).
    """

    def __init__(self, seed: int, max_cached: int = 1 << 20) -> None:
        if not isinstance(seed, int) or not 0 <= seed < 1 << 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        if max_cached < 1:
            raise ValueError(f"max_cached must be positive, got {max_cached}")
        self.seed = seed
        self.max_cached = max_cached
        self._by_text: dict[str, int] = {}
        self._slot_keys = np.zeros(
            1 << _SLOT_BITS, dtype=_U64
        )  # 0: empty (a word whose key is 0 is just never cached)
        self._slot_hashes = np.zeros(1 << _SLOT_BITS, dtype=_U64)
        self._powers = _Powers()

    def _bound(self) -> None:
        if len(self._by_text) > self.max_cached:
            self._by_text.clear()

    def hash_tokens(self, tokens: Sequence[str] | str) -> np.ndarray:
        """uint64 xxh3 hash of each token (a str is hashed character by character)."""
        self._bound()
        cache, seed = self._by_text, self.seed
        values = list(map(cache.get, tokens))
        if None in values:
            for i, value in enumerate(values):
                if value is None:
                    values[i] = cache[tokens[i]] = xxh64_text(tokens[i], seed)
        return np.array(values, dtype=_U64)

    def hash_words(self, normalized_text: str) -> np.ndarray:
        """``hash_tokens(words(normalized_text))``, computed the fast way."""
        return self.hash_words_batch([normalized_text])[0]

    def hash_words_batch(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Word hashes of all texts, concatenated, and offsets: text i owns [offsets[i], offsets[i+1])."""
        self._bound()
        encoded = [text.encode("utf-8", "surrogatepass") for text in texts]
        if sum(map(len, encoded)) > _MAX_BLOB and len(texts) > 1:  # keep the byte arrays small
            half = len(texts) // 2
            first, second = self.hash_words_batch(texts[:half]), self.hash_words_batch(texts[half:])
            return np.concatenate([first[0], second[0]]), np.concatenate(
                [first[1], second[1][1:] + first[1][-1]]
            )
        if len(encoded) == 1 and len(encoded[0]) > _MAX_BLOB:
            return self._hash_huge_text(texts[0])
        return self._hash_encoded(encoded)

    def _hash_huge_text(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """One text over the size bound, in pieces cut at whitespace (no word spans whitespace)."""
        pieces, start, step = [], 0, _MAX_BLOB // 4  # characters encode to at most 4 bytes
        while start < len(text):
            cut = start + step
            if cut < len(text):
                space = max(text.rfind(" ", start, cut), text.rfind("\n", start, cut))
                cut = space + 1 if space > start else cut
            pieces.append(self._hash_encoded([text[start:cut].encode("utf-8", "surrogatepass")])[0])
            start = cut
        hashes = np.concatenate(pieces) if pieces else np.zeros(0, dtype=_U64)
        return hashes, np.array([0, hashes.size])

    def _hash_encoded(self, encoded: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
        blob = np.frombuffer(b" ".join(encoded) + b" ", dtype=np.uint8)
        edges = np.flatnonzero(np.diff(_word_bytes(blob).view(np.int8), prepend=np.int8(0)))
        starts, ends = edges[0::2], edges[1::2]  # words alternate start, end; the blob ends in a space
        text_starts = np.cumsum([0] + [len(e) + 1 for e in encoded])
        offsets = np.searchsorted(starts, text_starts)
        if starts.size == 0:
            return np.zeros(0, dtype=_U64), offsets
        self._powers.ensure(blob.size + 1)
        prefix = np.concatenate(
            [np.zeros(1, _U64), np.cumsum(blob.astype(_U64) * self._powers.up[: blob.size])]
        )
        keys = fmix64(
            (prefix[ends] - prefix[starts]) * self._powers.down[starts] + (ends - starts).astype(_U64)
        )
        slots = (keys >> _U64(64 - _SLOT_BITS)).astype(np.intp)
        hashes = self._slot_hashes[slots]
        missing = np.flatnonzero(self._slot_keys[slots] != keys)
        if missing.size:
            hashes[missing] = self._fill(keys[missing], starts[missing], ends[missing], blob)
        return hashes, offsets

    def _fill(self, keys: np.ndarray, starts: np.ndarray, ends: np.ndarray, blob: np.ndarray) -> np.ndarray:
        """xxh3 of words missing from the cache (each distinct one hashed once), stored in their slots."""
        distinct, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        data, seed = blob.tobytes(), self.seed
        values = np.array(
            [
                xxhash.xxh3_64_intdigest(data[a:b], seed)
                for a, b in zip(starts[first].tolist(), ends[first].tolist())
            ],
            dtype=_U64,
        )
        slots = (distinct >> _U64(64 - _SLOT_BITS)).astype(np.intp)
        self._slot_keys[slots] = distinct
        self._slot_hashes[slots] = values
        return values[inverse]
