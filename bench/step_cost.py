"""Benchmark: where monitoring's fixed cost per step goes, step by step and thread by thread, in CPU time.

    python bench/step_cost.py [--size 0.1m] [--mode graph|pynative] [--entry loop|model] [--steps 400]
                              [--block 20] [--tier core_diag] [--profile 25] [--calls 200]

One model (``bench/cost_models.py``: ``demo``, ``demo-b8``, ``demo-b4``, ``0.1m``, ``1m``, ``4m``, ``10m``), one network and
optimizer for both sides: blocks of ``--block`` steps without monitoring alternate with blocks of the same steps
with it (the README's loop with ``LoopMonitor``, or ``Model.train`` with ``MonitoredTrainCell`` + ``TrainMonitor``),
``--steps`` steps a side, after one untimed block each (everything compiled). ``--tier``: ``core_diag`` is the
monitors' defaults (core every 10 steps, live health, flight recorder, per-rank statistics; weight norms every 100
steps in the loop, at epoch ends in ``Model.train``: every block here, as each block is one ``train`` call);
``core_diag_debug`` adds ``debug="all"`` every 100 steps.

Measured in CPU time, which other processes' load does not inflate (it only slows the wall clock):

* per thread, from the kernel's per-thread CPU clocks (``clock_gettime`` of every thread of this process, Linux),
  summed by thread name over each side's blocks: the difference per name says which thread pays (the Python
  training thread, the event writer, MindSpore's actor and kernel threads, ...);
* on the training thread, call by call (``time.thread_time``): the monitor's own calls per step (``begin_step`` +
  ``step`` in the loop, ``TrainMonitor``'s hooks in ``Model.train``), split into ordinary steps and point steps
  (a core, diagnostic or debug point falls there), and in the loop the optimizer call (``optimizer(grads)`` bare,
  ``mon.update(grads)`` monitored: the optimizer and the gradient statistics as one compiled call in GRAPH_MODE);
* ``--calls N`` (the loop in GRAPH_MODE): after the blocks, the update call alone, call by call with the gradients
  computed and read first, so that its time is its own and not the gradients' it waits for: the optimizer alone,
  the gradient statistics alone (:class:`LoopStats`, a call of their own) and both in one call (what
  ``mon.update`` runs), in turn, N calls each after 20; medians of the wall and training-thread CPU time per call;
* ``--profile N``: Python's profiler (in training-thread CPU time) over the monitored blocks, the N functions with
  the most own time.

The fixed cost per step is the monitored side's CPU per step minus the bare side's (all threads). Prints a table,
then, as the last line, one JSON object. Do not edit the package's sources while this runs (MindSpore reads a
cell's source when it compiles it).
"""

import argparse
import collections
import cProfile
import io
import json
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import cost_models  # noqa: E402


def thread_clocks():
    """``{thread id: (name, CPU seconds)}`` for every thread of this process (the kernel's per-thread CPU clock:
    clock id ``(~tid << 3) | 6``, nanosecond resolution; Linux only)."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    found = {}
    for entry in os.listdir("/proc/self/task"):
        tid = int(entry)
        try:
            seconds = time.clock_gettime((~tid << 3) | 6)
        except OSError:
            continue                      # the thread ended meanwhile
        name = names.get(tid)
        if name is None:
            try:
                with open("/proc/self/task/%d/comm" % tid) as f:
                    name = f.read().strip()
            except OSError:
                continue
        found[tid] = (name, seconds)
    return found


def used_by_name(before, after):
    """CPU seconds used between two :func:`thread_clocks` snapshots, summed by thread name."""
    used = collections.Counter()
    for tid, (name, seconds) in after.items():
        used[name] += seconds - before.get(tid, (name, 0.0))[1]
    return used


def monitor_settings(tier, entry):
    """The monitor's keyword arguments: its defaults (``core_diag``), plus ``debug="all"`` (``core_diag_debug``);
    no ``experiments.md`` registry line; the probes' blocks compiled at their first pass (``steady_state``)."""
    from tb_mindspore_callbacks import Debug, Storage

    cost_models.steady_state()
    if tier not in ("core_diag", "core_diag_debug"):
        raise SystemExit("unknown tier %r (core_diag, core_diag_debug)" % tier)
    kwargs = {"storage": Storage(registry=None)}
    if tier == "core_diag_debug":
        kwargs["debug"] = Debug(items="all", every=100)
    return kwargs


class CallClock:
    """Training-thread CPU time of wrapped calls, per step."""

    def __init__(self):
        self.per_step = collections.defaultdict(float)
        self.step = 0
        self.on = False

    def wrap(self, fn):
        def timed(*args, **kwargs):
            if not self.on:
                return fn(*args, **kwargs)
            started = time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.per_step[self.step] += time.thread_time() - started
        return timed


