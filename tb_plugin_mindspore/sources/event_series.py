"""Every point of the scalar and interval series in a run's event files, read by the plugin itself into
``series_store`` columns: :class:`EventSeries`.

TensorBoard's loaders keep a sample of each series (10,000 scalars per tag with this plugin's limits), so a long run
cannot be zoomed into exactly through them. This reader keeps every point compactly instead, for the runs the tab
asked for (``want``): the run's event files (names holding ``tfevents``, directly in the run's folder, in name
order as TensorBoard reads them) are read incrementally with the same record reader as ``*_MS`` files
(``io/records.RecordFile``: damaged records skipped, replaced files read again), each file a new segment of its series
(``timeline``). A scalar is what TensorBoard takes for one: a ``simple_value``, or a tensor of the ``scalars``
plugin; an interval series is this plugin's ``interval/<tag>`` rows.

``start`` reads the wanted runs in a daemon thread (a run asked for the first time at once, then every
``interval`` seconds, at once again while data is pending); ``sync(run)`` reads what is new in a run now (a request
calls it for a run already read, so that its answer is as new as TensorBoard's).
"""

import functools
import logging
import struct
import threading
from array import array

import numpy as np
from tensorboard.compat.proto import event_pb2, types_pb2

from .. import metadata
from ..io import fs
from ..io.records import RecordFile
from . import points, series_store

logger = logging.getLogger(__name__)

SYNC_BYTES = 4 << 20           # what a request reads itself before answering from TensorBoard's sample instead
SYNC_WAIT_SECS = 0.5           # how long a request waits for the background thread's read to end
RELOAD_BYTES = 4 << 20         # per run and call in the background thread (small: less garbage at once)
_SCALAR, _INTERVAL, _OTHER = "scalar", "interval", "other"
_INTERVAL_WIDTH = len(metadata.INTERVAL_FIELDS)


def for_logdir(logdir, interval=5.0, roots=None, folder_of=None):
    """A started :class:`EventSeries` of a local ``logdir`` (or of the local entries of ``roots``, a
    ``logdir_spec.Roots`` of ``--logdir_spec``); None for none or a remote one (whose every read is a request:
    there the routes use TensorBoard's sample). ``folder_of(run)``: the run's folder or folders (a run written in
    parts), None for a name that is no folder; by default the folder of that name."""
    if roots is not None and roots.is_spec:
        if not roots or any(fs.is_remote(r.path) for r in roots):
            return None
        events = EventSeries(roots.spec, folder_of=folder_of or roots.folder)
        events.start(interval=interval)
        return events
    if not logdir or fs.is_remote(logdir):
        return None
    events = EventSeries(logdir, folder_of=folder_of)
    events.start(interval=interval)
    return events


def run_folder(logdir, run):
    """The folder of ``run`` under ``logdir``, or None for a name that is not a folder below it."""
    if run in (".", ""):
        return logdir
    parts = run.replace("\\", "/").split("/")
    if run.startswith("/") or any(p in ("", ".", "..") for p in parts) or ":" in parts[0]:
        return None
    return fs.join(logdir, *parts)


class _Run:
    __slots__ = ("folder", "files", "order", "kinds", "scalars", "intervals", "version", "caught_up", "undecodable")

    def __init__(self, folder):
        # One folder, or the folders of a run written in parts (``run_fold``: ``<run>/part_N``), in order.
        self.folder = (folder,) if isinstance(folder, str) else tuple(folder)
        self.caught_up = False  # read to the end of its files once
        self.files = {}        # name -> RecordFile
        self.order = []        # names in the order first read
        self.kinds = {}        # tag -> _SCALAR / _INTERVAL / _OTHER
        self.scalars = {}      # tag -> Series
        self.intervals = {}    # scalar tag -> Series of its interval rows
        self.version = 0
        self.undecodable = 0   # records with good checksums that do not decode (skipped)


