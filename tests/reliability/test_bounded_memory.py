"""Bounded memory for every input: a 2 GiB hostile rank file, ``*_MS`` file and event file (a valid header, then
2 GiB of zeros: what a preallocated or crash-zeroed file looks like; sparse, so they cost nothing on disk) add at
most 50 MB to a real ``tensorboard`` server (both loaders) and to ``tb-mindspore check``, and each one is named.

Before: the rank file alone added about 140 MB of server memory per reload (211 -> 639 MB in four sweeps), its zero
records taken as data."""

import os
import subprocess
import sys
import time
import urllib.request
import json

import numpy as np
import pytest

import hostile
from tb_harness import free_port

from tb_plugin_mindspore.contract import rank_file
from tb_plugin_mindspore.io import records

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "cluster"))
from cluster_data import write_rank_file  # noqa: E402

SIZE = 2 << 30
BOUND_MB = 50
ZERO_RECORDS = SIZE // rank_file.record_dtype(["loss"]).itemsize


@pytest.fixture(autouse=True)
def _drop_hostile_files(tmp_path):
    """Deletes each test's 2 GiB files after it: sparse, they take no disk, but every byte read of them stays in the
    page cache until they are deleted (2 GiB a file: 6 GiB of cached zeros a test, 18 GiB for this file on a machine of
    24, beside the rest of the suite)."""
    yield
    for path in tmp_path.rglob("*"):
        if path.is_file() and path.stat().st_size >= SIZE:
            path.unlink()


def _good_run(root):
    hostile.write_events(str(root / "good" / hostile.EVENT_NAME), hostile.loss_events(50))
    write_rank_file(str(root / "good" / "cluster" / "rank0.tbmsrank"), 0, np.arange(1, 51),
                    1.7e9 + np.arange(1, 51), {"loss": np.ones(50)})


def _sparse(path, head):
    os.makedirs(os.path.dirname(str(path)), exist_ok=True)
    with open(str(path), "wb") as f:
        f.write(head)
        f.truncate(len(head) + SIZE)


def _hostile_files(root):
    """The three 2 GiB files; returns their paths relative to ``root``."""
    from tensorboard.compat.proto import event_pb2

    from tb_plugin_mindspore.io import ms_proto

    rank = root / "good" / "cluster" / "rank1.tbmsrank"
    _sparse(rank, rank_file.header_bytes({"rank": 1, "rank_size": 2, "host": "node0", "local_rank": None,
                                          "pid": 0, "start_time": 1.7e9, "collect_freq": 1, "fields": ["loss"]}))
    event = root / "zeros_events" / hostile.EVENT_NAME
    _sparse(event, records.frame(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString()))
    ms = root / "zeros_ms" / hostile.MS_NAME
    _sparse(ms, records.frame(ms_proto.Event(wall_time=1.7e9, version=b"MindSpore.Event:1").SerializeToString())
            + records.frame(hostile.ms_scalar_event(1, 1.0).SerializeToString()))
    return [os.path.relpath(str(p), str(root)) for p in (rank, event, ms)]


# The child's own peak (VmHWM), not ru_maxrss: Linux carries ru_maxrss over exec, so a child of a 1 GB pytest
# worker would report the worker's peak and both runs would measure the same number.
_MEASURED_CHECK = """
import runpy, sys
sys.argv = ["tb-mindspore", "check", sys.argv[1], "--format", "json"]
try:
    runpy.run_module("tb_plugin_mindspore.cli", run_name="__main__")
except SystemExit as e:
    code = e.code
print("MAXRSS_KB %s" % open("/proc/self/status").read().split("VmHWM:")[1].split()[0], file=sys.stderr)
sys.exit(code)
"""


def _check_peak_mb(logdir):
    proc = subprocess.run([sys.executable, "-c", _MEASURED_CHECK, str(logdir)], capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    peak = int(proc.stderr.rsplit("MAXRSS_KB ", 1)[1].split()[0]) / 1024
    return peak, json.loads(proc.stdout), proc.stderr


@pytest.mark.slow
def test_check_reads_2_gib_hostile_files_in_bounded_memory(tmp_path):
    base, bad = tmp_path / "base", tmp_path / "bad"
    _good_run(base)
    _good_run(bad)
    named = _hostile_files(bad)
    base_mb, _, _ = _check_peak_mb(base)
    start = time.time()
    bad_mb, report, stderr = _check_peak_mb(bad)
    assert bad_mb - base_mb <= BOUND_MB, (base_mb, bad_mb)
    by_file = {w["file"]: w["reason"] for w in report["warnings"]}
    assert set(named) <= set(by_file), (named, by_file)
    assert by_file[named[0]] == "rank 1: %d records left out: all zero bytes" % ZERO_RECORDS
    assert {r["run"] for r in report["runs"]} >= {"good", "zeros_ms"}
    print("check: %.0f MB without, %.0f MB with the hostile files (+%.0f MB), %.0f s"
          % (base_mb, bad_mb, bad_mb - base_mb, time.time() - start))


def _tree_mb(pid):
    """``(VmRSS, VmHWM)`` in MB of a process and its children (TensorBoard's fast loader is a child process)."""
    pids = [pid] + [int(x) for x in subprocess.run(["pgrep", "-P", str(pid)], capture_output=True,
                                                   text=True).stdout.split()]
    rss = hwm = 0
    for p in pids:
        try:
            with open("/proc/%d/status" % p) as f:
                fields = dict(line.split(":", 1) for line in f.read().splitlines() if ":" in line)
        except OSError:
            continue
        rss += int(fields["VmRSS"].split()[0]) / 1024
        hwm += int(fields["VmHWM"].split()[0]) / 1024
    return rss, hwm


def _get(base, route):
    with urllib.request.urlopen(base + "/data/plugin/mindspore/" + route, timeout=60) as r:
        return json.loads(r.read())


@pytest.mark.slow
@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_server_reads_2_gib_hostile_files_in_bounded_memory(tmp_path, load_fast):
    root = tmp_path / "logs"
    _good_run(root)
    port = free_port()
    base = "http://127.0.0.1:%d" % port
    log = open(str(tmp_path / "tb.log"), "wb")
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "tensorboard"), "--logdir", str(root),
                             "--port", str(port), "--host", "127.0.0.1", "--reload_interval", "1",
                             "--load_fast", load_fast], stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while True:
            assert proc.poll() is None and time.time() < deadline, open(str(tmp_path / "tb.log")).read()[-3000:]
            try:
                if "good" in _get(base, "runs")["runs"] and _get(base, "clusters")["clusters"]:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        for route in ("status", "tags", "health", "cluster?run=good&metric=loss"):
            _get(base, route)
        before = _tree_mb(proc.pid)
        named = _hostile_files(root)
        deadline = time.time() + 300
        while True:                     # the cluster routes read 64 MB of a rank file per request
            _get(base, "clusters")
            _get(base, "cluster?run=good&metric=loss")
            by_file = {w["file"]: w["reason"] for w in _get(base, "status")["warnings"]}
            if set(named) <= set(by_file) and str(ZERO_RECORDS) in by_file[named[0]]:
                break
            assert time.time() < deadline, by_file
            time.sleep(0.3)
        for route in ("runs", "tags", "health", "media"):
            _get(base, route)
        after = _tree_mb(proc.pid)
        assert after[1] - before[1] <= BOUND_MB and after[0] - before[0] <= BOUND_MB, (before, after)
        print("server (load_fast=%s): RSS %.0f -> %.0f MB, peak %.0f -> %.0f MB"
              % (load_fast, before[0], after[0], before[1], after[1]))
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
