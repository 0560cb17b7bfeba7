import numpy as np
import pytest

from stream_lsh.core.hashing import TokenHasher, combine
from stream_lsh.core.shingles import ShingleKind, Shingler, ShingleSpec, tokenize
from stream_lsh.core.stopwords import StopWordLists
from stream_lsh.core.text import normalize

SEED = 1


@pytest.fixture(scope="module")
def stop_words():
    return StopWordLists.load()


def shingler(kind="stopword", k=None, stop_words=None):
    return Shingler(ShingleSpec(kind, k), TokenHasher(SEED), stop_words)


def hashes_of(shingles, tokens_of=str.split):
    """What the shingler must produce for these shingles written out as text."""
    hasher = TokenHasher(SEED)
    return {int(combine([hasher.hash_tokens([t]) for t in tokens_of(s)])[0]) for s in shingles}


def test_mmds_example_3_5(stop_words):
    text = (
        "A spokesperson for the Sudzo Corporation revealed today that studies have shown it is "
        "good for people to buy Sudzo products."
    )
    # With the Snowball English list, the stop words here are: a, for, the, that, have, it, is, to.
    assert {"a", "for", "the", "that", "have", "it", "is", "to"} <= stop_words.words["en"]
    assert (
        not {"spokesperson", "sudzo", "today", "studies", "shown", "good", "people", "buy"}
        & stop_words.words["en"]
    )
    got = set(shingler(stop_words=stop_words).shingles(normalize(text), "en").tolist())
    # The book: "the first three shingles made from a stop word and the next two following are".
    assert hashes_of(["a spokesperson for", "for the sudzo", "the sudzo corporation"]) <= got
    assert got == hashes_of(
        [
            "a spokesperson for",
            "for the sudzo",
            "the sudzo corporation",
            "that studies have",
            "have shown it",
            "it is good",
            "is good for",
            "for people to",
            "to buy sudzo",
        ]
    )


def test_the_ad_has_no_shingles(stop_words):
    assert shingler(stop_words=stop_words).shingles(normalize("Buy Sudzo"), "en").size == 0


def test_mmds_example_3_23(stop_words):
    text = "I recommend that you buy Sudzo for your laundry. Tomorrow"
    got = set(shingler(stop_words=stop_words).shingles(normalize(text), "en").tolist())
    assert got == hashes_of(
        ["i recommend that", "that you buy", "you buy sudzo", "for your laundry", "your laundry tomorrow"]
    )


def test_a_stop_word_without_two_followers_starts_no_shingle(stop_words):
    got = set(
        shingler(stop_words=stop_words).shingles(normalize("buy Sudzo for your laundry"), "en").tolist()
    )
    assert got == hashes_of(["for your laundry"])


def test_language_hint_and_detection_choose_the_list(stop_words):
    s = shingler(stop_words=stop_words)
    french = normalize("Le ministre a déclaré que le plan serait prêt pour le vote à la fin de la semaine")
    assert s.language_of(french) == "fr"
    assert s.language_of(french, "de") == "de"
    assert s.language_of(french, "xx") == "fr"  # unknown hint: detect
    assert not np.array_equal(s.shingles(french), s.shingles(french, "en"))


def test_mmds_example_3_1_character_shingles():
    got = shingler("char", 2).shingles("abcdabd")
    assert got.size == 5  # {ab, bc, cd, da, bd}
    assert set(got.tolist()) == hashes_of(["ab", "bc", "cd", "da", "bd"], tokens_of=list)


def test_word_shingles():
    got = set(shingler("word", 2).shingles("the cat the cat sat").tolist())
    assert got == hashes_of(["the cat", "cat the", "cat sat"])


def test_output_is_sorted_unique_uint64(stop_words):
    got = shingler(stop_words=stop_words).shingles(
        normalize("it is what it is and it is what it is " * 5), "en"
    )
    assert got.dtype == np.uint64
    assert np.array_equal(got, np.unique(got))


def test_too_short_texts_give_empty_sets(stop_words):
    for kind in ShingleKind:
        s = shingler(kind.value, stop_words=stop_words)
        assert s.shingles("").size == 0
        assert s.shingles("a").size == 0


@pytest.mark.parametrize("kind, k", [("stopword", 1), ("char", 0), ("word", 99), ("bogus", 3)])
def test_bad_specs_are_refused(kind, k):
    with pytest.raises(ValueError):
        ShingleSpec(kind, k)


def test_stopword_shingles_need_lists():
    with pytest.raises(ValueError, match="stop-word lists"):
        Shingler(ShingleSpec("stopword"), TokenHasher(SEED), None)


def test_tokenize_keeps_inner_apostrophes():
    assert tokenize("don't stop, rock'n'roll!") == ["don't", "stop", "rock'n'roll"]
