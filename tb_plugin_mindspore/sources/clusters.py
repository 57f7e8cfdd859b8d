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
import os
import re
import threading

from .. import metadata
from . import series_cache
from .cluster_ranks import SOURCE_RANK_FILES, SOURCE_RANK_FOLDERS, ClusterData

DISCOVERY_TTL_SECS = 2.0
MAX_WALK_DIRS = 20000

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
    """ClusterData per folder, reused across calls (bounded), so repeated reads are incremental."""

    def __init__(self, max_entries=64):
        self._items = {}
        self._lock = threading.Lock()
        self.max_entries = max_entries

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
_RELOADED = contextvars.ContextVar("clusters_reloaded", default=None)


@contextlib.contextmanager
def one_reload():
    """Within it (in this thread), :func:`cluster_for_health` reloads each cluster once: one health check over many
    rules sees one state of the rank files, and costs one ``stat`` per file, not one per file and rule."""
    if _RELOADED.get() is not None:
        yield
        return
    token = _RELOADED.set(set())
    try:
        yield
    finally:
        _RELOADED.reset(token)


def cluster_for_health(directory):
    """The reloaded :class:`ClusterData` a run folder's cluster rules judge, or ``None`` (see
    :func:`cluster_of_run_dir`; looked up again at most every 2 s per folder)."""
    found = _FOUND.get(os.path.abspath(directory), lambda: cluster_of_run_dir(directory))
    if found is None:
        return None
    folder, source, members = found
    data = _HEALTH_REGISTRY.get(folder, os.path.basename(folder), source, members)
    reloaded = _RELOADED.get()
    if reloaded is None or folder not in reloaded:
        data.reload()
        if reloaded is not None:
            reloaded.add(folder)
    return data
