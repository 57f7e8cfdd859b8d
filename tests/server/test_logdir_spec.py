"""``tensorboard --logdir_spec name1:DIR1,name2:DIR2``: every kind of run the tab reads (event files, ``*_MS`` files,
rank files and ``rank_<k>`` folders, landscapes) under the names TensorBoard gives them, and a status that says what
TensorBoard was started with; through TensorBoard's own WSGI app and a real ``tensorboard`` process."""

import os
import sys

import pytest

from tb_harness import App, PREFIX, fetch_json, tensorboard_process
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import landscape_record
from tb_plugin_mindspore.sources import logdir_spec
from tb_plugin_mindspore.writing.writer import SummaryWriter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, os.pardir, "contract"))
sys.path.insert(0, os.path.join(HERE, os.pardir, "cluster"))

import cluster_data  # noqa: E402
import logdirs  # noqa: E402


def test_parse_spec_follows_the_flag_format(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    roots = logdir_spec.parse_spec("exp1:%s,%s,,s3run:s3://bucket/x" % (a, b))
    assert roots == [logdir_spec.Root("exp1", a), logdir_spec.Root(None, b), logdir_spec.Root("s3run", "s3://bucket/x")]
    assert logdir_spec.parse_spec("s3://bucket/y") == [logdir_spec.Root(None, "s3://bucket/y")]


def test_roots_name_and_locate_runs_as_tensorboard_does(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    roots = logdir_spec.Roots(logdir_spec.parse_spec("exp1:%s,exp10:%s" % (a, b)), spec="x")
    first, second = roots.entries
    assert roots.run_name(first, ".") == "exp1/." and roots.run_name(second, "r/s") == "exp10/r/s"
    assert roots.folder("exp1/.") == a and roots.folder("exp10/r/s") == os.path.join(b, "r", "s")
    assert roots.folder("exp1/../etc") is None and roots.folder("other/x") is None
    assert roots.started_with() == "--logdir_spec exp1:%s,exp10:%s" % (a, b)
    assert logdir_spec.label("exp1/.") == "exp1" and logdir_spec.label(".") == "." and logdir_spec.label("a/b") == "a/b"
    single = logdir_spec.Roots.single("rel/dir")
    assert single.folder(".") == "rel/dir" and single.folder("x/y") == os.path.join("rel/dir", "x", "y")


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    root = tmp_path_factory.mktemp("logdir_spec")
    logdirs.mixed_logdir(root / "a")                       # event files, *_MS runs, a folder with both, "."
    cluster_data.write_cluster(root / "b" / "clustered", ranks=4)
    cluster_data.write_rank_folders(root / "b" / "mf", ranks=3)
    rec = landscape_record([-1, 0, 1], [-1, 0, 1], [[3.0, 2.0, 3.0], [2.0, 1.0, 2.0], [3.0, 2.0, 3.0]], "random",
                           center=(0, 0, 1.0))
    with SummaryWriter(root / "b" / "land") as w:
        w.value(summary.landscape("landscape/random", rec), 5)
        w.scalar("core/loss", 1.0, 5)
    logdirs.write_ms(root / "c", 1_700_000_000, range(1, 6))   # an entry without a name
    value = "exp1:%s,exp2:%s,%s" % (root / "a", root / "b", root / "c")
    return root, value


@pytest.fixture(scope="module")
def app(spec):
    a = App(None, logdir_spec=spec[1])
    a.wait_for_runs(["exp1/.", "exp1/collector", "exp2/clustered", "."])
    yield a
    a.close()


def test_every_kind_of_run_is_listed_under_tensorboards_names(app):
    theirs = set(app.json("/data/runs"))
    ours = set(app.plugin("/runs")["runs"])
    assert theirs <= ours, theirs - ours                     # TensorBoard's own names, unchanged
    assert {"exp1/.", "exp1/collector", "exp1/nested/ms_run", "exp1/both", "exp2/land", "."} <= ours
    assert not any(r.startswith("a/") or r.startswith("/") for r in ours)
    # A *_MS run and an event-file run read through the same names.
    assert [p[0] for p in app.plugin("/scalars", run="exp1/collector", tag="loss/auto")["points"]] == list(range(1, 16))
    assert app.plugin("/scalars", run=".", tag="loss/auto")["points"][0][0] == 1
    tags = app.plugin("/tags", run="exp1/both")["runs"]["exp1/both"]
    names = {e["tag"] for entries in tags.values() for e in entries}
    assert {"core/loss", "accuracy/auto"} <= names         # event files and *_MS files in one folder: one run


def test_health_clusters_and_landscapes_follow_the_entries(app):
    report = app.plugin("/health", run="exp1/collector")
    assert [r["run"] for r in report["runs"]] == ["exp1/collector"]
    assert not any(f["rule"] == "no_loss" for f in report["runs"][0]["findings"])
    clusters = {c["run"]: c for c in app.plugin("/clusters")["clusters"]}
    assert clusters["exp2/clustered"]["ranks"] == 4 and clusters["exp2/mf"]["ranks"] == 3
    matrix = app.plugin("/cluster", run="exp2/clustered", metric="step_time_ms")
    assert matrix["shape"][0] == 4
    listing = app.plugin("/landscapes", run="exp2/land")
    assert [e["tag"] for e in listing["runs"]["exp2/land"]] == ["landscape/random"]


def test_status_says_what_tensorboard_was_started_with(app, spec):
    status = app.plugin("/status")
    assert status["started_with"] == "--logdir_spec " + spec[1]
    assert [e["name"] for e in status["logdir_spec"]] == ["exp1", "exp2", None]
    assert status["counts"]["ms_files"] >= 6 and status["reason"] is None


def test_status_of_entries_that_hold_nothing(tmp_path):
    (tmp_path / "empty").mkdir()
    a = App(None, logdir_spec="e:%s,m:%s" % (tmp_path / "empty", tmp_path / "missing"))
    try:
        status = a.plugin("/status")
    finally:
        a.close()
    assert status["reason"] == "no_event_files"
    assert status["started_with"].startswith("--logdir_spec e:")
    assert "m (%s): the folder does not exist" % (tmp_path / "missing") in status["message"]


@pytest.mark.slow
def test_a_real_tensorboard_process_with_logdir_spec(spec):
    root, value = spec
    with tensorboard_process(root, logdir_spec=value) as base:
        import time

        deadline = time.time() + 60
        while True:
            runs = fetch_json(base + PREFIX + "/runs")["runs"]
            if {"exp1/collector", "exp2/clustered", "exp1/events_only", "exp2/land"} <= set(runs) \
                    or time.time() > deadline:
                break
            time.sleep(0.5)
        assert {"exp1/collector", "exp2/clustered", "exp1/events_only", "exp2/land"} <= set(runs)
        status = fetch_json(base + PREFIX + "/status")
        assert status["started_with"] == "--logdir_spec " + value
        points = fetch_json(base + PREFIX + "/scalars?run=exp1/collector&tag=loss/auto")["points"]
        assert len(points) == 15
