"""Per-rank statistics: every rank appends its own step time, data wait, loss, gradient norm and memory to one small
file in the run folder (``cluster/rank<k>.tbmsrank``), with no collective.

Each rank writes only what it measured itself, through a background thread: a rank that hangs or dies simply stops
adding rows (its row in the cluster view ends), it never makes another rank wait. Per step the training thread adds
two numbers the monitor already measured; every ``collect_freq`` steps it reads the process memory and queues one
48-byte row; the file write happens on the thread (a slow or full disk drops rows, counted, never blocks a step).
One process writes a rank file: the writer holds an exclusive lock on it (``flock``), and a second process given the
same run folder and rank (two jobs started into one folder) warns once and writes no rows, so the reader never sees
two writers' rows interleaved.

Memory: host memory is the resident set size of the process (``/proc/self/statm``; ``None`` where there is no
``/proc``); device memory is what MindSpore's allocator reports through ``mindspore.runtime.memory_allocated()``, with the
limit set by ``max_device_memory`` when one is set. On the CPU backend MindSpore 2.10 reports zeros
(``memory_stats()``: every pool empty), so no device memory is recorded there (NaN, never a made-up number).
"""

import math
import os
import queue
import shutil
import socket
import tempfile
import threading
import time

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file
from tb_plugin_mindspore.io import fs
from tb_plugin_mindspore.writing import write_faults

from ..common.util import logger
from .base import Recorder
from tb_plugin_mindspore.health import cluster_signals as signals
from .live_cluster import LiveClusterWatch
from .events import json_value

__all__ = ["RankStats", "RankStatsRecorder", "MemoryProbe", "LiveMemoryWatch", "rank_file_path"]

_MB = 1024.0 * 1024.0
_DROP_WARN_SECS = 30.0
UPLOAD_SECS = 10.0        # a remote run folder: seconds between two uploads of a rank's staged file


class RankFileBusy(Exception):
    """Another process holds the lock of this rank file."""


def _lock(fd):
    """Takes the exclusive lock of the open rank file ``fd`` without waiting; False when another process holds it.
    Where locks are not supported (some network file systems, no ``fcntl``) the file is written unlocked."""
    try:
        import fcntl
    except ImportError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except OSError:
        return True
    return True


def rank_file_path(run_dir, rank):
    """Where rank ``rank`` of the run in ``run_dir`` writes its statistics."""
    return os.path.join(str(run_dir), metadata.CLUSTER_DIR, "rank%d%s" % (int(rank), metadata.RANK_FILE_SUFFIX))


def _parse_size_mb(text):
    """Megabytes from MindSpore's size strings (``"1024GB"``, ``"512MB"``); None if unreadable."""
    if not isinstance(text, str):
        return None
    t = text.strip().upper()
    for unit, factor in (("GB", 1024.0), ("MB", 1.0), ("G", 1024.0), ("M", 1.0)):
        if t.endswith(unit):
            try:
                return float(t[: -len(unit)]) * factor
            except ValueError:
                return None
    return None


