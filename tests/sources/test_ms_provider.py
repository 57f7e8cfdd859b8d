"""MindSpore's own *_MS files in the MindSpore tab: real SummaryCollector / SummaryRecord / summary-op runs served
through the plugin's routes next to event-file runs, live, with damaged records reported."""

import os
import shutil
import time

import pytest

from tb_harness import App
from tb_plugin_mindspore.io import records


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def ms_app(request, ms_fixtures):
    a = App(ms_fixtures.root, load_fast=request.param)
    a.wait_for_runs(["collector", "record", "ops"])
    yield a
    a.close()


def test_ms_runs_are_listed_and_tiered(ms_app):
    body = ms_app.plugin("/tags")
    core = {t["tag"]: t for t in body["runs"]["collector"]["core"]}
    assert core["loss/auto"]["display_name"] == "loss"
    record_tags = {t["tag"] for tier in body["runs"]["record"].values() for t in tier}
    assert {"acc", "train/lr"} <= record_tags
    assert {t["tag"] for t in body["runs"]["ops"]["other"]} >= {"xsum"}


def test_ms_scalars_match_the_files(ms_app, ms_logdir):
    for run, tag in (("collector", "loss/auto"), ("record", "train/lr"), ("ops", "xsum")):
        body = ms_app.plugin("/scalars", run=run, tag=tag)
        expected = ms_logdir.scalars(run)[tag]
        assert [(p[0], p[2]) for p in body["points"]] == [(s, pytest.approx(v)) for s, _, v in expected]
        assert body["total_points"] == len(expected)


def test_status_and_health_cover_ms_runs(ms_app):
    status = ms_app.plugin("/status")
    assert status["has_data"] is True and status["counts"]["ms_files"] >= 4
    assert status["warnings"] == []
    runs = {r["run"] for r in ms_app.plugin("/health")["runs"]}
    assert "collector" in runs


def _record_offsets(path):
    data = open(path, "rb").read()
    return data, [stop for _, stop, _ in records.read_records(data)]


def test_live_file_new_runs_and_damage(tmp_path, ms_fixtures):
    logdir = tmp_path / "logs"
    logdir.mkdir()
    src_run = os.path.join(ms_fixtures.root, "collector")
    (name,) = [n for n in os.listdir(src_run) if n.endswith("_MS")]
    data, stops = _record_offsets(os.path.join(src_run, name))
    (logdir / "live").mkdir()
    target = logdir / "live" / name
    half = stops[len(stops) // 2]
    target.write_bytes(data[:half] + data[half:half + 7])   # half the records and a torn one at the end

    a = App(logdir, load_fast="false")
    try:
        a.wait_for_runs(["live"])
        first = a.plugin("/scalars", run="live", tag="loss/auto")["total_points"]
        assert 0 < first < 10
        assert a.plugin("/status")["warnings"] == []          # a torn tail is waited for, not reported

        with open(target, "ab") as f:                          # the writer finishes the file
            f.write(data[half + 7:])
        deadline = time.time() + 30
        while a.plugin("/scalars", run="live", tag="loss/auto")["total_points"] < 10:
            assert time.time() < deadline, "appended records never appeared"
            time.sleep(0.3)

        # A new run with a damaged record: the rest is shown, the damage is reported with file and offset.
        (logdir / "damaged").mkdir()
        broken = bytearray(data)
        broken[stops[2] - 2] ^= 0xFF                           # flip a byte inside the third record's data crc
        (logdir / "damaged" / name).write_bytes(bytes(broken))
        a.wait_for_runs(["live", "damaged"], timeout=30)
        deadline = time.time() + 30
        while not a.plugin("/status")["warnings"]:
            assert time.time() < deadline, "the damaged record was never reported"
            time.sleep(0.3)
        (warning,) = a.plugin("/status")["warnings"]
        assert warning["run"] == "damaged" and warning["file"].endswith(name) and warning["offset"] == stops[1]
        assert a.plugin("/scalars", run="damaged", tag="loss/auto")["total_points"] >= 9
    finally:
        a.close()
