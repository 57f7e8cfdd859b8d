"""The run_info, media, images, image and tensors routes on real files, through TensorBoard's WSGI app with either
loader: MindSpore's own summary and lineage files (SummaryCollector, SummaryRecord, the summary ops), the same
converted by ``tb-mindspore convert``, a run recorded by the real TrainMonitor with hyperparameters, and tensors
with NaN and infinities written by our writer."""

import base64
import io
import json
import shutil
import time

import numpy as np
import pytest

from ms_training import MONITORED_HPARAMS
from tb_harness import App
from tb_plugin_mindspore.contract import hparam_names
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.writing.writer import SummaryWriter

RUNS = ("collector", "record", "ops", "converted_collector", "converted_record", "monitored", "nonfinite", "plain")
NONFINITE = np.array([[1.0, np.nan, -2.5], [np.inf, -np.inf, 4.0]], dtype=np.float32)


def png_size(data):
    """(width, height) of a PNG, decoded whole."""
    from PIL import Image

    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    with Image.open(io.BytesIO(data)) as im:
        im.load()
        return im.size


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, ms_fixtures, monitored_run):
    from tb_plugin_mindspore.commands.convert import convert

    root = tmp_path_factory.mktemp("run_data") / "logs"
    root.mkdir()
    for run in ("collector", "record", "ops"):
        ms_fixtures.copy_run(run, root)
    convert(root / "collector", out=root / "converted_collector", progress=False)
    convert(root / "record", out=root / "converted_record", progress=False)
    shutil.copytree(monitored_run, root / "monitored")
    with SummaryWriter(root / "nonfinite") as w:
        w.value(summary.tensor("weird", NONFINITE), 3)
        w.value(summary.tensor("ints", np.arange(12, dtype=np.int32).reshape(3, 4)), 3)
        w.scalar("core/loss", 1.0, 3)
    with SummaryWriter(root / "plain") as w:
        w.scalar("core/loss", 1.0, 1)
    return root


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, logdir):
    a = App(logdir, load_fast=request.param)
    a.wait_for_runs(RUNS)
    _wait(a, "/media", lambda b: {"record", "ops", "converted_record", "nonfinite"} <= set(b["runs"]))
    _wait(a, "/run_info", lambda b: {"collector", "converted_collector", "monitored"} <= set(b["runs"])
          and b["runs"]["monitored"]["hparams"] and b["runs"]["converted_collector"]["lineage"])
    yield a
    a.close()


def _wait(app, route, ready, timeout=60, **query):
    deadline = time.time() + timeout
    while True:
        body = app.plugin(route, **query)
        if ready(body):
            return body
        assert time.time() < deadline, body
        time.sleep(0.3)


def _reference_values(ms_fixtures, run, kind):
    """[(tag, step, value dict)] of one kind in a run, decoded by MindSpore's own classes."""
    out = []
    for rel in ms_fixtures.files(run):
        for _, event in ms_fixtures.reference[rel]:
            for value in event.get("values") or []:
                if value["kind"] == kind:
                    out.append((value["tag"], event["step"], value[kind]))
    return out


# -- run information -------------------------------------------------------------------------------------------
def _check_collector_hparams(hp, ms_fixtures):
    given = ms_fixtures.expected["collector"]["lineage"]
    assert hp["learning_rate"] == pytest.approx(given["learning_rate"], rel=1e-7)
    assert hp["batch_size"] == given["batch_size"] == 4
    assert hp["epoch"] == given["epoch"] == 2
    assert hp["optimizer"] == given["optimizer"] == "Momentum"
    assert hp["loss_function"] == given["loss_function"] == "SoftmaxCrossEntropyWithLogits"
    assert hp["network"] == given["network"]
    assert hp["train_dataset_size"] == given["samples"] == 16
    for key, value in given["custom"].items():       # custom_lineage_data
        assert hp[key] == value
    # And exactly what MindSpore's own decoding of the lineage file says.
    (train,) = [e for rel in ms_fixtures.files("collector", "_lineage") for _, e in ms_fixtures.reference[rel]
                if e["what"] == "train_lineage"]
    for key in ("optimizer", "learning_rate", "loss_function", "epoch", "batch_size", "parallel_mode"):
        assert hp[key] == train["hyper_parameters"][key], key
    assert hp["train_dataset_size"] == train["train_dataset_size"] and hp["network"] == train["network"]


