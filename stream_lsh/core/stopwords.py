"""Stop-word lists: which words start a shingle (MMDS sec. 3.2.4), and a cheap language guess.

The lists come from the ``stopwords`` package (Snowball-derived lists of 50-420 words per language).
They change signatures, so :class:`StopWordLists` carries a source and a digest of the exact words;
the digest is part of the signature scheme, and an index built with other lists is refused.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version as _package_version
from types import MappingProxyType

import numpy as np

from .hashing import WORD, TokenHasher
from .text import normalize

__all__ = [
    "DEFAULT_LANGUAGES",
    "LANGUAGE_NAMES",
    "StopWordLists",
    "StopWordMatcher",
    "canonical_language",
    "package_words",
]

#: ISO 639-1 code -> name used by the ``stopwords`` package.
LANGUAGE_NAMES: Mapping[str, str] = MappingProxyType(
    {
        "en": "english",
        "es": "spanish",
        "fr": "french",
        "de": "german",
        "it": "italian",
        "pt": "portuguese",
        "nl": "dutch",
        "ru": "russian",
        "sv": "swedish",
        "da": "danish",
        "no": "norwegian",
        "fi": "finnish",
        "pl": "polish",
        "tr": "turkish",
        "ro": "romanian",
    }
)
#: The big news languages; detection picks among these. English first: it wins ties.
DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "es", "fr", "de", "it", "pt", "nl", "ru")
_NAME_TO_CODE = {name: code for code, name in LANGUAGE_NAMES.items()}


def canonical_language(value: str | None) -> str | None:
    """'en', 'EN-us', 'en_GB', 'English' -> 'en'; None or unknown -> None."""
    if not value:
        return None
    lowered = value.strip().lower()
    if lowered in _NAME_TO_CODE:
        return _NAME_TO_CODE[lowered]
    code = re.split(r"[-_]", lowered, maxsplit=1)[0]
    return code if code in LANGUAGE_NAMES else None


def package_words(language: str) -> tuple[str, ...]:
    """The ``stopwords`` package's list for ``language`` as it writes the words (lower-cased), in
    its order, each once, without entries the tokenizer can never produce ('', 'por qué').

    The synthetic corpus writes its text with these; :class:`StopWordLists` holds the same list
    normalised like page text (``daß`` becomes ``dass``)."""
    import stopwords as stopwords_package  # imported lazily: only the lists need it

    written = (raw.strip().lower() for raw in stopwords_package.get_stopwords(LANGUAGE_NAMES[language]))
    return tuple(dict.fromkeys(word for word in written if WORD.fullmatch(word)))


def _load_words(language: str) -> frozenset[str]:
    import stopwords as stopwords_package  # imported lazily: only this module needs it

    words = set()
    for raw in stopwords_package.get_stopwords(LANGUAGE_NAMES[language]):
        word = normalize(raw)
        if WORD.fullmatch(word):  # the tokenizer could never produce anything else
            words.add(word)
    return frozenset(words)


@dataclass(frozen=True)
class StopWordLists:
    """Normalised stop words per language, with provenance.

    Args:
        words: language code -> stop words, already normalised like page text.
        source: where the words came from, e.g. ``stopwords==1.0.2``.
    """

    words: Mapping[str, frozenset[str]]
    source: str
    digest: str = field(init=False)

    def __post_init__(self) -> None:
        if not self.words:
            raise ValueError("at least one stop-word language is needed")
        empty = [lang for lang, words in self.words.items() if not words]
        if empty:
            raise ValueError(f"empty stop-word list for {', '.join(empty)}")
        hasher = hashlib.sha256()
        for language in self.languages:
            hasher.update(f"{language}:{','.join(sorted(self.words[language]))};".encode())
        object.__setattr__(self, "digest", hasher.hexdigest()[:16])

    @property
    def languages(self) -> tuple[str, ...]:
        return tuple(self.words)

    @classmethod
    def load(cls, languages: Sequence[str] = DEFAULT_LANGUAGES) -> StopWordLists:
        """The packaged lists for ``languages`` (ISO 639-1 codes), in that order of preference."""
        unknown = [lang for lang in languages if lang not in LANGUAGE_NAMES]
        if unknown:
            raise ValueError(
                f"no stop-word list for {', '.join(unknown)}; available: {', '.join(LANGUAGE_NAMES)}"
            )
        if len(set(languages)) != len(languages):
            raise ValueError(f"languages listed twice: {', '.join(languages)}")
        words = {lang: _load_words(lang) for lang in languages}
        return cls(words=words, source=f"stopwords=={_package_version('stopwords')}")


class StopWordMatcher:
    """Finds stop words among hashed tokens, and guesses a page's language from them.

    Works on token hashes rather than strings so that a whole batch takes a few numpy gathers: the
    union of all stop words sits in a direct-mapped table of hashes, each with a bitmask of its
    languages, sized so that no two stop words share a slot.
    """

    def __init__(self, lists: StopWordLists, hasher: TokenHasher) -> None:
        self.languages = lists.languages
        if len(self.languages) > 63:
            raise ValueError("at most 63 stop-word languages")
        masks: dict[int, int] = {}
        for bit, language in enumerate(self.languages):
            for word in lists.words[language]:
                key = int(hasher.hash_tokens([word])[0])  # equals the word's hash in page text
                masks[key] = masks.get(key, 0) | (1 << bit)
        self._bits = {lang: np.uint64(1 << bit) for bit, lang in enumerate(self.languages)}
        self._shift, self._keys, self._masks = self._table(masks)

    @staticmethod
    def _table(masks: dict[int, int]) -> tuple[np.uint64, np.ndarray, np.ndarray]:
        """A direct-mapped table (top bits of the hash -> slot) with no two stop words in one slot."""
        hashes = np.array(sorted(masks), dtype=np.uint64)
        for bits in range(12, 25):
            shift = np.uint64(64 - bits)
            slots = hashes >> shift
            if np.unique(slots).size == hashes.size:
                keys = np.zeros(1 << bits, dtype=np.uint64)
                values = np.zeros(1 << bits, dtype=np.uint64)
                keys[slots.astype(np.intp)] = hashes
                values[slots.astype(np.intp)] = [masks[int(h)] for h in hashes]
                return shift, keys, values
        raise ValueError("stop words collide in every table size up to 2**24; change the seed")

    def language_masks(self, token_hashes: np.ndarray) -> np.ndarray:
        """For each token, the bitmask of languages in which it is a stop word (0: none)."""
        slots = (token_hashes >> self._shift).astype(np.intp)
        return np.where(self._keys[slots] == token_hashes, self._masks[slots], np.uint64(0))

    def counts_per_page(self, masks: np.ndarray, page_of: np.ndarray, pages: int) -> np.ndarray:
        """(pages, languages) array: how many of each page's tokens are stop words of each language."""
        counts = np.zeros((pages, len(self.languages)), dtype=np.int64)
        for column, language in enumerate(self.languages):
            hits = (masks & self._bits[language]) != 0
            counts[:, column] = np.bincount(page_of[hits], minlength=pages)
        return counts

    def detect(self, masks: np.ndarray) -> str:
        """The language whose stop words cover the most tokens; ties go to the earlier language."""
        counts = self.counts_per_page(masks, np.zeros(masks.size, dtype=np.int64), 1)[0]
        return self.languages[int(np.argmax(counts))]
