"""The one builder of scalar answers (the ``scalars`` and ``scalars_batch`` routes), over one series' final timeline.

A series is a ``sources.timeline.Timeline`` wherever it was read (``Sources.series``): the final timeline's steps,
wall times and values, its min/max pyramid, its restarts and superseded points, its interval band. :func:`body`
answers any step window of it (``x_min`` / ``x_max``, default the whole series) on ``width`` pixel columns with the
M4 points of each column (first, last, min, max, first NaN/Inf), so every spike and NaN of the window is in the
answer; the interval band is the rows of the window merged into at most ``max_points`` rows (min of the mins, max of
the maxes).
"""

import collections

import numpy as np

from .. import metadata
from ..contract import interval as interval_contract
from ..contract import vocabulary
from ..sources import pyramid
from ..sources.timeline import Superseded, Timeline, from_points  # noqa: F401  (the answer's input)
from . import encode

Window = collections.namedtuple("Window", "x_min x_max width")
Window.__new__.__defaults__ = (None, None, None)


def columns_for(max_points, width=None):
    """Pixel columns of an answer of at most ``max_points`` points (5 a column at most, plus one on each side)."""
    most = max(1, (int(max_points) - 2) // 5)
    return most if width is None else max(1, min(int(width), most))


def _window_of(steps, window):
    lo = window.x_min if window.x_min is not None else (int(steps[0]) if steps.size else 0)
    hi = window.x_max if window.x_max is not None else (int(steps[-1]) if steps.size else 0)
    return lo, max(lo, hi)


def _points(steps, walls, values, keep, rounded):
    if rounded:
        return [list(p) for p in zip(steps[keep].tolist(), encode.round_list(walls[keep], 3),
                                     encode.json_significant(values[keep], 7))]
    return [list(p) for p in zip(steps[keep].tolist(), encode.json_numbers(walls[keep]),
                                 encode.json_numbers(np.asarray(values[keep], dtype=np.float64)))]


def _interval_rows(band, lo, hi, max_points):
    """The interval rows ``[[step, min, mean, max, count, nonfinite]]`` inside ``[lo, hi]`` (with the row on each side
    of the window), consecutive rows merged into at most ``max_points`` rows as ``contract.interval.merge`` merges
    them (last step, min of the mins, count-weighted mean, max of the maxes, summed counts), computed on the stored
    columns without copying the window; None without rows."""
    if band is None or not band.steps.size:
        return None
    steps = band.steps
    i0 = max(int(pyramid.search(steps, lo, "left")) - 1, 0)
    i1 = min(int(pyramid.search(steps, hi, "right")) + 1, steps.size)
    k = i1 - i0
    if k <= 0:
        return None
    size = -(-k // max_points)
    starts = np.arange(0, k, size)
    stops = np.minimum(starts + size, k)
    lows, means, highs = band.min[i0:i1], band.mean[i0:i1], band.max[i0:i1]
    count, bad = band.count[i0:i1], band.nonfinite[i0:i1]
    with np.errstate(invalid="ignore"):
        if size == 1:
            merged = (steps[i0:i1], lows, means, highs, count, bad)
        else:
            counts = np.add.reduceat(count, starts, dtype=np.float64)
            weighted = means * count
            weighted[np.isnan(weighted)] = 0   # an interval without finite values has no mean
            weighted = np.add.reduceat(weighted, starts, dtype=np.float64)
            merged = (steps[i0:i1][stops - 1], np.fmin.reduceat(lows, starts),
                      np.where(counts > 0, weighted / np.where(counts > 0, counts, 1), np.nan),
                      np.fmax.reduceat(highs, starts), counts, np.add.reduceat(bad, starts, dtype=np.float64))
    return encode.interval_rows(interval_contract.IntervalTable(*merged))


def body(run, tag, series, max_points, window=None, with_superseded=False, rounded=False):
    """The scalars answer of one series as JSON-safe data.

    ``series``: a :class:`Timeline` (its ``band``, sorted by step, or None, gives the answer's ``interval``);
    ``window``: a :class:`Window` (None: the whole series on ``columns_for(max_points)`` columns);
    ``with_superseded``: add the superseded points in the window (``"superseded"``); ``rounded``: values to 7
    significant digits and wall times to the millisecond (``scalars_batch``)."""
    window = window or Window()
    steps = series.steps
    n = int(steps.size)
    lo, hi = _window_of(steps, window)
    width = columns_for(max_points, window.width)
    keep = pyramid.m4_indices(steps, series.values, series.pyramid, lo, hi, width) if n else np.zeros(0, np.int64)
    inside = int(pyramid.search(steps, hi, "right") - pyramid.search(steps, lo, "left")) if n else 0
    shown = int(((steps[keep] >= lo) & (steps[keep] <= hi)).sum()) if keep.size else 0
    out = {
        "run": run,
        "tag": tag,
        "tier": vocabulary.tier_of(tag),
        "display_name": metadata.display_name(tag),
        "total_points": n,
        "downsampled": bool(shown < inside),
        "points": _points(steps, series.walls, series.values, keep, rounded),
        "interval": _interval_rows(series.band, lo, hi, max_points),
        "restarts": series.restarts,
    }
    if window.x_min is not None or window.x_max is not None or window.width is not None:
        out["window"] = {"x_min": lo, "x_max": hi, "width": width, "points_inside": inside}
    if with_superseded:
        parts = []
        for part in series.superseded():
            p_keep = pyramid.m4_indices(part.steps, part.values, pyramid.Pyramid(), lo, hi, width)
            if p_keep.size:
                parts.append({"source": part.source,
                              "points": _points(part.steps, part.walls, part.values, p_keep, rounded)})
        out["superseded"] = parts
    return out
