"""What one scalar series is made of, wherever it was read: :class:`Timeline`.

The final timeline's steps (ascending), wall times and values, its min/max pyramid (``pyramid.py``), where the run
restarted (``series_store.py``'s restart rule) and, asked for only when shown, the points those restarts superseded;
with its interval band (``contract.interval.IntervalTable``: min / mean / max / count / non-finite of every step
between two recorded points, by name) when the run recorded one.
"""

import collections

import numpy as np

from ..contract import interval as interval_contract
from . import pyramid as pyramid_module

# One part of a series that a restart superseded: where it came from, its steps, wall times and values.
Superseded = collections.namedtuple("Superseded", "source steps walls values")


class Timeline:
    """A series' final timeline (see the module doc). ``restarts``: ``[{"step", "superseded_points", "source"}]``;
    ``superseded``: a function returning ``[Superseded]``; ``band``: an ``IntervalTable`` sorted by step, or None."""

    __slots__ = ("steps", "walls", "values", "pyramid", "restarts", "superseded", "band")

    def __init__(self, steps, walls, values, pyramid_=None, restarts=(), superseded=None, band=None):
        self.steps, self.walls, self.values = steps, walls, values
        self.pyramid = pyramid_ if pyramid_ is not None else pyramid_of(values)
        self.restarts = list(restarts)
        self.superseded = superseded or (lambda: [])
        self.band = band

    def with_band(self, band):
        """This timeline with ``band`` (an ``IntervalTable`` or None) as its interval band."""
        return Timeline(self.steps, self.walls, self.values, self.pyramid, self.restarts, self.superseded, band)


def pyramid_of(values):
    p = pyramid_module.Pyramid()
    p.extend(np.asarray(values))
    return p


def from_points(steps, walls, values, band=None):
    """A Timeline of points in any order (a data provider's sample): sorted by step, then wall time."""
    steps = np.asarray(steps, dtype=np.int64)
    walls = np.asarray(walls, dtype=np.float64)
    order = np.lexsort((walls, steps))
    return Timeline(steps[order], walls[order], np.asarray(values, dtype=np.float64)[order], band=band)


def band_of_rows(steps, rows):
    """The ``IntervalTable`` of stored interval rows: ``steps`` and an ``(n, 5)`` matrix whose columns are
    ``contract.interval.FIELDS`` in order (the layout ``series_store`` keeps them in); the columns are views."""
    if steps is None or not np.asarray(steps).size:
        return None
    return interval_contract.IntervalTable(steps, *(rows[:, i] for i in range(len(interval_contract.FIELDS))))
