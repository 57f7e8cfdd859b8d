"""Signal detectors the health rules share: pure numpy on 1-D arrays, nothing about runs, tags or findings.

* Warm-up and finite points: :func:`warmup_points`, :func:`finite_points`, :func:`early_late`.
* Robust statistics and trends: :func:`robust_std`, :func:`rolling_median`, :func:`rolling_mean`,
  :func:`trailing_median`, :func:`max_before`, :func:`quiet_nanmedian`.
* Z-scores: :func:`ema_zscore_scan` (ZClip's EMA z-score with clipped updates).
* Episodes and ranges: :func:`episodes` (indices grouped by gap), :func:`mask_ranges` / :func:`longest_range`
  (stretches of a boolean mask).
* Envelopes and step alignment: :func:`upper_envelope` (a value or the interval max since the previous point),
  :func:`match_steps`, :func:`value_at_or_before`, :func:`intersect`, :func:`nonfinite_ranges`.
"""

import math
import warnings
from dataclasses import dataclass, field
from typing import List, Optional

import numpy as np

MIN_WARMUP = 3
# Median absolute deviation times 1.4826 estimates the standard deviation of normal data (Rousseeuw & Croux 1993).
MAD_TO_STD = 1.4826
EPS = 1e-12


# -- warm-up and finite points ------------------------------------------------------------------------------------
def warmup_points(n, wanted, minimum=MIN_WARMUP):
    """Warm-up points for a series of ``n`` points: ``wanted``, shortened to a quarter of a short series, never
    below ``minimum``."""
    return int(max(minimum, min(int(wanted), n // 4)))


def finite_points(values):
    """``(indices, values as float64)`` of the finite entries of ``values``."""
    values = np.asarray(values)
    idx = np.nonzero(np.isfinite(values))[0]
    return idx, values[idx].astype(np.float64)


def early_late(x, w):
    """``(median of the first w points, median of the last w points)`` as floats (NaN for an empty array)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return float("nan"), float("nan")
    return float(np.median(x[:w])), float(np.median(x[-w:]))


# -- robust statistics and trends --------------------------------------------------------------------------------
def robust_std(x):
    """Standard deviation estimated from the median absolute deviation: 0 for an empty array, NaN if x has NaN."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return 0.0
    return float(MAD_TO_STD * np.median(np.abs(x - np.median(x))))


def _centred_windows(x, window):
    window = max(1, int(window) | 1)
    return window, np.pad(np.asarray(x, dtype=np.float64), window // 2, mode="edge")


def rolling_median(x, window):
    """Centred rolling median over an odd ``window`` (even ones grow by one), edges padded with the end values."""
    if np.asarray(x).size == 0:
        return np.array([], dtype=np.float64)
    window, padded = _centred_windows(x, window)
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, window), axis=1)


def rolling_median_above(x, window, threshold):
    """``rolling_median(x, window) > threshold``, counted instead of sorted (O(n), no window x n copy): the median
    of an odd window is above ``threshold`` exactly when more than half of its values are, and none is NaN."""
    if np.asarray(x).size == 0:
        return np.zeros(0, dtype=bool)
    window, padded = _centred_windows(x, window)
    with np.errstate(invalid="ignore"):
        above = _window_sums(padded > threshold, window)
    nan = _window_sums(np.isnan(padded), window)
    return (above > window // 2) & (nan == 0)


def _window_sums(flags, window):
    """The number of set ``flags`` in each full window of ``window`` (``len(flags) - window + 1`` of them)."""
    c = np.concatenate(([0], np.cumsum(flags, dtype=np.int64)))
    return c[window:] - c[:-window]


def rolling_mean(x, window):
    """Centred rolling mean over an odd ``window`` (even ones grow by one), edges padded with the end values."""
    if np.asarray(x).size == 0:
        return np.array([], dtype=np.float64)
    window, padded = _centred_windows(x, window)
    return np.convolve(padded, np.ones(window) / window, mode="valid")


def trailing_median(x, window):
    """``m[i]``: median of the ``window`` points before ``i`` (before the start, ``x[0]`` stands in)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.array([], dtype=np.float64)
    window = max(1, int(window))
    padded = np.concatenate([np.full(window, x[0]), x])
    return np.median(np.lib.stride_tricks.sliding_window_view(padded, window)[:x.size], axis=1)


def max_before(x):
    """``m[i]``: the largest of ``x[:i]`` (``-inf`` for ``i = 0``)."""
    x = np.asarray(x, dtype=np.float64)
    if x.size == 0:
        return np.array([], dtype=np.float64)
    return np.concatenate([[-np.inf], np.maximum.accumulate(x)[:-1]])


def quiet_nanmedian(values, axis=None):
    """``np.nanmedian`` without its warning for all-NaN slices (they become NaN)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with np.errstate(all="ignore"):
            return np.nanmedian(values, axis=axis)


# -- z-scores -----------------------------------------------------------------------------------------------------
@dataclass
class ZScoreScan:
    """What :func:`ema_zscore_scan` found: anomalous indices, those above the running-max ratio, the worst one."""

    anomalies: List[int] = field(default_factory=list)
    hard: List[int] = field(default_factory=list)
    peak: Optional[int] = None       # the anomaly with the largest ratio to the EMA mean
    peak_ratio: float = 0.0


def ema_zscore_scan(x, warmup, alpha, z_thresh, min_ratio, max_ratio):
    """Scans ``x[warmup:]`` against an EMA mean / variance seeded on ``x[:warmup]`` (ZClip, Kumar et al. 2025).

    A point is an anomaly when its z-score exceeds ``z_thresh`` and it is above ``min_ratio`` times the mean, or
    when it is ``max_ratio`` times the running max (a *hard* anomaly). Anomalies enter the EMA clipped to
    ``mean + z_thresh * sd``, so one spike does not mask the next.
    """
    x = np.asarray(x, dtype=np.float64)
    scan = ZScoreScan()
    if x.size == 0 or warmup <= 0:
        return scan
    mu, var = float(np.mean(x[:warmup])), float(np.var(x[:warmup]))
    running_max = float(np.max(x[:warmup]))
    for i in range(int(warmup), x.size):
        v = float(x[i])
        sd = math.sqrt(max(var, 0.0)) + EPS
        is_z = (v - mu) / sd > z_thresh and v > min_ratio * mu
        is_hard = v / max(running_max, EPS) >= max_ratio
        if is_z or is_hard:
            scan.anomalies.append(i)
            if is_hard:
                scan.hard.append(i)
            ratio = v / max(mu, EPS)
            if ratio > scan.peak_ratio:
                scan.peak_ratio, scan.peak = ratio, i
            v = mu + z_thresh * sd
        mu = alpha * mu + (1 - alpha) * v
        var = alpha * var + (1 - alpha) * (v - mu) ** 2
        running_max = max(running_max, float(x[i]))
    return scan


# -- episodes and ranges ------------------------------------------------------------------------------------------
def episodes(indices, max_gap):
    """Sorted ``indices`` grouped into episodes: a new one starts after a gap larger than ``max_gap``."""
    groups, current = [], []
    for i in indices:
        if current and i - current[-1] > max_gap:
            groups.append(current)
            current = []
        current.append(i)
    if current:
        groups.append(current)
    return groups


def mask_ranges(mask):
    """``[(start, stop)]`` half-open ranges of the consecutive True entries of a boolean ``mask``."""
    mask = np.asarray(mask, dtype=bool).reshape(-1)
    edges = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.nonzero(edges == 1)[0].tolist(), np.nonzero(edges == -1)[0].tolist()))


def longest_range(mask):
    """The longest ``(start, stop)`` of :func:`mask_ranges` (the first of equals), ``(0, 0)`` if none."""
    best = (0, 0)
    for lo, hi in mask_ranges(mask):
        if hi - lo > best[1] - best[0]:
            best = (lo, hi)
    return best


# -- envelopes and step alignment ---------------------------------------------------------------------------------
# A scalar is stored as float32 (TensorBoard's simple_value) and an interval row may be float64: an interval max
# within float32's rounding of the value is the value itself, not a step between two points.
FLOAT32_RTOL = 1e-6


def upper_envelope(values, interval_max=None):
    """Per point, the largest value seen since the previous point: ``max(value, interval max)``, NaN where neither
    is finite. Returns ``(upper, from_interval)``; ``from_interval[i]``: the interval max exceeded the value (by more
    than float32's rounding)."""
    values = np.asarray(values, dtype=np.float64)
    upper = np.where(np.isfinite(values), values, np.nan)
    from_interval = np.zeros(values.size, dtype=bool)
    if interval_max is not None:
        imax = np.asarray(interval_max, dtype=np.float64)
        imax = np.where(np.isfinite(imax), imax, np.nan)
        with np.errstate(invalid="ignore"):
            level = np.nan_to_num(upper, nan=-np.inf)
            from_interval = np.isfinite(imax) & ~(imax <= level + FLOAT32_RTOL * np.abs(level))
        upper = np.fmax(upper, imax)
    return upper, from_interval


def match_steps(source_steps, steps):
    """``(k, hit)``: for each of ``steps``, an index into the sorted ``source_steps`` and whether it is the same
    step there. ``source_steps`` must not be empty."""
    source_steps = np.asarray(source_steps)
    k = np.clip(np.searchsorted(source_steps, steps), 0, source_steps.size - 1)
    return k, source_steps[k] == steps


def value_at_or_before(steps, values, query):
    """Values at the last of the sorted ``steps`` at or before each of ``query`` (NaN before the first)."""
    pos = np.searchsorted(steps, query, side="right") - 1
    out = np.full(len(query), np.nan)
    ok = pos >= 0
    out[ok] = np.asarray(values)[pos[ok]]
    return out


def intersect(steps_a, values_a, steps_b, values_b):
    """``(common steps, values of a there, values of b there)`` (steps as in ``np.intersect1d``)."""
    common, ia, ib = np.intersect1d(steps_a, steps_b, return_indices=True)
    return common, np.asarray(values_a)[ia], np.asarray(values_b)[ib]


def nonfinite_ranges(steps, values, interval_nonfinite=None, interval_count=None):
    """``([(first, last)], count)``: step ranges known to hold a NaN/Inf, in step order, and how many there were.

    Without interval statistics each non-finite value is one range (a step written twice counts once). With them
    (aligned to ``steps``), a point whose interval saw a NaN/Inf covers the ``count`` steps up to it.
    """
    steps = np.asarray(steps).astype(np.int64)
    bad_value = ~np.isfinite(np.asarray(values, dtype=np.float64))
    if interval_nonfinite is None:
        bad = np.nonzero(bad_value)[0]
        return [(int(steps[i]), int(steps[i])) for i in bad], int(np.unique(steps[bad]).size)
    nonfinite = np.asarray(interval_nonfinite, dtype=np.float64)
    counts = np.asarray(interval_count, dtype=np.float64)
    in_interval = nonfinite > 0
    span = np.where(counts >= 1, counts, 1).astype(np.int64)
    lo = np.where(in_interval, steps - span + 1, steps)
    bad = np.nonzero(in_interval | bad_value)[0]
    count = int(np.sum(nonfinite[in_interval])) + int(np.count_nonzero(bad_value & ~in_interval))
    return [(int(lo[i]), int(steps[i])) for i in bad], count
