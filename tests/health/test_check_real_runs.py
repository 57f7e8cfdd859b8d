"""Real tiny MindSpore trainings, each engineered to show one problem, recorded by MonitoredTrainCell + TrainMonitor:
the health check finds each problem with the right rule, level and step range, and the healthy control gets no
WARN or ERROR.

Eval loss, per-layer update ratio and data wait are recorded by a test-side callback (``health_training.ExtraTiers``)
that writes the data contract's exact tags with our SummaryWriter into the same run folder, from the same real
training: the update ratio is the real parameter change across each optimizer step.
"""

import json
import math
import os
import sys
import time

import numpy as np
import pytest

pytest.importorskip("mindspore")

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.health import engine, sources  # noqa: E402

import health_training as ht  # noqa: E402
import warm  # noqa: E402
from once import made_once  # noqa: E402

STEPS = ht.STEPS_PER_EPOCH


# The runs are trained once per test run (``once.made_once``), each into this one folder, whichever worker asks first:
# the scheduler spreads this module's tests over the workers, and each worker would otherwise train them again.
RUNS = "check_real_runs"


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return made_once(tmp_path_factory, RUNS, lambda folder: None)


def _made(tmp_path_factory, name, train):
    made_once(tmp_path_factory, RUNS + "/" + name, train)
    return name


def _run(logdir, name, now=None):
    (run,) = sources.runs_from_logdir(logdir / name, now=now)
    return run


def _report(logdir, name, now=None, config=None):
    run = _run(logdir, name, now)
    return run, engine.check_run(run, config)


def _serious(found):
    return [f for f in found if f.level in ("warn", "error")]


def _first_nonfinite_step(run, tag):
    s = run.scalars[tag]
    bad = np.nonzero(~np.isfinite(s.values))[0]
    return int(s.steps[bad[0]]) if bad.size else None


# -- the runs ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def healthy(tmp_path_factory):
    """Control: a 2-hidden-layer MLP with a step LR schedule, eval loss, update ratios and data wait recorded."""
    def train(folder):
        data = ht.classification_data(n=128 * STEPS, features=64)
        evals = ht.classification_data(n=512, features=64, seed=9)
        ht.train(folder, train_data=data, eval_data=evals, hidden=1024, depth=2, batch=128, epochs=6)
    return _made(tmp_path_factory, "healthy", train)


@pytest.fixture(scope="module")
def high_lr(tmp_path_factory):
    """Learning rate far too high without clipping (SGD on a linear regression): explodes, then NaN."""
    return _made(tmp_path_factory, "high_lr",
                 lambda folder: ht.train(folder, regression=True, optimizer="sgd", lr=0.5, collect_freq=1, extra=False))


@pytest.fixture(scope="module")
def constant_lr(tmp_path_factory):
    """The schedule is never bound to the optimizer: the hyperparameters declare a piecewise schedule, the
    optimizer gets a plain float learning rate."""
    return _made(tmp_path_factory, "constant_lr",
                 lambda folder: ht.train(folder, schedule=False, extra=False, hparams={"lr_schedule": "piecewise"}))


NAN_STEP = 14


def _poisoned():
    # 16 batches per epoch; one sample of batch 14 (1-based) holds +Inf, so step 14 is the first NaN.
    return ht.classification_data(n=16 * ht.BATCH, poison_row=(NAN_STEP - 1) * ht.BATCH + 5)


@pytest.fixture(scope="module")
def nan_every_step(tmp_path_factory):
    return _made(tmp_path_factory, "nan_freq1",
                 lambda folder: ht.train(folder, train_data=_poisoned(), epochs=3, collect_freq=1, extra=False))


@pytest.fixture(scope="module")
def nan_every_4(tmp_path_factory):
    return _made(tmp_path_factory, "nan_freq4",
                 lambda folder: ht.train(folder, train_data=_poisoned(), epochs=3, collect_freq=4, extra=False))


