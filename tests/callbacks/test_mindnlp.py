"""LoopMonitor on MindNLP 0.5's torch-style models (``mindtorch``, MindSpore 2.7, in their own environment): a small
BERT-style classifier built from a config, trained in a hand-written loop with a torch-style optimizer, recorded
with every tier under the Hugging Face parameter names; the values equal a reference computed on the host from the
parameters at every step. Also: such a model given where a ``mindspore.nn.Cell`` is needed fails at construction
in one line, and MindNLP's ``Trainer`` logs land in the data contract.

The child process (mindnlp_child.py) runs every scenario once for the module.
"""

import json
import math
import os

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import vocabulary

from cb_helpers import read_run, run_info
from extras import require_env, run_in_env

pytestmark = pytest.mark.slow

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mindnlp_child.py")
SCENARIOS = ["errors", "loop", "explicit", "trainer"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    require_env("mindnlp")
    out = tmp_path_factory.mktemp("mindnlp")
    r = run_in_env("mindnlp", [CHILD, out] + SCENARIOS, timeout=1500, cwd=str(out))
    done = [line.split()[1] for line in r.stdout.splitlines() if line.startswith("done ")]
    assert r.returncode == 0 and done == SCENARIOS, (r.stdout[-2000:], r.stderr[-4000:])
    return out, r.stderr


def layer_series(logdir, tag):
    """{step: {layer name: value}} of a per-layer vector tag."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    ea = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    ea.Reload()
    names = metadata.parse_content(ea.SummaryMetadata(tag).plugin_data.content)["layers"]
    return {e.step: dict(zip(names, tensor_util.make_ndarray(e.tensor_proto).tolist())) for e in ea.Tensors(tag)}


def test_torch_style_models_are_refused_where_a_cell_is_needed(runs):
    out, _ = runs
    with open(out / "errors" / "errors.json") as f:
        errors = json.load(f)
    assert errors["wrap"] == (
        "TypeError: MonitoredTrainCell.wrap needs a mindspore.nn.Cell, got BertForSequenceClassification (a "
        "torch-style module from transformers): train it in a hand-written loop recorded by LoopMonitor(logdir, "
        "optimizer, network=model) (from tb_mindspore_callbacks import LoopMonitor)")
    assert errors["loop_ms_optimizer"].startswith("ValueError: LoopMonitor got a mindspore.nn.Optimizer with "
                                                  "BertForSequenceClassification")
    assert errors["train_monitor"].startswith("ValueError: logdir must be the run folder (a path), got "
                                              "BertForSequenceClassification")


def test_every_tier_under_the_hugging_face_names(runs):
    out, log = runs
    logdir = out / "loop" / "run"
    with open(out / "loop" / "reference.json") as f:
        ref = json.load(f)
    steps = {r["step"]: r for r in ref["steps"]}
    assert ref["errors"] == 0
    scalars, tensors = read_run(logdir)
    info = run_info(tensors)[1]
    assert info["entry_point"] == "loop" and info["optimizer_kind"] == "torch-style"
    assert info["optimizer"] == "ElementwiseAdamW" and info["not_recorded"] == {}
    assert set(info["recorded"]) >= {"loss", "learning_rate", "grad_norm", "weight_norms", "update_ratio",
                                     "layer_grad_norm", "activations", "flight_recorder", "live_health"}
    # Core: loss, the global gradient norm, the learning rate applied per group (before the decay stepped after it).
    for step in (2, 4, 6):
        r = steps[step]
        assert dict(scalars[metadata.LOSS])[step] == pytest.approx(r["loss"], rel=1e-6)
        expected = math.sqrt(sum(v * v for v in r["grad_norm"].values()))
        assert dict(scalars[metadata.GRAD_NORM])[step] == pytest.approx(expected, rel=1e-4)
        for group, lr in enumerate(r["lrs"]):
            assert dict(scalars[metadata.learning_rate_group_tag(group)])[step] == pytest.approx(lr, rel=1e-6)
    # Debug and diagnostic tiers under named_parameters() names, equal to the host reference.
    grads = layer_series(logdir, metadata.GRAD_NORM_LAYERS)
    ratios = layer_series(logdir, metadata.UPDATE_RATIO_LAYERS)
    weights = layer_series(logdir, metadata.WEIGHT_NORM_LAYERS)
    name = "bert.encoder.layer.1.attention.self.query.weight"
    assert name in grads[4] and "classifier.weight" in grads[4]
    assert all("." in n and not n[0].isdigit() for n in grads[4])        # names, not UUIDs
    for step in (2, 4, 6):
        for layer in (name, "bert.embeddings.word_embeddings.weight", "classifier.weight"):
            assert grads[step][layer] == pytest.approx(steps[step]["grad_norm"][layer], rel=1e-4)
            assert ratios[step][layer] == pytest.approx(steps[step]["update_ratio"][layer], rel=1e-3)
            assert weights[step][layer] == pytest.approx(steps[step]["weight_norm"][layer], rel=1e-4)
    assert set(grads[2]) == {n for n in ref["order"] if n.endswith("weight") and "LayerNorm" not in n}
    # Activations of the model's top-level blocks, found by their module names.
    assert info["debug"]["activation_cells"] == ["bert.embeddings", "bert.encoder.layer.0", "bert.encoder.layer.1",
                                                 "bert.pooler", "classifier"]
    assert "does not record" not in log


def test_explicit_names_learning_rate_and_gradients(runs):
    out, _ = runs
    logdir = out / "explicit" / "run"
    with open(out / "explicit" / "reference.json") as f:
        ref = json.load(f)
    assert ref["errors"] == 0
    scalars, tensors = read_run(logdir)
    info = run_info(tensors)[1]
    assert info["optimizer"] is None and info["lr_config"]["kind"] == "dynamic"       # lr= a callable
    assert [v for _, v in scalars[metadata.LEARNING_RATE]] == pytest.approx([1e-3, 5e-4, 2.5e-4])
    grads = layer_series(logdir, metadata.GRAD_NORM_LAYERS)
    layer = "m.bert.encoder.layer.0.intermediate.dense.weight"
    for r in ref["steps"]:
        assert grads[r["step"]][layer] == pytest.approx(r["grad_norm"][layer], rel=1e-4)
    assert info["not_recorded"] == {} and "weight_norms" in info["recorded"]


def test_mindnlp_trainer_recorded_by_the_trainer_callback(runs):
    """MindNLP's Trainer with ``TrainerMonitor`` (the transformers TrainerCallback of ``torch_style``): every tier
    under the Hugging Face names, the loss as the Trainer logged it."""
    out, log = runs
    logdir = out / "trainer" / "ours"
    scalars, tensors = read_run(logdir)
    with open(out / "trainer" / "trainer_logs.json") as f:
        logs = json.load(f)["logs"]
    logged = {r["step"]: r["loss"] for r in logs if "loss" in r}
    (iv,) = [v for s, v in tensors[metadata.interval_tag(metadata.LOSS)] if s == 2]
    assert iv[1] == pytest.approx(logged[2], abs=1e-3)            # the mean over the Trainer's logging window
    assert len(scalars[metadata.GRAD_NORM]) == 2 and scalars[metadata.GRAD_NORM][0][1] > 0
    assert [s for s, _ in scalars[metadata.EVAL_LOSS]] == [4]
    grads = layer_series(logdir, metadata.GRAD_NORM_LAYERS)
    assert "bert.encoder.layer.1.attention.self.query.weight" in grads[2]
    assert metadata.UPDATE_RATIO_LAYERS in tensors and metadata.WEIGHT_NORM_LAYERS in tensors
    assert "recording failed" not in log


def test_mindnlp_trainer_logs_are_placed_by_the_contract(runs):
    out, _ = runs
    scalars, _ = read_run(out / "trainer" / "hf")
    assert [s for s, _ in scalars["train/loss"]] == [2, 4]
    for tag in ("train/loss", "train/learning_rate"):
        assert vocabulary.tier_of(tag) == metadata.CORE
    for tag in ("train/epoch", "train/train_runtime", "train/total_flos"):
        assert tag in scalars and vocabulary.tier_of(tag) == metadata.OTHER
    assert np.isfinite([v for _, v in scalars["train/loss"]]).all()
