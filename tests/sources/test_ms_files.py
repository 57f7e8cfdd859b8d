"""The ``_MS`` reader on real MindSpore 2.10 files: every value, live tailing, corruption, bounded reloads."""

import json
import os
import shutil
import struct
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from ms_fixture_lib import HERE
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import vocabulary
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.sources import ms_files
from tb_plugin_mindspore.io import ms_proto
from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

import ms_normalize
import warm

f32 = np.float32


def load(root, max_bytes=16 << 20):
    logdir = MsLogdir(root)
    for _ in range(10000):
        if not logdir.reload(max_bytes=max_bytes).pending:
            break
    return logdir


def record_offsets(buf):
    """Start offsets of the records of a well-formed file."""
    out, off = [], 0
    while off + 12 <= len(buf):
        (n,) = struct.unpack_from("<Q", buf, off)
        out.append(off)
        off += 16 + n
    return out, off


def ms_event(step, values, wall=1.7e9):
    """A framed MindSpore Event built with our own definitions (for synthetic cases real MindSpore no longer
    writes, such as the ``[:Scalar]`` tags of older versions)."""
    ev = ms_proto.Event(wall_time=wall + step, step=step)
    for tag, value in values:
        ev.summary.value.add(tag=tag.encode(), scalar_value=value)
    return records.frame(ev.SerializeToString())


def version_event():
    return records.frame(ms_proto.Event(wall_time=1.7e9, version=b"MindSpore.Event:1").SerializeToString())


# ---------------------------------------------------------------------------------------------------------------
# Our message definitions against MindSpore's

_WIRE = {1: 1, 2: 5, 3: 0, 4: 0, 5: 0, 8: 0, 9: 2, 11: 2, 12: 2, 14: 0, 13: 0, 6: 1, 7: 5}   # type -> wire type
_OUR_TYPES = {"double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "bool": 8, "string": 9, "bytes": 12}


def test_every_field_matches_mindspore(ms_fixtures):
    theirs = ms_fixtures.descriptors
    checked = 0
    for name, fields in ms_proto.MESSAGE_LAYOUTS.items():
        assert name in theirs, name
        ours = {}
        for number, field, type_name, label, extra in fields:
            their = theirs[name].get(field)
            assert their is not None, "%s.%s is not in MindSpore's %s" % (name, field, name)
            their_number, their_type, their_repeated, their_msg = their
            assert number == their_number, (name, field)
            assert (label == "repeated") == their_repeated, (name, field)
            if "map" in extra or type_name not in _OUR_TYPES:
                our_type = 11
            else:
                our_type = _OUR_TYPES[type_name]
            if (name, field) in ms_proto.RELAXED_FIELDS:
                assert _WIRE[our_type] == _WIRE[their_type], (name, field)
            else:
                assert our_type == their_type, (name, field)
                if our_type == 11 and "map" not in extra:
                    assert their_msg == "mindspore.irpb." + type_name, (name, field)
            ours[field] = number
            checked += 1
        # And nothing of MindSpore's is missing from ours.
        assert set(theirs[name]) == set(ours), name
    assert checked > 80


def test_reader_never_imports_mindspore(ms_fixtures):
    code = (
        "import sys\n"
        "from tb_plugin_mindspore.sources.ms_logdir import MsLogdir\n"
        "from tb_plugin_mindspore.commands import convert\n"
        "d = MsLogdir(%r)\n"
        "d.reload()\n"
        "assert d.scalars('collector')['loss/auto']\n"
        "assert not [m for m in sys.modules if m == 'mindspore' or m.startswith('mindspore.')], 'imported'\n"
        "print('ok')\n" % ms_fixtures.root
    )
    # Started cold on purpose: the warm Python (warm.py) has MindSpore imported already.
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("impl", ["upb", "python"])
def test_reader_works_with_either_protobuf_backend(ms_fixtures, impl):
    # Importing MindSpore sets PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python, so the reader must work on the
    # pure-Python backend too (the health check and convert run in such processes).
    code = (
        "from google.protobuf.internal import api_implementation\n"
        "from tb_plugin_mindspore.sources.ms_logdir import MsLogdir\n"
        "d = MsLogdir(%r)\n"
        "d.reload()\n"
        "assert d.scalars('collector')['loss/auto'], 'no loss'\n"
        "assert d.histograms('collector'), 'no histograms'\n"
        "assert not d.warnings('collector'), d.warnings('collector')\n"
        "print(api_implementation.Type())\n" % ms_fixtures.root
    )
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=impl)
    proc = warm.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == impl