class LoopSides:
    """The README's loop, bare and with ``LoopMonitor`` (one network, optimizer and ``grad_fn``)."""

    def __init__(self, size, tier, out):
        import mindspore as ms

        from tb_mindspore_callbacks import LoopMonitor

        self.net, loss_fn, self.optimizer = cost_models.parts(size)
        net = self.net

        def forward(x, y):
            return loss_fn(net(x), y)

        self.grad_fn = ms.value_and_grad(forward, None, self.optimizer.parameters)
        self.batches = cost_models.batches(size)
        self.mon = LoopMonitor(os.path.join(out, "loop"), self.optimizer, network=net,
                               **monitor_settings(tier, "loop"))
        self.hooks, self.update = CallClock(), CallClock()
        self.begin_step = self.hooks.wrap(self.mon.begin_step)
        self.step = self.hooks.wrap(self.mon.step)
        self.mon_update = self.update.wrap(self.mon.update)
        self.optimize = self.update.wrap(self.optimizer)
        self.cursor = 0

    def _batch(self):
        self.cursor = (self.cursor + 1) % len(self.batches)
        return self.batches[self.cursor]

    def run(self, side, n):
        grad_fn = self.grad_fn
        loss = None
        if side == "bare":
            for _ in range(n):
                self.update.step += 1
                x, y = self._batch()
                loss, grads = grad_fn(x, y)
                self.optimize(grads)
        else:
            for _ in range(n):
                self.hooks.step = self.update.step = self.mon.step_num + 1
                x, y = self._batch()
                self.begin_step()
                loss, grads = grad_fn(x, y)
                self.mon_update(grads)
                self.step(loss, grads, inputs=(x,))
        loss.asnumpy()

    def points(self):
        return self.mon.settings

    def close(self):
        errors = self.mon.monitor.errors
        self.mon.close()
        return errors


class ModelSides:
    """``Model(net, loss_fn, optimizer).train`` against ``Model(MonitoredTrainCell.wrap(...)).train`` with one
    ``TrainMonitor`` kept across its calls. A block is one ``train`` call of ``n + 1`` steps, timed from the end of
    its first step (which also starts the dataset iterator) to the end of its last."""

    HOOKS = ("on_train_step_begin", "on_train_step_end", "on_train_epoch_begin", "on_train_epoch_end")

    def __init__(self, size, tier, out):
        from mindspore.train import Callback, Model

        from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

        net, loss_fn, optimizer = cost_models.parts(size)
        self.size = size
        self.models = {"bare": Model(net, loss_fn, optimizer),
                       "monitored": Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))}
        self.monitor = TrainMonitor(os.path.join(out, "model"), **monitor_settings(tier, "model"))
        self.hooks, self.update = CallClock(), CallClock()
        for name in self.HOOKS:
            setattr(self.monitor, name, self.hooks.wrap(getattr(self.monitor, name)))
        sides = self

        class Marks(Callback):
            """Placed last: marks the end of the block's first and last step (the block's timed span)."""

            def on_train_step_end(self, run_context):
                sides.marks.append(run_context.original_args().cur_step_num)
                if len(sides.marks) == 1 and sides.on_first is not None:
                    sides.on_first()
                # The monitor's own step numbers (each train call counts from 1): the next step's hooks.
                sides.hooks.step = (sides.steps_done, int(run_context.original_args().cur_step_num) + 1)

        self.marks_cb = Marks()
        self.marks, self.on_first, self.steps_done = [], None, 0

    def run(self, side, n, on_first=None):
        self.marks, self.on_first = [], on_first
        self.hooks.step = (self.steps_done, 1)
        callbacks = ([self.monitor] if side == "monitored" else []) + [self.marks_cb]
        self.models[side].train(1, cost_models.dataset(self.size, n + 1), callbacks=callbacks,
                                dataset_sink_mode=False)
        if side == "monitored":
            self.steps_done += n + 1

    def points(self):
        return self.monitor.settings

    def close(self):
        self.monitor.close()
        return self.monitor.errors


def _is_point(settings, step, entry):
    """Whether ``step`` (1-based, monitored steps; ``(call, step in the call)`` for ``Model.train``, whose calls
    count from 1) carries a core, debug or diagnostic point."""
    if isinstance(step, tuple):
        step = step[1]
    if step % settings.collect_freq == 0:
        return True
    if settings.debug and step % settings.debug_freq == 0:
        return True
    return settings.diagnostic_freq is not None and step % settings.diagnostic_freq == 0


