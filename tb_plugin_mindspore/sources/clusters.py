"""Where the clusters are: the ranks of one training found under a folder, for the Cluster view and the cluster
health rules.

* **rank files** (ours): a run folder whose ``cluster/`` holds ``rank<k>.tbmsrank`` files (``contract/rank_file.py``);
* **rank folders**: sibling folders named ``rank_<k>`` (mindformers) or ``rank<k>`` (``TrainMonitor(all_ranks=True)``,
  rank 0 in the parent folder itself) holding event files.

:func:`discover` lists every cluster under a logdir; :func:`cluster_of_run_dir` / :func:`cluster_for_health` the
one a run folder's rules judge; :class:`Registry` keeps a ``cluster_ranks.ClusterData`` per folder so repeated reads
are incremental.
"""

import contextlib
import contextvars
import logging
import os
import re
import threading
import time

from .. import metadata
from . import series_cache
from .cluster_ranks import SOURCE_RANK_FILES, SOURCE_RANK_FOLDERS, ClusterData

DISCOVERY_TTL_SECS = 2.0
MAX_WALK_DIRS = 20000
KEEP_READING_SECS = 300.0      # a cluster no health check asked for this long is no longer read in the background

logger = logging.getLogger(__name__)

_RANK_FILE = re.compile(r"^rank(\d+)" + re.escape(metadata.RANK_FILE_SUFFIX) + "$")
_RANK_FOLDER = re.compile(r"^rank_?(\d+)$")


def discover(logdir, max_dirs=MAX_WALK_DIRS):
    """``{name: (source, [(rank, path)])}`` of the clusters under a local ``logdir`` (names relative to it, "."
    for the logdir itself)."""
    base = os.path.abspath(os.path.expanduser(str(logdir)))
    found = {}
    folder_groups = {}
    seen = 0
    for root, dirs, files in os.walk(base):
        seen += 1
        if seen > max_dirs:
            break
        dirs.sort()
        if os.path.basename(root) == metadata.CLUSTER_DIR:
            members = []
            for name in files:
                m = _RANK_FILE.match(name)
                if m:
                    members.append((int(m.group(1)), os.path.join(root, name)))
            if members:
                run = os.path.relpath(os.path.dirname(root), base)
                found[run] = (SOURCE_RANK_FILES, sorted(members))
            dirs[:] = []
            continue
        m = _RANK_FOLDER.match(os.path.basename(root))
        if m and root != base and any("tfevents" in f for f in files):
            folder_groups.setdefault(os.path.dirname(root), []).append((int(m.group(1)), root))
    for parent, members in folder_groups.items():
        run = os.path.relpath(parent, base)
        if run in found:
            continue
        ranks = {r for r, _ in members}
        # TrainMonitor(all_ranks=True): rank 0 writes into the parent folder itself.
        if 0 not in ranks and _has_event_files(parent):
            members = members + [(0, parent)]
        if len(members) >= 2:
            found[run] = (SOURCE_RANK_FOLDERS, sorted(members))
    return found


def _has_event_files(path):
    try:
        return any("tfevents" in e.name and e.is_file() for e in os.scandir(path))
    except OSError:
        return False


def cluster_of_run_dir(directory):
    """``(cluster folder, source, members)`` of the cluster a run folder belongs to for the health rules, or
    ``None``: its own ``cluster/`` rank files; the rank folders below it (``all_ranks=True``); or, for the
    lowest-numbered of sibling ``rank_<k>`` folders, their cluster (so each cluster is judged once)."""
    if not directory:
        return None
    directory = os.path.abspath(directory)
    cdir = os.path.join(directory, metadata.CLUSTER_DIR)
    try:
        names = os.listdir(cdir)
    except OSError:
        names = []
    members = [(int(m.group(1)), os.path.join(cdir, n)) for n in names for m in [_RANK_FILE.match(n)] if m]
    if members:
        return directory, SOURCE_RANK_FILES, sorted(members)
    subs = _rank_subfolders(directory)
    if subs:
        if 0 not in {r for r, _ in subs}:
            subs.append((0, directory))
        return directory, SOURCE_RANK_FOLDERS, sorted(subs)
    m = _RANK_FOLDER.match(os.path.basename(directory))
    if m:
        parent = os.path.dirname(directory)
        if os.path.isdir(os.path.join(parent, metadata.CLUSTER_DIR)):
            return None
        try:
            names = os.listdir(parent)
        except OSError:
            return None
        own = int(m.group(1))
        if any(int(x.group(1)) < own for x in map(_RANK_FOLDER.match, names) if x):
            return None     # a lower rank's folder judges the cluster (checked by name: cheap at 1,024 ranks)
        siblings = _rank_subfolders(parent)
        if _has_event_files(parent) and 0 not in {r for r, _ in siblings}:
            return None      # the parent is rank 0 of an all_ranks run: judged there
        if len(siblings) >= 2 and min(r for r, _ in siblings) == int(m.group(1)):
            return parent, SOURCE_RANK_FOLDERS, sorted(siblings)
    return None