def test_decoding_equals_mindspores_own(ms_fixtures):
    """Every record of every real file, decoded by us, equals MindSpore's decoding field by field."""
    for rel, expected in ms_fixtures.reference.items():
        mf = ms_files.MsFile(ms_fixtures.path(rel))
        events, _ = mf.read_events(1 << 30)
        got = [[offset, ms_normalize.event(ev)] for offset, ev in events]
        assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True), rel
        assert mf.problems == [] and mf.pending == 0 and mf.offset == os.path.getsize(mf.path)


# ---------------------------------------------------------------------------------------------------------------
# Every value, by producer

def test_runs_are_folders_relative_to_the_logdir(ms_logdir):
    assert ms_logdir.runs() == ["collector", "landscape", "ops", "record", "scalars"]
    for run in ms_logdir.runs():
        assert ms_logdir.warnings(run) == []


def test_summary_collector_loss_and_parameter_histograms(ms_fixtures, ms_logdir):
    seen = ms_fixtures.expected["collector"]
    loss = dict((step, value) for step, value in seen["loss"])
    points = ms_logdir.scalars("collector")["loss/auto"]
    # SummaryCollector records every step (collect_freq=1) and once more at each epoch end (steps 4 and 8).
    assert [p[0] for p in points] == [1, 2, 3, 4, 4, 5, 6, 7, 8, 8]
    for step, wall, value in points:
        assert value == float(f32(loss[step]))
        assert 1.5e9 < wall < 4e9
    assert vocabulary.tier_of("loss/auto") == metadata.CORE
    assert metadata.display_name("loss/auto") == "loss"

    hists = ms_logdir.histograms("collector", stats=True)
    assert sorted(hists) == ["fc.bias/auto", "fc.weight/auto"]
    for tag, name in (("fc.weight/auto", "fc.weight"), ("fc.bias/auto", "fc.bias")):
        params = dict((step, np.array(v)) for step, v in seen["params"][name])
        series = hists[tag]
        assert [s[0] for s in series] == [1, 2, 3, 4, 4, 5, 6, 7, 8, 8]
        for step, _, buckets, stats in series:
            values = params[step].astype(np.float32)
            assert stats["count"] == values.size
            assert stats["min"] == pytest.approx(float(values.min()), abs=1e-6)
            assert stats["max"] == pytest.approx(float(values.max()), abs=1e-6)
            assert stats["sum"] == pytest.approx(float(values.astype(np.float64).sum()), abs=1e-5)
            assert stats["nan_count"] == stats["pos_inf_count"] == stats["neg_inf_count"] == 0
            assert sum(b[2] for b in buckets) == values.size
            assert buckets[0][0] == pytest.approx(stats["min"]) and buckets[-1][1] == pytest.approx(stats["max"])
            for left, right, count in buckets:
                inside = np.count_nonzero((values >= left - 1e-6) & (values <= right + 1e-6))
                assert inside >= count
    assert ms_logdir.stats("collector")["records"] > 10


