"""Benchmark: how much slower does monitoring make training?

    python bench/overhead.py [--steps 200] [--reps 5] [--warmup 10] [--out DIR]

Trains the demo's 2-layer transformer classifier (``nn.TransformerEncoderLayer``, hidden 128, seq 64, batch 32,
GRAPH_MODE, AdamWeightDecay, non-sink) under these configurations, alternating them (the order rotates each
repetition) in one process:

* ``none``: ``Model(net, loss_fn, optimizer)``, no callback (the reference);
* ``cell_only``: ``Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))``, no callback: what the in-graph
  statistics cost (or save: see BENCHMARKS.md) on their own;
* ``core_diag``: ``MonitoredTrainCell`` + ``TrainMonitor(collect_freq=10, diagnostic_freq=10)`` (core tier and
  per-layer weight norms every 10 steps; no evaluation: that is extra work the user asks for, not overhead);
* ``core_diag_debug``: the same plus ``debug="all"`` (update ratio, per-layer gradient norms, activation
  histograms, data wait) with ``debug_freq=100``;
* ``summary_collector``: MindSpore's ``SummaryCollector(collect_freq=10)`` with
  ``collect_specified_data={"histogram_regular": ".*weight.*"}`` (the configuration the seed article recommends);
* ``loss_monitor``: MindSpore's ``LossMonitor(1)`` (its printing goes to /dev/null).

Each repetition builds every configuration's model anew and compiles it (and the monitors' own small graphs) in a
short warm-up run (two identical models differ in speed by a few percent on a virtual machine, a bias that would
never average out with one model per configuration), then trains each for ``--warmup`` + ``--steps`` steps, in a
new random order (seeded), SummaryCollector last and its writer processes waited for; a new callback object each
time, as a user would. The step time of a run is the wall time of its last ``--steps`` steps divided by
``--steps``, all monitoring work included. The ratio of a configuration is its step time over the ``none`` step
time of the same repetition; the reported figure is the median over repetitions. Also reported: ``min_ratio``
(ratio of the fastest runs), ``cpu_ratio`` (the same with this process's CPU time, which leaves out
SummaryCollector's writer processes), ``vs_cell_only`` (the monitored configurations over ``cell_only``: the
callback's cost alone) and ``hook_share`` (share of the timed wall time spent inside ``TrainMonitor``'s step hooks
on the training thread).

Do not edit the package's source files while this runs: MindSpore reads a cell's source when it compiles it.

Prints a table, then, as the last line, one JSON object with the keys ``core_diag``, ``core_diag_debug``,
``summary_collector``, ``loss_monitor`` (median ratios) and the details.
"""

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CONFIGS = ("none", "cell_only", "core_diag", "core_diag_debug", "summary_collector", "loss_monitor")
# Not run by default: core + diagnostic + one debug item each, to see what each item costs.
EXTRA_CONFIGS = ("debug_update_ratio", "debug_layer_grad_norm", "debug_activations", "debug_data_wait")


def _build(config):
    from mindspore import nn
    from mindspore.train import Model

    from tb_mindspore_callbacks import MonitoredTrainCell
    from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model

    net = build_model(seed=0)
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=DEMO_CONFIG["lr"], weight_decay=0.01)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    if config.startswith(("core", "debug_")) or config == "cell_only":
        return Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
    return Model(net, loss_fn, optimizer)


def _callbacks(config, out_dir, rep, warm=False):
    from mindspore.train import LossMonitor, SummaryCollector

    from tb_mindspore_callbacks import TrainMonitor

    run_dir = os.path.join(out_dir, "%s_%d" % (config, rep))
    # The warm-up run compiles everything once (the monitors' own small graphs too: every point is due each step).
    freq = 1 if warm else 10
    if config == "core_diag":
        return [TrainMonitor(run_dir, collect_freq=freq, diagnostic_freq=freq, registry=None)]
    if config == "core_diag_debug" or config.startswith("debug_"):
        # debug_<item>: core + diagnostic + that one debug item (to see what each costs).
        items = "all" if config == "core_diag_debug" else [config[len("debug_"):]]
        return [TrainMonitor(run_dir, collect_freq=freq, diagnostic_freq=freq, debug=items,
                             debug_freq=1 if warm else 100, registry=None)]
    if config == "summary_collector":
        return [SummaryCollector(run_dir, collect_freq=10,
                                 collect_specified_data={"histogram_regular": ".*weight.*"})]
    if config == "loss_monitor":
        return [LossMonitor(1)]
    return []