class EventSeries:
    """See the module doc. ``logdir``: TensorBoard's (local path or URL)."""

    def __init__(self, logdir, folder_of=None):
        self.logdir = str(logdir)
        self._folder_of = folder_of or (lambda run: run_folder(self.logdir, run))
        self._runs = {}
        self._lock = threading.Lock()          # the runs table
        self._read_lock = threading.Lock()     # one reader at a time
        self._thread = None
        self._stopping = threading.Event()
        self._wake = threading.Event()

    # -- what is read ------------------------------------------------------------------------------------------
    def want(self, run):
        """Starts keeping ``run`` (a name from TensorBoard's run listing); False for a name that is no folder."""
        with self._lock:
            if run in self._runs:
                return True
            folder = self._folder_of(run)
            if folder is None:
                return False
            self._runs[run] = _Run(folder)
        self._wake.set()
        return True

    def series(self, run, tag):
        with self._lock:
            r = self._runs.get(run)
            return r.scalars.get(tag) if r is not None else None

    def interval(self, run, tag):
        with self._lock:
            r = self._runs.get(run)
            return r.intervals.get(tag) if r is not None else None

    def caught_up(self, run):
        """Whether the run's files were read to their end once (after that, ``sync`` only reads what is new)."""
        with self._lock:
            r = self._runs.get(run)
            return bool(r is not None and r.caught_up)

    def skipped_undecodable(self, run):
        """Whether records of the run were skipped because they do not decode: TensorBoard's fast loader stops
        reading a file at such a record, so its sample of the series ends there while this store goes on."""
        with self._lock:
            r = self._runs.get(run)
            return bool(r is not None and r.undecodable)

    def version(self, run):
        with self._lock:
            r = self._runs.get(run)
            return r.version if r is not None else None

    def nbytes(self):
        """Bytes held by every kept series (columns and pyramids)."""
        with self._lock:
            runs = list(self._runs.values())
        return sum(s.nbytes for r in runs for group in (r.scalars, r.intervals) for s in list(group.values()))

    # -- reading -------------------------------------------------------------------------------------------------
    def sync(self, run, max_bytes=SYNC_BYTES, wait=SYNC_WAIT_SECS):
        """Reads about ``max_bytes`` of the run's new data now; True when more is waiting. Waits at most ``wait``
        seconds for a read in progress (the background thread's) to end; None when it did not."""
        with self._lock:
            r = self._runs.get(run)
        if r is None:
            return False
        if not (self._read_lock.acquire() if wait is None else self._read_lock.acquire(timeout=wait)):
            return None
        try:
            with self._lock:
                r = self._runs.get(run, r)
            _mmap_threshold(MMAP_THRESHOLD_READING)
            try:
                pending = self._read_run(run, r, max_bytes)
            finally:
                _mmap_threshold(MMAP_THRESHOLD_OTHERWISE)
            if not pending:
                with self._lock:
                    r = self._runs.get(run, r)
                    first = not r.caught_up
                    r.caught_up = True
                    kept = list(r.scalars.values()) + list(r.intervals.values())
                if first:   # a long first read leaves room to grow in every column: give it back once
                    for series in kept:
                        series.shrink()
                    _trim_heap()
            return pending
        finally:
            self._read_lock.release()

    def take(self, run, folder, name, mf, payloads):
        """Adds ``payloads``, read by another reader from event file ``name`` of ``run`` through ``mf`` (its
        ``RecordFile``), as if read here: the commands' event reader reads each file once for both. ``mf`` is
        kept, so a later :meth:`sync` goes on from where it stopped; a file read again from its start (another
        ``mf``) starts the run over. Call :meth:`taken` once the files were read to their end."""
        with self._lock:
            r = self._runs.get(run)
            if r is None or (name in r.files and r.files[name] is not mf):
                r = self._runs[run] = _Run(folder)
        if name not in r.files:
            r.files[name] = mf
            r.order.append(name)
        if payloads:
            self._add(r, name, payloads, mf)

    def taken(self):
        """Every run given to :meth:`take` is read to the end of its files: later reads are only what is new."""
        with self._lock:
            runs = list(self._runs.values())
        for r in runs:
            r.caught_up = True
            for series in list(r.scalars.values()) + list(r.intervals.values()):
                series.shrink()

    def _read_run(self, run, r, budget):
        folders = self._folder_of(run)
        if folders is not None:   # a run written in parts gains a folder now and then
            folders = (folders,) if isinstance(folders, str) else tuple(folders)
            if folders and folders != r.folder:
                r.folder = folders
        paths = self._event_files(r.folder)
        names = [label for _, label in paths]
        where = dict((label, path) for path, label in paths)
        if r.order and (names[:len(r.order)] != r.order
                        or any(getattr(r.files[n], "restarts", 0) for n in r.order)):
            # A file appeared before those read, vanished or was replaced: read the run again from its start.
            r = _Run(r.folder)
            with self._lock:
                self._runs[run] = r
        pending = False
        for name in names:
            mf = r.files.get(name)
            if mf is None:
                mf = r.files[name] = RecordFile(where[name])
                r.order.append(name)
            if mf.stat_size() <= mf.offset:
                continue
            if budget <= 0:
                return True
            payloads, _, nread = mf.read_payloads(budget)
            if getattr(mf, "restarts", 0):
                return self._read_run(run, r, budget)   # replaced while being read: start over
            budget -= max(nread, 1)
            if payloads:
                self._add(r, name, payloads, mf)
            pending = pending or mf.has_unread()
        return pending

    @staticmethod
    def _event_files(folders):
        """``[(path, label)]`` of the event files directly in each folder, folder by folder, in name order; the
        label is the file name (``<folder name>/<file name>`` for a run of several folders)."""
        out = []
        for folder in folders:
            try:
                for _, _, names in fs.walk(folder):
                    for n in sorted(n for n in names if "tfevents" in n):
                        label = n if len(folders) == 1 else fs.basename(folder) + "/" + n
                        out.append((fs.join(folder, n), label))
                    break
            except OSError:
                pass
        return out

    def _add(self, r, name, payloads, mf=None):
        """Decodes ``payloads`` (event records of file ``name``) into the run's series, through compact buffers (no
        Python object kept per point)."""
        scalars, intervals = {}, {}
        kinds = r.kinds
        parse = event_pb2.Event.FromString
        for data in payloads:
            try:
                event = parse(data)
            except Exception:  # damaged content behind a good checksum: skipped (status names it, event_headers)
                r.undecodable += 1
                continue
            if not event.HasField("summary"):
                continue
            step, wall = event.step, event.wall_time
            for value in event.summary.value:
                tag = value.tag
                kind = kinds.get(tag)
                if kind is None or value.HasField("metadata"):
                    kind = kinds[tag] = _kind_of(value, kind)
                if kind == _SCALAR:
                    which = value.WhichOneof("value")
                    number = value.simple_value if which == "simple_value" else (
                        points.scalar_value(value.tensor) if which == "tensor" else None)
                    if number is not None:
                        buf = scalars.get(tag)
                        if buf is None:
                            buf = scalars[tag] = (array("q"), array("d"), array("f"))
                        buf[0].append(step)
                        buf[1].append(wall)
                        buf[2].append(number)
                elif kind == _INTERVAL and value.WhichOneof("value") == "tensor":
                    row = _interval_row(value.tensor)
                    if row is not None:
                        buf = intervals.get(tag)
                        if buf is None:
                            buf = intervals[tag] = (array("q"), array("d"))
                        buf[0].append(step)
                        buf[1].extend(row)
        for tag, (steps, walls, values) in scalars.items():
            self._series(r.scalars, tag, 1).append(np.frombuffer(steps, dtype=np.int64),
                                                   np.frombuffer(walls, dtype=np.float64),
                                                   np.frombuffer(values, dtype=np.float32), source=name)
        for tag, (steps, rows) in intervals.items():
            steps = np.frombuffer(steps, dtype=np.int64)
            self._series(r.intervals, metadata.scalar_tag_of_interval(tag), _INTERVAL_WIDTH).append(
                steps, np.zeros(steps.size), np.frombuffer(rows, dtype=np.float64).reshape(-1, _INTERVAL_WIDTH),
                source=name)
        if scalars or intervals:
            r.version += 1

    def _series(self, table, tag, width):
        series = table.get(tag)
        if series is None:
            series = series_store.Series(width=width)
            with self._lock:
                table[tag] = series
        return series

    # -- background ----------------------------------------------------------------------------------------------
    def start(self, interval=5.0):
        """Reads the wanted runs in a daemon thread (again at once while data is pending, else every ``interval``
        seconds). ``interval`` <= 0 (TensorBoard's ``--reload_interval 0``: load once) reads a run when it is first
        wanted and then only on requests (``sync``), never in a loop. Twice: no-op."""
        if self._thread is not None and self._thread.is_alive():
            return
        self._stopping.clear()

        def loop():
            while not self._stopping.is_set():
                pending = False
                with self._lock:
                    runs = list(self._runs)
                for run in runs:
                    try:
                        pending = bool(self.sync(run, RELOAD_BYTES, wait=None)) or pending
                    except Exception:  # an environment failure, not file contents: log, keep going
                        logger.exception("mindspore plugin: reading the event files of run %r failed", run)
                if not pending:
                    self._wake.wait(interval if interval > 0 else None)
                    self._wake.clear()

        self._thread = threading.Thread(target=loop, name="tb-mindspore-event-series", daemon=True)
        self._thread.start()

    def stop(self, timeout=10.0):
        self._stopping.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
            self._thread = None