def test_summary_collector_lineage(ms_logdir):
    lineage = ms_logdir.lineage("collector")
    hp = lineage["hparams"]
    assert hp["optimizer"] == "Momentum"
    assert hp["learning_rate"] == pytest.approx(0.05)
    assert hp["loss_function"] == "SoftmaxCrossEntropyWithLogits"
    assert hp["epoch"] == 2 and hp["batch_size"] == 4 and hp["train_dataset_size"] == 16
    assert hp["network"] == "Net" and hp["parallel_mode"] == "stand_alone"
    assert hp["note"] == "fixture" and hp["seed"] == 7
    assert lineage["user"] == {"note": "fixture", "seed": 7}
    assert lineage["dataset_graph"]["op_type"] == "Batch"
    assert lineage["dataset_graph"]["params"]["batch_size"] == 4
    assert lineage["dataset_graph"]["children"][0]["op_type"] == "GeneratorDataset"
    assert ms_logdir.lineage("record") == {}


def test_summary_record_every_value_type(ms_fixtures, ms_logdir):
    exp = ms_fixtures.expected["record"]
    scalars = ms_logdir.scalars("record")
    assert sorted(scalars) == ["acc", "train/lr"]
    for tag, step, value in exp["scalar"]:
        assert (step, float(f32(value))) in [(s, v) for s, _, v in scalars[tag]]
    assert all(len(v) == 5 for v in scalars.values())
    assert vocabulary.tier_of("train/lr") == metadata.CORE

    tensors = ms_logdir.tensors("record")["weights_t"]
    assert [t[0] for t in tensors] == [1, 2, 3, 4, 5]
    for (tag, step, shape, values), (got_step, _, array) in zip(exp["tensor"], tensors):
        assert got_step == step and array.shape == tuple(shape) and array.dtype == np.float32
        np.testing.assert_array_equal(array.ravel(), np.array(values, dtype=np.float32))

    hists = ms_logdir.histograms("record", stats=True)["dist"]
    assert [h[0] for h in hists] == [1, 2, 3, 4, 5]
    for (tag, step, values), (_, _, buckets, stats) in zip(exp["histogram"], hists):
        values = np.array(values, dtype=np.float32)
        finite = values[np.isfinite(values)]
        assert stats["count"] == values.size
        assert stats["nan_count"] == np.count_nonzero(np.isnan(values))
        assert stats["pos_inf_count"] == np.count_nonzero(values == np.inf)
        assert stats["neg_inf_count"] == np.count_nonzero(values == -np.inf)
        assert sum(b[2] for b in buckets) == finite.size
        assert stats["min"] == pytest.approx(float(finite.min()), abs=1e-6)
        assert stats["max"] == pytest.approx(float(finite.max()), abs=1e-6)
    assert hists[2][3]["nan_count"] == 1 and hists[2][3]["pos_inf_count"] == 1 and hists[2][3]["neg_inf_count"] == 1

    images = ms_logdir.images("record")["pic"]
    assert [i[0] for i in images] == [1, 2, 3, 4, 5]
    from PIL import Image
    import io
    for _, _, image in images:
        assert image["mime"] == "image/png"
        assert (image["width"], image["height"], image["colorspace"]) == (5, 4, 3)
        assert Image.open(io.BytesIO(image["encoded"])).size == (5, 4)


def test_summary_record_scalars_only(ms_fixtures, ms_logdir):
    """Same tags every step (read by the vectorized path) and one step with an extra tag (read value by value)."""
    want = {}
    for tag, step, value in ms_fixtures.expected["scalars"]:
        want.setdefault(tag, []).append((step, value))
    got = ms_logdir.scalars("scalars")
    assert {tag: [(s, v) for s, _, v in points] for tag, points in got.items()} == want
    assert [p[0] for p in got["loss"]] == list(range(1, 41))
    walls = [w for _, w, _ in got["loss"]]
    assert walls == sorted(walls)


