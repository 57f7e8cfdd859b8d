"""A min/max pyramid over a long series, and the M4 choice of the points a chart of any step window draws.

M4 (Jugel, Jerzak, Hackenbroich, Markl, "M4: A Visualization-Oriented Time Series Data Aggregation", PVLDB 7(10),
2014): a line chart draws, in each pixel column, a vertical stroke from the column's lowest to its highest point,
entering at the first point and leaving at the last; those four points per column draw the same pixels as every
point of the column. Here each column also keeps its first non-finite point (NaN / Inf), which the chart marks on
its own, so no spike and no NaN in the window is lost.

To answer a window without scanning it, :class:`Pyramid` keeps, per block of ``FANOUT`` values, the finite minimum
and maximum with their positions and the position of the first non-finite value; per block of ``FANOUT`` blocks the
same, and so on. A column is the blocks wholly inside it plus fewer than ``FANOUT`` elements at each end of each
level, so a query reads O(columns x FANOUT x levels) numbers however long the series is. Blocks are only ever
added (the series grows at its end): :meth:`Pyramid.extend` computes the new complete blocks. Pure numpy.
"""

import numpy as np

FANOUT = 64
_NONE = -1


class _Level:
    """Per block: finite minimum and maximum (``inf`` / ``-inf`` when none) with their positions in the series,
    and the position of the first non-finite value (``-1`` when none)."""

    __slots__ = ("lo", "lo_at", "hi", "hi_at", "bad_at")

    def __init__(self, lo, lo_at, hi, hi_at, bad_at):
        self.lo, self.lo_at, self.hi, self.hi_at, self.bad_at = lo, lo_at, hi, hi_at, bad_at

    def __len__(self):
        return self.lo.size

    def append(self, other):
        for name in self.__slots__:
            setattr(self, name, np.concatenate([getattr(self, name), getattr(other, name)]))

    def take(self, idx):
        return _Level(self.lo[idx], self.lo_at[idx], self.hi[idx], self.hi_at[idx], self.bad_at[idx])

    @property
    def nbytes(self):
        return sum(getattr(self, name).nbytes for name in self.__slots__)


def _raw_level(values, idx):
    """The raw values at positions ``idx`` as a _Level of one-element blocks."""
    v = values[idx]
    finite = np.isfinite(v)
    return _Level(np.where(finite, v, np.inf), idx, np.where(finite, v, -np.inf), idx, np.where(finite, _NONE, idx))


def _blocks(level, count):
    """The first ``count`` complete blocks of ``FANOUT`` elements of ``level`` as the next level up."""
    r = np.arange(count)
    lo = level.lo[:count * FANOUT].reshape(count, FANOUT)
    hi = level.hi[:count * FANOUT].reshape(count, FANOUT)
    bad = level.bad_at[:count * FANOUT].reshape(count, FANOUT)
    i_lo = lo.argmin(axis=1)
    i_hi = hi.argmax(axis=1)
    has_bad = bad >= 0
    i_bad = has_bad.argmax(axis=1)
    base = r * FANOUT
    return _Level(lo[r, i_lo], level.lo_at[base + i_lo], hi[r, i_hi], level.hi_at[base + i_hi],
                  np.where(has_bad.any(axis=1), bad[r, i_bad], _NONE))


