"""Every plugin route, on event files from real MindSpore training, through TensorBoard's own app and data provider,
with both loaders and with and without --path_prefix."""

import math
import os
import time

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from tb_harness import App
from tb_plugin_mindspore import loader
from tb_plugin_mindspore.writing.writer import SummaryWriter

CORE_TAGS = {"core/loss", "core/learning_rate", "core/grad_norm"}


def read_back(run_dir):
    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: [(e.step, e.value) for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]}


@pytest.fixture(scope="module", params=[("false", ""), ("true", ""), ("false", "/pfx"), ("true", "/pfx")],
                ids=["python", "fast", "python-prefix", "fast-prefix"])
def app(request, recorded_logdir):
    load_fast, prefix = request.param
    a = App(recorded_logdir, load_fast=load_fast, path_prefix=prefix)
    a.wait_for_runs(["run_a", "run_b"])
    for run in ("run_a", "run_b"):
        for tag in CORE_TAGS:
            a.wait_for_last_step(run, tag, 32)
    yield a
    a.close()


def test_tab_is_listed(app):
    listing = app.json("/data/plugins_listing")
    assert listing["mindspore"]["tab_name"] == "MindSpore"
    assert listing["mindspore"]["enabled"] is True
    assert listing["mindspore"]["loading_mechanism"] == {
        "type": "IFRAME", "module_path": app.path_prefix + "/data/plugin/mindspore/index.js"}


def test_index_js_is_served(app):
    resp = app.get("/data/plugin/mindspore/index.js")
    assert resp.status_code == 200
    assert resp.headers["Content-Type"].startswith("text/javascript")
    assert b"render" in resp.get_data()


def test_runs_and_tiers(app):
    assert app.plugin("/runs")["runs"] == ["run_a", "run_b"]
    body = app.plugin("/tags")
    assert body["tiers"] == ["core", "diagnostic", "debug", "other"]
    for run in ("run_a", "run_b"):
        core = {t["tag"]: t for t in body["runs"][run]["core"]}
        assert CORE_TAGS <= set(core)
        assert core["core/loss"]["interval"] is True and core["core/loss"]["display_name"] == "loss"
        # our own bookkeeping series never show up as charts
        all_tags = {t["tag"] for tier in body["runs"][run].values() for t in tier}
        assert not any(t.startswith(("interval/", "_meta/")) for t in all_tags)
    only_a = app.plugin("/tags", run="run_a")
    assert list(only_a["runs"]) == ["run_a"]


def test_scalars_match_the_event_files(app, recorded_logdir):
    for run in ("run_a", "run_b"):
        expected = read_back(recorded_logdir / run)
        for tag in CORE_TAGS:
            body = app.plugin("/scalars", run=run, tag=tag)
            assert body["tier"] == "core" and not body["downsampled"]
            got = [(p[0], p[2]) for p in body["points"]]
            assert len(got) == len(expected[tag]) == body["total_points"]
            for (s1, v1), (s2, v2) in zip(got, expected[tag]):
                assert s1 == s2 and math.isclose(v1, v2, rel_tol=1e-6)
        steps = [p[0] for p in app.plugin("/scalars", run=run, tag="core/loss")["points"]]
        assert steps == [5, 10, 15, 20, 25, 30, 32]


def test_interval_band_comes_with_loss(app):
    body = app.plugin("/scalars", run="run_a", tag="core/loss")
    rows = body["interval"]
    assert [r[0] for r in rows] == [p[0] for p in body["points"]]
    for (step, lo, mean, hi, count, nonfinite), point in zip(rows, body["points"]):
        assert lo <= mean <= hi and count >= 1 and nonfinite == 0
        assert lo <= point[2] <= hi
    assert sum(r[4] for r in rows) == 32   # every training step is in exactly one interval


def test_status_with_data(app):
    status = app.plugin("/status")
    assert status["has_data"] is True and status["reason"] is None
    assert status["counts"]["runs"] == 2 and status["counts"]["event_files"] >= 2


def test_errors_are_json(app):
    assert app.plugin("/scalars", expect=404, run="nope", tag="core/loss")["error"]["code"] == 404
    assert "no scalar tag" in app.plugin("/scalars", expect=404, run="run_a", tag="nope")["error"]["message"]
    assert app.plugin("/tags", expect=404, run="nope")["error"]["code"] == 404
    assert app.plugin("/scalars", expect=400, run="run_a")["error"]["code"] == 400
    assert app.plugin("/scalars", expect=400, run="run_a", tag="core/loss", max_points="many")["error"]["code"] == 400
    assert app.plugin("/scalars", expect=400, run="run_a", tag="core/loss", max_points="1")["error"]["code"] == 400
    assert app.plugin("/static/../../setup.py", expect=404)["error"]["code"] == 404


# -- logdirs with nothing to show: the empty state, never an error -------------------------------------------------
def status_of(logdir, **kwargs):
    a = App(logdir, **kwargs)
    try:
        return a.plugin("/status"), a.plugin("/runs")
    finally:
        a.close()


def test_empty_logdir(tmp_path):
    status, runs = status_of(tmp_path)
    assert runs == {"runs": []}
    assert status["reason"] == "no_event_files" and status["has_data"] is False
    assert str(tmp_path) in status["message"]


def test_missing_and_relative_logdir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, _ = status_of("does/not/exist")
    assert status["reason"] == "no_logdir"
    assert "relative" in status["message"] and str(tmp_path) in status["message"]


def test_event_file_without_data_waits_for_flush(tmp_path):
    SummaryWriter(tmp_path / "run").close()    # only the file header, as right after a writer starts
    status, _ = status_of(tmp_path)
    assert status["reason"] == "waiting_for_flush"