def test_summary_ops_in_graph_mode(ms_fixtures, ms_logdir):
    exp = ms_fixtures.expected["ops"]
    tags = ms_logdir.tags("ops")
    # MindSpore 2.10 strips the op's "[:Scalar]" type suffix before writing (older versions kept it).
    assert tags == {"scalars": ["xsum"], "histograms": ["xhist"], "tensors": ["xtensor"], "images": ["ximage"],
                    "landscapes": []}
    scal = ms_logdir.scalars("ops")["xsum"]
    assert [(s, v) for s, _, v in scal] == [(step, float(f32(total))) for step, total, _ in exp]
    for (step, _, x), (got_step, _, array) in zip(exp, ms_logdir.tensors("ops")["xtensor"]):
        assert got_step == step and array.shape == (3, 4)
        np.testing.assert_array_equal(array.ravel(), np.array(x, dtype=np.float32))
    for (step, _, x), (got_step, _, buckets, stats) in zip(exp, ms_logdir.histograms("ops", stats=True)["xhist"]):
        x = np.array(x, dtype=np.float32)
        assert got_step == step and stats["count"] == 12 and sum(b[2] for b in buckets) == 12
        assert stats["min"] == pytest.approx(float(x.min())) and stats["max"] == pytest.approx(float(x.max()))
    images = ms_logdir.images("ops")["ximage"]
    assert [(i[0], i[2]["width"], i[2]["height"]) for i in images] == [(1, 7, 6), (2, 7, 6), (3, 7, 6)]
    assert ms_logdir.stats("ops")["graphs"] == 1


def test_summary_landscape(ms_fixtures, ms_logdir):
    lands = ms_logdir.landscapes("landscape")
    assert sorted(lands) == ["landscape_[1, 3]", "landscape_[3]"]
    pca = lands["landscape_[1, 3]"][0]
    assert pca[0] == 0
    d = pca[2]
    assert d["metadata"] == {"decomposition": "PCA", "unit": "epoch", "step_per_epoch": 2}
    assert len(d["landscape"]["x"]) == 3 and len(d["landscape"]["y"]) == 3
    assert np.array(d["landscape"]["z"]).shape == (3, 3)
    assert d["loss_path"]["intervals"] == [1, 2, 3]
    assert len(d["loss_path"]["x"]) == len(d["loss_path"]["z"]) == 3
    assert d["convergence_point"]["z"][0] == pytest.approx(d["loss_path"]["z"][-1])
    rnd = lands["landscape_[3]"][0][2]
    assert rnd["metadata"]["decomposition"] == "Random" and rnd["loss_path"] is None
    assert rnd["landscape"]["x"] == [-1.0, 0.0, 1.0]
    # Same numbers as MindSpore's own decoding.
    rel = [p for p in ms_fixtures.files("landscape") if any(
        v.get("kind") == "loss_landscape" for _, e in ms_fixtures.reference[p] for v in e.get("values", []))][0]
    ref = {v["tag"]: v["landscape"] for _, e in ms_fixtures.reference[rel] for v in e.get("values", [])}
    for tag, items in lands.items():
        z = np.array(ref[tag]["landscape"]["z"]["float_data"]).reshape(ref[tag]["landscape"]["z"]["dims"])
        np.testing.assert_array_equal(np.array(items[0][2]["landscape"]["z"]), z.astype(np.float32))
    # The landscape run also holds the collector's loss/auto and lineage.
    assert ms_logdir.scalars("landscape")["loss/auto"]
    assert ms_logdir.lineage("landscape")["hparams"]["epoch"] == 3


def test_accessor_filters_and_unknown_run(ms_logdir):
    assert list(ms_logdir.scalars("record", tags="acc")) == ["acc"]
    assert list(ms_logdir.scalars("record", tags=["acc", "nope"])) == ["acc"]
    steps, walls, values = ms_logdir.scalar_arrays("record", "acc")
    assert steps.dtype == np.int64 and walls.dtype == np.float64 and values.dtype == np.float32
    assert steps.tolist() == [1, 2, 3, 4, 5]
    assert ms_logdir.scalar_arrays("record", "nope") is None
    for accessor in (ms_logdir.scalars, ms_logdir.histograms, ms_logdir.tensors, ms_logdir.images,
                     ms_logdir.landscapes, ms_logdir.lineage, ms_logdir.warnings, ms_logdir.version,
                     ms_logdir.tags, ms_logdir.stats):
        with pytest.raises(KeyError):
            accessor("no/such/run")
    assert not ms_logdir.has_run("no/such/run") and ms_logdir.has_run("ops")


