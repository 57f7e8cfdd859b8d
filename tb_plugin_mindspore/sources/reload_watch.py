"""Keeps TensorBoard's Python loader reloading: :class:`ReloadWatch`.

With ``--load_fast=false`` (and for logdirs its fast loader cannot read, such as ``s3://``), TensorBoard reloads
the logdir in one thread, ``Reloader``, that never catches anything: the first exception ends it for good and no
new run or point appears again, with nothing said. Two such exceptions are ordinary: a store that cannot be reached
for a moment (``botocore`` errors while listing ``s3://...``) and an event record whose payload does not decode
(invalid UTF-8 in a string field, behind good checksums: ``DecodeError``).

:class:`ReloadWatch` watches that thread (and records the exception that ended it, through
``threading.excepthook``). Once it is gone, the watch reloads in its place, every ``--reload_interval`` seconds,
the way it did (``AddRunsFromDirectory`` for each logdir, then ``Reload``), but catching every failure: a record
that does not decode is skipped by TensorBoard's reader once it has raised, so the reload is simply tried again at
once (up to ``RETRIES_PER_ROUND`` times); any other failure is recorded and retried next round. So after an outage
of any length the runs written meanwhile appear within a reload interval of the store answering again. A bucket
root as the logdir (``s3://bucket``), which TensorBoard's S3 reader cannot list at all, is listed by the plugin and
its run folders added one by one.
:meth:`ReloadWatch.state` and :meth:`ReloadWatch.warnings` say what happened for the ``status`` route.
"""

import logging
import threading
import time

from google.protobuf.message import DecodeError

from ..io import fs

logger = logging.getLogger(__name__)

TENSORBOARD_THREAD = "Reloader"
RETRIES_PER_ROUND = 1000


def _short(error):
    text = str(error).splitlines()[0] if str(error) else ""
    text = "%s: %s" % (type(error).__name__, text) if text else type(error).__name__
    return text if len(text) <= 200 else text[:197] + "..."


def _is_decode_error(error):
    """A record protobuf refused (its pure-Python implementation raises UnicodeDecodeError for bad UTF-8)."""
    return isinstance(error, (DecodeError, UnicodeDecodeError))


def _tensorboard_thread(multiplexer):
    """TensorBoard's ``Reloader`` thread over ``multiplexer`` and the logdirs it reloads (``{path: run name}``), or
    ``(None, None)`` when none is running (it already ended, or TensorBoard was told not to reload)."""
    for thread in threading.enumerate():
        if thread.name != TENSORBOARD_THREAD or not thread.is_alive():
            continue
        target = getattr(thread, "_target", None)
        for cell in getattr(target, "__closure__", None) or ():
            ingester = cell.cell_contents
            if getattr(ingester, "_multiplexer", None) is multiplexer:
                return thread, dict(getattr(ingester, "_path_to_run", None) or {})
    return None, None