@pytest.mark.slow
def test_lineage_file_becomes_hyperparameters(app, ms_fixtures):
    body = app.plugin("/run_info", run="collector")
    assert body["run"] == "collector" and body["sources"] == ["lineage_file"] and body["run_info"] is None
    _check_collector_hparams(body["lineage"]["hparams"], ms_fixtures)
    assert set(body["hparam_sources"].values()) == {"lineage"}
    assert body["lineage"]["user"] == ms_fixtures.expected["collector"]["lineage"]["custom"]
    assert body["lineage"]["dataset_graph"]["op_type"] == "Batch"
    # The hyperparameters under their canonical names (MindSpore's "epoch" is "epochs"), results and paths left out.
    lineage = body["lineage"]["hparams"]
    hp = body["hparams"]
    assert hp["epochs"] == lineage["epoch"] and body["hparam_names"]["epochs"] == ["epoch"]
    assert hp["learning_rate"] == lineage["learning_rate"] and hp["batch_size"] == lineage["batch_size"]
    for result in ("loss", "model_path", "model_size", "train_dataset_path"):
        assert result not in hp, result
    assert set(hp) == {hparam_names.canonical_name(k) for k in lineage if hparam_names.is_hyperparameter(k)}


def test_converted_run_shows_the_same_lineage(app, ms_fixtures):
    ms = app.plugin("/run_info", run="collector")
    body = app.plugin("/run_info", run="converted_collector")
    assert body["sources"] == ["run_info", "converted_lineage", "hparams"]
    assert body["run_info"]["source"] == "mindspore" and "mindspore_lineage" not in body["run_info"]
    assert body["lineage"]["hparams"] == ms["lineage"]["hparams"]
    assert body["lineage"]["user"] == ms["lineage"]["user"]
    assert body["hparams"] == ms["hparams"]
    _check_collector_hparams(body["lineage"]["hparams"], ms_fixtures)


def test_train_monitor_run_info_and_hparams(app):
    from importlib import metadata as importlib_metadata

    body = app.plugin("/run_info", run="monitored")
    assert body["sources"] == ["run_info", "hparams"] and body["lineage"] is None
    assert body["hparams"] == {hparam_names.canonical_name(k): v for k, v in MONITORED_HPARAMS.items()}
    assert body["hparams"]["learning_rate"] == MONITORED_HPARAMS["lr"] and body["hparam_names"]["learning_rate"] == ["lr"]
    assert set(body["hparam_sources"].values()) == {"run_info"}
    info = body["run_info"]
    assert info["mindspore_version"] == importlib_metadata.version("mindspore")
    assert info["collect_freq"] == 4 and info["rank"] == 0 and info["mode"] == "GRAPH_MODE"
    assert info["hparams"] == MONITORED_HPARAMS and info["content_version"] == 1


def test_run_info_listing_and_errors(app):
    runs = app.plugin("/run_info")["runs"]
    assert set(runs) == {"collector", "converted_collector", "monitored"}
    assert runs["monitored"] == app.plugin("/run_info", run="monitored")
    empty = app.plugin("/run_info", run="record")
    (only_file,) = empty.pop("ms_files")      # the run's MindSpore files (which steps a later file superseded)
    assert only_file["kind"] == "summary" and only_file["superseded"] == [] and only_file["steps"] == [1, 5]
    assert empty == {"run": "record", "sources": [], "run_info": None, "hparams": {}, "hparam_sources": {},
                     "hparam_names": {}, "lineage": None}
    assert app.plugin("/run_info", expect=404, run="nope")["error"]["code"] == 404
    assert app.plugin("/run_info", expect=400, run="")["error"]["code"] == 400


