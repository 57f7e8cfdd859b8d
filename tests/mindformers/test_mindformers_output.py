"""What mindformers 2.x itself writes, read as its users expect: its own callback classes (``MFLossMonitor``,
``TrainingStateMonitor``, ``CheckpointMonitor``, ``TopkBiasBalanceCallback``) and writers on a small network on CPU,
in the mindformers environment (``mf_child.py``; skipped with the command that builds it when it is missing); the
output read by this checkout's tab (TensorBoard's own WSGI app, either loader) and ``check``."""

import json
import os
import sys

import pytest

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, TESTS)

from extras import require_env, run_in_env  # noqa: E402
from tb_harness import App  # noqa: E402
import warm  # noqa: E402

pytestmark = pytest.mark.slow

CHILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mf_child.py")
STEPS = 12
PARAMS = ("embed.weight", "layers.0.proj.weight", "layers.1.proj.weight", "head.weight")


@pytest.fixture(scope="module")
def mf_output(tmp_path_factory):
    require_env("mindformers")
    out = tmp_path_factory.mktemp("mindformers")
    proc = run_in_env("mindformers", [CHILD, out, STEPS], timeout=900, cwd=str(out))
    assert proc.returncode == 0, proc.stderr[-4000:]
    summary = json.loads(proc.stdout.strip().splitlines()[-1])
    assert summary["stopped"], summary      # mindformers stopped the training at the abnormal global norm
    return out / "output", summary


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, mf_output):
    output, _ = mf_output
    log = output / "log" / "rank_0" / "info.log"
    a = App(output / "tensorboard", load_fast=request.param,
            extra_argv=["--mindspore_mindformers_log", "rank_0=%s" % log])
    a.wait_for_runs(["rank_0"])
    a.wait_for_last_step("rank_0", "loss", STEPS)
    yield a
    a.close()


def _entries(app, run="rank_0"):
    tiers = app.plugin("/tags", run=run)["runs"][run]
    return {e["tag"]: dict(e, tier=tier) for tier, entries in tiers.items() for e in entries}


def test_one_run_with_every_tag_in_its_tier(app):
    assert app.plugin("/runs")["runs"] == ["rank_0"]            # head and expert key folders folded into it
    entries = _entries(app)
    for tag in ("loss", "learning-rate", "grad-norm", "loss-scale", "iteration-time", "throughput", "batch-size"):
        assert entries[tag]["tier"] == "core", tag
        assert entries[tag]["samples_tag"] == tag + "_vs_samples", tag   # the twin is an x axis, not a chart
    assert not [t for t in entries if t.endswith("_vs_samples")]
    assert entries["weight_norm"]["tier"] == "diagnostic"
    assert entries["weight_stable_rank/*"]["kind"] == "layers" and entries["weight_stable_rank/*"]["layers"] == 4
    assert entries["weight_eigenvalue/*"]["tier"] == "diagnostic"
    assert entries["adam_m_norm/*"]["tier"] == "debug" and entries["adam_v_norm/*"]["layers"] == 8
    assert entries["max_attention_logit/*"]["kind"] == "table" and entries["max_attention_logit/*"]["columns"] == 4
    assert entries["expert_load/*"]["kind"] == "table" and entries["expert_load/*"]["column"] == "expert"
    assert not [t for t in entries if "/head_" in t or "/ep_" in t]
    assert not any(e["tier"] == "other" for e in entries.values()), [t for t, e in entries.items()
                                                                      if e["tier"] == "other"]


def test_tables_and_the_samples_axis(app):
    table = app.plugin("/table", run="rank_0", tag="expert_load/*")
    assert {"layers.0.moe", "layers.1.moe"} <= set(table["rows"])
    step = app.plugin("/table", run="rank_0", tag="expert_load/*", step=5)["step"]
    row = app.plugin("/table", run="rank_0", tag="expert_load/*", step=5)["values"][table["rows"].index("layers.1.moe")]
    # TopkBiasBalanceCallback wrote (expert + 1) * (layer + 1) + step: what the network answered at that step.
    assert step == 5 and row == [float((e + 1) * 2 + step) for e in range(4)]
    heads = app.plugin("/table", run="rank_0", tag="max_attention_logit/*")
    # TrainingStateMonitor's add_scalars folders, and MaxLogitsMonitor's log lines (the PyNative trainer)
    assert {"decoder.layers.0.self_attention.core_attention", "decoder.layers.1.self_attention.core_attention",
            "decoder.layers.0.self_attention", "decoder.layers.1.self_attention"} == set(heads["rows"])
    first = heads["values"][heads["rows"].index("decoder.layers.0.self_attention.core_attention")]
    assert len(first) == 4 and all(v is not None and v >= 0 for v in first)
    logged = heads["values"][heads["rows"].index("decoder.layers.1.self_attention")]
    assert logged == [float(h + heads["step"] + 10) for h in range(4)]
    samples = app.plugin("/samples", run="rank_0")
    assert samples["tag"] == "loss" and samples["twin"] == "loss_vs_samples"
    assert [p[1] for p in samples["points"]] == [p[0] * 4 for p in samples["points"]]   # global batch 4


def test_the_pynative_log_is_read_into_the_run(app):
    entries = _entries(app)
    assert entries["local_norm/*"]["kind"] == "layers" and entries["local_norm/*"]["layers"] == 2
    points = app.plugin("/scalars", run="rank_0", tag="local_loss")["points"]
    assert [p[0] for p in points] == list(range(1, STEPS + 1))
    assert points[0][2] == pytest.approx((2.9 + 2.7) / 2)            # mean over the step's micro steps
    rows = app.plugin("/table", run="rank_0", tag="expert_load/*")["rows"]
    assert {"decoder.0", "decoder.1"} <= set(rows)                     # MoeMonitor's tokens per expert


def test_health_reads_mindformers_files_and_configuration(app):
    (run,) = app.plugin("/health", run="rank_0")["runs"]
    by_rule = {f["rule"]: f for f in run["findings"]}
    abnormal = by_rule["abnormal_global_norm"]
    assert abnormal["level"] == "error" and abnormal["steps"] == [STEPS, STEPS]
    assert abnormal["checkpoint"] == "tiny_rank_0-1_10.ckpt"          # the last healthy one before step 12
    text = json.dumps(run)
    assert "add gradient clipping" not in text.lower() and "Add gradient clipping" not in text
    assert "lr_constant" not in by_rule and "run_stalled" not in by_rule and "no_loss" not in by_rule


@pytest.mark.slow
def test_check_says_the_same(mf_output):
    output, _ = mf_output
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "check", str(output / "tensorboard"),
                     "--format", "json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    (run,) = json.loads(proc.stdout)["runs"]
    assert run["run"] == "rank_0"
    rules = {f["rule"]: f for f in run["findings"]}
    assert rules["abnormal_global_norm"]["checkpoint"] == "tiny_rank_0-1_10.ckpt"
    assert "add gradient clipping" not in proc.stdout.lower()
