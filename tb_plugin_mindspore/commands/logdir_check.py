"""``tb-mindspore check`` over a local logdir, in a pool of processes over its runs (every core on large logdirs).

Each worker reads a share of the run folders through a view of the logdir holding only them (a temporary folder of
symbolic links to their event and ``*_MS`` files, with the same relative paths, so run names are those of the
logdir), the same way as ``health.sources.runs_from_logdir`` (as the tab reads them), and checks its runs; the
reports are merged in run-name order, so the output is the one a single process gives. Small logdirs and remote
ones are checked in this process. Every record or file left out is named in the report's ``warnings``.
"""

import concurrent.futures
import multiprocessing
import os
import shutil
import tempfile
import threading
import time

from ..health import engine, sources
from ..io import fs
from ..sources import clusters
from ..sources.ms_logdir import part_of

# Below this many runs a pool costs more (starting processes, loading TensorBoard) than it saves.
MIN_PARALLEL_RUNS = 16


def run_folders(logdir):
    """``{run name: [data file names]}``: every folder under ``logdir`` holding event files or ``*_MS`` / lineage
    files (run names relative to ``logdir``, ``"."`` for the logdir itself)."""
    out = {}
    for root, dirs, names in os.walk(logdir):
        dirs.sort()
        files = sorted(n for n in names if sources.is_data_file(n))
        if files:
            out[os.path.normpath(os.path.relpath(root, logdir))] = files
    return out


def fold_groups(folders):
    """``{group: [folder, ...]}``: the run folders that may fold into one run (``sources/run_fold.py``: rotated
    ``part_N`` folders with their run, add_scalars key folders below their run) under one key, the outermost run
    folder among them."""
    bases = {n: part_of(n)[0] for n in folders}
    known = set(bases.values())
    out = {}
    for name, base in bases.items():
        parts = base.split("/")
        key = next(("/".join(parts[:i]) for i in range(1, len(parts) + 1) if "/".join(parts[:i]) in known), base)
        out.setdefault(key, []).append(name)
    return out


def default_jobs():
    """The processes to use: every core this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def report(logdir, config=None, now=None, jobs=None):
    """``engine.report`` of every run under ``logdir`` (a local folder or a URL), ``jobs`` processes (default:
    :func:`default_jobs`), plus ``"warnings"``: ``[{"run", "file", "offset", "reason"}]`` of every record and file
    left out, in file order."""
    now = time.time() if now is None else float(now)
    jobs = default_jobs() if jobs is None else max(1, int(jobs))
    clusters = _rank_file_problems(logdir)     # first: the rank files are then read whole for the cluster rules
    folders = {} if fs.is_remote(logdir) or jobs == 1 else run_folders(logdir)
    if len(folders) < MIN_PARALLEL_RUNS:
        warnings = []
        result = engine.report(sources.runs_from_logdir(logdir, now=now, warnings=warnings), config)
        result["warnings"] = warnings + clusters
        return result
    groups = fold_groups(folders)   # the folders of one training (parts, add_scalars key folders) stay together
    names = sorted(groups)
    shares = [names[i::jobs * 2] for i in range(jobs * 2)]
    tasks = [(logdir, {n: folders[n] for key in share for n in groups[key]}, now, config) for share in shares if share]
    with concurrent.futures.ProcessPoolExecutor(max_workers=jobs, mp_context=_context()) as pool:
        parts = list(pool.map(_check_share, tasks))
    return {"runs": sorted((r for rows, _ in parts for r in rows), key=lambda r: r["run"]),
            "warnings": sorted((w for _, found in parts for w in found), key=lambda w: (w["file"], w["offset"] or 0))
            + clusters}


def _rank_file_problems(logdir):
    """Rank files refused, their records left out or rows let go (``sources.clusters.logdir_problems``)."""
    return [] if fs.is_remote(logdir) else clusters.logdir_problems(logdir)


def _context():
    """``fork`` (fast: TensorBoard is already imported) from a single-threaded process, else ``spawn``."""
    if threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _check_share(task):
    """``(report rows, warnings)`` of a share of the runs (runs in a worker process)."""
    logdir, folders, now, config = task
    view = tempfile.mkdtemp(prefix="tb-mindspore-check-")
    try:
        for run, names in folders.items():
            target = os.path.normpath(os.path.join(view, run))
            os.makedirs(target, exist_ok=True)
            for name in names:
                os.symlink(os.path.join(logdir, run, name), os.path.join(target, name))
        warnings = []
        rows = engine.report(sources.runs_from_view(view, view, logdir, now=now, warnings=warnings), config)["runs"]
        return rows, warnings
    finally:
        shutil.rmtree(view, ignore_errors=True)
