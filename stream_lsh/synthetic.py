"""Seeded synthetic news pages with known clusters, for measuring the dedup filter.

Real crawls with trustworthy duplicate labels are rare and cannot ship with the project, so this
module builds a small world instead: outlets in several languages, each with its own HTML chrome
and its own site-wide prose; wire stories copied (and lightly edited) by several outlets; local
stories; "events" covered by several independent stories; and a few pages with no article at all.
Every page's cluster label is known, so :mod:`stream_lsh.evaluation` can score a run.

The hard cases are deliberate, because they are what the product has to get right:

* site prose (cookie notice, newsletter pitch...) is as stop-word dense as articles and repeats on
  every page of an outlet, some of it across a network of outlets;
* "Most read" lists and "Related:" lines carry headlines of *other* stories;
* event siblings share names and title words but are different stories;
* wire copies are trimmed, have a sentence dropped, words changed, a local lead added.

With ``messy_dates`` the corpus is a feed as a crawler receives it rather than as outlets
publish it: pages come in arrival order (a crawl delay of minutes, re-crawls days late), and the
date field mixes what real feeds send (ISO 8601 with and without offsets, RSS dates, epoch numbers,
bare days, dates hours ahead, missing, junk, 2099 and 1970). The pages, ids and labels are those of
the clean corpus of the same seed; only the date fields and the line order differ.

Text is made of real function words (the ``stopwords`` package's lists, the ones the product uses)
and pseudo-word content, so stop-word statistics look like prose while no two unrelated texts share
content by accident. Everything is drawn from ``random.Random(seed)``: the same seed and size give
byte-identical output on any machine (no set iteration, no ``hash()`` of strings, and Zipf weights
built with division only, never ``pow``, whose last bit may differ between C libraries).
"""

from __future__ import annotations

import html as html_lib
import math
import random
import re
import unicodedata
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from functools import cache
from itertools import accumulate
from pathlib import Path
from typing import Any

import orjson
import stopwords as stopwords_package

__all__ = [
    "DEFAULT_LANGUAGES",
    "PageTruth",
    "SyntheticCorpus",
    "consumer_order",
    "generate_corpus",
    "generate_corpus_with_truth",
    "load_labels",
    "write_corpus",
]

# --- Languages and text -------------------------------------------------------------------------

#: Languages of the synthetic world (ISO 639-1), in the product's order of preference.
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
#: ISO code -> list name in the ``stopwords`` package.
STOPWORD_LIST_NAMES: Mapping[str, str] = {
    "en": "english",
    "es": "spanish",
    "fr": "french",
    "de": "german",
    "it": "italian",
    "pt": "portuguese",
    "nl": "dutch",
    "ru": "russian",
}
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

# --- Outlets ------------------------------------------------------------------------------------

#: Outlets in a small corpus; larger corpora get one more outlet per PAGES_PER_OUTLET pages.
MIN_OUTLETS = 30
PAGES_PER_OUTLET = 400
#: Every language gets at least this many outlets, so a wire story can have two copies.
MIN_OUTLETS_PER_LANGUAGE = 2
#: Site-wide prose per outlet: paragraphs, and tokens per paragraph (inclusive).
SITE_PROSE_PARAGRAPHS = (2, 4)
SITE_PROSE_TOKENS = (30, 70)
#: Networks per MIN_OUTLETS outlets, and outlets per network: about a third of outlets share prose.
NETWORKS = (3, 4)
NETWORK_SIZE = (2, 4)
#: Section links in the nav bar (inclusive).
NAV_LINKS = (6, 10)
#: Headlines in the "Most read"/"Latest" box, and "Related:" lines in text pages (inclusive).
SIDEBAR_HEADLINES = (5, 8)
RELATED_LINES = (1, 3)
#: Ads per HTML page (inclusive).
ADS_PER_PAGE = (1, 3)
#: Per-outlet chance range that an article paragraph carries an inline link.
INLINE_LINK_CHANCE = (0.0, 0.3)
#: Old headlines per outlet that fill its sidebar before it has published enough in the window.
ARCHIVE_HEADLINES = 10
#: How many of an outlet's latest pages its sidebar draws from.
RECENT_HEADLINES = 20
#: Bylines per outlet.
STAFF_PER_OUTLET = 6
#: Advertised brands in the whole world.
BRANDS = 40

# --- Stories and copies -------------------------------------------------------------------------

#: Stories start uniformly over this window from EPOCH.
EPOCH = datetime(2026, 3, 1, tzinfo=timezone.utc)
STORY_WINDOW_HOURS = 48
#: Share of stories that are wire stories, and outlets (same language) that copy one (inclusive).
WIRE_SHARE = 0.55
WIRE_COPIES = (2, 6)
#: Article length in tokens: short or long with equal chance, each spread +-25%.
SHORT_TOKENS = 150
LONG_TOKENS = 800
LONG_SHARE = 0.5
LENGTH_SPREAD = 0.25
#: Share of stories that belong to an event; stories per event, names and title words it shares.
EVENT_STORY_SHARE = 0.25
EVENT_STORIES = (2, 3)
EVENT_ENTITIES = (3, 5)
EVENT_TITLE_WORDS = (2, 3)
#: An event's stories start within this many hours of the event.
EVENT_SPREAD_HOURS = 6
#: Own entity names of a story outside events (inclusive).
STORY_ENTITIES = (2, 4)
#: A copy keeps this fraction of the wire sentences (drawn per copy, uniform).
KEEP_FRACTION = (0.70, 1.0)
#: Chance that a copy drops one middle sentence, if it has more than DROP_MIN_SENTENCES - 1.
DROP_MIDDLE_CHANCE = 0.6
DROP_MIN_SENTENCES = 7
#: Chance that a copy changes words at all, and how many (inclusive) when it does.
WORD_EDIT_CHANCE = 0.7
WORD_EDITS = (1, 4)
#: Chance that a copy opens with one extra local sentence.
LOCAL_LEAD_CHANCE = 0.2
#: Copies appear up to this many hours after the first one.
COPY_DELAY_HOURS = 12

# --- Page formats -------------------------------------------------------------------------------

#: Shares of page formats: full HTML, news-please field names (maintext); the rest is plain text.
HTML_SHARE = 0.70
NEWS_PLEASE_SHARE = 0.03
#: Share of pages without a language field, so detection is exercised.
NO_LANG_SHARE = 0.10
#: Share of pages that are galleries or videos: chrome and captions, no article.
NO_CONTENT_SHARE = 0.01
#: Captions per gallery page (inclusive) and words per caption (inclusive).
GALLERY_CAPTIONS = (5, 12)
CAPTION_WORDS = (1, 3)

# --- Messy dates (messy_dates=True) -------------------------------------------------------------

