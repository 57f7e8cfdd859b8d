"""Each health rule on synthetic numpy series: it fires at the right level and step range, and stays quiet on a
healthy run."""

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.health import detectors, engine, rules
from tb_plugin_mindspore.health.series import RunState

from health_helpers import T0, findings, healthy_arrays, healthy_run, make_run, serious


# -- healthy control -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_healthy_run_has_no_warning_or_error(seed):
    run = healthy_run(seed=seed)
    assert serious(run) == []
    assert engine.run_report(run)["status"] == "ok"


def test_every_rule_has_id_level_source_and_thresholds():
    ids = [r.id for r in rules.RULES]
    assert len(ids) == len(set(ids))
    for r in rules.RULES:
        assert r.level in rules.LEVELS and r.source and r.summary
        assert isinstance(r.defaults, dict)
    described = engine.describe_rules()
    assert [d["id"] for d in described] == ids
    json.dumps(described)


# -- NaN / Inf -------------------------------------------------------------------------------------------------------
def test_nan_loss_is_error_at_first_step():
    loss, grad, lr, _, _ = healthy_arrays(60)
    loss[17:] = np.nan           # step 18 onwards
    grad[20] = np.inf            # step 21
    run = make_run({metadata.LOSS: loss, metadata.GRAD_NORM: grad, metadata.LEARNING_RATE: lr})
    found = {f.tag: f for f in findings(run, "nonfinite")}
    assert found[metadata.LOSS].level == "error"
    assert found[metadata.LOSS].steps == (18, 60)
    assert "at step 18" in found[metadata.LOSS].message
    assert "stayed non-finite to the end of the run (step 60)" in found[metadata.LOSS].message
    assert found[metadata.GRAD_NORM].steps == (21, 21)
    assert "Inf" in found[metadata.GRAD_NORM].message
    assert engine.run_report(run)["status"] == "error"


def test_nan_between_recorded_points_found_through_interval():
    steps = np.arange(5, 101, 5)
    loss = np.linspace(2, 1, steps.size)            # every recorded value finite
    rows = [(s, 0.9, 1.0, 1.1, 5, 1 if s == 40 else 0) for s in steps]
    run = make_run({metadata.LOSS: (steps, loss)}, intervals={metadata.LOSS: rows})
    (f,) = findings(run, "nonfinite")
    assert f.level == "error" and f.steps == (36, 40)
    assert "between steps 36 and 40" in f.message


def test_grad_overflow_with_loss_scale_is_info():
    loss, grad, lr, _, _ = healthy_arrays(60)
    grad[[10, 30]] = np.inf
    run = make_run({metadata.LOSS: loss, metadata.GRAD_NORM: grad, metadata.LEARNING_RATE: lr,
                    metadata.LOSS_SCALE: np.full(60, 1024.0)})
    (f,) = findings(run, "nonfinite")
    assert f.level == "info" and "loss scaling" in f.message


# -- gradient explosion ----------------------------------------------------------------------------------------------
def _steady_grad(n=100, seed=0):
    rng = np.random.default_rng(seed)
    return 1.0 + rng.normal(0, 0.05, n)


def test_persistent_grad_spike_warns_with_step_range():
    grad = _steady_grad()
    grad[60:62] = 12.0           # steps 61-62, 12x the median before
    run = make_run({metadata.GRAD_NORM: grad})
    (f,) = findings(run, "grad_explosion")
    assert f.level == "warn" and f.steps == (61, 62)
    assert "Megatron-LM's spike factor is 10" in f.message


@pytest.mark.parametrize("rise", [2.0, 3.0, 5.0])
def test_rises_below_the_spike_factor_are_not_alarms(rise):
    """2-5x rises over the running level (ZClip's z-score sees them) are ordinary in small-batch training."""
    grad = _steady_grad()
    grad[60:63] = rise
    assert findings(make_run({metadata.GRAD_NORM: grad}), "grad_explosion") == []


def test_norm_growing_from_its_initial_value_while_the_loss_falls_is_not_an_explosion():
    """A tiny output layer at initialisation: the gradient norm grows 50-fold over the first steps and stays there
    while the loss falls (the model learns)."""
    n = 100
    grad = np.concatenate([np.geomspace(0.02, 1.0, 20), 1.0 + 0.05 * np.random.default_rng(0).normal(size=n - 20)])
    loss = np.geomspace(1.4, 0.2, n)
    assert findings(make_run({metadata.GRAD_NORM: grad, metadata.LOSS: loss}), "grad_explosion") == []


def test_a_new_level_while_the_loss_rises_is_an_explosion():
    n = 100
    grad = _steady_grad(n)
    grad[50:] = 40.0
    loss = np.concatenate([np.linspace(1.4, 0.8, 50), np.linspace(0.8, 3.0, 50)])
    (f,) = findings(make_run({metadata.GRAD_NORM: grad, metadata.LOSS: loss}), "grad_explosion")
    assert f.steps[0] == 51 and f.level == "warn"


def test_single_huge_spike_warns_by_ratio_to_running_max():
    grad = _steady_grad()
    grad[70] = 40.0
    (f,) = findings(make_run({metadata.GRAD_NORM: grad}), "grad_explosion")
    assert f.steps == (71, 71) and f.level == "warn"


