"""One run per training: rotated ``part_N`` folders (event files and ``*_MS`` files) and tensorboardX's add_scalars
key folders fold into their run in the tab (either loader), in ``check`` (one process and the pool) and in the
health rules; the mapping itself on names alone."""

import json
import os
import sys

import pytest

from tb_harness import App
from tb_plugin_mindspore.commands import logdir_check
from tb_plugin_mindspore.sources import run_fold

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "contract"))

import logdirs  # noqa: E402
import warm  # noqa: E402


def test_parts_and_key_folders_fold_by_name_and_tag():
    fold = run_fold.RunFold({
        "rot/part_0": (), "rot/part_1": (), "rot/part_10": (), "rot/part_2": (),
        "mf/rank_0": (), "mf/rank_0/max_attention_logit/layers.0.attn/head_3": {"max_attention_logit/layers.0.attn"},
        "mf/rank_0/expert_load/l0/ep_1": {"expert_load/l0"},
        "plain/run": {"loss"},                       # one tag that is not its folder path: a run of its own
        "loss/seed1": {"other"},
        "part_0": (), "t/k": {"t"},                  # parts of the logdir itself; a key folder of the root run
    })
    assert fold.logical_runs() == [".", "loss/seed1", "mf/rank_0", "plain/run", "rot"]
    assert [m.run for m in fold.members["rot"]] == ["rot/part_0", "rot/part_1", "rot/part_2", "rot/part_10"]
    heads = [m for m in fold.members["mf/rank_0"] if m.main_tag == "max_attention_logit/layers.0.attn"]
    assert fold.logical_tag(heads[0], "max_attention_logit/layers.0.attn") == "max_attention_logit/layers.0.attn/head_3"
    assert {m.run for m in fold.members["."]} == {"part_0", "t/k"}
    assert not fold.trivial and fold.folded("rot") and not fold.folded("plain/run")
    assert run_fold.RunFold({"a": {"loss"}, "b/c": {"x", "y"}}).trivial


def test_spec_roots_fold_into_the_entry_run():
    fold = run_fold.RunFold({"exp1/part_0": (), "exp1/t/k": {"t"}, "exp1/.": ()}, root_names=["exp1"])
    assert set(fold.members) == {"exp1/."}


def test_check_pool_keeps_the_folders_of_one_training_together():
    groups = logdir_check.fold_groups({"rot/part_0": [], "rot/part_1": [], "mf/rank_0": [],
                                       "mf/rank_0/max/x/head_1": [], "other": []})
    assert sorted(groups) == ["mf/rank_0", "other", "rot"]
    assert sorted(groups["rot"]) == ["rot/part_0", "rot/part_1"]


def _write_logdir(root):
    from tensorboardX import SummaryWriter

    for p in range(3):                                    # a size-rotated run of event files, in part folders
        with SummaryWriter(os.path.join(root, "rot", "part_%d" % p)) as w:
            for s in range(p * 10 + 1, p * 10 + 11):
                w.add_scalar("loss", 1.0 / s, s)
    logdirs.write_ms(os.path.join(root, "msrot", "part_0"), 1_700_000_000, range(1, 11))   # *_MS parts
    logdirs.write_ms(os.path.join(root, "msrot", "part_1"), 1_700_000_100, range(11, 21))
    with SummaryWriter(os.path.join(root, "mf", "rank_0")) as w:   # mindformers' writer: add_scalars key folders
        for s in range(1, 6):
            w.add_scalar("loss", 2.0 / s, s)
            for layer in range(4):
                w.add_scalars("max_attention_logit/layers.%d.attn" % layer,
                              {"head_%d" % h: float(layer * 10 + h + s) for h in range(4)}, s)
    return root


@pytest.fixture(scope="module")
def folded_logdir(tmp_path_factory):
    pytest.importorskip("tensorboardX")
    return _write_logdir(str(tmp_path_factory.mktemp("fold")))


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, folded_logdir):
    a = App(folded_logdir, load_fast=request.param)
    a.wait_for_runs(["rot", "msrot", "mf/rank_0"])
    yield a
    a.close()


