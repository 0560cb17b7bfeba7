"""Languages: real stop words, pseudo-word content with each language's spelling, token mixtures."""

from __future__ import annotations

import math
import random
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate

from ..core.hashing import WORD
from ..core.stopwords import LANGUAGE_NAMES, package_words

# --- Languages and text -------------------------------------------------------------------------

#: Languages of the synthetic world (ISO 639-1), in the product's order of preference.
_ENTITY = "\x00"  # placeholder in a token draw, replaced by one of the story's names

DEFAULT_LANGUAGES: tuple[str, ...] = ("en", "es", "fr", "de", "it", "pt", "nl", "ru")
#: Share of stories per language, renormalised over the languages asked for (English dominates crawls).
LANGUAGE_WEIGHTS: Mapping[str, float] = {
    "en": 0.60,
    "es": 0.08,
    "fr": 0.07,
    "de": 0.07,
    "it": 0.05,
    "pt": 0.05,
    "nl": 0.04,
    "ru": 0.04,
}
#: ISO code -> list name in the ``stopwords`` package (core's table, for this world's languages).
STOPWORD_LIST_NAMES: Mapping[str, str] = {code: LANGUAGE_NAMES[code] for code in DEFAULT_LANGUAGES}
#: Pseudo-words per language: enough that unrelated stories rarely share rare words.
VOCABULARY_SIZE = 5_000
#: Zipf-Mandelbrot offset q in weight 1/(rank + q) for stop words: the top one is ~10% of them ("the").
STOP_ZIPF_OFFSET = 1.0
#: Same for content words: they are the tail of one Zipf curve, so their head is flatter (~1% top word).
CONTENT_ZIPF_OFFSET = 20.0
#: Tokens per sentence (inclusive): news sentences are mostly 10-25 words.
SENTENCE_TOKENS = (8, 30)
#: Share of sentence tokens that are stop words; real news prose sits at 40-45%.
STOP_WORD_SHARE = 0.43
#: Share of sentence tokens that are entity names (people, places, bodies).
ENTITY_SHARE = 0.05
#: Chance that a sentence has a comma.
COMMA_CHANCE = 0.35
#: Sentences per paragraph (inclusive): news paragraphs are short.
SENTENCES_PER_PARAGRAPH = (1, 4)
#: Tokens per headline (inclusive), and headlines' lower stop-word and higher name shares.
TITLE_TOKENS = (6, 12)
TITLE_STOP_SHARE = 0.30
TITLE_ENTITY_SHARE = 0.15
MAX_TITLE_NAMES = 2
#: Chance that an entity name has two words ("Given Surname") rather than one.
TWO_WORD_NAME_CHANCE = 0.5
#: Syllables per pseudo-word -> relative weight.
SYLLABLE_WEIGHTS: Mapping[int, int] = {1: 2, 2: 5, 3: 4, 4: 1}


# --- Spelling: syllables, stop words, pseudo-words ----------------------------------------------


@dataclass(frozen=True)
class _Spelling:
    """Syllable parts of one language's pseudo-words, with a few letters that give its flavour.

    ``onsets[0]`` is the empty onset; only a word's first syllable may use it.
    """

    onsets: tuple[str, ...]
    vowels: tuple[str, ...]
    codas: tuple[str, ...]


def _parts(text: str) -> tuple[str, ...]:
    return tuple("" if part == "-" else part for part in text.split())


