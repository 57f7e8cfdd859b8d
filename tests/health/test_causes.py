"""The issue-16 rule changes on synthetic series: declared LR intent, frozen groups, step changes, weights NaN to
the end, follow-ons nested under their cause, live events merged with the offline finding, the run end marker,
depth-wise vanishing, the train/eval gap. The same rules on real trainings: test_causes_real_runs.py."""

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.health import causes, engine
from tb_plugin_mindspore.health.rules import gradients, learning_rate
from tb_plugin_mindspore.health.rules.base import Finding

from health_helpers import findings, healthy_arrays, healthy_run, make_run, serious


def _with(run, **attrs):
    for k, v in attrs.items():
        setattr(run, k, v)
    return run


# -- declared intent ---------------------------------------------------------------------------------------------------
def _flat_run(info=None, n=100):
    loss, _, _, _, _ = healthy_arrays(n)
    return make_run({metadata.LOSS: loss, metadata.LEARNING_RATE: np.full(n, 1e-3)}, info=info)


@pytest.mark.parametrize("info,level", [
    ({}, "warn"),
    ({"hparams": {"lr_schedule": "constant"}}, None),
    ({"hparams": {"scheduler": "none", "lr": 0.1}}, None),
    ({"lr_config": {"kind": "constant", "class": None, "groups": [{"kind": "constant", "value": 1e-3}]}}, None),
    ({"lr_config": {"kind": "dynamic", "class": "Parameter", "groups": []}}, None),
    ({"lr_config": {"kind": "schedule", "class": "CosineDecayLR", "groups": []}}, "error"),
    ({"lr_config": {"kind": "list", "class": None, "groups": []}}, "error"),
    ({"lr_config": {"kind": "list", "groups": [{"kind": "list", "length": 100, "flat": False}]}}, "error"),
    ({"lr_config": {"kind": "list", "groups": [{"kind": "list", "length": 500, "flat": False}]}}, None),
    ({"lr_config": {"kind": "list", "groups": [{"kind": "list", "length": 100, "flat": True}]}}, None),
    ({"hparams": {"lr_schedule": "cosine"}}, "error"),
    ({"hparams": {"warmup_steps": 100}, "lr_config": {"kind": "constant", "groups": []}}, "error"),
    ({"hparams": {"warmup_steps": 0}}, "warn"),
])
def test_flat_lr_is_judged_against_the_declared_intent(info, level):
    found = findings(_flat_run(info), "lr_constant")
    if level is None:
        assert found == []
    else:
        (f,) = found
        assert f.level == level and f.steps == (1, 100)


def test_error_says_what_was_declared():
    (f,) = findings(_flat_run({"hparams": {"lr_schedule": "cosine"},
                               "lr_config": {"kind": "constant", "groups": []}}), "lr_constant")
    assert "lr_schedule=cosine" in f.message and "constant learning rate" in f.message
    (f,) = findings(_flat_run({"lr_config": {"kind": "schedule", "class": "CosineDecayLR"}}), "lr_constant")
    assert "CosineDecayLR" in f.message


def test_zero_group_is_named_with_its_number_not_group_0():
    n = 60
    lr0 = np.linspace(1e-3, 1e-4, n)
    run = make_run({metadata.LEARNING_RATE: lr0, metadata.learning_rate_group_tag(0): lr0,
                    metadata.learning_rate_group_tag(1): np.zeros(n)})
    (f,) = findings(run, "lr_constant")
    assert f.level == "warn" and f.tag == metadata.learning_rate_group_tag(1)
    assert "group 1" in f.message and "frozen" in f.message


def test_flat_group_is_reported_with_its_own_tag():
    n = 60
    run = make_run({metadata.learning_rate_group_tag(0): np.linspace(1e-3, 1e-4, n),
                    metadata.learning_rate_group_tag(1): np.full(n, 1e-3)},
                   info={"lr_config": {"kind": "schedule", "groups": [{"kind": "schedule"}, {"kind": "schedule"}]}})
    (f,) = findings(run, "lr_constant")
    assert f.level == "error" and f.tag == metadata.learning_rate_group_tag(1) and "group 1" in f.message


# -- lr_update_mismatch: step changes only, before divergence -------------------------------------------------------
def test_step_changes_finds_decays_not_ramps():
    warm = np.log(np.concatenate([np.linspace(1e-5, 1e-3, 20), np.full(20, 1e-3)]))
    assert learning_rate.step_changes(warm, 2.0, 0.25) == []
    step = np.log(np.where(np.arange(40) < 20, 1e-2, 1e-3))
    assert [k for k, _, _ in learning_rate.step_changes(step, 2.0, 0.25)] == [20]