#: A page is received this many seconds after publication (uniform, inclusive): the crawl delay.
CRAWL_DELAY_SECONDS = (0, 30 * 60)
#: Share of pages that are re-crawls, received 1 to 3 days after publication (uniform, inclusive).
LATE_SHARE = 0.04
LATE_DELAY_SECONDS = (24 * 3600, 3 * 24 * 3600)
#: How a page's date field is written, by share of pages (they sum to 1). Feeds mix formats, and
#: some of their dates are wrong; each form is read as the comment says (checked by the tests).
DATE_FORM_SHARES: Mapping[str, float] = {
    "iso-utc": 0.40,  # 2026-03-01T10:00:00Z
    "iso-offset": 0.10,  # the same instant in a local zone: 2026-03-01T15:30:00+05:30
    "iso-no-offset": 0.05,  # UTC wall time without a zone, read as UTC: 2026-03-01T10:00:00
    "rfc-2822": 0.10,  # RSS pubDate, the same instant: Sun, 01 Mar 2026 10:00:00 GMT (or +0530)
    "epoch-seconds": 0.05,  # the same instant as a JSON integer
    "epoch-milliseconds": 0.04,  # the same instant as a JSON integer
    "date-only": 0.06,  # 2026-03-01: midnight UTC, so a whole day's pages share one time
    "hours-ahead": 0.04,  # ISO UTC, 2-6 h after publication: an embargo or a time-zone bug
    "missing": 0.07,  # no date field at all: the page is undated
    "unreadable": 0.04,  # junk in the field ("yesterday", "n/a"): unreadable, the date is ignored
    "wrong-year": 0.05,  # 2099 (ignored as future), or 1970 / 0001 placeholders (before 1990)
}
#: Local zones of "iso-offset" dates and of RFC 2822 dates not in GMT, in minutes east of UTC
#: (+05:30, -04:00, +01:00).
LOCAL_OFFSET_MINUTES = (330, -240, 60)
#: Share of RFC 2822 dates written in GMT, as most RSS feeds do; the rest carry a numeric offset.
RFC2822_GMT_SHARE = 0.5
#: "hours-ahead" dates are this many seconds after publication (uniform, inclusive).
AHEAD_SECONDS = (2 * 3600, 6 * 3600)
#: What "unreadable" writes: strings that are no date. Never blank: a blank date reads as missing.
UNREADABLE_DATES = ("yesterday", "n/a", "32/13/2026", "0000-00-00 00:00:00", "Invalid Date", "TBD")
#: What "wrong-year" writes, with equal chance: the publication time in this year (a CMS bug), or
#: one of the placeholder dates.
WRONG_YEAR = 2099
PLACEHOLDER_DATES = ("1970-01-01T00:00:00Z", "0001-01-01T00:00:00Z")

_ENTITY = "\x00"  # placeholder in a token draw, replaced by one of the story's names
_WORD = re.compile(r"\w+(?:'\w+)*")
_SECOND = timedelta(seconds=1)


# --- Public types -------------------------------------------------------------------------------


@dataclass(frozen=True)
class SyntheticCorpus:
    """Pages shaped like the product's input JSON lines, and page id -> cluster label."""

    pages: list[dict[str, Any]]
    labels: dict[str, str]


@dataclass(frozen=True)
class PageTruth:
    """What the generator knows about one page, for tests and error analysis.

    ``kind`` is "wire", "local" or "no-content"; ``article`` the article paragraphs as placed in
    the page (empty for no-content pages); ``site_prose`` the outlet's site-wide paragraphs;
    ``event`` the event id shared by sibling stories, or None; ``published`` the true publication
    time (the clean corpus's date, and the page's ``<time>``). With ``messy_dates``, ``received``
    is when the feed delivered the page (the file is in that order) and ``date_form`` how its date
    field is written (a key of :data:`DATE_FORM_SHARES`); both are None in the clean corpus.
    """

    label: str
    kind: str
    outlet: str
    lang: str
    event: str | None
    entities: tuple[str, ...]
    article: tuple[str, ...]
    site_prose: tuple[str, ...]
    published: datetime
    received: datetime | None = None
    date_form: str | None = None


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
    """The package's list minus entries the tokenizer can never produce ('', 'por qué')."""
    words = stopwords_package.get_stopwords(STOPWORD_LIST_NAMES[code])
    clean = [word.strip().lower() for word in words]
    return list(dict.fromkeys(word for word in clean if _WORD.fullmatch(word)))


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


# --- Localised chrome ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ui:
    """Fixed interface strings of one language: headings, sections, footer links, ad templates."""

    most_read: str
    latest: str
    by: str
    related: str
    photos: str
    video: str
    advert: str
    rights: str
    footer_links: tuple[str, ...]
    sections: tuple[tuple[str, str], ...]
    ads: tuple[str, ...]
    outlet_names: tuple[str, ...]
    tlds: tuple[str, ...]


def _sections(text: str) -> tuple[tuple[str, str], ...]:
    pairs = (item.split("=") for item in text.split(","))
    return tuple((slug.strip(), label.strip()) for slug, label in pairs)


