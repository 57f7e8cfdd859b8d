"""Asynchronous, crash-safe writing of TensorBoard event files.

The training thread calls :class:`SummaryWriter` methods, which only put plain numbers on a bounded queue and
return. A background thread builds the protos (``summary.py``), frames them (``records.py``) and writes them.

* Never blocks training: when the queue is full the item is dropped, counted, and a warning is logged (at most
  once every 30 s); ``dropped`` tells how many.
* Flushes at least every ``flush_secs`` seconds, so after ``kill -9`` everything older than that is on disk.
* ``close()`` drains the queue and is safe to call twice; all open writers are closed at interpreter exit. With
  :func:`install_signal_handlers`, SIGINT (Ctrl-C) writes out everything queued and leaves the writers open (if
  the interrupt is caught and training goes on, recording goes on), SIGTERM closes them when it ends the process.
* Nothing raises into the caller: a write error (disk full, read-only, permissions) stops this writer with one
  warning and training goes on; a run folder or event file removed while the run writes is noticed at the next
  write, warned about once, recreated, and writing continues in a new part (with the run info and hparams).
* Optional size-based rotation (``max_file_bytes``): the file is closed and a new part
  ``<name>.part0001``, ``.part0002``, ... is started (names sort in write order, as TensorBoard reads them).
* Optional budget for this writer's files (``max_run_bytes``): after a rotation, its oldest closed parts are
  removed, with a log line, until its own files fit (other writers' files, e.g. other ranks' subfolders, are not
  counted). Run-level values written with ``sticky=True`` (run info, hparams) are written again into the current
  part when the part holding them is removed.
* A remote ``logdir`` (``s3://bucket/run``, any URL ``reading.fs`` reads): the files are written as above into a
  local staging folder, and :class:`_Uploader` (its own thread) uploads them: each closed part once, the live part
  as far as it was flushed, at most every ``upload_secs`` seconds and on ``flush()`` / ``close()``. Object stores
  cannot append, so the live part is sent whole each time; once its uploads add up to ``REUPLOAD_FACTOR`` times its
  size the writer starts a new part, which keeps the bytes sent within about that factor of the bytes written
  (linear in the run's length, not quadratic). A store that cannot be reached is warned about once; the data stays
  in the staging folder and uploads are retried (with backoff). The staging folder is removed once everything is
  uploaded at close, and kept (with a warning naming it) otherwise.
"""

import atexit
import collections
import logging
import os
import signal
import shutil
import socket
import tempfile
import threading
import time
import weakref

from tensorboard.compat.proto import event_pb2, summary_pb2

from ..io import fs, records
from . import summary, wire, write_faults
from .. import contract, metadata

logger = logging.getLogger(__name__)

_STOP = object()
_POLL_SECS = 0.05           # the writer thread looks at its queue this often
REUPLOAD_FACTOR = 8         # a remote run's live part is rotated once its uploads add up to this times its size
_MAX_RETRY_SECS = 60.0
_open_writers = weakref.WeakSet()
_open_writers_lock = threading.Lock()


class _Marker:
    """Put on the queue by flush(): set once everything queued before it is written and flushed."""

    __slots__ = ("done",)

    def __init__(self):
        self.done = False


