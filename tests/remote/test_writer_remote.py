"""SummaryWriter with an s3:// logdir: staged locally, uploaded on flush and close (closed parts once, the live
part whole), rotated so the bytes sent stay linear, and never blocking or failing when the store is unreachable."""

import logging
import os
import time

import pytest

from conftest import Bucket, use_s3
from tb_harness import free_port
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.writing import writer as writer_module
from tb_plugin_mindspore.io import fs
from tb_plugin_mindspore.writing.writer import SummaryWriter


def _steps(url, tag=metadata.LOSS):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(url, size_guidance={"scalars": 0})     # TensorBoard's own S3 reader
    acc.Reload()
    return [e.step for e in acc.Scalars(tag)]


def test_upload_secs_validated():
    with pytest.raises(ValueError, match="upload_secs must be a number > 0, got 0"):
        SummaryWriter("s3://b/run", upload_secs=0)


def test_remote_run_round_trips(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("TB_MINDSPORE_STAGING", str(tmp_path))
    url = bucket.url + "/logs/run"
    w = SummaryWriter(url, upload_secs=30)
    assert w.logdir == url and w.local_dir.startswith(str(tmp_path))
    for step in range(1, 51):
        w.scalar(metadata.LOSS, 1.0 / step, step)
    w.flush()                                   # flush uploads the live part at once
    assert _steps(url) == list(range(1, 51))
    w.scalar(metadata.LOSS, 0.001, 51)
    w.close()
    assert _steps(url) == list(range(1, 52))
    assert not os.path.exists(w.local_dir)      # everything uploaded: the staging folder is gone
    assert bucket.keys("logs/run/") == ["logs/run/" + os.path.basename(w.base_path)]


@pytest.mark.slow
def test_live_part_rotates_to_keep_uploads_linear(bucket, tmp_path, monkeypatch):
    monkeypatch.setenv("TB_MINDSPORE_STAGING", str(tmp_path))
    url = bucket.url + "/logs/run"
    w = SummaryWriter(url, upload_secs=30)
    for step in range(1, 41):
        w.scalar(metadata.LOSS, float(step), step)
        w.flush()                               # one upload per step: the worst case
    w.close()
    written = sum(len(bucket.get(k)) for k in bucket.keys("logs/run/"))
    assert len(bucket.keys("logs/run/")) > 1                      # rotated into parts
    assert w.uploader.bytes_sent <= (writer_module.REUPLOAD_FACTOR + 2) * written
    assert _steps(url) == list(range(1, 41))


def test_unreachable_store_never_blocks_and_retries(s3_endpoint, tmp_path, monkeypatch, caplog):
    from moto.server import ThreadedMotoServer

    port = free_port()
    env = use_s3(monkeypatch, "http://127.0.0.1:%d" % port)          # nothing listens there yet
    monkeypatch.setenv("TB_MINDSPORE_STAGING", str(tmp_path))
    url = "s3://late-bucket/run"
    caplog.set_level(logging.WARNING, logger="tb_plugin_mindspore.writing.writer")
    w = SummaryWriter(url, upload_secs=0.2)
    start, cpu = time.perf_counter(), time.thread_time()
    for step in range(1, 1001):
        w.scalar(metadata.LOSS, 1.0, step)
    # The training thread never waits for the store: its own CPU time is the writes' (a few ms); its wall time
    # stays far below one failed upload with botocore's retries (seconds), even on a loaded machine (1.5 s at load 11).
    assert time.thread_time() - cpu < 0.5 and time.perf_counter() - start < 5
    deadline = time.time() + 20
    while w.uploader.failing is None and time.time() < deadline:
        time.sleep(0.05)
    assert w.uploader.failing is not None and w.dropped == 0
    time.sleep(0.5)
    warnings = [r.getMessage() for r in caplog.records if "cannot upload" in r.getMessage()]
    assert len(warnings) == 1 and w.local_dir in warnings[0]           # warned once, names where the data is
    assert os.path.getsize(w.path) > 1000                               # kept locally
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        Bucket("http://127.0.0.1:%d" % port, env).client.create_bucket(Bucket="late-bucket")
        w.close(timeout=60)
        assert w.uploader.failing is None
        assert any("work again" in r.getMessage() for r in caplog.records)
        assert _steps(url) == list(range(1, 1001))
    finally:
        server.stop()
        fs.reset()