def update_variants(source, optimizer):
    """``{variant: call(grads)}``: the loop's update call three ways, from a ``LoopMonitor``'s started source: the
    optimizer alone (the bare loop's call), the statistics alone, both in one graph (what ``mon.update`` runs)."""
    import mindspore as ms

    stats, both = source.cell, source._update
    return {"optimizer": lambda grads: optimizer(grads),
            "statistics": lambda grads: stats(ms.mutable(tuple(grads))),
            "optimizer_and_statistics": lambda grads: both(ms.mutable(tuple(grads)))}


def update_calls(sides, n, warmup=20):
    """``{variant: {"wall_ms": median, "cpu_ms": median}}``: the loop's update call alone (see the module's
    docstring), ``n`` calls of each variant in turn after ``warmup``; after the monitor is closed (the statistics'
    ring rows written here are nobody's steps)."""
    source = sides.mon._source
    if source is None or not source.has_grads or not source._update:
        return None
    stats = source.cell
    variants = update_variants(source, sides.optimizer)
    times = {name: ([], []) for name in variants}
    for i in range(warmup + n):
        for name, call in variants.items():
            loss, grads = sides.grad_fn(*sides._batch())
            loss.asnumpy()
            grads[-1].asnumpy()
            cpu, wall = time.thread_time(), time.perf_counter()
            call(grads)
            stats.tbms_flight_count.asnumpy()          # the call's end (each variant writes or waits for the ring)
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            if i >= warmup:
                times[name][0].append(wall * 1000)
                times[name][1].append(cpu * 1000)
    return {name: {"wall_ms": round(statistics.median(w), 4), "cpu_ms": round(statistics.median(c), 4)}
            for name, (w, c) in times.items()}