@pytest.fixture(scope="module")
def frozen_head(tmp_path_factory):
    """The classification head gets its own near-zero learning rate through a parameter group."""
    return _made(tmp_path_factory, "frozen_head",
                 lambda folder: ht.train(folder, optimizer="adam", lr=0.01, head_lr=1e-7, extra=True))


@pytest.fixture(scope="module")
def zero_lr_head(tmp_path_factory):
    """The head's parameter group has a learning rate of 0 (the optimizer holds it: not frozen to the callbacks);
    the core and diagnostic tiers only: no update ratios, the weight norms must tell."""
    return _made(tmp_path_factory, "zero_lr_head",
                 lambda folder: ht.train(folder, optimizer="adam", lr=0.01, head_lr=0.0, extra=False))


@pytest.fixture(scope="module")
def overfit(tmp_path_factory):
    """32 training samples with 30% noisy labels, a wider net, 80 epochs; eval loss on 512 held-out samples."""
    def train(folder):
        data = ht.classification_data(n=32, features=20, seed=3, noise=0.3)
        evals = ht.classification_data(n=512, features=20, seed=4, noise=0.3)
        ht.train(folder, train_data=data, eval_data=evals, epochs=80, lr=0.003, optimizer="adam", hidden=64,
                 collect_freq=2)
    return _made(tmp_path_factory, "overfit", train)


@pytest.fixture(scope="module")
def slow_input(tmp_path_factory):
    """A generator dataset that sleeps 60 ms per batch while a step computes in about 3 ms (20 ms on a loaded
    machine)."""
    return _made(tmp_path_factory, "slow_input", lambda folder: ht.train(folder, slow_ms=60, epochs=6))


CRASH_STEP = 20


@pytest.fixture(scope="module")
def crashed(tmp_path_factory):
    """Training raises at step 20 of 48; the process's exit closes the writer (on_train_end never runs)."""
    def train(folder):
        monitors = []
        with pytest.raises(RuntimeError, match="simulated crash"):
            ht.train(folder, stop_at_step=CRASH_STEP, extra=False, monitors=monitors)
        monitors[0].close()      # what interpreter exit does for the crashed process (the writer's atexit hook)
    return _made(tmp_path_factory, "crashed", train)


@pytest.fixture(scope="module")
def collector_logdir(tmp_path_factory):
    """MindSpore's own SummaryCollector (``*_MS`` files, ``loss/auto``, weight histograms) with the NaN batch."""
    return made_once(tmp_path_factory, "check_real_runs_ms",
                     lambda folder: ht.train_collector(folder / "collector", _poisoned()))


# -- healthy control -------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_healthy_run_is_ok(logdir, healthy):
    run, found = _report(logdir, healthy)
    for tag in (metadata.LOSS, metadata.GRAD_NORM, metadata.LEARNING_RATE, metadata.EVAL_LOSS,
                metadata.DATA_WAIT_MS, metadata.STEP_TIME_MS):
        assert tag in run.scalars, tag
    assert metadata.UPDATE_RATIO_LAYERS in run.layers
    assert _serious(found) == [], [f.to_json() for f in found]
    assert engine.status_of(found) == "ok"


# -- problems --------------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_high_learning_rate_explodes_then_nan(logdir, high_lr):
    run, found = _report(logdir, high_lr)
    first_nan = _first_nonfinite_step(run, metadata.LOSS)
    assert first_nan is not None and first_nan > 5
    explosion = [f for f in found if f.rule == "grad_explosion"]
    assert explosion and explosion[0].level == "error" and explosion[0].tag == metadata.GRAD_NORM
    assert explosion[0].steps[0] <= 10 and explosion[0].steps[1] < first_nan
    (nan_loss,) = [f for f in found if f.rule == "nonfinite" and f.tag == metadata.LOSS]
    assert nan_loss.level == "error" and nan_loss.steps[0] == first_nan
    assert engine.status_of(found) == "error"