def test_spike_between_points_seen_in_interval_max():
    steps = np.arange(10, 501, 10)
    grad = _steady_grad(steps.size)
    rows = [(s, 0.9, 1.0, 60.0 if s == 300 else 1.1, 10, 0) for s in steps]
    run = make_run({metadata.GRAD_NORM: (steps, grad)}, intervals={metadata.GRAD_NORM: rows})
    (f,) = findings(run, "grad_explosion")
    # The interval that holds the spike covers steps 291-300: the finding says so, not "between 300 and 300".
    assert f.steps == (291, 300) and "between steps 291 and 300 (the interval max" in f.message


def test_sustained_growth_is_explosion():
    grad = 0.5 * 1.15 ** np.arange(80)      # 0.5 -> ~35000
    (f,) = findings(make_run({metadata.GRAD_NORM: grad}), "grad_explosion")
    assert f.level == "error" and "grew" in f.message
    assert f.steps[1] == 80 and f.steps[0] < 20


# -- vanishing gradients ---------------------------------------------------------------------------------------------
def test_vanishing_global_grad_norm_warns_when_loss_not_converged():
    n = 100
    grad = np.logspace(0, -6, n)
    loss = 1.0 + 0.01 * np.random.default_rng(0).normal(size=n)
    (f,) = findings(make_run({metadata.LOSS: loss, metadata.GRAD_NORM: grad}), "vanishing_gradients")
    assert f.level == "warn" and f.steps[1] == n


def test_vanishing_grad_with_converged_loss_is_info():
    n = 100
    grad = np.logspace(0, -6, n)
    loss = np.logspace(0, -5, n)
    (f,) = findings(make_run({metadata.LOSS: loss, metadata.GRAD_NORM: grad}), "vanishing_gradients")
    assert f.level == "info"


def test_vanishing_per_layer_grad_norm_names_the_layer():
    run = healthy_run()
    layer = run.layers[metadata.GRAD_NORM_LAYERS]
    layer.values[:, 0] = np.logspace(-1, -7, layer.steps.size)
    (f,) = findings(run, "vanishing_gradients")
    assert f.level == "warn" and "encoder.0.weight" in f.message and f.tag == metadata.GRAD_NORM_LAYERS


# -- loss trends -----------------------------------------------------------------------------------------------------
def test_flat_loss_is_not_decreasing():
    loss = 1.1 + 0.02 * np.random.default_rng(0).normal(size=80)
    (f,) = findings(make_run({metadata.LOSS: loss}), "loss_not_decreasing")
    assert f.level == "warn" and f.steps == (1, 80)


def test_rising_loss_is_not_decreasing():
    loss = np.linspace(1.0, 3.0, 50)
    (f,) = findings(make_run({metadata.LOSS: loss}), "loss_not_decreasing")
    assert "rose" in f.message


def test_plateau_after_decrease_is_info():
    t = np.arange(200)
    loss = np.where(t < 80, 2.0 - 1.5 * t / 80.0, 0.5) + 0.001 * np.random.default_rng(0).normal(size=200)
    (f,) = findings(make_run({metadata.LOSS: loss}), "loss_plateau")
    assert f.level == "info" and f.steps[1] == 200 and f.steps[0] > 80


def test_oscillating_loss_warns():
    t = np.arange(120)
    loss = 1.0 + 0.8 * (t % 2) + 0.2 * np.exp(-t / 50)
    steps = np.arange(10, 1201, 10)
    rows = [(s, v, v, v, 10, 0) for s, v in zip(steps, loss)]     # the 10-step means oscillate too
    (f,) = findings(make_run({metadata.LOSS: (steps, loss)}, intervals={metadata.LOSS: rows}), "loss_oscillation")
    assert f.level == "warn" and f.steps == (610, 1200) and "interval means" in f.message


def test_megatron_spiky_loss_warns():
    loss, _, _, _, _ = healthy_arrays(100)
    loss[80] = 30.0              # > 10x the largest loss before it (about 2.3)
    (f,) = findings(make_run({metadata.LOSS: loss}), "loss_spike")
    assert f.level == "warn" and f.steps == (81, 81) and "Megatron" in f.message


def test_local_loss_spike_is_info():
    loss, _, _, _, _ = healthy_arrays(200)
    loss[150] = 2.0              # ~6x the recent level (~0.33), below 10x the initial loss
    (f,) = findings(make_run({metadata.LOSS: loss}), "loss_spike")
    assert f.level == "info" and f.steps == (151, 151)


# -- learning rate ---------------------------------------------------------------------------------------------------
def test_constant_learning_rate_warns():
    loss, grad, _, _, _ = healthy_arrays(100)
    run = make_run({metadata.LOSS: loss, metadata.LEARNING_RATE: np.full(100, 1e-3)})
    (f,) = findings(run, "lr_constant")
    assert f.level == "warn" and f.steps == (1, 100) and f.tag == metadata.LEARNING_RATE
    assert "schedule" in f.message


def test_zero_learning_rate_is_error():
    (f,) = findings(make_run({metadata.LEARNING_RATE: np.zeros(50)}), "lr_constant")
    assert f.level == "error"


def test_short_runs_do_not_judge_the_schedule():
    assert findings(make_run({metadata.LEARNING_RATE: np.full(3, 1e-3)}), "lr_constant") == []


