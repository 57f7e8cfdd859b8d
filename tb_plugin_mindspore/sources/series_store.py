"""Compact storage of the series the tab serves: numpy columns per series, appended as new points are read.

A :class:`Series` holds every point of one scalar series (or every row of an interval series) of one run in write
order: steps (int32 while they fit, else int64), wall times (float64; not for interval rows) and values (float32;
the 5 interval statistics for an interval series): 16 bytes a scalar point and 24 an interval row, with at most a
quarter more held as room to grow (given back after a run's first read). No Python object per point. It is cut into
segments (a new file, or a step going back) and keeps its *final timeline* (what a restarted run ends up with) as it
grows: a new segment truncates the final timeline at its first step and
then appends, so the final timeline is always sorted by step and, between two restarts, only ever grows at its end,
which lets a scalar series keep a min/max pyramid of it (``pyramid``) up to date block by block.

Only the final timeline of a series that never restarted is the written columns themselves; a restarted series
keeps its final timeline as a second set of columns.

The restart rule, the one rule for event files and ``*_MS`` files (``cuts``, ``cut_steps``, ``segment_starts``,
``superseded``: pure helpers over numpy arrays; ``ms_logdir`` cuts ``*_MS`` files with them too). A series written in several pieces (several files in one run folder, or a file in which the steps go back: a
script re-run into the same folder, a resume from a checkpoint) is cut into *segments*, in the order they were
written: a new segment starts with each file and wherever the step goes down. A later segment supersedes the
earlier ones from its first step on: an earlier segment keeps only its points before the first step of every
later segment, what TensorBoard does for a restarted run ("purge orphaned data"). A resume from step 6 keeps the
first run's steps 1-5; a re-run of steps 1-10 replaces the first run's steps 1-10.
"""

import threading

import numpy as np

from . import pyramid as pyramid_module

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
        self._pyramid = pyramid_module.Pyramid() if (width == 1 if with_pyramid is None else with_pyramid) else None
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
        keep = int(pyramid_module.search(final.steps.view(), step, "left"))
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
            self._pyramid = pyramid_module.Pyramid()

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
            if self._pyramid is not None and self._pyramid.covered + pyramid_module.FANOUT <= values.size:
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
