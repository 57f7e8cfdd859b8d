"""Findings that know their cause, on real tiny MindSpore trainings (issue 16 items 3-4).

Problems: a schedule declared in the hyperparameters but a constant given to the optimizer (error), a parameter
group with learning rate 0 (named as frozen, with its group number), NaN that reaches the weights ("weights are NaN
from step S to the end", the other findings nested under it), gradients vanishing with depth from step 1, a
BatchNorm train/eval mismatch (eval loss far above the train loss). Healthy controls that must stay quiet: constant
LR (declared), warm-up + cosine, piecewise, BatchNorm, a hand-written loop. Every run is trained once per module.
"""

import json
import sys

import numpy as np
import pytest

pytest.importorskip("mindspore")

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.health import engine, sources  # noqa: E402

import cause_training as ct  # noqa: E402
import health_training as ht  # noqa: E402
import warm  # noqa: E402

NAN_STEP = 14
RUNS = {}


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    return tmp_path_factory.mktemp("cause_runs")


def _run(logdir, name, now=None):
    (run,) = sources.runs_from_logdir(logdir / name, now=now)
    return run


def _serious(found):
    return [f for f in found if f.level in ("warn", "error")]


def _json(found):
    return [f.to_json() for f in found]


def _trained(logdir, name, fn):
    if name not in RUNS:
        fn(logdir / name)
        RUNS[name] = _run(logdir, name)
    return RUNS[name]


# -- healthy controls: no warning at all ----------------------------------------------------------------------------
CONTROLS = {
    "constant_declared": lambda d: ct.train(d, schedule="constant", hparams={"lr_schedule": "constant"}),
    "warmup_cosine": lambda d: ct.train(d, schedule="warmup_cosine", lr=0.05, epochs=6),
    "piecewise": lambda d: ct.train(d, schedule="piecewise", lr=0.05),
    "batchnorm": lambda d: ct.train(d, net=ct.bn_net(), schedule="piecewise", lr=0.05,
                                    eval_data=ht.classification_data(n=128, seed=9)),
    "loop": lambda d: ct.train_loop(d),
}


@pytest.mark.parametrize("name", sorted(CONTROLS))
@pytest.mark.slow
def test_healthy_controls_stay_quiet(logdir, name):
    run = _trained(logdir, name, CONTROLS[name])
    found = engine.check_run(run)
    assert _serious(found) == [], _json(found)
    assert "input_bound" not in [f.rule for f in found]     # in-memory data: the wait is a batch hand-over