def test_only_mindspore_summary_files(tmp_path):
    # The name MindSpore's SummaryRecord gives its files; the plugin must recognise them without MindSpore.
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "events.out.events.summary.1700000000.0.myhost_MS").write_bytes(b"")
    status, _ = status_of(tmp_path)
    assert status["reason"] == "only_ms_files" and status["counts"]["ms_files"] == 1


# -- sample retention ----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def long_run(tmp_path_factory):
    """5,000 steps with two single-step spikes and a NaN: more than TensorBoard's default reservoir of 1,000."""
    root = tmp_path_factory.mktemp("long")
    values = np.exp(-np.arange(5000) / 2000.0)
    values[1234], values[4321], values[2500] = 50.0, -50.0, np.nan
    with SummaryWriter(root / "run") as w:
        for step, v in enumerate(values):
            w.scalar("core/loss", v, step)
    return root, values


@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_every_step_kept_and_spikes_survive_downsampling(long_run, load_fast):
    root, values = long_run
    a = App(root, load_fast=load_fast)
    try:
        a.wait_for_runs(["run"])
        a.wait_for_last_step("run", "core/loss", 4999)
        full = a.plugin("/scalars", run="run", tag="core/loss", max_points=100000)
        assert full["total_points"] == 5000 and len(full["points"]) == 5000
        # TensorBoard's own Scalars tab still gets every point with our plugin installed.
        assert len(a.json("/data/plugin/scalars/scalars", run="run", tag="core/loss")) == 5000
        small = a.plugin("/scalars", run="run", tag="core/loss", max_points=300)
        assert small["downsampled"] and len(small["points"]) <= 300
        by_step = {p[0]: p[2] for p in small["points"]}
        assert by_step[1234] == 50.0 and by_step[4321] == -50.0 and by_step[2500] == "NaN"
    finally:
        a.close()


@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_users_samples_per_plugin_wins(long_run, load_fast):
    root, _ = long_run
    a = App(root, load_fast=load_fast, extra_argv=["--samples_per_plugin", "scalars=50"])
    try:
        assert a.flags.samples_per_plugin["scalars"] == 50
        assert a.flags.samples_per_plugin["mindspore"] == loader.SAMPLE_LIMITS["mindspore"]
        a.wait_for_runs(["run"])
        a.wait_for_last_step("run", "core/loss", 4999)
        assert len(a.json("/data/plugin/scalars/scalars", run="run", tag="core/loss")) == 50
    finally:
        a.close()


@pytest.fixture(scope="module")
def longer_than_the_scalar_limit(tmp_path_factory):
    """More recorded points than the scalars limit, each with its interval row; one NaN step and one spike hidden
    between recorded points (only the interval rows know them)."""
    root = tmp_path_factory.mktemp("limits")
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tb_plugin_mindspore.writing import summary

    n = loader.SAMPLE_LIMITS["scalars"] + 2000
    w = EventFileWriter(str(root / "run"), max_queue_size=1000, flush_secs=120)   # synchronous: every step lands
    for step in range(1, n + 1):
        nonfinite = 1 if step == 777 else 0
        high = 500.0 if step == 9001 else 1.1
        values = [summary.scalar("core/loss", 1.0), summary.interval("core/loss", 0.9, 1.0, high, 10, nonfinite)]
        w.add_event(event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(value=values)))
    w.close()
    return root, n


@pytest.mark.parametrize("load_fast", ["false", "true"])
@pytest.mark.slow
def test_sample_limits_bound_scalars_and_keep_every_interval_row(longer_than_the_scalar_limit, load_fast):
    root, n = longer_than_the_scalar_limit
    a = App(root, load_fast=load_fast)
    try:
        assert a.flags.samples_per_plugin == loader.SAMPLE_LIMITS
        a.wait_for_runs(["run"])
        a.wait_for_last_step("run", "core/loss", n, timeout=300)
        # TensorBoard keeps a sample of the line; the plugin reads every point itself (in the background).
        assert len(a.json("/data/plugin/scalars/scalars", run="run", tag="core/loss")) == loader.SAMPLE_LIMITS["scalars"]
        deadline = time.time() + 120
        while a.plugin("/scalars", run="run", tag="core/loss", max_points=10)["total_points"] != n:
            assert time.time() < deadline, "the plugin never served every point"
            time.sleep(0.25)
        body = a.plugin("/scalars", run="run", tag="core/loss", max_points=100000)
        assert body["total_points"] == n
        band = {row[0]: row for row in body["interval"]}
        assert len(band) == n                                                  # every interval row too
        assert band[777][5] == 1 and band[9001][3] == 500.0
        small = a.plugin("/scalars", run="run", tag="core/loss", max_points=300)["interval"]
        assert max(r[3] for r in small) == 500.0 and sum(r[5] for r in small) == 1
        findings = a.plugin("/health", run="run")["runs"][0]["findings"]
        assert any(f["rule"] == "nonfinite" for f in findings), findings
    finally:
        a.close()


def test_health_route(app):
    body = app.plugin("/health")
    assert sorted(r["run"] for r in body["runs"]) == ["run_a", "run_b"]
    for run in body["runs"]:
        assert run["status"] in ("ok", "warn", "error")
        for f in run["findings"]:
            assert set(f) >= {"rule", "level", "message", "tag", "steps"}
            assert f["level"] in ("info", "warn", "error")
    assert [r["run"] for r in app.plugin("/health", run="run_a")["runs"]] == ["run_a"]
    assert app.plugin("/health", expect=404, run="nope")["error"]["code"] == 404