def _rank_subfolders(path):
    out = []
    try:
        for entry in os.scandir(path):
            m = _RANK_FOLDER.match(entry.name)
            if m and entry.is_dir() and _has_event_files(entry.path):
                out.append((int(m.group(1)), entry.path))
    except OSError:
        pass
    return out


class Registry:
    """ClusterData per folder, reused across calls (bounded), so repeated reads are incremental.

    :meth:`start` reads them in a daemon thread as well (the clusters a health check asked for within
    ``KEEP_READING_SECS``), every ``interval`` seconds and again at once while a file has more to read, as the
    plugin's store of every point reads event files: a health check after a reload then finds the new rows read
    (:func:`cluster_for_health`). Each reload that changed a cluster is told to the ``listeners`` (``fn(folder,
    data)``, in that thread)."""

    def __init__(self, max_entries=64):
        self._items = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries
        self._readers = 0           # start() calls not yet stopped
        self._interval = None
        self._thread = None
        self._wake = threading.Event()
        self._listeners = []
        self.passes = 0             # background passes ended (for tests)

    def get(self, key, name, source, members):
        with self._lock:
            data = self._items.get(key)
            if data is None or data.source != source:
                if len(self._items) >= self.max_entries:
                    self._items.pop(next(iter(self._items)))
                data = self._items[key] = ClusterData(name, source, members)
            else:
                data.set_members(members)
            return data

    def view(self, key, name, source, members):
        """The :class:`~.cluster_ranks.ClusterView` a health check judges of the cluster at ``key``: the state the
        last reload left. While the background thread keeps the cluster read (:meth:`covers`), that is the thread's
        last reload; otherwise the cluster is reloaded here first (the commands; a cluster asked for the first
        time, or not asked for a long while)."""
        data = self.get(key, name, source, members)
        data.asked_at = time.monotonic()
        if not self.covers(data):
            data.reload()
        return data.view()

    # -- reading in the background -------------------------------------------------------------------------------
    def start(self, interval):
        """Reads the clusters asked for in a daemon thread every ``interval`` seconds (<= 0: never; the health checks
        then read them). Counted: the thread stops at the last :meth:`stop`."""
        if interval is None or interval <= 0:
            return
        with self._lock:
            self._readers += 1
            self._interval = float(interval) if self._interval is None else min(self._interval, float(interval))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="tb-mindspore-rank-files", daemon=True)
                self._thread.start()

    def stop(self):
        with self._lock:
            self._readers = max(0, self._readers - 1)
            if self._readers:
                return
            thread, self._thread, self._interval = self._thread, None, None
        self._wake.set()
        if thread is not None and thread is not threading.current_thread():
            thread.join(10.0)

    def add_listener(self, fn):
        with self._lock:
            self._listeners.append(fn)

    def remove_listener(self, fn):
        with self._lock:
            self._listeners = [f for f in self._listeners if f != fn]

    def covers(self, data):
        """Whether the background thread keeps ``data`` read (it ended a reload of it within a few intervals): a
        health check then judges what that reload left instead of reading the files itself."""
        with self._lock:
            interval = self._interval if self._thread is not None and self._thread.is_alive() else None
        return (interval is not None and data.reloaded_at is not None
                and time.monotonic() - data.reloaded_at <= max(3 * interval, 3.0))

    def _loop(self):
        me = threading.current_thread()
        while True:
            with self._lock:
                if self._thread is not me:
                    return
                interval = self._interval
                now = time.monotonic()
                wanted = [(key, data) for key, data in self._items.items()
                          if data.asked_at is not None and now - data.asked_at <= KEEP_READING_SECS]
                listeners = list(self._listeners)
            pending = False
            for key, data in wanted:
                try:
                    before = data.version
                    data.reload()
                    pending = data.pending() or pending
                    if data.version != before:
                        for fn in listeners:
                            fn(key, data)
                except Exception:   # nothing may end this thread: said in the log, tried again next pass
                    logger.exception("mindspore plugin: reading the rank files of %s failed", key)
            self.passes += 1
            if not pending:
                self._wake.wait(interval)
                self._wake.clear()