def test_tensorboard_hparams_tab_lists_the_converted_lineage(app, ms_fixtures):
    """TensorBoard's own HParams plugin reads what convert wrote (and TrainMonitor's hparams)."""
    request = json.dumps({"startIndex": 0, "sliceSize": 100, "allowedStatuses": [
        "STATUS_UNKNOWN", "STATUS_SUCCESS", "STATUS_FAILURE", "STATUS_RUNNING"]})
    resp = app.get("/data/plugin/hparams/session_groups", request=request)
    assert resp.status_code == 200, resp.get_data(as_text=True)[:500]
    groups = json.loads(resp.get_data(as_text=True))["sessionGroups"]
    by_run = {s["name"]: g["hparams"] for g in groups for s in g["sessions"]}
    assert {"converted_collector", "monitored"} <= set(by_run)
    hp = by_run["converted_collector"]
    given = ms_fixtures.expected["collector"]["lineage"]
    assert hp["optimizer"] == "Momentum" and hp["loss_function"] == "SoftmaxCrossEntropyWithLogits"
    assert hp["learning_rate"] == pytest.approx(given["learning_rate"], rel=1e-7)
    assert hp["batch_size"] == 4 and hp["epoch"] == 2 and hp["note"] == "fixture" and hp["seed"] == 7
    assert by_run["monitored"]["optimizer"] == "momentum" and by_run["monitored"]["lr"] == 0.05


# -- images ------------------------------------------------------------------------------------------------------
def test_media_listing(app):
    runs = app.plugin("/media")["runs"]
    assert set(runs) == {"record", "ops", "converted_record", "nonfinite"}
    assert runs["record"]["images"] == [{"tag": "pic", "display_name": "pic", "count": 5, "max_step": 5,
                                         "source": "mindspore"}]
    assert runs["record"]["tensors"] == [{"tag": "weights_t", "display_name": "weights_t", "count": 5,
                                          "max_step": 5, "source": "mindspore"}]
    (image,), (tensor,) = runs["ops"]["images"], runs["ops"]["tensors"]
    assert image["display_name"] == "ximage" and image["count"] == 3 and image["max_step"] == 3
    assert tensor["display_name"] == "xtensor" and tensor["count"] == 3
    # Converted: tensors come from the event file; its images are TensorBoard's Images tab's.
    assert runs["converted_record"]["images"] == []
    assert [(t["tag"], t["count"], t["source"]) for t in runs["converted_record"]["tensors"]] == [
        ("weights_t", 5, "event_file")]
    assert [t["tag"] for t in runs["nonfinite"]["tensors"]] == ["ints", "weird"]
    assert app.plugin("/media", run="plain") == {"runs": {}}
    assert list(app.plugin("/media", run="ops")["runs"]) == ["ops"]
    assert app.plugin("/media", expect=404, run="nope")["error"]["code"] == 404


@pytest.mark.parametrize("run", ["record", "ops"])
def test_image_bytes_are_what_mindspore_wrote(app, ms_fixtures, run):
    written = _reference_values(ms_fixtures, run, "image")
    assert written
    tag = app.plugin("/media", run=run)["runs"][run]["images"][0]["tag"]
    listing = app.plugin("/images", run=run, tag=tag)
    assert [s["step"] for s in listing["steps"]] == sorted({step for _, step, _ in written})
    by_step = {step: im for t, step, im in written if t == tag}
    for entry in listing["steps"]:
        im = by_step[entry["step"]]
        resp = app.get("/data/plugin/mindspore/image", run=run, tag=tag, step=entry["step"])
        assert resp.status_code == 200 and resp.headers["Content-Type"] == "image/png"
        data = resp.get_data()
        assert data == base64.b64decode(im["encoded"])
        assert png_size(data) == (im["width"], im["height"]) == (entry["width"], entry["height"])
        assert entry["mime"] == "image/png" and entry["bytes"] == len(data)
    if run == "record":
        assert all((s["width"], s["height"]) == (5, 4) for s in listing["steps"])   # NCHW 1x3x4x5
    else:
        assert all((s["width"], s["height"]) == (7, 6) for s in listing["steps"])   # NCHW 1x1x6x7


def test_image_errors_are_json(app):
    def err(expect, **query):
        resp = app.get("/data/plugin/mindspore/image", **query)
        assert resp.status_code == expect and resp.headers["Content-Type"].startswith("application/json")
        return json.loads(resp.get_data(as_text=True))["error"]["message"]

    assert "step" in err(400, run="record", tag="pic")
    assert "step" in err(400, run="record", tag="pic", step="x")
    assert "1, 2, 3, 4, 5" in err(404, run="record", tag="pic", step=9)
    assert "no run" in err(404, run="nope", tag="pic", step=1)
    assert "no image" in err(404, run="record", tag="../../etc/passwd", step=1)
    assert app.plugin("/images", expect=404, run="converted_record", tag="pic")["error"]["code"] == 404
    assert app.plugin("/images", expect=400, run="record")["error"]["code"] == 400


