"""The per-rank statistics file and its reader: rows written by RankStats's background thread, a row cut short at
the end (a killed process) left for later, incremental reads, replaced files, foreign files, argument checks."""

import math
import os

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file
from tb_plugin_mindspore.answers import cluster

from cluster_data import write_rank_file


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
    write_rank_file(path, 0, np.arange(1, 11), np.arange(1, 11) * 1.0, {"loss": np.full(10, 1.0)})
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(0, path)])
    data.reload()
    os.remove(path)
    write_rank_file(path, 0, np.array([1, 2, 3, 2]), np.arange(4) * 1.0, {"loss": np.array([5.0, 6.0, 7.0, 8.0])})
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
    assert steps.tolist() == [1, 2, 3] and "magic" in [r for r in ranks if r.rank == 1][0].error


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


def test_an_unwritable_folder_stops_the_rows_with_one_warning_and_never_raises(tmp_path, caplog):
    from tb_mindspore_callbacks.recorders.rank_stats import RankStats

    blocker = tmp_path / "file"
    blocker.write_text("x")
    stats = RankStats(str(blocker), rank=0, rank_size=1)      # the run folder is a file: cannot create cluster/
    for step in range(1, 4):
        stats.record(step, 1.0, 1.0)
    stats.close()
    assert stats.failed is not None
    assert sum("rank 0 statistics stopped" in r.getMessage() for r in caplog.records) == 1