_HEALTH_REGISTRY = Registry()


def problems_of(data, logdir, run):
    """``[{"run", "file", "offset", "reason"}]`` of a cluster's ranks that are not shown whole: a rank file refused
    (and why), records left out (all zero bytes, impossible steps or wall times), older rows let go, unreadable
    files. ``file`` relative to ``logdir``."""
    out = []
    base = os.path.abspath(os.path.expanduser(str(logdir)))
    for r in data.ranks:
        for reason in r.problems():
            out.append({"run": run, "file": os.path.relpath(os.path.abspath(r.path), base), "offset": None,
                        "reason": "rank %d: %s" % (r.rank, reason)})
    return out


def logdir_problems(logdir):
    """:func:`problems_of` every cluster under a local ``logdir`` (what ``tb-mindspore check`` reports), each rank
    file read completely into the registry the health rules then use (so they judge every row, and each file is
    read once)."""
    if not logdir or "://" in str(logdir) or not os.path.isdir(logdir):
        return []
    out = []
    base = os.path.abspath(os.path.expanduser(str(logdir)))
    for run, (source, members) in sorted(discover(base).items()):
        folder = os.path.normpath(os.path.join(base, run))
        data = _HEALTH_REGISTRY.get(folder, os.path.basename(folder), source, members)
        data.reload(complete=True)
        out += problems_of(data, base, run)
    return out


_FOUND = series_cache.TtlMemo(ttl=DISCOVERY_TTL_SECS, max_entries=4096)
_SEEN = contextvars.ContextVar("clusters_seen", default=None)


@contextlib.contextmanager
def one_reload():
    """Within it (in this thread), :func:`cluster_for_health` gives each cluster's one state: one health check over
    many rules sees one state of the rank files, and costs at most one ``stat`` per file, not one per file and
    rule."""
    if _SEEN.get() is not None:
        yield
        return
    token = _SEEN.set({})
    try:
        yield
    finally:
        _SEEN.reset(token)


@contextlib.contextmanager
def judging(folder, view):
    """Within it (in this thread), :func:`cluster_for_health` gives ``view`` for the cluster at ``folder`` (a state
    judged ahead of the checks, in the thread that reads the rank files)."""
    token = _SEEN.set({folder: view})
    try:
        yield
    finally:
        _SEEN.reset(token)


def read_in_background(interval):
    """Reads the rank files of the clusters the health checks ask for in a daemon thread every ``interval``
    seconds (see :class:`Registry`); :func:`stop_reading` ends it (counted: one per call)."""
    _HEALTH_REGISTRY.start(interval)


def stop_reading():
    _HEALTH_REGISTRY.stop()


def on_reload(fn):
    """Calls ``fn(folder, data)`` in the background thread after each of its reloads that changed a cluster (the
    health answers judge its new state there); :func:`off_reload` undoes it."""
    _HEALTH_REGISTRY.add_listener(fn)


def off_reload(fn):
    _HEALTH_REGISTRY.remove_listener(fn)


def cluster_for_health(directory):
    """The :class:`~.cluster_ranks.ClusterView` a run folder's cluster rules judge, or ``None`` (see
    :func:`cluster_of_run_dir`; looked up again at most every 2 s per folder): the state the last reload left
    (:meth:`Registry.view`; the rank files are read here unless the background thread keeps them read)."""
    found = _FOUND.get(os.path.abspath(directory), lambda: cluster_of_run_dir(directory))
    if found is None:
        return None
    folder, source, members = found
    seen = _SEEN.get()
    if seen is not None and folder in seen:
        return seen[folder]
    view = _HEALTH_REGISTRY.view(folder, os.path.basename(folder), source, members)
    if seen is not None:
        seen[folder] = view
    return view
