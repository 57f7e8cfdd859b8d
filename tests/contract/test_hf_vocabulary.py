"""The Hugging Face Trainer's tags in the data contract: its quantities are ours (``train/loss`` is drawn in the
``core/loss`` chart), its bookkeeping stays out of Core, per-layer ``grad_norm/<name>`` is one heatmap. Checked on
the tags written by transformers' own Trainer and TensorBoard callback (PyTorch environment)."""

import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import vocabulary
from tb_plugin_mindspore.health import series

from hf_logs import hf_trainer_logs  # noqa: F401  (fixture)
from tb_harness import App


def test_hf_quantities_are_ours_and_bookkeeping_is_other():
    assert vocabulary.same_as("train/loss") == metadata.LOSS
    assert vocabulary.same_as("train/learning_rate") == metadata.LEARNING_RATE
    assert vocabulary.same_as("train/grad_norm") == metadata.GRAD_NORM
    assert vocabulary.same_as("eval/loss") == metadata.EVAL_LOSS
    assert vocabulary.same_as("eval/accuracy") == metadata.EVAL_METRIC_PREFIX + "accuracy"
    for tag in ("eval/runtime", "train/epoch", "train/total_flos", "core/loss", "train/lr", "loss"):
        assert vocabulary.same_as(tag) is None, tag
    for tag in vocabulary.HF_BOOKKEEPING:
        assert vocabulary.tier_of(tag) == metadata.OTHER, tag
    assert vocabulary.tier_of("grad_norm/bert.encoder.layer.0.output.dense.weight") == metadata.DEBUG
    # The health rules read the Trainer's loss and gradient norm when a run has none of ours.
    assert "train/loss" in series.ALIASES["loss"] and "train/grad_norm" in series.ALIASES["grad_norm"]


@pytest.mark.slow
def test_a_trainer_run_lists_our_quantities_and_one_heatmap(hf_trainer_logs):  # noqa: F811
    app = App(hf_trainer_logs)
    try:
        app.wait_for_runs(["hf"])
        app.wait_for_last_step("hf", "train/loss", 8)
        tiers = app.plugin("/tags", run="hf")["runs"]["hf"]
        core = {e["tag"]: e for e in tiers["core"]}
        assert sorted(core) == ["train/grad_norm", "train/learning_rate", "train/loss"]
        assert core["train/loss"]["same_as"] == metadata.LOSS and core["train/loss"]["display_name"] == "loss"
        other = {e["tag"] for e in tiers["other"]}
        assert {"train/epoch", "train/total_flos", "train/train_runtime", "eval/runtime"} <= other
        diagnostic = {e["tag"]: e for e in tiers["diagnostic"]}
        assert diagnostic["eval/loss"]["same_as"] == metadata.EVAL_LOSS
        (family,) = [e for e in tiers["debug"] if e["kind"] == "layers"]
        assert family["tag"] == "grad_norm/*" and family["layers"] == 17
        assert not [e for e in tiers["debug"] if e["kind"] == "scalar" and "family" not in e]
        matrix = app.plugin("/layers", run="hf", tag="grad_norm/*")
        assert "bert.encoder.layer.1.output.dense.weight" in matrix["layers"] and len(matrix["steps"]) == 8
    finally:
        app.close()
