"""Benchmark: the hand-written loop's compiled graphs timed by MindSpore's own runtime, one execution at a time.

    python bench/graph_time.py [--size demo-b8] [--calls 200] [--warmup 40]

Whole-step timings of the loop (``bench/paired.py``, ``bench/step_cost.py``) carry the noise of MindSpore's actor
and kernel threads, which spin while they wait: on two cores their CPU time moves by +-2 ms a step from one block to
the next, more than the statistics cost. MindSpore's graph scheduler logs the time of every execution of every
compiled graph (at INFO level: ``kernel_graph_N execution count: K, execution time: T ms``), and on CPU the loop's
update graphs run on the calling thread, so that log times them alone, without the rest of the step.

In GRAPH_MODE, on a cost model (``bench/cost_models.py``), with a ``LoopMonitor`` of the defaults (its first steps
build the update call it runs, flight recorder layers included, then it is closed), ``--calls`` executions of each
of, in turn after ``--warmup``:

* ``grad``: the loop's ``grad_fn`` (forward and backward; the graph the loop runs anyway);
* ``optimizer``: ``optimizer(grads)``, what the bare loop runs;
* ``update``: what ``mon.update(grads)`` runs: the optimizer and the step's gradient statistics in one graph;
* ``statistics``: the statistics alone (their own call: PYNATIVE_MODE, or a loop calling ``optimizer(grads)``).

The run happens in a child process (MindSpore reads its log level at import); the parent maps each graph to its name
by the order of their first executions and prints a table (median, quartiles, the share run on the actor threads
rather than the calling thread), then, as the last line, one JSON object with ``added_ms``: the update graph's median
minus the optimizer's (what the statistics add to the call the loop makes anyway).
"""

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

GRAPHS = ("grad", "optimizer", "update", "statistics")
_CHILD = "_TBMS_GRAPH_TIME_CHILD"
_MARK = "tbms-graph-time: "
_EXECUTION = re.compile(r"(kernel_graph_\d+) execution count: (\d+), execution time: ([\d.]+) ms in multi thread "
                        r"or not: (\d)")


def _child(size, calls, warmup):
    """Runs the graphs, writing a mark to stderr before each one's first execution."""
    import mindspore as ms

    import cost_models
    from step_cost import update_variants
    from tb_mindspore_callbacks import LoopMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    cost_models.steady_state()
    net, loss_fn, optimizer = cost_models.parts(size)

    def forward(x, y):
        return loss_fn(net(x), y)

    def mark(name):
        sys.stderr.write("\n%s%s\n" % (_MARK, name))
        sys.stderr.flush()

    grad_fn = ms.value_and_grad(forward, None, optimizer.parameters)
    batches = cost_models.batches(size)
    # MindSpore logs an execution when it ends: each graph's first call is waited for before the next mark.
    mark("grad")
    loss, grads = grad_fn(*batches[0])
    loss.asnumpy()
    with tempfile.TemporaryDirectory(prefix="tbms_graph_time_") as out:
        mon = LoopMonitor(os.path.join(out, "loop"), optimizer, network=net)
        mark("update")
        mon.update(grads)
        mon.step(loss, grads)
        source = mon._source
        if source is None or not source._update:
            raise SystemExit("the monitor did not build its update call (errors: %d)" % mon.monitor.errors)
        stats = source.cell
        stats.tbms_flight_count.asnumpy()
        mark("the monitor's other graphs")
        for i in range(12):
            loss, grads = grad_fn(*batches[i % len(batches)])
            mon.update(grads)
            mon.step(loss, grads)
        mon.close()
        variants = update_variants(source, optimizer)
        calls_of = {"optimizer": variants["optimizer"], "update": variants["optimizer_and_statistics"],
                    "statistics": variants["statistics"]}
        for name in ("optimizer", "update", "statistics"):
            mark(name)
            calls_of[name](grads)
            stats.tbms_flight_count.asnumpy()
            optimizer.parameters[0].asnumpy()
            mark("timed " + name)
            for i in range(warmup + calls):
                loss, grads = grad_fn(*batches[i % len(batches)])
                calls_of[name](grads)
            stats.tbms_flight_count.asnumpy()
    loss.asnumpy()
    mark("end")