def test_the_tab_lists_one_run_per_training(app):
    import time

    deadline = time.time() + 60
    while True:   # the fold settles once every key folder holds its tag
        runs = app.plugin("/runs")["runs"]
        if runs == ["mf/rank_0", "msrot", "rot"] or time.time() > deadline:
            break
        time.sleep(0.3)
    assert runs == ["mf/rank_0", "msrot", "rot"]
    app.wait_for_last_step("rot", "loss", 30)
    points = app.plugin("/scalars", run="rot", tag="loss")["points"]
    assert [p[0] for p in points] == list(range(1, 31))            # one line across the parts, in order
    assert [p[0] for p in app.plugin("/scalars", run="msrot", tag="loss/auto")["points"]] == list(range(1, 21))
    tags = app.plugin("/tags", run="mf/rank_0")["runs"]["mf/rank_0"]
    names = {e["tag"] for entries in tags.values() for e in entries}
    assert {"loss", "max_attention_logit/*"} <= names          # the heads fold into one layer x head table
    assert not any(n.startswith("max_attention_logit/layers") for n in names)
    head = app.plugin("/scalars", run="mf/rank_0", tag="max_attention_logit/layers.3.attn/head_2")["points"]
    assert [(p[0], p[2]) for p in head] == [(s, 32.0 + s) for s in range(1, 6)]
    batch = app.plugin("/scalars_batch", run=["rot", "mf/rank_0"], tag=["loss"])
    assert len(batch["series"]) == 2 and not batch["missing"]
    table = app.plugin("/table", run="mf/rank_0", tag="max_attention_logit/*")
    assert table["rows"] == ["layers.%d.attn" % i for i in range(4)] and table["column"] == "head"
    assert table["step"] == 5 and table["steps"] == [1, 2, 3, 4, 5]
    assert table["values"][3] == [35.0, 36.0, 37.0, 38.0]          # layer 3, heads 0-3 at step 5
    assert app.plugin("/table", run="mf/rank_0", tag="max_attention_logit/*", step=2)["values"][0] == [2.0, 3.0, 4.0,
                                                                                                      5.0]


def test_health_judges_the_training_not_its_folders(app):
    report = app.plugin("/health")
    assert sorted(r["run"] for r in report["runs"]) == ["mf/rank_0", "msrot", "rot"]
    for run in report["runs"]:
        assert not any(f["rule"] == "no_loss" for f in run["findings"]), run


def _check(logdir, *extra):
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "check", str(logdir), "--format", "json",
                     *extra], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


@pytest.mark.slow
def test_check_reads_one_run_per_training_in_one_process_and_in_the_pool(folded_logdir):
    assert [r["run"] for r in _check(folded_logdir)["runs"]] == ["mf/rank_0", "msrot", "rot"]
    # 16 key folders and more: checked by the pool, whose shares keep each training's folders together.
    assert len(logdir_check.run_folders(folded_logdir)) >= logdir_check.MIN_PARALLEL_RUNS
    pooled = logdir_check.report(folded_logdir, jobs=2)
    assert [r["run"] for r in pooled["runs"]] == ["mf/rank_0", "msrot", "rot"]


def test_convert_writes_the_folders_of_one_training_back_as_one_run(folded_logdir, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / "out"
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "convert", folded_logdir, "--out", str(out),
                     "--no-progress", "--fold-event-files"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "2 run(s) of several folders written as one" in proc.stdout
    assert sorted(p for p in os.listdir(out) if not p.startswith(".")) == ["mf", "msrot", "rot"]
    rank = EventAccumulator(str(out / "mf" / "rank_0"), size_guidance={"scalars": 0})
    rank.Reload()
    tags = rank.Tags()["scalars"]
    assert "loss" in tags and "max_attention_logit/layers.3.attn/head_2" in tags
    assert [(e.step, e.value) for e in rank.Scalars("max_attention_logit/layers.3.attn/head_2")] == [
        (s, 32.0 + s) for s in range(1, 6)]
    assert not [d for d, _, _ in os.walk(out / "mf" / "rank_0") if "head_" in d]     # no folder per head
    rot = EventAccumulator(str(out / "rot"), size_guidance={"scalars": 0})
    rot.Reload()
    assert [e.step for e in rot.Scalars("loss")] == list(range(1, 31))
