import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stream_lsh.core.banding import Banding, error_rates, optimal_banding, s_curve


@pytest.mark.parametrize(
    "s, expected",
    [
        (0.2, 0.006),
        (0.3, 0.047),
        (0.4, 0.186),
        (0.5, 0.470),
        (0.6, 0.802),
        (0.7, 0.975),
        (0.8, 0.9996),
    ],
)
def test_mmds_figure_3_8(s, expected):
    """b = 20 bands of r = 5 rows."""
    digits = len(str(expected).split(".")[1])
    assert round(float(s_curve(s, 20, 5)), digits) == expected


@given(st.integers(1, 64), st.integers(1, 16), st.floats(0, 1), st.floats(0, 1))
def test_s_curve_is_a_monotone_probability(bands, rows, s1, s2):
    low, high = sorted((s1, s2))
    p_low, p_high = s_curve(low, bands, rows), s_curve(high, bands, rows)
    assert 0.0 <= p_low <= p_high <= 1.0


@settings(deadline=None)  # a search over (b, r): its speed is no part of what is checked
@given(st.floats(0.05, 0.95), st.sampled_from([16, 64, 128, 256]))
def test_optimal_banding_fits_the_signature_and_the_threshold(threshold, num_perm):
    banding = optimal_banding(threshold, num_perm)
    assert banding.bands * banding.rows <= num_perm
    assert abs(banding.threshold - threshold) < 0.2


def test_weights_shift_the_curve():
    fewer_misses = optimal_banding(0.5, 128, fp_weight=0.1, fn_weight=0.9)
    fewer_false_alarms = optimal_banding(0.5, 128, fp_weight=0.9, fn_weight=0.1)
    assert fewer_misses.threshold < fewer_false_alarms.threshold
    fp1, fn1 = error_rates(0.5, fewer_misses.bands, fewer_misses.rows)
    fp2, fn2 = error_rates(0.5, fewer_false_alarms.bands, fewer_false_alarms.rows)
    assert fn1 < fn2 and fp1 > fp2


def test_optimum_beats_every_alternative_on_the_weighted_loss():
    from stream_lsh.core.banding import _areas

    best = optimal_banding(0.6, 32, 0.3, 0.7)
    pairs = [(b, r) for b in range(1, 33) for r in range(1, 32 // b + 1)]
    fp, fn = _areas(0.6, np.array([p[0] for p in pairs], float), np.array([p[1] for p in pairs], float))
    loss = dict(zip(pairs, 0.3 * fp + 0.7 * fn))
    assert loss[(best.bands, best.rows)] == min(loss.values())


@pytest.mark.parametrize("kwargs", [dict(bands=20, rows=7, num_perm=128), dict(bands=0, rows=1, num_perm=8)])
def test_bad_banding_is_refused(kwargs):
    with pytest.raises(ValueError):
        Banding(**kwargs)


@pytest.mark.parametrize("threshold", [0.0, 1.0, -0.5, 1.5])
def test_threshold_must_be_inside_the_unit_interval(threshold):
    with pytest.raises(ValueError, match="threshold"):
        optimal_banding(threshold, 128)


def test_band_keys_change_only_where_the_signature_changes():
    banding = Banding(bands=4, rows=3, num_perm=12)
    signature = np.arange(12, dtype=np.uint32)
    keys = banding.band_keys(signature)
    changed = signature.copy()
    changed[4] += 1  # row 1 of band 1
    other = banding.band_keys(changed)
    assert keys.shape == (4,) and keys.dtype == np.uint64
    assert [bool(k != o) for k, o in zip(keys, other)] == [False, True, False, False]


def test_equal_rows_in_different_bands_give_different_keys():
    banding = Banding(bands=2, rows=2, num_perm=4)
    keys = banding.band_keys(np.array([5, 5, 5, 5], dtype=np.uint32))
    assert keys[0] != keys[1]


def test_band_keys_of_a_batch_match_one_by_one():
    banding = Banding(bands=8, rows=4, num_perm=32)
    batch = np.random.default_rng(1).integers(0, 2**32, size=(5, 32), dtype=np.uint64).astype(np.uint32)
    assert np.array_equal(banding.band_keys(batch), np.stack([banding.band_keys(row) for row in batch]))
