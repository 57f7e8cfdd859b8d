"""The health rules' signal detectors on plain arrays: typical input, and the edge cases (empty, a single point,
constant, NaN)."""

import warnings

import numpy as np
import pytest

from tb_plugin_mindspore.health import detectors as d

NAN, INF = float("nan"), float("inf")


def _same(a, b):
    np.testing.assert_array_equal(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))


# -- warm-up and finite points ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("n, wanted, expected", [(0, 25, 3), (1, 25, 3), (40, 25, 10), (200, 25, 25), (200, 1, 3)])
def test_warmup_points(n, wanted, expected):
    assert d.warmup_points(n, wanted) == expected


def test_finite_points():
    idx, x = d.finite_points([1.0, NAN, INF, -2.0, -INF])
    assert idx.tolist() == [0, 3] and x.tolist() == [1.0, -2.0] and x.dtype == np.float64
    for values in ([], [NAN], [NAN, INF]):
        idx, x = d.finite_points(values)
        assert idx.size == 0 and x.size == 0
    assert d.finite_points(np.float32([5]))[1].tolist() == [5.0]


def test_early_late():
    assert d.early_late([1, 2, 3, 10, 20, 30], 3) == (2.0, 20.0)
    assert d.early_late([4.0], 3) == (4.0, 4.0)
    assert d.early_late(np.full(9, 7.0), 2) == (7.0, 7.0)
    assert all(np.isnan(v) for v in d.early_late([], 2))


# -- robust statistics and trends -------------------------------------------------------------------------------------
def test_robust_std_estimates_the_standard_deviation_and_ignores_outliers():
    x = np.random.default_rng(0).normal(0.0, 2.0, 20001)
    assert d.robust_std(x) == pytest.approx(2.0, rel=0.03)
    x[::100] = 1e9                                    # 1% of wild values
    assert d.robust_std(x) == pytest.approx(2.0, rel=0.05)


@pytest.mark.parametrize("values, expected", [([], 0.0), ([3.0], 0.0), ([5.0] * 10, 0.0)])
def test_robust_std_edges(values, expected):
    assert d.robust_std(values) == expected


def test_robust_std_of_nan_is_nan():
    assert np.isnan(d.robust_std([1.0, NAN, 2.0]))


@pytest.mark.parametrize("fn", [d.rolling_median, d.rolling_mean])
def test_rolling_edges(fn):
    assert fn([], 5).size == 0
    _same(fn([4.0], 5), [4.0])
    np.testing.assert_allclose(fn(np.full(7, 2.5), 3), np.full(7, 2.5))
    x = np.arange(10.0)
    assert fn(x, 4).size == 10 and fn(x, 0).tolist() == x.tolist()   # even windows grow, 0 is no smoothing


def test_rolling_median_removes_a_single_spike_and_rolling_mean_spreads_it():
    x = np.ones(9)
    x[4] = 100.0
    _same(d.rolling_median(x, 3), np.ones(9))
    m = d.rolling_mean(x, 3)
    np.testing.assert_allclose(m[3:6], 34.0)
    assert m[0] == 1.0


def test_rolling_mean_keeps_a_line_and_pads_edges_with_the_end_values():
    x = np.arange(10.0)
    m = d.rolling_mean(x, 5)
    np.testing.assert_allclose(m[2:-2], x[2:-2])
    assert m[0] == pytest.approx((0 + 0 + 0 + 1 + 2) / 5)


def test_trailing_median_is_the_median_of_the_points_before():
    x = np.random.default_rng(1).normal(size=30)
    m = d.trailing_median(x, 4)
    for i in range(4, 30):
        assert m[i] == pytest.approx(np.median(x[i - 4:i]))
    assert m[0] == x[0] and m[1] == pytest.approx(np.median([x[0]] * 3 + [x[0]]))
    assert d.trailing_median([], 3).size == 0
    _same(d.trailing_median([6.0], 3), [6.0])


def test_max_before():
    _same(d.max_before([1.0, 3.0, 2.0, 5.0]), [-INF, 1.0, 3.0, 3.0])
    _same(d.max_before([2.0]), [-INF])
    assert d.max_before([]).size == 0
    _same(d.max_before([1.0, NAN, 2.0]), [-INF, 1.0, NAN])     # NaN propagates: callers pass finite points