def check_sizes(max_file_bytes=None, max_run_bytes=None):
    """Validates rotation / budget sizes; returns ``(max_file_bytes, max_run_bytes)`` with the default part size.

    Raises ValueError for a size below 1 KiB or a budget smaller than two parts.
    """
    for name, value in (("max_file_bytes", max_file_bytes), ("max_run_bytes", max_run_bytes)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1024):
            raise ValueError("%s must be None or an int >= 1024, got %r" % (name, value))
    if max_run_bytes is not None:
        if max_file_bytes is None:
            max_file_bytes = max(1024, min(64 << 20, max_run_bytes // 4))
        if max_file_bytes * 2 > max_run_bytes:
            raise ValueError("max_run_bytes (%d) must be at least twice max_file_bytes (%d)"
                             % (max_run_bytes, max_file_bytes))
    return max_file_bytes, max_run_bytes


class SummaryWriter:
    """Writes one event file (``events.out.tfevents.<time>.<host>.<pid>.<n>``) in ``logdir``.

    Args:
      logdir: folder of the run; created if missing. A URL (``s3://bucket/run``) is written to a local staging
        folder (``local_dir``) and uploaded (see the module doc).
      flush_secs: longest time a recorded value waits in memory before it reaches the file.
      max_queue: items that may wait for the writer thread; more are dropped and counted.
      max_file_bytes: start a new part when the current file reaches this size (None: never rotate). With only
        ``max_run_bytes`` set, parts are a quarter of the budget (at most 64 MiB).
      max_run_bytes: budget for this writer's files; its oldest closed parts are removed first.
      upload_secs: for a remote ``logdir``, the longest time flushed data waits before it is uploaded.
    """

    _counter = 0
    _counter_lock = threading.Lock()

    def __init__(self, logdir, flush_secs=2.0, max_queue=10000, max_file_bytes=None, max_run_bytes=None,
                 upload_secs=10.0):
        if flush_secs <= 0:
            raise ValueError("flush_secs must be > 0, got %r" % (flush_secs,))
        if isinstance(upload_secs, bool) or not isinstance(upload_secs, (int, float)) or not upload_secs > 0:
            raise ValueError("upload_secs must be a number > 0, got %r" % (upload_secs,))
        if max_queue < 1:
            raise ValueError("max_queue must be >= 1, got %r" % (max_queue,))
        max_file_bytes, max_run_bytes = check_sizes(max_file_bytes, max_run_bytes)
        self.logdir = fs.normalize(logdir) if fs.is_remote(logdir) else str(logdir)
        with SummaryWriter._counter_lock:
            SummaryWriter._counter += 1
            counter = SummaryWriter._counter
        name = "events.out.tfevents.%010d.%s.%d.%d" % (int(time.time()), socket.gethostname(), os.getpid(), counter)
        # Where the files are written: the logdir itself, or a local staging folder for a remote logdir.
        self.local_dir = _staging_dir(self.logdir, name) if fs.is_remote(self.logdir) else self.logdir
        self.base_path = os.path.join(self.local_dir, name)
        self.path = self.base_path
        self.parts = [self.path]    # every part this writer made that still exists, oldest first
        self.removed_parts = []
        self.recreated = 0          # times the file (or the whole run folder) vanished and was made again
        self.max_file_bytes = max_file_bytes
        self.max_run_bytes = max_run_bytes
        self._part_index = 0
        self._file_bytes = 0
        self._sticky = []           # [event bytes, part]: written again when the part holding them is removed
        self._flush_secs = float(flush_secs)
        # A deque, not a queue.Queue: append / popleft take no Python-level lock, so a signal handler that
        # interrupts the training thread anywhere can still wait for the writer without deadlocking.
        self._items = collections.deque()
        self._max_queue = int(max_queue)
        self._wake = threading.Event()
        self.dropped = 0
        self.failed = None          # the OSError that stopped writing, if any
        self._last_drop_warning = 0.0
        self._closed = False
        self._lock = threading.Lock()
        self._file = None
        self._tags_with_metadata = set()
        self._interval_metadata_bytes = {}
        self._flushed = (self.path, 0)     # (part, bytes flushed to it): what an upload may send of the live part
        self._rotate_requested = False
        try:
            os.makedirs(self.local_dir, exist_ok=True)
            self._file = open(self.path, "ab")
            self._write_header()
            self._file.flush()
            self._flushed = (self.path, self._file_bytes)
        except (OSError, ValueError) as e:
            self._fail(e)
        self.uploader = _Uploader(self, float(upload_secs)) if self.local_dir != self.logdir else None
        self._thread = threading.Thread(target=self._run, name="tb-mindspore-writer", daemon=True)
        self._thread.start()
        with _open_writers_lock:
            _open_writers.add(self)

    @property
    def closed(self):
        """True once close() was called (by the program, at exit or by a signal that ends the process)."""
        return self._closed

    # -- called from the training thread: cheap, never blocks ---------------------------------------------------
    def scalar(self, tag, value, step, wall_time=None):
        self._submit(step, wall_time, summary.scalar, (tag, float(value)))

    def interval(self, scalar_tag, minimum, mean, maximum, count, nonfinite, step, wall_time=None):
        self._submit(step, wall_time, summary.interval, (scalar_tag, minimum, mean, maximum, count, nonfinite))

    def layers(self, tag, layer_names, values, step, wall_time=None, frozen=()):
        """One value per layer; ``frozen``: the names the optimizer does not train (marked in the content)."""
        self._submit(step, wall_time, summary.layers, (tag, tuple(layer_names), values, "", tuple(frozen)))

    def histogram(self, tag, values, step, wall_time=None):
        self._submit(step, wall_time, summary.histogram, (tag, values))

    def run_info(self, info, step=0):
        """Run-level facts (``_meta/run_info``); kept in the folder even when old parts are removed."""
        self._submit(step, None, summary.run_info, (dict(info),), sticky=True)

    def hparams(self, hparams, step=0, start_time=None):
        """Hyperparameters in TensorBoard's HParams format (the HParams tab shows the run)."""
        self._submit(step, None, summary.hparams_values, (dict(hparams), start_time), sticky=True)

    def graph(self, graph_def, step=0, wall_time=None):
        """The model graph: a TensorBoard ``GraphDef`` (or its bytes) as the run's graph, which TensorBoard's Graphs
        tab and the MindSpore tab's graph view draw; kept in the folder even when old parts are removed."""
        data = graph_def if isinstance(graph_def, (bytes, bytearray)) else graph_def.SerializeToString()
        self._submit(step, wall_time, _graph_event, (bytes(data),), sticky=True)

    def value(self, value_proto, step, wall_time=None, sticky=False):
        """Writes an already built ``Summary.Value`` (for kinds with their own builders)."""
        self._submit(step, wall_time, lambda v: v, (value_proto,), sticky=sticky)

    def _submit(self, step, wall_time, builder, args, sticky=False):
        if self._closed or self.failed is not None:
            return
        if len(self._items) >= self._max_queue:
            self.dropped += 1
            now = time.monotonic()
            if now - self._last_drop_warning > 30:
                self._last_drop_warning = now
                logger.warning(
                    "tb-mindspore: writer queue full, %d value(s) dropped so far (raise max_queue or record less often)",
                    self.dropped,
                )
            return
        self._items.append((int(step), time.time() if wall_time is None else float(wall_time), builder, args, sticky))

    # -- the writer thread ---------------------------------------------------------------------------------------
    def _run(self):
        last_flush = time.monotonic()
        dirty = False
        while True:
            stop = False
            markers = []
            try:
                written = 0
                while self._items:
                    item = self._items.popleft()
                    if item is _STOP:
                        stop = True
                        break
                    if isinstance(item, _Marker):
                        markers.append(item)
                        continue
                    if self.failed is None:
                        self._write_item(item)
                        dirty = True
                        written += 1
                        if written % 256 == 0 and time.monotonic() - last_flush >= self._flush_secs:
                            break       # a long burst: flush on time, then go on
                if stop or markers or (dirty and time.monotonic() - last_flush >= self._flush_secs):
                    self._flush_file()
                    dirty = False
                    last_flush = time.monotonic()
                if self._rotate_requested and not stop and self.failed is None:
                    self._rotate_requested = False
                    self._rotate()
            except Exception:   # never let the writer thread die: a dead thread would block flush and close
                logger.exception("tb-mindspore: writer error on %s", self.path)
            finally:
                for m in markers:
                    m.done = True
            if stop:
                return
            if not self._items:
                self._wake.wait(_POLL_SECS)
                self._wake.clear()

    def _write_item(self, item):
        step, wall_time, builder, args, sticky = item
        encode = _ENCODERS.get(builder)
        if encode is not None and not sticky:
            self._write_encoded(step, wall_time, encode, args)
            return
        try:
            value = builder(*args)
        except Exception:  # a bad value must not stop the writer
            logger.exception("tb-mindspore: could not build a summary for step %d", step)
            return
        if value is None:
            return
        self._check_file()
        if isinstance(value, event_pb2.Event):   # a whole event (the model graph)
            value.wall_time, value.step = wall_time, step
            data = records.frame(value.SerializeToString())
            if sticky:
                self._sticky.append([data, self.path])
            self._write_bytes(data)
            return
        values = list(value) if isinstance(value, (list, tuple)) else [value]
        if not sticky:
            # TensorBoard reads a tag's metadata from its first event only: repeating it (e.g. 200 layer names on
            # every per-layer vector) would multiply the file size. Each part file carries it once.
            for v in values:
                if v.HasField("metadata"):
                    if v.tag in self._tags_with_metadata:
                        v.ClearField("metadata")
                    else:
                        self._tags_with_metadata.add(v.tag)
        event = event_pb2.Event(wall_time=wall_time, step=step, summary=summary_pb2.Summary(value=values))
        data = records.frame(event.SerializeToString())
        if sticky:
            self._sticky.append([data, self.path])
        self._write_bytes(data)
        if self.max_file_bytes is not None and self._file_bytes >= self.max_file_bytes and self.failed is None:
            self._rotate()

    def _write_encoded(self, step, wall_time, encode, args):
        """A scalar or an interval: its event encoded directly (``wire``), as protobuf would write it."""
        self._check_file()
        try:
            value = encode(self, *args)
        except Exception:  # a bad value must not stop the writer
            logger.exception("tb-mindspore: could not build a summary for step %d", step)
            return
        self._write_bytes(records.frame(wire.event(wall_time, step, (value,))))
        if self.max_file_bytes is not None and self._file_bytes >= self.max_file_bytes and self.failed is None:
            self._rotate()

    def _interval_metadata(self, scalar_tag):
        """The serialised metadata of ``scalar_tag``'s interval series, made once per tag."""
        found = self._interval_metadata_bytes.get(scalar_tag)
        if found is None:
            found = self._interval_metadata_bytes[scalar_tag] = metadata.create_summary_metadata(
                metadata.KIND_INTERVAL, fields=list(contract.interval.FIELDS), of=scalar_tag).SerializeToString()
        return found

    def _write_header(self):
        header = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        self._write_bytes(records.frame(header.SerializeToString()))

    def _write_bytes(self, data):
        if self.failed is not None or self._file is None:
            return
        try:
            with self._lock:
                self._file.write(data)
                self._file_bytes += len(data)
        except (OSError, ValueError) as e:
            self._fail(e)

    def _flush_file(self):
        try:
            with self._lock:
                if self._file is not None and not self._file.closed:
                    self._file.flush()
                    self._flushed = (self.path, self._file_bytes)
        except (OSError, ValueError) as e:
            self._fail(e)

    def _fail(self, error):
        if self.failed is None:
            self.failed = error
            write_faults.report(self.path, error, "writing %s" % self.path, scope=self.logdir)   # once per fault
        with self._lock:
            if self._file is not None:
                try:
                    self._file.close()
                except (OSError, ValueError):   # unwritable buffered bytes: nothing more to do with them
                    pass
                self._file = None

    def _check_file(self):
        """If our file was removed (its folder deleted, or the file itself), start a new part in a new folder."""
        if self.failed is not None or self._file is None:
            return
        try:
            gone = os.fstat(self._file.fileno()).st_nlink == 0
        except ValueError:      # a closed file object: the write reports it
            return
        except OSError:
            gone = True
        if not gone:
            return
        self.recreated += 1
        if self.recreated == 1:
            logger.warning("tb-mindspore: %s was removed while the run was writing it; recreating %s and "
                           "going on in a new file", os.path.basename(self.path), self.logdir)
        if self.path in self.parts:
            self.parts.remove(self.path)
        self._new_part()
        for entry in self._sticky:
            self._write_bytes(entry[0])
            entry[1] = self.path

    # -- rotation and budget (writer thread) -----------------------------------------------------------------------
    def _new_part(self):
        """Closes the current file and opens the next part (recreating the folder if it is gone)."""
        try:
            with self._lock:
                try:
                    self._file.close()
                except (OSError, ValueError) as e:
                    logger.warning("tb-mindspore: could not finish %s: %s", self.path, e)
                self._file = None
                self._part_index += 1
                self.path = "%s.part%04d" % (self.base_path, self._part_index)
                os.makedirs(self.local_dir, exist_ok=True)
                self._file = open(self.path, "ab")
                self._file_bytes = 0
                self._tags_with_metadata = set()
                self.parts.append(self.path)
        except OSError as e:
            self._fail(e)
            return False
        self._write_header()
        return self.failed is None

    def _rotate(self):
        if self._new_part() and self.max_run_bytes is not None:
            self._enforce_budget()

    def _enforce_budget(self):
        total = _files_bytes(self.parts)
        while total > self.max_run_bytes and len(self.parts) > 1:
            oldest = self.parts.pop(0)
            try:
                size = os.path.getsize(oldest)
                os.remove(oldest)
            except OSError as e:
                logger.warning("tb-mindspore: could not remove %s to keep the run under its budget: %s", oldest, e)
                break
            total -= size
            self.removed_parts.append(oldest)
            logger.warning("tb-mindspore: removed %s (%d bytes) to keep %s under its budget of %d bytes",
                           os.path.basename(oldest), size, self.logdir, self.max_run_bytes)
            for entry in self._sticky:
                if entry[1] == oldest:
                    self._write_bytes(entry[0])
                    entry[1] = self.path

    # -- lifecycle -----------------------------------------------------------------------------------------------
    def flush(self, timeout=10.0, _from_signal=False):
        """Waits until everything submitted so far is written and flushed (at most ``timeout`` seconds)."""
        if self._closed or self.failed is not None or not self._thread.is_alive():
            return
        marker = _Marker()
        self._items.append(marker)
        if not _from_signal:    # Event.set takes a lock the interrupted thread may hold
            self._wake.set()
        deadline = time.monotonic() + timeout
        while not marker.done and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.002)
        if self.uploader is not None and not _from_signal:
            self.uploader.upload_now(deadline)

    def close(self, timeout=30.0):
        """Writes everything still queued, then closes the file. Safe to call more than once; never raises."""
        if self._closed:
            return
        self._closed = True
        try:
            self._items.append(_STOP)
            self._wake.set()
            self._thread.join(timeout)
            error = None
            if self._lock.acquire(timeout=5.0):
                try:
                    if self._file is not None:
                        self._file.flush()
                        self._file.close()
                except (OSError, ValueError) as e:   # unwritable buffered bytes (disk full)
                    error = e
                finally:
                    self._file = None
                    self._lock.release()
            if error is not None:
                self._fail(error)
            if self.uploader is not None:
                self.uploader.close(timeout)
        except Exception:   # never let monitoring turn the end of training into a crash
            logger.exception("tb-mindspore: error while closing %s", self.path)
        if _open_writers_lock.acquire(timeout=1.0):
            try:
                _open_writers.discard(self)
            finally:
                _open_writers_lock.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _staging_dir(url, name):
    """A new local folder for the files of a remote run (``TB_MINDSPORE_STAGING`` or the temporary folder)."""
    root = os.environ.get("TB_MINDSPORE_STAGING") or os.path.join(tempfile.gettempdir(), "tb-mindspore-staging")
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in url.split("://", 1)[-1])[-80:]
    try:
        os.makedirs(root, exist_ok=True)
        return tempfile.mkdtemp(prefix=safe + ".", dir=root)
    except OSError:    # the writer reports it when it cannot create its file there
        return os.path.join(root, "%s.%s" % (safe, ".".join(name.rsplit(".", 2)[-2:])))


