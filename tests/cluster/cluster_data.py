"""Synthetic clusters for the tests and bench/cluster.py: rank files as RankStats writes them (same format module),
rank folders of event files as mindformers / TrainMonitor(all_ranks=True) write them, and the run's own event file."""

import os

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file

T0 = 1_700_000_000.0


def write_rank_file(path, rank, steps, walls, columns, host="node0", rank_size=None, collect_freq=1):
    """One ``rank<k>.tbmsrank`` file; ``columns``: {field: array} (missing fields are NaN)."""
    fields = metadata.RANK_FIELDS
    dtype = rank_file.record_dtype(fields)
    rec = np.zeros(len(steps), dtype=dtype)
    rec["step"] = steps
    rec["wall_time"] = walls
    for f in fields:
        rec[f] = columns.get(f, np.full(len(steps), np.nan))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(rank_file.header_bytes({"rank": rank, "rank_size": rank_size or rank + 1, "host": host,
                                         "local_rank": None, "pid": 0, "start_time": T0,
                                         "collect_freq": collect_freq, "fields": list(fields)}))
        fh.write(rec.tobytes())


def cluster_columns(ranks, steps, seed=0, slow=None, slow_cause="data wait", diverge=None, stop=None, leak=None,
                    near_limit=None, device_limit=None, step_ms=100.0, host_load=None):
    """{rank: (steps, walls, {field: values})} of a cluster with the given faults.

    slow=(rank, from_step): +12% step time (data wait: +11% of it in data wait); diverge=(rank, from_step): loss x3;
    stop=(rank, at_step): no rows after it; leak=(rank, mb_per_step); near_limit=rank: device memory at 95% of
    device_limit (MB); host_load: every row's node load per CPU (else not recorded, as in older files)."""
    rs = np.random.RandomState(seed)
    steps = np.asarray(steps, dtype=np.int64)
    out = {}
    for r in range(ranks):
        n = steps.size
        t = step_ms * (1 + 0.01 * rs.randn(n))
        w = 0.05 * step_ms * (1 + 0.05 * rs.randn(n))
        loss = 2.0 * np.exp(-steps / 300.0) + 0.2 + 0.02 * rs.randn(n)
        grad = np.exp(0.05 * rs.randn(n))
        host = 2000.0 + rs.randn(n)
        dev = np.full(n, np.nan)
        lim = np.full(n, np.nan)
        if device_limit is not None:
            dev = 0.5 * device_limit + 0.001 * device_limit * rs.randn(n)
            lim = np.full(n, float(device_limit))
        if slow and slow[0] == r:
            on = steps >= slow[1]
            t[on] += 0.12 * step_ms
            if slow_cause == "data wait":
                w[on] += 0.11 * step_ms
        if diverge and diverge[0] == r:
            loss[steps >= diverge[1]] *= 3.0
        if leak and leak[0] == r:
            host = host + leak[1] * (steps - steps[0])
        if near_limit is not None and near_limit == r:
            dev = np.full(n, 0.95 * device_limit)
        keep = np.ones(n, dtype=bool) if not (stop and stop[0] == r) else steps <= stop[1]
        walls = T0 + steps * step_ms / 1000.0
        cols = {"step_time_ms": t, "data_wait_ms": w, "loss": loss, "grad_norm": grad, "host_memory_mb": host,
                "device_memory_mb": dev, "device_limit_mb": lim}
        if host_load is not None:
            cols["host_load"] = np.full(n, float(host_load))
        out[r] = (steps[keep], walls[keep], {k: v[keep] for k, v in cols.items()})
    return out


def write_cluster(run_dir, ranks=8, steps=None, nodes=2, with_event_file=True, **faults):
    """A run folder with ``cluster/rank<k>.tbmsrank`` for every rank (ranks spread over ``nodes`` hosts) and, like
    TrainMonitor on rank 0, an event file with the run information and a loss."""
    steps = np.arange(2, 202, 2) if steps is None else np.asarray(steps)
    data = cluster_columns(ranks, steps, **faults)
    per_node = max(1, -(-ranks // nodes))
    for r, (s, w, cols) in data.items():
        write_rank_file(os.path.join(str(run_dir), metadata.CLUSTER_DIR, "rank%d%s" % (r, metadata.RANK_FILE_SUFFIX)),
                        r, s, w, cols, host="node%d" % (r // per_node), rank_size=ranks)
    if with_event_file:
        from tb_plugin_mindspore.writing.writer import SummaryWriter

        with SummaryWriter(str(run_dir), flush_secs=0.5) as wr:
            wr.run_info({"logdir": os.path.abspath(str(run_dir)), "rank": 0, "rank_size": ranks}, step=0)
            s, w, cols = data[0]
            for step, wall, loss in zip(s.tolist(), w.tolist(), cols["loss"].tolist()):
                wr.scalar(metadata.LOSS, loss, step, wall_time=wall)
    return data


def write_rank_folders(parent, ranks=4, steps=None, stop=None, prefix="rank_", tags=("loss", "grad-norm")):
    """mindformers-style ``rank_<k>`` folders of event files with ``loss`` / ``grad-norm`` scalars (rank ``stop[0]``
    ends at step ``stop[1]``)."""
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    steps = np.arange(1, 101) if steps is None else np.asarray(steps)
    data = cluster_columns(ranks, steps, stop=stop)
    for r, (s, w, cols) in data.items():
        with SummaryWriter(os.path.join(str(parent), "%s%d" % (prefix, r)), flush_secs=0.5) as wr:
            for i, step in enumerate(s.tolist()):
                if "loss" in tags:
                    wr.scalar("loss", float(cols["loss"][i]), step, wall_time=float(w[i]))
                if "grad-norm" in tags:
                    wr.scalar("grad-norm", float(cols["grad_norm"][i]), step, wall_time=float(w[i]))
    return data
