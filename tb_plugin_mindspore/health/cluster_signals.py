"""The maths of the cluster rules, pure numpy: stragglers, diverging ranks, ranks that stopped, memory growth.

Inputs are ranks x recorded-steps matrices aligned on one step axis (``reading.cluster.ClusterData.aligned``) with a
``present`` mask (False where a rank wrote no row at that step). Outputs are plain dicts the rules turn into
findings and the callbacks into live events. Sources:

* Slow rank: Ascend's cluster analysis flags a slow rank when ``(max - min) / mean`` of the ranks' step (or
  communication) time exceeds 5 % (MindStudio Insight / msprof-analyze "slow rank" advice); here each rank is
  compared with the median of all ranks at the same step, and named when it is >= 5 % above it in most of a window of
  recorded points, so one noisy point does not name a rank.
* Diverging rank: a robust z-score across ranks at each step (median and MAD, scaled by 1.4826 to a normal standard
  deviation; Iglewicz & Hoaglin's modified z-score flags |z| > 3.5, we ask more, 6, since ranks' local batches
  differ), plus a relative departure floor, sustained over most of a window.
* Memory growth: the Theil-Sen slope (median of pairwise slopes) of the memory after the warm-up, with most of the
  steps going up: a leak grows steadily, a cache fills and stops.
"""

import functools
import warnings

import numpy as np

MAD_SCALE = 1.4826


def _rolling_fraction(flags, window):
    """Per row: the fraction of ``flags`` set in each full window of ``window`` columns, indexed by the window's
    last column (columns before the first full window are 0)."""
    c = np.zeros((flags.shape[0], flags.shape[1] + 1), dtype=np.int32)
    np.cumsum(flags, axis=1, out=c[:, 1:])
    frac = np.zeros(flags.shape, dtype=np.float32)
    if flags.shape[1] >= window:
        frac[:, window - 1:] = (c[:, window:] - c[:, :-window]) / np.float32(window)
    return frac


def _first_sustained(frac, enough, window):
    """Per row: the first column where the rolling fraction reaches ``enough`` over a full window, else -1."""
    ok = frac >= enough
    ok[:, :window - 1] = False
    any_ok = ok.any(axis=1)
    return np.where(any_ok, ok.argmax(axis=1), -1)


