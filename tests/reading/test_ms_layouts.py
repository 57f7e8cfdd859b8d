"""Every real MindSpore file layout reads right: several files in one run (a re-run, a resume), one name used for
several kinds, NaN / Inf and constant histograms, eval-only and lineage-only runs, MindInsight's file names, the
lineage's whole dataset pipeline. All files are written by MindSpore 2.10 itself (``ms_make_fixtures.py``, the
"layouts" set), in the reader, in ``tb-mindspore convert`` and in ``tb-mindspore check``."""

import json
import os
import shutil

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea

from tb_plugin_mindspore import cli, metadata
from tb_plugin_mindspore.commands import convert as conv
from tb_plugin_mindspore.answers import histograms
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir, created_at, exact_buckets, file_kind

GUIDANCE = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0, ea.COMPRESSED_HISTOGRAMS: 0}


def loaded(root):
    logdir = MsLogdir(root)
    for _ in range(100):
        if not logdir.reload().pending:
            break
    return logdir


@pytest.fixture(scope="module")
def layouts(ms_layouts):
    return loaded(ms_layouts.root)


def copy_runs(fixtures, dest, *runs):
    for run in runs:
        fixtures.copy_run(run, dest)
    return str(dest)


def approx_points(points):
    return [(s, pytest.approx(v, rel=1e-6)) for s, v in points]


# -- several files in one run ------------------------------------------------------------------------------------
def test_a_rerun_into_the_same_folder_replaces_the_first_run(layouts, ms_layouts):
    exp = ms_layouts.expected["rerun"]
    loss = layouts.scalars("rerun")["loss"]
    assert [(s, v) for s, _, v in loss] == approx_points(exp["second"]["loss"])   # not 1.0 and 11.0 at step 1
    hist = layouts.histograms("rerun", stats=True)["w"]
    assert [(s, n["min"], n["max"]) for s, _, _, n in hist] == [tuple(x) for x in exp["second"]["w"]]
    first, second = layouts.files("rerun")
    assert created_at(os.path.basename(first["file"])) < created_at(os.path.basename(second["file"]))
    assert first["superseded"] == [{"by": second["file"], "from_step": 1, "to_step": 10, "points": 20,
                                    "tags": ["loss", "w"]}]
    assert second["superseded"] == [] and second["steps"] == [1, 10]


def test_a_resume_keeps_the_first_files_steps_before_the_resume(layouts, ms_layouts):
    exp = ms_layouts.expected["resume"]
    loss = [(s, v) for s, _, v in layouts.scalars("resume")["loss"]]
    assert loss == approx_points(exp["first"]["loss"][:5] + exp["second"]["loss"])
    # A tag the resumed run no longer writes is kept whole; histograms come from both files, not only the last.
    assert [s for s, _, _ in layouts.scalars("resume")["only_first"]] == list(range(1, 11))
    hist = layouts.histograms("resume", stats=True)["w"]
    want = exp["first"]["w"][:5] + exp["second"]["w"]
    assert [(s, n["min"]) for s, _, _, n in hist] == [(s, lo) for s, lo, _ in want]
    first, second = layouts.files("resume")
    assert first["superseded"] == [{"by": second["file"], "from_step": 6, "to_step": 10, "points": 10,
                                    "tags": ["loss", "w"]}]
    assert layouts.stats("resume")["superseded_points"] == 10


def test_files_are_ordered_by_creation_time_not_by_name(tmp_path, ms_layouts):
    """Names that sort against the creation order (another prefix), and two files of the same second (the first
    record's wall time decides): the later file still wins."""
    src = os.path.join(ms_layouts.root, "rerun")
    older, newer = sorted(os.listdir(src), key=created_at)
    run = tmp_path / "named" / "run"
    run.mkdir(parents=True)
    shutil.copy(os.path.join(src, older), run / older.replace("events.", "zzz.", 1))
    shutil.copy(os.path.join(src, newer), run / newer.replace("events.", "aaa.", 1))
    same = tmp_path / "same" / "run"
    same.mkdir(parents=True)
    t = created_at(older)
    shutil.copy(os.path.join(src, older), same / ("b.out.events.summary.%d.0.hostb_MS" % t))
    shutil.copy(os.path.join(src, newer), same / ("a.out.events.summary.%d.0.hosta_MS" % t))
    expected = approx_points(ms_layouts.expected["rerun"]["second"]["loss"])
    for root in (tmp_path / "named", tmp_path / "same"):
        logdir = loaded(str(root))
        assert [(s, v) for s, _, v in logdir.scalars("run")["loss"]] == expected
        assert logdir.files("run")[0]["superseded"][0]["points"] == 20


