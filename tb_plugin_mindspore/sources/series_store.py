"""The every-point series store: numpy columns per series, the restart rule, and the min/max pyramid with the M4
choice of the points a chart of any step window draws.

Columns. A :class:`Series` holds every point of one scalar series (or every row of an interval series) of one run in
write order: steps (int32 while they fit, else int64), wall times (float64; not for interval rows) and values
(float32; the 5 interval statistics for an interval series): 16 bytes a scalar point and 24 an interval row, with at
most a quarter more held as room to grow (given back after a run's first read). No Python object per point. It is
cut into segments (a new file, or a step going back) and keeps its *final timeline* (what a restarted run ends up
with) as it grows: a new segment truncates the final timeline at its first step and then appends, so the final
timeline is always sorted by step and, between two restarts, only ever grows at its end, which lets a scalar series
keep a min/max pyramid of it (:class:`Pyramid`) up to date block by block.

Only the final timeline of a series that never restarted is the written columns themselves; a restarted series
keeps its final timeline as a second set of columns.

The restart rule, the one rule for event files and ``*_MS`` files (``cuts``, ``cut_steps``, ``segment_starts``,
``superseded``: pure helpers over numpy arrays; ``ms_logdir`` cuts ``*_MS`` files with them too). A series written in
several pieces (several files in one run folder, or a file in which the steps go back: a script re-run into the same
folder, a resume from a checkpoint) is cut into *segments*, in the order they were written: a new segment starts
with each file and wherever the step goes down. A later segment supersedes the earlier ones from its first step on:
an earlier segment keeps only its points before the first step of every later segment, what TensorBoard does for a
restarted run ("purge orphaned data"). A resume from step 6 keeps the first run's steps 1-5; a re-run of steps 1-10
replaces the first run's steps 1-10.

The pyramid and M4 (Jugel, Jerzak, Hackenbroich, Markl, "M4: A Visualization-Oriented Time Series Data
Aggregation", PVLDB 7(10), 2014). A line chart draws, in each pixel column, a vertical stroke from the column's
lowest to its highest point, entering at the first point and leaving at the last; those four points per column draw
the same pixels as every point of the column. Here each column also keeps its first non-finite point (NaN / Inf),
which the chart marks on its own, so no spike and no NaN in the window is lost.

To answer a window without scanning it, :class:`Pyramid` keeps, per block of ``FANOUT`` values, the finite minimum
and maximum with their positions and the position of the first non-finite value; per block of ``FANOUT`` blocks the
same, and so on. A column is the blocks wholly inside it plus fewer than ``FANOUT`` elements at each end of each
level, so a query reads O(columns x FANOUT x levels) numbers however long the series is. Blocks are only ever
added (the series grows at its end): :meth:`Pyramid.extend` computes the new complete blocks. Pure numpy;
:func:`m4_indices` picks a window's points, :func:`search` finds steps.
"""

import threading

import numpy as np

MIN_CAPACITY = 256
GROWTH = 1.25
_INT32 = np.iinfo(np.int32)


class Column:
    """A growable numpy array (``width`` values per row)."""

    __slots__ = ("data", "size")

    def __init__(self, dtype, width=1):
        shape = (MIN_CAPACITY,) if width == 1 else (MIN_CAPACITY, width)
        self.data = np.empty(shape, dtype=dtype)
        self.size = 0

    def append(self, values):
        if self.data.dtype == np.int32:   # steps: 4 bytes while they fit, else the column becomes int64
            values = np.asarray(values, dtype=np.int64)
            if values.size and (values.min() < _INT32.min or values.max() > _INT32.max):
                self.data = self.data.astype(np.int64)
        values = np.asarray(values, dtype=self.data.dtype)
        need = self.size + values.shape[0]
        if need > self.data.shape[0]:
            capacity = max(need, int(self.data.shape[0] * GROWTH), MIN_CAPACITY)
            grown = np.empty((capacity,) + self.data.shape[1:], dtype=self.data.dtype)
            grown[:self.size] = self.data[:self.size]
            self.data = grown
        self.data[self.size:need] = values
        self.size = need

    def truncate(self, size):
        """Keeps the first ``size`` rows, in a new buffer: arrays handed out before stay as they were."""
        self.size = min(self.size, int(size))
        self.data = self.data.copy()

    def shrink(self):
        """Gives back the room to grow (a copy of the rows kept)."""
        if self.data.shape[0] > self.size:
            self.data = self.data[:self.size].copy()

    def view(self):
        return self.data[:self.size]

    @property
    def nbytes(self):
        return self.data.nbytes