def test_warmup_with_falling_gradients_is_no_mismatch():
    n = 100
    steps = np.arange(1, n + 1)
    lr = np.minimum(steps / 30.0, 1.0) * 1e-3          # linear warm-up over 30 steps, then flat
    ratio_steps = np.arange(2, n + 1, 2)
    # SGD-like: update ratio = lr x a gradient that falls 20-fold during warm-up (does not follow the LR ramp).
    grad = np.maximum(1.0 / 20, np.exp(-ratio_steps / 10.0))
    ratios = (lr[ratio_steps - 1] * grad)[:, None] * np.ones((1, 2))
    run = make_run({metadata.LEARNING_RATE: lr},
                   layers={metadata.UPDATE_RATIO_LAYERS: (["a.weight", "b.weight"], (ratio_steps, ratios))})
    assert findings(run, "lr_update_mismatch") == []


def test_no_mismatch_claimed_after_divergence():
    n = 100
    lr = np.where(np.arange(1, n + 1) <= 50, 1e-2, 1e-3)
    loss = np.concatenate([np.linspace(2, 1, 40), np.full(60, np.nan)])
    ratio_steps = np.arange(5, n + 1, 5)
    ratios = np.full((ratio_steps.size, 2), 1e-3)
    run = make_run({metadata.LEARNING_RATE: lr, metadata.LOSS: loss},
                   layers={metadata.UPDATE_RATIO_LAYERS: (["a.weight", "b.weight"], (ratio_steps, ratios))})
    assert findings(run, "lr_update_mismatch") == []


# -- NaN in the weights, follow-ons -----------------------------------------------------------------------------------
def _nan_run():
    n = 100
    loss, grad, lr, _, _ = healthy_arrays(n)
    loss[39:], grad[39:] = np.nan, np.nan
    wsteps = np.arange(10, n + 1, 10)
    wnorm = np.where(wsteps < 40, 12.0, np.nan)
    ratio_steps = np.arange(5, n + 1, 5)
    # Update ratios explode at the divergence and are NaN after it.
    ratios = np.where(ratio_steps[:, None] < 35, 1e-3, np.where(ratio_steps[:, None] < 40, 5.0, np.nan)) \
        * np.ones((1, 2))
    return make_run({metadata.LOSS: loss, metadata.GRAD_NORM: grad, metadata.LEARNING_RATE: lr,
                     metadata.WEIGHT_NORM_GLOBAL: (wsteps, wnorm)},
                    layers={metadata.UPDATE_RATIO_LAYERS: (["a.weight", "b.weight"], (ratio_steps, ratios))})


def test_weights_nan_to_the_end_is_said_plainly():
    found = findings(_nan_run(), "nonfinite")
    (w,) = [f for f in found if f.tag == metadata.WEIGHT_NORM_GLOBAL]
    assert w.level == "error" and w.steps == (40, 100)
    assert "Weights are NaN from step 40 to the end of the run (step 100)" in w.message
    (loss,) = [f for f in found if f.tag == metadata.LOSS]
    assert "stayed non-finite to the end of the run" in loss.message


def test_follow_ons_are_nested_under_the_first_nonfinite_finding():
    cause = Finding("nonfinite", "error", "NaN", metadata.LOSS, (40, 100))
    before = Finding("grad_explosion", "error", "spike", metadata.GRAD_NORM, (30, 39))
    after = Finding("layer_too_fast", "warn", "lower the LR", metadata.UPDATE_RATIO_LAYERS, (45, 100))
    stall = Finding("run_stalled", "warn", "silent", "", (100, 100))
    assert causes.nest_follow_ons([cause, before, after, stall], None) == [cause, before, after, stall]  # recovered
    top = causes.nest_follow_ons([cause, before, after, stall], 40)
    assert top == [cause, before, stall]
    assert cause.follow_ons == [after] and after.caused_by == {"rule": "nonfinite", "tag": metadata.LOSS,
                                                               "step": 40}
    j = cause.to_json()
    assert j["follow_ons"][0]["rule"] == "layer_too_fast" and j["follow_ons"][0]["caused_by"]["step"] == 40
    assert set(before.to_json()) == {"rule", "level", "message", "tag", "steps"}      # the stable shape