@pytest.mark.slow
def test_recording_cost_is_measured_in_cpu_time_beside_busy_processes(logdir):
    """Two busy processes share the CPU while the loop trains: the steps' wall time stretches, the recording's CPU
    time (core/monitor_cpu_ms, one value per core point) and the process's (core/step_cpu_ms) do not, and neither
    an overhead nor a step-time regression is claimed."""
    burners = [warm.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        run = _trained(logdir, "loop_beside_load", lambda d: ct.train_loop(d))
    finally:
        for p in burners:
            p.kill()
            p.wait()
    cost, cpu = run.scalars[metadata.MONITOR_CPU_MS], run.scalars[metadata.STEP_CPU_MS]
    assert list(cost.steps) == list(range(4, 49, 4)) and np.all(np.isfinite(cost.values) & (cost.values >= 0))
    assert list(cpu.steps) == list(cost.steps) and np.all(cpu.values > 0)
    assert [f.to_json() for f in engine.check_run(run) if f.rule == "monitoring_overhead"] == []
    assert [f.to_json() for f in engine.check_run(run) if f.rule == "step_time_regression" and f.level == "warn"] \
        == []


def test_piecewise_drop_is_followed_by_the_update_ratio(logdir):
    # The one real LR step change of the controls: the update ratio follows it, so no mismatch is claimed.
    run = _trained(logdir, "piecewise", CONTROLS["piecewise"])
    assert metadata.UPDATE_RATIO_LAYERS in run.layers
    lr = run.scalars[metadata.LEARNING_RATE].values
    assert lr.max() / lr.min() == pytest.approx(10.0, rel=1e-3)
    assert [f for f in engine.check_run(run) if f.rule == "lr_update_mismatch"] == []


def test_finished_loop_run_is_not_stalled(logdir):
    run = _trained(logdir, "loop", CONTROLS["loop"])
    if getattr(run, "run_end", None) is None:
        pytest.skip("LoopMonitor does not write the run end marker yet")
    assert run.run_end["status"] == "finished"
    later = _run(logdir, "loop", now=run.state.last_event_time + 3 * 3600)
    assert [f.to_json() for f in engine.check_run(later) if f.rule.startswith("run_")] == []


# -- the learning rate against what was declared ---------------------------------------------------------------------
@pytest.mark.slow
def test_schedule_declared_but_constant_given_is_an_error(logdir):
    run = _trained(logdir, "schedule_not_applied",
                   lambda d: ct.train(d, schedule="constant", hparams={"lr_schedule": "cosine", "lr": 0.05}))
    found = engine.check_run(run)
    (f,) = [f for f in found if f.rule == "lr_constant"]
    assert f.level == "error" and f.tag == metadata.LEARNING_RATE
    assert "lr_schedule=cosine" in f.message
    assert [g.rule for g in _serious(found)] == ["lr_constant"], _json(found)


@pytest.mark.slow
def test_constant_without_declaration_follows_the_recorded_lr_config(logdir):
    run = _trained(logdir, "constant_plain", lambda d: ct.train(d, schedule="constant"))
    found = [f for f in engine.check_run(run) if f.rule == "lr_constant"]
    if "lr_config" in run.info:
        assert run.info["lr_config"]["kind"] == "constant"
        assert found == []                                   # flat + constant configured = nothing
    else:
        (f,) = found
        assert f.level == "warn"                             # nothing declared: the old inference


@pytest.mark.slow
def test_zero_lr_group_is_named_as_frozen(logdir):
    run = _trained(logdir, "frozen_group",
                   lambda d: ct.train(d, optimizer="adam", lr=0.01, head_lr=0.0, schedule="constant",
                                      hparams={"lr_schedule": "constant"}))
    found = engine.check_run(run)
    (lr,) = [f for f in found if f.rule == "lr_constant"]
    assert lr.level == "warn" and lr.tag == metadata.learning_rate_group_tag(1), lr.to_json()
    assert "group 1" in lr.message and "frozen" in lr.message and "group 0" not in lr.message
    (layers,) = [f for f in found if f.rule == "layer_not_learning"]
    ratio = run.layers[metadata.UPDATE_RATIO_LAYERS]
    head = [n for n in ratio.layers if n.startswith("2.")]
    assert head and all(n in layers.message for n in head)


# -- NaN in the weights, and what follows from it ---------------------------------------------------------------------
@pytest.mark.slow
def test_nan_weights_are_said_plainly_and_follow_ons_are_nested(logdir):
    run = _trained(logdir, "nan_weights",
                   lambda d: ct.train(d, train_data=ct.poisoned(NAN_STEP), epochs=3, collect_freq=2,
                                      diagnostic_freq=4, schedule="piecewise"))
    last = run.last_step()
    found = engine.check_run(run)
    top = {(f.rule, f.tag): f for f in found}
    loss = top[("nonfinite", metadata.LOSS)]
    start = loss.steps[0]      # the interval of recorded step 14 covers steps 13-14
    assert loss.level == "error" and start in (NAN_STEP - 1, NAN_STEP)
    assert "to the end of the run" in loss.message
    weights = [f for f in found if f.rule == "nonfinite" and "Weights are NaN" in f.message]
    assert weights, _json(found)
    w = weights[0]
    assert w.steps == (start, last) and ("from step %d to the end" % start) in w.message
    assert w.tag in (metadata.WEIGHT_NORM_GLOBAL, metadata.WEIGHT_NORM_LAYERS)
    # Nothing at the top level starts after the NaN except the non-finite findings themselves.
    for f in found:
        assert f.rule == "nonfinite" or f.steps[0] < loss.steps[0] or f.rule in ("run_stalled", "run_unfinished"), \
            f.to_json()
    # Learning-rate advice computed from NaN values is never given at the top level.
    assert not [f for f in found if f.rule in ("lr_update_mismatch", "layer_not_learning", "vanishing_gradients")]
    for f in found:
        for g in f.follow_ons:
            assert g.caused_by["rule"] == "nonfinite" and g.steps[0] >= f.steps[0]
    text = json.dumps([f.to_json() for f in found], allow_nan=False)
    assert "NaN" in text


# -- depth-wise vanishing gradients ------------------------------------------------------------------------------------
@pytest.mark.slow
def test_gradients_vanishing_with_depth_from_step_one_name_the_early_layers(logdir):
    run = _trained(logdir, "depth_vanishing",
                   lambda d: ct.train(d, net=ct.vanishing_net(), schedule="constant",
                                      hparams={"lr_schedule": "constant"}))
    grads = run.layers[metadata.GRAD_NORM_LAYERS]
    first = grads.values[0]
    names = grads.layers
    assert first[0] < 1e-9 * first[-1] and first[1] < 1e-3 * first[-1]     # the engineered vanishing, at step 1
    (f,) = [f for f in engine.check_run(run) if f.rule == "vanishing_gradients"]
    assert f.level == "warn" and f.tag == metadata.GRAD_NORM_LAYERS
    assert f.steps[0] == int(grads.steps[0]) and "first recorded step" in f.message
    early = [n for n in names if n.startswith(("0.", "3."))]
    late = [n for n in names if n.startswith(("6.", "8."))]
    assert set(f.layers) == set(early) and not any(n in f.message for n in late)


# -- BatchNorm train/eval mismatch -------------------------------------------------------------------------------------
@pytest.mark.slow
def test_batchnorm_moving_statistics_mismatch_is_a_train_eval_gap(logdir):
    # momentum 0.999: after 48 steps the moving mean has moved 5% of the way from 0 to the data's mean (offset 20),
    # so eval mode normalizes with the wrong statistics while training (batch statistics) is fine.
    run = _trained(logdir, "bn_gap",
                   lambda d: ct.train(d, net=ct.bn_net(momentum=0.999), train_data=ct.shifted(256, 0, 20.0),
                                      eval_data=ct.shifted(128, 9, 20.0), schedule="constant",
                                      hparams={"lr_schedule": "constant"}))
    ev = run.scalars[metadata.EVAL_LOSS]
    found = engine.check_run(run)
    (f,) = [f for f in found if f.rule == "train_eval_gap"]
    assert f.level == "warn" and f.tag == metadata.EVAL_LOSS
    assert f.steps[0] == int(ev.steps[0])
    assert "BatchNorm" in f.message
    assert "overfitting" not in [g.rule for g in found]


# -- live health events recorded by the callbacks ------------------------------------------------------------------------
@pytest.mark.slow
def test_live_event_with_stop_is_merged_into_the_offline_finding(logdir):
    run = _trained(logdir, "live_stop",
                   lambda d: ct.train(d, train_data=ct.poisoned(NAN_STEP), epochs=3, collect_freq=2,
                                      schedule="constant", hparams={"lr_schedule": "constant"}, on_anomaly="stop"))
    assert run.health_events, "the callbacks recorded no live health event"
    assert run.run_end is not None and run.run_end["status"] == "stopped"
    found = engine.check_run(run)
    nonfinite = [f for f in found if f.rule == "nonfinite"]
    merged = [f for f in nonfinite if f.source == "offline+live"]
    assert len(merged) == 1, _json(found)
    f = merged[0]
    assert f.action == "stopped" and "Training was stopped" in f.message
    assert f.steps[0] == NAN_STEP and "at step %d" % NAN_STEP in f.message     # exact, from the live event
    if any(ev["layers"] for ev in run.health_events):       # the flight recorder named where it started
        assert f.layers and f.to_json()["layers"] == list(f.layers)
    assert [g for g in found if g.source == "live" and g.rule == "nonfinite"] == []     # not reported twice
    later = _run(logdir, "live_stop", now=run.state.last_event_time + 3 * 3600)
    assert [g.to_json() for g in engine.check_run(later) if g.rule.startswith("run_")] == []


@pytest.mark.slow
def test_live_skip_keeps_the_weights_finite(logdir):
    run = _trained(logdir, "live_skip",
                   lambda d: ct.train(d, train_data=ct.poisoned(NAN_STEP), epochs=3, collect_freq=2,
                                      diagnostic_freq=4, schedule="constant", hparams={"lr_schedule": "constant"},
                                      on_anomaly="skip"))
    assert run.health_events and run.health_events[0]["action"] == "skipped_update"
    found = engine.check_run(run)
    assert not [f for f in found if "Weights are NaN" in f.message], _json(found)
    (f,) = [f for f in found if f.rule == "nonfinite" and f.tag == metadata.LOSS]
    assert f.action == "skipped_update" and "skipped" in f.message
    assert "to the end of the run" not in f.message


@pytest.mark.slow
def test_live_checkpoint_path_reaches_the_finding(logdir):
    import os

    run = _trained(logdir, "live_checkpoint",
                   lambda d: ct.train(d, train_data=ct.poisoned(NAN_STEP), epochs=2, collect_freq=2,
                                      schedule="constant", hparams={"lr_schedule": "constant"},
                                      on_anomaly="checkpoint"))
    (f,) = [f for f in engine.check_run(run) if f.rule == "nonfinite" and f.tag == metadata.LOSS]
    assert f.action == "checkpoint" and f.checkpoint and os.path.isfile(f.checkpoint), f.to_json()
    assert f.to_json()["checkpoint"] == f.checkpoint and f.checkpoint in f.message


@pytest.mark.slow
def test_loop_nan_is_merged_with_its_live_event(logdir):
    run = _trained(logdir, "loop_nan", lambda d: ct.train_loop(d, nan_step=NAN_STEP, collect_freq=4))
    assert run.health_events and run.run_end["status"] == "finished"
    found = engine.check_run(run)
    (f,) = [f for f in found if f.rule == "nonfinite" and f.tag == metadata.LOSS]
    assert f.level == "error" and f.steps[0] == NAN_STEP and f.source == "offline+live", f.to_json()
    assert [g for g in found if g.source == "live"] == []
