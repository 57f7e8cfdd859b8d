"""The landscapes / landscape routes on real files: landscapes recorded by LandscapeCallback in a real MindSpore
training run, an interrupted one, and MindSpore's own SummaryLandscape output read straight from its ``_MS`` file,
through TensorBoard's WSGI app with either loader."""

import json
import math
import os
import sys

import numpy as np
import pytest

from tb_harness import App
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import landscape_record
from tb_plugin_mindspore.writing.writer import SummaryWriter
import warm

CHILD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "callbacks", "landscape", "landscape_child.py")


def _num(v):
    return float("nan") if v == "NaN" else float("inf") if v == "Infinity" else float("-inf") if v == "-Infinity" else v


def _array(rows):
    return np.array([[_num(v) for v in row] for row in rows] if rows and isinstance(rows[0], list)
                    else [_num(v) for v in rows], dtype=np.float64)


def _read_ours(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    ea = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    ea.Reload()
    return {tag: {e.step: json.loads(tensor_util.make_ndarray(e.tensor_proto).reshape(-1)[0].decode())
                  for e in ea.Tensors(tag)} for tag in ea.Tags()["tensors"] if tag.startswith("landscape/")}


@pytest.fixture(scope="module")
def landscape_logdir(tmp_path_factory, ms_fixtures):
    pytest.importorskip("mindspore")
    root = tmp_path_factory.mktemp("landscapes") / "logs"
    root.mkdir()
    ms_fixtures.copy_run("landscape", root)            # MindSpore SummaryLandscape (PCA + random), an _MS file
    from tb_plugin_mindspore.commands.convert import convert

    convert(root / "landscape", out=root / "converted", progress=False)   # the same, as tfevents
    proc = warm.run([sys.executable, CHILD, str(root.parent / "train.npz"), "graph", "1", str(root / "ours")],
                    capture_output=True, text=True, timeout=300, env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # An interrupted landscape: two of four rows done.
    z = np.full((4, 3), np.nan)
    z[:2] = [[3.0, 2.0, 3.5], [2.5, 1.0, 2.0]]
    rec = landscape_record([-1, 0, 1], [-1, -0.3, 0.3, 1], z, "random", center=(0, 0, 1.0), complete=False,
                           rows_done=2, rows=4, points_done=6, x_label="random direction 1 (filter-normalized)")
    with SummaryWriter(root / "partial") as w:
        w.value(summary.landscape("landscape/random", rec), 5)
        w.scalar("core/loss", 1.0, 5)
    # A run without landscapes.
    with SummaryWriter(root / "plain") as w:
        w.scalar("core/loss", 1.0, 1)
    return root


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, landscape_logdir):
    a = App(landscape_logdir, load_fast=request.param)
    a.wait_for_runs(["landscape", "converted", "ours", "partial", "plain"])
    yield a
    a.close()


def _listing(app, expect_runs=("landscape", "converted", "ours", "partial")):
    import time

    deadline = time.time() + 60
    while True:
        body = app.plugin("/landscapes")
        if set(expect_runs) <= set(body["runs"]) and len(body["runs"].get("ours", [])) == 9:
            return body
        assert time.time() < deadline, body
        time.sleep(0.3)


@pytest.mark.slow
def test_listing_names_every_landscape_of_both_sources(app):
    runs = _listing(app)["runs"]
    assert "plain" not in runs
    ms_entries = {e["tag"]: e for e in runs["landscape"]}
    assert set(ms_entries) == {"landscape_[1, 3]", "landscape_[3]"}
    assert ms_entries["landscape_[1, 3]"]["method"] == "pca" and ms_entries["landscape_[3]"]["method"] == "random"
    assert all(e["source"] == "mindspore" and e["dims"] == 2 and e["grid"] == [3, 3] and e["step"] == 0
               for e in ms_entries.values())
    assert "SummaryLandscape" in ms_entries["landscape_[3]"]["title"]
    ours = runs["ours"]
    assert sorted({e["tag"] for e in ours}) == ["landscape/interpolation", "landscape/pca", "landscape/random"]
    for tag in ("landscape/pca", "landscape/random", "landscape/interpolation"):
        entries = [e for e in ours if e["tag"] == tag]
        assert [e["step"] for e in entries] == [4, 8, 12]
        assert all(e["source"] == "tb_mindspore_callbacks" and e["complete"] for e in entries)
    assert {e["dims"] for e in ours if e["tag"] == "landscape/interpolation"} == {1}
    assert [e["complete"] for e in runs["partial"]] == [False]
    assert app.plugin("/landscapes", run="plain") == {"runs": {}}
    assert list(app.plugin("/landscapes", run="ours")["runs"]) == ["ours"]


def test_mindspore_summary_landscape_matches_the_file(app, ms_logdir):
    _listing(app)
    for tag, method in (("landscape_[1, 3]", "pca"), ("landscape_[3]", "random")):
        body = app.plugin("/landscape", run="landscape", tag=tag)
        (step, _, expected), = ms_logdir.landscapes("landscape")[tag]
        assert body["method"] == method and body["source"] == "mindspore" and body["step"] == step == 0
        np.testing.assert_array_equal(_array(body["z"]), np.array(expected["landscape"]["z"], dtype=np.float64))
        np.testing.assert_array_equal(body["x"], expected["landscape"]["x"])
        np.testing.assert_array_equal(body["y"], expected["landscape"]["y"])
        assert body["center"]["z"] == pytest.approx(expected["convergence_point"]["z"][0])
        assert body["unit"] == "epoch" and body["steps"] == [0] and body["missing"] == 0
        z = _array(body["z"])
        assert body["z_min"] == z.min() and body["z_max"] == z.max()
    # Converted to tfevents (tb-mindspore convert), the same landscapes come back the same.
    for tag in ("landscape_[1, 3]", "landscape_[3]"):
        a = app.plugin("/landscape", run="landscape", tag=tag)
        b = app.plugin("/landscape", run="converted", tag=tag)
        for key in ("x", "y", "z", "path", "center", "method", "source", "dims", "unit"):
            assert a[key] == b[key], (tag, key)
    pca = app.plugin("/landscape", run="landscape", tag="landscape_[1, 3]")
    (_, _, expected), = ms_logdir.landscapes("landscape")["landscape_[1, 3]"]
    assert pca["path"]["steps"] == [1, 2, 3] == expected["loss_path"]["intervals"]
    np.testing.assert_array_equal(pca["path"]["x"], expected["loss_path"]["x"])
    np.testing.assert_array_equal(pca["path"]["z"], expected["loss_path"]["z"])
    assert pca["axis_labels"] == ["PC1", "PC2"]


def test_our_landscapes_match_what_the_callback_wrote(app, landscape_logdir):
    _listing(app)
    written = _read_ours(landscape_logdir / "ours")
    for tag in ("landscape/random", "landscape/pca", "landscape/interpolation"):
        last = app.plugin("/landscape", run="ours", tag=tag)
        assert last["step"] == 12 and last["steps"] == [4, 8, 12]
        for step in (4, 8, 12):
            body = app.plugin("/landscape", run="ours", tag=tag, step=step)
            rec = written[tag][step]
            np.testing.assert_array_equal(_array(body["z"]), np.array(rec["landscape"]["z"], dtype=np.float64))
            np.testing.assert_array_equal(body["x"], rec["landscape"]["x"])
            assert body["metadata"]["method"] == rec["metadata"]["method"]
            assert body["complete"] is True and body["missing"] == 0
    pca = app.plugin("/landscape", run="ours", tag="landscape/pca", step=12)
    rec = written["landscape/pca"][12]
    assert pca["path"]["steps"] == rec["loss_path"]["intervals"] and pca["path"]["steps"][-1] == 12
    assert pca["explained_variance_ratio"] == rec["metadata"]["explained_variance_ratio"]
    assert pca["axis_labels"][0].startswith("PC1 (")
    inter = app.plugin("/landscape", run="ours", tag="landscape/interpolation")
    assert inter["dims"] == 1 and inter["y"] == [0.0] and inter["axis_labels"][0] == "alpha"
    assert inter["path"]["x"] == [0.0, 1.0]


def test_an_interrupted_landscape_sends_nan_for_the_missing_rows(app):
    _listing(app)
    body = app.plugin("/landscape", run="partial", tag="landscape/random")
    assert body["complete"] is False and body["missing"] == 6
    z = _array(body["z"])
    assert np.isfinite(z[:2]).all() and np.isnan(z[2:]).all()
    assert body["z"][3] == ["NaN"] * 3
    assert body["z_min"] == 1.0 and body["z_max"] == 3.5
    assert body["metadata"]["rows_done"] == 2 and body["center"] == {"x": 0.0, "y": 0.0, "z": 1.0}
    assert not any(isinstance(v, float) and math.isnan(v) for v in body["x"])


def test_errors(app):
    _listing(app)
    assert app.plugin("/landscape", expect=404, run="nope", tag="landscape/random")["error"]["code"] == 404
    assert "no landscape" in app.plugin("/landscape", expect=404, run="plain", tag="x")["error"]["message"]
    msg = app.plugin("/landscape", expect=404, run="ours", tag="landscape/random", step=5)["error"]["message"]
    assert "4, 8, 12" in msg
    assert app.plugin("/landscape", expect=400, run="ours")["error"]["code"] == 400
    assert app.plugin("/landscape", expect=400, run="ours", tag="landscape/random", step="x")["error"]["code"] == 400
    assert app.plugin("/landscapes", expect=404, run="nope")["error"]["code"] == 404