class _Columns:
    __slots__ = ("steps", "walls", "values")

    def __init__(self, width, walls):
        self.steps = Column(np.int32)
        self.walls = Column(np.float64) if walls else None
        self.values = Column(np.float32, width)

    def _all(self):
        return [c for c in (self.steps, self.walls, self.values) if c is not None]

    def append(self, steps, walls, values):
        self.steps.append(steps)
        if self.walls is not None:
            self.walls.append(walls)
        self.values.append(values)

    def truncate(self, size):
        for column in self._all():
            column.truncate(size)

    def shrink(self):
        for column in self._all():
            column.shrink()

    def wall_view(self):
        return self.walls.view() if self.walls is not None else None

    @property
    def nbytes(self):
        return sum(c.nbytes for c in self._all())


class Restart:
    """Where the series went back: at ``step`` (the first step of segment ``segment``, from ``source``),
    ``superseded`` earlier points were left out of the final timeline."""

    __slots__ = ("step", "segment", "source", "superseded")

    def __init__(self, step, segment, source, superseded):
        self.step, self.segment, self.source, self.superseded = step, segment, source, superseded

    def to_json(self):
        return {"step": self.step, "superseded_points": self.superseded, "source": self.source}


class Series:
    """One series of one run (see the module doc). ``width``: 1 for a scalar, 5 for interval rows.

    Thread-safe: appends and reads take the series' lock; readers get arrays that later appends never change.
    """

    def __init__(self, width=1, with_pyramid=None, with_walls=None):
        self.width = width
        self._walls = (width == 1) if with_walls is None else bool(with_walls)
        self._written = _Columns(width, self._walls)
        self._final = None                    # _Columns of the final timeline once the series restarted
        self._segments = []                   # [(start position, source)] in write order
        self._restarts = []
        self._pyramid = Pyramid() if (width == 1 if with_pyramid is None else with_pyramid) else None
        self._lock = threading.Lock()
        self.version = 0                      # changes whenever the series changes

    def __len__(self):
        return self._written.steps.size

    @property
    def nbytes(self):
        total = self._written.nbytes + (self._final.nbytes if self._final is not None else 0)
        return total + (self._pyramid.nbytes if self._pyramid is not None else 0)

    def last(self):
        """``(step, wall time)`` of the last point written, or None."""
        with self._lock:
            n = self._written.steps.size
            if not n:
                return None
            wall = float(self._written.walls.data[n - 1]) if self._walls else None
            return int(self._written.steps.data[n - 1]), wall

    def append(self, steps, walls, values, source=None):
        """Adds points in write order; ``source`` (e.g. the file) starts a new segment when it changes."""
        steps = np.asarray(steps, dtype=np.int64)
        if not steps.size:
            return
        walls = np.asarray(walls, dtype=np.float64)
        values = np.asarray(values, dtype=np.float32)
        with self._lock:
            n = self._written.steps.size
            previous = int(self._written.steps.data[n - 1]) if n else None
            cuts = list(segment_starts(steps, previous))
            if not self._segments or self._segments[-1][1] != source:
                if not cuts or cuts[0] != 0:
                    cuts.insert(0, 0)
            bounds = cuts + [steps.size]
            if bounds[0] != 0:   # the first points continue the last segment
                self._add(steps[:bounds[0]], walls[:bounds[0]], values[:bounds[0]])
            for start, stop in zip(bounds[:-1], bounds[1:]):
                self._segments.append((self._written.steps.size, source))
                self._restart_at(int(steps[start]), source)
                self._add(steps[start:stop], walls[start:stop], values[start:stop])
            self.version += 1

    def _final_columns(self):
        return self._final if self._final is not None else self._written

    def _restart_at(self, step, source):
        """A segment starts at ``step``: the final timeline loses its points at or after it."""
        final = self._final_columns()
        n = final.steps.size
        if not n or step > int(final.steps.data[n - 1]):   # after every point: a new file that goes on (common)
            return
        keep = int(search(final.steps.view(), step, "left"))
        if keep == n:
            return
        if self._final is None:   # first restart: the final timeline gets its own columns
            self._final = _Columns(self.width, self._walls)
            walls = self._written.wall_view()
            self._final.append(self._written.steps.view()[:keep], None if walls is None else walls[:keep],
                               self._written.values.view()[:keep])
        else:
            self._final.truncate(keep)
        self._restarts.append(Restart(step, len(self._segments) - 1, source, n - keep))
        if self._pyramid is not None:
            self._pyramid = Pyramid()

    def _add(self, steps, walls, values):
        self._written.append(steps, walls, values)
        if self._final is not None:
            self._final.append(steps, walls, values)

    def final(self):
        """``(steps, walls or None, values, pyramid or None)`` of the final timeline, sorted by step: views that later
        appends never change (they write past the view's end or into a new buffer; a truncation copies first)."""
        with self._lock:
            cols = self._final_columns()
            steps, walls, values = cols.steps.view(), cols.wall_view(), cols.values.view()
            if self._pyramid is not None and self._pyramid.covered + FANOUT <= values.size:
                self._pyramid.extend(values)
            return steps, walls, values, self._pyramid

    def shrink(self):
        """Gives back the columns' room to grow (after a long first read; appends grow them again)."""
        with self._lock:
            self._written.shrink()
            if self._final is not None:
                self._final.shrink()

    def restarts(self):
        with self._lock:
            return list(self._restarts)

    def superseded(self):
        """``[(restart step source, steps, walls, values)]``: per segment that lost points to a later one, the points
        it lost, in write order."""
        with self._lock:
            if not self._restarts:
                return []
            bounds = [start for start, _ in self._segments] + [self._written.steps.size]
            steps = self._written.steps.view()
            parts = [steps[a:b] for a, b in zip(bounds[:-1], bounds[1:])]
            out = []
            for i, keep in superseded(parts):
                a, b = bounds[i], bounds[i + 1]
                lost = ~keep
                walls = self._written.wall_view()
                out.append((self._segments[i][1], steps[a:b][lost].copy(),
                            None if walls is None else walls[a:b][lost].copy(), self._written.values.view()[a:b][lost].copy()))
            return out


