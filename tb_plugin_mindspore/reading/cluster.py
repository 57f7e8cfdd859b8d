"""Many ranks as one cluster: ranks x steps matrices of step time, data wait, loss, gradient norm and memory.

Where ranks come from (found under the server's own logdir, never from a path in a request):

* **rank files** (ours): a run folder whose ``cluster/`` holds ``rank<k>.tbmsrank`` files, one per rank, written by
  ``tb_mindspore_callbacks.RankStats`` (format: ``rank_file.py``). The cluster is named by the run folder.
* **rank folders**: sibling folders named ``rank_<k>`` (mindformers) or ``rank<k>`` (``TrainMonitor(all_ranks=
  True)``, rank 0 in the parent folder itself) holding TensorBoard event files: their loss, gradient norm, step
  time, data wait and memory scalars (our tags or mindformers' / plain aliases) are read straight from the files.
  The cluster is named by the parent folder.

Reading and aligning the ranks is ``cluster_ranks.py`` (incremental: a ``stat`` per file when nothing changed).
Ranks are ordered by node, then rank, and the page groups them by node.
"""

import os
import re
import threading

import numpy as np
from tensorboard import errors

from .. import metadata
from . import encode, series_cache
from .cluster_ranks import _NAN_MEANS_MISSING, SOURCE_RANK_FILES, SOURCE_RANK_FOLDERS, ClusterData  # noqa: F401
from .layers import ENCODING, MISSING_BITS, merge_columns

DEFAULT_MAX_STEPS = 1000
MAX_STEPS_LIMIT = 20000
DISCOVERY_TTL_SECS = 2.0
MAX_WALK_DIRS = 20000

# What the view shows per field: title, unit, color scale ("log": log10 of positive values; "linear").
METRICS = {
    "step_time_ms": ("Step time", "ms", "log"),
    "data_wait_ms": ("Data wait", "ms", "log"),
    "loss": ("Local loss", "", "linear"),
    "grad_norm": ("Local gradient norm", "", "log"),
    "host_memory_mb": ("Host memory (RSS)", "MB", "linear"),
    "device_memory_mb": ("Device memory", "MB", "linear"),
    "device_limit_mb": ("Device memory limit", "MB", "linear"),
    "local_loss": ("Device-local loss", "", "linear"),
    "local_grad_norm": ("Device-local gradient norm", "", "log"),
}
HEATMAP_METRICS = ("step_time_ms", "data_wait_ms", "grad_norm", "loss", "local_grad_norm", "local_loss",
                   "host_memory_mb", "device_memory_mb")

_RANK_FILE = re.compile(r"^rank(\d+)" + re.escape(metadata.RANK_FILE_SUFFIX) + "$")
_RANK_FOLDER = re.compile(r"^rank_?(\d+)$")


def rank_status(ranks):
    """Per rank ``{"last_step", "last_wall_time"}`` of its newest row (None when it wrote none)."""
    out = []
    for r in ranks:
        steps, walls, _ = r.arrays()
        if steps.size:
            out.append({"last_step": int(steps[-1]), "last_wall_time": encode.json_float(walls[-1])})
        else:
            out.append({"last_step": None, "last_wall_time": None})
    return out


def available(ranks, field):
    """Whether any rank measured ``field`` (a value that is not NaN)."""
    for r in ranks:
        col = r.arrays()[2].get(field)
        if col is not None and col.size and not np.isnan(col).all():
            return True
    return False


# ---------------------------------------------------------------------------------------------------------------
# Finding clusters under a folder
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


class _Registry:
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


_HEALTH_REGISTRY = _Registry()


_FOUND = series_cache.TtlMemo(ttl=DISCOVERY_TTL_SECS, max_entries=4096)


def cluster_for_health(directory):
    """The reloaded :class:`ClusterData` a run folder's cluster rules judge, or ``None`` (see
    :func:`cluster_of_run_dir`; looked up again at most every 2 s per folder)."""
    found = _FOUND.get(os.path.abspath(directory), lambda: cluster_of_run_dir(directory))
    if found is None:
        return None
    folder, source, members = found
    data = _HEALTH_REGISTRY.get(folder, os.path.basename(folder), source, members)
    data.reload()
    return data