class Pyramid:
    """Block minima / maxima of a growing float series (see the module doc)."""

    def __init__(self):
        self.levels = []       # levels[0]: blocks of FANOUT values, levels[1]: of FANOUT blocks, ...
        self.covered = 0       # values summarised by complete blocks of levels[0]

    @property
    def nbytes(self):
        return sum(level.nbytes for level in self.levels)

    def extend(self, values):
        """Adds the complete blocks of ``values`` (the whole series so far, of which the first ``covered`` are
        unchanged) that are not summarised yet."""
        n = int(values.size)
        count = n // FANOUT - self.covered // FANOUT
        if count <= 0:
            return
        start = self.covered
        idx = np.arange(start, start + count * FANOUT, dtype=np.int64)
        new = _blocks(_raw_level(values, idx), count)
        self.covered = start + count * FANOUT
        depth = 0
        while new is not None and len(new):
            if depth == len(self.levels):
                self.levels.append(new)
            else:
                self.levels[depth].append(new)
            level = self.levels[depth]
            done_above = len(self.levels[depth + 1]) if depth + 1 < len(self.levels) else 0
            more = len(level) // FANOUT - done_above
            if more <= 0:
                break
            new = _blocks(level.take(np.arange(done_above * FANOUT, (done_above + more) * FANOUT)), more)
            depth += 1


def _gather(level_of, starts, stops):
    """``(piece ids, _Level)`` of the elements ``[starts[k], stops[k])`` of every piece k (empty pieces skipped),
    ``level_of(idx)`` giving the elements at positions ``idx``."""
    lens = stops - starts
    pieces = np.flatnonzero(lens > 0)
    lens = lens[pieces]
    total = int(lens.sum())
    offsets = np.cumsum(lens) - lens
    idx = np.repeat(starts[pieces] - offsets, lens) + np.arange(total)
    return pieces, np.repeat(np.arange(pieces.size), lens), offsets, level_of(idx)


def _first_per_piece(mask, piece, count):
    """Position (in the gathered arrays) of the first True of every piece, ``-1`` where a piece has none."""
    out = np.full(count, _NONE, dtype=np.int64)
    pos = np.flatnonzero(mask)
    if pos.size:
        owner = piece[pos]
        first = np.r_[True, owner[1:] != owner[:-1]]
        out[owner[first]] = pos[first]
    return out


def _reduce(level_of, cols, starts, stops):
    """One summary (``cols`` and a _Level) per non-empty range ``[starts, stops)`` of one level."""
    pieces, piece, offsets, g = _gather(level_of, starts, stops)
    if not pieces.size:
        return cols[:0], _Level(*(np.zeros(0, dtype) for dtype in (np.float64, np.int64, np.float64, np.int64,
                                                                    np.int64)))
    lo = np.minimum.reduceat(g.lo, offsets)
    hi = np.maximum.reduceat(g.hi, offsets)
    i_lo = _first_per_piece(g.lo == lo[piece], piece, pieces.size)
    i_hi = _first_per_piece(g.hi == hi[piece], piece, pieces.size)
    i_bad = _first_per_piece(g.bad_at >= 0, piece, pieces.size)
    bad = np.where(i_bad >= 0, g.bad_at[np.maximum(i_bad, 0)], _NONE)
    return cols[pieces], _Level(lo.astype(np.float64), g.lo_at[i_lo], hi.astype(np.float64), g.hi_at[i_hi], bad)


