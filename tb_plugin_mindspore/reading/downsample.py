"""Spike-preserving downsampling of a series for the browser.

TensorBoard's reservoir sampling keeps a random subset, so a single-step spike in a long run usually vanishes. Here
the series is cut into equal buckets of consecutive points and each bucket keeps its minimum, its maximum and its
first non-finite point (NaN/Inf), plus the very first and last point of the series. A spike is always the maximum
(or minimum) of its bucket, so it is always kept. At most ``max_points`` points come out.
"""

import numpy as np

MIN_POINTS = 10


def keep_indices(values, max_points):
    """Sorted indices of ``values`` (1-D float array) to keep so that at most ``max_points`` remain."""
    values = np.asarray(values, dtype=np.float64)
    n = values.size
    if n <= max_points:
        return np.arange(n)
    buckets = max(1, (max_points - 2) // 3)
    size = -(-n // buckets)  # ceil
    padded = buckets * size
    finite = np.isfinite(values)
    lows = np.full(padded, np.inf)
    highs = np.full(padded, -np.inf)
    bad = np.zeros(padded, dtype=bool)
    lows[:n] = np.where(finite, values, np.inf)
    highs[:n] = np.where(finite, values, -np.inf)
    bad[:n] = ~finite
    base = np.arange(buckets) * size
    lows = lows.reshape(buckets, size)
    highs = highs.reshape(buckets, size)
    bad = bad.reshape(buckets, size)
    picks = [base + lows.argmin(axis=1), base + highs.argmax(axis=1)]
    has_bad = bad.any(axis=1)
    picks.append((base + bad.argmax(axis=1))[has_bad])
    idx = np.concatenate(picks + [np.array([0, n - 1])])
    idx = np.unique(idx[idx < n])
    return idx


def bucket_intervals(rows, max_rows):
    """Merges interval rows ``[step, min, mean, max, count, nonfinite]`` into at most ``max_rows`` rows.

    Each merged row has the last step of its bucket, the min of the mins, the count-weighted mean of the means,
    the max of the maxes and the summed counts, so no extreme is lost.
    """
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, 6)
    n = rows.shape[0]
    if n <= max_rows:
        return rows
    size = -(-n // max_rows)
    starts = np.arange(0, n, size)
    stops = np.minimum(starts + size, n)
    out = np.empty((starts.size, 6))
    with np.errstate(invalid="ignore"):
        out[:, 0] = rows[stops - 1, 0]
        out[:, 1] = np.fmin.reduceat(rows[:, 1], starts)
        out[:, 3] = np.fmax.reduceat(rows[:, 3], starts)
        counts = np.add.reduceat(rows[:, 4], starts)
        weighted = np.add.reduceat(np.nan_to_num(rows[:, 2] * rows[:, 4]), starts)
        out[:, 2] = np.where(counts > 0, weighted / np.where(counts > 0, counts, 1), np.nan)
        out[:, 4] = counts
        out[:, 5] = np.add.reduceat(rows[:, 5], starts)
    return out
