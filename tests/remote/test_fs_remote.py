"""reading/fs.py against a real S3-protocol server: listing, stat, byte ranges, and what the readers built on it
(the ``*_MS`` reader, the record-header scanner, the status route's scan) fetch per poll."""

import os

import pytest

from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.io import event_headers, fs
from tb_plugin_mindspore.sources import logdir_status


def test_local_paths_keep_os(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "f.bin").write_bytes(b"0123456789")
    assert not fs.is_remote(str(tmp_path)) and fs.is_remote("s3://b/p") and not fs.is_remote("file:///x")
    assert fs.normalize("file://" + str(tmp_path)) == str(tmp_path)
    assert list(fs.walk(str(tmp_path))) == list(os.walk(str(tmp_path)))
    assert fs.stat(str(tmp_path / "a" / "f.bin")) == os.stat(str(tmp_path / "a" / "f.bin"))
    assert fs.read_bytes(str(tmp_path / "a" / "f.bin"), 2, 5) == b"234"
    with pytest.raises(FileNotFoundError):
        fs.stat(str(tmp_path / "missing"))


def test_endpoint_options():
    assert fs.storage_options("s3", {"S3_ENDPOINT": "obs.example.com"})["client_kwargs"] == {
        "endpoint_url": "https://obs.example.com"}
    assert fs.storage_options("s3", {"S3_ENDPOINT": "localhost:9000", "S3_USE_HTTPS": "0"})["client_kwargs"] == {
        "endpoint_url": "http://localhost:9000"}
    assert fs.storage_options("s3", {"AWS_ENDPOINT_URL": "http://h:1"})["client_kwargs"] == {
        "endpoint_url": "http://h:1"}
    assert "client_kwargs" not in fs.storage_options("s3", {})
    assert fs.storage_options("gs", {}) == {"use_listings_cache": False}
    assert fs.join("s3://b/p/", "run", "f") == "s3://b/p/run/f"
    assert fs.relpath("s3://b/p/run/f", "s3://b/p") == "run/f" and fs.relpath("s3://b/p", "s3://b/p/") == "."


def test_unknown_protocol_is_one_line_error():
    with pytest.raises(OSError, match="no filesystem for nosuchfs://"):
        fs.stat("nosuchfs://x/y")


def test_walk_stat_and_ranges(bucket):
    bucket.put("logs/run_a/f1", b"a" * 100)
    bucket.put("logs/run_a/sub/f2", b"b" * 10)
    bucket.put("logs/run_b/f3", b"")
    bucket.put("other/f4", b"x")
    walked = list(fs.walk(bucket.url + "/logs/"))
    top = bucket.url + "/logs"
    assert walked == [(top, ["run_a", "run_b"], []), (top + "/run_a", ["sub"], ["f1"]),
                      (top + "/run_b", [], ["f3"]), (top + "/run_a/sub", [], ["f2"])]
    before = dict(fs.counters)
    assert fs.stat(top + "/run_a/f1").st_size == 100        # from the listing: no request
    assert fs.counters["requests"] == before["requests"]
    assert fs.read_bytes(top + "/run_a/f1", 90, 200) == b"a" * 10
    assert fs.counters["bytes"] - before["bytes"] == 10
    with pytest.raises(FileNotFoundError):
        fs.stat(top + "/nothing")
    assert fs.isdir(top + "/run_a") and not fs.isdir(top + "/run_a/f1") and fs.exists(top + "/run_a/f1")
    assert list(fs.walk(bucket.url + "/absent")) in ([], [(bucket.url + "/absent", [], [])])


def _record(payload):
    return records.frame(payload)


def test_header_scanner_and_status_on_s3(bucket):
    good = b"".join(_record(b"x" * 50) for _ in range(20))
    # b"x" * 10 decodes as an Event (unknown varint fields); b"y" would not (a fixed64 cut short) and be named too
    bad = _record(b"x" * 10) + (1 << 60).to_bytes(8, "little") + records.masked_crc32c(
        (1 << 60).to_bytes(8, "little")).to_bytes(4, "little")
    bucket.put("logs/ok/events.out.tfevents.1.h", good)
    bucket.put("logs/bad/events.out.tfevents.2.h", bad)
    bucket.put("logs/ms/x.out.events.summary.1.0.h_MS", b"")
    status = logdir_status.LogdirStatus(bucket.url + "/logs")
    warnings = status.file_warnings()
    assert [(w["run"], w["file"], w["offset"]) for w in warnings] == [
        ("bad", "bad/events.out.tfevents.2.h", len(_record(b"x" * 10)))]
    assert "cannot read past it" in warnings[0]["reason"]
    counts = status.describe(run_count=0, has_scalars=False)["counts"]
    assert counts["event_files"] == 2 and counts["ms_files"] == 1
    # Incremental: a second scan after the file grew fetches only the new bytes.
    scanner = event_headers.HeaderScanner(bucket.url + "/logs")
    path = bucket.url + "/logs/ok/events.out.tfevents.1.h"
    assert scanner.findings([path]) == []
    more = b"".join(_record(b"x" * 70) for _ in range(5))
    bucket.put("logs/ok/events.out.tfevents.1.h", good + more)
    fs.reset()
    before = fs.counters["bytes"]
    assert scanner.findings([path]) == []
    assert fs.counters["bytes"] - before == len(more)


def test_store_outage_forgets_nothing(monkeypatch, caplog):
    """The *_MS reader over a store that goes away: its runs stay, a reload neither raises nor forgets them."""
    from moto.server import ThreadedMotoServer

    from conftest import Bucket, use_s3
    from tb_harness import free_port
    from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        env = use_s3(monkeypatch, "http://127.0.0.1:%d" % port)
        bucket = Bucket("http://127.0.0.1:%d" % port, env)
        bucket.put("logs/run/x.out.events.summary.1.0.h_MS", b"")
        reader = MsLogdir(bucket.url + "/logs")
        reader.reload()
        assert reader.runs() == ["run"]
    finally:
        server.stop()
    reader.reload()
    assert reader.runs() == ["run"]
    assert any("cannot list" in r.getMessage() for r in caplog.records)
    fs.reset()


def test_doctor_reads_a_remote_logdir(bucket):
    from tb_plugin_mindspore.commands.doctor import check_logdir

    bucket.put("logs/run_a/events.out.tfevents.1.host", b"x" * 200)
    bucket.put("logs/run_b/x.summary.1_MS", b"y" * 10)
    [ok] = check_logdir(bucket.url + "/logs")
    assert ok["status"] == "ok" and "1 TensorBoard event file(s) and 1 MindSpore" in ok["message"], ok
    [missing] = check_logdir(bucket.url + "/nothing")
    assert missing["status"] == "fail" and "Nothing is stored under" in missing["message"]
