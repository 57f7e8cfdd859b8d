"""Every run's TensorBoard event files under a logdir, read by the plugin's own record reader: :class:`EventLogdir`.

What ``tb-mindspore check``, ``report`` and ``doctor`` load instead of TensorBoard's Python loader, whose directory
watcher lists and sorts a run's whole folder once per file it reads (a run of 10,000 small files took minutes).
Here a reload lists each folder once and reads each file from where it stopped, with the one record reader that
serves ``*_MS`` files too (``io/records.RecordFile``): a damaged record, a record whose payload does not decode
(invalid UTF-8 in a string field behind a good checksum), a FIFO or a link loop named like an event file is skipped,
counted and named (:meth:`EventLogdir.warnings`), never fatal for the logdir.

Runs and values are TensorBoard's: a run is a folder holding a file whose name contains ``tfevents`` (``"."`` for
the logdir itself), files are read in name order, and every value passes TensorBoard's own read-time migrations
(``data_compat``, ``dataclass_compat``), so each series has the summary metadata and data class TensorBoard's
loaders give it. Scalars keep every point (24 bytes a point); tensors of this plugin and of the scalars
plugin keep every point; other series keep at most ``SAMPLES`` points per tag, evenly spread, the last one always.

    logdir = EventLogdir(path)
    while logdir.reload().pending: pass     # bounded work per call
    logdir.runs(); logdir.series(run)       # {tag: Series}; logdir.warnings()

``store``: an ``event_series.EventSeries`` (the tab's every-point store of scalars and their bands, with the restart
rule) given every record read, so that the commands' ``Sources`` reads each event file once for both.
"""

import logging
import threading
from array import array

import numpy as np
from google.protobuf.message import DecodeError
from tensorboard import data_compat, dataclass_compat
from tensorboard.compat.proto import event_pb2, summary_pb2, types_pb2
from tensorboard.util import tensor_util

from .. import metadata
from ..io import fs
from ..io.records import RecordFile, short_error

logger = logging.getLogger(__name__)

RELOAD_BYTES = 16 << 20      # read per reload call (a single record larger than that is still read whole)
SAMPLES = {"histograms": 1000, "images": 10, "audio": 10, "text": 100, "graphs": 1, "graph_run_metadata": 1}
DEFAULT_SAMPLES = 100        # per tag of any other plugin that is not kept whole
KEEP_ALL = ("scalars", metadata.PLUGIN_NAME)   # plugins whose every point is kept
MAX_WARNINGS = 1000          # kept in all; later ones are only counted

_SCALAR = summary_pb2.DATA_CLASS_SCALAR
_TENSOR = summary_pb2.DATA_CLASS_TENSOR
_BLOB = summary_pb2.DATA_CLASS_BLOB_SEQUENCE


def is_event_file(name):
    """TensorBoard's test for an event file: ``tfevents`` in the name."""
    return "tfevents" in name


class Series:
    """One tag's points: its summary metadata (the first record's, as TensorBoard keeps it), and the points.

    Scalars are kept in compact columns; other data classes as ``(step, wall_time, value)`` with ``value`` a numpy
    array (tensors) or a list of bytes (blob sequences). ``limit``: at most about this many points are kept, evenly
    spread (the stride doubles when twice as many are held), the last one always; None keeps every point."""

    __slots__ = ("metadata", "steps", "walls", "values", "items", "limit", "stride", "seen", "last",
                 "max_step", "max_wall")

    def __init__(self, summary_metadata, limit=None):
        self.metadata = summary_metadata
        self.limit = limit
        self.stride = 1
        self.seen = 0
        self.last = None
        self.max_step = None
        self.max_wall = None
        if summary_metadata.data_class == _SCALAR:
            self.steps, self.walls, self.values = array("q"), array("d"), array("d")
            self.items = None
        else:
            self.steps = self.walls = self.values = None
            self.items = []

    @property
    def plugin(self):
        return self.metadata.plugin_data.plugin_name

    @property
    def data_class(self):
        return self.metadata.data_class

    def __len__(self):
        return len(self.steps) if self.items is None else len(self.items)

    def _seen(self, step, wall):
        self.seen += 1
        if self.max_step is None or step > self.max_step:
            self.max_step = step
        if self.max_wall is None or wall > self.max_wall:
            self.max_wall = wall

    def add_scalar(self, step, wall, value):
        self._seen(step, wall)
        self.steps.append(step)
        self.walls.append(wall)
        self.values.append(value)

    def add_item(self, step, wall, value):
        self._seen(step, wall)
        self.last = (step, wall, value)
        if self.limit is None:
            self.items.append(self.last)
            return
        if (self.seen - 1) % self.stride:
            return
        self.items.append(self.last)
        if len(self.items) >= 2 * self.limit:
            del self.items[1::2]
            self.stride *= 2

    def points(self):
        """``[(step, wall_time, value)]`` in file order (the last point always included)."""
        if self.items is None:
            return list(zip(self.steps, self.walls, self.values))
        if self.last is not None and (not self.items or self.items[-1] is not self.last):
            return self.items + [self.last]
        return list(self.items)

    def scalar_arrays(self):
        """``(steps int64, wall_times float64, values float64)`` of a scalar series."""
        return (np.frombuffer(self.steps, dtype=np.int64).copy(), np.frombuffer(self.walls, dtype=np.float64).copy(),
                np.frombuffer(self.values, dtype=np.float64).copy())


