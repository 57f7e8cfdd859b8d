"""``tb-mindspore convert``: real MindSpore files -> tfevents that TensorBoard's own EventAccumulator reads back."""

import argparse
import hashlib
import json
import os
import shutil
import struct
import sys

import numpy as np
import pytest
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.util import tensor_util

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "reading"))
import ms_fixture_lib  # noqa: E402

from tb_plugin_mindspore.commands import convert as conv  # noqa: E402
from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir  # noqa: E402


@pytest.fixture(scope="session")
def ms_fixtures(tmp_path_factory):
    """Real MindSpore summary files (made once per session, shared with tests/reading)."""
    return ms_fixture_lib.ms_fixtures(tmp_path_factory)


@pytest.fixture(scope="session")
def ms_logdir(ms_fixtures):
    return ms_fixture_lib.ms_logdir(ms_fixtures)

GUIDANCE = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0, ea.COMPRESSED_HISTOGRAMS: 0}


def accumulate(run_dir):
    acc = ea.EventAccumulator(str(run_dir), size_guidance=GUIDANCE)
    acc.Reload()
    return acc


def read_back(run_dir):
    """Everything in a converted run folder, in comparable form."""
    acc = accumulate(run_dir)
    tags = acc.Tags()
    out = {"scalars": {}, "histograms": {}, "tensors": {}, "images": {}, "landscapes": {}, "run_info": None}
    for tag in tags["scalars"]:
        out["scalars"][tag] = [(e.step, e.wall_time, e.value) for e in acc.Scalars(tag)]
    for tag in tags["images"]:
        out["images"][tag] = [(e.step, e.width, e.height, e.encoded_image_string) for e in acc.Images(tag)]
    for tag in tags["histograms"]:   # the classic format: back as [left, right, count] the way TensorBoard reads it
        out["histograms"][tag] = [(e.step, _buckets(e.histogram_value)) for e in acc.Histograms(tag)]
    for tag in tags["tensors"]:
        md = acc.SummaryMetadata(tag)
        events = acc.Tensors(tag)
        plugin = md.plugin_data.plugin_name
        if plugin == "histograms":
            out["histograms"][tag] = [(e.step, tensor_util.make_ndarray(e.tensor_proto).tolist()) for e in events]
        elif plugin == metadata.PLUGIN_NAME:
            content = metadata.parse_content(md.plugin_data.content)
            if content["kind"] == metadata.KIND_TENSOR:
                out["tensors"][tag] = [(e.step, _plain(tensor_util.make_ndarray(e.tensor_proto))) for e in events]
            elif content["kind"] == metadata.KIND_LANDSCAPE:
                out["landscapes"][tag] = [(e.step, json.loads(e.tensor_proto.string_val[0])) for e in events]
            elif content["kind"] == metadata.KIND_RUN_INFO:
                out["run_info"] = json.loads(events[-1].tensor_proto.string_val[0])
        assert md.data_class != 0, tag
    return out


def _buckets(h):
    """``[[left, right, count]]`` of a HistogramValue, as TensorBoard's loaders turn one into their k x 3 tensor."""
    limits = list(h.bucket_limit)
    lefts = [h.min] + limits[:-1]
    rights = limits[:-1] + [h.max]
    return [[float(a), float(b), float(c)] for a, b, c in zip(lefts, rights, h.bucket)]


def _plain(array):
    return {"dtype": str(array.dtype), "shape": list(array.shape), "values": array.tolist()}


def tree_digest(root):
    digest = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            st = os.stat(path)
            with open(path, "rb") as f:
                digest[os.path.relpath(path, root)] = (hashlib.sha256(f.read()).hexdigest(), st.st_size,
                                                       st.st_mode, st.st_mtime_ns)
    return digest