def measure(size, mode, entry, tier, steps, block, profile=0, calls=0):
    """Alternating bare and monitored blocks; returns the result dict (see the module's docstring)."""
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    out = tempfile.mkdtemp(prefix="tbms_step_cost_")
    sides = (LoopSides if entry == "loop" else ModelSides)(size, tier, out)
    profiler = cProfile.Profile(time.thread_time) if profile else None
    totals = {s: {"wall": 0.0, "threads": collections.Counter(), "steps": 0} for s in ("bare", "monitored")}
    try:
        # Past the first core, diagnostic and debug points (step 100): everything the monitor compiles is compiled.
        sides.run("monitored", 101)
        sides.run("bare", block)
        sides.hooks.per_step.clear()
        sides.update.per_step.clear()
        rounds = max(1, steps // block)
        for r in range(rounds):
            for side in (("bare", "monitored") if r % 2 == 0 else ("monitored", "bare")):
                snap = {}

                def start():
                    snap["threads"], snap["wall"] = thread_clocks(), time.perf_counter()
                    sides.hooks.on = sides.update.on = True
                    if profiler is not None and side == "monitored":
                        profiler.enable()

                if entry == "loop":
                    sides.run(side, 1)                # a synchronised start (its loss read)
                    start()
                    sides.run(side, block)
                else:
                    sides.run(side, block, on_first=start)
                wall = time.perf_counter() - snap["wall"]
                threads = used_by_name(snap["threads"], thread_clocks())
                sides.hooks.on = sides.update.on = False
                if profiler is not None:
                    profiler.disable()
                t = totals[side]
                t["wall"] += wall
                t["threads"].update(threads)
                t["steps"] += block
    finally:
        errors = sides.close()
    try:
        calls_ms = update_calls(sides, calls) if calls and entry == "loop" and mode == "graph" else None
    finally:
        shutil.rmtree(out, ignore_errors=True)

    settings = sides.points()
    result = {"size": size, "mode": mode, "entry": entry, "tier": tier, "block": block, "errors": errors,
              "steps_per_side": totals["bare"]["steps"], "sides": {}}
    for side, t in totals.items():
        n = t["steps"]
        threads = {name: round(sec * 1000 / n, 4) for name, sec in t["threads"].most_common() if sec > 0}
        result["sides"][side] = {"wall_ms_per_step": round(t["wall"] * 1000 / n, 4),
                                 "cpu_ms_per_step": round(sum(t["threads"].values()) * 1000 / n, 4),
                                 "threads_cpu_ms_per_step": threads}
    bare, mon = result["sides"]["bare"], result["sides"]["monitored"]
    result["fixed_cpu_ms_per_step"] = round(mon["cpu_ms_per_step"] - bare["cpu_ms_per_step"], 4)
    result["fixed_wall_ms_per_step"] = round(mon["wall_ms_per_step"] - bare["wall_ms_per_step"], 4)
    names = set(bare["threads_cpu_ms_per_step"]) | set(mon["threads_cpu_ms_per_step"])
    result["threads_extra_cpu_ms_per_step"] = dict(sorted(
        ((name, round(mon["threads_cpu_ms_per_step"].get(name, 0.0) - bare["threads_cpu_ms_per_step"].get(name, 0.0),
                      4)) for name in names), key=lambda kv: -abs(kv[1])))
    hooks = sides.hooks.per_step
    ordinary = [v for s, v in hooks.items() if not _is_point(settings, s, entry)]
    points = [v for s, v in hooks.items() if _is_point(settings, s, entry)]
    result["hooks_cpu_ms"] = {
        "per_step_mean": round(sum(hooks.values()) * 1000 / max(1, totals["monitored"]["steps"]), 4),
        "ordinary_step_median": round(statistics.median(ordinary) * 1000, 4) if ordinary else None,
        "point_step_mean": round(statistics.mean(points) * 1000, 4) if points else None,
        "points": len(points)}
    if entry == "loop":
        upd = sides.update.per_step
        mon_steps = [v for s, v in upd.items() if s in hooks]
        bare_steps = [v for s, v in upd.items() if s not in hooks]
        result["update_cpu_ms"] = {"bare_optimizer_median": round(statistics.median(bare_steps) * 1000, 4)
                                   if bare_steps else None,
                                   "monitored_update_median": round(statistics.median(mon_steps) * 1000, 4)
                                   if mon_steps else None}
    if calls_ms is not None:
        result["update_call_ms"] = calls_ms
    if profiler is not None:
        text = io.StringIO()
        stats = pstats.Stats(profiler, stream=text)
        stats.sort_stats("tottime").print_stats(profile)
        # The monitor's own functions by time spent in them and below (their share of the point steps above all).
        stats.sort_stats("cumulative").print_stats(r"callbacks|tb_mindspore|tb_plugin", profile)
        result["profile"] = text.getvalue()
    return result


def print_result(r):
    print("%s %s %s %s: %d steps a side, blocks of %d, load average %s" % (
        r["size"], r["mode"], r["entry"], r["tier"], r["steps_per_side"], r["block"],
        " ".join("%.1f" % v for v in os.getloadavg())))
    for side in ("bare", "monitored"):
        s = r["sides"][side]
        print("  %-10s wall %9.3f ms/step   CPU %9.3f ms/step" % (side, s["wall_ms_per_step"], s["cpu_ms_per_step"]))
    print("  fixed cost: CPU %+.3f ms/step (wall %+.3f)" % (r["fixed_cpu_ms_per_step"], r["fixed_wall_ms_per_step"]))
    print("  extra CPU by thread (ms/step):")
    for name, v in list(r["threads_extra_cpu_ms_per_step"].items())[:10]:
        print("    %-32s %+8.3f" % (name, v))
    h = r["hooks_cpu_ms"]
    print("  monitor calls on the training thread: %.3f ms/step (ordinary step median %s, point step mean %s, "
          "%d points)" % (h["per_step_mean"], h["ordinary_step_median"], h["point_step_mean"], h["points"]))
    if "update_cpu_ms" in r:
        u = r["update_cpu_ms"]
        print("  optimizer call: bare %s ms, mon.update %s ms (medians)" % (u["bare_optimizer_median"],
                                                                          u["monitored_update_median"]))
    if "update_call_ms" in r:
        print("  the update call alone, gradients ready (medians per call):")
        for name, v in r["update_call_ms"].items():
            print("    %-26s wall %7.3f ms   training-thread CPU %7.3f ms" % (name, v["wall_ms"], v["cpu_ms"]))
    if "profile" in r:
        print(r["profile"])


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", default="0.1m", help="model: %s (default 0.1m)" % ", ".join(cost_models.SIZES))
    parser.add_argument("--mode", default="graph", choices=("graph", "pynative"))
    parser.add_argument("--entry", default="loop", choices=("loop", "model"))
    parser.add_argument("--tier", default="core_diag", help="core_diag (the defaults) or core_diag_debug")
    parser.add_argument("--steps", type=int, default=400, help="timed steps per side (default 400)")
    parser.add_argument("--block", type=int, default=20, help="steps per block (default 20)")
    parser.add_argument("--profile", type=int, default=0, help="print the N functions with the most own time")
    parser.add_argument("--calls", type=int, default=0, help="the loop's update call alone, N calls per variant "
                                                               "(GRAPH_MODE)")
    args = parser.parse_args(argv)
    cost_models.check_size(args.size)
    r = measure(args.size, args.mode, args.entry, args.tier, args.steps, args.block, args.profile, args.calls)
    print_result(r)
    r.pop("profile", None)
    print(json.dumps(r, sort_keys=True))


if __name__ == "__main__":
    main()