def test_missing_or_empty_logdir(tmp_path):
    missing = MsLogdir(tmp_path / "not-yet")
    result = missing.reload()
    assert missing.runs() == [] and result.bytes_read == 0 and not result.pending
    (tmp_path / "not-yet").mkdir()
    (tmp_path / "not-yet" / "events.out.tfevents.1.host").write_bytes(b"not ours")
    missing.reload()
    assert missing.runs() == []


def test_root_run_is_dot_and_nested_runs(tmp_path, ms_fixtures):
    rel = ms_fixtures.files("record")[0]
    shutil.copy(ms_fixtures.path(rel), tmp_path / os.path.basename(rel))
    (tmp_path / "a" / "b").mkdir(parents=True)
    shutil.copy(ms_fixtures.path(rel), tmp_path / "a" / "b" / os.path.basename(rel))
    logdir = load(tmp_path)
    assert logdir.runs() == [".", os.path.join("a", "b")]
    assert logdir.scalars(".")["acc"] == logdir.scalars("a/b")["acc"]


def test_legacy_op_tags_are_read_and_cleaned(tmp_path):
    path = tmp_path / "events.out.events.summary.1700000000.0.host_MS"
    path.write_bytes(version_event() + ms_event(1, [("xsum[:Scalar]", 1.5)]) + ms_event(2, [("xsum[:Scalar]", 2.5)]))
    logdir = load(tmp_path)
    assert logdir.scalars(".") == {"xsum[:Scalar]": [(1, 1.7e9 + 1, 1.5), (2, 1.7e9 + 2, 2.5)]}
    assert metadata.display_name("xsum[:Scalar]") == "xsum"


# ---------------------------------------------------------------------------------------------------------------
# Live tailing

def test_partial_record_waits_then_new_steps_appear(tmp_path, ms_fixtures):
    rel = ms_fixtures.files("record")[0]
    data = open(ms_fixtures.path(rel), "rb").read()
    starts, _ = record_offsets(data)
    path = tmp_path / "run" / os.path.basename(rel)
    path.parent.mkdir()
    cut = starts[3] + 20                       # three whole records (version + steps 1, 2) and a partial one
    path.write_bytes(data[:cut])
    logdir = MsLogdir(tmp_path)
    logdir.reload()
    assert [p[0] for p in logdir.scalars("run")["acc"]] == [1, 2]
    assert logdir.warnings("run") == []
    assert logdir.stats("run")["pending_bytes"] == cut - starts[3]
    v1 = logdir.version("run")
    logdir.reload()
    assert logdir.version("run") == v1      # nothing new: same version
    with open(path, "ab") as f:
        f.write(data[cut:])
    logdir.reload()
    assert [p[0] for p in logdir.scalars("run")["acc"]] == [1, 2, 3, 4, 5]
    assert [h[0] for h in logdir.histograms("run")["dist"]] == [1, 2, 3, 4, 5]
    assert logdir.version("run") != v1
    assert logdir.warnings("run") == [] and logdir.stats("run")["pending_bytes"] == 0


def test_new_files_and_runs_are_picked_up(tmp_path, ms_fixtures):
    logdir = MsLogdir(tmp_path)
    logdir.reload()
    assert logdir.runs() == []
    ms_fixtures.copy_run("ops", tmp_path)
    result = logdir.reload()
    assert result.new_runs == ["ops"] and logdir.runs() == ["ops"]
    ms_fixtures.copy_run("record", tmp_path)
    assert logdir.reload().new_runs == ["record"]
    assert logdir.runs() == ["ops", "record"]
    assert len(logdir.scalars("record")["acc"]) == 5


