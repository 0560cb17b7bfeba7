import dataclasses

import pytest

from stream_lsh.core.scheme import Scheme, check_compatible
from stream_lsh.errors import StateMismatchError

BASE = Scheme(
    shingles="stopword",
    shingle_size=3,
    num_perm=128,
    seed=1,
    stop_words_source="stopwords==1.0.2",
    stop_words_digest="abc",
    stop_words_languages=("en", "fr"),
)


def test_fingerprint_is_stable_and_round_trips():
    assert BASE.fingerprint == Scheme.from_dict(BASE.to_dict()).fingerprint
    assert len(BASE.fingerprint) == 16


@pytest.mark.parametrize(
    "change",
    [
        dict(seed=2),
        dict(num_perm=64),
        dict(shingles="char"),
        dict(shingle_size=4),
        dict(stop_words_digest="abd"),
        dict(stop_words_languages=("en",)),
        dict(hash="other"),
        dict(text_pipeline="v2"),
    ],
)
def test_every_signature_parameter_changes_the_fingerprint_and_is_refused(change):
    other = dataclasses.replace(BASE, **change)
    assert other.fingerprint != BASE.fingerprint
    with pytest.raises(StateMismatchError) as caught:
        check_compatible(BASE, other)
    assert next(iter(change)) in str(caught.value) and BASE.fingerprint in str(caught.value)


def test_equal_schemes_pass():
    check_compatible(BASE, dataclasses.replace(BASE))