class MemoryProbe:
    """Host resident memory and, where the backend reports it, device memory of this process, in MB.

    ``device_reported`` is False on backends that report no device memory (CPU): ``device_mb()`` then returns NaN.
    """

    # A device limit above this is MindSpore's "no limit set" default (1024 GB), not a real device.
    _NO_LIMIT_MB = 1000 * 1024.0

    def __init__(self, device_target=None):
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._statm = "/proc/self/statm" if os.path.exists("/proc/self/statm") else None
        self.device_target = device_target
        self.device_reported = False
        self._allocated = None
        self.limit_mb = math.nan
        if device_target is None:
            try:
                import mindspore as ms

                self.device_target = ms.get_context("device_target")
            except Exception:
                self.device_target = None
        if self.device_target not in (None, "CPU"):
            try:
                from mindspore import runtime

                self._allocated = runtime.memory_allocated
                self._allocated()
                self.device_reported = True
                self.limit_mb = self._device_limit_mb()
            except Exception:
                self._allocated = None

    def host_mb(self):
        """Resident set size of this process in MB (NaN where unknown)."""
        if self._statm is None:
            return math.nan
        try:
            with open(self._statm, "rb") as f:
                return int(f.read().split()[1]) * self._page / _MB
        except (OSError, ValueError, IndexError):
            return math.nan

    def device_mb(self):
        """Device memory MindSpore's allocator holds for tensors now, in MB (NaN when not reported)."""
        if self._allocated is None:
            return math.nan
        try:
            return float(self._allocated()) / _MB
        except Exception:
            return math.nan

    def _device_limit_mb(self):
        """The limit set with ``max_device_memory`` (MindSpore 2.10 reports it in GB, or as "<n>GB"), or NaN when
        none is set (its default, 1024 GB, means no limit: the device's own size is not reported)."""
        try:
            import mindspore as ms

            value = ms.get_context("max_device_memory")
        except Exception:
            return math.nan
        limit = _parse_size_mb(value) if isinstance(value, str) else (
            float(value) * 1024.0 if isinstance(value, (int, float)) and not isinstance(value, bool) else None)
        return limit if limit is not None and 0 < limit < self._NO_LIMIT_MB else math.nan


def host_load():
    """The node's one-minute load average over its CPU count (NaN where unknown)."""
    try:
        return os.getloadavg()[0] / (os.cpu_count() or 1)
    except (OSError, AttributeError):
        return math.nan


class _Accumulator:
    """Sum and count of values since the last take (a mean over the interval)."""

    __slots__ = ("total", "count")

    def __init__(self):
        self.total, self.count = 0.0, 0

    def add(self, value):
        if value is not None and math.isfinite(value):
            self.total += value
            self.count += 1

    def take(self):
        mean = self.total / self.count if self.count else math.nan
        self.total, self.count = 0.0, 0
        return mean