_UI: Mapping[str, _Ui] = {
    "en": _Ui(
        "Most read",
        "Latest",
        "By",
        "Related",
        "Photos",
        "Video",
        "Advertisement",
        "All rights reserved",
        ("About us", "Contact", "Privacy policy", "Terms of use", "Advertise", "Careers"),
        _sections(
            "world=World,politics=Politics,business=Business,sport=Sport,culture=Culture,"
            "science=Science,health=Health,technology=Technology,opinion=Opinion,local=Local"
        ),
        ("Buy {} today", "50% off {}", "{}: free delivery this week", "Try {} now", "{} - save 30%"),
        ("The {} Post", "The {} Times", "{} Herald", "{} Daily", "The {} Chronicle", "{} Gazette"),
        (".com", ".com", ".co.uk", ".news"),
    ),
    "es": _Ui(
        "Lo más leído",
        "Últimas noticias",
        "Por",
        "Relacionado",
        "Fotos",
        "Vídeo",
        "Publicidad",
        "Todos los derechos reservados",
        ("Quiénes somos", "Contacto", "Privacidad", "Aviso legal", "Publicidad", "Empleo"),
        _sections(
            "internacional=Internacional,politica=Política,economia=Economía,deportes=Deportes,"
            "cultura=Cultura,ciencia=Ciencia,salud=Salud,tecnologia=Tecnología,"
            "opinion=Opinión,local=Local"
        ),
        ("Compra {} hoy", "50% de descuento en {}", "{}: envío gratis", "Prueba {} ya"),
        ("Diario {}", "El {}", "Noticias {}", "Crónica {}"),
        (".es", ".es", ".com.mx", ".com"),
    ),
    "fr": _Ui(
        "Les plus lus",
        "À la une",
        "Par",
        "À lire aussi",
        "Photos",
        "Vidéo",
        "Publicité",
        "Tous droits réservés",
        ("Qui sommes-nous", "Contact", "Confidentialité", "Mentions légales", "Publicité", "Recrutement"),
        _sections(
            "monde=Monde,politique=Politique,economie=Économie,sport=Sport,culture=Culture,"
            "sciences=Sciences,sante=Santé,tech=Tech,opinions=Opinions,region=Région"
        ),
        ("Achetez {} aujourd'hui", "-50% sur {}", "{} : livraison offerte", "Essayez {}"),
        ("Le {}", "{} Matin", "La Gazette {}", "L'Écho {}"),
        (".fr", ".fr", ".be", ".ch"),
    ),
    "de": _Ui(
        "Meistgelesen",
        "Neueste Artikel",
        "Von",
        "Mehr zum Thema",
        "Fotos",
        "Video",
        "Anzeige",
        "Alle Rechte vorbehalten",
        ("Über uns", "Kontakt", "Datenschutz", "Impressum", "Werbung", "Karriere"),
        _sections(
            "welt=Welt,politik=Politik,wirtschaft=Wirtschaft,sport=Sport,kultur=Kultur,"
            "wissen=Wissen,gesundheit=Gesundheit,digital=Digital,meinung=Meinung,region=Region"
        ),
        ("Jetzt {} kaufen", "50% Rabatt auf {}", "{}: Versand gratis", "{} testen"),
        ("{} Zeitung", "{} Rundschau", "{} Kurier", "{} Allgemeine"),
        (".de", ".de", ".at", ".ch"),
    ),
    "it": _Ui(
        "I più letti",
        "Ultime notizie",
        "Di",
        "Leggi anche",
        "Foto",
        "Video",
        "Pubblicità",
        "Tutti i diritti riservati",
        ("Chi siamo", "Contatti", "Privacy", "Note legali", "Pubblicità", "Lavora con noi"),
        _sections(
            "esteri=Esteri,politica=Politica,economia=Economia,sport=Sport,cultura=Cultura,"
            "scienza=Scienza,salute=Salute,tecnologia=Tecnologia,opinioni=Opinioni,"
            "cronaca=Cronaca"
        ),
        ("Compra {} oggi", "Sconto 50% su {}", "{}: spedizione gratuita", "Prova {} subito"),
        ("Il {}", "Corriere {}", "La Gazzetta {}", "{} Oggi"),
        (".it",),
    ),
    "pt": _Ui(
        "Mais lidas",
        "Últimas",
        "Por",
        "Leia também",
        "Fotos",
        "Vídeo",
        "Publicidade",
        "Todos os direitos reservados",
        ("Quem somos", "Contato", "Privacidade", "Termos de uso", "Anuncie", "Carreiras"),
        _sections(
            "mundo=Mundo,politica=Política,economia=Economia,desporto=Desporto,cultura=Cultura,"
            "ciencia=Ciência,saude=Saúde,tecnologia=Tecnologia,opiniao=Opinião,local=Local"
        ),
        ("Compre {} hoje", "50% de desconto em {}", "{}: frete grátis", "Experimente {}"),
        ("Jornal {}", "O {}", "Diário {}", "Folha {}"),
        (".pt", ".com.br", ".com.br"),
    ),
    "nl": _Ui(
        "Meest gelezen",
        "Laatste nieuws",
        "Door",
        "Lees ook",
        "Foto's",
        "Video",
        "Advertentie",
        "Alle rechten voorbehouden",
        ("Over ons", "Contact", "Privacy", "Voorwaarden", "Adverteren", "Vacatures"),
        _sections(
            "buitenland=Buitenland,politiek=Politiek,economie=Economie,sport=Sport,"
            "cultuur=Cultuur,wetenschap=Wetenschap,gezondheid=Gezondheid,tech=Tech,"
            "opinie=Opinie,regio=Regio"
        ),
        ("Koop {} vandaag", "50% korting op {}", "{}: gratis bezorging", "Probeer {} nu"),
        ("De {}", "{} Dagblad", "Het {} Nieuws", "{} Courant"),
        (".nl", ".nl", ".be"),
    ),
    "ru": _Ui(
        "Самое читаемое",
        "Последние новости",
        "Автор:",
        "Читайте также",
        "Фото",
        "Видео",
        "Реклама",
        "Все права защищены",
        ("О нас", "Контакты", "Конфиденциальность", "Правила", "Реклама", "Вакансии"),
        _sections(
            "mir=Мир,politika=Политика,ekonomika=Экономика,sport=Спорт,kultura=Культура,"
            "nauka=Наука,zdorovie=Здоровье,tekhnologii=Технологии,mnenie=Мнения,region=Регион"
        ),
        ("Купите {} сегодня", "Скидка 50% на {}", "{}: бесплатная доставка", "Попробуйте {}"),
        ("{} Вести", "Новости {}", "{} Правда", "Вечерний {}"),
        (".ru",),
    ),
}
_DOMAIN_SUFFIXES = ("", "", "news", "24", "online")  # generic: they must not contradict the outlet's name
_AD_NETWORKS = ("adzerra.net", "clickvana.com", "promoloop.io", "bannerkit.net")


def _ad_network(outlet: _Outlet) -> str:
    """The ad network an outlet's pages load their tag from (fixed per outlet)."""
    return _AD_NETWORKS[len(outlet.domain) % len(_AD_NETWORKS)]


# --- Outlets ------------------------------------------------------------------------------------


@dataclass
class _Outlet:
    """One news site: its language, chrome, site-wide prose and recent headlines."""

    domain: str
    lang: str
    name: str
    sections: tuple[tuple[str, str], ...]
    prose: tuple[str, ...]
    staff: tuple[str, ...]
    nav_tag: str  # "nav" or "menu"
    sidebar_tag: str  # "aside" or "sidebar"
    sidebar_latest: bool  # "Latest" in publication order, else "Most read" in any order
    article_tag: str  # "article" or "story-body"
    prose_place: str  # "newsletter" (in the article container), "site-footer" or "footer"
    ad_class: str
    link_chance: float
    text_has_title: bool
    body_script: str
    next_number: int
    archive: list[tuple[str, str]] = field(default_factory=list)  # (title, url)
    recent: deque[Any] = field(default_factory=lambda: deque(maxlen=RECENT_HEADLINES))  # (title, url)


@dataclass(frozen=True)
class _Draft:
    """A page before rendering: who publishes what, when."""

    when: int  # seconds after EPOCH
    seq: int  # creation order, breaks ties in time
    outlet: _Outlet
    label: str
    kind: str
    event: str | None
    title: tuple[str, ...]  # tokens, entity names capitalised
    paragraphs: tuple[str, ...]
    entities: tuple[str, ...]


@dataclass(frozen=True)
class _Story:
    label: str
    lang: str
    wire: bool
    start: int
    title: tuple[str, ...]
    sentences: tuple[tuple[int, str], ...]  # (paragraph number, sentence)
    entities: tuple[str, ...]
    event: str | None


@dataclass(frozen=True)
class _Event:
    label: str
    lang: str
    start: int
    entities: tuple[str, ...]
    title_words: tuple[str, ...]


def _language_weights(languages: Sequence[str]) -> list[float]:
    return [LANGUAGE_WEIGHTS[code] for code in languages]


def _outlet_counts(total: int, languages: Sequence[str]) -> dict[str, int]:
    """Outlets per language in proportion to story share, at least MIN_OUTLETS_PER_LANGUAGE each."""
    weights = _language_weights(languages)
    scale = sum(weights)
    counts = {
        code: max(MIN_OUTLETS_PER_LANGUAGE, round(total * weight / scale))
        for code, weight in zip(languages, weights, strict=True)
    }
    biggest = max(languages, key=lambda code: (counts[code], -languages.index(code)))
    counts[biggest] = max(MIN_OUTLETS_PER_LANGUAGE, counts[biggest] + total - sum(counts.values()))
    return counts


# --- The generator ------------------------------------------------------------------------------


