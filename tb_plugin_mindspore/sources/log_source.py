"""mindformers' training logs as runs of scalars, next to the ``*_MS`` files (``MsDataProvider(logs=...)``).

Which logs: a ``*.log`` file directly in a run folder (a folder holding event files or ``*_MS`` files) under the
logdir, named as that run; and the files given with TensorBoard's ``--mindspore_mindformers_log [RUN=]PATH``
(repeatable), named RUN, or after the folder the file is in when it lies under the logdir, else after the file.
What is read from them: ``mindformers_log.py``. A background thread reads what was appended every ``interval``
seconds; the folders are looked at again every ``DISCOVERY_SECS`` (every ``IDLE_DISCOVERY_SECS`` while no log is
found).
"""

import logging
import os
import threading
import time

from ..io import fs
from .mindformers_log import LogSeries
from .ms_logdir import file_kind

logger = logging.getLogger(__name__)

DISCOVERY_SECS = 10.0          # how often the folders are looked at again while logs are found
IDLE_DISCOVERY_SECS = 60.0     # ... and while none is (a walk of a large logdir is not free)
MAX_WALK_DIRS = 20000


def parse_flag(values):
    """``[(run or None, path)]`` of ``--mindspore_mindformers_log`` values."""
    out = []
    for value in values or ():
        run, sep, path = str(value).partition("=")
        if not sep:
            run, path = None, run
        out.append((run.strip() or None if run else None, os.path.abspath(os.path.expanduser(path.strip()))))
    return out


def _is_data_file(name):
    return "tfevents" in name or file_kind(name) is not None


class LogSource:
    """See the module doc. ``roots``: a ``logdir_spec.Roots``; ``named``: :func:`parse_flag`'s pairs."""

    def __init__(self, roots, named=()):
        self._roots = roots
        self._named = list(named)
        self._lock = threading.Lock()
        self._logs = {}          # path -> (run, LogSeries)
        self._found_at = None
        self._thread = None
        self._stopping = threading.Event()

    # -- finding and reading -------------------------------------------------------------------------------------
    def _name_of(self, path):
        for root in self._roots:
            if "://" in root.path:
                continue
            base = os.path.abspath(os.path.expanduser(root.path))
            folder = os.path.dirname(path)
            if folder == base or folder.startswith(base + os.sep):
                return self._roots.run_name(root, os.path.relpath(folder, base).replace(os.sep, "/"))
        return None

    def _discover(self):
        found = {}
        for run, path in self._named:
            found[path] = run or self._name_of(path) or os.path.splitext(os.path.basename(path))[0]
        seen = 0
        for root in self._roots:
            if "://" in root.path or not os.path.isdir(os.path.expanduser(root.path)):
                continue
            base = os.path.abspath(os.path.expanduser(root.path))
            for folder, dirs, names in os.walk(base):
                seen += 1
                if seen > MAX_WALK_DIRS:
                    break
                dirs.sort()
                logs = [n for n in names if n.endswith(".log")]
                if logs and any(_is_data_file(n) for n in names):
                    run = self._roots.run_name(root, os.path.relpath(folder, base).replace(os.sep, "/"))
                    for n in sorted(logs):
                        found.setdefault(os.path.join(folder, n), run)
        with self._lock:
            for path, run in found.items():
                if path not in self._logs:
                    self._logs[path] = (run, LogSeries(path))
            for path in [p for p in self._logs if p not in found]:
                del self._logs[path]

    def reload(self):
        """Looks for new log files now and then, and reads what was appended; True when something changed."""
        now = time.monotonic()
        every = DISCOVERY_SECS if self._logs else IDLE_DISCOVERY_SECS
        if self._found_at is None or now - self._found_at > every:
            self._found_at = now
            try:
                self._discover()
            except OSError:
                logger.debug("looking for mindformers logs failed", exc_info=True)
        with self._lock:
            logs = list(self._logs.values())
        changed = False
        for _, series in logs:
            while series.read():
                changed = True
        return changed

    def start(self, interval=5.0):
        if self._thread is not None:
            return
        self._stopping.clear()

        def loop():
            while not self._stopping.is_set():
                try:
                    self.reload()
                except Exception:   # never let the thread die on one bad file
                    logger.exception("reading mindformers logs failed")
                self._stopping.wait(interval)

        self._thread = threading.Thread(target=loop, name="tb-mindspore-mf-logs", daemon=True)
        self._thread.start()

    def stop(self):
        self._stopping.set()
        if self._thread is not None:
            self._thread.join(10)
            self._thread = None

    # -- what was read ---------------------------------------------------------------------------------------------
    def runs(self):
        with self._lock:
            return sorted({run for run, s in self._logs.values() if s.series})

    def scalars(self, run, tags=None):
        """``{tag: [(step, wall_time, value)]}`` of a run's logs (the later file wins for a step in both)."""
        with self._lock:
            logs = [s for r, s in self._logs.values() if r == run]
        out = {}
        for s in logs:
            for tag in list(s.series):
                if tags is not None and tag not in tags:
                    continue
                merged = {p[0]: p for p in out.get(tag, [])}
                merged.update({p[0]: p for p in s.points(tag)})
                out[tag] = [merged[k] for k in sorted(merged)]
        return out

    def warnings(self):
        with self._lock:
            return [dict(p, run=r) for r, s in self._logs.values() for p in s.problems]
