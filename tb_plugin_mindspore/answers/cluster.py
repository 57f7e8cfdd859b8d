"""Many ranks as one cluster: ranks x steps matrices of step time, data wait, loss, gradient norm and memory.

Where ranks come from (found under the server's own logdir, never from a path in a request):

* **rank files** (ours): a run folder whose ``cluster/`` holds ``rank<k>.tbmsrank`` files, one per rank, written by
  ``tb_mindspore_callbacks.RankStats`` (format: ``rank_file.py``). The cluster is named by the run folder.
* **rank folders**: sibling folders named ``rank_<k>`` (mindformers) or ``rank<k>`` (``TrainMonitor(all_ranks=
  True)``, rank 0 in the parent folder itself) holding TensorBoard event files: their loss, gradient norm, step
  time, data wait and memory scalars (our tags or mindformers' / plain aliases) are read straight from the files.
  The cluster is named by the parent folder.

Finding the clusters is ``sources/clusters.py``; reading and aligning the ranks ``sources/cluster_ranks.py``
(incremental: a ``stat`` per file when nothing changed).
Ranks are ordered by node, then rank, and the page groups them by node.
"""

import os

import numpy as np
from tensorboard import errors

from . import encode
from ..sources import series_cache
from ..sources.cluster_ranks import (  # noqa: F401
    _NAN_MEANS_MISSING, SOURCE_RANK_FILES, SOURCE_RANK_FOLDERS, ClusterData,
)
from ..sources.clusters import DISCOVERY_TTL_SECS, Registry, discover, problems_of
from .layers import ENCODING, MISSING_BITS, merge_columns

DEFAULT_MAX_STEPS = 1000
MAX_STEPS_LIMIT = 20000

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
# The routes
class ClusterReader:
    """The ``clusters`` and ``cluster`` routes over the server's logdir."""

    def __init__(self, logdir, cache=None, roots=None):
        self.logdir = logdir or ""
        self._roots = roots if roots is not None and roots.is_spec else None   # --logdir_spec entries
        self._cache = cache if cache is not None else encode.ResponseCache()
        self._registry = Registry(max_entries=256)
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

    def problems(self):
        """``status`` warnings: every rank file refused, records left out, rows let go (``clusters.problems_of``)."""
        out = []
        for run in sorted(self._clusters()):
            data, _ = self._data(run)
            out += problems_of(data, self.logdir, run)
        return out

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
                              "label": "rank %d" % r.rank + (" (refused)" if r.refused else ""),
                              "refused": r.refused}, **status[i]))
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

