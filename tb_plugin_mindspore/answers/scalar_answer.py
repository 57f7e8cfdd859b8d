"""The one builder of scalar answers (the ``scalars`` and ``scalars_batch`` routes), over one series' final timeline.

:class:`Timeline` is what a series is made of wherever it was read: the final timeline's steps (ascending), wall
times and values, its min/max pyramid (``pyramid``), where the run restarted and the points those restarts
superseded (``timeline``). :func:`body` answers any step window of it (``x_min`` / ``x_max``, default the whole
series) on ``width`` pixel columns with the M4 points of each column (first, last, min, max, first NaN/Inf), so
every spike and NaN of the window is in the answer; the interval band is the rows of the window merged into at
most ``max_points`` rows (min of the mins, max of the maxes).
"""

import collections

import numpy as np

from .. import metadata
from ..contract import interval as interval_contract
from . import encode
from ..sources import pyramid

# Interval rows travel as (steps, rows): rows hold contract.interval.FIELDS in that order.
_COLUMN = {name: i for i, name in enumerate(interval_contract.FIELDS)}

Window = collections.namedtuple("Window", "x_min x_max width")
Window.__new__.__defaults__ = (None, None, None)

# One part of a series that a restart superseded: where it came from, its steps, wall times and values.
Superseded = collections.namedtuple("Superseded", "source steps walls values")


class Timeline:
    """A series' final timeline (see the module doc). ``restarts``: ``[{"step", "superseded_points", "source"}]``;
    ``superseded``: a function returning ``[Superseded]`` (asked for only when the answer shows them)."""

    __slots__ = ("steps", "walls", "values", "pyramid", "restarts", "superseded")

    def __init__(self, steps, walls, values, pyramid_=None, restarts=(), superseded=None):
        self.steps, self.walls, self.values = steps, walls, values
        self.pyramid = pyramid_ if pyramid_ is not None else _pyramid_of(values)
        self.restarts = list(restarts)
        self.superseded = superseded or (lambda: [])


def _pyramid_of(values):
    p = pyramid.Pyramid()
    p.extend(np.asarray(values))
    return p


def from_points(steps, walls, values):
    """A Timeline of points in any order (a data provider's sample): sorted by step, then wall time."""
    steps = np.asarray(steps, dtype=np.int64)
    walls = np.asarray(walls, dtype=np.float64)
    order = np.lexsort((walls, steps))
    return Timeline(steps[order], walls[order], np.asarray(values, dtype=np.float64)[order])


def columns_for(max_points, width=None):
    """Pixel columns of an answer of at most ``max_points`` points (5 a column at most, plus one on each side)."""
    most = max(1, (int(max_points) - 2) // 5)
    return most if width is None else max(1, min(int(width), most))


def _window_of(steps, window):
    lo = window.x_min if window.x_min is not None else (int(steps[0]) if steps.size else 0)
    hi = window.x_max if window.x_max is not None else (int(steps[-1]) if steps.size else 0)
    return lo, max(lo, hi)


_NAMES = {"nan": "NaN", "inf": "Infinity", "-inf": "-Infinity"}


def json_numbers(array):
    """A float array as a JSON-safe list: non-finite numbers as their names (``encode.json_float``), vectorized."""
    array = np.asarray(array)
    out = array.tolist()
    bad = np.flatnonzero(~np.isfinite(array))
    for i in bad.tolist():
        out[i] = _NAMES[repr(float(array[i])).lower()]
    return out


def _points(steps, walls, values, keep, rounded):
    if rounded:
        return [list(p) for p in zip(steps[keep].tolist(), encode.round_list(walls[keep], 3),
                                     encode.json_significant(values[keep], 7))]
    return [list(p) for p in zip(steps[keep].tolist(), json_numbers(walls[keep]),
                                 json_numbers(np.asarray(values[keep], dtype=np.float64)))]


def _interval_rows(interval, lo, hi, max_points):
    """The interval rows ``[[step, min, mean, max, count, nonfinite]]`` inside ``[lo, hi]`` (with the row on each side
    of the window), consecutive rows merged into at most ``max_points`` rows as ``downsample.bucket_intervals``
    merges them (last step, min of the mins, count-weighted mean, max of the maxes, summed counts), computed on the
    stored columns without copying the window; None without rows."""
    if interval is None:
        return None
    steps, rows = interval
    if not steps.size:
        return None
    i0 = max(int(pyramid.search(steps, lo, "left")) - 1, 0)
    i1 = min(int(pyramid.search(steps, hi, "right")) + 1, steps.size)
    k = i1 - i0
    if k <= 0:
        return None
    size = -(-k // max_points)
    starts = np.arange(0, k, size)
    stops = np.minimum(starts + size, k)
    window = rows[i0:i1]
    lows, means, highs, count, bad = (window[:, _COLUMN[f]] for f in interval_contract.FIELDS)
    with np.errstate(invalid="ignore"):
        if size == 1:
            table = [steps[i0:i1], lows, means, highs, count, bad]
        else:
            counts = np.add.reduceat(count, starts, dtype=np.float64)
            weighted = means * count
            weighted[np.isnan(weighted)] = 0   # an interval without finite values has no mean
            weighted = np.add.reduceat(weighted, starts, dtype=np.float64)
            table = [steps[i0:i1][stops - 1], np.fmin.reduceat(lows, starts),
                     np.where(counts > 0, weighted / np.where(counts > 0, counts, 1), np.nan),
                     np.fmax.reduceat(highs, starts), counts, np.add.reduceat(bad, starts, dtype=np.float64)]
    cols = [np.asarray(table[0]).tolist()] + [json_numbers(np.asarray(c, dtype=np.float64)) for c in table[1:4]]
    cols += [np.asarray(c, dtype=np.int64).tolist() for c in table[4:]]
    return [list(r) for r in zip(*cols)]


def body(run, tag, series, interval, max_points, window=None, with_superseded=False, rounded=False):
    """The scalars answer of one series as JSON-safe data.

    ``series``: a :class:`Timeline`; ``interval``: ``(steps, rows)`` of its interval band sorted by step, or None;
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
        "tier": metadata.tier_of(tag),
        "display_name": metadata.display_name(tag),
        "total_points": n,
        "downsampled": bool(shown < inside),
        "points": _points(steps, series.walls, series.values, keep, rounded),
        "interval": _interval_rows(interval, lo, hi, max_points),
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
