"""Spike-preserving downsampling of a series for the browser.

TensorBoard's reservoir sampling keeps a random subset, so a single-step spike in a long run usually vanishes. Here
the series is cut into equal buckets of consecutive points and each bucket keeps its minimum, its maximum and its
first non-finite point (NaN/Inf), plus the very first and last point of the series. A spike is always the maximum
(or minimum) of its bucket, so it is always kept. At most ``max_points`` points come out.
"""

import numpy as np
from ..contract import interval

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
    """Merges interval rows ``[step, min, mean, max, count, nonfinite]`` into at most ``max_rows`` rows (an
    ``(n, 6)`` array), as ``contract.interval.merge`` does on named columns: each merged row has the last step of its
    bucket, the min of the mins, the count-weighted mean of the means, the max of the maxes and the summed counts,
    so no extreme is lost.
    """
    rows = np.asarray(rows, dtype=np.float64).reshape(-1, 6)
    if rows.shape[0] <= max_rows:
        return rows
    return interval.rows_matrix(interval.merge(interval.table_of_matrix(rows), max_rows))
