"""Asynchronous, crash-safe writing of TensorBoard event files.

The training thread calls :class:`SummaryWriter` methods, which only put plain numbers on a bounded queue and
return. A background thread builds the protos (``summary.py``), frames them (``records.py``) and writes them.

* Never blocks training: when the queue is full the item is dropped, counted, and a warning is logged (at most
  once every 30 s); ``dropped`` tells how many.
* Flushes at least every ``flush_secs`` seconds, so after ``kill -9`` everything older than that is on disk.
* ``close()`` drains the queue and is safe to call twice; all open writers are closed at interpreter exit and, if
  :func:`install_signal_handlers` was called, on SIGINT / SIGTERM before the previous handlers run.
* A write error (disk full, permissions) stops this writer with one warning; training goes on.
* Optional size-based rotation (``max_file_bytes``): the file is closed and a new part
  ``<name>.part0001``, ``.part0002``, ... is started (names sort in write order, as TensorBoard reads them).
* Optional budget for the whole run folder (``max_run_bytes``): after a rotation, the oldest closed parts of this
  writer are removed, with a log line, until the folder fits. Run-level values written with ``sticky=True`` (run
  info, hparams) are written again into the current part when the part holding them is removed.
"""

import atexit
import logging
import os
import queue
import signal
import socket
import threading
import time
import weakref

from tensorboard.compat.proto import event_pb2, summary_pb2

from . import records, summary

logger = logging.getLogger(__name__)

_STOP = object()
_FLUSH = object()
_open_writers = weakref.WeakSet()
_open_writers_lock = threading.Lock()


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
      logdir: folder of the run; created if missing.
      flush_secs: longest time a recorded value waits in memory before it reaches the file.
      max_queue: items that may wait for the writer thread; more are dropped and counted.
      max_file_bytes: start a new part when the current file reaches this size (None: never rotate). With only
        ``max_run_bytes`` set, parts are a quarter of the budget (at most 64 MiB).
      max_run_bytes: budget for all files under ``logdir``; oldest closed parts of this writer are removed first.
    """

    _counter = 0
    _counter_lock = threading.Lock()

    def __init__(self, logdir, flush_secs=2.0, max_queue=10000, max_file_bytes=None, max_run_bytes=None):
        if flush_secs <= 0:
            raise ValueError("flush_secs must be > 0, got %r" % (flush_secs,))
        if max_queue < 1:
            raise ValueError("max_queue must be >= 1, got %r" % (max_queue,))
        max_file_bytes, max_run_bytes = check_sizes(max_file_bytes, max_run_bytes)
        self.logdir = str(logdir)
        os.makedirs(self.logdir, exist_ok=True)
        with SummaryWriter._counter_lock:
            SummaryWriter._counter += 1
            counter = SummaryWriter._counter
        name = "events.out.tfevents.%010d.%s.%d.%d" % (int(time.time()), socket.gethostname(), os.getpid(), counter)
        self.base_path = os.path.join(self.logdir, name)
        self.path = self.base_path
        self.parts = [self.path]    # every part this writer made that still exists, oldest first
        self.removed_parts = []
        self.max_file_bytes = max_file_bytes
        self.max_run_bytes = max_run_bytes
        self._part_index = 0
        self._file_bytes = 0
        self._sticky = []           # [event bytes, part]: written again when the part holding them is removed
        self._flush_secs = float(flush_secs)
        self._queue = queue.Queue(maxsize=max_queue)
        self.dropped = 0
        self.failed = None          # the OSError that stopped writing, if any
        self._last_drop_warning = 0.0
        self._closed = False
        self._lock = threading.Lock()
        self._file = None
        self._tags_with_metadata = set()
        try:
            self._file = open(self.path, "ab")
            self._write_header()
            self._file.flush()
        except OSError as e:
            self._fail(e)
        self._thread = threading.Thread(target=self._run, name="tb-mindspore-writer", daemon=True)
        self._thread.start()
        with _open_writers_lock:
            _open_writers.add(self)

    # -- called from the training thread: cheap, never blocks ---------------------------------------------------
    def scalar(self, tag, value, step, wall_time=None):
        self._submit(step, wall_time, summary.scalar, (tag, float(value)))

    def interval(self, scalar_tag, minimum, mean, maximum, count, nonfinite, step, wall_time=None):
        self._submit(step, wall_time, summary.interval, (scalar_tag, minimum, mean, maximum, count, nonfinite))

    def layers(self, tag, layer_names, values, step, wall_time=None):
        self._submit(step, wall_time, summary.layers, (tag, tuple(layer_names), values))

    def histogram(self, tag, values, step, wall_time=None):
        self._submit(step, wall_time, summary.histogram, (tag, values))

    def run_info(self, info, step=0):
        """Run-level facts (``_meta/run_info``); kept in the folder even when old parts are removed."""
        self._submit(step, None, summary.run_info, (dict(info),), sticky=True)

    def hparams(self, hparams, step=0, start_time=None):
        """Hyperparameters in TensorBoard's HParams format (the HParams tab shows the run)."""
        self._submit(step, None, summary.hparams_values, (dict(hparams), start_time), sticky=True)

    def value(self, value_proto, step, wall_time=None, sticky=False):
        """Writes an already built ``Summary.Value`` (for kinds with their own builders)."""
        self._submit(step, wall_time, lambda v: v, (value_proto,), sticky=sticky)

    def _submit(self, step, wall_time, builder, args, sticky=False):
        if self._closed or self.failed is not None:
            return
        item = (int(step), time.time() if wall_time is None else float(wall_time), builder, args, sticky)
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            now = time.monotonic()
            if now - self._last_drop_warning > 30:
                self._last_drop_warning = now
                logger.warning(
                    "tb-mindspore: writer queue full, %d value(s) dropped so far (raise max_queue or record less often)",
                    self.dropped,
                )

    # -- the writer thread ---------------------------------------------------------------------------------------
    def _run(self):
        last_flush = time.monotonic()
        dirty = False
        while True:
            timeout = max(0.0, self._flush_secs - (time.monotonic() - last_flush))
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                item = _FLUSH
            if item is _STOP:
                self._flush_file()
                return
            if item is _FLUSH:
                if dirty:
                    self._flush_file()
                    dirty = False
                last_flush = time.monotonic()
                continue
            if item[2] is _mark_done:
                _mark_done(*item[3])
                continue
            if self.failed is None:
                self._write_item(item)
                dirty = True
            if time.monotonic() - last_flush >= self._flush_secs:
                self._flush_file()
                dirty = False
                last_flush = time.monotonic()

    def _write_item(self, item):
        step, wall_time, builder, args, sticky = item
        try:
            value = builder(*args)
        except Exception:  # a bad value must not stop the writer
            logger.exception("tb-mindspore: could not build a summary for step %d", step)
            return
        if value is None:
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

    def _write_header(self):
        header = event_pb2.Event(wall_time=time.time(), file_version="brain.Event:2")
        self._write_bytes(records.frame(header.SerializeToString()))

    def _write_event(self, event):
        self._write_bytes(records.frame(event.SerializeToString()))

    def _write_bytes(self, data):
        if self.failed is not None or self._file is None:
            return
        try:
            with self._lock:
                self._file.write(data)
                self._file_bytes += len(data)
        except OSError as e:
            self._fail(e)

    def _flush_file(self):
        try:
            with self._lock:
                if self._file is not None and not self._file.closed:
                    self._file.flush()
        except OSError as e:
            self._fail(e)

    def _fail(self, error):
        if self.failed is None:
            self.failed = error
            logger.warning("tb-mindspore: stopped writing %s (%s); training continues without monitoring",
                           self.path, error)

    # -- rotation and budget (writer thread) -----------------------------------------------------------------------
    def _rotate(self):
        try:
            with self._lock:
                self._file.flush()
                self._file.close()
                self._part_index += 1
                self.path = "%s.part%04d" % (self.base_path, self._part_index)
                self._file = open(self.path, "ab")
                self._file_bytes = 0
                self._tags_with_metadata = set()
                self.parts.append(self.path)
        except OSError as e:
            self._fail(e)
            return
        self._write_header()
        if self.max_run_bytes is not None:
            self._enforce_budget()

    def _enforce_budget(self):
        total = _folder_bytes(self.logdir)
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
    def flush(self, timeout=10.0):
        """Waits until everything submitted so far is written and flushed (at most ``timeout`` seconds)."""
        if self._closed or self.failed is not None:
            return
        deadline = time.monotonic() + timeout
        while not self._queue.empty() and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.005)
        # One more round trip so the item being written is finished.
        done = threading.Event()
        try:
            self._queue.put((-1, 0.0, _mark_done, (done,), False), timeout=max(0.0, deadline - time.monotonic()))
        except queue.Full:
            return
        done.wait(max(0.0, deadline - time.monotonic()))
        self._flush_file()

    def close(self, timeout=30.0):
        """Writes everything still queued, then closes the file. Safe to call more than once."""
        if self._closed:
            return
        self._closed = True
        try:
            self._queue.put(_STOP, timeout=timeout)
        except queue.Full:
            pass
        self._thread.join(timeout)
        with self._lock:
            if self._file is not None:
                try:
                    self._file.flush()
                except OSError as e:
                    self._fail(e)
                try:
                    self._file.close()
                except OSError as e:   # the buffered bytes could not be written (disk full): already reported
                    self._fail(e)
        with _open_writers_lock:
            _open_writers.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _folder_bytes(folder):
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total


