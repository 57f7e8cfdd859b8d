"""The per-rank statistics file and its reader: rows written by RankStats's background thread, a row cut short at
the end (a killed process) left for later, incremental reads, replaced files, foreign files, argument checks."""

import math
import os
import subprocess
import sys
import time

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file
from tb_plugin_mindspore.answers import cluster

from cluster_data import write_rank_file
import warm


def test_rows_written_by_rank_stats_are_read_back(tmp_path):
    from tb_mindspore_callbacks.recorders.rank_stats import RankStats

    stats = RankStats(str(tmp_path), rank=3, rank_size=4, collect_freq=2, host="h1")
    for step in range(1, 11):
        stats.add_step(10.0 + step, 1.0 if step > 1 else None)
        if step % 2 == 0:
            row = stats.record(step, loss=2.0 / step, grad_norm=0.5)
    stats.close()
    assert math.isfinite(row["host_memory_mb"]) and row["host_memory_mb"] > 10     # /proc/self/statm on Linux
    assert math.isnan(row["device_memory_mb"])          # the CPU backend reports no device memory: none invented
    assert stats.path == os.path.join(str(tmp_path), "cluster", "rank3.tbmsrank")
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(3, stats.path)])
    data.reload()
    ranks, steps, walls, mats = data.aligned()
    assert [r.rank for r in ranks] == [3] and ranks[0].host == "h1"
    assert steps.tolist() == [2, 4, 6, 8, 10]
    np.testing.assert_allclose(mats["step_time_ms"][0][0], [11.5, 13.5, 15.5, 17.5, 19.5])
    np.testing.assert_allclose(mats["data_wait_ms"][0][0], 1.0)
    np.testing.assert_allclose(mats["loss"][0][0], [1.0, 0.5, 2 / 6, 0.25, 0.2], rtol=1e-6)
    assert not mats["device_memory_mb"][1].any()        # NaN device memory = not measured = missing cells


def test_a_row_cut_short_is_read_once_complete_and_reads_are_incremental(tmp_path):
    path = str(tmp_path / "cluster" / "rank0.tbmsrank")
    steps = np.arange(1, 6)
    write_rank_file(path, 0, steps, 1e9 + steps, {"loss": steps * 1.0})
    dtype = rank_file.record_dtype(metadata.RANK_FIELDS)
    extra = np.zeros(2, dtype=dtype)
    extra["step"], extra["wall_time"], extra["loss"] = [6, 7], [1e9 + 6, 1e9 + 7], [6.0, 7.0]
    raw = extra.tobytes()
    with open(path, "ab") as f:
        f.write(raw[:dtype.itemsize + 10])           # row 6 complete, row 7 cut short (killed while writing)
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload()
    assert data.aligned()[1].tolist() == [1, 2, 3, 4, 5, 6]
    version = data.version
    assert data.reload() == version                    # nothing new: the same version, nothing re-read
    with open(path, "ab") as f:
        f.write(raw[dtype.itemsize + 10:])
    assert data.reload() > version
    _, steps, _, mats = data.aligned()
    assert steps.tolist() == [1, 2, 3, 4, 5, 6, 7] and mats["loss"][0][0].tolist()[-1] == 7.0


def test_a_replaced_file_is_read_from_its_start_and_a_rerun_step_keeps_its_last_row(tmp_path):
    path = str(tmp_path / "cluster" / "rank0.tbmsrank")
    write_rank_file(path, 0, np.arange(1, 11), 1e9 + np.arange(1, 11), {"loss": np.full(10, 1.0)})
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload()
    os.remove(path)
    write_rank_file(path, 0, np.array([1, 2, 3, 2]), 1e9 + np.arange(4), {"loss": np.array([5.0, 6.0, 7.0, 8.0])})
    data.reload()
    _, steps, _, mats = data.aligned()
    assert steps.tolist() == [1, 2, 3] and mats["loss"][0][0].tolist() == [5.0, 8.0, 7.0]