@pytest.mark.slow
def test_schedule_not_applied_is_constant_lr(logdir, constant_lr):
    run, found = _report(logdir, constant_lr)
    lr = run.scalars[metadata.LEARNING_RATE]
    assert [f.rule for f in _serious(found)] == ["lr_constant"]
    (f,) = _serious(found)
    assert f.level == "error" and f.tag == metadata.LEARNING_RATE and "lr_schedule=piecewise" in f.message
    assert f.steps == (int(lr.steps[0]), int(lr.steps[-1]))


@pytest.mark.slow
def test_nan_injected_at_known_step_is_error_at_that_step(logdir, nan_every_step):
    run, found = _report(logdir, nan_every_step)
    nan = {f.tag: f for f in found if f.rule == "nonfinite"}
    for tag in (metadata.LOSS, metadata.GRAD_NORM):
        assert nan[tag].level == "error"
        assert nan[tag].steps[0] == NAN_STEP, nan[tag]
        assert "at step %d" % NAN_STEP in nan[tag].message
    assert nan[metadata.LOSS].steps[1] == run.last_step()


@pytest.mark.slow
def test_nan_between_recorded_points_is_caught_by_the_interval(logdir, nan_every_4):
    run, found = _report(logdir, nan_every_4)
    (f,) = [f for f in found if f.rule == "nonfinite" and f.tag == metadata.LOSS]
    assert f.level == "error"
    if run.health_events:      # live health saw the exact step inside the interval (points at 12 and 16)
        assert f.steps[0] == NAN_STEP and "at step %d" % NAN_STEP in f.message
        assert f.source == "offline+live" and f.layers
    else:                      # the interval statistics alone: somewhere after 12, at the latest 16
        assert f.steps[0] == 13 and "between steps 13 and 16" in f.message


@pytest.mark.slow
def test_head_with_near_zero_lr_is_not_learning(logdir, frozen_head):
    run, found = _report(logdir, frozen_head)
    ratio = run.layers[metadata.UPDATE_RATIO_LAYERS]
    head = [n for n in ratio.layers if n.startswith("2.")]
    body = [n for n in ratio.layers if n.startswith("0.")]
    assert head and body
    (f,) = [f for f in found if f.rule == "layer_not_learning"]
    assert f.level == "warn" and f.tag == metadata.UPDATE_RATIO_LAYERS
    assert all(n in f.message for n in head) and not any(n in f.message for n in body)
    assert f.steps == (int(ratio.steps[0]), int(ratio.steps[-1]))
    # The per-group learning rates the callbacks record show why.
    assert metadata.learning_rate_group_tag(1) in run.scalars


@pytest.mark.slow
def test_head_with_zero_lr_is_found_by_its_weight_norms_alone(logdir, zero_lr_head):
    """Real Adam updates: the body's weight norms move (and may come back), the head's never leaves its first
    value; the rule names the head alone, from the weight norms recorded at every diagnostic point."""
    run, found = _report(logdir, zero_lr_head)
    weights = run.layers[metadata.WEIGHT_NORM_LAYERS]
    assert metadata.UPDATE_RATIO_LAYERS not in run.layers and not run.frozen_layers()
    head = [n for n in weights.layers if n.startswith("2.")]
    assert head and len(weights.layers) > len(head)
    (f,) = [f for f in found if f.rule == "layer_not_learning"]
    assert f.level == "warn" and f.tag == metadata.WEIGHT_NORM_LAYERS and set(f.layers) == set(head)
    still = np.abs(weights.values - weights.values[0])
    assert np.all(still[:, [weights.layers.index(n) for n in head]] == 0.0)


@pytest.mark.slow
def test_tiny_train_set_memorised_is_not_called_overfitting(logdir, overfit):
    """32 samples with 30% wrong labels: the model memorises them (the train loss falls tenfold) and learns nothing
    that carries over; the eval loss never improves on the untrained model's loss. A broken evaluation looks the
    same, so the finding is the train/eval gap naming both, never "overfitting, keep the checkpoint from step N"
    (the issue's rule: no checkpoint is better than the untrained model)."""
    run, found = _report(logdir, overfit)
    ev = run.scalars[metadata.EVAL_LOSS]
    train = run.scalars[metadata.LOSS].values
    assert train[-1] < 0.5 * train[0]           # the train loss really fell
    assert ev.values.min() > 0.95 * train[0]    # the eval loss never beat the untrained model's
    (f,) = [f for f in found if f.rule == "train_eval_gap"]
    assert f.level == "warn" and f.tag == metadata.EVAL_LOSS and f.steps[0] in ev.steps[:2]   # from the start
    assert "memorises a training set too small or too noisy" in f.message
    assert "overfitting" not in [g.rule for g in found]


