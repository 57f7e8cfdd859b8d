"""A landscape's grid split across the workers of MindSpore's ``msrun`` launcher.

Each worker evaluates the points ``k`` with ``k % workers == rank`` (interleaved, so the workers' shares cost the
same however the loss varies over the grid) and writes its losses to ``<share_dir>/<tag>.<step>.rank<r>.npy``
(written to a temporary name, then renamed: a file that exists is complete). Rank 0 waits for the other workers'
files up to ``timeout`` seconds, merges them and writes the record; a worker that died or is late leaves its points
NaN and the landscape is written as incomplete (``complete: false``, ``missing_ranks``). No collective
communication is used, so nothing can hang on a dead worker, and ``mindspore.communication.init()`` is not needed.

Every worker must hold the same parameters (as in data-parallel training) and the same evaluation subset; the
random directions come from the same seed. Rank and size come from msrun's environment (``RANK_ID``,
``RANK_SIZE``); msrun's scheduler process (``MS_ROLE=MS_SCHED``) runs the script too and computes nothing.
"""

import os
import re
import time

import numpy as np

from tb_plugin_mindspore.landscape import format as fmt

from .compute import compute_landscape
from .run import write_record
from .settings import TAG_PREFIX

__all__ = ["compute_landscape_distributed", "msrun_share"]


def msrun_share(environ=None):
    """``(rank, workers)`` from msrun's environment; ``None`` in msrun's scheduler process; ``(0, 1)`` outside
    msrun."""
    env = os.environ if environ is None else environ
    if env.get("MS_ROLE") == "MS_SCHED":
        return None
    try:
        rank = int(env.get("RANK_ID", "0"))
        workers = int(env.get("RANK_SIZE") or env.get("MS_WORKER_NUM") or "1")
    except ValueError:
        raise ValueError("RANK_ID / RANK_SIZE must be integers, got %r / %r"
                         % (env.get("RANK_ID"), env.get("RANK_SIZE")))
    if not 0 <= rank < workers:
        raise ValueError("RANK_ID %d is outside 0..%d" % (rank, workers - 1))
    return rank, workers


def _share_file(share_dir, tag, step, rank):
    safe = re.sub(r"[^A-Za-z0-9_.-]", "_", tag)
    return os.path.join(share_dir, "%s.%d.rank%d.npy" % (safe, int(step), rank))


def _save(path, z):
    tmp = path + ".tmp%d" % os.getpid()
    with open(tmp, "wb") as f:
        np.save(f, z)
    os.replace(tmp, path)


def _owned(shape, rank, workers):
    """Mask of the grid points ``rank`` evaluates (flat index ``k % workers == rank``)."""
    mask = np.zeros(int(np.prod(shape)), dtype=bool)
    mask[rank::workers] = True
    return mask.reshape(shape)


def _gather(share_dir, tag, step, workers, z, timeout, poll=0.2):
    """``missing ranks`` after merging the other workers' points into ``z`` (rank 0's), each from its owner."""
    shape = z.shape
    pending = set(range(1, workers))
    deadline = time.monotonic() + timeout
    while True:
        for r in sorted(pending):
            path = _share_file(share_dir, tag, step, r)
            if os.path.exists(path):
                part = np.load(path)
                os.remove(path)
                if part.shape != shape:
                    continue   # another grid: stays missing
                own = _owned(shape, r, workers)
                z[own] = part[own]
                pending.discard(r)
        if not pending or time.monotonic() >= deadline:
            return sorted(pending)
        time.sleep(poll)


def compute_landscape_distributed(loss_network=None, eval_data=None, method="random", *, share_dir, share=None,
                                  timeout=600.0, logdir=None, writer=None, tag=None, step=0, **kwargs):
    """:func:`compute_landscape` with the grid split across msrun workers (see the module); returns the merged
    :class:`LandscapeResult` on rank 0, this worker's part elsewhere, None in msrun's scheduler process.

    ``share_dir``: a folder every worker can write (e.g. next to the run folder); ``share``: ``(rank, workers)``
    (default from msrun's environment); ``timeout``: how long rank 0 waits for the others after its own share.
    """
    share = msrun_share() if share is None else share
    if share is None:
        return None
    rank, workers = share
    if not (isinstance(timeout, (int, float)) and timeout >= 0):
        raise ValueError("timeout must be a number >= 0, got %r" % (timeout,))
    os.makedirs(share_dir, exist_ok=True)
    tag = tag or TAG_PREFIX + method
    result = compute_landscape(loss_network, eval_data, method, share=(rank, workers), tag=tag, step=step, **kwargs)
    if rank != 0:
        _save(_share_file(share_dir, tag, step, rank), result.z)
        return result
    started = time.perf_counter()
    z = result.z.copy()
    missing = _gather(share_dir, tag, step, workers, z, timeout)
    record = result.record
    done = int(sum(np.count_nonzero(_owned(z.shape, r, workers)) for r in range(1, workers) if r not in missing)
               + result.points_done)
    record["landscape"]["z"] = [fmt._floats(row) for row in z]
    meta = record["metadata"]
    meta.update({"workers": workers, "points_done": done, "rows_done": int(np.all(~np.isnan(z), axis=1).sum()),
                 "complete": bool(meta.get("complete", True)) and not missing and done == z.size,
                 "missing_ranks": missing, "gather_s": round(time.perf_counter() - started, 3)})
    result.z, result.points_done, result.complete = z, done, meta["complete"]
    write_record(writer, logdir, tag, step, record)
    return result