def test_foreign_files_are_refused_with_a_reason(tmp_path):
    bad = tmp_path / "cluster" / "rank1.tbmsrank"
    bad.parent.mkdir()
    bad.write_bytes(b"not a rank file at all")
    with pytest.raises(rank_file.RankFileError, match="wrong magic"):
        rank_file.parse_header(bad.read_bytes())
    write_rank_file(str(tmp_path / "cluster" / "rank0.tbmsrank"), 0, np.arange(1, 4), np.arange(1, 4) * 1.0, {})
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, str(tmp_path / "cluster" / "rank0.tbmsrank")),
                                                               (1, str(bad))])
    data.reload()
    ranks, steps, _, _ = data.aligned()
    assert steps.tolist() == [1, 2, 3] and "magic" in [r for r in ranks if r.rank == 1][0].refused


def test_fifo_named_like_a_rank_file_is_never_opened(tmp_path):
    (tmp_path / "cluster").mkdir()
    os.mkfifo(str(tmp_path / "cluster" / "rank0.tbmsrank"))
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, str(tmp_path / "cluster" / "rank0.tbmsrank"))])
    data.reload()       # would block forever if opened
    assert data.aligned()[1].size == 0


@pytest.mark.parametrize("kwargs, message", [
    (dict(run_dir="", rank=0, rank_size=1), "run_dir must be a non-empty path"),
    (dict(run_dir="x", rank=-1, rank_size=1), "rank must be an int >= 0"),
    (dict(run_dir="x", rank=2, rank_size=2), "rank 2 is outside 0..1"),
    (dict(run_dir="x", rank=0, rank_size=1, collect_freq=0), "collect_freq must be an int >= 1"),
    (dict(run_dir="x", rank=True, rank_size=1), "rank must be an int >= 0"),
])
def test_rank_stats_arguments_are_checked(kwargs, message):
    from tb_mindspore_callbacks.recorders.rank_stats import RankStats

    with pytest.raises(ValueError, match=message):
        RankStats(**kwargs)


_WRITER = """
import os, sys, time
from tb_mindspore_callbacks.recorders.rank_stats import RankStats
stats = RankStats(sys.argv[1], rank=0, rank_size=1)
base, wait_for = float(sys.argv[2]), sys.argv[3]
for step in range(1, 1201):
    stats.record(step, loss=base + step)
    if step == 600 and wait_for != "-":     # the first job goes on only once the second one has ended
        deadline = time.time() + 120
        while not os.path.exists(wait_for) and time.time() < deadline:
            time.sleep(0.05)
stats.close()
print("FAILED" if stats.failed is not None else "WROTE", flush=True)
"""


@pytest.mark.slow
def test_a_second_process_never_interleaves_a_rank_file(tmp_path):
    """Two jobs given the same run folder: one writes the rank file, the other warns once and writes nothing (before:
    2,400 rows for 1,200 steps, steps out of order, mixed in the view)."""
    done = tmp_path / "second_done"
    first = warm.Popen([sys.executable, "-c", _WRITER, str(tmp_path), "0", str(done)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    path = tmp_path / "cluster" / "rank0.tbmsrank"
    deadline = time.time() + 60
    while not (path.exists() and path.stat().st_size > 200) and time.time() < deadline:
        time.sleep(0.01)
    second = warm.run([sys.executable, "-c", _WRITER, str(tmp_path), "10000", "-"], capture_output=True,
                      text=True, timeout=120)
    done.write_text("")
    out, err = first.communicate(timeout=120)
    assert "WROTE" in out and "FAILED" in second.stdout, (out, err, second.stdout, second.stderr)
    assert second.stderr.count("another process is writing") == 1, second.stderr
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, str(path))])
    data.reload(complete=True)
    ranks, steps, _, mats = data.aligned()
    assert steps.tolist() == list(range(1, 1201))
    np.testing.assert_array_equal(mats["loss"][0][0], np.arange(1, 1201, dtype=np.float32))   # the first's only
    assert os.path.getsize(path) == rank_file.parse_header(path.read_bytes())[1] + 1200 * rank_file.record_dtype(
        metadata.RANK_FIELDS).itemsize