_DOUBLES = struct.Struct("<%dd" % _INTERVAL_WIDTH)


# glibc's mmap threshold while the store reads (blocks this large get a mapping of their own, returned to the system
# when freed) and otherwise (glibc's own upper bound for its dynamic threshold: the usual state of a long-lived server).
MMAP_THRESHOLD_READING = 1 << 20
MMAP_THRESHOLD_OTHERWISE = 32 << 20


@functools.lru_cache(maxsize=1)
def _libc():
    """glibc, or None elsewhere."""
    try:
        import ctypes

        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def _mmap_threshold(nbytes):
    """``mallopt(M_MMAP_THRESHOLD, nbytes)`` (glibc; elsewhere nothing). While a run is read, the columns outgrown
    as a series grows and the decoder's batches are then mapped and given back when freed; with glibc's dynamic
    threshold they stayed in the heap: a 1,000,000-step run cost the server 43 MB per million stored points instead
    of 29 (bench/long_series.py). Answers are built with the threshold back up (fresh mappings for their large
    temporaries cost page faults)."""
    libc = _libc()
    if libc is not None and hasattr(libc, "mallopt"):
        libc.mallopt(-3, int(nbytes))      # M_MMAP_THRESHOLD


def _trim_heap():
    """Hands the C heap's free memory back to the system (glibc's ``malloc_trim``; elsewhere nothing): decoding a
    long run leaves megabytes of freed small blocks that the allocator would otherwise keep."""
    libc = _libc()
    if libc is not None and hasattr(libc, "malloc_trim"):
        libc.malloc_trim(0)


def _interval_row(tensor):
    """The 5 numbers of an interval row (a tuple), or None: raw float64 content (what the callbacks write) is
    unpacked directly, anything else through ``points.tensor_values``."""
    content = tensor.tensor_content
    if tensor.dtype == types_pb2.DT_DOUBLE and len(content) == _DOUBLES.size:
        return _DOUBLES.unpack(content)
    values = points.tensor_values(tensor)
    return tuple(values.tolist()) if values is not None and values.size == _INTERVAL_WIDTH else None


def _kind_of(value, known):
    """What a summary value of this tag is (its metadata, on the first value of a tag, decides)."""
    if value.WhichOneof("value") == "simple_value":
        return _SCALAR
    if not value.HasField("metadata"):
        return known or _OTHER
    plugin = value.metadata.plugin_data.plugin_name
    if plugin == "scalars":
        return _SCALAR
    if plugin == metadata.PLUGIN_NAME and metadata.scalar_tag_of_interval(value.tag) is not None:
        try:
            content = metadata.parse_content(value.metadata.plugin_data.content)
        except (metadata.ContentError, ValueError):
            return _OTHER
        return _INTERVAL if content.get("kind") == metadata.KIND_INTERVAL else _OTHER
    return _OTHER