class _Uploader:
    """Uploads a remote run's staged parts (see the module doc) from its own thread; never raises.

    ``bytes_sent`` / ``uploads`` count what reached the store; ``pending`` tells whether anything flushed is not
    there yet; ``failing`` holds the last error while the store cannot be reached.
    """

    def __init__(self, writer, upload_secs):
        self.writer = writer
        self.url = writer.logdir
        self.upload_secs = upload_secs
        self.bytes_sent = 0
        self.uploads = 0
        self.failing = None
        self._sent = {}            # local part -> bytes of it the store holds
        self._sent_total = {}      # local part -> bytes sent for it so far (every upload of it)
        self._removed = set()
        self._requested = 0        # upload requests (flush, close) and how many are done
        self._done = 0
        self._stopping = False
        self._failures = 0
        self._wake = threading.Event()
        self._thread = threading.Thread(target=self._run, name="tb-mindspore-uploader", daemon=True)
        self._thread.start()

    def remote_path(self, local_part):
        return fs.join(self.url, os.path.basename(local_part))

    @property
    def pending(self):
        w = self.writer
        live, flushed = w._flushed
        for part in list(w.parts):
            size = flushed if part == live else _size(part)
            if self._sent.get(part, -1) != size and size > 0:
                return True
        return bool(set(w.removed_parts) - self._removed)

    def upload_now(self, deadline):
        """Asks for an upload of everything flushed and waits for it until ``deadline`` (monotonic time)."""
        self._requested += 1
        wanted = self._requested
        self._wake.set()
        if self.failing is not None and not self._stopping:
            return      # the store is down: a flush must not hold training up (retried in the background)
        while self._done < wanted and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.005)

    def close(self, timeout):
        """The last upload (the writer's file is closed by now); removes the staging folder when it succeeded."""
        self._stopping = True
        self.upload_now(time.monotonic() + timeout)
        self._thread.join(1.0)
        if self.failing is None and not self.pending:
            shutil.rmtree(self.writer.local_dir, ignore_errors=True)
        else:
            logger.warning("tb-mindspore: not everything reached %s (%s); the run's files are kept in %s",
                           self.url, self.failing or "timed out", self.writer.local_dir)

    def _run(self):
        while True:
            delay = self.upload_secs if not self._failures else min(_MAX_RETRY_SECS,
                                                                   self.upload_secs * 2 ** self._failures)
            self._wake.wait(delay)
            self._wake.clear()
            wanted, stopping = self._requested, self._stopping
            try:
                self._sync()
            except Exception:   # never let the uploader die: later uploads may still work
                logger.exception("tb-mindspore: upload error for %s", self.url)
            self._done = wanted
            if stopping:
                return

    def _sync(self):
        w = self.writer
        live, flushed = w._flushed
        try:
            for part in list(w.parts):
                size = flushed if part == live else _size(part)
                if size <= 0 or self._sent.get(part) == size:
                    continue
                with open(part, "rb") as f:
                    data = f.read(size)
                fs.put_bytes(self.remote_path(part), data)
                self._sent[part] = len(data)
                self._sent_total[part] = self._sent_total.get(part, 0) + len(data)
                self.bytes_sent += len(data)
                self.uploads += 1
                if part == live and part == w.path and self._sent_total[part] >= REUPLOAD_FACTOR * len(data):
                    w._rotate_requested = True
                    w._wake.set()
            for part in list(w.removed_parts):
                if part not in self._removed:
                    fs.remove(self.remote_path(part))
                    self._removed.add(part)
        except OSError as e:
            self._failures += 1
            if self.failing is None:
                logger.warning("tb-mindspore: cannot upload to %s (%s); training goes on, the run is kept in %s "
                               "and uploads are retried", self.url, e, w.local_dir)
            self.failing = e
            return
        if self.failing is not None:
            logger.warning("tb-mindspore: uploads to %s work again", self.url)
        self.failing = None
        self._failures = 0


