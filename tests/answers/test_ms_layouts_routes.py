"""The MindSpore file layouts of ``test_ms_layouts`` through the plugin's routes and TensorBoard's own, with either
loader: a re-run and a resume read as one history, one name with several kinds kept apart (also once converted,
where TensorBoard's own tabs list every kind), NaN / Inf counts and exact constant quantiles in the distributions,
an evaluation-only run listed with its metrics, the lineage pipeline with its sampler."""

import shutil

import pytest

from tb_harness import App
from tb_plugin_mindspore.commands import convert as conv

RUNS = ("rerun", "resume", "kinds", "edge", "evalonly", "pipeline")


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, ms_layouts):
    root = tmp_path_factory.mktemp("layouts_routes") / "logs"
    root.mkdir()
    for run in RUNS:
        ms_layouts.copy_run(run, root)
    converted = tmp_path_factory.mktemp("layouts_converted")
    conv.convert(str(root / "kinds"), out=str(converted / "out"), progress=False)
    shutil.copytree(converted / "out", root / "converted_kinds")
    return root


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, logdir):
    a = App(logdir, load_fast=request.param)
    a.wait_for_runs([r for r in RUNS if r != "evalonly"])
    yield a
    a.close()


@pytest.mark.slow
def test_rerun_and_resume_read_as_one_history(app, ms_layouts):
    body = app.plugin("/scalars", run="rerun", tag="loss")
    assert [(p[0], p[2]) for p in body["points"]] == [(s, pytest.approx(v)) for s, v in
                                                      ms_layouts.expected["rerun"]["second"]["loss"]]
    rows = app.plugin("/histograms", run="resume", tag="w")["rows"]
    assert [r[0] for r in rows] == list(range(1, 16))
    info = app.plugin("/run_info", run="resume")
    first, second = info["ms_files"]
    assert first["superseded"][0]["from_step"] == 6 and first["superseded"][0]["by"] == second["file"]
    assert "resume" in app.plugin("/run_info")["runs"]          # several files: listed with the file table
    assert app.plugin("/status")["warnings"] == []


def test_one_name_with_several_kinds_in_the_tab_and_in_tensorboards_tabs(app):
    tiers = app.plugin("/tags", run="kinds")["runs"]["kinds"]
    entries = {(e["tag"], e["kind"]) for tier in tiers.values() for e in tier}
    assert {("y", "scalar"), ("y[:Histogram]", "histogram")} <= entries
    media = app.plugin("/media", run="kinds")["runs"]["kinds"]
    assert [e["tag"] for e in media["images"]] == ["x[:Image]"] and [e["tag"] for e in media["tensors"]] == ["x"]
    assert [s["step"] for s in app.plugin("/tensors", run="kinds", tag="x")["steps"]] == [1, 2, 3]
    # The converted copy: every kind is listed by TensorBoard's own plugins (none dropped for sharing a name).
    run = "converted_kinds"
    app.wait_for_runs([run])
    assert "y" in app.json("/data/plugin/scalars/tags")[run]
    assert "x[:Image]" in app.json("/data/plugin/images/tags")[run]
    assert "y[:Histogram]" in app.json("/data/plugin/histograms/tags")[run]
    assert [s["step"] for s in app.plugin("/tensors", run=run, tag="x")["steps"]] == [1, 2, 3]


def test_distributions_show_nonfinite_counts_and_exact_constants(app, ms_layouts):
    exp = ms_layouts.expected["edge"]
    ones = app.plugin("/histograms", run="edge", tag="ones")
    assert all(row[2] == 216 and row[3:] == [1.0] * 9 for row in ones["rows"])
    assert ones["nonfinite"] == [] and ones["nonfinite_steps"] == 0
    for tag in ("nanw", "infw"):
        body = app.plugin("/histograms", run="edge", tag=tag)
        assert body["nonfinite"] == [[e["step"], e["nan"], e["pos_inf"], e["neg_inf"]] for e in exp[tag]]
        assert body["nonfinite_steps"] == 3
        assert [r[2] for r in body["rows"]] == [e["count"] - e["nan"] - e["pos_inf"] - e["neg_inf"] for e in exp[tag]]
        assert [(r[3], r[-1]) for r in body["rows"]] == [(pytest.approx(e["min"]), pytest.approx(e["max"]))
                                                          for e in exp[tag]]


def test_eval_only_run_is_shown_with_its_metrics(app, ms_layouts):
    # No series: not in the runs with series (the run list, whose checkboxes pick series), but in Run info.
    assert "evalonly" not in app.plugin("/runs")["runs"]
    info = app.plugin("/run_info")["runs"]["evalonly"]
    assert info["sources"] == ["lineage_file"]
    assert info["lineage"]["hparams"]["metric/acc"] == pytest.approx(ms_layouts.expected["evalonly"]["acc"])
    assert "metric/acc" not in info["hparams"]      # a result, not a hyperparameter
    assert [f["kind"] for f in info["ms_files"]] == ["lineage"]
    health = {r["run"]: r for r in app.plugin("/health")["runs"]}
    assert health.get("evalonly", {"status": "ok"})["status"] == "ok"     # never told to record a run


def test_lineage_pipeline_has_operations_and_sampler(app):
    graph = app.plugin("/run_info", run="pipeline")["lineage"]["dataset_graph"]
    source = graph["children"][0]["children"][0]["children"][0]
    assert source["op_type"] == "ImageFolderDataset" and source["sampler"]["name"] == "RandomSampler"
    assert [op["name"] for op in graph["children"][0]["operations"]] == ["TypeCast"]