# -- the restart rule ----------------------------------------------------------------------------------------------
def cuts(first_steps):
    """Per segment, in write order, ``(step, index)``: the smallest first step of the segments after it, from which
    they supersede it, and the segment that has it (the earliest of equals); ``None`` for the last segment, or when
    no later segment has a first step (``None`` in ``first_steps``: a segment without this series)."""
    out = [None] * len(first_steps)
    low = None
    for i in range(len(first_steps) - 1, -1, -1):
        out[i] = low
        first = first_steps[i]
        if first is not None and (low is None or first <= low[0]):
            low = (first, i)
    return out


def cut_steps(first_steps):
    """The steps of :func:`cuts` alone."""
    return [None if c is None else c[0] for c in cuts(first_steps)]


def segment_starts(steps, previous=None):
    """Positions in ``steps`` (in write order) where a new segment starts because the step went down (from the
    point before it; the first point compares with ``previous``, the last step already written, if any)."""
    steps = np.asarray(steps)
    down = np.flatnonzero(steps[1:] < steps[:-1]) + 1
    if previous is not None and steps.size and steps[0] < previous:
        down = np.r_[0, down]
    return down


def superseded(segments):
    """``[(segment index, keep)]``: for segments ``[steps array, ...]`` in write order, the boolean mask of the
    points each keeps (steps before its cut step), for the segments that lose any."""
    cuts = cut_steps([int(s[0]) if len(s) else None for s in segments])
    out = []
    for i, (steps, cut) in enumerate(zip(segments, cuts)):
        if cut is None:
            continue
        keep = np.asarray(steps) < cut
        if not keep.all():
            out.append((i, keep))
    return out


# ---------------------------------------------------------------------------------------------------------------
# The min/max pyramid and M4

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