def _size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def _files_bytes(paths):
    total = 0
    for path in paths:
        try:
            total += os.path.getsize(path)
        except OSError:
            pass
    return total


def _scalar_bytes(writer, tag, value):
    return wire.scalar_value(tag, value)


def _interval_bytes(writer, scalar_tag, minimum, mean, maximum, count, nonfinite):
    """As ``summary.interval``; the metadata on the tag's first value in each part (as for every other kind)."""
    tag = metadata.interval_tag(scalar_tag)
    stats = contract.interval.IntervalStats(minimum, mean, maximum, count, nonfinite)
    content = None
    if tag not in writer._tags_with_metadata:
        content = writer._interval_metadata(scalar_tag)
        writer._tags_with_metadata.add(tag)
    return wire.tensor_value(tag, wire.float64_tensor([float(v) for v in stats.fields()]), content)


# Builders whose values the writer thread encodes without protos (the values of every core point).
_ENCODERS = {summary.scalar: _scalar_bytes, summary.interval: _interval_bytes}


def _graph_event(data):
    return event_pb2.Event(graph_def=data)


def _writers():
    """The open writers (a copy); never blocks for long, even inside a signal handler."""
    if not _open_writers_lock.acquire(timeout=1.0):
        return []
    try:
        return list(_open_writers)
    finally:
        _open_writers_lock.release()


