"""A real training writes to s3://, a real tensorboard process and `check` read s3:// (event files and a
MindSpore ``*_MS`` file), and a poll of the ``*_MS`` reader fetches only the new bytes."""

import glob
import json
import os
import subprocess
import sys
import time
import urllib.parse

import pytest

from conftest import Bucket, use_s3
from tb_harness import fetch_json, free_port
from tb_plugin_mindspore.io import fs
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir
import warm

HERE = os.path.dirname(os.path.abspath(__file__))
PREFIX = "/data/plugin/mindspore"


@pytest.fixture(scope="module")
def trained(s3_endpoint, tmp_path_factory):
    """``(bucket, ms_bytes, ms_name)``: run_a trained into s3://bucket/logs/run_a by TrainMonitor in a child
    process, and the bytes of a SummaryRecord ``*_MS`` file (40 scalar steps) it wrote locally."""
    pytest.importorskip("mindspore")
    tmp = tmp_path_factory.mktemp("remote")
    with pytest.MonkeyPatch.context() as mp:
        env = use_s3(mp, s3_endpoint)
        bucket = Bucket(s3_endpoint, env)
        staging = tmp / "staging"
        proc = warm.run([sys.executable, os.path.join(HERE, "remote_training.py"), bucket.url + "/logs/run_a",
                         str(tmp / "ms")], capture_output=True, text=True, timeout=300, cwd=str(tmp),
                        env=dict(os.environ, GLOG_v="3", TB_MINDSPORE_STAGING=str(staging)))
        assert proc.returncode == 0 and "ok" in proc.stdout, proc.stderr[-3000:]
        assert not glob.glob(str(staging / "*" / "*")), "staging folder left behind after a complete upload"
        assert not os.path.exists(str(tmp / "s3:")), "a remote logdir was written as a local folder"
        (ms_path,) = glob.glob(str(tmp / "ms" / "*_MS"))
        with open(ms_path, "rb") as f:
            data = f.read()
        yield bucket, data, os.path.basename(ms_path)
        fs.reset()


@pytest.mark.slow
def test_training_wrote_event_files_to_s3(trained):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    bucket = trained[0]
    keys = bucket.keys("logs/run_a/")
    events = [k for k in keys if "tfevents" in k]
    # the per-rank statistics are uploaded too (never written to a local folder named "s3:")
    assert events and set(keys) - set(events) == {"logs/run_a/cluster/rank0.tbmsrank"}, keys
    acc = EventAccumulator(bucket.url + "/logs/run_a", size_guidance={"scalars": 0})   # TensorBoard's S3 reader
    acc.Reload()
    assert [e.step for e in acc.Scalars("core/loss")][-1] == 16


def test_ms_reader_fetches_only_new_bytes(trained):
    bucket, data, name = trained
    key = "incr/ms_run/" + name
    half = len(data) // 2            # cuts a record: the reader waits for the rest
    bucket.put(key, data[:half])
    reader = MsLogdir(bucket.url + "/incr")
    fs.reset()
    before = dict(fs.counters)
    first = reader.reload()
    # Half the file, and its first 64 bytes once (kept to notice a file replaced in place).
    assert first.bytes_read == half and fs.counters["bytes"] - before["bytes"] == half + 64
    assert reader.runs() == ["ms_run"] and 0 < len(reader.scalar_arrays("ms_run", "loss")[0]) < 40
    offset = reader._runs["ms_run"].files[bucket.url + "/" + key][0].offset
    bucket.put(key, data)
    time.sleep(fs.LISTING_SECS)
    before = dict(fs.counters)
    second = reader.reload()
    fetched = fs.counters["bytes"] - before["bytes"]
    # The new bytes from where the last complete record ended, plus the 64 first bytes compared to notice a
    # replaced file; one listing, one range for the head, one for the new bytes.
    assert fetched == len(data) - offset + 64, (fetched, len(data), offset)
    assert fs.counters["requests"] - before["requests"] == 3
    assert second.records > 0 and list(reader.scalar_arrays("ms_run", "loss")[0]) == list(range(1, 41))
    before = dict(fs.counters)
    time.sleep(fs.LISTING_SECS)
    reader.reload()                                   # nothing new: one listing, no bytes
    assert fs.counters["bytes"] == before["bytes"] and fs.counters["requests"] - before["requests"] == 1


