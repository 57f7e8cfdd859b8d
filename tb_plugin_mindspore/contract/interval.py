"""Interval statistics: min / mean / max / count / non-finite count of every step between two recorded points.

Two layouts of the same numbers, each named here once (the training side folds each step's values from its
step ring into :class:`IntervalStats` on the host):

* in event files, a float64 tensor of :data:`FIELDS` under ``interval/<scalar tag>`` (:func:`value` writes it,
  :func:`decode` reads one, :func:`table` a whole series as :class:`IntervalTable` columns);
* in the JSON routes (``scalars``, ``scalars_batch``), rows ``[step, min, mean, max, count, nonfinite]``
  (:data:`ROW_FIELDS`; the answers' ``encode.interval_rows`` writes them), non-finite numbers as their string names.

``count`` counts every step of the interval (finite or not); min / mean / max are over the finite values only (NaN
when there were none).
"""

import collections
import math

import numpy as np

from .. import metadata
from . import _tensors

FIELDS = metadata.INTERVAL_FIELDS                                   # ("min", "mean", "max", "count", "nonfinite")
ROW_FIELDS = ("step",) + FIELDS                                     # a row of the JSON routes
# What the training side knows besides FIELDS (not written): the steps of the first non-finite value and of the
# maximum, None when unknown.
MARKS = ("first_nonfinite_step", "max_step")


class IntervalStats(collections.namedtuple("IntervalStats", FIELDS + MARKS,
                                           defaults=(math.nan, math.nan, math.nan, 0, 0, None, None))):
    """The one interval type, end to end: :data:`FIELDS` (what is written and read back) and :data:`MARKS` (what
    the recorders also know while training; None after a read)."""

    __slots__ = ()

    def fields(self):
        """The values of :data:`FIELDS`, in order (what the writer writes)."""
        return tuple(getattr(self, f) for f in FIELDS)

    @property
    def upper(self):
        """The largest finite value seen (NaN when none): the envelope the health rules read."""
        return self.max

IntervalTable = collections.namedtuple("IntervalTable", ("steps",) + FIELDS)
IntervalTable.__doc__ = "A series of interval statistics as numpy columns, sorted by step."


def stats(minimum, mean, maximum, count, nonfinite):
    """:class:`IntervalStats` with numbers of the right types."""
    return IntervalStats(float(minimum), float(mean), float(maximum), int(count), int(nonfinite))


# -- writer --------------------------------------------------------------------------------------------------------
def value(scalar_tag, interval_stats):
    """``Summary.Value`` of the statistics (an :class:`IntervalStats` or a mapping of :data:`FIELDS`) of
    ``scalar_tag``'s interval, under ``interval/<scalar_tag>``."""
    from tensorboard.compat.proto import summary_pb2

    if isinstance(interval_stats, dict):
        interval_stats = IntervalStats(**interval_stats)
    return summary_pb2.Summary.Value(
        tag=metadata.interval_tag(scalar_tag),
        metadata=metadata.create_summary_metadata(metadata.KIND_INTERVAL, fields=list(FIELDS), of=scalar_tag),
        tensor=_tensors.numeric([float(v) for v in IntervalStats(*interval_stats).fields()]),
    )


# -- reader --------------------------------------------------------------------------------------------------------
def scalar_tag(tag, content=None):
    """The scalar tag an interval series describes: the content's ``of``, else the tag without ``interval/``."""
    of = (content or {}).get("of")
    return of if isinstance(of, str) and of else metadata.scalar_tag_of_interval(tag)


def decode(array):
    """:class:`IntervalStats` of one stored value, or ``None`` when it does not hold :data:`FIELDS`."""
    values = _tensors.floats(array)
    if values is None or values.size != len(FIELDS):
        return None
    v = dict(zip(FIELDS, values.tolist()))
    return IntervalStats(float(v["min"]), float(v["mean"]), float(v["max"]), int(v["count"]), int(v["nonfinite"]))


def table(steps, values):
    """:class:`IntervalTable` (sorted by step) of a stored series: ``steps`` and one stored value per step (arrays);
    values of another width are left out. ``None`` when nothing is left."""
    keep, rows = [], []
    for i, v in enumerate(values):
        v = np.asarray(v, dtype=np.float64).reshape(-1)
        if v.size == len(FIELDS):
            keep.append(i)
            rows.append(v)
    if not keep:
        return None
    steps = np.asarray(steps, dtype=np.int64).reshape(-1)[keep]
    matrix = np.stack(rows)
    order = np.argsort(steps, kind="stable")
    return IntervalTable(steps[order], *(matrix[order, i] for i in range(len(FIELDS))))


def table_of_data(data):
    """:class:`IntervalTable` of a provider's ``TensorDatum`` list (``None`` when empty or unreadable)."""
    if not data:
        return None
    return table([d.step for d in data], [d.numpy for d in data])


def rows_matrix(interval_table):
    """The table as an ``(n, 6)`` float64 matrix in :data:`ROW_FIELDS` order (what ``downsample.bucket_intervals``
    merges), or ``None``."""
    if interval_table is None:
        return None
    return np.column_stack([interval_table.steps.astype(np.float64)] + [getattr(interval_table, f) for f in FIELDS])


def table_of_matrix(matrix):
    """Inverse of :func:`rows_matrix` (rows in :data:`ROW_FIELDS` order; sorted by step here)."""
    m = np.asarray(matrix, dtype=np.float64).reshape(-1, len(ROW_FIELDS))
    m = m[np.argsort(m[:, 0], kind="stable")]
    return IntervalTable(m[:, 0].astype(np.int64), *(m[:, i + 1] for i in range(len(FIELDS))))


def merge(interval_table, max_rows):
    """At most ``max_rows`` rows: consecutive rows merged in equal buckets, each with the last step of its bucket,
    the min of the mins, the count-weighted mean of the means, the max of the maxes, the summed counts and
    non-finite counts, so no extreme and no NaN step is lost."""
    t = interval_table
    n = int(t.steps.size)
    if n <= max_rows:
        return t
    size = -(-n // max_rows)
    starts = np.arange(0, n, size)
    stops = np.minimum(starts + size, n)
    with np.errstate(invalid="ignore"):
        counts = np.add.reduceat(t.count, starts)
        weighted = np.add.reduceat(np.nan_to_num(t.mean * t.count), starts)
        return IntervalTable(
            steps=t.steps[stops - 1],
            min=np.fmin.reduceat(t.min, starts),
            mean=np.where(counts > 0, weighted / np.where(counts > 0, counts, 1), np.nan),
            max=np.fmax.reduceat(t.max, starts),
            count=counts,
            nonfinite=np.add.reduceat(t.nonfinite, starts),
        )