@pytest.mark.slow
def test_slow_data_pipeline_is_input_bound(logdir, slow_input):
    run, found = _report(logdir, slow_input)
    (f,) = [f for f in found if f.rule == "input_bound"]
    assert f.level == "warn" and f.tag == metadata.DATA_WAIT_MS
    wait = run.scalars[metadata.DATA_WAIT_MS]
    assert f.steps == (int(wait.steps[0]), int(wait.steps[-1]))


@pytest.mark.slow
def test_crashed_run_is_unfinished_and_stalled(logdir, crashed):
    run = _run(logdir, crashed)
    assert run.last_step() == CRASH_STEP and run.expected_last_step() == 6 * STEPS
    last = run.state.last_event_time
    _, later = _report(logdir, crashed, now=last + 2 * 3600)
    (f,) = [f for f in later if f.rule == "run_unfinished"]
    assert f.level == "warn" and f.steps == (CRASH_STEP, CRASH_STEP)
    assert "step %d of %d" % (CRASH_STEP, 6 * STEPS) in f.message
    if run.run_end is None:        # callbacks that write no end marker: judged by the silence
        _, soon = _report(logdir, crashed, now=last + 600)
        assert [f.rule for f in _serious(soon)] == ["run_stalled"]
        _, now = _report(logdir, crashed, now=last + 5)
        assert [f.rule for f in _serious(now) if f.rule.startswith("run_")] == []
        return
    # The end marker says it failed: said at once, with the reason, and never "stalled".
    assert run.run_end["status"] == "failed" and run.run_end["step"] == CRASH_STEP
    for delay in (5, 600):
        _, found = _report(logdir, crashed, now=last + delay)
        (f,) = [f for f in _serious(found) if f.rule.startswith("run_")]
        assert f.rule == "run_unfinished" and "simulated crash" in f.message


@pytest.mark.slow
def test_summary_collector_ms_files_are_checked(collector_logdir):
    # In its own process, as the command runs. Importing MindSpore (done by this test process) sets
    # PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python, which a user's shell does not have: leave it out.
    env = {k: v for k, v in os.environ.items() if k != "PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION"}
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.commands.check", "check", str(collector_logdir),
                     "--format", "json", "--fail-on", "error"], capture_output=True, text=True, timeout=120,
                    env=env)
    assert proc.returncode == 1, proc.stderr
    (run,) = json.loads(proc.stdout)["runs"]
    assert run["run"] == "collector" and run["status"] == "error"
    (f,) = [f for f in run["findings"] if f["rule"] == "nonfinite"]
    assert f["level"] == "error" and f["tag"] == "loss/auto" and f["steps"][0] == NAN_STEP
    (note,) = [f for f in run["findings"] if f["rule"] == "monitoring_overhead"]
    assert note["level"] == "info" and "SummaryCollector" in note["message"]


def test_closed_summary_collector_run_is_not_stalled_minutes_after_it_ended(collector_logdir):
    """SummaryCollector writes no end marker of ours, but SummaryRecord makes its file read-only when it closes
    it: a run whose ``*_MS`` files are all closed has ended, whatever the clock says."""
    (run,) = sources.runs_from_logdir(collector_logdir)
    assert run.state.ms_closed is True
    for minutes in (3, 10, 60):
        later = run.state.last_event_time + 60 * minutes
        (run,) = sources.runs_from_logdir(collector_logdir, now=later)
        assert [f for f in engine.check_run(run) if f.rule.startswith("run_")] == [], minutes


