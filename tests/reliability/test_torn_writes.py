"""Torn writes, the way SQLite and LevelDB prove their logs: a 10,000-record event file, ``*_MS`` file and per-rank
statistics file cut at every byte offset of their last records and at sampled offsets throughout, each cut read by
the plugin's readers (the event files through the reader ``check`` and ``report`` use and the one the tab's every-point
store uses; ``*_MS`` files through ``MsLogdir``; rank files through the cluster reader). Every complete record before
the cut is recovered exactly, the cut one is never reported as damage (a file being written looks the same), no
exception escapes; and a reader that saw the cut file reads the rest exactly once the file is completed.

Short form: 1,000-record files, every byte of the last record and 10 sampled cuts per file kind; the slow form the
10,000-record files, every byte of the last record and 40 sampled cuts; ``bench/fuzz.py --torn`` runs the full
matrix (every byte of the last three records and thousands of sampled cuts; its figures are in RELIABILITY.md).
"""

import os
import random

import numpy as np
import pytest

import hostile
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import rank_file
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.sources import cluster_ranks, event_logdir, event_series
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir
from tb_plugin_mindspore.writing import summary

RECORDS = 10000


def _event_file(n):
    """``(bytes, [end offset of each record], [step of each record or None])`` of ``n`` records."""
    from tensorboard.compat.proto import event_pb2

    parts = [records.frame(event_pb2.Event(wall_time=hostile.T0, file_version="brain.Event:2").SerializeToString())]
    steps = [None]
    for s in range(1, n):
        event = event_pb2.Event(step=s, wall_time=hostile.T0 + s)
        event.summary.value.extend([summary.scalar(metadata.LOSS, 1.0 / s)])
        parts.append(records.frame(event.SerializeToString()))
        steps.append(s)
    return _joined(parts, steps)


def _ms_file(n):
    from tb_plugin_mindspore.io import ms_proto

    parts = [records.frame(ms_proto.Event(wall_time=hostile.T0, version=b"MindSpore.Event:1").SerializeToString())]
    steps = [None]
    for s in range(1, n):
        parts.append(records.frame(hostile.ms_scalar_event(s, 1.0 / s).SerializeToString()))
        steps.append(s)
    return _joined(parts, steps)


def _rank_file(n):
    header = rank_file.header_bytes({"rank": 0, "rank_size": 1, "host": "h", "local_rank": None, "pid": 1,
                                     "start_time": hostile.T0, "collect_freq": 1})
    dtype = rank_file.record_dtype(metadata.RANK_FIELDS)
    rec = np.zeros(n, dtype=dtype)
    rec["step"] = np.arange(1, n + 1)
    rec["wall_time"] = hostile.T0 + rec["step"]
    rec["loss"] = 1.0 / rec["step"]
    data = header + rec.tobytes()
    ends = [len(header) + (i + 1) * dtype.itemsize for i in range(n)]
    return data, ends, list(range(1, n + 1))


def _joined(parts, steps):
    ends, total = [], 0
    for p in parts:
        total += len(p)
        ends.append(total)
    return b"".join(parts), ends, steps


def _expected(ends, steps, cut):
    return [s for end, s in zip(ends, steps) if end <= cut and s is not None]


# -- the readers: each returns (steps recovered, warnings), on a reader it may be given again after the file grew -----
def _event_logdir_read(logdir, reader=None):
    reader = reader or event_logdir.EventLogdir(logdir)
    reader.read_all()
    series = reader.series("run").get(metadata.LOSS)
    return (series.scalar_arrays()[0].tolist() if series is not None else []), reader.warnings(), reader


def _event_series_read(logdir, reader=None):
    reader = reader or event_series.EventSeries(logdir)
    reader.want("run")
    while reader.sync("run", max_bytes=1 << 20, wait=None):
        pass
    series = reader.series("run", metadata.LOSS)
    steps = series.final()[0].tolist() if series is not None else []
    return steps, [], reader


def _ms_read(logdir, reader=None):
    reader = reader or MsLogdir(logdir)
    while reader.reload().pending:
        pass
    steps = [p[0] for p in reader.scalars("run").get("loss/auto", [])] if reader.has_run("run") else []
    return steps, reader.warnings("run") if reader.has_run("run") else [], reader


def _rank_read(logdir, reader=None):
    path = os.path.join(logdir, "run", "cluster", "rank0.tbmsrank")
    reader = reader or cluster_ranks.ClusterData("run", cluster_ranks.SOURCE_RANK_FILES, [(0, path)])
    reader.reload(complete=True)
    (rank,), steps, _, _ = reader.aligned()
    return steps.tolist(), rank.problems(), reader


KINDS = {
    "event file (check)": (_event_file, hostile.EVENT_NAME, _event_logdir_read),
    "event file (tab)": (_event_file, hostile.EVENT_NAME, _event_series_read),
    "_MS file": (_ms_file, hostile.MS_NAME, _ms_read),
    "rank file": (_rank_file, os.path.join("cluster", "rank0.tbmsrank"), _rank_read),
}


def _cuts(ends, last_records, samples, seed):
    """Every byte offset inside the last ``last_records`` records (and at their ends), plus ``samples`` offsets
    drawn at random throughout the file."""
    start = ends[-1 - last_records] if len(ends) > last_records else 0
    cuts = set(range(start, ends[-1] + 1))
    rng = random.Random(seed)
    cuts.update(rng.randrange(0, ends[-1]) for _ in range(samples))
    return sorted(cuts, reverse=True)


def torn_matrix(tmp_path, kind, last_records, samples, seed=0, grow_every=7, n=RECORDS):
    """Runs the matrix for one kind of file of ``n`` records; returns the number of cuts checked. ``grow_every``:
    one cut in this many is also completed again afterwards and read on by the same reader."""
    build, name, read = KINDS[kind]
    data, ends, steps = build(n)
    logdir = str(tmp_path / kind.replace(" ", "_").replace("(", "").replace(")", ""))
    path = os.path.join(logdir, "run", name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cuts = _cuts(ends, last_records, samples, seed)
    for n, cut in enumerate(cuts):
        with open(path, "wb") as f:
            f.write(data[:cut])
        got, warnings, reader = read(logdir)
        want = _expected(ends, steps, cut)
        assert got == want, (kind, cut, len(got), len(want))
        assert not warnings, (kind, cut, warnings)            # a cut record is a record being written, not damage
        if n % grow_every == 0:
            with open(path, "ab") as f:
                f.write(data[cut:])
            got, warnings, _ = read(logdir, reader)
            assert got == [s for s in steps if s is not None] and not warnings, (kind, cut, "completed")
    return len(cuts)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_torn_writes_short(tmp_path, kind):
    """1,000 records: every byte of the last record, 10 sampled cuts."""
    assert torn_matrix(tmp_path, kind, last_records=1, samples=10, n=1000) > 10


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_torn_writes(tmp_path, kind):
    """10,000 records: every byte of the last record, 40 sampled cuts."""
    assert torn_matrix(tmp_path, kind, last_records=1, samples=40, seed=1) > 40