def test_lr_change_without_update_change_warns():
    n = 100
    lr = np.where(np.arange(1, n + 1) <= 50, 1e-2, 1e-3)
    ratio_steps = np.arange(5, n + 1, 5)
    ratios = np.full((ratio_steps.size, 2), 1e-3)
    run = make_run({metadata.LEARNING_RATE: lr},
                   layers={metadata.UPDATE_RATIO_LAYERS: (["a.weight", "b.weight"], (ratio_steps, ratios))})
    (f,) = findings(run, "lr_update_mismatch")
    assert f.level == "warn" and f.steps[0] <= 50 < f.steps[1]


def test_lr_change_followed_by_updates_is_fine():
    n = 100
    lr = np.where(np.arange(1, n + 1) <= 50, 1e-2, 1e-3)
    ratio_steps = np.arange(5, n + 1, 5)
    ratios = np.where(ratio_steps[:, None] <= 50, 1e-2, 1e-3) * np.ones((1, 2))
    run = make_run({metadata.LEARNING_RATE: lr},
                   layers={metadata.UPDATE_RATIO_LAYERS: (["a.weight", "b.weight"], (ratio_steps, ratios))})
    assert findings(run, "lr_update_mismatch") == []


# -- layers ----------------------------------------------------------------------------------------------------------
def test_head_not_learning_is_named():
    run = healthy_run()
    ur = run.layers[metadata.UPDATE_RATIO_LAYERS]
    ur.values[:, ur.layers.index("head.weight")] = 2e-6
    (f,) = findings(run, "layer_not_learning")
    assert f.level == "warn" and "head.weight" in f.message and f.tag == metadata.UPDATE_RATIO_LAYERS
    assert "encoder.0.weight" not in f.message
    assert f.steps == (int(ur.steps[0]), int(ur.steps[-1]))


def test_all_layers_slow_means_lr_too_low():
    run = healthy_run()
    run.layers[metadata.UPDATE_RATIO_LAYERS].values[:] = 1e-6
    (f,) = findings(run, "layer_not_learning")
    assert "Every layer" in f.message


def test_frozen_weights_from_weight_norms():
    steps = np.arange(10, 101, 10)
    norms = np.stack([np.linspace(5, 6, steps.size), np.full(steps.size, 3.0)], axis=1)
    run = make_run({}, layers={metadata.WEIGHT_NORM_LAYERS: (["body.weight", "head.weight"], (steps, norms))})
    (f,) = findings(run, "layer_not_learning")
    assert "head.weight" in f.message and "body.weight" not in f.message


def test_weights_that_move_and_return_to_their_first_norm_are_learning():
    # A healthy Adam-trained attention projection (0220-healthy-plain-transformer of the health corpus): its norm
    # wandered by up to 1.6e-4 of itself and ended 5.9e-7 from where it began. Only a norm that never leaves its
    # first value is frozen.
    steps = np.arange(5, 101, 5)
    wander = 8.149051 + 0.0013 * np.sin(np.linspace(0, 2 * np.pi, steps.size))
    norms = np.stack([np.linspace(5, 6, steps.size), wander, np.full(steps.size, 3.0)], axis=1)
    run = make_run({}, layers={metadata.WEIGHT_NORM_LAYERS: (["body.weight", "block.q.weight", "head.weight"],
                                                             (steps, norms))})
    assert abs(wander[-1] - wander[0]) / wander[0] < 1e-6
    (f,) = findings(run, "layer_not_learning")
    assert f.layers == ("head.weight",)


def test_layer_updating_too_fast_warns_and_biases_are_ignored():
    run = healthy_run()
    ur = run.layers[metadata.UPDATE_RATIO_LAYERS]
    ur.values[:, ur.layers.index("encoder.1.weight")] = 0.4
    ur.values[:, ur.layers.index("head.bias")] = 0.9
    (f,) = findings(run, "layer_too_fast")
    assert "encoder.1.weight" in f.message and "head.bias" not in f.message


def test_per_layer_scalar_families_are_layers():
    # mindformers' TrainingStateMonitor writes one scalar per parameter under local_norm/<name>.
    steps = np.arange(1, 41)
    scalars = {"local_norm/a.weight": np.full(40, 0.5), "local_norm/b.weight": np.logspace(-1, -9, 40)}
    run = make_run(scalars)
    layer = run.layer_series("layer_grad_norm")
    assert layer.layers == ["a.weight", "b.weight"] and list(layer.steps) == list(steps)
    (f,) = findings(run, "vanishing_gradients")
    assert "b.weight" in f.message and f.tag == "local_norm"


# -- overfitting -----------------------------------------------------------------------------------------------------
def _overfit_run(eval_values, train=None):
    eval_steps = np.arange(10, 10 * len(eval_values) + 1, 10)
    n = int(eval_steps[-1])
    train = np.linspace(2.0, 0.1, n) if train is None else train
    return make_run({metadata.LOSS: train, metadata.EVAL_LOSS: (eval_steps, np.asarray(eval_values))})


def test_eval_loss_rising_while_train_falls_is_overfitting():
    run = _overfit_run([2.0, 1.5, 1.2, 1.0, 1.05, 1.12, 1.2, 1.3])
    (f,) = findings(run, "overfitting")
    assert f.level == "warn" and f.steps == (40, 80) and f.tag == metadata.EVAL_LOSS
    assert "step 40" in f.message