def test_impossible_and_zero_records_are_left_out_and_counted(tmp_path):
    path = str(tmp_path / "cluster" / "rank0.tbmsrank")
    steps = np.array([1, 2, 3, 4, 5, 6, 7])
    walls = np.array([1e9 + 1, 1e9 + 2, np.inf, 1e9 + 4, -5.0, 1e9 + 6, 1e9 + 7])
    write_rank_file(path, 0, steps, walls, {"loss": np.arange(1.0, 8.0)})
    with open(path, "r+b") as f:            # rows 4 and 6: a negative step and step 2^63 - 1
        raw = bytearray(f.read())
        start = rank_file.parse_header(bytes(raw))[1]
        dtype = rank_file.record_dtype(metadata.RANK_FIELDS)
        rec = np.frombuffer(raw, dtype=dtype, offset=start, count=7).copy()
        rec["step"][3], rec["step"][5] = -4, 2 ** 63 - 1
        raw[start:] = rec.tobytes() + bytes(dtype.itemsize * 3)          # and three all-zero records
        f.seek(0)
        f.write(raw)
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload()
    (rank,), kept, _, _ = data.aligned()
    assert kept.tolist() == [1, 2, 7]
    assert rank.rejected == {"all_zero": 3, "bad_step": 2, "bad_wall_time": 2}
    reasons = " | ".join(rank.problems())
    assert "3 records left out: all zero bytes" in reasons and "2 records left out: an impossible step" in reasons
    assert "2 records left out: an impossible wall time" in reasons


def test_at_most_the_newest_rows_are_kept_per_rank(tmp_path, monkeypatch):
    from tb_plugin_mindspore.sources import cluster_ranks

    monkeypatch.setattr(cluster_ranks, "MAX_KEPT_STEPS", 1000)
    monkeypatch.setattr(cluster_ranks, "_READ_CHUNK", 4096)
    path = str(tmp_path / "cluster" / "rank0.tbmsrank")
    n = 5000
    write_rank_file(path, 0, np.arange(1, n + 1), 1e9 + np.arange(1, n + 1), {"loss": np.arange(n, dtype=float)})
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload(complete=True)
    (rank,), steps, _, _ = data.aligned()
    assert steps.tolist() == list(range(n - 999, n + 1)) and rank.dropped == n - 1000
    assert "4000 older rows let go (at most 1000 are kept per rank)" in rank.problems()


@pytest.mark.parametrize("header, reason", [
    (rank_file.MAGIC + (2 ** 32 - 1).to_bytes(4, "little"), "larger than"),
    (rank_file.MAGIC + b"\x10\x00\x00\x00" + b'{"version": 99,}', "not JSON"),
    (rank_file.MAGIC + (16).to_bytes(4, "little") + b'{"version": 999}', "not readable by this version"),
])
def test_a_refused_rank_file_is_shown_as_refused_with_its_reason(tmp_path, header, reason):
    from tb_plugin_mindspore.answers.cluster import ClusterReader

    write_rank_file(str(tmp_path / "run" / "cluster" / "rank0.tbmsrank"), 0, np.arange(1, 4), 1e9 + np.arange(1, 4),
                    {"loss": np.ones(3)})
    (tmp_path / "run" / "cluster" / "rank1.tbmsrank").write_bytes(header + bytes(64))
    import gzip
    import json

    reader = ClusterReader(str(tmp_path))
    body = json.loads(gzip.decompress(reader.matrix("run", "loss").data))
    rows = {r["rank"]: r for r in body["ranks"]}
    assert rows[0]["refused"] is None and rows[1]["label"] == "rank 1 (refused)" and reason in rows[1]["refused"]
    (problem,) = [p for p in reader.problems() if p["file"] == "run/cluster/rank1.tbmsrank"]
    assert problem["reason"].startswith("rank 1: refused: ") and reason in problem["reason"]


