"""Benchmark: where monitoring's cost goes, thread by thread, in long ``Model.train`` calls (GRAPH_MODE).

    python bench/thread_cpu.py [--steps 150] [--rounds 3] [--tier core_diag]

``bench/paired.py`` restarts ``Model.train`` every block (a few steps), so what happens once per call weighs
more there than in a real run. Here each side trains ``--steps`` steps in one ``Model.train`` call (the demo
transformer, one network and optimizer shared): ``Model(net, loss_fn, optimizer)`` against
``Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))`` with one ``TrainMonitor`` of the tier, alternating
for ``--rounds`` rounds after one untimed call each. Every thread's CPU time is read from ``/proc/self/task``
before and after each call (Linux only) and summed by thread name (Python's name where the thread is Python's,
else the kernel's ``comm``: MindSpore's actor and kernel threads).

Prints wall and CPU milliseconds per step per side, the threads that used CPU, then one JSON object.

Do not edit the package's source files while this runs: MindSpore reads a cell's source when it compiles it.
"""

import argparse
import collections
import json
import os
import shutil
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)


def thread_cpu():
    """``{thread id: (name, CPU seconds)}`` for every thread of this process."""
    tick = os.sysconf("SC_CLK_TCK")
    python_names = {t.native_id: t.name for t in threading.enumerate()}
    found = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open("/proc/self/task/%s/stat" % tid) as f:
                stat = f.read()
            with open("/proc/self/task/%s/comm" % tid) as f:
                comm = f.read().strip()
        except OSError:
            continue                      # the thread ended meanwhile
        fields = stat[stat.rindex(")") + 2:].split()
        utime, stime = int(fields[11]), int(fields[12])
        found[int(tid)] = (python_names.get(int(tid), comm), (utime + stime) / tick)
    return found


def cpu_by_name(before, after):
    """CPU seconds used between two :func:`thread_cpu` snapshots, summed by thread name."""
    used = collections.Counter()
    for tid, (name, seconds) in after.items():
        used[name] += seconds - before.get(tid, (name, 0.0))[1]
    return used


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=150, help="steps per Model.train call (default 150)")
    parser.add_argument("--rounds", type=int, default=3, help="timed calls per side (default 3)")
    parser.add_argument("--tier", default="core_diag", help="a tier of bench/overhead.py (default core_diag)")
    args = parser.parse_args(argv)

    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore.train import Model

    from cost_models import steady_state
    from overhead import _monitor_kwargs, _parts
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor
    from tb_mindspore_callbacks.demo import synthetic_arrays

    ms.set_context(mode=ms.GRAPH_MODE)
    net, loss_fn, optimizer = _parts(None)
    out = tempfile.mkdtemp(prefix="tbms_thread_cpu_")
    steady_state()
    monitor = TrainMonitor(os.path.join(out, "run"), **_monitor_kwargs(args.tier, False, 100))
    sides = {"bare": (Model(net, loss_fn, optimizer), []),
             "monitored": (Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer)), [monitor])}
    tokens, labels = synthetic_arrays(args.steps * 32)

    def call(side):
        model, callbacks = sides[side]
        data = ds.NumpySlicesDataset({"tokens": tokens, "label": labels}, shuffle=False).batch(32, drop_remainder=True)
        before, wall = thread_cpu(), time.perf_counter()
        model.train(1, data, callbacks=callbacks, dataset_sink_mode=False)
        return time.perf_counter() - wall, cpu_by_name(before, thread_cpu())

    totals = {side: [0.0, collections.Counter()] for side in sides}
    try:
        for side in sides:
            call(side)                    # compiles
        for r in range(args.rounds):
            for side in (("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")):
                wall, used = call(side)
                totals[side][0] += wall
                totals[side][1].update(used)
    finally:
        monitor.close()
        shutil.rmtree(out, ignore_errors=True)

    steps = args.steps * args.rounds
    result = {"tier": args.tier, "steps_per_call": args.steps, "rounds": args.rounds, "sides": {}}
    for side, (wall, used) in totals.items():
        threads = {name: round(seconds * 1000 / steps, 3) for name, seconds in used.most_common() if seconds > 0}
        result["sides"][side] = {"wall_ms_per_step": round(wall * 1000 / steps, 2),
                                 "cpu_ms_per_step": round(sum(used.values()) * 1000 / steps, 2),
                                 "threads_cpu_ms_per_step": threads}
        print("%-10s wall %8.2f ms/step   CPU %8.2f ms/step" % (side, wall * 1000 / steps,
                                                                 sum(used.values()) * 1000 / steps))
        for name, ms_per_step in threads.items():
            print("    %-32s %8.2f ms/step" % (name, ms_per_step))
    bare, mon = result["sides"]["bare"], result["sides"]["monitored"]
    result["wall_ratio"] = round(mon["wall_ms_per_step"] / bare["wall_ms_per_step"], 4)
    result["cpu_ratio"] = round(mon["cpu_ms_per_step"] / bare["cpu_ms_per_step"], 4)
    print("wall ratio %.4f   CPU ratio %.4f" % (result["wall_ratio"], result["cpu_ratio"]))
    print(json.dumps(result, sort_keys=True))


if __name__ == "__main__":
    main()