#: Syllable parts per language; repeats make a part commoner, so flavour letters stay occasional.
_SPELLINGS: Mapping[str, _Spelling] = {
    "en": _Spelling(
        _parts("- b c d f g h j k l m n p r s t v w b c d l m n p r s t st tr pl gr br ch sh th"),
        _parts("a e i o u a e i o a e i o u ea oo ai"),
        _parts("- - - n r s t l nd st ck ng m"),
    ),
    "es": _Spelling(
        _parts("- b c d f g l m n p r s t v b c d l m n p r s t ll ch ñ br tr"),
        _parts("a e i o u a e i o a e o ia ue"),
        _parts("- - - - n s r l d"),
    ),
    "fr": _Spelling(
        _parts("- b c d f g j l m n p r s t v b c d l m n p r s t ch br tr"),
        _parts("a e i o u a e i o u é è ou ai eau"),
        _parts("- - - n r s t x nt"),
    ),
    "de": _Spelling(
        _parts("- b d f g h k l m n p r s t w z b d g h k l m n r s t sch st pf kr"),
        _parts("a e i o u a e i o u a e ä ö ü ei au ie"),
        _parts("- - n r s t ch ß rt ng st"),
    ),
    "it": _Spelling(
        _parts("- b c d f g l m n p r s t v z b c d l m n p r s t gl sc ch"),
        _parts("a e i o u a e i o a o ia io à"),
        _parts("- - - - - n l r"),
    ),
    "pt": _Spelling(
        _parts("- b c d f g j l m n p r s t v b c d l m n p r s t lh nh ch"),
        _parts("a e i o u a e i o a o ã õ ão ei ou"),
        _parts("- - - - s r m l"),
    ),
    "nl": _Spelling(
        _parts("- b d g h k l m n p r s t v w z b d k l m n r s t v sch"),
        _parts("a e i o u a e i o e aa ee oo ij ui ou"),
        _parts("- - n r s k t l nd"),
    ),
    "ru": _Spelling(
        _parts("- б в г д ж з к л м н п р с т ф х ц ч ш щ б в д к л м н п р с т"),
        _parts("а е и о у ы я ю а е и о а о"),
        _parts("- - - н р л с т к й в"),
    ),
}
#: The most frequent function words per language, ranked first; the rest is ranked shortest-first.
_FREQUENT_STOP_WORDS: Mapping[str, str] = {
    "en": "the of and to a in is that for it was on with as by at from be he has his are have but not "
    "an they were had which this will their its who been more would after",
    "es": "de la que el en y a los se del las un por con no una su para es al",
    "fr": "de la le et les des en du un une que est pour dans qui par sur au",
    "de": "der die und in den von zu das mit sich des auf für ist im dem nicht ein",
    "it": "di e il la che in a per un del non è le si con una da",
    "pt": "de a o que e do da em um para é com não uma os no se na por",
    "nl": "de en van het een in is dat op te zijn met die voor niet",
    "ru": "и в не на что с он как по но к из у за от о это",
}
_CYRILLIC_TO_LATIN = {
    "а": "a",
    "б": "b",
    "в": "v",
    "г": "g",
    "д": "d",
    "е": "e",
    "ё": "e",
    "ж": "zh",
    "з": "z",
    "и": "i",
    "й": "y",
    "к": "k",
    "л": "l",
    "м": "m",
    "н": "n",
    "о": "o",
    "п": "p",
    "р": "r",
    "с": "s",
    "т": "t",
    "у": "u",
    "ф": "f",
    "х": "kh",
    "ц": "ts",
    "ч": "ch",
    "ш": "sh",
    "щ": "shch",
    "ъ": "",
    "ы": "y",
    "ь": "",
    "э": "e",
    "ю": "yu",
    "я": "ya",
}


def _fold(word: str) -> str:
    """Lower-case and strip accents, so a pseudo-word cannot equal a stop word after normalisation."""
    decomposed = unicodedata.normalize("NFKD", word.lower())
    return "".join(ch for ch in decomposed if not unicodedata.combining(ch))


def _ascii(word: str) -> str:
    """A word as URL-safe ASCII letters (Cyrillic transliterated), for domains and slugs."""
    latin = "".join(_CYRILLIC_TO_LATIN.get(ch, ch) for ch in _fold(word))
    return "".join(ch for ch in latin if ch.isascii() and ch.isalnum())


def _stop_list(code: str) -> list[str]:
    """The product's stop words of a language, as the package writes them (core.stopwords)."""
    return list(package_words(code))


@cache
def _forbidden_words() -> frozenset[str]:
    """Stop words of every language, raw and folded: no pseudo-word may be one of them."""
    forbidden: set[str] = set()
    for code in STOPWORD_LIST_NAMES:
        for word in _stop_list(code):
            forbidden.update((word, _fold(word)))
    return frozenset(forbidden)


_SYLLABLE_COUNTS = tuple(SYLLABLE_WEIGHTS)
_SYLLABLE_CUM = tuple(accumulate(SYLLABLE_WEIGHTS.values()))


def _pseudo_word(rng: random.Random, spelling: _Spelling) -> str:
    """Syllables with an onset each except perhaps the first, so vowels never pile up ("eeoo")."""
    count = rng.choices(_SYLLABLE_COUNTS, cum_weights=_SYLLABLE_CUM)[0]
    parts = [rng.choice(spelling.onsets), rng.choice(spelling.vowels)]
    inner = spelling.onsets[1:]  # the onsets start with the one empty onset
    for _ in range(count - 1):
        parts += (rng.choice(inner), rng.choice(spelling.vowels))
    parts.append(rng.choice(spelling.codas))
    return "".join(parts)