class ReloadWatch:
    """See the module doc. ``multiplexer``: TensorBoard's (``context.multiplexer``); ``logdirs``: ``{path: run name
    or None}`` to reload when TensorBoard's thread cannot say; ``interval``: ``--reload_interval`` seconds;
    ``expect_thread``: whether TensorBoard runs a reload thread at all (``--reload_task`` thread / auto and a
    positive interval): without one running, the watch takes over at once."""

    def __init__(self, multiplexer, logdirs, interval=5.0, expect_thread=True, clock=time.time):
        self._mux = multiplexer
        self._interval = max(0.05, float(interval))
        self._clock = clock
        self._thread, found = _tensorboard_thread(multiplexer)
        self._logdirs = found or dict(logdirs)
        self._expect = bool(expect_thread)
        self._lock = threading.Lock()
        self._died = None            # (wall time, text) when TensorBoard's thread ended
        self._ours = None            # our reload thread, once it took over
        self._error = None           # (first failing wall time, text) of the failure that goes on
        self._last_ok = None
        self._skipped = 0            # records TensorBoard's reader raised on (skipped once it raised)
        self._stopping = threading.Event()
        self._watcher = None
        self._hook = None
        self._previous_hook = None

    # -- watching ------------------------------------------------------------------------------------------------
    def start(self):
        """Watches in a daemon thread (a no-op without anything to watch)."""
        if not self._expect or self._watcher is not None:
            return self
        self._install_hook()
        self._watcher = threading.Thread(target=self._watch, name="tb-mindspore-reload-watch", daemon=True)
        self._watcher.start()
        return self

    def _install_hook(self):
        previous = self._previous_hook = threading.excepthook

        def hook(args):
            if self._thread is not None and args.thread is self._thread:
                with self._lock:
                    self._died = (self._clock(), _short(args.exc_value))
            previous(args)

        self._hook = hook
        threading.excepthook = hook

    def _watch(self):
        while not self._stopping.is_set():
            if self._thread is None or not self._thread.is_alive():
                self._take_over()
                return
            self._stopping.wait(min(1.0, self._interval))

    def _take_over(self):
        with self._lock:
            if self._died is None:
                self._died = (self._clock(), "it ended" if self._thread is not None else
                              "it had ended before the plugin started; TensorBoard's log has the error")
            why = self._died[1]
        logger.warning("mindspore plugin: TensorBoard's reload thread stopped (%s); the plugin reloads the logdir "
                       "in its place every %g s", why, self._interval)
        self._ours = threading.current_thread()
        while not self._stopping.is_set():
            self.reload_once()
            self._stopping.wait(self._interval)

    def reload_once(self):
        """One round as TensorBoard's thread does it, every failure caught; True when it went through."""
        try:
            for path, name in self._logdirs.items():
                if is_bucket_root(path):
                    self._add_bucket_runs(path, name)
                else:
                    self._mux.AddRunsFromDirectory(path, name)
            for _ in range(RETRIES_PER_ROUND):
                try:
                    self._mux.Reload()
                    break
                except Exception as e:
                    if not _is_decode_error(e):
                        raise
                    with self._lock:
                        self._skipped += 1
                    logger.warning("mindspore plugin: TensorBoard's loader skipped an event record: %s", _short(e))
        except Exception as e:  # the store cannot be reached, a file vanished: tried again next round
            text = _short(e)
            with self._lock:
                first = self._error is None or self._error[1] != text
                if self._error is None:
                    self._error = (self._clock(), text)
                elif first:
                    self._error = (self._error[0], text)
            if first:
                logger.warning("mindspore plugin: reloading the logdir failed (%s); retrying every %g s", text,
                               self._interval)
            return False
        with self._lock:
            if self._error is not None:
                logger.warning("mindspore plugin: reloading the logdir works again")
            self._error = None
            self._last_ok = self._clock()
        return True

    def _add_bucket_runs(self, root, name):
        """TensorBoard's S3 reader cannot list a bucket's root (``s3://bucket``: it fails at once, and its reload
        thread with it): the run folders are found by the plugin's own listing (``fs.walk``) and added one by one,
        so a bucket-root logdir shows every run in a folder of the bucket. Event files lying in the bucket's root
        itself stay unread (its reader cannot open them either); ``status`` says so."""
        root = root.rstrip("/")
        for folder, _, names in fs.walk(root):
            if folder.rstrip("/") == root or not any("tfevents" in n for n in names):
                continue
            run = folder[len(root) + 1:]
            self._mux.AddRun(folder, run if not name else "%s/%s" % (name, run))

    def stop(self, timeout=5.0):
        self._stopping.set()
        if self._watcher is not None:
            self._watcher.join(timeout)
        if self._hook is not None and threading.excepthook is self._hook:
            threading.excepthook = self._previous_hook

    # -- what the status route says ------------------------------------------------------------------------------
    def state(self):
        """``{"by": "tensorboard" | "plugin", "ok": bool, "stopped": {"at", "error"} | null, "error": {"since",
        "message"} | null, "last_ok": wall time | null, "skipped_records": int}``."""
        with self._lock:
            died, error, last_ok, skipped = self._died, self._error, self._last_ok, self._skipped
        alive = self._thread is not None and self._thread.is_alive()
        return {"by": "tensorboard" if alive or not self._expect else "plugin",
                "ok": error is None,
                "stopped": None if died is None else {"at": died[0], "error": died[1]},
                "error": None if error is None else {"since": error[0], "message": error[1]},
                "last_ok": last_ok, "skipped_records": skipped}

    def warnings(self):
        """``status`` warnings: TensorBoard's reloading stopped (and replaced), reloading failing now."""
        s = self.state()
        out = []
        if s["stopped"] is not None:
            out.append({"run": None, "file": None, "offset": None,
                        "reason": "TensorBoard's own reloading stopped at %s (%s); the MindSpore plugin reloads the "
                                  "logdir in its place every %g s" % (_clock_text(s["stopped"]["at"]),
                                                                      s["stopped"]["error"], self._interval)})
        if s["error"] is not None:
            out.append({"run": None, "file": None, "offset": None,
                        "reason": "reloading the logdir fails since %s (%s): no new runs or points until it works "
                                  "again; retrying every %g s" % (_clock_text(s["error"]["since"]),
                                                                  s["error"]["message"], self._interval)})
        roots = [p for p in self._logdirs if is_bucket_root(p)]
        if roots:
            out.append({"run": None, "file": None, "offset": None,
                        "reason": "the logdir %s is a bucket's root, which TensorBoard's S3 reader cannot list: the "
                                  "MindSpore plugin adds the run folders inside it; event files lying in the root "
                                  "itself are not read. Use a folder inside the bucket (e.g. %s/logs)"
                                  % (roots[0], roots[0].rstrip("/"))})
        if s["skipped_records"]:
            out.append({"run": None, "file": None, "offset": None,
                        "reason": "TensorBoard's loader skipped %d event record(s) that do not decode (named with "
                                  "their files below where found)" % s["skipped_records"]})
        return out


def is_bucket_root(path):
    """Whether ``path`` is an object store's bucket with no folder (``s3://bucket``, ``s3://bucket/``)."""
    path = str(path or "")
    if "://" not in path or path.startswith("file://"):
        return False
    return "/" not in path.split("://", 1)[1].strip("/")


def _clock_text(t):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