def column_median(values, present):
    """Median over ranks (rows) of each column's present, finite values (NaN where there are none). The columns
    are made contiguous and partitioned (NaN goes last), one pass for all columns, which is what makes 1,024 ranks
    x thousands of steps take a fraction of a second (numpy's nanmedian walks the columns one by one)."""
    x = np.where(present & np.isfinite(values), values, np.nan).astype(np.float32).T.copy()
    n = np.count_nonzero(~np.isnan(x), axis=1)
    if not x.size:
        return np.full(x.shape[0], np.nan)
    lo = np.clip((n - 1) // 2, 0, None)
    hi = np.clip(n // 2, 0, None)
    if n.min() == n.max():
        x.partition(sorted({int(lo[0]), int(hi[0])}), axis=1)
    else:
        x.sort(axis=1)
    rows = np.arange(x.shape[0])
    med = (x[rows, lo].astype(np.float64) + x[rows, hi]) / 2.0
    med[n == 0] = np.nan
    return med


def stragglers(step_time, present, wait=None, wait_present=None, window=5, threshold=0.05, enough=0.8,
               min_ranks=3):
    """Ranks whose step time is >= ``threshold`` above the ranks' median in at least ``enough`` of a window of
    ``window`` recorded points.

    Returns ``[{"row", "first_col", "last_col", "ratio", "excess_ms", "wait_excess_ms", "cause", "spread"}]``:
    ``ratio`` the median of the rank's time over the median rank's in its slow columns, ``cause`` "data wait" when
    at least half of the excess is data wait (``wait``: the data-wait matrix), else "compute"; ``spread`` Ascend's
    ``(max - min) / mean`` over ranks, median over those columns."""
    t = np.asarray(step_time, dtype=np.float64)
    ok = present & np.isfinite(t) & (t > 0)
    counts = ok.sum(axis=0)
    cols = counts >= min_ranks
    if t.shape[0] < min_ranks or cols.sum() < window:
        return []
    t, ok = t[:, cols], ok[:, cols]
    col_index = np.nonzero(cols)[0]
    med = column_median(t, ok)
    with np.errstate(all="ignore"):
        ratio = t / med
    slow = ok & (ratio >= 1.0 + threshold)
    frac = _rolling_fraction(slow, window)
    first = _first_sustained(frac, enough, window)
    out = []
    if wait is not None:
        w = np.asarray(wait, dtype=np.float64)[:, cols]
        wok = (wait_present[:, cols] if wait_present is not None else np.isfinite(w)) & np.isfinite(w)
        wmed = column_median(w, wok)
    for row in np.nonzero(first >= 0)[0]:
        start = max(0, first[row] - window + 1)
        sel = np.nonzero(slow[row, start:])[0] + start
        excess = float(np.median(t[row, sel] - med[sel]))
        wait_excess = None
        cause = "compute"
        if wait is not None:
            wsel = sel[wok[row, sel]]
            if wsel.size:
                wait_excess = float(np.median(w[row, wsel] - wmed[wsel]))
                if wait_excess >= 0.5 * excess:
                    cause = "data wait"
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            tt = np.where(ok[:, sel], t[:, sel], np.nan)
            spread = float(np.nanmedian((np.nanmax(tt, axis=0) - np.nanmin(tt, axis=0)) / np.nanmean(tt, axis=0)))
        out.append({"row": int(row), "first_col": int(col_index[sel[0]]), "last_col": int(col_index[sel[-1]]),
                    "ratio": float(np.median(ratio[row, sel])), "excess_ms": excess, "wait_excess_ms": wait_excess,
                    "cause": cause, "spread": spread})
    return out


def divergent(values, present, window=5, z=6.0, min_rel=0.2, enough=0.6, min_ranks=3, log=False):
    """Ranks whose value departs from the other ranks' at the same steps, in at least ``enough`` of a window.

    A departure: robust z-score ``|x - median| / (1.4826 MAD)`` above ``z`` and ``|x - median| / |median|`` above
    ``min_rel``; a non-finite value where the ranks' median is finite departs too. ``log``: compare log10 values
    (gradient norms). Returns ``[{"row", "first_col", "last_col", "value", "median", "nonfinite": bool}]``."""
    x = np.asarray(values, dtype=np.float64)
    ok = present.copy()
    counts = (ok & np.isfinite(x)).sum(axis=0)
    cols = counts >= min_ranks
    if x.shape[0] < min_ranks or cols.sum() < window:
        return []
    x, ok = x[:, cols], ok[:, cols]
    col_index = np.nonzero(cols)[0]
    with np.errstate(all="ignore"):
        y = np.log10(np.where(x > 0, x, np.nan)) if log else x
        fin = ok & np.isfinite(y)
        med = column_median(y, fin)
        mad = column_median(np.abs(y - med), fin)
        raw_med = column_median(x, ok & np.isfinite(x)) if log else med
        robust = np.abs(y - med) / (MAD_SCALE * mad + 1e-12)
        rel = np.abs(x - raw_med) / np.maximum(np.abs(raw_med), 1e-12)
    depart = fin & (robust > z) & (rel > min_rel)
    nonfinite = ok & ~np.isfinite(x) & np.isfinite(raw_med)
    depart |= nonfinite
    frac = _rolling_fraction(depart, window)
    first = _first_sustained(frac, enough, window)
    out = []
    for row in np.nonzero(first >= 0)[0]:
        start = max(0, first[row] - window + 1)
        sel = np.nonzero(depart[row, start:])[0] + start
        out.append({"row": int(row), "first_col": int(col_index[sel[0]]), "last_col": int(col_index[sel[-1]]),
                    "value": float(np.median(x[row, sel])), "median": float(np.median(raw_med[sel])),
                    "nonfinite": bool(nonfinite[row, sel].any())})
    return out


def stopped(last_cols, n_cols, min_behind=2):
    """Rows whose last recorded column is at least ``min_behind`` columns before the newest any rank reached, while
    at least two ranks (or half of them) reached it. ``last_cols``: per row the index of its last column (-1: none)."""
    last = np.asarray(last_cols, dtype=np.int64)
    if last.size < 2 or n_cols == 0:
        return []
    newest = int(last.max())
    ahead = int((last >= newest - min_behind + 1).sum())
    if ahead < max(2, (last.size + 1) // 2) and ahead < last.size - 1:
        return []
    return [int(r) for r in np.nonzero((last >= 0) & (last <= newest - min_behind))[0]]


def theil_sen(x, y, max_points=100):
    """Median of pairwise slopes (at most ``max_points`` evenly spaced points are paired)."""
    x, y = np.asarray(x), np.asarray(y)
    idx = _sample(x.size, max_points)
    if idx is not None:     # the points first, then float64: no copy of a long series
        x, y = x[idx], y[idx]
    x, y = x.astype(np.float64), y.astype(np.float64)
    i, j = np.triu_indices(x.size, 1)
    dx = x[j] - x[i]
    keep = dx > 0
    if not keep.any():
        return 0.0
    return float(np.median((y[j] - y[i])[keep] / dx[keep]))


def memory_growth(steps, values, warmup=0.3, min_points=8, min_growth=0.1, min_mb=64.0, rising=0.6):
    """Steady growth of a memory series after the first ``warmup`` share of its points: the Theil-Sen slope is
    positive, the memory grew by at least ``min_growth`` of its level and ``min_mb`` MB, and at least ``rising`` of
    the non-zero changes between points go up. Returns ``{"first_step", "last_step", "start_mb", "end_mb",
    "mb_per_1000_steps"}`` or None."""
    # The series is read in its own dtype (no float64 copy of every point) and the cheap tests come first: the
    # answer is the same as testing in any order, since every test must pass. A difference of two floats of one
    # dtype has the sign, and is zero exactly when, their float64 difference has and is.
    s, v = _after_warmup(steps, values, warmup)
    if s.size < min_points:
        return None
    return _growth(s, v, theil_sen(s, v), min_growth, min_mb, rising)


def _after_warmup(steps, values, warmup, nonfinite=None):
    """``(steps, values)`` of the finite values after the first ``warmup`` share of them (views where nothing is
    left out; ``nonfinite=0``: the caller knows every value is finite)."""
    s, v = np.asarray(steps), np.asarray(values)
    if not np.issubdtype(v.dtype, np.floating):
        v = v.astype(np.float64)
    if nonfinite != 0:
        keep = np.isfinite(v)
        if not keep.all():
            s, v = s[keep], v[keep]
    start = int(np.ceil(s.size * warmup))
    return s[start:], v[start:]


@functools.lru_cache(maxsize=64)
def _sample(n, max_points=100):
    """The indices :func:`theil_sen` pairs for ``n`` points (None: all; read-only, shared)."""
    if n <= max_points:
        return None
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
    idx.flags.writeable = False
    return idx


def memory_growth_many(columns, warmup=0.3, min_points=8, min_growth=0.1, min_mb=64.0, rising=0.6):
    """``[memory_growth(steps, values, ...) or None]`` for ``columns`` ``[(steps, values, nonfinite) or None]``
    (``nonfinite``: how many values are NaN or infinite when known, 0 skips looking; None: look), the same answers
    as one call each: the Theil-Sen slopes of the series that share their sampled steps are worked out together
    (what 1,024 ranks x 100,000 rows cost is then one matrix of pairwise slopes, not 1,024 loops)."""
    out = [None] * len(columns)
    groups = {}
    for i, column in enumerate(columns):
        if column is None or column[2] == np.size(column[1]):
            continue        # no finite value
        s, v = _after_warmup(column[0], column[1], warmup, column[2])
        if s.size < min_points:
            continue
        idx = _sample(s.size)
        xs = (s if idx is None else s[idx]).astype(np.float64)
        groups.setdefault((s.size, xs.tobytes()), []).append((i, s, v, xs, idx))
    for members in groups.values():
        xs = members[0][3]
        i_, j_ = np.triu_indices(xs.size, 1)
        dx = xs[j_] - xs[i_]
        keep = dx > 0
        if not keep.any():
            for i, s, v, _, _ in members:
                out[i] = _growth(s, v, 0.0, min_growth, min_mb, rising)
            continue
        ys = np.stack([(v if idx is None else v[idx]).astype(np.float64) for _, _, v, _, idx in members])
        pairs = (ys[:, j_] - ys[:, i_]) / dx if keep.all() else (ys[:, j_] - ys[:, i_])[:, keep] / dx[keep]
        # A series grows by min_mb only if its slope (the median of its pairwise slopes) reaches min_mb / its span,
        # so at least half of its pairwise slopes do: those that do not are left out before any median is taken
        # (a hair below that line, so that rounding cannot leave out one that _growth would find).
        spans = np.array([float(s[-1]) - float(s[0]) for _, s, _, _, _ in members])
        with np.errstate(divide="ignore", invalid="ignore"):
            line = np.where(spans > 0, min_mb / spans, np.inf) * (1 - 1e-9) if min_mb > 0 else None
        if line is not None:
            can = 2 * np.count_nonzero(pairs >= line[:, None], axis=1) >= pairs.shape[1]
        else:
            can = np.ones(len(members), dtype=bool)
        slopes = np.full(len(members), np.nan)
        if can.any():
            slopes[can] = np.median(pairs[can], axis=1)
        for (i, s, v, _, _), slope, ok in zip(members, slopes, can):
            out[i] = _growth(s, v, float(slope), min_growth, min_mb, rising) if ok else None
    return out


def _growth(s, v, slope, min_growth, min_mb, rising):
    """The rest of :func:`memory_growth` once the slope of ``s``, ``v`` (after the warm-up) is known."""
    if slope <= 0:
        return None
    grown = slope * (float(s[-1]) - float(s[0]))
    if grown < min_mb:
        return None
    d = np.diff(v)
    d = d[d != 0]
    if not d.size or float((d > 0).mean()) < rising:
        return None
    level = float(np.median(np.asarray(v[: max(1, v.size // 4)], dtype=np.float64)))
    if grown < min_growth * max(level, 1e-9):
        return None
    return {"first_step": int(s[0]), "last_step": int(s[-1]), "start_mb": float(v[0]), "end_mb": float(v[-1]),
            "mb_per_1000_steps": slope * 1000.0}


def near_limit(steps, used, limit, fraction=0.9, growth=None):
    """Device memory within ``fraction`` of its ``limit`` (or, with ``growth`` from :func:`memory_growth`, on course
    to reach the limit): ``{"step", "used_mb", "limit_mb", "share", "steps_left"}`` or None."""
    s, u = np.asarray(steps, dtype=np.float64), np.asarray(used, dtype=np.float64)
    keep = np.isfinite(u)
    if not keep.any() or not np.isfinite(limit) or limit <= 0:
        return None
    s, u = s[keep], u[keep]
    peak = int(np.argmax(u))
    share = float(u[peak] / limit)
    steps_left = None
    if growth is not None and growth["mb_per_1000_steps"] > 0:
        steps_left = float((limit - u[-1]) / growth["mb_per_1000_steps"] * 1000.0)
    if share < fraction and (steps_left is None or steps_left > max(1.0, s[-1] - s[0])):
        return None
    return {"step": int(s[peak]), "used_mb": float(u[peak]), "limit_mb": float(limit), "share": share,
            "steps_left": steps_left}