def test_finished_run_is_never_stalled(logdir, constant_lr):
    run = _run(logdir, constant_lr, now=time.time() + 30 * 86400)
    assert run.last_step() == run.expected_last_step()
    assert [f for f in engine.check_run(run) if f.rule.startswith("run_")] == []


def test_size_budget(logdir, healthy):
    run, found = _report(logdir, healthy, config={"log_size": {"max_bytes": 2000}})
    (f,) = [f for f in found if f.rule == "log_size"]
    assert f.level == "warn" and run.state.total_bytes > 2000


# -- every run at once: the CLI and the plugin's data provider ---------------------------------------------------------
@pytest.fixture(scope="module")
def all_runs(logdir, healthy, high_lr, constant_lr, nan_every_step, nan_every_4, frozen_head, overfit, slow_input,
             crashed):
    return logdir


EXPECTED_STATUS = {"healthy": "ok", "high_lr": "error", "constant_lr": "error", "nan_freq1": "error",
                   "nan_freq4": "error", "frozen_head": "warn", "overfit": "warn", "slow_input": "warn"}


def _parser():
    import argparse

    from tb_plugin_mindspore.commands.check import add_check_parser

    parser = argparse.ArgumentParser(prog="tb-mindspore")
    sub = parser.add_subparsers(dest="command")
    add_check_parser(sub)
    return parser


@pytest.mark.slow
def test_check_cli_over_every_real_run(all_runs, capsys):
    args = _parser().parse_args(["check", str(all_runs), "--format", "json"])
    assert args.func(args) == 0
    report = json.loads(capsys.readouterr().out)
    status = {r["run"]: r["status"] for r in report["runs"]}
    for name, expected in EXPECTED_STATUS.items():
        assert status[name] == expected, (name, report)
    args = _parser().parse_args(["check", str(all_runs), "--fail-on", "error"])
    assert args.func(args) == 1
    capsys.readouterr()
    args = _parser().parse_args(["check", str(all_runs / "healthy"), "--fail-on", "warn"])
    assert args.func(args) == 0


def _tensorboard_provider(logdir, load_fast):
    """TensorBoard's own data provider over ``logdir`` (either loader), with our plugin's flags applied."""
    from tensorboard import default, program

    tb = program.TensorBoard(plugins=default.get_plugins())
    tb.configure(argv=["tensorboard", "--logdir", str(logdir), "--load_fast", load_fast, "--reload_interval", "1"])
    provider, _ = tb._make_data_provider()
    return tb, provider


def _stop(tb):
    ingester = getattr(tb, "_ingester", None)
    proc = getattr(ingester, "_data_server_process", None) or getattr(ingester, "_process", None)
    if proc is not None:
        proc.terminate()


@pytest.mark.slow
@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_report_through_tensorboards_data_provider_matches_disk(all_runs, load_fast):
    from tensorboard import context as tb_context

    from tb_plugin_mindspore import health

    disk = {r["run"]: r for r in health.check_logdir(all_runs)["runs"] if r["run"] in EXPECTED_STATUS}
    tb, provider = _tensorboard_provider(all_runs, load_fast)
    try:
        ctx = tb_context.RequestContext()
        deadline = time.time() + 90
        while True:
            try:
                got = {r["run"]: r for r in health.check_provider(provider, ctx, "", logdir=str(all_runs))["runs"]}
            except Exception:     # the data server may still be starting
                got = {}
            ready = set(disk) <= set(got) and all(got[n] == disk[n] for n in EXPECTED_STATUS)
            if ready or time.time() > deadline:
                break
            time.sleep(1.0)
    finally:
        _stop(tb)
    assert set(disk) <= set(got)
    for name in EXPECTED_STATUS:
        assert got[name] == disk[name], name


def test_nonfinite_values_stay_out_of_the_json(all_runs):
    from tb_plugin_mindspore import health

    rep = health.check_logdir(all_runs / "nan_freq1")
    text = json.dumps(rep, allow_nan=False)
    assert "NaN" in text and not math.isnan(rep["runs"][0]["findings"][0]["steps"][0])