def test_overfitting_before_the_first_evaluation_is_not_a_broken_evaluation():
    """As in the corpus (64 samples, 30% wrong labels, points every 10 steps, an evaluation every 20): the train loss
    fell from about 1.5 to 0.36 by its third point, the eval loss was already past its best at the first evaluation
    and rose from there. The untrained model's loss is the first interval's mean (steps 1-10), not the median of
    the first three points (0.654, 30 steps into training), so the best eval loss beat it: overfitting."""
    steps = np.arange(10, 301, 10)
    train = np.concatenate([[1.095, 0.654, 0.358, 0.197, 0.135], np.geomspace(0.07, 0.008, 25)])
    means = np.concatenate([[1.466, 0.976, 0.54], train[3:] * 1.3])
    rows = [(s, v, m, 2 * m, 10, 0) for s, v, m in zip(steps, train, means)]
    ev = [1.216, 1.032, 1.044, 1.086, 1.121, 1.148, 1.17, 1.186, 1.198, 1.208, 1.215, 1.22, 1.223, 1.226, 1.227]
    run = make_run({metadata.LOSS: (steps, train), metadata.EVAL_LOSS: (np.arange(20, 301, 20), np.asarray(ev))},
                   intervals={metadata.LOSS: rows})
    assert findings(run, "train_eval_gap") == []
    (f,) = findings(run, "overfitting")
    assert f.level == "warn" and f.steps == (40, 300) and "Keep the checkpoint from step 40" in f.message
    points_only = make_run({metadata.LOSS: (steps, train),
                            metadata.EVAL_LOSS: (np.arange(20, 301, 20), np.asarray(ev))})
    assert [f.rule for f in findings(points_only) if f.rule in ("overfitting", "train_eval_gap")] == \
        ["train_eval_gap"]          # without the interval means the first points are all there is


def test_one_high_eval_point_is_not_overfitting():
    assert findings(_overfit_run([2.0, 1.5, 1.2, 1.0, 1.3, 0.95, 0.94, 0.93]), "overfitting") == []


def test_eval_and_train_rising_is_not_overfitting():
    run = _overfit_run([2.0, 1.5, 1.2, 1.0, 1.1, 1.2, 1.3, 1.4], train=np.concatenate(
        [np.linspace(2, 1, 40), np.linspace(1, 3, 40)]))
    assert findings(run, "overfitting") == []


# -- throughput ------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("wait,level", [(15.0, "warn"), (5.0, "info"), (0.5, None)])
def test_input_bound_levels(wait, level):
    run = make_run({metadata.STEP_TIME_MS: np.full(30, 50.0), metadata.DATA_WAIT_MS: np.full(30, wait)})
    found = findings(run, "input_bound")
    if level is None:
        assert found == []
    else:
        (f,) = found
        assert f.level == level and f.tag == metadata.DATA_WAIT_MS and f.steps == (1, 30)


def test_step_time_regression_with_flat_cpu_time_is_the_machines_load():
    """Wall time 2.4x slower for the last 40 points while the process's CPU time per step stays: other processes
    took the time (a note); the same slowdown with the CPU time per step grown with it: the warning."""
    step = np.concatenate([np.full(60, 50.0), np.full(40, 120.0)])
    cpu_steps = np.arange(10, 101, 10)
    flat = {metadata.STEP_TIME_MS: step, metadata.STEP_CPU_MS: (cpu_steps, np.full(cpu_steps.size, 40.0))}
    (f,) = findings(make_run(flat, dt=5.0), "step_time_regression")
    assert f.level == "info" and "other processes on the machine took the time" in f.message
    assert "(40 ms early, 40 ms then)" in f.message
    grown = np.where(cpu_steps > 60, 100.0, 40.0)
    run = make_run({metadata.STEP_TIME_MS: step, metadata.STEP_CPU_MS: (cpu_steps, grown)}, dt=5.0)
    assert [f.level for f in findings(run, "step_time_regression")] == ["warn"]


def test_step_time_regression_warns():
    step = np.concatenate([np.full(60, 50.0), np.full(40, 120.0)]) + np.random.default_rng(0).normal(0, 1, 100)
    (f,) = findings(make_run({metadata.STEP_TIME_MS: step}, dt=5.0), "step_time_regression")
    assert f.level == "warn" and 58 <= f.steps[0] <= 64 and f.steps[1] >= 97


def test_throughput_drop_is_a_regression_too():
    tp = np.concatenate([np.full(60, 1000.0), np.full(40, 400.0)])
    (f,) = findings(make_run({metadata.THROUGHPUT: tp}, dt=5.0), "step_time_regression")
    assert "Throughput" in f.message


# -- run state -------------------------------------------------------------------------------------------------------
def _state_run(idle, info, last_step=50):
    loss = np.linspace(2, 1, last_step)
    run = make_run({metadata.LOSS: loss}, info=info)
    last = run.scalars[metadata.LOSS].wall_times[-1]
    run.state = RunState(now=last + idle, last_event_time=last, first_event_time=T0, last_modified=last,
                         total_bytes=10_000)
    return run


def test_stalled_run_warns():
    run = _state_run(600, {"epochs": 2, "steps_per_epoch": 50})
    (f,) = findings(run, "run_stalled")
    assert f.level == "warn" and f.steps == (50, 50) and "step 50 of 100" in f.message
    assert findings(run, "run_unfinished") == []