@pytest.mark.slow
def test_file_written_live_by_summary_record(tmp_path):
    """A real SummaryRecord writes steps 1-3, flushes and waits; we read; it writes 4-6; we read again."""
    go = tmp_path / "go"
    env = dict(os.environ, GLOG_v="3", OMP_NUM_THREADS="1")
    proc = warm.Popen([sys.executable, os.path.join(HERE, "ms_make_fixtures.py"), str(tmp_path), "live",
                       str(go)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.time() + 300
        while not (tmp_path / "phase1").exists():
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.time() < deadline
            time.sleep(0.1)
        logdir = MsLogdir(tmp_path)
        steps = []
        for _ in range(100):        # the writer process writes asynchronously: wait for the flushed steps
            logdir.reload()
            if logdir.has_run("live"):
                steps = [p[0] for p in logdir.scalars("live").get("live/loss", [])]
                if len(steps) == 3:
                    break
            time.sleep(0.1)
        assert steps == [1, 2, 3]
        assert logdir.warnings("live") == []
        go.write_text("go")
        assert proc.wait(timeout=300) == 0
        logdir.reload()
        points = logdir.scalars("live")["live/loss"]
        assert [p[0] for p in points] == [1, 2, 3, 4, 5, 6]
        assert [p[2] for p in points] == [float(f32(10.0 / s)) for s in range(1, 7)]
        assert logdir.warnings("live") == []
    finally:
        if proc.poll() is None:
            proc.kill()


# ---------------------------------------------------------------------------------------------------------------
# Corruption

def _corrupt_copy(ms_fixtures, tmp_path, run="record"):
    rel = ms_fixtures.files(run)[0]
    data = bytearray(open(ms_fixtures.path(rel), "rb").read())
    path = tmp_path / "run" / os.path.basename(rel)
    path.parent.mkdir()
    return data, path


def test_bad_payload_checksum_is_skipped_and_reported(tmp_path, ms_fixtures):
    data, path = _corrupt_copy(ms_fixtures, tmp_path)
    starts, _ = record_offsets(bytes(data))
    data[starts[2] + 12 + 5] ^= 0xFF            # a byte inside the payload of step 2
    path.write_bytes(bytes(data))
    logdir = load(tmp_path)
    assert [p[0] for p in logdir.scalars("run")["acc"]] == [1, 3, 4, 5]
    assert [h[0] for h in logdir.histograms("run")["dist"]] == [1, 3, 4, 5]
    warnings = logdir.warnings("run")
    assert warnings == [{"file": os.path.join("run", path.name), "offset": starts[2],
                         "reason": "bad payload checksum; record skipped"}]
    assert logdir.stats("run")["skipped"] == 1


def test_bad_length_checksum_resynchronizes(tmp_path, ms_fixtures):
    data, path = _corrupt_copy(ms_fixtures, tmp_path)
    starts, _ = record_offsets(bytes(data))
    data[starts[2] + 1] ^= 0x40                 # the length of step 2's record
    path.write_bytes(bytes(data))
    logdir = load(tmp_path)
    assert [p[0] for p in logdir.scalars("run")["acc"]] == [1, 3, 4, 5]
    (warning,) = logdir.warnings("run")
    assert warning["offset"] == starts[2]
    assert warning["reason"] == "bad length checksum; skipped %d bytes" % (starts[3] - starts[2])


def test_valid_checksum_but_undecodable_payload(tmp_path, ms_fixtures):
    data, path = _corrupt_copy(ms_fixtures, tmp_path)
    starts, end = record_offsets(bytes(data))
    garbage = records.frame(b"\x0a\xff\xff\xff\xff\x0f garbage")   # a length that runs past the payload
    path.write_bytes(bytes(data[:starts[3]]) + garbage + bytes(data[starts[3]:]))
    logdir = load(tmp_path)
    assert [p[0] for p in logdir.scalars("run")["acc"]] == [1, 2, 3, 4, 5]
    (warning,) = logdir.warnings("run")
    assert warning["offset"] == starts[3] and warning["reason"].startswith("undecodable payload")


def test_garbage_in_the_middle_and_truncated_tail(tmp_path, ms_fixtures):
    data, path = _corrupt_copy(ms_fixtures, tmp_path)
    starts, end = record_offsets(bytes(data))
    rng = np.random.RandomState(0)
    blob = rng.bytes(5000) + b"\x00" * 3000
    path.write_bytes(bytes(data[:starts[2]]) + blob + bytes(data[starts[2]:end - 7]))
    logdir = load(tmp_path)
    # Step 5's record is cut short: waited for, not reported.
    assert [p[0] for p in logdir.scalars("run")["acc"]] == [1, 2, 3, 4]
    (warning,) = logdir.warnings("run")
    assert warning["offset"] == starts[2] and "skipped 8000 bytes" in warning["reason"]
    assert logdir.stats("run")["pending_bytes"] == end - 7 - starts[-1]


def test_pure_garbage_file_never_raises(tmp_path):
    path = tmp_path / "events.out.events.summary.1.0.host_MS"
    path.write_bytes(np.random.RandomState(1).bytes(200_000))
    logdir = load(tmp_path, max_bytes=30_000)
    assert logdir.runs() == ["."]
    assert logdir.scalars(".") == {}
    warnings = logdir.warnings(".")
    assert warnings and warnings[0]["offset"] == 0
    # The whole file has been looked at (up to a possible header fragment at the end).
    assert logdir.stats(".")["bytes_read"] >= 200_000 - 11


def test_unreadable_file_is_reported_once(tmp_path):
    (tmp_path / "events.out.events.summary.1.0.host_MS").symlink_to(tmp_path / "gone")
    logdir = MsLogdir(tmp_path)
    logdir.reload()
    logdir.reload()
    assert logdir.runs() == ["."]
    (warning,) = logdir.warnings(".")
    assert "cannot read file" in warning["reason"]
    assert logdir.stats(".")["skipped"] == 0


# ---------------------------------------------------------------------------------------------------------------
# Bounded work, thinning, threads

def _big_file(path, steps, tags=4):
    chunks = [version_event()]
    for step in range(1, steps + 1):
        chunks.append(ms_event(step, [("t%d" % i, step * 0.5 + i) for i in range(tags)]))
    path.write_bytes(b"".join(chunks))


def test_reload_work_is_bounded(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    _big_file(tmp_path / "a" / "events.out.events.summary.1.0.h_MS", 3000)
    _big_file(tmp_path / "b" / "events.out.events.summary.1.0.h_MS", 3000)
    size = os.path.getsize(tmp_path / "a" / "events.out.events.summary.1.0.h_MS")
    logdir = MsLogdir(tmp_path)
    first = logdir.reload(max_bytes=10_000)
    assert first.pending and first.bytes_read <= 10_000
    calls = 1
    while logdir.reload(max_bytes=10_000).pending:
        calls += 1
    assert calls >= 2 * size // 10_000 - 1
    for run in ("a", "b"):
        assert [p[0] for p in logdir.scalars(run)["t3"]] == list(range(1, 3001))


def test_histograms_are_thinned_but_keep_the_latest(tmp_path):
    chunks = [version_event()]
    for step in range(1, 1001):
        ev = ms_proto.Event(wall_time=1.7e9, step=step)
        v = ev.summary.value.add(tag=b"w/auto")
        v.histogram.buckets.add(left=0.0, width=1.0, count=step)
        v.histogram.count = step
        chunks.append(records.frame(ev.SerializeToString()))
    (tmp_path / "events.out.events.summary.1.0.h_MS").write_bytes(b"".join(chunks))
    logdir = MsLogdir(tmp_path, samples={"histograms": 50})
    while logdir.reload(max_bytes=5000).pending:
        pass
    series = logdir.histograms(".")["w/auto"]
    steps = [s[0] for s in series]
    assert len(series) <= 51 and steps[0] == 1 and steps[-1] == 1000
    assert steps == sorted(steps)
    assert all(s[2] == [[0.0, 1.0, float(s[0])]] for s in series)


def test_readers_while_a_thread_reloads(tmp_path):
    path = tmp_path / "events.out.events.summary.1.0.h_MS"
    _big_file(path, 4000, tags=3)
    logdir = MsLogdir(tmp_path)
    done = threading.Event()
    errors = []

    def loader():
        try:
            while logdir.reload(max_bytes=4000).pending:
                pass
        except Exception as e:  # pragma: no cover - would fail the test
            errors.append(e)
        finally:
            done.set()

    thread = threading.Thread(target=loader)
    thread.start()
    last, looks = 0, 0
    while True:
        finished = done.is_set()
        if logdir.has_run("."):
            arrays = logdir.scalar_arrays(".", "t2")
            if arrays is not None:
                steps, walls, values = arrays
                assert len(steps) == len(walls) == len(values) >= last
                assert steps.tolist() == list(range(1, len(steps) + 1))
                np.testing.assert_array_equal(values, (steps * 0.5 + 2).astype(np.float32))
                last = len(steps)
                looks += 1
            points = logdir.scalars(".")
            assert len({len(v) for v in points.values()}) <= 1     # all tags of a record land together
            logdir.warnings(".")
            logdir.version(".")
        if finished:
            break
    thread.join()
    assert errors == [] and last == 4000 and looks > 1


def test_scalar_memory_is_compact(tmp_path):
    path = tmp_path / "events.out.events.summary.1.0.h_MS"
    _big_file(path, 20000, tags=5)
    logdir = load(tmp_path)
    held = 0
    for data in logdir._file_data("."):
        for series in data.scalars.values():
            held += sum(sys.getsizeof(a) for a in series)
    assert held / 100_000 < 26           # 20 bytes a point, plus the arrays' spare room


def test_repeated_layouts_take_the_vectorized_path_in_file_order(tmp_path):
    chunks = [version_event()]
    want = {}
    for step in range(1, 201):
        if step % 7 == 0:
            values = [("aaaa", step + 0.25), ("bbbb", -step)]        # same bytes length as the usual layout
        elif step % 11 == 0:
            values = [("xxxx", step + 0.5), ("xxxx", step + 0.75)]  # one tag twice in a record
        else:
            values = [("xxxx", step * 1.0), ("yyyy", step * 2.0)]
        chunks.append(ms_event(step, values))
        for tag, value in values:
            want.setdefault(tag, []).append((step, 1.7e9 + step, float(f32(value))))
    (tmp_path / "events.out.events.summary.1.0.h_MS").write_bytes(b"".join(chunks))
    for budget in (300, 5000, 1 << 20):
        logdir = MsLogdir(tmp_path)
        while logdir.reload(max_bytes=budget).pending:
            pass
        assert logdir.scalars(".") == want
        templates = logdir._file_data(".")[0].templates
        assert any(t is not None and [bytes(x) for x in t.tags] == [b"xxxx", b"yyyy"] for t in templates.values())


def test_background_thread_picks_up_data(tmp_path, ms_fixtures):
    logdir = MsLogdir(tmp_path)
    logdir.start(interval=0.05, max_bytes=1000)
    logdir.start(interval=0.05)                       # a second start does nothing
    try:
        ms_fixtures.copy_run("scalars", tmp_path)
        deadline = time.time() + 60
        while time.time() < deadline:
            if logdir.has_run("scalars") and len(logdir.scalars("scalars").get("loss", [])) == 40:
                break
            time.sleep(0.05)
        assert len(logdir.scalars("scalars")["loss"]) == 40
    finally:
        logdir.stop()
    assert logdir._thread is None