class _Run:
    __slots__ = ("folder", "files", "initial", "series", "first_wall", "decode_errors")

    def __init__(self, folder):
        self.folder = folder
        self.files = {}          # name -> RecordFile, in the order first seen
        self.initial = {}        # tag -> initial SummaryMetadata (dataclass_compat's per-run table)
        self.series = {}         # tag -> Series
        self.first_wall = None
        self.decode_errors = {}  # file name -> [(offset, reason)] (first few), counted in RecordFile problems


class ReloadResult:
    __slots__ = ("pending", "bytes_read", "records")

    def __init__(self):
        self.pending = False
        self.bytes_read = 0
        self.records = 0


class EventLogdir:
    """See the module doc. ``logdir``: a local folder or a URL (``io/fs.py``)."""

    def __init__(self, logdir, samples=None, store=None):
        self.logdir = fs.normalize(logdir) if logdir else logdir
        self.store = store        # an event_series.EventSeries given every payload read (one read for both)
        self._samples = dict(SAMPLES, **(samples or {}))
        self._runs = {}
        self._lock = threading.Lock()

    # -- reading -----------------------------------------------------------------------------------------------
    def _folders(self):
        """``{run: (folder, [event file names])}`` of every folder holding event files, names sorted."""
        out = {}
        try:
            for root, dirs, names in fs.walk(self.logdir):
                dirs.sort()
                files = sorted(n for n in names if is_event_file(n))
                if files:
                    rel = fs.relpath(root, self.logdir)
                    out["." if rel in ("", ".") else rel.replace("\\", "/")] = (root, files)
        except OSError as e:
            logger.warning("tb-mindspore: cannot list %s: %s", self.logdir, e)
        return out

    def reload(self, max_bytes=RELOAD_BYTES):
        """Reads up to about ``max_bytes`` of new data (new runs and files are picked up); ``.pending``: call again."""
        result = ReloadResult()
        budget = max(1, int(max_bytes))
        folders = self._folders()
        with self._lock:
            for run in set(self._runs) - set(folders):
                del self._runs[run]          # a run folder that vanished
        for run in sorted(folders):
            folder, names = folders[run]
            with self._lock:
                r = self._runs.get(run)
                if r is None:
                    r = self._runs[run] = _Run(folder)
            for name in names:
                mf = r.files.get(name)
                if mf is None:
                    mf = r.files[name] = RecordFile(fs.join(folder, name))
                if mf.stat_size() <= mf.offset:
                    continue
                if budget <= 0:
                    result.pending = True
                    return result
                restarts = mf.restarts
                payloads, offsets, nread = mf.read_payloads(budget)
                if mf.restarts != restarts:        # replaced in place: read the whole run again
                    with self._lock:
                        self._runs[run] = _Run(folder)
                    result.pending = True
                    return result
                budget -= max(nread, 1)
                result.bytes_read += nread
                result.records += len(payloads)
                if payloads:
                    self._add(r, name, mf, payloads, offsets)
                if self.store is not None:
                    self.store.take(run, folder, name, mf, payloads)
                result.pending = result.pending or mf.has_unread()
        return result

    def read_all(self, max_rounds=10 ** 7):
        """Reloads until nothing complete is left to read; returns self."""
        for _ in range(max_rounds):
            if not self.reload().pending:
                break
        if self.store is not None:
            self.store.taken()
        return self

    def _add(self, r, name, mf, payloads, offsets):
        parse = event_pb2.Event.FromString
        initial, series = r.initial, r.series
        with self._lock:
            for offset, data in zip(offsets, payloads):
                try:
                    event = parse(data)
                except (DecodeError, RuntimeError, ValueError) as e:
                    mf.problem(offset, "undecodable record (%s); skipped" % short_error(e))
                    continue
                wall = event.wall_time
                if r.first_wall is None:
                    r.first_wall = wall
                if event.HasField("summary") and self._fast(event, series, wall):
                    continue
                try:
                    migrated = dataclass_compat.migrate_event(data_compat.migrate_event(event), initial)
                    for ev in migrated:
                        if ev.HasField("summary"):
                            self._values(ev, series)
                except Exception as e:  # a value TensorBoard's own migrations cannot take: that record only
                    mf.problem(offset, "unreadable summary (%s: %s); skipped" % (type(e).__name__,
                                                                               short_error(e)))

    @staticmethod
    def _fast(event, series, wall):
        """Adds an event of known scalar tags written as ``simple_value`` (the common case) without migrating it;
        False (nothing added) when any value needs TensorBoard's migrations."""
        values = event.summary.value
        for value in values:
            if value.WhichOneof("value") != "simple_value":
                return False
            s = series.get(value.tag)
            if s is None or s.data_class != _SCALAR:
                return False
        step = event.step
        for value in values:
            series[value.tag].add_scalar(step, wall, value.simple_value)
        return True

    def _values(self, event, series):
        step, wall = event.step, event.wall_time
        for value in event.summary.value:
            tag = value.tag
            s = series.get(tag)
            if s is None:
                if not value.HasField("metadata"):
                    continue      # TensorBoard lists a series by the metadata of its first value that has some
                md = summary_pb2.SummaryMetadata()
                md.CopyFrom(value.metadata)
                plugin = md.plugin_data.plugin_name
                limit = None if plugin in KEEP_ALL else self._samples.get(plugin, DEFAULT_SAMPLES)
                s = series[tag] = Series(md, limit)
            if not value.HasField("tensor"):
                continue
            if s.data_class == _SCALAR:
                number = _scalar(value.tensor)
                if number is not None:
                    s.add_scalar(step, wall, number)
            elif s.data_class == _BLOB:
                blobs = _blobs(value.tensor)
                if blobs is not None:
                    s.add_item(step, wall, blobs)
            elif s.data_class == _TENSOR:
                try:
                    s.add_item(step, wall, tensor_util.make_ndarray(value.tensor))
                except Exception:   # a tensor numpy cannot build: left out, like TensorBoard's provider would fail
                    continue

    # -- what was read ---------------------------------------------------------------------------------------------
    def runs(self):
        with self._lock:
            return sorted(self._runs)

    def has_run(self, run):
        with self._lock:
            return run in self._runs

    def first_wall_time(self, run):
        with self._lock:
            r = self._runs.get(run)
            return None if r is None else r.first_wall

    def series(self, run):
        """``{tag: Series}`` of a run (empty for an unknown run); the series are live: read under no lock."""
        with self._lock:
            r = self._runs.get(run)
            return dict(r.series) if r is not None else {}

    def folder(self, run):
        with self._lock:
            r = self._runs.get(run)
            return None if r is None else r.folder

    def warnings(self, limit=MAX_WARNINGS):
        """``[{"run", "file" (relative to the logdir), "offset", "reason"}]``: every record and file left out."""
        out = []
        with self._lock:
            runs = sorted(self._runs.items())
        for run, r in runs:
            for name, mf in list(r.files.items()):
                rel = name if run == "." else "%s/%s" % (run, name)
                for offset, reason in mf.problems:
                    if len(out) >= limit:
                        return out
                    out.append({"run": run, "file": rel, "offset": offset, "reason": reason})
                hidden = mf.problem_count - len(mf.problems)
                if hidden > 0 and len(out) < limit:
                    out.append({"run": run, "file": rel, "offset": None,
                                "reason": "%d more problems in this file" % hidden})
        return out

    def stats(self):
        """``{"runs", "files", "records", "skipped"}`` over the whole logdir."""
        with self._lock:
            runs = list(self._runs.values())
        files = [mf for r in runs for mf in r.files.values()]
        return {"runs": len(runs), "files": len(files), "records": sum(mf.records for mf in files),
                "skipped": sum(mf.skipped for mf in files)}


def _scalar(tensor):
    """The number of a scalar tensor (float), or None."""
    try:
        values = tensor_util.make_ndarray(tensor)
    except Exception:
        return None
    if values.size != 1 or values.dtype.kind not in "fiub":
        return None
    return float(values.reshape(()))


def _blobs(tensor):
    """The byte strings of a blob-sequence tensor (``DT_STRING``), or None."""
    return list(tensor.string_val) if tensor.dtype == types_pb2.DT_STRING else None
