import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.hashing import TokenHasher, combine, fmix64, word_indexes, xxh64_text


def test_token_hash_is_seeded_xxh3():
    hasher = TokenHasher(seed=7)
    assert hasher.hash_tokens(["sudzo"])[0] == np.uint64(xxh64_text("sudzo", 7))
    assert TokenHasher(seed=8).hash_tokens(["sudzo"])[0] != hasher.hash_tokens(["sudzo"])[0]


@given(st.lists(st.text(min_size=1, max_size=8), max_size=50))
def test_cache_never_changes_results(tokens):
    cold = TokenHasher(seed=3, max_cached=1).hash_tokens(tokens)
    warm = TokenHasher(seed=3)
    warm.hash_tokens(tokens)
    assert np.array_equal(cold, warm.hash_tokens(tokens))


def test_lone_surrogates_are_hashed_not_rejected():
    assert TokenHasher(seed=1).hash_tokens(["\ud800x"]).shape == (1,)


def test_combine_is_order_sensitive_and_deterministic():
    a, b, c = (np.array([v], dtype=np.uint64) for v in (1, 2, 3))
    assert combine([a, b, c])[0] != combine([c, b, a])[0]
    assert combine([a, b, c])[0] == combine([a.copy(), b.copy(), c.copy()])[0]
    assert combine([a, b])[0] != combine([a, b, c])[0]


def test_fmix64_is_a_bijection_on_a_sample():
    values = np.arange(100_000, dtype=np.uint64)
    assert np.unique(fmix64(values)).size == values.size


from stream_lsh.core.hashing import words  # noqa: E402
from stream_lsh.core.text import normalize  # noqa: E402

_texty = st.lists(
    st.sampled_from(list("ab z'.-,\u00e9\u0416_1 \n\t") + ["don't", "u.s.", " -- "]), max_size=40
).map("".join)


@given(st.lists(_texty, max_size=5))
def test_hash_words_equals_hashing_the_reference_tokens(texts):
    """The whitespace fast path yields exactly the reference tokenizer's words, cache cold or warm."""
    hasher = TokenHasher(seed=11)
    for text in texts + texts:
        text = normalize(text)
        assert np.array_equal(hasher.hash_words(text), hasher.hash_tokens(words(text)))


def test_hash_words_expands_tokens_with_several_words():
    hasher = TokenHasher(seed=1)
    text = "the covid-19 wave hit the u.s. -- again"
    assert words(text) == ["the", "covid", "19", "wave", "hit", "the", "u", "s", "again"]
    assert np.array_equal(hasher.hash_words(text), hasher.hash_tokens(words(text)))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(max_size=60), min_size=1, max_size=6))
def test_batched_word_hashes_equal_the_reference_on_any_unicode(texts):
    hasher = TokenHasher(seed=5)
    hashes, offsets = hasher.hash_words_batch(texts)
    for i, text in enumerate(texts):
        assert np.array_equal(hashes[offsets[i] : offsets[i + 1]], hasher.hash_tokens(words(text))), text


def test_huge_texts_are_hashed_in_pieces_with_the_same_result(monkeypatch):
    from stream_lsh.core import hashing as module

    texts = [normalize(" ".join(f"w{i % 97} don't x{i}" for i in range(n))) for n in (3000, 10, 0, 2500)]
    hasher = TokenHasher(seed=3)
    expected = [hasher.hash_tokens(words(t)) for t in texts]
    monkeypatch.setattr(module, "_MAX_BLOB", 5_000)
    hashes, offsets = TokenHasher(seed=3).hash_words_batch(texts)
    for i, want in enumerate(expected):
        assert np.array_equal(hashes[offsets[i] : offsets[i + 1]], want)


@given(st.lists(st.text(alphabet="ab' -é1\u00a0", max_size=12), max_size=6))
def test_word_indexes_count_words_as_the_reference_tokenizer(blocks):
    """Property: the word at each block's start (in UTF-8 bytes of the blocks joined by spaces)
    is the one the reference tokenizer reaches after the blocks before it."""
    text = " ".join(blocks)
    offsets, at = [], 0
    for block in blocks:
        offsets.append(at)
        at += len(block.encode("utf-8", "surrogatepass")) + 1
    expected = [len(words(" ".join(blocks[:i]))) for i in range(len(blocks))]
    assert word_indexes([text, text], [offsets, offsets[:1]]) == [expected, expected[:1]]