class _Clock:
    """Wall time of the steps after the warm-up (placed last, so it sees every other callback's work)."""

    def __init__(self, warmup):
        from mindspore.train import Callback

        clock = self

        class _Cb(Callback):
            def on_train_step_end(self, run_context):
                step = run_context.original_args().cur_step_num
                if step == warmup:
                    clock.start = time.perf_counter()
                    clock.cpu_start = time.process_time()
                clock.end = time.perf_counter()
                clock.cpu_end = time.process_time()
                clock.last = step

        self.callback = _Cb()
        self.start = self.end = self.cpu_start = self.cpu_end = None
        self.last = 0


class _HookTimer:
    """Wall time spent inside a callback's step hooks on the training thread, for the steps after the warm-up."""

    HOOKS = ("on_train_step_begin", "on_train_step_end", "on_train_epoch_begin", "on_train_epoch_end")

    def __init__(self, callback, warmup):
        self.seconds = 0.0

        def timed(fn):
            def hook(run_context):
                started = time.perf_counter()
                try:
                    return fn(run_context)
                finally:
                    if run_context.original_args().cur_step_num > warmup:
                        self.seconds += time.perf_counter() - started
            return hook

        for name in self.HOOKS:
            setattr(callback, name, timed(getattr(callback, name)))


def _wait_for_children(limit=60.0):
    """Waits (up to ``limit`` s) until this process's child processes (SummaryCollector's writers) have exited, so
    their work does not land in the next configuration's timing."""
    import psutil

    deadline = time.monotonic() + limit
    while psutil.Process().children(recursive=True) and time.monotonic() < deadline:
        time.sleep(0.2)


class _Watchdog:
    """Unblocks a run whose child processes deadlock (MindSpore's SummaryCollector forks a writer pool from a
    multi-threaded process; now and then a pool worker hangs on a lock and ``Model.train`` waits forever at the
    end). After ``limit`` seconds the children of this process are killed, which lets the run return."""

    def __init__(self, limit):
        import threading

        self.limit = limit
        self.fired = False
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self):
        if self._done.wait(self.limit):
            return
        import psutil

        self.fired = True
        for child in psutil.Process().children(recursive=True):
            try:
                child.kill()
            except psutil.Error:
                pass

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._done.set()
        self._thread.join()


