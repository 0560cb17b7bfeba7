import pytest

from stream_lsh.core.hashing import TokenHasher
from stream_lsh.core.shingles import tokenize
from stream_lsh.core.stopwords import DEFAULT_LANGUAGES, StopWordLists, StopWordMatcher, canonical_language
from stream_lsh.core.text import normalize


@pytest.fixture(scope="module")
def lists():
    return StopWordLists.load()


def test_lists_cover_the_big_news_languages(lists):
    assert lists.languages == DEFAULT_LANGUAGES
    for language in DEFAULT_LANGUAGES:
        assert 40 <= len(lists.words[language]) <= 500, language
    assert {"the", "for", "that", "you", "your", "a", "i"} <= lists.words["en"]
    assert {"der", "die", "und", "dass"} <= lists.words["de"]  # "daß" is normalised by casefold
    assert lists.source.startswith("stopwords==")


def test_digest_identifies_the_exact_words(lists):
    again = StopWordLists.load()
    assert again.digest == lists.digest
    changed = StopWordLists(words={**lists.words, "en": lists.words["en"] - {"the"}}, source=lists.source)
    assert changed.digest != lists.digest
    assert StopWordLists.load(("en",)).digest != lists.digest


def test_unknown_or_repeated_language_is_refused():
    with pytest.raises(ValueError, match="no stop-word list for xx"):
        StopWordLists.load(("en", "xx"))
    with pytest.raises(ValueError, match="twice"):
        StopWordLists.load(("en", "en"))


@pytest.mark.parametrize(
    "given, expected",
    [
        ("en", "en"),
        ("EN-us", "en"),
        ("pt_BR", "pt"),
        ("English", "en"),
        ("russian", "ru"),
        ("zz", None),
        ("", None),
        (None, None),
    ],
)
def test_canonical_language(given, expected):
    assert canonical_language(given) == expected


@pytest.mark.parametrize(
    "language, text",
    [
        ("en", "The minister said that the plan would be ready for the vote by the end of the week"),
        ("fr", "Le ministre a déclaré que le plan serait prêt pour le vote à la fin de la semaine"),
        ("de", "Der Minister sagte, dass der Plan bis zum Ende der Woche für die Abstimmung bereit sei"),
        ("es", "El ministro dijo que el plan estaría listo para la votación al final de la semana"),
        ("it", "Il ministro ha detto che il piano sarà pronto per il voto entro la fine della settimana"),
        ("nl", "De minister zei dat het plan aan het eind van de week klaar zou zijn voor de stemming"),
        ("ru", "Министр сказал, что план будет готов к голосованию к концу недели, и что он его поддержит"),
    ],
)
def test_detection_picks_the_language_of_the_prose(lists, language, text):
    hasher = TokenHasher(seed=1)
    matcher = StopWordMatcher(lists, hasher)
    masks = matcher.language_masks(hasher.hash_tokens(tokenize(normalize(text))))
    assert matcher.detect(masks) == language


def test_the_words_the_generator_writes_are_the_lists_the_product_uses():
    """stream_lsh.synthetic writes text with package_words; normalised like page text they are
    exactly the stop-word lists of the signature scheme, in every language."""
    from stream_lsh.core.stopwords import LANGUAGE_NAMES, StopWordLists, package_words
    from stream_lsh.core.text import normalize

    lists = StopWordLists.load(tuple(LANGUAGE_NAMES))
    for language in LANGUAGE_NAMES:
        written = package_words(language)
        assert len(written) == len(set(written)) and "daß" not in lists.words["de"]
        assert frozenset(normalize(word) for word in written) == lists.words[language], language