def _mark_done(done):
    done.set()
    return None


def close_all():
    """Closes every open writer (used at exit and on signals)."""
    with _open_writers_lock:
        writers = list(_open_writers)
    for w in writers:
        try:
            w.close()
        except Exception:  # never let monitoring turn an exit into a crash
            logger.exception("tb-mindspore: error while closing %s", getattr(w, "path", "?"))


atexit.register(close_all)

_installed_signals = {}


def install_signal_handlers(signals=(signal.SIGINT, signal.SIGTERM)):
    """On these signals, close all writers first, then run the handler that was there before.

    Only possible from the main thread (Python's rule); elsewhere this does nothing and returns False.
    Installing twice does not chain our handler to itself.

    Note: MindSpore's runtime installs its own SIGINT handler during the first training steps (replacing whatever
    Python had, ours and the user's); it ends the process with SIGTERM, which this SIGTERM handler still catches,
    so the writers are closed on Ctrl-C as well.
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    for sig in signals:
        if sig in _installed_signals:
            continue
        previous = signal.getsignal(sig)

        def handler(signum, frame, _previous=previous):
            close_all()
            if callable(_previous):
                _previous(signum, frame)
            elif _previous != signal.SIG_IGN:
                # SIG_DFL, or None (a handler installed outside Python that we cannot call): the default action.
                signal.signal(signum, signal.SIG_DFL)
                os.kill(os.getpid(), signum)

        signal.signal(sig, handler)
        _installed_signals[sig] = previous
    return True