class _World:
    """All state of one generation run; every random draw goes through ``self.rng``."""

    def __init__(self, pages: int, seed: int, languages: Sequence[str]) -> None:
        self.rng = random.Random(seed)
        forbidden = _forbidden_words()
        self.forbidden = forbidden
        self.codes = list(languages)
        self.lang_cum = list(accumulate(_language_weights(languages)))
        self.langs = {code: _language(code) for code in languages}
        brand = _SPELLINGS["en"]
        self.brands = [_capitalize(_fresh_word(self.rng, brand, forbidden, 4)) for _ in range(BRANDS)]
        self.domains: dict[str, None] = {}
        self.outlets: list[_Outlet] = []
        self.by_lang: dict[str, list[_Outlet]] = {code: [] for code in languages}
        for code, count in _outlet_counts(max(MIN_OUTLETS, pages // PAGES_PER_OUTLET), self.codes).items():
            for _ in range(count):
                outlet = self._new_outlet(code)
                self.outlets.append(outlet)
                self.by_lang[code].append(outlet)
        self._form_networks()
        for outlet in self.outlets:
            self._fill_archive(outlet)

    # Text ----------------------------------------------------------------------------------------

    def name(self, lang: str) -> str:
        """An entity name: one or two capitalised pseudo-words."""
        words = 2 if self.rng.random() < TWO_WORD_NAME_CHANCE else 1
        spelling = self.langs[lang].spelling
        return " ".join(_capitalize(_fresh_word(self.rng, spelling, self.forbidden, 4)) for _ in range(words))

    def sentence(
        self,
        lang: str,
        entities: Sequence[str],
        tokens: int | None = None,
        lede: bool = False,
    ) -> str:
        """One sentence: capitalised, a comma now and then, a full stop; names fill entity slots."""
        rng = self.rng
        count = tokens if tokens is not None else rng.randint(*SENTENCE_TOKENS)
        words = self.langs[lang].prose.draw(rng, count)
        for i, word in enumerate(words):
            if word == _ENTITY:
                words[i] = entities[_early_index(rng, len(entities))]
        if lede:
            words[rng.randrange(1, count)] = entities[0]
        if rng.random() < COMMA_CHANCE and count > 5:
            spot = rng.randrange(2, count - 2)
            words[spot] += ","
        return _capitalize(" ".join(words)) + "."

    def headline(self, lang: str, entities: Sequence[str]) -> list[str]:
        """Headline tokens: fewer stop words than prose, at most MAX_TITLE_NAMES names."""
        rng, language = self.rng, self.langs[lang]
        words = language.headline.draw(rng, rng.randint(*TITLE_TOKENS))
        names = 0
        for i, word in enumerate(words):
            if word == _ENTITY:
                names += 1
                words[i] = (
                    entities[rng.randrange(len(entities))]
                    if names <= MAX_TITLE_NAMES
                    else language.content_only.draw(rng, 1)[0]
                )
        return words

    def prose_paragraph(self, lang: str, entities: Sequence[str]) -> str:
        """30-70 tokens of sentences that add up exactly: site prose, fixed per outlet."""
        left = self.rng.randint(*SITE_PROSE_TOKENS)
        sentences = []
        while left >= 2 * SENTENCE_TOKENS[0]:
            size = self.rng.randint(SENTENCE_TOKENS[0], min(SENTENCE_TOKENS[1], left - SENTENCE_TOKENS[0]))
            sentences.append(self.sentence(lang, entities, size))
            left -= size
        sentences.append(self.sentence(lang, entities, left))
        return " ".join(sentences)

    # Outlets -------------------------------------------------------------------------------------

    def _domain(self, stem: str, lang: str) -> str:
        ui = _UI[lang]
        while True:
            domain = _ascii(stem) + self.rng.choice(_DOMAIN_SUFFIXES) + self.rng.choice(ui.tlds)
            if domain not in self.domains:
                self.domains[domain] = None
                return domain
            stem += self.rng.choice("aeiou")

    def _new_outlet(self, lang: str) -> _Outlet:
        rng, ui = self.rng, _UI[lang]
        stem = _capitalize(_fresh_word(rng, self.langs[lang].spelling, self.forbidden, 4))
        name = rng.choice(ui.outlet_names).format(stem)
        sections = tuple(rng.sample(ui.sections, rng.randint(*NAV_LINKS)))
        staff = tuple(self.name(lang) for _ in range(STAFF_PER_OUTLET))
        names = [name, *staff[:2]]
        prose = tuple(self.prose_paragraph(lang, names) for _ in range(rng.randint(*SITE_PROSE_PARAGRAPHS)))
        return _Outlet(
            domain=self._domain(stem, lang),
            lang=lang,
            name=name,
            sections=sections,
            prose=prose,
            staff=staff,
            nav_tag=rng.choice(("nav", "menu")),
            sidebar_tag=rng.choice(("aside", "sidebar")),
            sidebar_latest=rng.random() < 0.5,
            article_tag=rng.choice(("article", "story-body")),
            prose_place=rng.choice(("newsletter", "site-footer", "footer")),
            ad_class=rng.choice(("ad-slot", "promo", "adsbygoogle")),
            link_chance=rng.uniform(*INLINE_LINK_CHANCE),
            text_has_title=rng.random() < 0.5,
            body_script=_body_script(rng),
            next_number=rng.randrange(100_000, 900_000),
        )

    def _form_networks(self) -> None:
        """Group outlets of one language into networks that share one prose paragraph verbatim."""
        rng = self.rng
        networks = round(rng.randint(*NETWORKS) * len(self.outlets) / MIN_OUTLETS)
        free = {code: rng.sample(outlets, len(outlets)) for code, outlets in self.by_lang.items()}
        for _ in range(networks):
            open_codes = [code for code in self.codes if len(free[code]) >= NETWORK_SIZE[0]]
            if not open_codes:
                return
            code = rng.choices(open_codes, weights=[len(free[c]) for c in open_codes])[0]
            size = min(rng.randint(*NETWORK_SIZE), len(free[code]))
            members, free[code] = free[code][:size], free[code][size:]
            shared = self.prose_paragraph(code, [members[0].name])
            for outlet in members:
                prose = list(outlet.prose)
                prose[rng.randrange(len(prose))] = shared
                outlet.prose = tuple(prose)

    def _fill_archive(self, outlet: _Outlet) -> None:
        for _ in range(ARCHIVE_HEADLINES):
            title = _render_title(self.headline(outlet.lang, [self.name(outlet.lang)]))
            outlet.archive.append((title, self.url(outlet, title)))

    def url(self, outlet: _Outlet, title: str) -> str:
        section = self.rng.choice(outlet.sections)[0]
        slug = "-".join(filter(None, (_ascii(word) for word in title.split()[:7])))
        outlet.next_number += self.rng.randint(1, 60)
        return f"https://{outlet.domain}/{section}/{slug}-{outlet.next_number}"

    # Stories -------------------------------------------------------------------------------------

    def pick_language(self) -> str:
        return self.rng.choices(self.codes, cum_weights=self.lang_cum)[0]

    def story(self, label: str, lang: str, start: int, event: _Event | None) -> _Story:
        rng = self.rng
        if event is None:
            entities = tuple(self.name(lang) for _ in range(rng.randint(*STORY_ENTITIES)))
        else:
            entities = event.entities + tuple(self.name(lang) for _ in range(rng.randint(0, 1)))
        title = self.headline(lang, entities)
        if event is not None:
            shared = (*event.title_words, entities[0])
            for where, word in zip(rng.sample(range(len(title)), len(shared)), shared, strict=True):
                title[where] = word
        return _Story(
            label=label,
            lang=lang,
            wire=rng.random() < WIRE_SHARE,
            start=start,
            title=tuple(title),
            sentences=self._article(lang, entities),
            entities=entities,
            event=event.label if event else None,
        )

    def _article(self, lang: str, entities: Sequence[str]) -> tuple[tuple[int, str], ...]:
        """Sentences tagged with their paragraph number, about SHORT_TOKENS or LONG_TOKENS long."""
        rng = self.rng
        base = LONG_TOKENS if rng.random() < LONG_SHARE else SHORT_TOKENS
        target = round(base * rng.uniform(1 - LENGTH_SPREAD, 1 + LENGTH_SPREAD))
        sentences: list[tuple[int, str]] = []
        paragraph, in_paragraph, size, tokens = 0, 0, rng.randint(*SENTENCES_PER_PARAGRAPH), 0
        while tokens < target:
            count = rng.randint(*SENTENCE_TOKENS)
            sentences.append((paragraph, self.sentence(lang, entities, count, lede=not sentences)))
            tokens += count
            in_paragraph += 1
            if in_paragraph == size:
                paragraph, in_paragraph, size = paragraph + 1, 0, rng.randint(*SENTENCES_PER_PARAGRAPH)
        return tuple(sentences)

    def event(self, label: str) -> _Event:
        lang = self.pick_language()
        content = self.langs[lang].content_only
        return _Event(
            label=label,
            lang=lang,
            start=self.rng.randrange(STORY_WINDOW_HOURS * 3600),
            entities=tuple(self.name(lang) for _ in range(self.rng.randint(*EVENT_ENTITIES))),
            title_words=tuple(content.draw(self.rng, self.rng.randint(*EVENT_TITLE_WORDS))),
        )

    # Copies --------------------------------------------------------------------------------------

    def copy_text(self, story: _Story) -> tuple[str, ...]:
        """One outlet's edit of a wire story: trimmed, a sentence dropped, words changed, a lead added."""
        rng = self.rng
        sentences = list(story.sentences)
        keep = max(1, math.ceil(len(sentences) * rng.uniform(*KEEP_FRACTION)))
        del sentences[keep:]
        if len(sentences) >= DROP_MIN_SENTENCES and rng.random() < DROP_MIDDLE_CHANCE:
            del sentences[rng.randrange(len(sentences) // 4, 3 * len(sentences) // 4)]
        if rng.random() < WORD_EDIT_CHANCE:
            for _ in range(rng.randint(*WORD_EDITS)):
                where = rng.randrange(len(sentences))
                number, text = sentences[where]
                sentences[where] = (number, self._replace_word(story.lang, text))
        if rng.random() < LOCAL_LEAD_CHANCE:
            sentences.insert(0, (-1, self.sentence(story.lang, story.entities)))
        return _paragraphs(sentences)

    def _replace_word(self, lang: str, sentence: str) -> str:
        """Swap one word for another of the same kind (stop for stop), keeping case and punctuation."""
        rng, language = self.rng, self.langs[lang]
        words = sentence.split(" ")
        where = rng.randrange(len(words))
        while where > 0 and words[where][:1].isupper():  # a name: leave it, edit a word before it
            where -= 1
        core = words[where].rstrip(",.")
        mixture = language.stop_only if core.lower() in language.stop_set else language.content_only
        new = mixture.draw(rng, 1)[0]
        words[where] = (_capitalize(new) if where == 0 else new) + words[where][len(core) :]
        return " ".join(words)

    def retitle(self, lang: str, title: Sequence[str]) -> tuple[str, ...]:
        """An outlet's own headline for a wire story: reshuffled, a word or two changed."""
        rng, words = self.rng, list(title)
        if rng.random() < 0.5:
            pivot = rng.randrange(2, len(words) - 1)
            words = words[pivot:] + words[:pivot]
        for _ in range(rng.randint(0, 2)):
            where = rng.randrange(len(words))
            if not words[where][:1].isupper():
                words[where] = self.langs[lang].content_only.draw(rng, 1)[0]
        if len(words) > TITLE_TOKENS[0] and rng.random() < 0.2:
            del words[rng.randrange(len(words))]
        return tuple(words)

    def drafts_of(self, story: _Story, seq: int) -> list[_Draft]:
        """The pages carrying one story, earliest first (so a cut keeps the first copies)."""
        rng, outlets = self.rng, self.by_lang[story.lang]
        if not story.wire:
            paragraphs = _paragraphs(list(story.sentences))
            return [self._draft(story, rng.choice(outlets), story.start, seq, story.title, paragraphs)]
        count = min(rng.randint(*WIRE_COPIES), len(outlets))
        delays = sorted([0] + [rng.randrange(COPY_DELAY_HOURS * 3600) for _ in range(count - 1)])
        drafts = []
        for number, (outlet, delay) in enumerate(zip(rng.sample(outlets, count), delays, strict=True)):
            title = self.retitle(story.lang, story.title)
            drafts.append(
                self._draft(story, outlet, story.start + delay, seq + number, title, self.copy_text(story))
            )
        return drafts

    @staticmethod
    def _draft(
        story: _Story, outlet: _Outlet, when: int, seq: int, title: Sequence[str], paragraphs: tuple[str, ...]
    ) -> _Draft:
        return _Draft(
            when=when,
            seq=seq,
            outlet=outlet,
            label=story.label,
            kind="wire" if story.wire else "local",
            event=story.event,
            title=tuple(title),
            paragraphs=paragraphs,
            entities=story.entities,
        )

    def no_content_draft(self, label: str, seq: int) -> _Draft:
        """A photo gallery or video page: captions only; it is its own cluster."""
        rng = self.rng
        outlet = rng.choice(self.outlets)
        ui = _UI[outlet.lang]
        heading = self.headline(outlet.lang, [self.name(outlet.lang)])[: rng.randint(3, 6)]
        kind = ui.photos if rng.random() < 0.6 else ui.video
        captions = tuple(self._caption(outlet.lang) for _ in range(rng.randint(*GALLERY_CAPTIONS)))
        return _Draft(
            when=rng.randrange(STORY_WINDOW_HOURS * 3600),
            seq=seq,
            outlet=outlet,
            label=label,
            kind="no-content",
            event=None,
            title=(kind + ":", *heading),
            paragraphs=captions,
            entities=(),
        )

    def _caption(self, lang: str) -> str:
        words = self.langs[lang].content_only.draw(self.rng, self.rng.randint(*CAPTION_WORDS))
        return _capitalize(" ".join(words))


def _paragraphs(sentences: Sequence[tuple[int, str]]) -> tuple[str, ...]:
    """Join tagged sentences back into paragraph strings, keeping the original paragraph breaks."""
    paragraphs: list[list[str]] = []
    last = None
    for number, text in sentences:
        if number != last:
            paragraphs.append([])
            last = number
        paragraphs[-1].append(text)
    return tuple(" ".join(group) for group in paragraphs)


def _early_index(rng: random.Random, count: int) -> int:
    """0 half the time, 1 a quarter... capped: a story's first names are mentioned most.

    Coin flips rather than ``expovariate``, whose ``log`` may differ in the last bit between C libraries.
    """
    index = 0
    while index < count - 1 and rng.random() < 0.5:
        index += 1
    return index


def _render_title(words: Sequence[str]) -> str:
    return _capitalize(" ".join(words))


def _body_script(rng: random.Random) -> str:
    tag = f"G-{rng.randrange(16**8):08X}"
    return (
        f"window.dataLayer=window.dataLayer||[];function gtag(){{dataLayer.push(arguments)}}"
        f"gtag('js',new Date());gtag('config','{tag}');"
    )


# --- Planning: stories until the page count is reached ------------------------------------------


def _event_start_chance() -> float:
    """Chance that a new draw opens an event, so that EVENT_STORY_SHARE of stories are in one."""
    mean = sum(EVENT_STORIES) / 2
    return EVENT_STORY_SHARE / (mean - EVENT_STORY_SHARE * (mean - 1))


def _plan(world: _World, pages: int) -> list[_Draft]:
    """Draw stories (alone or as an event's siblings) until exactly ``pages`` drafts exist."""
    rng = world.rng
    blanks = round(pages * NO_CONTENT_SHARE)
    wanted = pages - blanks
    drafts: list[_Draft] = []
    stories = events = 0
    event_chance = _event_start_chance()
    while len(drafts) < wanted:
        group: list[tuple[str, int, _Event | None]] = []
        if rng.random() < event_chance:
            event = world.event(f"e{events:05d}")
            events += 1
            for _ in range(rng.randint(*EVENT_STORIES)):
                group.append((event.lang, event.start + rng.randrange(EVENT_SPREAD_HOURS * 3600), event))
        else:
            group.append((world.pick_language(), rng.randrange(STORY_WINDOW_HOURS * 3600), None))
        for lang, start, of_event in group:
            if len(drafts) == wanted:  # an event cut short: its later siblings never run
                break
            story = world.story(f"s{stories:05d}", lang, start, of_event)
            stories += 1
            drafts += world.drafts_of(story, len(drafts))[: wanted - len(drafts)]
    for number in range(blanks):
        drafts.append(world.no_content_draft(f"n{number:05d}", len(drafts)))
    drafts.sort(key=lambda draft: (draft.when, draft.seq))
    return drafts


# --- Rendering ----------------------------------------------------------------------------------


def _moment(when: int) -> datetime:
    """Seconds after EPOCH as an aware UTC datetime."""
    return EPOCH + when * _SECOND


def _iso(when: int) -> str:
    return _moment(when).strftime("%Y-%m-%dT%H:%M:%SZ")


def _news_please_time(when: int) -> str:
    return _moment(when).strftime("%Y-%m-%d %H:%M:%S")


def _esc(text: str) -> str:
    """Escape text for an element body: quotes stay as typed, as in real pages."""
    return html_lib.escape(text, quote=False)


def _attr(text: str) -> str:
    return html_lib.escape(text, quote=True)


class _Renderer:
    """Turns drafts into page dicts in publication order, keeping each outlet's recent headlines."""

    def __init__(self, world: _World) -> None:
        self.world = world
        self.rng = world.rng

    def page(self, page_id: str, draft: _Draft) -> tuple[dict[str, Any], PageTruth]:
        outlet, rng = draft.outlet, self.rng
        title = _render_title(draft.title)
        url = self.world.url(outlet, title)
        others = self._headlines(outlet)
        roll = rng.random()
        if roll < NEWS_PLEASE_SHARE:
            record = self._news_please(page_id, draft, title, url, others)
        else:
            record = self._record(page_id, draft, title, url)
            if roll < NEWS_PLEASE_SHARE + HTML_SHARE:
                record["html"] = self._html(draft, title, url, others)
            else:
                record["text"] = self._text(draft, title, others)
        outlet.recent.append((title, url))
        return record, self._truth(draft)

    def _truth(self, draft: _Draft) -> PageTruth:
        article = () if draft.kind == "no-content" else draft.paragraphs
        return PageTruth(
            label=draft.label,
            kind=draft.kind,
            outlet=draft.outlet.domain,
            lang=draft.outlet.lang,
            event=draft.event,
            entities=draft.entities,
            article=article,
            site_prose=draft.outlet.prose,
            published=_moment(draft.when),
        )

    def _record(self, page_id: str, draft: _Draft, title: str, url: str) -> dict[str, Any]:
        record = {
            "id": page_id,
            "url": url,
            "title": title,
            "source": draft.outlet.domain,
            "published_at": _iso(draft.when),
        }
        if self.rng.random() >= NO_LANG_SHARE:
            record["lang"] = draft.outlet.lang
        return record

    def _news_please(
        self, page_id: str, draft: _Draft, title: str, url: str, others: list[tuple[str, str]]
    ) -> dict[str, Any]:
        record = {
            "id": page_id,
            "url": url,
            "title": title,
            "source_domain": draft.outlet.domain,
            "date_publish": _news_please_time(draft.when),
        }
        if self.rng.random() >= NO_LANG_SHARE:
            record["language"] = draft.outlet.lang
        record["maintext"] = self._text(draft, title, others)
        return record

    def _headlines(self, outlet: _Outlet) -> list[tuple[str, str]]:
        """(title, url) of 5-8 stories the outlet published lately, padded from its archive.

        They are always *other* stories: a page joins ``recent`` only once rendered, and an
        outlet never carries two copies of one story.
        """
        rng = self.rng
        wanted = rng.randint(*SIDEBAR_HEADLINES)
        pool = [(t, u) for t, u in reversed(outlet.recent)] + list(outlet.archive)
        chosen = pool[:wanted]
        if not outlet.sidebar_latest:
            rng.shuffle(chosen)
        return chosen

    # Plain text ----------------------------------------------------------------------------------

    def _text(self, draft: _Draft, title: str, others: list[tuple[str, str]]) -> str:
        """What a sloppy extractor gives: article lines, "Related:" lines, then the site's prose."""
        rng, outlet = self.rng, draft.outlet
        ui = _UI[outlet.lang]
        lines = [title] if outlet.text_has_title else []
        body = list(draft.paragraphs)
        for headline, _ in others[: rng.randint(*RELATED_LINES)]:
            body.insert(rng.randint(1, len(body)), f"{ui.related}: {headline}")
        lines += body
        lines += outlet.prose
        lines.append(f"© 2026 {outlet.name}. {ui.rights}.")
        return "\n".join(lines)

    # HTML ----------------------------------------------------------------------------------------

    def _html(self, draft: _Draft, title: str, url: str, others: list[tuple[str, str]]) -> str:
        outlet = draft.outlet
        parts = [
            self._head(draft, title, url),
            '<body class="page">',
            f'<header class="masthead"><a class="logo" href="https://{outlet.domain}/">'
            f"{_esc(outlet.name)}</a></header>",
            self._nav(outlet),
            '<main class="content">',
        ]
        ads = [self._ad(outlet) for _ in range(self.rng.randint(*ADS_PER_PAGE))]
        parts.append(ads.pop())
        if draft.kind == "no-content":
            parts.append(self._gallery(draft, title))
        else:
            parts.append(self._article(draft, title))
        parts += ads
        parts += [
            self._sidebar(outlet, others),
            "</main>",
            self._footer(outlet),
            f"<script>{outlet.body_script}</script>",
            "</body>",
            "</html>",
        ]
        return "\n".join(parts)

    def _head(self, draft: _Draft, title: str, url: str) -> str:
        outlet = draft.outlet
        summary = draft.paragraphs[0] if draft.paragraphs else title
        ld = orjson.dumps(
            {
                "@context": "https://schema.org",
                "@type": "NewsArticle",
                "headline": title,
                "datePublished": _iso(draft.when),
                "publisher": outlet.name,
            }
        ).decode()
        ld = ld.replace("</", "<\\/")
        return "\n".join(
            (
                "<!DOCTYPE html>",
                f'<html lang="{outlet.lang}">',
                "<head>",
                '<meta charset="utf-8">',
                '<meta name="viewport" content="width=device-width, initial-scale=1">',
                f"<title>{_esc(title)} | {_esc(outlet.name)}</title>",
                f'<meta name="description" content="{_attr(summary[:160])}">',
                f'<meta property="og:title" content="{_attr(title)}">',
                f'<link rel="canonical" href="{url}">',
                f'<link rel="stylesheet" href="https://{outlet.domain}/static/site.css">',
                "<style>body{margin:0;font-family:Georgia,serif}.content{max-width:72rem;margin:auto}</style>",
                f'<script async src="https://cdn.{_ad_network(outlet)}/tag.js"></script>',
                f'<script type="application/ld+json">{ld}</script>',
                "</head>",
            )
        )

    @staticmethod
    def _nav(outlet: _Outlet) -> str:
        links = [
            f'<a href="https://{outlet.domain}/{slug}/">{_esc(label)}</a>' for slug, label in outlet.sections
        ]
        if outlet.nav_tag == "nav":
            items = "".join(f"<li>{link}</li>" for link in links)
            return f'<nav class="main-nav"><ul>{items}</ul></nav>'
        return f'<div class="menu">{" ".join(links)}</div>'

    def _article(self, draft: _Draft, title: str) -> str:
        outlet, rng = draft.outlet, self.rng
        ui = _UI[outlet.lang]
        opening = "<article>" if outlet.article_tag == "article" else '<div class="story-body">'
        closing = "</article>" if outlet.article_tag == "article" else "</div>"
        parts = [
            opening,
            f"<h1>{_esc(title)}</h1>",
            f'<p class="byline">{_esc(ui.by)} {rng.choice(outlet.staff)} · '
            f'<time datetime="{_iso(draft.when)}">{_news_please_time(draft.when)[:16]}</time></p>',
        ]
        parts += (f"<p>{self._linked(outlet, _esc(text))}</p>" for text in draft.paragraphs)
        if outlet.prose_place == "newsletter":
            parts.append(self._prose_block(outlet, "div", "newsletter"))
        parts.append(closing)
        return "\n".join(parts)

    def _linked(self, outlet: _Outlet, paragraph: str) -> str:
        """Sometimes wrap a few words in an inline link, as editors do."""
        rng = self.rng
        if rng.random() >= outlet.link_chance:
            return paragraph
        words = paragraph.split(" ")
        start = rng.randrange(len(words))
        stop = min(len(words), start + rng.randint(1, 3))
        href = f"https://{outlet.domain}/{rng.choice(outlet.sections)[0]}/{rng.randrange(10**6, 10**7)}"
        words[start] = f'<a href="{href}">{words[start]}'
        words[stop - 1] += "</a>"
        return " ".join(words)

    def _gallery(self, draft: _Draft, title: str) -> str:
        outlet, rng = draft.outlet, self.rng
        video = draft.title[0] == _UI[outlet.lang].video + ":"
        figures = []
        for number, caption in enumerate(draft.paragraphs):
            src = f"https://{outlet.domain}/media/{rng.randrange(10**8):08d}-{number}"
            media = f'<video src="{src}.mp4" controls></video>' if video else f'<img src="{src}.jpg" alt="">'
            figures.append(f"<figure>{media}<figcaption>{_esc(caption)}</figcaption></figure>")
        css = "video-player" if video else "gallery"
        parts = [f'<section class="{css}"><h1>{_esc(title)}</h1>', *figures, "</section>"]
        if outlet.prose_place == "newsletter":
            parts.append(self._prose_block(outlet, "div", "newsletter"))
        return "\n".join(parts)

    def _ad(self, outlet: _Outlet) -> str:
        rng = self.rng
        text = rng.choice(_UI[outlet.lang].ads).format(rng.choice(self.world.brands))
        href = f"https://ads.{rng.choice(_AD_NETWORKS)}/c?id={rng.randrange(10**6)}"
        label = _esc(_UI[outlet.lang].advert)
        tag = "ins" if outlet.ad_class == "adsbygoogle" else "div"
        return (
            f'<{tag} class="{outlet.ad_class}"><span class="label">{label}</span>'
            f'<a href="{href}" rel="sponsored">{_esc(text)}</a></{tag}>'
        )

    def _sidebar(self, outlet: _Outlet, others: list[tuple[str, str]]) -> str:
        ui = _UI[outlet.lang]
        heading = ui.latest if outlet.sidebar_latest else ui.most_read
        items = "".join(f'<li><a href="{url}">{_esc(title)}</a></li>' for title, url in others)
        body = f"<h2>{_esc(heading)}</h2><ol>{items}</ol>"
        if outlet.sidebar_tag == "aside":
            return f'<aside class="rail">{body}</aside>'
        return f'<div class="sidebar">{body}</div>'

    @staticmethod
    def _prose_block(outlet: _Outlet, tag: str, css: str) -> str:
        paragraphs = "".join(f"<p>{_esc(text)}</p>" for text in outlet.prose)
        return f'<{tag} class="{css}">{paragraphs}</{tag}>'

    def _footer(self, outlet: _Outlet) -> str:
        ui = _UI[outlet.lang]
        links = "".join(
            f'<li><a href="https://{outlet.domain}/{_ascii(label) or "page"}">{_esc(label)}</a></li>'
            for label in ui.footer_links
        )
        rights = f'<p class="copyright">© 2026 {_esc(outlet.name)}. {_esc(ui.rights)}.</p>'
        if outlet.prose_place == "footer":
            about = self._prose_block(outlet, "div", "about")
            return f'<footer>{about}<ul class="links">{links}</ul>{rights}</footer>'
        before = ""
        if outlet.prose_place == "site-footer":
            before = self._prose_block(outlet, "div", "site-footer") + "\n"
        return f'{before}<footer><ul class="links">{links}</ul>{rights}</footer>'


# --- Messy dates: the corpus as a feed delivers it ----------------------------------------------


def _local_zone(rng: random.Random) -> timezone:
    return timezone(timedelta(minutes=rng.choice(LOCAL_OFFSET_MINUTES)))


def _iso_utc(rng: random.Random, moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _iso_offset(rng: random.Random, moment: datetime) -> str:
    """The same instant as a local wall time with its offset, as sites outside UTC write it."""
    return moment.astimezone(_local_zone(rng)).isoformat()


def _iso_no_offset(rng: random.Random, moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S")


def _rfc_2822(rng: random.Random, moment: datetime) -> str:
    """An RSS ``pubDate``: in GMT, or the site's local time with a numeric offset."""
    if rng.random() < RFC2822_GMT_SHARE:
        return format_datetime(moment, usegmt=True)
    return format_datetime(moment.astimezone(_local_zone(rng)))


def _epoch_seconds(rng: random.Random, moment: datetime) -> int:
    return int(moment.timestamp())


def _epoch_milliseconds(rng: random.Random, moment: datetime) -> int:
    return int(moment.timestamp()) * 1000


def _date_only(rng: random.Random, moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def _hours_ahead(rng: random.Random, moment: datetime) -> str:
    """A few hours ahead of publication: within the clock's tolerance (24 h), so it is believed."""
    return _iso_utc(rng, moment + rng.randint(*AHEAD_SECONDS) * _SECOND)


def _missing(rng: random.Random, moment: datetime) -> None:
    return None


def _unreadable(rng: random.Random, moment: datetime) -> str:
    return rng.choice(UNREADABLE_DATES)


def _wrong_year(rng: random.Random, moment: datetime) -> str:
    """WRONG_YEAR, or a placeholder date, with equal chance. (EPOCH's window never holds 29 Feb.)"""
    pick = rng.randrange(1 + len(PLACEHOLDER_DATES))
    if pick == 0:
        return _iso_utc(rng, moment.replace(year=WRONG_YEAR))
    return PLACEHOLDER_DATES[pick - 1]


#: Date form -> the date field's value for a page published at a moment (None: the field is left out).
_DATE_WRITERS: Mapping[str, Callable[[random.Random, datetime], str | int | None]] = {
    "iso-utc": _iso_utc,
    "iso-offset": _iso_offset,
    "iso-no-offset": _iso_no_offset,
    "rfc-2822": _rfc_2822,
    "epoch-seconds": _epoch_seconds,
    "epoch-milliseconds": _epoch_milliseconds,
    "date-only": _date_only,
    "hours-ahead": _hours_ahead,
    "missing": _missing,
    "unreadable": _unreadable,
    "wrong-year": _wrong_year,
}
_DATE_FORMS = tuple(DATE_FORM_SHARES)
_DATE_FORM_CUM = tuple(accumulate(DATE_FORM_SHARES.values()))


@dataclass(frozen=True)
class _Delivery:
    """How a feed delivers one page: when it arrives, and its date field as written."""

    received: int  # seconds after EPOCH
    form: str  # a key of DATE_FORM_SHARES
    value: str | int | None  # None: the page comes without a date field


def _messy_rng(seed: int) -> random.Random:
    """A generator of its own for the messy choices, so the clean corpus's draws stay untouched.

    A string seed is hashed with SHA-512 (not ``hash()``), so it is the same in every process.
    """
    return random.Random(f"stream-lsh messy dates {seed}")


def _delivery(rng: random.Random, published: int) -> _Delivery:
    """Arrival after a crawl delay (days, for a re-crawl) and a date form drawn by its share."""
    if rng.random() < LATE_SHARE:
        delay = rng.randint(*LATE_DELAY_SECONDS)
    else:
        delay = rng.randint(*CRAWL_DELAY_SECONDS)
    form = rng.choices(_DATE_FORMS, cum_weights=_DATE_FORM_CUM)[0]
    value = _DATE_WRITERS[form](rng, _moment(published))
    return _Delivery(received=published + delay, form=form, value=value)


def _write_date(record: dict[str, Any], value: str | int | None) -> None:
    """Replace the page's date (``published_at``, or ``date_publish`` in news-please shape) in place."""
    name = "date_publish" if "date_publish" in record else "published_at"
    if value is None:
        del record[name]
    else:
        record[name] = value


def _as_delivered(
    records: list[dict[str, Any]],
    published: Sequence[int],
    seed: int,
) -> tuple[list[dict[str, Any]], list[_Delivery]]:
    """The records with messy dates, in arrival order (ties: publication order), and each
    record's delivery in publication order. A feed dump is in arrival order, not date order."""
    rng = _messy_rng(seed)
    deliveries = [_delivery(rng, when) for when in published]
    for record, delivery in zip(records, deliveries, strict=True):
        _write_date(record, delivery.value)
    order = sorted(range(len(records)), key=lambda i: (deliveries[i].received, i))
    return [records[i] for i in order], deliveries


# --- Public API ---------------------------------------------------------------------------------


def _check_arguments(pages: int, seed: int, languages: Sequence[str]) -> None:
    if pages < 0:
        raise ValueError(f"pages must be >= 0, got {pages}")
    if not isinstance(seed, int):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    unknown = [code for code in languages if code not in LANGUAGE_WEIGHTS]
    if unknown or not languages or len(set(languages)) != len(languages):
        raise ValueError(
            f"languages must be distinct codes among {', '.join(DEFAULT_LANGUAGES)}; "
            f"got {', '.join(languages) or 'none'}"
        )


def generate_corpus_with_truth(
    pages: int,
    seed: int = 0,
    *,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    messy_dates: bool = False,
) -> tuple[SyntheticCorpus, dict[str, PageTruth]]:
    """Like :func:`generate_corpus`, plus what the generator knows about each page (by page id).

    The truth lets tests and error analyses ask *why* two pages were merged (same outlet's prose?
    event siblings?) without parsing the pages back, and, with ``messy_dates``, what each page's
    date really is.
    """
    _check_arguments(pages, seed, languages)
    world = _World(pages, seed, list(languages))
    renderer = _Renderer(world)
    records: list[dict[str, Any]] = []
    published: list[int] = []
    labels: dict[str, str] = {}
    truth: dict[str, PageTruth] = {}
    for number, draft in enumerate(_plan(world, pages)):
        page_id = f"p{number:06d}"  # in publication order, also when the file is in arrival order
        record, truth[page_id] = renderer.page(page_id, draft)
        records.append(record)
        published.append(draft.when)
        labels[page_id] = draft.label
    if messy_dates:
        records, deliveries = _as_delivered(records, published, seed)
        for page_id, delivery in zip(labels, deliveries, strict=True):
            received = _moment(delivery.received)
            truth[page_id] = replace(truth[page_id], received=received, date_form=delivery.form)
    return SyntheticCorpus(pages=records, labels=labels), truth


def generate_corpus(
    pages: int,
    seed: int = 0,
    *,
    languages: Sequence[str] = DEFAULT_LANGUAGES,
    messy_dates: bool = False,
) -> SyntheticCorpus:
    """Exactly ``pages`` synthetic news pages, sorted by publication time, with cluster labels.

    All copies of one wire story share a label ("s00042"); a local story or a no-content page
    ("n00003") is alone in its cluster. Same seed, size and languages -> byte-identical output.

    With ``messy_dates`` the pages are a feed as received: in arrival order (publication plus a
    crawl delay of up to CRAWL_DELAY_SECONDS, or days for the LATE_SHARE of re-crawls), each date
    field written in one of the forms of :data:`DATE_FORM_SHARES`. Ids, labels and page bodies are
    those of the clean corpus of the same seed; the choices come from a generator of their own, so
    the result is as deterministic as the clean corpus.
    """
    return generate_corpus_with_truth(pages, seed, languages=languages, messy_dates=messy_dates)[0]


def write_corpus(corpus: SyntheticCorpus, pages_path: str | Path, labels_path: str | Path) -> None:
    """Pages as JSON lines (the product's input format) and labels as one JSON object."""
    with open(pages_path, "wb") as out:
        for page in corpus.pages:
            out.write(orjson.dumps(page) + b"\n")
    Path(labels_path).write_bytes(orjson.dumps(corpus.labels))


def load_labels(path: str | Path) -> dict[str, str]:
    """Labels written by :func:`write_corpus`; refuses anything but an object of strings."""
    data = orjson.loads(Path(path).read_bytes())
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"{path}: expected a JSON object mapping page ids to label strings")
    return data


def consumer_order(
    pages: Sequence[dict[str, Any]],
    partition_of: Callable[[dict[str, Any]], int],
    rng: random.Random,
    *,
    max_chunk: int,
    whole_first: bool = False,
) -> list[dict[str, Any]]:
    """The order in which a consumer of several input partitions may see ``pages``: each
    partition keeps its order, and chunks of 1..``max_chunk`` pages come from random partitions
    (with ``whole_first``, one random partition entirely before the others). For the tests and
    benchmarks of the stream's ordering."""
    queues: dict[int, list[dict[str, Any]]] = {}
    for page in pages:
        queues.setdefault(partition_of(page), []).append(page)
    order = queues.pop(rng.choice(sorted(queues))) if whole_first else []
    while queues:
        part = rng.choice(sorted(queues))
        n = rng.randint(1, max_chunk)
        order.extend(queues[part][:n])
        del queues[part][:n]
        if not queues[part]:
            del queues[part]
    return order