@pytest.fixture(scope="module")
def converted(ms_fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("converted")
    before = tree_digest(ms_fixtures.root)
    summary = conv.convert(ms_fixtures.root, out=str(out), progress=False)
    assert tree_digest(ms_fixtures.root) == before        # sources never touched
    return out, summary


def test_every_value_reads_back_through_event_accumulator(ms_fixtures, ms_logdir, converted):
    out, summary = converted
    assert summary["files"] == len(ms_fixtures.reference)
    assert summary["warnings"] == [] and summary["skipped_records"] == 0
    for run in ms_logdir.runs():
        back = read_back(os.path.join(out, run))
        assert back["scalars"] == {
            tag: [(s, w, v) for s, w, v in points] for tag, points in ms_logdir.scalars(run).items()}
        # The classic format holds one edge between two buckets: MindSpore's own left edge (left + width in
        # float32 of the previous bucket) may differ from it in the 7th digit.
        want = {tag: [(s, b) for s, _, b in series] for tag, series in ms_logdir.histograms(run).items()}
        assert back["histograms"].keys() == want.keys()
        for tag, series in want.items():
            assert [s for s, _ in back["histograms"][tag]] == [s for s, _ in series]
            for (_, got), (_, b) in zip(back["histograms"][tag], series):
                assert np.allclose(got, b, rtol=1e-6, atol=1e-7), (tag, got, b)
        assert back["images"] == {
            tag: [(s, im["width"], im["height"], im["encoded"]) for s, _, im in series]
            for tag, series in ms_logdir.images(run).items()}
        tensors = ms_logdir.tensors(run)
        assert back["tensors"].keys() == tensors.keys()
        for tag, series in tensors.items():
            assert back["tensors"][tag] == [(s, _plain(array)) for s, _, array in series]
        assert back["landscapes"] == {
            tag: [(s, json.loads(json.dumps(d))) for s, _, d in series]
            for tag, series in ms_logdir.landscapes(run).items()}
        lineage = ms_logdir.lineage(run)
        if lineage:
            assert back["run_info"]["mindspore_lineage"]["hparams"] == lineage["hparams"]
    counts = summary["values"]
    for kind, accessor in (("scalars", ms_logdir.scalars), ("histograms", ms_logdir.histograms),
                           ("images", ms_logdir.images), ("tensors", ms_logdir.tensors),
                           ("landscapes", ms_logdir.landscapes)):
        assert counts[kind] == sum(len(v) for run in ms_logdir.runs() for v in accessor(run).values()), kind
    assert counts["landscapes"] == 2 and counts["images"] == 8 and counts["tensors"] == 8


def test_converted_names_and_layout(ms_fixtures, converted):
    out, _ = converted
    for rel in ms_fixtures.reference:
        name = os.path.basename(rel).replace(".out.events.summary.", ".out.tfevents.")
        assert os.path.exists(os.path.join(out, os.path.dirname(rel), name)), rel
    assert os.path.exists(os.path.join(out, conv.STATE_NAME))


def test_lineage_hyperparameters_reach_tensorboards_hparams_tab(ms_fixtures, ms_logdir, converted):
    """The lineage's hyperparameters are an HParams session start info that TensorBoard's own reading parses."""
    from tensorboard.plugins.hparams import metadata as hparams_metadata

    out, _ = converted
    with_lineage = [run for run in ms_logdir.runs() if ms_logdir.lineage(run)]
    assert with_lineage == ["collector", "landscape"]
    for run in ms_logdir.runs():
        acc = accumulate(os.path.join(out, run))
        if run not in with_lineage:
            assert hparams_metadata.SESSION_START_INFO_TAG not in acc.Tags()["tensors"]
            continue
        md = acc.SummaryMetadata(hparams_metadata.SESSION_START_INFO_TAG)
        assert md.plugin_data.plugin_name == hparams_metadata.PLUGIN_NAME and md.data_class != 0
        info = hparams_metadata.parse_session_start_info_plugin_data(md.plugin_data.content)
        values = {name: getattr(v, v.WhichOneof("kind")) for name, v in info.hparams.items()}
        assert values == ms_logdir.lineage(run)["hparams"]
        assert info.start_time_secs == pytest.approx(ms_logdir.lineage(run)["wall_time"])
    given = ms_fixtures.expected["collector"]["lineage"]
    acc = accumulate(os.path.join(out, "collector"))
    info = hparams_metadata.parse_session_start_info_plugin_data(
        acc.SummaryMetadata(hparams_metadata.SESSION_START_INFO_TAG).plugin_data.content)
    hp = info.hparams
    assert hp["learning_rate"].number_value == pytest.approx(given["learning_rate"], rel=1e-7)
    assert hp["batch_size"].number_value == given["batch_size"] and hp["epoch"].number_value == given["epoch"]
    assert hp["optimizer"].string_value == given["optimizer"]
    assert hp["loss_function"].string_value == given["loss_function"]
    assert hp["note"].string_value == "fixture" and hp["seed"].number_value == 7


def test_tbparse_reads_the_scalars(ms_logdir, converted):
    from tbparse import SummaryReader

    out, _ = converted
    frame = SummaryReader(os.path.join(out, "record")).scalars
    want = ms_logdir.scalars("record")
    for tag, points in want.items():
        rows = frame[frame.tag == tag]
        assert rows.step.tolist() == [s for s, _, _ in points]
        assert rows.value.tolist() == pytest.approx([v for _, _, v in points])


def test_second_run_adds_nothing(ms_fixtures, converted):
    out, _ = converted
    before = tree_digest(out)
    again = conv.convert(ms_fixtures.root, out=str(out), progress=False)
    assert again["events"] == 0 and again["converted_files"] == 0
    assert tree_digest(out) == before


def _one_shot(src_root, tmp_path, name):
    out = tmp_path / name
    conv.convert(str(src_root), out=str(out), progress=False)
    return out


def test_incremental_conversion_of_a_growing_file(ms_fixtures, tmp_path):
    src = tmp_path / "src"
    run = ms_fixtures.copy_run("collector", src)
    reference = _one_shot(src, tmp_path, "whole")
    name = [n for n in os.listdir(run) if n.endswith("_MS")][0]
    data = open(os.path.join(run, name), "rb").read()
    partial = tmp_path / "partial"
    prun = partial / "collector"
    prun.mkdir(parents=True)
    shutil.copy(os.path.join(run, name[:-3] + "_lineage"), prun)
    out = tmp_path / "out"
    cuts = [0, 300, 301, len(data) // 2, len(data) - 5, len(data)]
    for a, b in zip(cuts, cuts[1:]):
        with open(prun / name, "ab") as f:
            f.write(data[a:b])
        result = conv.convert(str(partial), out=str(out), progress=False)
        assert result["warnings"] == []
    assert result["pending_bytes"] == 0
    assert read_back(out / "collector") == read_back(reference / "collector")


def test_interrupted_output_is_cut_back(ms_fixtures, tmp_path):
    src = tmp_path / "src"
    run = ms_fixtures.copy_run("record", src)
    reference = _one_shot(src, tmp_path, "whole")
    name = [n for n in os.listdir(run) if n.endswith("_MS")][0]
    data = open(os.path.join(run, name), "rb").read()
    os.truncate(os.path.join(run, name), len(data) // 2)
    out = tmp_path / "out"
    conv.convert(str(src), out=str(out), progress=False)
    # A run that wrote more output but died before saving its state leaves extra bytes behind.
    converted_file = out / "record" / conv.output_name(name)
    with open(converted_file, "ab") as f:
        f.write(b"half-written record from an interrupted run")
    with open(os.path.join(run, name), "ab") as f:
        f.write(data[len(data) // 2:])
    conv.convert(str(src), out=str(out), progress=False)
    assert read_back(out / "record") == read_back(reference / "record")


def test_removed_output_is_converted_again(ms_fixtures, tmp_path):
    src = tmp_path / "src"
    ms_fixtures.copy_run("ops", src)
    out = tmp_path / "out"
    first = conv.convert(str(src), out=str(out), progress=False)
    target = [n for n in os.listdir(out / "ops") if "tfevents" in n][0]
    os.remove(out / "ops" / target)
    again = conv.convert(str(src), out=str(out), progress=False)
    assert again["events"] == first["events"]
    assert read_back(out / "ops")["scalars"]["xsum"]


def test_default_out_is_next_to_the_logdir(ms_fixtures, tmp_path):
    src = tmp_path / "logs"
    ms_fixtures.copy_run("record", src)
    assert conv.default_out(str(src) + "/") == str(src) + "_tfevents"
    result = conv.convert(str(src), progress=False)
    assert result["out"] == str(src) + "_tfevents"
    assert read_back(tmp_path / "logs_tfevents" / "record")["scalars"]["acc"]
    # Converting into the logdir itself also works (the outputs are never taken for sources).
    inside = conv.convert(str(src), out=str(src), progress=False)
    assert inside["files"] == 1
    assert conv.convert(str(src), out=str(src), progress=False)["events"] == 0


def test_corrupted_source_is_converted_around(ms_fixtures, tmp_path):
    src = tmp_path / "src"
    run = ms_fixtures.copy_run("record", src)
    name = [n for n in os.listdir(run) if n.endswith("_MS")][0]
    path = os.path.join(run, name)
    data = bytearray(open(path, "rb").read())
    starts, off = [], 0
    while off < len(data):
        starts.append(off)
        off += 16 + struct.unpack_from("<Q", data, off)[0]
    data[starts[2] + 20] ^= 0xFF
    open(path, "wb").write(bytes(data))
    result = conv.convert(str(src), out=str(tmp_path / "out"), progress=False)
    assert result["skipped_records"] == 1
    assert result["warnings"] == [{"file": os.path.join("record", name), "offset": starts[2],
                                   "reason": "bad payload checksum; record skipped"}]
    assert [s for s, _, _ in read_back(tmp_path / "out" / "record")["scalars"]["acc"]] == [1, 3, 4, 5]


@pytest.mark.parametrize("case", ["missing", "file", "empty", "out_is_file"])
def test_clear_errors(tmp_path, ms_fixtures, case):
    logdir = tmp_path / "logs"
    out = None
    if case == "file":
        logdir.write_text("x")
    elif case == "empty":
        logdir.mkdir()
    elif case == "out_is_file":
        ms_fixtures.copy_run("ops", logdir)
        out = tmp_path / "out"
        out.write_text("x")
    with pytest.raises(conv.ConvertError) as info:
        conv.convert(str(logdir), out=None if out is None else str(out), progress=False)
    message = str(info.value)
    assert "\n" not in message
    expected = {"missing": "does not exist", "file": "is not a directory", "empty": "no MindSpore summary files",
                "out_is_file": "is not a directory"}[case]
    assert expected in message


@pytest.mark.parametrize("text", [
    "[" * 100000 + "]" * 100000,                                  # was RecursionError
    '{"version": 2, "files": {"a_MS": {"offset": "12"}}}',        # was TypeError deep in the conversion
    '{"version": 2, "files": {"a_MS": []}}',                     # was AttributeError
    '{"version": 2, "files": {"a_MS": {"first_steps": {"scalar": {"loss": "x"}}}}}',
    '{"version": 2, "files": {}, "runs": {"r": {"kinds": {"loss": 3}}}}',
    '{"version": true, "files": {}}', "\xff\xfe", "", "{", '{"files": {}}' + "x",
])
def test_a_damaged_conversion_state_is_a_one_line_error(tmp_path, ms_fixtures, capsys, text):
    src, out = tmp_path / "logs", tmp_path / "out"
    ms_fixtures.copy_run("record", src)
    out.mkdir()
    (out / conv.STATE_NAME).write_bytes(text.encode("utf-8", "surrogateescape") if text != "\xff\xfe"
                                        else b"\xff\xfe")
    assert conv.main(["convert", str(src), "--out", str(out), "--no-progress"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("tb-mindspore convert: error: the conversion state "), err
    assert "is damaged" in err[0] and "delete it to convert from scratch" in err[0]


def test_command_line(tmp_path, ms_fixtures, capsys):
    src = tmp_path / "logs"
    ms_fixtures.copy_run("record", src)
    assert conv.main(["convert", str(src), "--out", str(tmp_path / "o")]) == 0
    captured = capsys.readouterr()
    assert "1 of 1 files had new records" in captured.out and "scalars" in captured.out
    assert conv.main(["convert", str(tmp_path / "nope")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["tb-mindspore convert: error: %s does not exist" % (tmp_path / "nope")]
    with pytest.raises(SystemExit) as info:
        conv.main(["convert", "--help"])
    assert info.value.code == 0
    assert "LOGDIR" in capsys.readouterr().out


def test_add_convert_parser_plugs_into_another_cli(tmp_path, ms_fixtures):
    parser = argparse.ArgumentParser(prog="tb-mindspore")
    sub = parser.add_subparsers(dest="command")
    conv.add_convert_parser(sub)
    src = tmp_path / "logs"
    ms_fixtures.copy_run("ops", src)
    args = parser.parse_args(["convert", str(src), "--no-progress"])
    assert args.func(args) == 0
    assert os.path.isdir(str(src) + "_tfevents")


def test_progress_bar_goes_to_stderr(tmp_path, ms_fixtures, capsys):
    src = tmp_path / "logs"
    ms_fixtures.copy_run("record", src)
    conv.convert(str(src), progress=True)
    captured = capsys.readouterr()
    assert "converting [" in captured.err and "100%" in captured.err and captured.out == ""


def test_unreadable_source_is_reported_after_the_rest(tmp_path, ms_fixtures):
    src = tmp_path / "logs"
    ms_fixtures.copy_run("record", src)
    (src / "broken").mkdir()
    (src / "broken" / "events.out.events.summary.1.0.h_MS").symlink_to(tmp_path / "gone")
    result = conv.convert(str(src), out=str(tmp_path / "o"), progress=False)
    assert {"file": os.path.join("broken", "events.out.events.summary.1.0.h_MS"), "offset": None,
            "reason": "dangling symbolic link; skipped"} in result["warnings"]
    assert result["events"] > 0           # the readable run was still converted
    assert read_back(tmp_path / "o" / "record")["scalars"]["acc"]


def test_viewer_and_converter_agree_on_a_fresh_logdir(tmp_path, ms_fixtures):
    """The converted output is never mistaken for MindSpore files by the viewer."""
    src = tmp_path / "logs"
    ms_fixtures.copy_run("ops", src)
    conv.convert(str(src), out=str(src / "converted"), progress=False)
    viewer = MsLogdir(str(src))
    viewer.reload()
    assert viewer.runs() == ["ops"]


def test_convert_never_raises_on_damaged_sources(ms_fixtures):
    """Flipped bytes, garbage and cut files: convert skips what is damaged and reports it, never raises."""
    import tempfile

    from hypothesis import HealthCheck, given, settings, strategies as st

    rel = ms_fixtures.files("record")[0]
    base = open(ms_fixtures.path(rel), "rb").read()

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(st.data())
    def check(data):
        content = bytearray(base[:data.draw(st.integers(0, len(base)))])
        for _ in range(data.draw(st.integers(0, 10))):
            if content:
                content[data.draw(st.integers(0, len(content) - 1))] ^= data.draw(st.integers(1, 255))
        content += data.draw(st.binary(max_size=100))
        with tempfile.TemporaryDirectory() as root:
            os.mkdir(os.path.join(root, "logs"))
            with open(os.path.join(root, "logs", os.path.basename(rel)), "wb") as f:
                f.write(bytes(content))
            result = conv.convert(os.path.join(root, "logs"), out=os.path.join(root, "out"), progress=False)
            again = conv.convert(os.path.join(root, "logs"), out=os.path.join(root, "out"), progress=False)
            assert again["events"] == 0
            assert result["events"] <= 5
            read_back(os.path.join(root, "out"))

    check()