def test_an_unwritable_folder_stops_the_rows_with_one_warning_and_never_raises(tmp_path, caplog):
    from tb_mindspore_callbacks.recorders.rank_stats import RankStats

    blocker = tmp_path / "file"
    blocker.write_text("x")
    stats = RankStats(str(blocker), rank=0, rank_size=1)      # the run folder is a file: cannot create cluster/
    for step in range(1, 4):
        stats.record(step, 1.0, 1.0)
    stats.close()
    assert stats.failed is not None
    assert sum("stopped rank 0 statistics" in r.getMessage() for r in caplog.records) == 1


def test_a_damaged_record_in_a_rank_folder_loses_only_that_record(tmp_path):
    """A rank folder's event file read through the one record reader: a record whose length checksum is wrong is
    skipped, the framing is found again and the points after it are read; the damage is named."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tb_plugin_mindspore.io import records

    folder = tmp_path / "rank_0"
    folder.mkdir()
    frames = [records.frame(event_pb2.Event(step=step, wall_time=1e9 + step, summary=summary_pb2.Summary(
        value=[summary_pb2.Summary.Value(tag="loss", simple_value=float(step))])).SerializeToString())
        for step in range(1, 7)]
    damaged = bytearray(frames[2])
    damaged[0] ^= 0x01                                   # the length of step 3's record: the framing is lost
    (folder / "events.out.tfevents.1.h").write_bytes(b"".join(frames[:2]) + bytes(damaged) + b"".join(frames[3:]))
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FOLDERS, [(0, str(folder))])
    data.reload()
    (rank,), steps, _, mats = data.aligned()
    assert steps.tolist() == [1, 2, 4, 5, 6] and mats["loss"][0][0].tolist() == [1.0, 2.0, 4.0, 5.0, 6.0]
    assert "bad length checksum" in rank.error


def _append_rows(path, steps, columns):
    dtype = rank_file.record_dtype(metadata.RANK_FIELDS)
    rec = np.zeros(len(steps), dtype=dtype)
    rec["step"], rec["wall_time"] = steps, 1e9 + np.asarray(steps, dtype=float)
    for f in metadata.RANK_FIELDS:
        rec[f] = columns.get(f, np.full(len(steps), np.nan))
    with open(path, "ab") as fh:
        fh.write(rec.tobytes())
    return rec.nbytes


def _messy_cluster(tmp_path, seed, ranks=6, n=300):
    """Ranks with their own step sets: one stopped early, one that starts late, one with gaps, one whose loss is
    NaN in its last rows only, one that never had a gradient norm."""
    rs = np.random.RandomState(seed)
    members = []
    for r in range(ranks):
        steps = np.arange(1, n + 1) * 2
        if r == 1:
            steps = steps[: n // 3]
        elif r == 2:
            steps = steps[n // 2:]
        elif r == 3:
            steps = np.sort(rs.choice(steps, n // 2, replace=False))
        loss = rs.rand(steps.size)
        if r == 4:
            loss[-20:] = np.nan
        cols = {"loss": loss, "step_time_ms": 100 + rs.rand(steps.size), "host_memory_mb": 2000 + rs.rand(steps.size)}
        if r != 5:
            cols["grad_norm"] = rs.rand(steps.size)
        path = str(tmp_path / "cluster" / ("rank%d.tbmsrank" % r))
        write_rank_file(path, r, steps, 1e9 + steps, cols, host="h%d" % (r % 2))
        members.append((r, path))
    return members


@pytest.mark.parametrize("k", [1, 3, 10, 40, 250, 10000])
def test_the_newest_steps_aligned_alone_equal_the_whole_alignment_cut(tmp_path, k):
    members = _messy_cluster(tmp_path, seed=k)
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, members)
    data.reload()
    ranks, steps, walls, mats = data.aligned()
    lo = max(0, steps.size - k)
    t_ranks, t_steps, t_walls, t_mats, behind = data.tail(k)
    assert [r.rank for r in t_ranks] == [r.rank for r in ranks]
    assert t_steps.tolist() == steps[lo:].tolist()
    np.testing.assert_array_equal(t_walls, walls[lo:])
    assert sorted(t_mats) == sorted(mats)
    for field in mats:
        np.testing.assert_array_equal(t_mats[field][0], mats[field][0][:, lo:])
        np.testing.assert_array_equal(t_mats[field][1], mats[field][1][:, lo:])
    for r, b in zip(ranks, behind):
        last = r.arrays()[0][-1]
        assert b == min(k, int(np.count_nonzero(steps > last)))
    for field in ("host_memory_mb", "loss", "grad_norm"):
        for i, (s, x, p) in enumerate(data.rank_columns(field)):
            place = np.searchsorted(steps, s)
            np.testing.assert_array_equal(x, mats[field][0][i, place])
            np.testing.assert_array_equal(p, mats[field][1][i, place])
            assert not mats[field][1][i, np.setdiff1d(np.arange(steps.size), place)].any()


def test_a_reload_reads_only_the_appended_rows_and_keeps_the_newest(tmp_path, monkeypatch):
    from tb_plugin_mindspore.sources import cluster_ranks

    monkeypatch.setattr(cluster_ranks, "MAX_KEPT_STEPS", 1000)
    path = str(tmp_path / "cluster" / "rank0.tbmsrank")
    write_rank_file(path, 0, np.arange(1, 901), 1e9 + np.arange(1, 901), {"loss": np.arange(900, dtype=float)})
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload()
    (rank,) = data.ranks
    first = rank.bytes_read
    kept_before = rank.arrays()
    version = data.version
    end = 900
    for more in (50, 1, 200, 333, 1000, 7):      # through the buffer's end, several times
        before = rank.bytes_read
        appended = _append_rows(path, np.arange(end + 1, end + more + 1), {"loss": np.arange(end, end + more)})
        end += more
        data.reload()
        assert rank.bytes_read - before == appended
        steps, _, cols = rank.arrays()
        assert steps.tolist() == list(range(max(1, end - 999), end + 1))
        np.testing.assert_array_equal(cols["loss"], np.arange(max(1, end - 999), end + 1) - 1)
        assert rank.dropped == max(0, end - 1000)
    assert first < rank.bytes_read and data.version > version
    assert kept_before[0].tolist() == list(range(1, 901))     # what was handed out earlier did not change
    version, read = data.version, rank.bytes_read
    data.reload()
    assert data.version == version and rank.bytes_read == read    # nothing new: nothing read, the same version
    # the same rows read at once from the start
    fresh = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    fresh.reload(complete=True)
    np.testing.assert_array_equal(fresh.ranks[0].arrays()[0], rank.arrays()[0])
    np.testing.assert_array_equal(fresh.ranks[0].arrays()[2]["loss"], rank.arrays()[2]["loss"])
    assert fresh.ranks[0].dropped == rank.dropped


def test_a_step_written_twice_keeps_its_last_row_after_appends(tmp_path):
    path = str(tmp_path / "cluster" / "rank0.tbmsrank")
    write_rank_file(path, 0, np.arange(1, 11), 1e9 + np.arange(1, 11), {"loss": np.zeros(10)})
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload()
    _append_rows(path, np.arange(8, 13), {"loss": np.ones(5)})      # a re-run into the same folder from step 8
    data.reload()
    steps, _, cols = data.ranks[0].arrays()
    assert steps.tolist() == list(range(1, 13))
    assert cols["loss"].tolist() == [0.0] * 7 + [1.0] * 5