class RankStats:
    """One rank's statistics, appended to ``<run_dir>/cluster/rank<rank>.tbmsrank``.

    :meth:`add_step` after every step (its step time and data wait, None where unknown), :meth:`record` at each
    collect point (one row: the interval means, the given loss and gradient norm, memory now), :meth:`close` at the
    end. The file is written by a background thread; nothing raises into training.

    Args:
      run_dir: the run folder (the same on every rank).
      rank / rank_size: this process's rank and the number of ranks.
      collect_freq: the rows' cadence in steps (written into the header for readers).
      host: the node's name (default ``socket.gethostname()``); ranks are grouped by it in the cluster view.
      local_rank: the rank on its node (default from ``LOCAL_RANK`` / ``DEVICE_ID``, else None).
      max_queue: rows that may wait for the writer thread before new ones are dropped (and counted).
      memory: a :class:`MemoryProbe` (default: one for the current MindSpore device target).
    """

    def __init__(self, run_dir, rank, rank_size, collect_freq=10, host=None, local_rank=None, max_queue=1000,
                 memory=None):
        if not isinstance(run_dir, (str, os.PathLike)) or not str(run_dir):
            raise ValueError("run_dir must be a non-empty path, got %r" % (run_dir,))
        for name, value, low in (("rank", rank, 0), ("rank_size", rank_size, 1), ("collect_freq", collect_freq, 1),
                                 ("max_queue", max_queue, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError("%s must be an int >= %d, got %r" % (name, low, value))
        if rank >= rank_size:
            raise ValueError("rank %d is outside 0..%d" % (rank, rank_size - 1))
        self.path = rank_file_path(run_dir, rank)
        self.run_dir = str(run_dir)
        # A remote run folder (s3://...): the rows go to a local staging file, uploaded whole every
        # UPLOAD_SECS and at close (object stores cannot append; the file is small: 48 bytes a row).
        self.remote = None
        if fs.is_remote(str(run_dir)):
            self.remote = self.path
            root = os.environ.get("TB_MINDSPORE_STAGING") or os.path.join(tempfile.gettempdir(),
                                                                          "tb-mindspore-staging")
            os.makedirs(root, exist_ok=True)
            self.path = os.path.join(tempfile.mkdtemp(prefix="rank%d." % rank, dir=root),
                                     os.path.basename(self.remote))
        self._uploaded = 0.0
        self.rank, self.rank_size, self.collect_freq = rank, rank_size, collect_freq
        self.host = str(host) if host is not None else socket.gethostname()
        if local_rank is None:
            for key in ("LOCAL_RANK", "DEVICE_ID"):
                try:
                    local_rank = int(os.environ[key])
                    break
                except (KeyError, ValueError):
                    continue
        self.local_rank = local_rank
        self.memory = memory if memory is not None else MemoryProbe()
        self.fields = metadata.RANK_FIELDS
        self._dtype = rank_file.record_dtype(self.fields)
        self._queue = queue.Queue(maxsize=max_queue)
        self._thread = None
        self._closed = False
        self.dropped = 0
        self.failed = None
        self._last_drop_warning = 0.0
        self._step_time = _Accumulator()
        self._wait = _Accumulator()

    def add_step(self, step_time_ms=None, data_wait_ms=None):
        """One step's time and data wait in milliseconds (None where unknown: the first step, no step begin)."""
        self._step_time.add(step_time_ms)
        self._wait.add(data_wait_ms)

    def record(self, step, loss=math.nan, grad_norm=math.nan, wall_time=None):
        """Queues one row for ``step``: interval means of step time and data wait, the given loss and gradient
        norm, memory now. Returns the row's values (a dict of the fields)."""
        values = (self._step_time.take(), self._wait.take(), _number(loss), _number(grad_norm),
                  self.memory.host_mb(), self.memory.device_mb(), self.memory.limit_mb, host_load())
        row = dict(zip(self.fields, values))
        if self._closed or self.failed is not None:
            return row
        self._start()
        item = rank_file.pack_record(self._dtype, step, time.time() if wall_time is None else wall_time, values)
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            self.dropped += 1
            now = time.monotonic()
            if now - self._last_drop_warning > _DROP_WARN_SECS:
                self._last_drop_warning = now
                logger.warning("tb-mindspore: rank %d statistics: the disk is not keeping up; %d row(s) dropped",
                               self.rank, self.dropped)
        return row

    def header(self):
        return {"rank": self.rank, "rank_size": self.rank_size, "host": self.host, "local_rank": self.local_rank,
                "pid": os.getpid(), "start_time": time.time(), "collect_freq": self.collect_freq,
                "fields": list(self.fields), "device_target": self.memory.device_target,
                "device_memory_reported": self.memory.device_reported}

    def _start(self):
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="tbms-rank-stats", daemon=True)
            self._thread.start()

    def _open(self):
        """The rank file, open for appending and locked for this process; raises :class:`RankFileBusy` when
        another process holds it (two jobs given the same run folder: their rows would interleave)."""
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        if not _lock(fd):
            os.close(fd)
            raise RankFileBusy(self.path)
        head = rank_file.header_bytes(self.header())
        # The same rank written again into the same run (a re-run, a resume): append after a compatible header.
        try:
            with open(self.path, "rb") as f:
                existing, _ = rank_file.parse_header(f.read(rank_file.MAX_HEADER_BYTES + 64))
            if existing is not None and tuple(existing.get("fields") or ()) == tuple(self.fields):
                head = b""
        except (OSError, ValueError):
            pass
        if head:
            os.ftruncate(fd, 0)       # only now: the lock says no other process is writing it
            os.write(fd, head)
        return fd

    def _run(self):
        fd = None
        while True:
            item = self._queue.get()
            if item is None:
                break
            try:
                if fd is None:
                    fd = self._open()
                os.write(fd, item)
                if self.remote is not None and time.monotonic() - self._uploaded >= UPLOAD_SECS:
                    self._upload()
            except RankFileBusy as e:
                self.failed = e
                logger.warning("tb-mindspore: rank %d statistics: another process is writing %s (two jobs given the "
                               "same run folder?); this one records no per-rank statistics. Give each job its own "
                               "run folder", self.rank, self.path)
                break
            except OSError as e:
                self.failed = e
                write_faults.report(self.path, e, "rank %d statistics (%s)" % (self.rank, self.path),
                                    scope=self.run_dir)
                break
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
            if self.remote is not None and self._upload():
                shutil.rmtree(os.path.dirname(self.path), ignore_errors=True)

    def _upload(self):
        """Sends the staged file whole to the remote run folder; a failure is warned once and retried later."""
        self._uploaded = time.monotonic()
        try:
            with open(self.path, "rb") as f:
                fs.put_bytes(self.remote, f.read())
            self.upload_error = None
            return True
        except Exception as e:       # never into training: the rows stay in the staging file
            if getattr(self, "upload_error", None) is None:
                logger.warning("tb-mindspore: rank %d statistics: cannot upload to %s (%s); kept in %s", self.rank,
                               self.remote, e, self.path)
            self.upload_error = e
            return False

    def close(self, timeout=5.0):
        """Writes the queued rows and ends the writer thread (waits at most ``timeout`` s). Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            try:
                self._queue.put(None, timeout=timeout)
            except queue.Full:
                return
            self._thread.join(timeout)


class LiveMemoryWatch:
    """The memory rules on this rank's own rows while training (local data only): steady growth and the device
    limit, each reported once (``check(step, row)`` returns ``[(rule, message, first_step)]``)."""

    MAX_POINTS = 2000
    CHECK_EVERY = 10        # rows between two checks (the slope costs about a millisecond)

    def __init__(self):
        self.steps, self.host, self.device = [], [], []
        self.limit = math.nan
        self.reported = set()
        self._rows = 0

    def check(self, step, row):
        self.steps.append(int(step))
        self.host.append(row["host_memory_mb"])
        self.device.append(row["device_memory_mb"])
        if math.isfinite(row["device_limit_mb"]):
            self.limit = row["device_limit_mb"]
        if len(self.steps) > self.MAX_POINTS:
            self.steps, self.host, self.device = self.steps[::2], self.host[::2], self.device[::2]
        self._rows += 1
        if self._rows % self.CHECK_EVERY:
            return []
        out = []
        for label, values in (("host memory (RSS)", self.host), ("device memory", self.device)):
            rule = "memory_growth"
            if (rule, label) in self.reported:
                continue
            g = signals.memory_growth(self.steps, values)
            if g is not None:
                self.reported.add((rule, label))
                out.append((rule, "The %s of this rank grows steadily: %.0f MB per 1,000 steps, from %.0f MB at "
                                  "step %d to %.0f MB at step %d." % (label, g["mb_per_1000_steps"], g["start_mb"],
                                                                      g["first_step"], g["end_mb"], g["last_step"]),
                            g["first_step"]))
        if "device_memory_limit" not in self.reported and math.isfinite(self.limit):
            hit = signals.near_limit(self.steps, self.device, self.limit,
                                     growth=signals.memory_growth(self.steps, self.device))
            if hit is not None:
                self.reported.add("device_memory_limit")
                out.append(("device_memory_limit", "Device memory reached %.0f MB of its %.0f MB limit (%.0f%%) at "
                                                   "step %d." % (hit["used_mb"], hit["limit_mb"], hit["share"] * 100,
                                                                 hit["step"]), hit["step"]))
        return out


_ADVICE = {
    "memory_growth": "Look for tensors, outputs or metrics kept across steps (growing lists, asnumpy() results kept) "
                     "or a cache without a bound.",
    "device_memory_limit": "Lower the batch size or sequence length, enable recomputation, or shard the optimizer "
                           "state before the out-of-memory error.",
}


class RankStatsRecorder(Recorder):
    """The recorder of :mod:`~tb_mindspore_callbacks.recorders`: per-rank rows on every rank (no collective), host
    and device memory in the core tier (``core/host_memory_mb``, ``core/device_memory_mb``) on the ranks that write
    event files, the memory rules live on each rank's own rows (a health event where the rank writes events, a
    log line elsewhere), and, with live health on and several ranks, the cluster rules live on rank 0
    (:class:`~.live_cluster.LiveClusterWatch` over the run folder's rank files)."""

    name = "rank_stats"
    wants_step_begin = True     # the data wait of every step
    every_rank = True           # also on ranks that write no event file (writer None)

    def on_start(self, ctx):
        self.ctx = ctx
        s = ctx.settings
        rank_size = int(ctx.info.get("rank_size") or ctx.rank + 1)
        self.stats = RankStats(s.logdir, ctx.rank, max(rank_size, ctx.rank + 1), s.collect_freq)
        self.watch = LiveMemoryWatch()
        self.cluster = None
        if ctx.writer is not None and ctx.rank == 0 and rank_size > 1 and s.live_health is not None \
                and "://" not in str(s.logdir):
            self.cluster = LiveClusterWatch(s.logdir, self._cluster_event, own_rank=ctx.rank).start()
        ctx.info["rank_stats"] = {"file": fs.relpath(self.stats.remote or self.stats.path, str(s.logdir)),
                                  "device_memory": "reported" if self.stats.memory.device_reported else
                                  "not reported by the %s backend" % (self.stats.memory.device_target or "current")}

    def on_step(self, r):
        self.stats.add_step(r.step_time_ms, r.data_wait_ms)

    def on_interval(self, r):
        # The rank's own gradient norm: before the reducer in data parallel (the core tier's is the all-reduced one).
        grad = r.local_grad_norm if r.local_grad_norm is not None else r.grad_norm
        row = self.stats.record(r.step, r.loss, grad, wall_time=r.wall_time or None)
        w = self.ctx.writer
        if w is not None:
            if math.isfinite(row["host_memory_mb"]):
                w.scalar(metadata.HOST_MEMORY_MB, row["host_memory_mb"], r.step, r.wall_time or None)
            if math.isfinite(row["device_memory_mb"]):
                w.scalar(metadata.DEVICE_MEMORY_MB, row["device_memory_mb"], r.step, r.wall_time or None)
        for rule, message, first_step in self.watch.check(r.step, row):
            self._event(rule, message, first_step, r.step)

    def _event(self, rule, message, first_step, step):
        message = "Rank %d: %s" % (self.stats.rank, message)
        if self.ctx.writer is None:
            logger.warning("tb-mindspore: %s %s", message, _ADVICE[rule])
            return
        self._write_event(rule, "warning", step, first_step, message, _ADVICE[rule])

    def _cluster_event(self, rule, severity, step, first_step, message):
        """A cluster finding of the live watch (its thread)."""
        self._write_event(rule, severity, step, first_step, message, "")

    def _write_event(self, rule, severity, step, first_step, message, advice):
        """A live health event in the run and one log line."""
        w = self.ctx.writer
        if w is None:
            return

        event = metadata.health_event(rule, severity, step, first_step=first_step, message=message, advice=advice,
                                      source="live")
        w.value(json_value(metadata.HEALTH_EVENT, metadata.KIND_HEALTH_EVENT, event), step)
        self.ctx.pipeline.notify(event)
        logger.warning("tb-mindspore: %s", message)

    def on_end(self, status):
        self._stop_cluster()
        self.stats.close()

    def close(self):
        self._stop_cluster()
        self.stats.close()

    def _stop_cluster(self):
        if getattr(self, "cluster", None) is not None:
            self.cluster.stop()
            self.cluster = None


def _number(value):
    try:
        value = float(np.asarray(value, dtype=np.float64).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return math.nan
    return value
