"""Benchmark: ``tb-mindspore check`` on one run of many small event files (a run that rotates often or restarted
many times), at several sizes, to show that the check is linear in the number of files.

    python bench/check_many_files.py [--files 1000,10000,50000] [--records 3] [--reps 1] [--path DIR]
                                     [--tensorboard-max 2000]

Each size is one run folder of ``--files`` event files, each holding a file-version record and ``--records`` scalar
records (``loss``; steps continue from file to file), made once under ``--path``. Per size, ``--reps`` rounds of
``tb-mindspore check LOGDIR --format json`` in a fresh process (imports included): wall time, CPU time of the
process (user + system), and CPU microseconds per file. Sizes up to ``--tensorboard-max`` files are also loaded by
TensorBoard's own Python loader (``EventMultiplexer``, what ``check`` used before), for comparison.
Target: 10,000 files in <= 10 s; linear: the CPU per added file (between consecutive sizes) flat.

Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
CLI = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")


def make_run(folder, files, records):
    """``files`` event files of ``records`` scalar records each (made once; a marker says it is complete)."""
    from tensorboard.compat.proto import event_pb2

    from tb_plugin_mindspore.io import records as framing

    marker = folder + ".done"
    if os.path.exists(marker):
        return
    os.makedirs(folder, exist_ok=True)
    step = 0
    for i in range(files):
        name = "events.out.tfevents.%010d.bench.%d.%d" % (1700000000 + i, 100, i)
        parts = [framing.frame(event_pb2.Event(wall_time=1700000000.0 + step,
                                               file_version="brain.Event:2").SerializeToString())]
        for _ in range(records):
            step += 1
            event = event_pb2.Event(wall_time=1700000000.0 + step, step=step)
            event.summary.value.add(tag="loss", simple_value=1.0 / step)
            parts.append(framing.frame(event.SerializeToString()))
        with open(os.path.join(folder, name), "wb") as f:
            f.write(b"".join(parts))
    open(marker, "w").close()


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_check(logdir):
    """``(wall s, cpu s, points)`` of one ``tb-mindspore check`` in a fresh process."""
    cpu0, t0 = _children_cpu(), time.perf_counter()
    proc = subprocess.run([CLI, "check", logdir, "--format", "json"], capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, _children_cpu() - cpu0
    if proc.returncode != 0:
        raise SystemExit("check failed: %s" % proc.stderr[-2000:])
    json.loads(proc.stdout)
    return wall, cpu


_TB_SCRIPT = """
import sys, time
t0 = time.perf_counter()
from tensorboard.backend.event_processing import plugin_event_multiplexer as pem
mux = pem.EventMultiplexer(size_guidance={"tensors": 0}, tensor_size_guidance={"scalars": 0})
mux.AddRunsFromDirectory(sys.argv[1]); mux.Reload()
assert mux.Tensors("run", "loss")
"""


def time_tensorboard(logdir):
    cpu0, t0 = _children_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-c", _TB_SCRIPT, logdir], check=True, capture_output=True)
    return time.perf_counter() - t0, _children_cpu() - cpu0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", default="1000,10000,50000")
    p.add_argument("--records", type=int, default=3)
    p.add_argument("--reps", type=int, default=1)
    p.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "tb-mindspore-bench-files"))
    p.add_argument("--tensorboard-max", type=int, default=2000)
    args = p.parse_args()
    sizes = [int(x) for x in args.files.split(",") if x]
    rows = []
    for n in sizes:
        logdir = os.path.join(args.path, "files_%d_%d" % (n, args.records))
        t0 = time.time()
        make_run(os.path.join(logdir, "run"), n, args.records)
        made = time.time() - t0
        for rep in range(args.reps):
            load = os.getloadavg()[0]
            wall, cpu = time_check(logdir)
            row = {"files": n, "rep": rep, "reader": "check", "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
                   "cpu_us_per_file": round(cpu / n * 1e6, 1), "load": round(load, 1)}
            if n <= args.tensorboard_max:
                tb_wall, tb_cpu = time_tensorboard(logdir)
                row.update(tensorboard_wall_s=round(tb_wall, 2), tensorboard_cpu_s=round(tb_cpu, 2))
            rows.append(row)
            print("%7d files  check %6.2f s wall %6.2f s CPU (%5.0f us CPU/file)%s  load %.1f%s" % (
                n, wall, cpu, cpu / n * 1e6,
                "  TensorBoard's loader %6.2f s wall %6.2f s CPU" % (row["tensorboard_wall_s"],
                                                                  row["tensorboard_cpu_s"])
                if "tensorboard_wall_s" in row else "", load,
                "  (logdir made in %.0f s)" % made if rep == 0 and made > 1 else ""), flush=True)
    # Linear means a constant cost per added file: CPU between consecutive sizes (medians), per added file (the
    # fixed cost, imports and the health rules, cancels out).
    cpu_of = {n: sorted(r["cpu_s"] for r in rows if r["files"] == n)[(args.reps - 1) // 2] for n in sizes}
    marginal = [{"from": a, "to": b, "cpu_us_per_added_file": round((cpu_of[b] - cpu_of[a]) / (b - a) * 1e6, 1)}
                for a, b in zip(sizes, sizes[1:])]
    for m in marginal:
        print("%7d -> %d files: %.0f us CPU per added file" % (m["from"], m["to"], m["cpu_us_per_added_file"]))
    costs = [m["cpu_us_per_added_file"] for m in marginal]
    print(json.dumps({"bench": "check_many_files", "records_per_file": args.records, "rows": rows,
                      "marginal": marginal,
                      "marginal_max_over_min": round(max(costs) / min(costs), 2) if costs and min(costs) > 0
                      else None}))


if __name__ == "__main__":
    main()