def close_all():
    """Closes every open writer (used at exit and when a signal ends the process)."""
    for w in _writers():
        try:
            w.close()
        except Exception:  # never let monitoring turn an exit into a crash
            logger.exception("tb-mindspore: error while closing %s", getattr(w, "path", "?"))


def flush_all(timeout=5.0, _from_signal=False):
    """Writes out everything queued in every open writer, leaving them open."""
    deadline = time.monotonic() + timeout
    for w in _writers():
        try:
            w.flush(max(0.0, deadline - time.monotonic()), _from_signal=_from_signal)
        except Exception:
            logger.exception("tb-mindspore: error while flushing %s", getattr(w, "path", "?"))


atexit.register(close_all)

_installed_signals = {}


def install_signal_handlers(signals=(signal.SIGINT, signal.SIGTERM)):
    """On these signals, write out all writers first, then run the handler that was there before.

    If the previous handler is Python code (SIGINT's ``KeyboardInterrupt``, a user's handler), the writers are
    flushed and stay open: if the program goes on (the interrupt caught, a graceful-stop flag set), recording goes
    on, and a program that ends closes them at exit. If the signal's default action ends the process, the writers
    are closed first. Only possible from the main thread (Python's rule); elsewhere this does nothing and returns
    False. Installing twice does not chain our handler to itself. A signal the process ignores (``SIG_IGN``: a job
    started in the background by a shell ignores SIGINT) is left alone: it ends nothing, so nothing is closed.

    Note: MindSpore's runtime installs its own SIGINT handler during the first training steps (replacing whatever
    Python had, ours and the user's); it ends the process with SIGTERM, which this SIGTERM handler still catches,
    so nothing recorded is lost on Ctrl-C then either.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in signals:
        if sig in _installed_signals:
            continue
        previous = signal.getsignal(sig)
        if previous == signal.SIG_IGN:
            continue    # the process ignores it (a job started in the background by a shell): so do we

        def handler(signum, frame, _previous=previous):
            if callable(_previous):
                flush_all(_from_signal=True)
                _previous(signum, frame)
            elif _previous != signal.SIG_IGN:
                # SIG_DFL, or None (a handler installed outside Python that we cannot call): the default action.
                close_all()
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(sig, handler)
        _installed_signals[sig] = previous
    return True
