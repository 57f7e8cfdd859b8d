"""Benchmark: how much slower does monitoring make training, per execution mode and entry point?

    python bench/overhead.py [--modes graph,pynative] [--entries model,loop] [--steps 200] [--pynative-steps 50]
                             [--reps 5] [--warmup 10] [--out DIR]
    python bench/overhead.py --quick      # a small model, a few steps: checks that everything runs (no figures)

Trains the demo's 2-layer transformer classifier (``nn.TransformerEncoderLayer``, hidden 128, seq 64, batch 32,
AdamWeightDecay, non-sink) in each execution mode (``GRAPH_MODE``, ``PYNATIVE_MODE``) through two entry points:

* ``model``: ``Model.train``. Tiers: ``none`` (``Model(net, loss_fn, optimizer)``, no callback: the reference),
  ``cell_only`` (``Model(MonitoredTrainCell.wrap(...))``, no callback: the in-graph statistics alone),
  ``core_diag`` (``MonitoredTrainCell`` + ``TrainMonitor(collect_freq=10, diagnostic_freq=10)``: core tier and
  per-layer weight norms every 10 steps and live health, on by default; no evaluation, which is extra work the
  user asks for, not overhead), ``core_diag_nohealth`` (the same with ``live_health=False``: the difference is what
  live health costs),
  ``core_diag_debug`` (the same plus ``debug="all"``: update ratio, per-layer gradient norms, activation
  histograms, data wait, every ``debug_freq`` steps), and MindSpore's own callbacks for comparison:
  ``summary_collector`` (``SummaryCollector(collect_freq=10)`` with ``histogram_regular='.*weight.*'``, the seed
  article's configuration) and ``loss_monitor`` (``LossMonitor(1)``, printing to /dev/null);
* ``loop``: the hand-written loop of the README (``grad_fn = value_and_grad(forward, None, optimizer.parameters)``;
  per batch of ``create_tuple_iterator()``: ``loss, grads = grad_fn(x, y); optimizer(grads)``). Tiers: ``none``
  (that loop alone), ``core_diag``, ``core_diag_nohealth`` and ``core_diag_debug`` (the same loop with
  ``LoopMonitor`` and the settings above: ``mon.begin_step()`` after the batch is fetched, ``mon.update(grads)``
  instead of ``optimizer(grads)``, ``mon.step(loss, grads, inputs=(x,))`` after the update).
* ``core_diag_noflight`` (not run by default; ``--configs`` / ``--pynative-configs`` / ``--loop-configs``):
  ``core_diag`` with ``flight_recorder=0``; the flight recorder is on by default, so the difference is its cost.

``debug_freq`` is 100 in GRAPH_MODE; in PYNATIVE_MODE (a step costs about ten times more, so fewer steps are timed)
it is ``--pynative-steps`` when that is below 100, so one debug point always falls in the timed steps (a higher
debug rate than the default: the debug figure is an upper bound there).

Everything runs side by side in one process. Each repetition builds every configuration's model anew and compiles
it (and the monitors' own small graphs) in a short warm-up run (two identical models differ in speed by a few
percent on a virtual machine, a bias that would never average out with one model per configuration), then trains
each for ``--warmup`` + timed steps, the configurations of both modes in a new random order (seeded),
SummaryCollector last and its writer processes waited for; a new callback / LoopMonitor each time, as a user would.
The step time of a run is the wall time of its timed steps divided by their number, all monitoring work included.
The ratio of a configuration is its step time over the ``none`` step time of the same mode, entry point and
repetition; the reported figure is the median over repetitions. Also reported: ``min_ratio`` (ratio of the fastest
runs), ``cpu_ratio`` (the same with this process's CPU time, which leaves out SummaryCollector's writer processes)
and ``hook_share`` (share of the timed wall time spent inside ``TrainMonitor``'s step hooks / ``LoopMonitor``'s
``begin_step`` / ``step`` on the training thread; ``update``, which runs the optimizer, is left out).

Do not edit the package's source files while this runs: MindSpore reads a cell's source when it compiles it.

Prints a table, then, as the last line, one JSON object: ``ratios`` as ``{mode: {entry: {tier: median ratio}}}``,
then the details (``step_ms``, ``ratios_per_rep``, ``min_ratio``, ``cpu_ratio``, ``hook_share``, ...).
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

MODES = ("graph", "pynative")
ENTRIES = ("model", "loop")
MODEL_TIERS = ("none", "cell_only", "core_diag", "core_diag_nohealth", "core_diag_debug", "summary_collector",
               "loss_monitor")
LOOP_TIERS = ("none", "core_diag", "core_diag_nohealth", "core_diag_debug")
# Not run by default: core + diagnostic + one debug item each, to see what each item costs.
EXTRA_TIERS = ("debug_update_ratio", "debug_layer_grad_norm", "debug_activations", "debug_data_wait")
# Not run by default either: core_diag without the flight recorder (on by default), for both entry points; the
# difference is what the flight recorder costs.
NOFLIGHT_TIERS = ("core_diag_noflight",)
PYNATIVE_MODEL_TIERS = ("none", "cell_only", "core_diag", "core_diag_debug")
# --quick: a much smaller transformer (so PYNATIVE steps take milliseconds), to check that everything runs.
QUICK_MODEL = {"hidden": 32, "seq": 16, "batch": 8, "layers": 1, "heads": 2, "ffn": 64}


def _parts(model_config):
    from mindspore import nn

    from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model

    net = build_model(model_config, seed=0)
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=DEMO_CONFIG["lr"], weight_decay=0.01)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    return net, loss_fn, optimizer


def _monitor_kwargs(tier, warm, debug_freq):
    """TrainMonitor / LoopMonitor settings of a tier (the warm-up run compiles everything: every point is due; a
    timing script calls ``cost_models.steady_state`` first, so the probes' blocks compile at their first pass)."""
    from tb_mindspore_callbacks import Debug, Diagnostic, Storage

    freq = 1 if warm else 10
    kwargs = {"collect_freq": freq, "diagnostic": Diagnostic(every=freq), "storage": Storage(registry=None)}
    if tier.endswith("_nohealth"):
        kwargs["health"] = False           # live health is on by default: this tier measures what it costs
    if tier.endswith("_noflight"):
        kwargs["flight_recorder"] = 0      # so is the flight recorder
    if tier == "core_diag_debug" or tier.startswith("debug_"):
        # debug_<item>: core + diagnostic + that one debug item (to see what each costs).
        kwargs["debug"] = Debug(items="all" if tier == "core_diag_debug" else [tier[len("debug_"):]],
                                every=1 if warm else debug_freq)
    return kwargs


class _ModelRun:
    """``Model.train`` with the tier's training cell and callbacks."""

    def __init__(self, tier, model_config):
        from mindspore.train import Model

        from tb_mindspore_callbacks import MonitoredTrainCell

        self.tier = tier
        net, loss_fn, optimizer = _parts(model_config)
        if tier.startswith(("core", "debug_")) or tier == "cell_only":
            self.model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
        else:
            self.model = Model(net, loss_fn, optimizer)

    def callbacks(self, run_dir, warm, debug_freq):
        from mindspore.train import LossMonitor, SummaryCollector

        from tb_mindspore_callbacks import TrainMonitor

        if self.tier.startswith(("core", "debug_")):
            return [TrainMonitor(run_dir, **_monitor_kwargs(self.tier, warm, debug_freq))]
        if self.tier == "summary_collector":
            return [SummaryCollector(run_dir, collect_freq=10,
                                     collect_specified_data={"histogram_regular": ".*weight.*"})]
        if self.tier == "loss_monitor":
            return [LossMonitor(1)]
        return []

    def train(self, dataset, run_dir, warm, debug_freq, clock=None):
        """Returns the seconds spent in the monitors' hooks after the warm-up (``clock`` given)."""
        callbacks = self.callbacks(run_dir, warm, debug_freq)
        timers = [_HookTimer(cb, clock.warmup) for cb in callbacks if type(cb).__name__ == "TrainMonitor"] \
            if clock is not None else []
        self.model.train(1, dataset, callbacks=callbacks + ([clock.callback] if clock else []),
                         dataset_sink_mode=False)
        return sum(t.seconds for t in timers)


class _LoopRun:
    """The README's hand-written ``value_and_grad`` loop, with ``LoopMonitor`` unless the tier is ``none``."""

    def __init__(self, tier, model_config):
        import mindspore as ms

        self.tier = tier
        self.net, loss_fn, self.optimizer = _parts(model_config)
        net = self.net

        def forward(x, y):
            return loss_fn(net(x), y)

        self.grad_fn = ms.value_and_grad(forward, None, self.optimizer.parameters)

    def train(self, dataset, run_dir, warm, debug_freq, clock=None):
        from tb_mindspore_callbacks import LoopMonitor

        mon = None
        if self.tier != "none":
            mon = LoopMonitor(run_dir, self.optimizer, network=self.net,
                              **_monitor_kwargs(self.tier, warm, debug_freq))
        grad_fn, optimizer = self.grad_fn, self.optimizer
        in_monitor = 0.0
        step = 0
        for x, y in dataset.create_tuple_iterator(num_epochs=1):
            step += 1
            if mon is not None:
                started = time.perf_counter()
                mon.begin_step()
                in_monitor += time.perf_counter() - started if clock and step > clock.warmup else 0.0
            loss, grads = grad_fn(x, y)
            if mon is not None:
                mon.update(grads)     # the README's loop: optimizer(grads) (with the statistics in GRAPH_MODE)
            else:
                optimizer(grads)
            if mon is not None:
                started = time.perf_counter()
                mon.step(loss, grads, inputs=(x,))
                in_monitor += time.perf_counter() - started if clock and step > clock.warmup else 0.0
            if clock is not None:
                clock.tick(step)
        if clock is not None:
            loss.asnumpy()            # the last step has finished (the final points of close() are not timed,
            clock.tick(step)          # as TrainMonitor's on_train_end is not)
        if mon is not None:
            mon.close()
        return in_monitor


class _Clock:
    """Wall time of the steps after the warm-up (placed last, so it sees every other callback's work)."""

    def __init__(self, warmup):
        from mindspore.train import Callback

        clock = self
        self.warmup = warmup

        class _Cb(Callback):
            def on_train_step_end(self, run_context):
                clock.tick(run_context.original_args().cur_step_num)

        self.callback = _Cb()
        self.start = self.end = self.cpu_start = self.cpu_end = None
        self.last = 0

    def tick(self, step):
        """At the end of step ``step`` (1-based)."""
        if step == self.warmup:
            self.start = time.perf_counter()
            self.cpu_start = time.process_time()
        self.end = time.perf_counter()
        self.cpu_end = time.process_time()
        self.last = step


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


def _plan(args):
    """``[(mode, entry, tier)]`` to run."""
    modes = [m for m in args.modes.split(",") if m]
    entries = [e for e in args.entries.split(",") if e]
    bad = [m for m in modes if m not in MODES] + [e for e in entries if e not in ENTRIES]
    if bad:
        raise SystemExit("unknown mode / entry point: %s" % ", ".join(bad))
    plan = []
    for mode in modes:
        for entry in entries:
            if entry == "loop":
                tiers = [t for t in args.loop_configs.split(",") if t]
                unknown = [t for t in tiers if t not in LOOP_TIERS and t not in NOFLIGHT_TIERS]
                if unknown:
                    raise SystemExit("unknown loop configuration(s): %s" % ", ".join(unknown))
                if "none" not in tiers:
                    tiers.insert(0, "none")
            else:
                text = args.configs if mode == "graph" else args.pynative_configs
                tiers = [t for t in text.split(",") if t]
                unknown = [t for t in tiers if t not in MODEL_TIERS + EXTRA_TIERS + NOFLIGHT_TIERS]
                if unknown:
                    raise SystemExit("unknown configuration(s): %s" % ", ".join(unknown))
                if "none" not in tiers:
                    tiers.insert(0, "none")
            plan += [(mode, entry, t) for t in tiers]
    return plan


def _name(config):
    return "/".join(config)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default="graph,pynative", help="comma-separated: graph, pynative")
    parser.add_argument("--entries", default="model,loop", help="comma-separated: model (Model.train), loop")
    parser.add_argument("--steps", type=int, default=200, help="timed steps per GRAPH_MODE run (default 200)")
    parser.add_argument("--pynative-steps", type=int, default=50, help="timed steps per PYNATIVE_MODE run (50)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions of every configuration (default 5)")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps at the start of each run")
    parser.add_argument("--out", default=None, help="folder for the runs' event files (default: a temp dir)")
    parser.add_argument("--configs", default=",".join(MODEL_TIERS),
                        help="Model.train tiers in GRAPH_MODE (none is added); also %s" % ", ".join(EXTRA_TIERS))
    parser.add_argument("--pynative-configs", default=",".join(PYNATIVE_MODEL_TIERS),
                        help="Model.train tiers in PYNATIVE_MODE (default %s)" % ",".join(PYNATIVE_MODEL_TIERS))
    parser.add_argument("--loop-configs", default=",".join(LOOP_TIERS),
                        help="loop tiers, both modes (default %s; also %s)" % (",".join(LOOP_TIERS),
                                                                            ", ".join(NOFLIGHT_TIERS)))
    parser.add_argument("--quick", action="store_true",
                        help="a small transformer, 1 repetition, few steps, no SummaryCollector: checks that it runs")
    args = parser.parse_args(argv)
    # The monitors keep their small compiled cells (weight norms, snapshot, update ratio) per network in a cache of 8,
    # so that a new monitor for the same network does not compile them again. This script holds up to 16 models in
    # one process: with the default size, a timed run would compile its debug cells again (a one-off of about half
    # a second that a real run pays once, reported as core/compile_ms) and the debug tier would be charged for it.
    from tb_mindspore_callbacks.cells import layers as _layers

    _layers._CACHE_SIZE = 64
    model_config = None
    if args.quick:
        # No figures, so the probes keep their first passes op by op as in a short run: compiling them at once took
        # 17 s of CPU here (the encoder layer and the attention, about 2 s each, in each of the 4 debug-tier models).
        model_config = QUICK_MODEL
        args.steps, args.pynative_steps, args.warmup, args.reps = 3, 3, 1, 1
        args.configs = args.pynative_configs = "none,core_diag_debug"
    else:
        from cost_models import steady_state

        steady_state()
    plan = _plan(args)
    if args.quick:
        plan = [c for c in plan if c[2] in ("none", "core_diag_debug")]

    import mindspore as ms

    from tb_mindspore_callbacks.demo import DEMO_CONFIG, synthetic_arrays

    out_dir = args.out or tempfile.mkdtemp(prefix="tbms_overhead_")
    batch = dict(DEMO_CONFIG, **(model_config or {}))["batch"]
    timed = {"graph": args.steps, "pynative": args.pynative_steps}
    debug_freq = {"graph": 100, "pynative": min(100, args.pynative_steps)}
    tokens, labels = synthetic_arrays((args.warmup + max(timed.values())) * batch, model_config, seed=0)

    def dataset(steps):
        import mindspore.dataset as ds

        return ds.NumpySlicesDataset({"tokens": tokens[:steps * batch], "label": labels[:steps * batch]},
                                     shuffle=False).batch(batch, drop_remainder=True)

    def set_mode(mode):
        ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)

    def build(config, rep):
        """A new model for ``config``, compiled by a short run (the monitors' own small graphs too)."""
        mode, entry, tier = config
        set_mode(mode)
        run = (_LoopRun if entry == "loop" else _ModelRun)(tier, model_config)
        with _quiet_stdout(tier == "loss_monitor"), _Watchdog(300.0):
            run.train(dataset(3), os.path.join(out_dir, "warm_%s_%d" % ("_".join(config), rep)), True,
                      debug_freq[mode])
        if tier == "summary_collector":
            _wait_for_children()
        return run

    names = [_name(c) for c in plan]
    times = {n: [] for n in names}
    cpu = {n: [] for n in names}
    hook_share = {n: [] for n in names}
    hangs = {n: 0 for n in names}
    shuffler = random.Random(0)
    for rep in range(args.reps):
        # A new random order each repetition (no configuration always follows the same one); SummaryCollector
        # last, and its writer processes waited for, so their work never lands in another configuration's time.
        order = [c for c in plan if c[2] != "summary_collector"]
        shuffler.shuffle(order)
        order += [c for c in plan if c[2] == "summary_collector"]
        started = time.perf_counter()
        runs = {config: build(config, rep) for config in order}
        print("  rep %d  built and compiled %d models in %.1f s" % (rep + 1, len(order), time.perf_counter() - started),
              flush=True)
        for config in order:
            mode, entry, tier = config
            name = _name(config)
            set_mode(mode)
            steps = timed[mode]
            clock = _Clock(args.warmup)
            reference = times[_name((mode, entry, "none"))]
            # SummaryCollector runs take about 2.5x the reference: 8x means it hangs.
            limit = max(90.0, 8.0 * (args.warmup + steps) * statistics.median(reference) / 1000.0) \
                if reference else 900.0
            with _quiet_stdout(tier == "loss_monitor"), _Watchdog(limit) as watchdog:
                in_hooks = runs[config].train(dataset(args.warmup + steps), os.path.join(out_dir, "%s_%d" % (
                    "_".join(config), rep)), False, debug_freq[mode], clock)
            if tier == "summary_collector":
                _wait_for_children()
            if watchdog.fired:
                hangs[name] += 1
                print("  rep %d  %-32s HUNG after training (its writer processes were stopped); run not counted"
                      % (rep + 1, name), flush=True)
                if tier == "none":
                    raise RuntimeError("the reference run hung")
                times[name].append(None)
                cpu[name].append(None)
                continue
            if clock.start is None or clock.last != args.warmup + steps:
                raise RuntimeError("%s: run ended at step %d of %d" % (name, clock.last, args.warmup + steps))
            step_ms = (clock.end - clock.start) * 1000.0 / steps
            times[name].append(step_ms)
            cpu[name].append((clock.cpu_end - clock.cpu_start) * 1000.0 / steps)
            if tier not in ("none", "cell_only", "summary_collector", "loss_monitor"):
                hook_share[name].append(in_hooks / (clock.end - clock.start))
            print("  rep %d  %-32s %8.2f ms/step  (CPU %8.2f ms/step)" % (rep + 1, name, step_ms, cpu[name][-1]),
                  flush=True)
    if args.out is None:
        shutil.rmtree(out_dir, ignore_errors=True)
    result = summarize(plan, times, cpu, hook_share, hangs)
    result.update({
        "steps": timed, "debug_freq": debug_freq, "warmup": args.warmup, "reps": args.reps, "quick": args.quick,
        "model": dict(DEMO_CONFIG, **(model_config or {})),
        "mindspore_version": ms.__version__, "cpu_count": os.cpu_count(),
    })
    print(json.dumps(result, sort_keys=True))
    return result