def test_crashed_run_is_unfinished():
    run = _state_run(7200, {"epochs": 2, "steps_per_epoch": 50})
    (f,) = findings(run, "run_unfinished")
    assert f.level == "warn" and "50 of 100" in f.message
    assert findings(run, "run_stalled") == []


def test_finished_or_recent_runs_are_not_stalled():
    assert findings(_state_run(7200, {"epochs": 1, "steps_per_epoch": 50}), "run_stalled") == []
    assert findings(_state_run(7200, {"epochs": 1, "steps_per_epoch": 50}), "run_unfinished") == []
    assert findings(_state_run(20, {"epochs": 2, "steps_per_epoch": 50}), "run_stalled") == []


def test_unknown_length_stall_is_info_and_old_runs_are_quiet():
    (f,) = findings(_state_run(900, {}), "run_stalled")
    assert f.level == "info"
    assert findings(_state_run(3 * 86400, {}), "run_stalled") == []


def test_log_size_budget():
    run = _state_run(5, {"epochs": 10, "steps_per_epoch": 50})
    run.state.total_bytes = 6 * 1024 ** 3
    (f,) = findings(run, "log_size")
    assert f.level == "warn" and "budget" in f.message
    run.state.total_bytes = 1024 ** 3          # 1 GiB at step 50 of 500: projected 10 GiB
    (f,) = findings(run, "log_size")
    assert "will reach" in f.message
    run.state.total_bytes = 1000
    assert findings(run, "log_size") == []
    assert findings(run, "log_size", {"log_size": {"max_bytes": 5000}})[0].rule == "log_size"


def test_monitoring_overhead_from_the_monitors_cpu_time():
    steps = np.arange(10, 201, 10)
    step_time = (steps, np.full(steps.size, 20.0))
    heavy = {metadata.STEP_TIME_MS: step_time, metadata.MONITOR_CPU_MS: (steps, np.full(steps.size, 16.0))}
    (f,) = findings(make_run(heavy), "monitoring_overhead")
    assert f.level == "warn" and f.tag == metadata.MONITOR_CPU_MS and f.steps == (20, 200)
    assert "about 80% of the step time" in f.message and "recording took a median 16 ms of CPU time" in f.message
    assert "against steps of 20 ms, over 19 recorded intervals (steps 20-200)" in f.message
    cost = np.full(steps.size, 2.0)
    cost[0] = 500.0                                  # the first interval (start-up) is not judged
    cheap = {metadata.STEP_TIME_MS: step_time, metadata.MONITOR_CPU_MS: (steps, cost)}
    assert findings(make_run(cheap), "monitoring_overhead") == []
    few = {metadata.STEP_TIME_MS: step_time, metadata.MONITOR_CPU_MS: (steps[:3], np.full(3, 16.0))}
    assert findings(make_run(few), "monitoring_overhead") == []
    # A toy model: recording costs as much as its 5 ms steps, 5 ms per step: under the 10 ms floor.
    toy = {metadata.STEP_TIME_MS: (steps, np.full(steps.size, 5.0)),
           metadata.MONITOR_CPU_MS: (steps, np.full(steps.size, 5.0))}
    assert findings(make_run(toy), "monitoring_overhead") == []


def test_monitoring_overhead_ignores_slow_steps_from_a_loaded_machine():
    """Wall time is what other processes stretch: intervals whose slowest step is far above their fastest (the old
    measure) are no finding, with a cheap monitor in CPU time or without the monitor's CPU time (older runs)."""
    steps = np.arange(10, 201, 10)
    rows = [(s, 10.0, 28.0, 190.0, 10, 0) for s in steps]     # one step in ten 180 ms slower: load
    stretched = {metadata.STEP_TIME_MS: (steps, np.full(steps.size, 28.0))}
    assert findings(make_run(stretched, intervals={metadata.STEP_TIME_MS: rows}), "monitoring_overhead") == []
    cheap = dict(stretched, **{metadata.MONITOR_CPU_MS: (steps, np.full(steps.size, 0.4))})
    assert findings(make_run(cheap, intervals={metadata.STEP_TIME_MS: rows}), "monitoring_overhead") == []


def test_summary_collector_histograms_are_noted():
    run = make_run({"loss/auto": np.linspace(2, 1, 20)}, histograms=["fc1.weight/auto", "fc2.weight/auto"])
    (f,) = findings(run, "monitoring_overhead")
    assert f.level == "info" and "SummaryCollector" in f.message


# -- data presence ---------------------------------------------------------------------------------------------------
def test_no_scalars_and_no_loss():
    (f,) = findings(make_run({}), "no_loss")
    assert f.level == "warn" and "No scalars" in f.message
    (f,) = findings(make_run({"something/else": np.ones(10)}), "no_loss")
    assert f.level == "warn" and "something/else" in f.message
    (f,) = findings(make_run({metadata.LOSS: np.ones(2)}), "no_loss")
    assert f.level == "info"


def test_landscape_only_run_has_no_finding():
    run = make_run({}, info={"mindspore_holds": "1 loss landscape tag"})    # MindSpore's SummaryLandscape alone
    run.landscape_tags = ("landscape_[pca]",)
    assert findings(run) == []