def parse(lines, warmup):
    """``{graph name: [(execution ms, on the actor threads)]}`` from the child's log: each graph is the first new one
    executed after its mark (graphs first executed later, the monitor's others, are left out), its executions
    after the first ``warmup`` kept."""
    names, current, taken = {}, None, set()
    times = {name: [] for name in GRAPHS}
    for line in lines:
        if line.startswith(_MARK):
            current = line[len(_MARK):].strip()
            continue
        m = _EXECUTION.search(line)
        if not m:
            continue
        graph, count, ms_, multi = m.group(1), int(m.group(2)), float(m.group(3)), m.group(4) == "1"
        if graph not in names:
            names[graph] = current if current in GRAPHS and current not in taken else None
            taken.add(names[graph])
        name = names[graph]
        if name is not None and count > warmup:
            times[name].append((ms_, multi))
    return times


def summary(times):
    rows = {}
    for name, runs in times.items():
        if not runs:
            continue
        values = [t for t, _ in runs]
        q = statistics.quantiles(values, n=4) if len(values) >= 2 else [values[0]] * 3
        rows[name] = {"executions": len(values), "median_ms": round(statistics.median(values), 4),
                      "q25_ms": round(q[0], 4), "q75_ms": round(q[2], 4),
                      "actor_threads_share": round(sum(1 for _, multi in runs if multi) / len(runs), 3)}
    return rows


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="demo-b8", help="the model (bench/cost_models.py; default demo-b8)")
    parser.add_argument("--calls", type=int, default=200, help="timed executions of each graph (default 200)")
    parser.add_argument("--warmup", type=int, default=40, help="executions left out first (default 40: MindSpore "
                        "picks each graph's threads from its executions 31-50)")
    args = parser.parse_args(argv)
    import cost_models

    cost_models.check_size(args.size)
    if args.calls < 1 or args.warmup < 0:
        raise SystemExit("--calls must be at least 1 and --warmup at least 0")
    if os.environ.get(_CHILD):
        _child(args.size, args.calls, args.warmup)
        return
    env = dict(os.environ, GLOG_v="1", GLOG_logtostderr="1", **{_CHILD: "1"})
    with tempfile.TemporaryFile(mode="w+") as log:
        proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--size", args.size, "--calls",
                               str(args.calls), "--warmup", str(args.warmup)], env=env, stdout=subprocess.DEVNULL,
                              stderr=log, text=True)
        log.seek(0)
        lines = log.read().splitlines()
    if proc.returncode != 0:
        sys.stderr.write("\n".join(line for line in lines[-40:] if "[INFO]" not in line) + "\n")
        raise SystemExit("the timed child failed (exit %d)" % proc.returncode)
    rows = summary(parse(lines, args.warmup))
    missing = [name for name in GRAPHS if name not in rows]
    if missing:
        raise SystemExit("MindSpore's log named no execution of: %s (its INFO log format may have changed)"
                         % ", ".join(missing))
    added = round(rows["update"]["median_ms"] - rows["optimizer"]["median_ms"], 4)
    print("%-11s %10s %10s %10s %10s %14s" % ("graph", "executions", "median ms", "q25 ms", "q75 ms",
                                               "actor threads"))
    for name in GRAPHS:
        r = rows[name]
        print("%-11s %10d %10.3f %10.3f %10.3f %13.0f%%" % (name, r["executions"], r["median_ms"], r["q25_ms"],
                                                             r["q75_ms"], 100 * r["actor_threads_share"]))
    print("the statistics add %+.3f ms to the update call (update - optimizer medians)" % added)
    import mindspore as ms

    print(json.dumps({"size": args.size, "mode": "graph", "entry": "loop", "graphs": rows, "added_ms": added,
                      "cpu_count": os.cpu_count(), "mindspore_version": ms.__version__}, sort_keys=True))


if __name__ == "__main__":
    main()