def test_report_keeps_its_shape_with_follow_ons():
    rep = engine.report([_nan_run()])
    (run,) = rep["runs"]
    assert run["status"] == "error"
    for f in run["findings"]:
        assert {"rule", "level", "message", "tag", "steps"} <= set(f)
        for g in f.get("follow_ons", []):
            assert g["caused_by"]["rule"] == "nonfinite"


# -- live events ---------------------------------------------------------------------------------------------------------
def _event(**kw):
    base = dict(rule="nonfinite", severity="error", step=42, first_step=40, message="NaN loss at step 40",
                advice="lower the learning rate", layers=["1.weight"], action="stopped")
    base.update(kw)
    return metadata.health_event(**base)


def test_live_event_merges_into_the_offline_finding():
    run = _with(_nan_run(), health_events=[_event()])
    found = findings(run, "nonfinite")
    (loss,) = [f for f in found if f.tag == metadata.LOSS]
    assert loss.layers == ("1.weight",) and loss.action == "stopped" and loss.source == "offline+live"
    assert "Training was stopped at step 42" in loss.message and "1.weight" in loss.message
    assert len([f for f in engine.check_run(run) if f.source == "live"]) == 0       # not reported twice
    j = loss.to_json()
    assert j["layers"] == ["1.weight"] and j["action"] == "stopped"


def test_live_event_without_offline_counterpart_is_its_own_finding():
    run = _with(healthy_run(), health_events=[_event(rule="grad_spike", severity="warning", step=150,
                                                     first_step=148, action="skipped_update",
                                                     message="gradient norm of layer 1.weight jumped 40x")])
    (f,) = [f for f in engine.check_run(run) if f.source == "live"]
    assert f.rule == "grad_explosion" and f.level == "warn" and f.steps == (148, 150)
    assert f.layers == ("1.weight",) and "skipped" in f.message


def test_live_event_tag_points_to_the_flight_heatmap():
    steps = np.arange(30, 41)
    run = _with(_nan_run(), health_events=[_event(rule="loss_spike", severity="warning")])
    run.layers[metadata.FLIGHT_GRAD_NORM_LAYERS] = run.layers[metadata.UPDATE_RATIO_LAYERS].__class__.from_rows(
        metadata.FLIGHT_GRAD_NORM_LAYERS, ["1.weight"], steps, steps.astype(float), np.ones((steps.size, 1)))
    (f,) = [f for f in findings(run) if f.source == "live"] or \
        [g for f in findings(run) for g in f.follow_ons if g.source == "live"]
    assert f.tag == metadata.FLIGHT_GRAD_NORM_LAYERS


# -- the run end marker ------------------------------------------------------------------------------------------------
def _silent(run, hours):
    run.state.now = run.state.last_event_time + hours * 3600
    return run


def test_run_with_end_marker_is_never_stalled():
    loss, _, _, _, _ = healthy_arrays(100)
    run = make_run({metadata.LOSS: loss})                   # a loop run: no epochs, length unknown
    assert [f.rule for f in findings(_silent(run, 1)) if f.rule.startswith("run_")] == ["run_stalled"]
    run = _with(make_run({metadata.LOSS: loss}), run_end=metadata.run_end("finished", 100, 0.0))
    assert [f for f in findings(_silent(run, 1)) if f.rule.startswith("run_")] == []


def test_stale_end_marker_of_an_earlier_run_is_ignored():
    loss, _, _, _, _ = healthy_arrays(100)
    run = _with(make_run({metadata.LOSS: loss}), run_end=metadata.run_end("finished", 50, 0.0))
    assert [f.rule for f in findings(_silent(run, 1)) if f.rule.startswith("run_")] == ["run_stalled"]


@pytest.mark.parametrize("status,level", [("interrupted", "info"), ("failed", "warn"), ("stopped", None)])
def test_end_marker_statuses(status, level):
    loss, _, _, _, _ = healthy_arrays(100)
    run = _with(make_run({metadata.LOSS: loss}, info={"epochs": 2, "steps_per_epoch": 100}),
                run_end=metadata.run_end(status, 100, 0.0, "KeyboardInterrupt" if status == "interrupted" else ""))
    found = [f for f in findings(run) if f.rule.startswith("run_")]
    if level is None:
        assert found == []
    else:
        (f,) = found
        assert f.rule == "run_unfinished" and f.level == level and "step 100 of 200" in f.message


# -- depth-wise vanishing -------------------------------------------------------------------------------------------------
def test_depth_wise_vanishing_from_step_one_names_the_early_layers():
    run = healthy_run()
    layer = run.layers[metadata.GRAD_NORM_LAYERS]
    layer.values[:, 0] = 1e-18
    layer.values[:, 1] = 1e-12
    (f,) = findings(run, "vanishing_gradients")
    assert f.level == "warn" and f.steps[0] == int(layer.steps[0])
    assert f.layers == ("encoder.0.weight", "encoder.1.weight") and "first recorded step" in f.message