def _get(base, route, **query):
    return fetch_json(base + PREFIX + route + ("?" + urllib.parse.urlencode(query, doseq=True) if query else ""))


@pytest.mark.slow
def test_tensorboard_and_check_read_s3(trained, tmp_path):
    bucket, data, name = trained
    bucket.put("logs/ms_run/" + name, data)
    logdir = bucket.url + "/logs"
    port = free_port()
    log = open(str(tmp_path / "tb.log"), "wb")
    tb = warm.Popen([os.path.join(os.path.dirname(sys.executable), "tensorboard"), "--logdir", logdir,
                     "--port", str(port), "--host", "127.0.0.1", "--reload_interval", "1"],
                    stdout=log, stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:%d" % port
    try:
        deadline = time.time() + 90
        runs = []
        while time.time() < deadline:
            try:
                runs = _get(base, "/runs")["runs"]
                if {"run_a", "ms_run"} <= set(runs):
                    break
            except Exception:   # not answering yet
                pass
            assert tb.poll() is None, open(str(tmp_path / "tb.log")).read()[-3000:]
            time.sleep(0.5)
        assert {"run_a", "ms_run"} <= set(runs), (runs, open(str(tmp_path / "tb.log")).read()[-3000:])
        tags = _get(base, "/tags")["runs"]
        assert "core/loss" in json.dumps(tags["run_a"]) and "loss" in json.dumps(tags["ms_run"])
        batch = _get(base, "/scalars_batch", run=["run_a", "ms_run"], tag=["core/loss", "loss"])
        got = {(s["run"], s["tag"]): s for s in batch["series"]}
        assert got[("run_a", "core/loss")]["points"][-1][0] == 16
        assert [p[0] for p in got[("ms_run", "loss")]["points"]] == list(range(1, 41))
        health = _get(base, "/health")
        assert {"run_a", "ms_run"} <= {r["run"] for r in health["runs"]}
        info = json.dumps(_get(base, "/run_info", run="run_a"))
        assert json.dumps(bucket.url + "/logs/run_a") in info          # the run folder as given, not a local path
        status = _get(base, "/status")
        assert status["counts"]["ms_files"] == 1 and status["counts"]["event_files"] >= 1
    finally:
        tb.terminate()
        tb.wait(10)
        log.close()
    check = warm.run([os.path.join(os.path.dirname(sys.executable), "tb-mindspore"), "check", logdir,
                      "--format", "json"], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr[-2000:]
    report = json.loads(check.stdout)
    assert {"run_a", "ms_run"} <= {r["run"] for r in report["runs"]}


@pytest.mark.slow
def test_convert_reads_s3(trained, tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    bucket, data, name = trained
    bucket.put("conv/ms_run/" + name, data)
    out = tmp_path / "converted"
    proc = warm.run([os.path.join(os.path.dirname(sys.executable), "tb-mindspore"), "convert",
                     bucket.url + "/conv", "--out", str(out), "--no-progress"],
                    capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    acc = EventAccumulator(str(out / "ms_run"), size_guidance={"scalars": 0})
    acc.Reload()
    assert [e.step for e in acc.Scalars("loss")] == list(range(1, 41))


def test_any_fsspec_protocol(trained, tmp_path, monkeypatch):
    """The same code serves other fsspec filesystems (gs://, hdfs://, ... with their library installed); fsspec's
    in-memory filesystem stands for them here: the *_MS reader and the writer's uploads."""
    import fsspec

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    _, data, name = trained
    mem = fsspec.filesystem("memory")
    mem.pipe("/tbms-any/logs/ms_run/" + name, data)
    reader = MsLogdir("memory://tbms-any/logs")
    reader.reload()
    assert reader.runs() == ["ms_run"] and list(reader.scalar_arrays("ms_run", "loss")[0]) == list(range(1, 41))
    monkeypatch.setenv("TB_MINDSPORE_STAGING", str(tmp_path))
    with SummaryWriter("memory://tbms-any/logs/run_w") as w:
        w.scalar(metadata.LOSS, 0.5, 1)
    assert [p.rsplit("/", 1)[-1] for p in mem.ls("/tbms-any/logs/run_w", detail=False)] == [
        w.base_path.rsplit("/", 1)[-1]]
    mem.rm("/tbms-any", recursive=True)