def _write_landscape_run(run_dir, info=None):
    from tb_plugin_mindspore.writing import summary
    from tb_plugin_mindspore.landscape import landscape_record
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    z = np.array([[3.0, 2.0, 3.5], [2.5, 1.0, 2.0], [3.1, 2.2, 3.0]])
    record = landscape_record([-1, 0, 1], [-1, 0, 1], z, "random", center=(0, 0, 1.0))
    with SummaryWriter(run_dir) as w:
        if info is not None:
            w.run_info(info, step=0)
        w.value(summary.landscape("landscape/random", record), 5)


def test_check_reports_nothing_for_landscape_only_runs(tmp_path, capsys):
    """Landscapes written in this plugin's format in runs of their own (as compute_landscape(logdir=...) does, and
    with run information as convert writes it) next to a training run: check speaks only of the training run."""
    from tb_plugin_mindspore.commands import check as cli

    from health_helpers import write_event_run

    steps = np.arange(1, 101)
    write_event_run(tmp_path / "train", {metadata.LOSS: (steps, healthy_arrays(100)[0])})
    _write_landscape_run(tmp_path / "landscape")
    _write_landscape_run(tmp_path / "landscape_info", info={"source": "mindspore", "epochs": 1})
    assert cli.main(["check", str(tmp_path), "--format", "json"]) == 0
    runs = {r["run"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert "train" in runs and "landscape_info" in runs      # run information makes it a run the check lists
    for name in ("landscape", "landscape_info"):
        if name in runs:
            assert runs[name]["status"] == "ok" and runs[name]["findings"] == []


# -- aliases ---------------------------------------------------------------------------------------------------------
def test_mindformers_tags():
    loss, grad, _, _, _ = healthy_arrays(100)
    grad[50:53] = 50.0
    run = make_run({"loss": loss, "grad-norm": grad, "learning-rate": np.full(100, 5e-5),
                    "loss vs samples": loss})
    got = {f.rule: f for f in serious(run)}
    assert got["lr_constant"].tag == "learning-rate"
    assert got["grad_explosion"].tag == "grad-norm"


def test_summary_collector_loss_auto():
    loss = np.linspace(2, 1, 40)
    loss[25] = np.nan
    (f,) = findings(make_run({"loss/auto": loss}), "nonfinite")
    assert f.tag == "loss/auto" and f.steps[0] == 26 and f.level == "error"
    (f,) = findings(make_run({"loss/auto[:Scalar]": loss}), "nonfinite")
    assert f.tag == "loss/auto[:Scalar]"


def test_our_tags_win_over_plain_names():
    run = make_run({metadata.LOSS: np.linspace(2, 1, 20), "loss": np.ones(20)})
    assert run.tag_of("loss") == metadata.LOSS


def test_learning_rate_groups_are_found():
    run = make_run({metadata.learning_rate_group_tag(1): np.ones(10), metadata.learning_rate_group_tag(0):
                    np.ones(10)})
    assert [s.tag for s in run.learning_rate_groups()] == ["core/learning_rate/group0", "core/learning_rate/group1"]


# -- engine: config, report shape ------------------------------------------------------------------------------------
def test_config_overrides_thresholds_levels_and_disables():
    run = make_run({metadata.LEARNING_RATE: np.full(100, 1e-3)})
    assert findings(run, "lr_constant", {"lr_constant": {"enabled": False}}) == []
    assert findings(run, "lr_constant", {"lr_constant": {"min_points": "500"}}) == []
    (f,) = findings(run, "lr_constant", {"lr_constant": {"level": "error"}})
    assert f.level == "error"


@pytest.mark.parametrize("config", [
    {"no_such_rule": {}},
    {"lr_constant": {"no_such_threshold": 1}},
    {"lr_constant": {"min_points": "many"}},
    {"lr_constant": {"level": "fatal"}},
    {"layer_too_fast": {"ignore": "("}},
])
def test_bad_config_is_rejected(config):
    with pytest.raises(engine.ConfigError):
        engine.check_run(make_run({}), config)


def test_report_shape_and_status():
    bad = healthy_run(name="b_bad")
    bad.scalars[metadata.LOSS].values[100:] = np.nan
    good = healthy_run(name="a_good")
    rep = engine.report([bad, good])
    assert list(rep) == ["runs"]
    assert [r["run"] for r in rep["runs"]] == ["a_good", "b_bad"]
    assert [r["status"] for r in rep["runs"]] == ["ok", "error"]
    for r in rep["runs"]:
        assert set(r) == {"run", "status", "findings"}
        for f in r["findings"]:
            assert {"rule", "level", "message", "tag", "steps"} <= set(f) <= {
                "rule", "level", "message", "tag", "steps", "causes", "layers", "follow_ons", "caused_by"}
            assert f["level"] in ("info", "warn", "error") and isinstance(f["message"], str)
            assert isinstance(f["steps"], list) and len(f["steps"]) == 2 and f["steps"][0] <= f["steps"][1]
            assert all(isinstance(s, int) for s in f["steps"])
    levels = [f["level"] for f in rep["runs"][1]["findings"]]
    assert levels == sorted(levels, key=lambda lv: -rules.LEVEL_RANK[lv])
    json.dumps(rep, allow_nan=False)


def test_a_failing_rule_does_not_hide_the_others(monkeypatch):
    def broken(run, cfg):
        raise RuntimeError("boom")

    rule = rules.RULES_BY_ID["loss_spike"]
    monkeypatch.setattr(rules, "RULES", [rules.Rule(rule.id, rule.level, rule.source, rule.summary, rule.defaults,
                                                    broken)] + [r for r in rules.RULES if r.id != rule.id])
    monkeypatch.setattr(engine, "RULES", rules.RULES)
    run = make_run({metadata.LOSS: np.linspace(2, 1, 100), metadata.LEARNING_RATE: np.full(100, 1e-3)})
    assert [f.rule for f in serious(run)] == ["lr_constant"]


# -- robustness: any series, no exception, JSON-safe report ------------------------------------------------------------
_values = st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True, width=32),
                             st.sampled_from([0.0, 1e-30, 1e30])), min_size=0, max_size=60)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loss=_values, grad=_values, lr=_values, step=_values, wait=_values, ev=_values, layer=_values,
       idle=st.floats(0, 1e6))
