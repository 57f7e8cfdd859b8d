"""The PyTorch recorder: a plain loop with ``TorchMonitor`` and Hugging Face's ``Trainer`` with ``TrainerMonitor``
write the MindSpore callbacks' data contract (checked against values computed by hand from the same training and
against the Trainer's own logs), read back by the plugin's own reader; Hugging Face's TensorBoard logs are read
through the tag vocabulary. The trainings run in the torch environment (``scripts/extras.sh torch``)."""

import json

import numpy as np
import pytest

from extras import run_in_env
from tb_plugin_mindspore.health.sources import runs_from_logdir

HERE = __import__("pathlib").Path(__file__).resolve().parent


def _read(run_dir):
    (run,) = runs_from_logdir(str(run_dir))
    return run


def _child(script, out):
    proc = run_in_env("torch", [HERE / script, out], timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="module")
def loop_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("torch_loop") / "run"
    _child("loop_child.py", out)
    return _read(out), json.loads((out / "expected.json").read_text())


def _at(series, steps):
    index = {int(s): i for i, s in enumerate(series.steps)}
    return np.array([series.values[index[int(s)]] for s in steps])


@pytest.mark.slow
def test_loop_core_tier_matches_the_training(loop_run):
    run, exp = loop_run
    assert exp["mindspore_imported"] is False
    steps = [5, 10, 15, 20, 25, 30, 35, 40]
    assert list(run.scalars["core/loss"].steps) == steps
    np.testing.assert_allclose(_at(run.scalars["core/loss"], steps), [exp["loss"][str(s)] for s in steps],
                               rtol=1e-6)
    # The gradient norm is the one before clip_grad_norm_ (0.05), taken at the end of the backward pass.
    grad = _at(run.scalars["core/grad_norm"], steps)
    np.testing.assert_allclose(grad, [exp["grad_norm"][str(s)] for s in steps], rtol=1e-5)
    assert grad.min() > 0.05
    # Two groups: the applied LR of each (the warm-up schedule before its step), group 0 also as core/learning_rate.
    for g in (0, 1):
        np.testing.assert_allclose(_at(run.scalars["core/learning_rate/group%d" % g], steps),
                                   [exp["lr"][str(s)][g] for s in steps], rtol=1e-6)
    np.testing.assert_allclose(_at(run.scalars["core/learning_rate"], [5]), [exp["lr"]["5"][0]], rtol=1e-6)
    # Interval statistics of every step between two points.
    band = run.intervals["core/loss"]
    losses = np.array([exp["loss"][str(s)] for s in range(6, 11)])
    i = list(band.steps).index(10)
    assert (band.min[i], band.max[i], band.count[i]) == pytest.approx((losses.min(), losses.max(), 5), rel=1e-6)
    assert band.mean[i] == pytest.approx(losses.mean(), rel=1e-6)
    grads = run.intervals["core/grad_norm"]
    assert grads.max[list(grads.steps).index(40)] == pytest.approx(
        max(exp["grad_norm"][str(s)] for s in range(36, 41)), rel=1e-5)
    assert "core/step_time_ms" in run.scalars and "core/throughput" in run.scalars


def test_loop_layer_series_match_the_training(loop_run):
    run, exp = loop_run
    names = exp["names"]
    for tag, key in (("debug/layer_grad_norm", "layer_grad_norm"), ("debug/update_ratio", "update_ratio"),
                     ("diagnostic/layer_weight_norm", "layer_weight_norm")):
        series = run.layers[tag]
        assert series.layers == names
        assert list(series.steps) == [10, 20, 30, 40]
        for row, step in zip(series.values, series.steps):
            np.testing.assert_allclose(row, exp[key][str(step)], rtol=2e-4, err_msg=tag)
    np.testing.assert_allclose(_at(run.scalars["diagnostic/weight_norm"], [10, 40]),
                               [exp["weight_norm"]["10"], exp["weight_norm"]["40"]], rtol=1e-5)


def test_loop_run_info_says_what_was_recorded(loop_run):
    run, _ = loop_run
    info = run.info
    assert info["framework"] == "pytorch" and info["entry_point"] == "loop"
    assert info["grad_norm_source"] == "backward pass, before clipping"
    assert info["optimizer"] == "AdamW" and info["lr_config"]["kind"] == "schedule"
    assert [g["weight_decay"] for g in info["optimizer_groups"]] == [0.1, 0.0]
    assert run.run_end["status"] == "finished" and run.run_end["step"] == 40


@pytest.mark.slow
def test_trainer_callback_records_the_contract_and_reads_the_trainers_logs(tmp_path):
    _child("trainer_child.py", tmp_path)
    logs = json.loads((tmp_path / "trainer_logs.json").read_text())
    assert logs["mindspore_imported"] is False
    train = {d["step"]: d for d in logs["logs"] if "grad_norm" in d}
    evals = {d["step"]: d for d in logs["logs"] if "eval_loss" in d}
    assert sorted(train) == [5, 10, 15, 20] and sorted(evals) == [10, 20]
    ours = _read(tmp_path / "ours")
    steps = sorted(train)
    # Our gradient norm is the Trainer's own (before its clipping at max_grad_norm=0.1), our LR the one it logs.
    np.testing.assert_allclose(_at(ours.scalars["core/grad_norm"], steps), [train[s]["grad_norm"] for s in steps],
                               rtol=1e-5)
    assert min(train[s]["grad_norm"] for s in steps) > 0.1
    np.testing.assert_allclose(_at(ours.scalars["core/learning_rate"], steps),
                               [train[s]["learning_rate"] for s in steps], rtol=1e-6)
    # The Trainer logs the mean loss of the window: the mean of our interval over the same steps.
    loss_band = ours.intervals["core/loss"]
    np.testing.assert_allclose([loss_band.mean[list(loss_band.steps).index(s)] for s in steps],
                               [train[s]["loss"] for s in steps], atol=6e-5)
    np.testing.assert_allclose(_at(ours.scalars["diagnostic/eval_loss"], [10, 20]),
                               [evals[10]["eval_loss"], evals[20]["eval_loss"]], rtol=1e-6)
    assert {"debug/layer_grad_norm", "debug/update_ratio", "diagnostic/layer_weight_norm"} <= set(ours.layers)
    assert ours.layers["debug/update_ratio"].layers[0] == "bert.embeddings.word_embeddings.weight"
    assert ours.info["entry_point"] == "transformers.Trainer"
    assert ours.info["trainer_summary"]["train_loss"] > 0
    # Hugging Face's own TensorBoard callback: train/loss, train/grad_norm, train/learning_rate, eval/loss are read
    # as the loss, gradient norm, learning rate and eval loss.
    (hf,) = runs_from_logdir(str(tmp_path / "hf"))
    for quantity, tag in (("loss", "train/loss"), ("grad_norm", "train/grad_norm"),
                          ("learning_rate", "train/learning_rate"), ("eval_loss", "eval/loss")):
        assert hf.get(quantity).tag == tag
    np.testing.assert_allclose(_at(hf.get("grad_norm"), steps), [train[s]["grad_norm"] for s in steps], rtol=1e-6)
