"""Grid axes, extents and the cost estimate text of a landscape."""

import numpy as np


def _pair(value, name):
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return int(value), int(value)
    try:
        a, b = value
        if isinstance(value, (str, bytes)) or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                                      for v in (a, b)):
            raise TypeError
    except (TypeError, ValueError):
        raise ValueError("%s must be an int or a pair of ints, got %r" % (name, value))
    return int(a), int(b)


def grid_shape(grid):
    """``(nx, ny)`` from an int or a pair; each between 2 and 1024 (1 allowed for ny: a 1-D line)."""
    nx, ny = _pair(grid, "grid")
    if not (2 <= nx <= 1024 and 1 <= ny <= 1024):
        raise ValueError("grid must be 2..1024 points per axis, got %r" % (grid,))
    return nx, ny


def extent_box(extent):
    """``(xmin, xmax, ymin, ymax)`` from a half-width ``e`` (-> -e..e on both axes), a pair of half-widths, or a
    4-tuple."""
    if isinstance(extent, (int, float, np.number)) and not isinstance(extent, bool):
        e = float(extent)
        box = (-e, e, -e, e)
    else:
        values = [float(v) for v in extent]
        if len(values) == 2:
            box = (-values[0], values[0], -values[1], values[1])
        elif len(values) == 4:
            box = tuple(values)
        else:
            raise ValueError("extent must be a number, (ex, ey) or (xmin, xmax, ymin, ymax), got %r" % (extent,))
    if not all(np.isfinite(box)) or box[0] >= box[1] or box[2] >= box[3]:
        raise ValueError("extent must give xmin < xmax and ymin < ymax, got %r" % (extent,))
    return box


def axes(grid, extent):
    """``(x, y)`` coordinate arrays (float64) of a ``grid`` over ``extent``."""
    nx, ny = grid_shape(grid)
    xmin, xmax, ymin, ymax = extent_box(extent)
    x = np.linspace(xmin, xmax, nx)
    y = np.linspace(ymin, ymax, ny) if ny > 1 else np.array([0.0])
    return x, y


def auto_extent(coords, margin=0.2, minimum=1e-3):
    """A box around the projected path ``coords`` ``(n, 2)`` and the centre (0, 0), widened by ``margin`` of its
    size on every side (MindSpore's SummaryLandscape uses 0.2 of the path's range too)."""
    c = np.asarray(coords, dtype=np.float64).reshape(-1, 2)
    xs = np.concatenate([c[:, 0], [0.0]])
    ys = np.concatenate([c[:, 1], [0.0]])
    out = []
    for v in (xs, ys):
        lo, hi = float(np.min(v)), float(np.max(v))
        span = max(hi - lo, minimum)
        out += [lo - margin * span, hi + margin * span]
    return tuple(out)


def format_seconds(seconds):
    """``"2 min 17 s"``, ``"1 h 05 min"``, ``"3.2 s"``, ``"41 ms"``."""
    if seconds is None or not np.isfinite(seconds):
        return "?"
    s = float(seconds)
    if s < 1:
        return "%.0f ms" % (s * 1000) if s >= 0.001 else "%.2f ms" % (s * 1000)
    if s < 10:
        return "%.1f s" % s
    if s < 60:
        return "%d s" % round(s)
    if s < 3600:
        return "%d min %02d s" % (s // 60, round(s % 60))
    return "%d h %02d min" % (s // 3600, round((s % 3600) / 60))


def cost_text(method, nx, ny, samples, seconds_per_point):
    points = nx * ny
    shape = "%d x %d = %d points" % (nx, ny, points) if ny > 1 else "%d points" % points
    return ("loss landscape (%s): %s x %d samples = %s sample evaluations; one evaluation takes %s, so about %s "
            "(Ctrl-C stops early and keeps what is finished)"
            % (method, shape, samples, "{:,}".format(points * samples), format_seconds(seconds_per_point),
               format_seconds(points * seconds_per_point)))