def summarize(plan, times, cpu, hook_share, hangs):
    """Prints the table; returns the result (ratios to the same mode / entry point / repetition's ``none`` run)."""
    def ref(config):
        return _name((config[0], config[1], "none"))

    def paired(values, config):
        return [t / b for t, b in zip(values[_name(config)], values[ref(config)]) if t is not None]

    ratios, per_rep, min_ratio, cpu_ratio = {}, {}, {}, {}
    print()
    print("%-10s %-6s %-20s %10s %10s   %s" % ("mode", "entry", "tier", "median ms", "ratio", "ratios per repetition"))
    for config in plan:
        mode, entry, tier = config
        name = _name(config)
        done = [t for t in times[name] if t is not None]
        if not done:
            print("%-10s %-6s %-20s  no run finished" % config)
            continue
        r = paired(times, config)
        median = round(statistics.median(r), 4)
        print("%-10s %-6s %-20s %10.2f %10.4f   %s" % (mode, entry, tier, statistics.median(done), median,
                                                     " ".join("%.3f" % v for v in r)))
        if tier == "none":
            continue
        ratios.setdefault(mode, {}).setdefault(entry, {})[tier] = median
        per_rep[name] = [round(v, 4) for v in r]
        min_ratio[name] = round(min(done) / min(times[ref(config)]), 4)
        cpu_ratio[name] = round(statistics.median(paired(cpu, config)), 4)
    return {
        "ratios": ratios,
        "ratios_per_rep": per_rep,
        "min_ratio": min_ratio,
        "cpu_ratio": cpu_ratio,
        "hook_share": {n: round(statistics.median(v), 5) for n, v in hook_share.items() if v},
        "step_ms": {n: [None if t is None else round(t, 3) for t in v] for n, v in times.items()},
        "hung_runs": {n: k for n, k in hangs.items() if k},
    }


if __name__ == "__main__":
    main()