def test_engine_never_raises_on_odd_series(loss, grad, lr, step, wait, ev, layer, idle):
    scalars = {}
    for tag, vals in ((metadata.LOSS, loss), (metadata.GRAD_NORM, grad), (metadata.LEARNING_RATE, lr),
                      (metadata.STEP_TIME_MS, step), (metadata.DATA_WAIT_MS, wait), (metadata.EVAL_LOSS, ev)):
        if vals:
            scalars[tag] = np.asarray(vals, dtype=np.float64)
    layers = {}
    if len(layer) >= 2:
        m = np.asarray(layer[: (len(layer) // 2) * 2], dtype=np.float64).reshape(-1, 2)
        layers = {metadata.UPDATE_RATIO_LAYERS: (["a", "b"], m), metadata.GRAD_NORM_LAYERS: (["a", "b"], m),
                  metadata.WEIGHT_NORM_LAYERS: (["a", "b"], m)}
    rows = [(i + 1, v, v, v, 3, 1 if not math.isfinite(v) else 0) for i, v in enumerate(step)]
    run = make_run(scalars, layers=layers, intervals={metadata.STEP_TIME_MS: rows} if rows else None,
                   info={"epochs": 3, "steps_per_epoch": 40})
    run.state.now += idle
    rules_ran = []
    for rule in rules.RULES:
        cfg, _, _ = engine._merged_config(rule, None)
        rules_ran.append(rule.fn(run, cfg))       # direct call: a rule must not raise
    rep = engine.report([run])
    json.dumps(rep, allow_nan=False)


def test_short_burst_of_machine_load_is_not_a_regression():
    step = np.full(100, 50.0)
    step[40:55] = 120.0                      # 15 points: under 20% of the run
    assert findings(make_run({metadata.STEP_TIME_MS: step}, dt=5.0), "step_time_regression") == []
    step = np.concatenate([np.full(60, 50.0), np.full(40, 120.0)])
    fast = make_run({metadata.STEP_TIME_MS: step}, dt=0.01)     # 40 slow points within 0.4 s of wall time
    assert findings(fast, "step_time_regression") == []


def test_a_long_run_is_checked_quickly():
    import time

    n = 100_000
    rng = np.random.default_rng(0)
    t = np.arange(n)
    steps = t + 1
    names = ["layer%d.weight" % i for i in range(50)]
    rows = [(s, 1.0, 1.0, 1.0, 1, 0) for s in steps]
    run = make_run({metadata.LOSS: 0.3 + 2 * np.exp(-t / 20000) + rng.normal(0, 0.03, n),
                    metadata.GRAD_NORM: 1 + rng.normal(0, 0.05, n), metadata.LEARNING_RATE: 1e-3 * np.cos(t / n),
                    metadata.STEP_TIME_MS: 50 + rng.normal(0, 1, n), metadata.DATA_WAIT_MS: np.ones(n)},
                   intervals={metadata.LOSS: rows, metadata.GRAD_NORM: rows},
                   layers={metadata.UPDATE_RATIO_LAYERS: (names, (steps[99::100], np.full((1000, 50), 1e-3)))})
    start = time.process_time()     # CPU time: what the rules cost, whatever else the machine runs
    report = engine.run_report(run)
    assert time.process_time() - start < 5.0
    assert report["status"] == "ok"


# -- issue 32: warm-up, loss scaling, small-batch noise -----------------------------------------------------------
def test_warmup_that_never_ends_warns_on_a_finished_run():
    n = 100
    lr = np.linspace(1e-5, 5e-5, n)                     # a warm-up of 2,000 steps in a 100-step run
    info = {"epochs": 1, "steps_per_epoch": n, "hparams": {"warmup_steps": 2000}}
    (f,) = findings(make_run({metadata.LEARNING_RATE: lr, metadata.LOSS: np.linspace(2, 1, n)}, info=info),
                    "lr_warmup_unfinished")
    assert f.level == "warn" and f.steps == (1, 100) and "warmup_steps=2000" in f.message
    half = make_run({metadata.LEARNING_RATE: lr[:30], metadata.LOSS: np.linspace(2, 1, 30)}, info=info)
    assert findings(half, "lr_warmup_unfinished") == []        # 30 of 100 steps: still warming up, rightly


def test_warmup_then_cosine_is_quiet():
    n = 100
    t = np.arange(n)
    lr = np.where(t < 10, 1e-3 * (t + 1) / 10, 1e-3 * 0.5 * (1 + np.cos(np.pi * (t - 10) / 90)))
    run = make_run({metadata.LEARNING_RATE: lr, metadata.LOSS: np.linspace(2, 1, n)},
                   info={"epochs": 1, "steps_per_epoch": n})
    assert findings(run, "lr_warmup_unfinished") == []


def _fp16_run(overflow, scale, n=60, freq=5):
    steps = np.arange(freq, freq * n + 1, freq)
    loss = np.linspace(1.4, 0.6, n)
    return make_run({metadata.LOSS: (steps, loss), metadata.OVERFLOW_STEPS: (steps, overflow),
                     metadata.LOSS_SCALE: (steps, scale), metadata.GRAD_NORM: (steps, np.ones(n))})


def test_occasional_overflow_steps_are_no_storm():
    overflow = np.zeros(60)
    overflow[[0, 1, 20, 40]] = [5, 2, 1, 1]              # the scale's search at the start, then now and then
    scale = np.full(60, 2.0 ** 17)
    assert findings(_fp16_run(overflow, scale), "overflow_storm") == []
    assert findings(_fp16_run(overflow, scale), "loss_scale_collapse") == []


def test_overflow_storm_is_an_error_and_explains_the_rest():
    overflow = np.zeros(60)
    overflow[30:] = 5                                     # every step skipped from step 151 to the end
    scale = np.full(60, 2.0 ** 16)
    scale[30:] = np.maximum(2.0 ** 16 / 2.0 ** (5 * np.arange(1, 31)), 1.0)
    run = _fp16_run(overflow, scale)
    found = engine.check_run(run)
    (storm,) = [f for f in found if f.rule == "overflow_storm"]
    assert storm.level == "error" and storm.steps == (151, 300)
    assert "150 of the 150 steps from step 151 to 300 overflowed" in storm.message
    assert "its floor" in storm.message
    nested = [f.rule for f in storm.follow_ons]
    assert "loss_scale_collapse" in nested and "loss_scale_collapse" not in [f.rule for f in found]
    (collapse,) = [f for f in storm.follow_ons if f.rule == "loss_scale_collapse"]
    assert collapse.level == "error" and collapse.caused_by["rule"] == "overflow_storm"


def test_batches_in_a_fixed_order_around_a_reached_plateau_are_a_note():
    """As in the corpus (batch 4, points every 2 steps, 16 batches an epoch in the same order, early stopping): each
    batch has its own loss, so the 2-step means repeat an 8-point pattern around a plateau that the run reached
    from its initial 1.3: no progress in the judged half, a large spread, but no oscillation to warn about."""
    pattern = np.array([0.71, 0.66, 0.38, 0.66, 0.5, 0.93, 0.29, 0.16])
    n = 64
    steps = np.arange(2, 2 * n + 1, 2)
    decay = 1.0 + 1.2 * np.exp(-np.arange(n) / 6.0)
    means = np.tile(pattern, n // 8) * decay
    means[:4] = [1.46, 1.77, 1.01, 0.92]
    rows = [(s, 0.7 * m, m, 1.3 * m, 2, 0) for s, m in zip(steps, means)]
    run = make_run({metadata.LOSS: (steps, means)}, intervals={metadata.LOSS: rows})
    (f,) = findings(run, "loss_oscillation")
    assert f.level == "info" and "scatters around a plateau" in f.message and "after it came down by" in f.message
    # The same scatter at the initial level (nothing learnt): the oscillation warning.
    flat = 2 * np.tile(pattern, n // 8) + 0.5
    rows = [(s, 0.7 * m, m, 1.3 * m, 2, 0) for s, m in zip(steps, flat)]
    run = make_run({metadata.LOSS: (steps, flat)}, intervals={metadata.LOSS: rows})
    assert [f.level for f in findings(run, "loss_oscillation")] == ["warn"]


def test_small_batch_noise_with_a_falling_trend_is_no_oscillation():
    """Single batches of 4: the recorded loss scatters by 70% of its level (a 20% spread of the initial loss, which
    the single-batch judgement called oscillation), but the interval means (10 steps each) fall steadily."""
    rng = np.random.default_rng(0)
    n = 100
    steps = np.arange(10, 10 * n + 1, 10)
    trend = 0.4 + 1.0 * np.exp(-np.arange(n) / 30.0)
    loss = trend * (1 + 0.7 * rng.normal(size=n))
    means = trend * (1 + 0.7 / np.sqrt(10) * rng.normal(size=n))
    rows = [(s, 0.5 * m, m, 2 * m, 10, 0) for s, m in zip(steps, means)]
    run = make_run({metadata.LOSS: (steps, np.abs(loss))}, intervals={metadata.LOSS: rows})
    assert findings(run, "loss_oscillation") == []
    single = make_run({metadata.LOSS: (steps, np.abs(loss))})        # the single-batch values alone
    half = np.abs(loss)[n // 2:]
    spread = detectors.robust_std(half - detectors.rolling_mean(half, 5))
    assert spread / np.median(np.abs(loss)[:10]) > 0.2               # what the old judgement saw
    assert [f.level for f in findings(single, "loss_oscillation")] == ["info"]    # without the means: a note