def test_reference_is_never_a_vanished_layer():
    vals = np.array([[1e-18, 1e-17, 1e-16, 0.1, 0.2], [np.nan, 1e-17, 1e-16, 0.1, 0.3]])
    ref = gradients.reference_norms(vals, 1e-4)
    assert 0.1 <= float(ref[0]) <= 0.2 and 0.1 <= float(ref[1]) <= 0.3


# -- train/eval gap ---------------------------------------------------------------------------------------------------------
def test_eval_loss_far_above_train_from_the_start_is_a_gap():
    n = 100
    train = np.linspace(1.1, 0.05, n)
    ev_steps = np.arange(10, n + 1, 10)
    run = make_run({metadata.LOSS: train, metadata.EVAL_LOSS: (ev_steps, np.full(ev_steps.size, 20.0))})
    (f,) = findings(run, "train_eval_gap")
    assert f.level == "warn" and f.steps == (10, 100) and "BatchNorm" in f.message


def test_eval_never_better_than_the_untrained_model_is_a_broken_eval_not_overfitting():
    """The issue's case: eval loss 3-4x the train loss, rising a little, never below the untrained model's loss:
    a broken evaluation (named as such), never "overfitting, keep the checkpoint from step N"."""
    n = 100
    t = np.arange(n)
    train = 0.35 + 1.05 * np.exp(-t / 15.0)
    ev_steps = np.arange(10, n + 1, 10)
    ev = np.linspace(1.5, 1.4, ev_steps.size)
    ev[5:] = np.linspace(1.4, 1.6, 5)           # and rising again: Prechelt's GL would call it overfitting
    run = make_run({metadata.LOSS: train, metadata.EVAL_LOSS: (ev_steps, ev)})
    (f,) = findings(run, "train_eval_gap")
    assert f.message.startswith("The evaluation looks broken, not overfitting")
    assert "best eval loss 1.4 at step 60, against 1.332 at the start" in f.message
    assert [g.rule for g in serious(run)] == ["train_eval_gap"]


def test_overfitting_is_not_a_gap():
    n = 100
    train = np.linspace(1.1, 0.01, n)
    ev_steps = np.arange(10, n + 1, 10)
    ev = np.array([1.0, 0.8, 0.7, 0.75, 0.9, 1.1, 1.3, 1.5, 1.8, 2.0])
    run = make_run({metadata.LOSS: train, metadata.EVAL_LOSS: (ev_steps, ev)})
    assert findings(run, "train_eval_gap") == []
    assert [f.rule for f in serious(run)] == ["overfitting"]


def test_input_wait_of_a_batch_hand_over_is_quiet():
    run = make_run({metadata.STEP_TIME_MS: np.full(30, 5.0), metadata.DATA_WAIT_MS: np.full(30, 0.5)})
    assert findings(run, "input_bound") == []


def test_live_stall_is_history_once_the_run_went_on():
    loss, _, _, _, _ = healthy_arrays(100)
    stall = _event(rule="run_stalled", severity="warning", step=60, first_step=60, layers=[], action="none",
                   message="no step for 15 min after step 60")
    going_on = _with(make_run({metadata.LOSS: loss}), health_events=[stall])
    (f,) = [f for f in findings(going_on) if f.source == "live"]
    assert f.rule == "run_stalled" and f.steps == (60, 60)
    silent = _with(make_run({metadata.LOSS: (np.arange(1, 61), loss[:60])}), health_events=[stall])
    assert [f for f in findings(silent) if f.source == "live"] == []      # still silent: run_stalled judges it


def test_layers_where_it_started_from_the_per_layer_gradient_norms():
    from tb_plugin_mindspore.health.rules.common import layers_at

    run = healthy_run()
    layer = run.layers[metadata.GRAD_NORM_LAYERS]          # steps 10, 20, ..., 200; four layers around 0.3
    k = int(np.nonzero(layer.steps == 120)[0][0])
    layer.values[k, 2] = 50.0                              # head.weight spikes at step 120
    assert layers_at(run, 115) == ("head.weight",)
    layer.values[k + 1, 1] = np.nan                        # encoder.1.weight non-finite at step 130
    assert layers_at(run, 130) == ("encoder.1.weight",)
    assert layers_at(run, 250) == ()