def _fresh_word(rng: random.Random, spelling: _Spelling, forbidden: frozenset[str], min_len: int = 3) -> str:
    """A pseudo-word that is no stop word in any language (the product must never see one)."""
    while True:
        word = _pseudo_word(rng, spelling)
        if len(word) < min_len or word in forbidden:
            continue
        if word.isascii() or _fold(word) not in forbidden:
            return word


def _capitalize(word: str) -> str:
    return word[:1].upper() + word[1:]


def _word_count(text: str) -> int:
    """Words as the product counts them (its tokenizer): a two-word name is two."""
    return len(WORD.findall(text))


# --- Token mixtures -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Mixture:
    """One categorical distribution over stop words, content words and an entity placeholder.

    A whole sentence is one ``choices(..., k=n)`` call, which keeps 20,000 pages fast.
    """

    population: tuple[str, ...]
    cum_weights: tuple[float, ...]

    def draw(self, rng: random.Random, count: int) -> list[str]:
        return rng.choices(self.population, cum_weights=self.cum_weights, k=count)


def _zipf_weights(count: int, offset: float, total: float) -> list[float]:
    """Zipf-Mandelbrot weights 1/(rank + offset) scaled to sum to ``total`` (division only)."""
    raw = [1.0 / (rank + offset) for rank in range(1, count + 1)]
    scale = total / math.fsum(raw)
    return [weight * scale for weight in raw]


def _mixture(
    stops: Sequence[str],
    content: Sequence[str],
    stop_share: float,
    entity_share: float,
) -> _Mixture:
    weights = _zipf_weights(len(stops), STOP_ZIPF_OFFSET, stop_share)
    weights += _zipf_weights(len(content), CONTENT_ZIPF_OFFSET, 1.0 - stop_share - entity_share)
    weights.append(entity_share)
    return _Mixture((*stops, *content, _ENTITY), tuple(accumulate(weights)))


def _ranked(rng: random.Random, words: Sequence[str], head: Sequence[str] = ()) -> list[str]:
    """Frequency rank: the known frequent words first, then shorter words before longer ones."""
    first = [word for word in head if word in words]
    chosen = set(first)
    rest = [word for word in words if word not in chosen]
    keys = [len(word) + 2.0 * rng.random() for word in rest]
    order = sorted(range(len(rest)), key=lambda i: (keys[i], i))
    return first + [rest[i] for i in order]


@dataclass(frozen=True)
class _Language:
    """Everything needed to write text in one language."""

    code: str
    spelling: _Spelling
    stop_words: tuple[str, ...]
    stop_set: frozenset[str]
    vocabulary: tuple[str, ...]
    prose: _Mixture
    headline: _Mixture
    stop_only: _Mixture
    content_only: _Mixture


@cache
def _language(code: str) -> _Language:
    """One language's words, the same for every seed (a language does not change between corpora).

    Built from its own generator, seeded by the language code, and cached: it is the costliest
    part of a small run and identical across runs.
    """
    rng = random.Random(int.from_bytes(code.encode(), "big"))
    forbidden = _forbidden_words()
    spelling = _SPELLINGS[code]
    every_stop = _stop_list(code)
    # Contractions ("don't") are on the English list but rare in news prose: never drawn.
    stops = _ranked(rng, [w for w in every_stop if "'" not in w], _FREQUENT_STOP_WORDS[code].split())
    vocabulary: dict[str, None] = {}
    while len(vocabulary) < VOCABULARY_SIZE:
        vocabulary[_fresh_word(rng, spelling, forbidden)] = None
    content = _ranked(rng, list(vocabulary))
    return _Language(
        code=code,
        spelling=spelling,
        stop_words=tuple(stops),
        stop_set=frozenset(every_stop),
        vocabulary=tuple(content),
        prose=_mixture(stops, content, STOP_WORD_SHARE, ENTITY_SHARE),
        headline=_mixture(stops, content, TITLE_STOP_SHARE, TITLE_ENTITY_SHARE),
        stop_only=_mixture(stops, content, 1.0, 0.0),
        content_only=_mixture(stops, content, 0.0, 0.0),
    )