def test_quiet_nanmedian_turns_all_nan_slices_into_nan_without_a_warning():
    m = np.array([[1.0, NAN], [3.0, NAN]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = d.quiet_nanmedian(m, axis=0)
    assert out[0] == 2.0 and np.isnan(out[1])


# -- z-scores ---------------------------------------------------------------------------------------------------------
def _steady(n=100, seed=0):
    return 1.0 + np.random.default_rng(seed).normal(0, 0.05, n)


def test_ema_zscore_scan_finds_a_persistent_spike():
    x = _steady()
    x[60:62] = 5.0
    scan = d.ema_zscore_scan(x, 25, 0.97, 2.5, 2.0, 10.0)
    assert scan.anomalies == [60, 61] and scan.hard == [] and scan.peak in (60, 61)
    assert scan.peak_ratio == pytest.approx(5.0, rel=0.1)


def test_ema_zscore_scan_clips_anomalies_so_the_next_is_still_seen():
    x = _steady()
    x[50:56] = 6.0                   # six in a row: an unclipped EMA would absorb the later ones
    assert d.ema_zscore_scan(x, 25, 0.97, 2.5, 2.0, 10.0).anomalies == list(range(50, 56))


def test_ema_zscore_scan_hard_anomaly_by_ratio_to_the_running_max():
    x = _steady()
    x[70] = 40.0
    scan = d.ema_zscore_scan(x, 25, 0.97, 2.5, 2.0, 10.0)
    assert scan.hard == [70] and scan.peak == 70


@pytest.mark.parametrize("x", [[], [1.0], np.full(50, 3.0), np.full(50, 0.0)])
def test_ema_zscore_scan_quiet_on_empty_single_and_constant(x):
    scan = d.ema_zscore_scan(x, 3, 0.97, 2.5, 2.0, 10.0)
    assert scan.anomalies == [] and scan.peak is None and scan.peak_ratio == 0.0


def test_ema_zscore_scan_nan_in_warmup_finds_nothing_and_does_not_raise():
    x = _steady(40)
    x[1] = NAN
    assert d.ema_zscore_scan(x, 5, 0.97, 2.5, 2.0, 10.0).anomalies == []


# -- episodes and ranges ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("indices, gap, expected", [
    ([], 5, []), ([7], 5, [[7]]), ([1, 2, 8, 9], 5, [[1, 2], [8, 9]]), ([1, 6, 11], 5, [[1, 6, 11]]),
    ([1, 2, 3], 0, [[1], [2], [3]]),
])
def test_episodes(indices, gap, expected):
    assert d.episodes(indices, gap) == expected


@pytest.mark.parametrize("mask, ranges, longest", [
    ([], [], (0, 0)), ([False] * 4, [], (0, 0)), ([True], [(0, 1)], (0, 1)), ([True] * 3, [(0, 3)], (0, 3)),
    ([True, False, True, True], [(0, 1), (2, 4)], (2, 4)),
    ([True, True, False, True, True], [(0, 2), (3, 5)], (0, 2)),     # equals: the first
])
def test_mask_ranges_and_longest(mask, ranges, longest):
    assert d.mask_ranges(mask) == ranges
    assert d.longest_range(mask) == longest


# -- envelopes and step alignment -------------------------------------------------------------------------------------
def test_upper_envelope_without_intervals():
    upper, from_interval = d.upper_envelope([1.0, NAN, INF, 3.0])
    _same(upper, [1.0, NAN, NAN, 3.0])
    assert not from_interval.any()
    upper, from_interval = d.upper_envelope([])
    assert upper.size == 0 and from_interval.size == 0


def test_upper_envelope_takes_the_interval_max_where_it_is_larger():
    upper, from_interval = d.upper_envelope([1.0, 2.0, NAN, 4.0, NAN], [5.0, 1.0, 3.0, NAN, NAN])
    _same(upper, [5.0, 2.0, 3.0, 4.0, NAN])
    assert from_interval.tolist() == [True, False, True, False, False]
    _same(d.upper_envelope([2.0], [2.0])[0], [2.0])          # equal: the recorded value, not the interval
    assert not d.upper_envelope([2.0], [2.0])[1][0]


def test_match_steps():
    k, hit = d.match_steps(np.array([10, 20, 30]), np.array([5, 10, 25, 30, 40]))
    assert hit.tolist() == [False, True, False, True, False]
    assert k[hit].tolist() == [0, 2]
    k, hit = d.match_steps(np.array([7]), np.array([7]))
    assert hit.tolist() == [True]


def test_value_at_or_before():
    _same(d.value_at_or_before([10, 20], [1.0, 2.0], [5, 10, 15, 20, 99]), [NAN, 1.0, 1.0, 2.0, 2.0])
    assert d.value_at_or_before([10], [1.0], []).size == 0
    _same(d.value_at_or_before([], [], [3]), [NAN])


def test_intersect():
    steps, a, b = d.intersect([1, 2, 3], [10.0, 20.0, 30.0], [2, 3, 4], [0.2, 0.3, 0.4])
    assert steps.tolist() == [2, 3] and a.tolist() == [20.0, 30.0] and b.tolist() == [0.2, 0.3]
    assert d.intersect([], [], [1], [1.0])[0].size == 0


def test_nonfinite_ranges_from_values():
    ranges, count = d.nonfinite_ranges([1, 2, 3, 3, 4], [0.0, NAN, INF, INF, 1.0])
    assert ranges == [(2, 2), (3, 3), (3, 3)] and count == 2     # step 3 written twice counts once
    assert d.nonfinite_ranges([], []) == ([], 0)
    assert d.nonfinite_ranges([5], [1.0]) == ([], 0)


def test_nonfinite_ranges_from_interval_statistics():
    steps, values = [10, 20, 30], [1.0, 1.0, NAN]
    ranges, count = d.nonfinite_ranges(steps, values, interval_nonfinite=[0, 2, 0], interval_count=[10, 10, 0])
    assert ranges == [(11, 20), (30, 30)] and count == 3      # 2 in the interval up to 20, the NaN value at 30


def test_rolling_median_above_is_the_rolling_median_compared():
    """Counted, not sorted (step_time_regression over 100,000 points: no 100,000 x 51 copy), with the same answer
    as the rolling median compared, NaN, ties at the threshold, even windows and edges included."""
    rs = np.random.RandomState(3)
    for n in (1, 2, 5, 50, 1001):
        for window in (1, 3, 4, 9, 51):
            x = rs.choice([1.0, 1.5, 2.0, 3.0], size=n)
            x[rs.rand(n) < 0.02] = np.nan
            for t in (0.5, 1.5, 2.0, 2.5):
                np.testing.assert_array_equal(d.rolling_median_above(x, window, t), d.rolling_median(x, window) > t)
    assert d.rolling_median_above(np.array([]), 5, 1.0).size == 0
