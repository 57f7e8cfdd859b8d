"""Hostile files in a logdir: each one is isolated to its own series or file, reported in the ``status`` route's
``warnings`` (with file and offset where there is one) and in ``tb-mindspore convert`` / ``check`` output, and
never turns a route into a 500 or a command into a hang. Through TensorBoard's real WSGI app with both loaders,
and the real command line."""

import json
import os
import shutil
import sys
import time
import tracemalloc

import pytest

import hostile
from tb_harness import App

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir
import warm

LISTING_ROUTES = ("/runs", "/status", "/tags", "/health", "/run_info", "/media", "/landscapes")
CLI = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")
DEEP = 100000


def _wait(predicate, timeout=60, what="condition"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError("timed out waiting for %s" % what)


def _warnings(app):
    return app.plugin("/status")["warnings"]


def _nested_logdir(root):
    """A good run and one run per hostile JSON place; returns the logdir."""
    ev = os.path.join
    hostile.write_events(ev(root, "good", hostile.EVENT_NAME), hostile.loss_events() + [hostile.good_landscape_event()])
    content = json.dumps({"version": 1, "kind": "layers", "layers": json.loads(hostile.nested_json(50))})
    deep_content = ('{"version": 1, "kind": "layers", "layers": %s}' % hostile.nested_json(DEEP)).encode()
    hostile.write_events(ev(root, "nested_content", hostile.EVENT_NAME), hostile.loss_events() + [
        hostile.json_tensor_event("debug/deep", "{}", metadata.KIND_LAYERS, content=deep_content),
        hostile.json_tensor_event("debug/fine", "{}", metadata.KIND_LAYERS, content=content.encode())])
    hostile.write_events(ev(root, "nested_info", hostile.EVENT_NAME), hostile.loss_events() + [
        hostile.json_tensor_event(metadata.RUN_INFO, '{"hparams": {"lr": 0.1}}', metadata.KIND_RUN_INFO, step=0),
        hostile.json_tensor_event(metadata.RUN_INFO, '{"x": %s}' % hostile.nested_json(DEEP), metadata.KIND_RUN_INFO,
                                  step=1)])
    hostile.write_events(ev(root, "nested_landscape", hostile.EVENT_NAME), hostile.loss_events() + [
        hostile.good_landscape_event(step=1),
        hostile.json_tensor_event("landscape/random", '{"landscape": %s}' % hostile.nested_json(DEEP), step=2)])
    good_event = json.dumps(metadata.health_event("nonfinite", "error", 7, first_step=7, message="loss NaN"))
    hostile.write_events(ev(root, "nested_health", hostile.EVENT_NAME), hostile.loss_events() + [
        hostile.json_tensor_event(metadata.HEALTH_EVENT, good_event, metadata.KIND_HEALTH_EVENT, step=7),
        hostile.json_tensor_event(metadata.HEALTH_EVENT, '{"rule": %s}' % hostile.nested_json(DEEP),
                                  metadata.KIND_HEALTH_EVENT, step=9),
        hostile.json_tensor_event(metadata.RUN_END, '{"status": %s}' % hostile.nested_json(DEEP),
                                  metadata.KIND_RUN_END, step=20)])
    hostile.write_events(ev(root, "bad_landscape", hostile.EVENT_NAME), hostile.loss_events() + [
        hostile.json_tensor_event("landscape/random",
                                  '{"landscape": {"x": [0, 1, 2], "y": [0, 1, 2], "z": [1, 2, 3, 4, 5]}}')])
    return root


@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_nested_json_is_isolated_to_its_series(tmp_path, load_fast):
    app = App(_nested_logdir(tmp_path / "logs"), load_fast=load_fast)
    try:
        app.wait_for_runs(["good", "nested_content", "nested_info", "nested_landscape", "bad_landscape",
                           "nested_health"])
        _wait(lambda: len(app.plugin("/landscapes")["runs"]) == 2, what="landscapes loaded")
        for route in LISTING_ROUTES:
            app.plugin(route)                                    # 200, JSON
            app.plugin(route, run="nested_content") if route != "/runs" and route != "/status" else None
        # Everything else of each run is still there.
        assert app.plugin("/landscapes")["runs"]["good"][0]["grid"] == [3, 3]
        assert [e["step"] for e in app.plugin("/landscapes")["runs"]["nested_landscape"]] == [1]
        assert app.plugin("/run_info", run="nested_info")["hparams"] == {"learning_rate": 0.1}   # lr is learning_rate (hparam_names)
        layer_tags = [e["tag"] for e in app.plugin("/tags", run="nested_content")["runs"]["nested_content"]["debug"]]
        assert "debug/fine" in layer_tags and "debug/deep" not in layer_tags
        warnings = _warnings(app)
        found = {(w["run"], w.get("tag")) for w in warnings}
        assert ("nested_content", "debug/deep") in found
        assert ("nested_info", metadata.RUN_INFO) in found
        assert ("nested_landscape", "landscape/random") in found and ("bad_landscape", "landscape/random") in found
        reasons = {w["run"]: w["reason"] for w in warnings}
        assert "deeper than 64" in reasons["nested_content"] and "5 losses for a 3 x 3 grid" in reasons["bad_landscape"]
        assert ("good", "landscape/random") not in found
        # A health event and a run end marker nested 100,000 deep: named, the readable event still judged.
        named = {(w["tag"], w["step"]): w["reason"] for w in warnings if w["run"] == "nested_health"}
        assert "health event at step 9 left out" in named[(metadata.HEALTH_EVENT, 9)]
        assert "run end marker at step 20 left out" in named[(metadata.RUN_END, 20)]
        assert "deeper than 64" in named[(metadata.HEALTH_EVENT, 9)]
        health = {r["run"]: r for r in app.plugin("/health")["runs"]}
        assert any(f["rule"] in ("nonfinite", "live_health") and f.get("source", "").endswith("live")
                   for f in health["nested_health"]["findings"]), health["nested_health"]
    finally:
        app.close()


def test_nested_health_events_are_named_by_check(tmp_path):
    root = _nested_logdir(tmp_path / "logs")
    proc = warm.run([CLI, "check", str(root), "--format", "json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    named = {(w["run"], w.get("tag"), w.get("step")) for w in json.loads(proc.stdout)["warnings"]}
    assert {("nested_health", metadata.HEALTH_EVENT, 9), ("nested_health", metadata.RUN_END, 20),
            ("nested_info", metadata.RUN_INFO, 1)} <= named, named
    assert "health event at step 9 left out" in proc.stderr


def test_malformed_ms_landscape_is_reported_and_not_converted(tmp_path):
    root = tmp_path / "logs"
    hostile.write_ms(str(root / "ms" / hostile.MS_NAME), [hostile.ms_scalar_event(s, 1.0 / s) for s in range(1, 6)]
                     + [hostile.ms_landscape_event(3, 3, 5), hostile.ms_landscape_event(3, 3, 9, tag=b"landscape_[2]")])
    app = App(root)
    try:
        app.wait_for_runs(["ms"])
        listed = _wait(lambda: app.plugin("/landscapes")["runs"].get("ms"), what="landscape listed")
        assert [e["tag"] for e in listed] == ["landscape_[2]"]
        bad = [w for w in _warnings(app) if w.get("tag") == "landscape_[1]"]
        assert len(bad) == 1 and "5 losses for a 3 x 3 grid" in bad[0]["reason"], _warnings(app)
    finally:
        app.close()
    proc = warm.run([CLI, "convert", str(root), "--no-progress"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "1 landscapes" in proc.stdout and "malformed loss landscape 'landscape_[1]'" in proc.stderr
    assert "ms/%s at byte" % hostile.MS_NAME in proc.stderr


def test_deleted_ms_run_disappears(tmp_path):
    root = tmp_path / "logs"
    for run in ("kept", "deleted"):
        hostile.write_ms(str(root / run / hostile.MS_NAME), [hostile.ms_scalar_event(s, 1.0) for s in range(1, 4)],
                         tail=b"\x01" * 40)                         # damage: a warning that must go with the run
    app = App(root)
    try:
        app.wait_for_runs(["kept", "deleted"])
        _wait(lambda: {w["run"] for w in _warnings(app)} == {"kept", "deleted"}, what="both warnings")
        shutil.rmtree(root / "deleted")
        _wait(lambda: app.plugin("/runs")["runs"] == ["kept"], what="deleted run to go")
        _wait(lambda: {w["run"] for w in _warnings(app)} == {"kept"}, what="its warning to go")
        app.plugin("/scalars", expect=404, run="deleted", tag="loss/auto")
    finally:
        app.close()


def _loss_values(ms):
    return sorted({v for _, _, v in ms.scalars("run")["loss/auto"]})


def test_replaced_ms_file_is_read_again_not_stitched(tmp_path):
    path = str(tmp_path / "logs" / "run" / hostile.MS_NAME)
    hostile.write_ms(path, [hostile.ms_scalar_event(s, 1.0) for s in range(10)], wall=100.0)
    ms = MsLogdir(str(tmp_path / "logs"))
    ms.reload()
    assert _loss_values(ms) == [1.0]
    # Rewritten in place (same inode), longer: other first bytes.
    hostile.write_ms(path, [hostile.ms_scalar_event(s, 2.0) for s in range(20)], wall=200.0)
    ms.reload()
    assert _loss_values(ms) == [2.0] and len(ms.scalars("run")["loss/auto"]) == 20
    # Replaced by rename (new inode), shorter.
    tmp = path + ".old"
    os.rename(path, tmp)
    hostile.write_ms(path, [hostile.ms_scalar_event(s, 3.0) for s in range(3)], wall=300.0)
    os.remove(tmp)
    ms.reload()
    assert _loss_values(ms) == [3.0] and len(ms.scalars("run")["loss/auto"]) == 3
    # Rewritten with the same size.
    hostile.write_ms(path, [hostile.ms_scalar_event(s, 4.0) for s in range(3)], wall=400.0)
    ms.reload()
    assert _loss_values(ms) == [4.0]
    reasons = [w["reason"] for w in ms.warnings("run")]
    assert sum("file replaced" in r for r in reasons) == 3, reasons


def _hostile_entries(root):
    """A FIFO and a symbolic link loop named like each kind of data file, next to a good run."""
    hostile.write_events(str(root / "good" / hostile.EVENT_NAME), hostile.loss_events())
    hostile.write_ms(str(root / "good_ms" / hostile.MS_NAME), [hostile.ms_scalar_event(s, 1.0) for s in range(1, 4)])
    (root / "fifo").mkdir()
    os.mkfifo(root / "fifo" / hostile.MS_NAME)
    os.mkfifo(root / "fifo" / hostile.EVENT_NAME)
    (root / "loop").mkdir()
    os.symlink("b_MS", root / "loop" / hostile.MS_NAME)
    os.symlink(hostile.MS_NAME, root / "loop" / "b_MS")
    os.symlink("b", root / "loop" / hostile.EVENT_NAME)
    os.symlink(hostile.EVENT_NAME, root / "loop" / "b")
    os.symlink(str(root / "loop"), root / "loop" / "dir_loop")       # a folder that contains itself
    return {"fifo/" + hostile.MS_NAME, "fifo/" + hostile.EVENT_NAME, "loop/" + hostile.MS_NAME,
            "loop/" + hostile.EVENT_NAME}


@pytest.mark.parametrize("command", ["convert", "check"])
def test_fifo_and_symlink_loops_never_hang_the_commands(tmp_path, command):
    root = tmp_path / "logs"
    expected = _hostile_entries(root)
    if command == "convert":
        expected = {p for p in expected if p.endswith("_MS")}
    start = time.time()
    proc = warm.run([CLI, command, str(root)] + (["--no-progress"] if command == "convert" else []),
                    capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert time.time() - start < 60
    for rel in expected:
        assert "warning: %s: " % rel in proc.stderr, (rel, proc.stderr)
    assert "FIFO" in proc.stderr and "symbolic link loop" in proc.stderr
    if command == "check":
        assert "good  [" in proc.stdout and "good_ms  [" in proc.stdout


def test_fifo_and_symlink_loops_are_status_warnings(tmp_path):
    root = tmp_path / "logs"
    _hostile_entries(root)
    os.remove(root / "fifo" / hostile.EVENT_NAME)      # TensorBoard's own Python loader would block on this one
    app = App(root)
    try:
        app.wait_for_runs(["good", "good_ms"])
        warnings = _wait(lambda: [w for w in _warnings(app) if w["file"].startswith(("fifo/", "loop/"))],
                         what="warnings")
        by_file = {w["file"]: w["reason"] for w in warnings}
        assert "FIFO" in by_file["fifo/" + hostile.MS_NAME]
        assert "symbolic link loop" in by_file["loop/" + hostile.MS_NAME]
        assert "symbolic link loop" in by_file["loop/" + hostile.EVENT_NAME]
        for route in LISTING_ROUTES:
            app.plugin(route)
    finally:
        app.close()


def _undecodable_record(step):
    """Good checksums, a tag that is not UTF-8: protobuf refuses the record."""
    data = hostile.loss_events(step, tag="core/lossXX")[-1].SerializeToString().replace(b"lossXX", b"lo\xff\xfess")
    return records.frame(data)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # TensorBoard's own thread
@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_undecodable_record_is_skipped_and_named_by_the_server(tmp_path, load_fast):
    """Before: the Python loader's reload thread died on it (no run loaded after it, ever); the fast loader skipped
    it silently. Now both show every other run and record, later runs appear, and status names the record."""
    root = tmp_path / "logs"
    first, last = hostile.loss_events(1), hostile.loss_events(3)[-1:]
    bad = hostile.write_events(str(root / "bad" / hostile.EVENT_NAME), first,
                               tail=_undecodable_record(2) + records.frame(last[0].SerializeToString()))
    hostile.write_events(str(root / "good" / hostile.EVENT_NAME), hostile.loss_events(5))
    offset = os.path.getsize(bad) - len(records.frame(last[0].SerializeToString())) - len(_undecodable_record(2))
    app = App(root, load_fast=load_fast)
    try:
        app.wait_for_runs(["bad", "good"])
        hostile.write_events(str(root / "later" / hostile.EVENT_NAME), hostile.loss_events(5))
        app.wait_for_runs(["later"], timeout=30)
        (named,) = _wait(lambda: [w for w in _warnings(app) if w["file"] == "bad/" + hostile.EVENT_NAME],
                         what="the record in the warnings")
        assert named["offset"] == offset and "undecodable record" in named["reason"]
        assert "utf-8" in named["reason"].lower()
        _wait(lambda: [p[0] for p in app.plugin("/scalars", run="bad", tag="core/loss")["points"]] == [1, 3],
              what="steps 1 and 3 of the damaged run")
        if load_fast == "false":
            reloading = app.plugin("/status")["reloading"]
            assert reloading["by"] == "plugin" and reloading["ok"], reloading
        for route in LISTING_ROUTES:
            app.plugin(route)
    finally:
        app.close()


def test_huge_record_length_costs_no_memory(tmp_path):
    """A header claiming 250 MB (valid length checksum, wrong payload checksum) in a sparse file: the checksum is
    computed in chunks, the payload never held in memory (it took about 2x its size before)."""
    path = tmp_path / hostile.MS_NAME
    n = 250 << 20
    with open(path, "wb") as f:
        f.write(hostile.frame_header(n))
        f.seek(n, 1)
        f.write(b"\0\0\0\0")
        f.write(records.frame(hostile.ms_scalar_event(1, 5.0).SerializeToString()))
    mf = records.RecordFile(str(path))
    tracemalloc.start()
    try:
        got = []
        for _ in range(5):
            got += mf.read_payloads(16 << 20)[0]
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak            # was 524 MB: the record read whole, then copied
    assert len(got) == 1 and mf.problems == [(0, "bad payload checksum; record skipped")]


def test_length_of_2_pow_60_in_ms_file_is_skipped_with_a_warning(tmp_path):
    path = str(tmp_path / "logs" / "run" / hostile.MS_NAME)
    hostile.write_ms(path, [hostile.ms_scalar_event(1, 1.0)],
                     tail=hostile.frame_header(1 << 60) + b"\x07" * 30
                     + records.frame(hostile.ms_scalar_event(2, 2.0).SerializeToString()))
    ms = MsLogdir(str(tmp_path / "logs"))
    ms.reload()
    assert [p[0] for p in ms.scalars("run")["loss/auto"]] == [1, 2]
    assert any("too large" in w["reason"] and w["offset"] > 0 for w in ms.warnings("run"))


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # TensorBoard's own thread
@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_length_of_2_pow_60_in_event_file_names_the_file(tmp_path, load_fast):
    """TensorBoard's fast loader aborts its data server on this record (we cannot fix TensorBoard): the tab must
    say what happened and which file. The Python loader survives; the file is still named in the warnings."""
    root = tmp_path / "logs"
    hostile.write_events(str(root / "good" / hostile.EVENT_NAME), hostile.loss_events())
    app = App(root, load_fast=load_fast)
    try:
        app.wait_for_runs(["good"])
        bad = hostile.write_events(str(root / "bad" / hostile.EVENT_NAME), hostile.loss_events(3),
                                   tail=hostile.frame_header(1 << 60) + b"x" * 64)
        offset = os.path.getsize(bad) - 64 - 12
        rel = "bad/" + hostile.EVENT_NAME
        named = _wait(lambda: [w for w in _warnings(app) if w["file"] == rel], what="the file in the warnings")
        assert named[0]["offset"] == offset and "1.0 EiB" in named[0]["reason"]
        if load_fast == "true":
            status = _wait(lambda: (lambda s: s if s["reason"] == "data_server_failed" else None)(
                app.plugin("/status")), what="the data server to fail")
            assert rel in status["message"] and "at byte %d" % offset in status["message"]
            for route in LISTING_ROUTES[2:] + ("/runs",):
                body = app.plugin(route, expect=503)
                assert rel in body["error"]["message"] and "--load_fast=false" in body["error"]["message"]
        else:
            for route in LISTING_ROUTES:
                app.plugin(route)
            assert "good" in app.plugin("/runs")["runs"]
    finally:
        app.close()


def test_fifo_event_file_blocking_tensorboards_python_loader_is_explained(tmp_path):
    """TensorBoard's own Python loader waits forever on a FIFO named like an event file (outside the plugin): the
    empty tab says which file it is and what to do."""
    root = tmp_path / "logs"
    hostile.write_events(str(root / "good" / hostile.EVENT_NAME), hostile.loss_events())
    (root / "a_fifo").mkdir()
    fifo = root / "a_fifo" / hostile.EVENT_NAME
    os.mkfifo(fifo)
    app = App(root, load_fast="false")
    try:
        status = _wait(lambda: (lambda s: s if "a_fifo/" in s["message"] else None)(app.plugin("/status")),
                       what="the FIFO named in the status message")
        assert "not a regular file" in status["message"] and "move it out of the logdir" in status["message"]
        assert [w["file"] for w in status["warnings"]] == ["a_fifo/" + hostile.EVENT_NAME]
    finally:
        try:                                   # let TensorBoard's blocked loader thread go (it reads EOF)
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        app.close()