# ---------------------------------------------------------------------------------------------------------------
# The routes
class ClusterReader:
    """The ``clusters`` and ``cluster`` routes over the server's logdir."""

    def __init__(self, logdir, cache=None, roots=None):
        self.logdir = logdir or ""
        self._roots = roots if roots is not None and roots.is_spec else None   # --logdir_spec entries
        self._cache = cache if cache is not None else series_cache.ResponseCache()
        self._registry = _Registry(max_entries=256)
        self._discovery = series_cache.TtlMemo(ttl=DISCOVERY_TTL_SECS, max_entries=4)

    def _local(self):
        return bool(self.logdir) and "://" not in self.logdir and os.path.isdir(os.path.expanduser(self.logdir))

    def _clusters(self):
        if self._roots is not None:
            return self._discovery.get("clusters", self._discover_roots)
        if not self._local():
            return {}
        return self._discovery.get("clusters", lambda: discover(self.logdir))

    def _discover_roots(self):
        """The clusters of every local ``--logdir_spec`` entry, named as TensorBoard names that entry's runs."""
        out = {}
        for root in self._roots:
            if "://" in root.path or not os.path.isdir(root.path):
                continue
            for name, found in discover(root.path).items():
                out[self._roots.run_name(root, name)] = found
        return out

    def _data(self, run):
        clusters = self._clusters()
        if run not in clusters:
            raise errors.NotFoundError("no cluster named %r (clusters: %s)" % (run, ", ".join(sorted(clusters))
                                                                              or "none"))
        source, members = clusters[run]
        data = self._registry.get(run, run, source, members)
        data.reload()
        return data, data.token

    def listing(self):
        """``{"clusters": [{"run", "source", "ranks", "nodes", "metrics", "last_step"}]}``."""
        out = []
        for run in sorted(self._clusters()):
            data, _ = self._data(run)
            ranks, steps, _, _ = data.aligned()
            out.append({"run": run, "source": data.source, "ranks": len(ranks),
                        "nodes": len({r.host for r in ranks}),
                        "metrics": [m for m in HEATMAP_METRICS if available(ranks, m)],
                        "last_step": int(steps[-1]) if steps.size else None})
        return {"clusters": out}

    def matrix(self, run, metric, max_steps=DEFAULT_MAX_STEPS):
        """JSON text of one metric as a ranks x steps heatmap (the ``layers`` route's matrix format)."""
        if metric not in METRICS:
            raise errors.InvalidArgumentError("metric must be one of %s, got %r" % (", ".join(METRICS), metric))
        data, version = self._data(run)
        key = ("cluster", run, metric, max_steps)
        text = self._cache.get(key, version)
        if text is not None:
            return text
        ranks, steps, walls, mats = data.aligned()
        if metric in mats:
            matrix, present = mats[metric]
        else:
            matrix = np.full((len(ranks), steps.size), np.nan, dtype=np.float32)
            present = np.zeros(matrix.shape, dtype=bool)
        status = rank_status(ranks)
        total = int(steps.size)
        csteps, cwalls, cmat, cpresent = merge_columns(steps, walls, matrix, present, max_steps)
        finite = cmat[np.isfinite(cmat) & cpresent]
        title, unit, scale = METRICS[metric]
        if scale == "log" and finite.size and float(finite.min()) <= 0:
            scale = "linear"
        nodes = {}
        rows = []
        for i, r in enumerate(ranks):
            nodes.setdefault(r.host, []).append(i)
            rows.append(dict({"rank": r.rank, "node": r.host, "local_rank": r.local_rank,
                              "label": "rank %d" % r.rank}, **status[i]))
        body = {
            "run": run, "metric": metric, "source": data.source, "display_name": title, "unit": unit,
            "scale": scale, "ranks": rows,
            "nodes": [{"node": n, "rows": idx} for n, idx in nodes.items()],
            "layers": [row["label"] for row in rows],
            "last_step": int(steps[-1]) if steps.size else None,
            "steps": csteps.tolist(), "wall_times": encode.json_numbers(cwalls), "total_steps": total,
            "downsampled": bool(csteps.size < total), "shape": [len(ranks), int(csteps.size)],
            "encoding": ENCODING,
            "values": encode.bf16_planes_b64(cmat, missing=~cpresent, missing_bits=MISSING_BITS),
            "summary": {
                "finite_min": encode.json_float(finite.min()) if finite.size else None,
                "finite_max": encode.json_float(finite.max()) if finite.size else None,
                "nonfinite": int(cpresent.sum() - finite.size),
                "missing": int(cpresent.size - cpresent.sum()),
            },
        }
        return self._cache.put(key, version, encode.Gzipped(encode.dumps(body)))

    def rank(self, run, metric, rank):
        """One rank's series at full precision: ``{"run", "metric", "rank", "node", "points": [[step, wall, v]]}``."""
        if metric not in METRICS:
            raise errors.InvalidArgumentError("metric must be one of %s, got %r" % (", ".join(METRICS), metric))
        data, _ = self._data(run)
        for r in data.ranks:
            if r.rank == rank:
                steps, walls, cols = r.arrays()
                col = cols.get(metric)
                if col is None:
                    return {"run": run, "metric": metric, "rank": rank, "node": r.host, "points": []}
                keep = ~np.isnan(col) if metric in _NAN_MEANS_MISSING else np.ones(col.size, dtype=bool)
                points = [list(p) for p in zip(steps[keep].tolist(), encode.json_numbers(walls[keep]),
                                               encode.json_numbers(col[keep].astype(np.float64)))]
                return {"run": run, "metric": metric, "rank": rank, "node": r.host, "points": points}
        raise errors.NotFoundError("cluster %r has no rank %d" % (run, rank))

