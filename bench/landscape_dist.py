"""Speed-up of a landscape split across msrun workers, one CPU core per worker, on the demo transformer.

Each configuration launches ``msrun --worker_num=W`` (W = 1 and 2 by default, alternating so machine load hits both
alike); every worker pins itself to core ``rank`` (``os.sched_setaffinity``), builds the demo model (same seed) and
evaluates its interleaved share of a ``--grid`` x ``--grid`` random landscape on ``--samples`` samples
(``tb_mindspore_callbacks.landscape.dist``); rank 0 gathers and writes. Measured: wall time of the msrun command
and rank 0's time inside ``compute_landscape_distributed`` (compilation included).

    python bench/landscape_dist.py --grid 9 --workers 1,2 --reps 2
Prints a table, then one JSON line.
"""

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def child(logdir, share_dir, grid, samples):
    from tb_mindspore_callbacks.landscape.dist import msrun_share

    share = msrun_share()
    if share is None:
        return
    ncpu = os.cpu_count() or 1
    os.sched_setaffinity(0, {share[0] % ncpu})
    import mindspore as ms
    from mindspore import nn

    from tb_mindspore_callbacks.demo import build_model, synthetic_arrays
    from tb_mindspore_callbacks.landscape.dist import compute_landscape_distributed

    ms.set_context(mode=ms.GRAPH_MODE)
    net = build_model()
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    tokens, labels = synthetic_arrays(samples, seed=3)
    started = time.perf_counter()
    result = compute_landscape_distributed(loss_net, (tokens, labels), "random", share_dir=share_dir, share=share,
                                           logdir=logdir, grid=grid, num_samples=samples, eval_batch_size=samples,
                                           log=None, progress=False, timeout=1800)
    print("WORKER " + json.dumps({"rank": share[0], "workers": share[1], "points": int(result.points_done),
                                  "complete": bool(result.complete), "seconds": time.perf_counter() - started,
                                  "compute_s": result.seconds, "seconds_per_point": result.seconds_per_point}),
          flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(workers, grid, samples):
    tmp = tempfile.mkdtemp(prefix="bench_ls_dist_")
    bin_dir = os.path.dirname(sys.executable)
    cmd = [os.path.join(bin_dir, "msrun"), "--worker_num=%d" % workers, "--local_worker_num=%d" % workers,
           "--master_port=%d" % free_port(), "--log_dir=%s" % os.path.join(tmp, "log"), "--join=True",
           os.path.abspath(__file__), "--child", os.path.join(tmp, "run"), os.path.join(tmp, "share"), str(grid),
           str(samples)]
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), GLOG_v="3")
    started = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp)
    wall = time.perf_counter() - started
    logs = ""
    for name in sorted(os.listdir(os.path.join(tmp, "log"))):
        with open(os.path.join(tmp, "log", name), errors="replace") as f:
            logs += f.read()
    out = [json.loads(line.split("WORKER ", 1)[1]) for line in logs.splitlines() if "WORKER {" in line]
    shutil.rmtree(tmp, ignore_errors=True)
    rank0 = [w for w in out if w["rank"] == 0]
    if proc.returncode != 0 or not rank0 or not rank0[0]["complete"]:
        raise RuntimeError("msrun with %d workers failed (rc %s): %s" % (workers, proc.returncode, logs[-2000:]))
    return {"workers": workers, "wall_s": wall, "rank0_s": rank0[0]["seconds"], "points": grid * grid,
            "rank0_seconds_per_point": rank0[0]["seconds_per_point"]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--grid", type=int, default=9)
    ap.add_argument("--samples", type=int, default=64)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--child", nargs=4, metavar=("LOGDIR", "SHARE_DIR", "GRID", "SAMPLES"))
    args = ap.parse_args(argv)
    if args.child:
        return child(args.child[0], args.child[1], int(args.child[2]), int(args.child[3]))
    counts = [int(w) for w in args.workers.split(",")]
    runs = []
    for rep in range(args.reps):
        for w in (counts if rep % 2 == 0 else counts[::-1]):
            r = run(w, args.grid, args.samples)
            runs.append(r)
            print("rep %d: %d worker(s): msrun %.1f s, rank 0 %.1f s (one evaluation %.0f ms)"
                  % (rep, w, r["wall_s"], r["rank0_s"], 1000 * r["rank0_seconds_per_point"]), flush=True)
    best = {w: min(r["rank0_s"] for r in runs if r["workers"] == w) for w in counts}
    print()
    print("| workers (one core each) | %d x %d grid, rank 0 time (s), each run | speed-up (best vs best) |"
          % (args.grid, args.grid))
    print("| --- | --- | --- |")
    for w in counts:
        print("| %d | %s | %.2fx |" % (w, ", ".join("%.1f" % r["rank0_s"] for r in runs if r["workers"] == w),
                                      best[counts[0]] / best[w]))
    print(json.dumps({"bench": "landscape_dist", "grid": args.grid, "samples": args.samples, "runs": runs,
                      "speedup": {str(w): best[counts[0]] / best[w] for w in counts}}))


if __name__ == "__main__":
    main()