def column_extremes(values, pyramid, starts, stops):
    """For ranges ``[starts[k], stops[k])`` of ``values`` (each non-empty): ``(lo_at, hi_at, bad_at)`` arrays, the
    position of each range's finite minimum and maximum (``-1`` when it has no finite value) and of its first
    non-finite value (``-1`` when none). Uses the pyramid's blocks where a range holds whole ones."""
    k = starts.size
    cols = np.arange(k)
    found_cols, found = [], []
    a, b = starts.astype(np.int64), stops.astype(np.int64)
    live = cols
    level_of = lambda idx: _raw_level(values, idx)  # noqa: E731
    depth = 0
    while live.size:
        blocks = len(pyramid.levels[depth]) if depth < len(pyramid.levels) else 0
        inner_a = -(-a // FANOUT)            # first whole block
        inner_b = np.minimum(b // FANOUT, blocks)
        whole = inner_a < inner_b
        done = ~whole
        # Ranges without a whole block: every element here. Others: their two ends here, the middle one level up.
        parts_cols = np.concatenate([live[done], live[whole], live[whole]])
        parts_a = np.concatenate([a[done], a[whole], (inner_b * FANOUT)[whole]])
        parts_b = np.concatenate([b[done], (inner_a * FANOUT)[whole], b[whole]])
        c, s = _reduce(level_of, parts_cols, parts_a, parts_b)
        found_cols.append(c)
        found.append(s)
        live, a, b = live[whole], inner_a[whole], inner_b[whole]
        level = pyramid.levels[depth] if depth < len(pyramid.levels) else None
        level_of = level.take if level is not None else None
        depth += 1
    c = np.concatenate(found_cols)
    s = _Level(*(np.concatenate([getattr(x, name) for x in found]) for name in _Level.__slots__))
    lo_at = np.full(k, _NONE, dtype=np.int64)
    hi_at = np.full(k, _NONE, dtype=np.int64)
    bad_at = np.full(k, _NONE, dtype=np.int64)
    # Per range: the smallest minimum (then the earliest), the largest maximum (then the earliest), the first NaN.
    order = np.lexsort((s.lo_at, s.lo, c))
    first = np.r_[True, c[order][1:] != c[order][:-1]]
    pick = order[first]
    ok = np.isfinite(s.lo[pick])
    lo_at[c[pick][ok]] = s.lo_at[pick][ok]
    order = np.lexsort((s.hi_at, -s.hi, c))
    pick = order[np.r_[True, c[order][1:] != c[order][:-1]]]
    ok = np.isfinite(s.hi[pick])
    hi_at[c[pick][ok]] = s.hi_at[pick][ok]
    bad = s.bad_at >= 0
    if bad.any():
        order = np.lexsort((s.bad_at[bad], c[bad]))
        cb, sb = c[bad][order], s.bad_at[bad][order]
        first = np.r_[True, cb[1:] != cb[:-1]]
        bad_at[cb[first]] = sb[first]
    return lo_at, hi_at, bad_at


def search(steps, x, side="left"):
    """``np.searchsorted(steps, x)`` for integer ``steps`` and any number(s) ``x``, without numpy converting all of
    ``steps`` to a wider type first (an int32 column searched for a Python int or a float is copied whole)."""
    info = np.iinfo(steps.dtype)
    x = np.asarray(x, dtype=np.float64)
    # For integer steps, "< x" is "< ceil(x)" and "<= x" is "<= floor(x)".
    x = np.ceil(x) if side == "left" else np.floor(x)
    x = np.clip(x, info.min, info.max).astype(steps.dtype)
    return np.searchsorted(steps, x, side=side)


def m4_indices(steps, values, pyramid, x_min, x_max, width):
    """Sorted positions of the points that draw ``values`` over steps ``[x_min, x_max]`` exactly on ``width``
    pixel columns: per column its first, last, lowest and highest point and its first non-finite one, plus the
    nearest point on each side of the window (so the line enters and leaves it). ``steps`` ascending."""
    n = int(steps.size)
    i0 = int(search(steps, x_min, "left"))
    i1 = int(search(steps, x_max, "right"))
    outside = [i for i in (i0 - 1, i1) if 0 <= i < n]
    if i1 - i0 <= 4 * width:
        return np.unique(np.r_[np.arange(i0, i1), outside].astype(np.int64))
    span = float(x_max) - float(x_min)
    edges = float(x_min) + span * np.arange(1, width) / width
    cuts = np.r_[i0, search(steps, edges, "left"), i1].astype(np.int64)
    starts, stops = cuts[:-1], cuts[1:]
    nonempty = stops > starts
    starts, stops = starts[nonempty], stops[nonempty]
    lo_at, hi_at, bad_at = column_extremes(values, pyramid, starts, stops)
    picks = np.concatenate([starts, stops - 1, lo_at, hi_at, bad_at, np.asarray(outside, dtype=np.int64)])
    return np.unique(picks[picks >= 0])