def test_check_sees_no_false_spike_in_a_rerun(ms_layouts, capsys):
    status = cli.main(["check", os.path.join(ms_layouts.root), "--format", "json"])
    assert status == 0
    runs = {r["run"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    for run in ("rerun", "resume"):
        rules = {f["rule"] for f in runs[run]["findings"]}
        assert not rules & {"loss_spike", "loss_oscillation", "loss_not_decreasing"}, runs[run]
    evalonly = runs["evalonly"]
    assert evalonly["status"] == "ok"
    (finding,) = [f for f in evalonly["findings"] if f["rule"] == "no_loss"]
    assert finding["level"] == "info" and "acc=" in finding["message"] and "TrainMonitor" not in finding["message"]


# -- one name, several kinds --------------------------------------------------------------------------------------
def test_one_name_with_several_kinds_is_kept_apart(layouts, ms_layouts):
    tags = layouts.tags("kinds")
    assert tags["scalars"] == ["y"] and tags["histograms"] == ["y[:Histogram]"]
    assert tags["tensors"] == ["x"] and tags["images"] == ["x[:Image]"]
    exp = ms_layouts.expected["kinds"]
    assert [(s, v) for s, _, v in layouts.scalars("kinds")["y"]] == approx_points([(s, v) for s, v, _ in exp])
    tensors = layouts.tensors("kinds")["x"]
    assert [a.ravel().tolist() for _, _, a in tensors] == [pytest.approx(x) for _, _, x in exp]
    assert [s for s, _, _ in layouts.images("kinds")["x[:Image]"]] == [1, 2, 3]
    assert [s for s, _, _ in layouts.histograms("kinds")["y[:Histogram]"]] == [1, 2, 3]
    assert metadata.display_name("x[:Image]") == "x" and metadata.display_name("y[:Histogram]") == "y"


def test_convert_keeps_every_kind_and_tensorboard_loads_every_run(tmp_path, ms_layouts):
    out = tmp_path / "out"
    result = conv.convert(ms_layouts.root, out=str(out), progress=False)
    assert result["warnings"] == []
    acc = ea.EventAccumulator(str(out / "kinds"), size_guidance=GUIDANCE)
    acc.Reload()
    tags = acc.Tags()
    assert tags["scalars"] == ["y"] and tags["images"] == ["x[:Image]"]
    assert set(tags["tensors"]) == {"x"} and tags["histograms"] == ["y[:Histogram]"]   # classic histograms
    plugins = {tag: acc.SummaryMetadata(tag).plugin_data.plugin_name for tag in tags["tensors"]}
    assert plugins == {"x": metadata.PLUGIN_NAME}
    # Re-run and resume: what TensorBoard reads back is what the tab shows.
    reader = loaded(ms_layouts.root)
    for run in ("rerun", "resume"):
        acc = ea.EventAccumulator(str(out / run), size_guidance=GUIDANCE)
        acc.Reload()
        for tag, points in reader.scalars(run).items():
            assert [(e.step, e.value) for e in acc.Scalars(tag)] == [(s, pytest.approx(v)) for s, _, v in points]
        assert [e.step for e in acc.Histograms("w")] == [s for s, _, _ in reader.histograms(run)["w"]]


def test_convert_converts_an_earlier_file_again_when_a_later_one_supersedes_it(tmp_path, ms_layouts):
    src = os.path.join(ms_layouts.root, "resume")
    older, newer = sorted(os.listdir(src), key=created_at)
    logdir = tmp_path / "logs"
    (logdir / "resume").mkdir(parents=True)
    shutil.copy(os.path.join(src, older), logdir / "resume" / older)
    out = tmp_path / "out"
    conv.convert(str(logdir), out=str(out), progress=False)
    shutil.copy(os.path.join(src, newer), logdir / "resume" / newer)     # the resumed run starts writing
    conv.convert(str(logdir), out=str(out), progress=False)
    acc = ea.EventAccumulator(str(out / "resume"), size_guidance=GUIDANCE, purge_orphaned_data=False)
    acc.Reload()
    exp = ms_layouts.expected["resume"]
    assert [(e.step, e.value) for e in acc.Scalars("loss")] == approx_points(exp["first"]["loss"][:5]
                                                                            + exp["second"]["loss"])
    again = conv.convert(str(logdir), out=str(out), progress=False)
    assert again["events"] == 0
    # An output written by the first version of the converter (interleaved re-runs) is converted again.
    state_path = out / conv.STATE_NAME
    state = json.loads(state_path.read_text())
    state["version"] = 1
    state_path.write_text(json.dumps(state))
    again = conv.convert(str(logdir), out=str(out), progress=False)
    assert again["values"]["scalars"] == 5 + 10 + 10 and json.loads(state_path.read_text())["version"] == conv.STATE_VERSION
    acc = ea.EventAccumulator(str(out / "resume"), size_guidance=GUIDANCE, purge_orphaned_data=False)
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss")] == list(range(1, 16))


# -- histograms: NaN / Inf counts, constant tensors ---------------------------------------------------------------
def test_histogram_nonfinite_counts_and_exact_constant_quantiles(layouts, ms_layouts):
    exp = ms_layouts.expected["edge"]
    hists = layouts.histograms("edge", stats=True)
    for tag in ("ones", "nanw", "infw"):
        for (step, _, buckets, numbers), want in zip(hists[tag], exp[tag]):
            assert step == want["step"]
            assert (numbers["nan_count"], numbers["pos_inf_count"], numbers["neg_inf_count"]) == (
                want["nan"], want["pos_inf"], want["neg_inf"])
            assert sum(c for _, _, c in buckets) == want["count"] - want["nan"] - want["pos_inf"] - want["neg_inf"]
            qs, _ = histograms.quantiles(buckets, (0.0, 1.0))
            assert qs.tolist() == pytest.approx([want["min"], want["max"]])
    qs, count = histograms.quantiles(hists["ones"][0][2])
    assert count == 216 and qs.tolist() == [1.0] * len(histograms.QUANTILES)   # not 1.0-1.011


def test_exact_buckets_cases():
    assert exact_buckets([[0.5, 0.9, 0], [1.0, 1.05, 4], [1.05, 1.5, 0]], {"min": 1.0, "max": 1.0}) == [[1.0, 1.0, 4]]
    assert exact_buckets([[0, 1, 2], [1, 2, 3]], {"min": 0.2, "max": 1.5}) == [[0.2, 1, 2], [1, 1.5, 3]]
    # Statistics that disagree with the buckets, or none: the buckets stay as written.
    assert exact_buckets([[0, 1, 2]], {"min": 5.0, "max": 6.0}) == [[0, 1, 2]]
    assert exact_buckets([[0, 1, 2]], {"min": float("nan"), "max": 1.0}) == [[0, 1, 2]]
    assert exact_buckets([[0, 1, 0]], {"min": 0.5, "max": 0.5}) == [[0, 1, 0]]


# -- eval-only and lineage-only runs, the dataset pipeline ---------------------------------------------------------
def test_eval_only_run_holds_its_metrics(layouts, ms_layouts):
    exp = ms_layouts.expected["evalonly"]
    assert "evalonly" in layouts.runs()
    assert all(not tags for tags in layouts.tags("evalonly").values())
    hp = layouts.lineage("evalonly")["hparams"]
    assert hp["metric/acc"] == pytest.approx(exp["acc"]) and hp["valid_dataset_size"] == exp["valid_dataset_size"]
    (only,) = layouts.files("evalonly")
    assert only["kind"] == "lineage" and only["superseded"] == []


def test_lineage_dataset_pipeline_keeps_map_operations_and_sampler(layouts, ms_layouts):
    exp = ms_layouts.expected["pipeline"]
    node, chain = layouts.lineage("pipeline")["dataset_graph"], []
    while node:
        chain.append(node)
        node = (node.get("children") or [None])[0]
    assert [n["op_type"] for n in chain] == ["Batch", "Map", "Map", "ImageFolderDataset"]
    ops = [op["name"] for n in reversed(chain) for op in n.get("operations", [])]
    assert [name for name in ops if name in exp["operations"]] == exp["operations"]
    assert chain[1]["operations"][0]["params"] == {"data_type": "int32"}
    sampler = chain[-1]["sampler"]
    assert sampler["name"] == exp["sampler"] and sampler["params"]["num_samples"] == exp["num_samples"]


# -- MindInsight's file names --------------------------------------------------------------------------------------
def test_file_names_mindinsight_accepted():
    assert file_kind("events.out.events.summary.1600000000.0.host_MS") == "summary"
    assert file_kind("test.summary.1600000000") == "summary"
    assert file_kind("summary.1600000000") == "summary"
    assert file_kind("out.events.summary.1600000000_lineage") == "lineage"
    assert file_kind("events.out.events.summary.1600000000.0.host_lineage") == "lineage"
    for name in ("events.summary.1600000000_explain", "events.out.tfevents.1600000000.host", "summary.json",
                 "my_summary.1.txt", "model.ckpt", "summary.tmp", "readme_summary"):
        assert file_kind(name) is None, name


def test_mindinsight_named_files_are_read_converted_and_checked(tmp_path, ms_layouts, capsys):
    src = os.path.join(ms_layouts.root, "pipeline")
    (ms_name,) = [n for n in os.listdir(src) if n.endswith("_MS")]
    (lineage_name,) = [n for n in os.listdir(src) if n.endswith("_lineage")]
    run = tmp_path / "logs" / "job"
    run.mkdir(parents=True)
    shutil.copy(os.path.join(src, ms_name), run / "train.summary.1600000000")
    shutil.copy(os.path.join(src, lineage_name), run / "out.events.summary.1600000000_lineage")
    reference = loaded(ms_layouts.root)
    logdir = loaded(str(tmp_path / "logs"))
    assert logdir.runs() == ["job"]
    assert logdir.scalars("job") == reference.scalars("pipeline")
    assert logdir.lineage("job")["dataset_graph"] == reference.lineage("pipeline")["dataset_graph"]
    result = conv.convert(str(tmp_path / "logs"), out=str(tmp_path / "out"), progress=False)
    assert result["files"] == 2 and result["values"]["scalars"] == len(reference.scalars("pipeline")["loss/auto"])
    assert cli.main(["check", str(tmp_path / "logs"), "--format", "json"]) == 0
    runs = json.loads(capsys.readouterr().out)["runs"]
    assert [r["run"] for r in runs] == ["job"]
    assert not any(f["rule"] == "no_loss" and f["level"] == "warn" for f in runs[0]["findings"])


def test_a_later_lineage_file_overrides_an_earlier_one(tmp_path, ms_layouts, ms_fixtures):
    """Two runs' lineage files in one folder (a re-run): the later file's values win, whatever the read order."""
    def lineage_file(root, run):
        (name,) = [n for n in os.listdir(os.path.join(root, run)) if n.endswith("_lineage")]
        return os.path.join(root, run, name)

    collector = lineage_file(ms_fixtures.root, "collector")      # 2 epochs
    pipeline = lineage_file(ms_layouts.root, "pipeline")         # 1 epoch, an image pipeline
    for older, newer, epochs in ((collector, pipeline, 1), (pipeline, collector, 2)):
        run = tmp_path / ("case%d" % epochs) / "run"
        run.mkdir(parents=True)
        shutil.copy(older, run / "events.out.events.summary.1600000100.0.h_lineage")
        shutil.copy(newer, run / "events.out.events.summary.1600000200.0.h_lineage")
        lineage = loaded(str(run.parent)).lineage("run")
        assert lineage["hparams"]["epoch"] == epochs
        # The dataset graph is the later file's whole (the image pipeline's only when it is the later one).
        assert ("ImageFolderDataset" in json.dumps(lineage["dataset_graph"])) == (epochs == 1)


def test_graph_only_run_is_reported_as_such_by_check(tmp_path, ms_layouts, capsys):
    """SummaryRecord(network=...) that recorded no value yet: the file holds the graph only."""
    from tb_plugin_mindspore.io import records
    from tb_plugin_mindspore.sources import ms_files
    from tb_plugin_mindspore.io import ms_proto

    (name,) = [n for n in os.listdir(os.path.join(ms_layouts.root, "kinds")) if n.endswith("_MS")]
    payloads, _, _ = ms_files.MsFile(os.path.join(ms_layouts.root, "kinds", name)).read_payloads(1 << 20)
    kept = [p for p in payloads if ms_proto.EventView.FromString(p).WhichOneof("what") != "summary"]
    (tmp_path / "graph").mkdir()
    (tmp_path / "graph" / name).write_bytes(b"".join(records.frame(p) for p in kept))
    assert cli.main(["check", str(tmp_path), "--format", "json"]) == 0
    (run,) = json.loads(capsys.readouterr().out)["runs"]
    assert run["status"] == "ok" and "computational graph" in run["findings"][0]["message"]


def test_a_deleted_file_or_run_is_forgotten(tmp_path, ms_layouts):
    copy_runs(ms_layouts, tmp_path, "resume", "edge")
    logdir = loaded(str(tmp_path))
    assert logdir.runs() == ["edge", "resume"]
    older = min(os.listdir(tmp_path / "resume"), key=created_at)
    os.remove(tmp_path / "resume" / older)                  # the first run's file removed: the resumed one stays
    logdir.reload()
    assert [s for s, _, _ in logdir.scalars("resume")["loss"]] == list(range(6, 16))
    assert len(logdir.files("resume")) == 1
    shutil.rmtree(tmp_path / "edge")
    logdir.reload()
    assert logdir.runs() == ["resume"]