@contextlib.contextmanager
def _quiet_stdout(enabled):
    if not enabled:
        yield
        return
    sys.stdout.flush()
    saved = os.dup(1)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 1)
        old = sys.stdout
        sys.stdout = null
        try:
            yield
        finally:
            sys.stdout = old
            os.dup2(saved, 1)
            os.close(saved)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200, help="timed steps per run (default 200)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of every configuration (default 5)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps at the start of each run")
    parser.add_argument("--out", default=None, help="folder for the runs' event files (default: a temp dir)")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated subset (none is added); also %s" % ", ".join(EXTRA_CONFIGS))
    args = parser.parse_args(argv)
    configs = [c for c in args.configs.split(",") if c]
    unknown = [c for c in configs if c not in CONFIGS and c not in EXTRA_CONFIGS]
    if unknown:
        parser.error("unknown configuration(s): %s" % ", ".join(unknown))
    if "none" not in configs:
        configs.insert(0, "none")

    import mindspore as ms

    from tb_mindspore_callbacks.demo import DEMO_CONFIG, synthetic_arrays

    ms.set_context(mode=ms.GRAPH_MODE)
    out_dir = args.out or tempfile.mkdtemp(prefix="tbms_overhead_")
    steps_per_run = args.warmup + args.steps
    tokens, labels = synthetic_arrays(steps_per_run * DEMO_CONFIG["batch"], seed=0)

    def dataset():
        import mindspore.dataset as ds

        return ds.NumpySlicesDataset({"tokens": tokens, "label": labels}, shuffle=False).batch(
            DEMO_CONFIG["batch"], drop_remainder=True)

    def build(config, rep):
        """A new model for ``config``, compiled by a short run (the callbacks' own small graphs too)."""
        model = _build(config)
        with _quiet_stdout(config == "loss_monitor"), _Watchdog(120.0):
            model.train(1, dataset().take(3), callbacks=_callbacks(config, out_dir, -1 - rep, warm=True),
                        dataset_sink_mode=False)
        if config == "summary_collector":
            _wait_for_children()
        return model

    times = {c: [] for c in configs}
    cpu = {c: [] for c in configs}
    hook_share = {c: [] for c in configs}
    hangs = {c: 0 for c in configs}
    shuffler = random.Random(0)
    for rep in range(args.reps):
        # A new random order each repetition (no configuration always follows the same one); SummaryCollector
        # last, and its writer processes waited for, so their work never lands in another configuration's time.
        order = [c for c in configs if c != "summary_collector"]
        shuffler.shuffle(order)
        order += [c for c in configs if c == "summary_collector"]
        # Every repetition builds and compiles its models anew: two identical models differ in speed by a few
        # percent on this kind of machine (memory placement), a bias that would never average out otherwise.
        started = time.perf_counter()
        models = {config: build(config, rep) for config in order}
        print("  rep %d  built and compiled %d models in %.1f s" % (rep + 1, len(order), time.perf_counter() - started),
              flush=True)
        for config in order:
            clock = _Clock(args.warmup)
            # SummaryCollector runs take about 2.5x the reference: 8x means it hangs.
            limit = max(90.0, 8.0 * steps_per_run * statistics.median(times["none"]) / 1000.0) \
                if times["none"] else 600.0
            callbacks = _callbacks(config, out_dir, rep)
            timers = [_HookTimer(cb, args.warmup) for cb in callbacks if type(cb).__name__ == "TrainMonitor"]
            with _quiet_stdout(config == "loss_monitor"), _Watchdog(limit) as watchdog:
                models[config].train(1, dataset(), callbacks=callbacks + [clock.callback], dataset_sink_mode=False)
            if config == "summary_collector":
                _wait_for_children()
            if watchdog.fired:
                hangs[config] += 1
                print("  rep %d  %-18s HUNG after training (its writer processes were stopped); run not counted"
                      % (rep + 1, config), flush=True)
                if config == "none":
                    raise RuntimeError("the reference run hung")
                times[config].append(None)
                cpu[config].append(None)
                continue
            if clock.start is None or clock.last != steps_per_run:
                raise RuntimeError("%s: run ended at step %d of %d" % (config, clock.last, steps_per_run))
            step_ms = (clock.end - clock.start) * 1000.0 / args.steps
            times[config].append(step_ms)
            cpu[config].append((clock.cpu_end - clock.cpu_start) * 1000.0 / args.steps)
            if timers:
                hook_share[config].append(sum(t.seconds for t in timers) / (clock.end - clock.start))
            print("  rep %d  %-18s %7.2f ms/step  (CPU %7.2f ms/step)" % (rep + 1, config, step_ms, cpu[config][-1]),
                  flush=True)

    # Pair each run with the reference run of the same repetition (runs that hung are left out).
    ratios = {c: [t / b for t, b in zip(times[c], times["none"]) if t is not None] for c in configs}
    cpu_ratios = {c: [t / b for t, b in zip(cpu[c], cpu["none"]) if t is not None] for c in configs}
    times_all = times
    times = {c: [t for t in times[c] if t is not None] for c in configs}
    dropped = [c for c in configs if not times[c]]
    if dropped:
        print("no run of %s finished; left out" % ", ".join(dropped))
        configs = [c for c in configs if times[c]]
    result = {c: round(statistics.median(ratios[c]), 4) for c in configs if c != "none"}
    print()
    print("%-18s %12s %12s %22s" % ("configuration", "median ms", "median ratio", "ratios per repetition"))
    for c in configs:
        print("%-18s %12.2f %12.4f   %s" % (c, statistics.median(times[c]), statistics.median(ratios[c]),
                                           " ".join("%.3f" % r for r in ratios[c])))
    result["min_ratio"] = {c: round(min(times[c]) / min(times["none"]), 4) for c in configs if c != "none"}
    # CPU time of this process per step (all its threads, our writer thread included; not child processes, so
    # SummaryCollector's writer processes are left out): far less sensitive to other load than wall time.
    result["cpu_ratio"] = {c: round(statistics.median(cpu_ratios[c]), 4) for c in configs if c != "none"}
    # The monitoring callbacks' own cost, free of the training cell's: each configuration over our training cell
    # without a callback (cell_only) in the same repetition; and the share of the timed wall time spent inside
    # TrainMonitor's step hooks on the training thread (a floor of the callback's cost that other load hardly moves).
    if "cell_only" in configs:
        result["vs_cell_only"] = {
            c: round(statistics.median([t / b for t, b in zip(times_all[c], times_all["cell_only"])
                                        if t is not None and b is not None]), 4)
            for c in configs if c.startswith(("core", "debug_"))}
    result["hook_share"] = {c: round(statistics.median(v), 5) for c, v in hook_share.items() if v}
    result.update({
        "baseline_step_ms": round(statistics.median(times["none"]), 3),
        "step_ms": {c: [round(t, 3) for t in times[c]] for c in configs},
        "cpu_step_ms": {c: [None if t is None else round(t, 3) for t in cpu[c]] for c in configs},
        "ratios": {c: [round(r, 4) for r in ratios[c]] for c in configs},
        "steps": args.steps, "warmup": args.warmup, "reps": args.reps,
        "hung_runs": {c: n for c, n in hangs.items() if n},
        "mindspore_version": ms.__version__, "cpu_count": os.cpu_count(),
    })
    if args.out is None:
        shutil.rmtree(out_dir, ignore_errors=True)
    print(json.dumps(result, sort_keys=True))
    return result


if __name__ == "__main__":
    main()