# -- tensors -----------------------------------------------------------------------------------------------------
def _check_tensor_steps(body, expected):
    """``expected``: {step: (shape, flat values)}."""
    assert [s["step"] for s in body["steps"]] == sorted(expected)
    for entry in body["steps"]:
        shape, values = expected[entry["step"]]
        assert entry["shape"] == shape and entry["size"] == len(values) and entry["truncated"] is False
        assert entry["values"] == values
        a = np.array(values)
        assert entry["min"] == a.min() and entry["max"] == a.max()
        assert entry["mean"] == pytest.approx(a.mean(), rel=1e-12)
        assert entry["nan"] == entry["pos_inf"] == entry["neg_inf"] == 0


@pytest.mark.parametrize("run", ["record", "converted_record"])
def test_summary_record_tensor_values(app, ms_fixtures, run):
    body = app.plugin("/tensors", run=run, tag="weights_t")
    assert body["source"] == ("mindspore" if run == "record" else "event_file")
    assert body["total_steps"] == 5 and body["downsampled"] is False
    _check_tensor_steps(body, {step: (shape, values)
                               for tag, step, shape, values in ms_fixtures.expected["record"]["tensor"]})
    assert all(s["dtype"] == "float32" for s in body["steps"])


def test_tensor_summary_op_values(app, ms_fixtures):
    tag = app.plugin("/media", run="ops")["runs"]["ops"]["tensors"][0]["tag"]
    body = app.plugin("/tensors", run="ops", tag=tag)
    _check_tensor_steps(body, {step: ([3, 4], x) for step, _, x in ms_fixtures.expected["ops"]})


def test_tensor_values_are_bounded(app, ms_fixtures):
    body = app.plugin("/tensors", run="record", tag="weights_t", max_values=4, max_steps=2)
    assert body["max_values"] == 4 and body["downsampled"] is True and body["total_steps"] == 5
    assert [s["step"] for s in body["steps"]] == [1, 5]
    last = [e for e in ms_fixtures.expected["record"]["tensor"] if e[1] == 5][0]
    assert body["steps"][1]["values"] == last[3][:4] and body["steps"][1]["truncated"] is True
    assert body["steps"][1]["size"] == 6 and body["steps"][1]["max"] == max(last[3])   # stats: the whole tensor
    assert app.plugin("/tensors", expect=400, run="record", tag="weights_t", max_values=0)["error"]["code"] == 400
    assert app.plugin("/tensors", expect=400, run="record", tag="weights_t", max_steps="x")["error"]["code"] == 400


def test_nonfinite_and_integer_tensors(app):
    body = app.plugin("/tensors", run="nonfinite", tag="weird")
    (entry,) = body["steps"]
    assert entry["step"] == 3 and entry["shape"] == [2, 3] and entry["dtype"] == "float32"
    assert entry["values"] == [1.0, "NaN", -2.5, "Infinity", "-Infinity", 4.0]
    assert entry["nan"] == 1 and entry["pos_inf"] == 1 and entry["neg_inf"] == 1
    assert entry["min"] == -2.5 and entry["max"] == 4.0 and entry["mean"] == pytest.approx(2.5 / 3)
    ints = app.plugin("/tensors", run="nonfinite", tag="ints")["steps"][0]
    assert ints["dtype"] == "int32" and ints["values"] == list(range(12)) and ints["shape"] == [3, 4]
    assert ints["min"] == 0 and ints["max"] == 11 and isinstance(ints["max"], int) and ints["mean"] == 5.5
    assert app.plugin("/tensors", expect=404, run="plain", tag="weird")["error"]["code"] == 404
    assert app.plugin("/tensors", expect=404, run="nope", tag="weird")["error"]["code"] == 404
    assert app.plugin("/tensors", expect=400, run="plain")["error"]["code"] == 400
