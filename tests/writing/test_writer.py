"""SummaryWriter: what it writes is readable by TensorBoard; queue, flush, rotation, budget, write errors."""

import json
import logging
import os
import sys
import textwrap
import time

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.writing.writer import SummaryWriter
import warm

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _accumulator(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0, "tensors": 0, "histograms": 0})
    ea.Reload()
    return ea


def _event_files(logdir):
    return sorted(f for f in os.listdir(str(logdir)) if "tfevents" in f)


def test_every_kind_round_trips_through_tensorboard(tmp_path):
    from tensorboard.util import tensor_util

    with SummaryWriter(tmp_path) as w:
        for step in range(1, 4):
            w.scalar(metadata.LOSS, 1.0 / step, step)
        w.scalar(metadata.GRAD_NORM, float("nan"), 3)
        w.interval(metadata.LOSS, 0.1, 0.5, 2.0, 10, 1, step=3)
        w.layers(metadata.WEIGHT_NORM_LAYERS, ["a.weight", "b.weight"], [1.5, 2.5], step=3)
        w.histogram("debug/activation/a", np.arange(100.0), step=3)
        w.run_info({"rank": 0, "collect_freq": 10})
        w.hparams({"lr": 0.01, "optimizer": "adam", "layers": 2})
    ea = _accumulator(tmp_path)
    assert [(e.step, e.value) for e in ea.Scalars(metadata.LOSS)] == [(1, 1.0), (2, 0.5), (3, pytest.approx(1 / 3))]
    assert np.isnan(ea.Scalars(metadata.GRAD_NORM)[0].value)
    iv = tensor_util.make_ndarray(ea.Tensors(metadata.interval_tag(metadata.LOSS))[0].tensor_proto)
    assert iv.tolist() == [0.1, 0.5, 2.0, 10, 1]
    md = ea.SummaryMetadata(metadata.interval_tag(metadata.LOSS))
    assert metadata.parse_content(md.plugin_data.content)["kind"] == metadata.KIND_INTERVAL
    layers_md = metadata.parse_content(ea.SummaryMetadata(metadata.WEIGHT_NORM_LAYERS).plugin_data.content)
    assert layers_md["layers"] == ["a.weight", "b.weight"]
    (hist,) = ea.Histograms("debug/activation/a")               # the stock histogram format
    assert hist.step == 3 and hist.histogram_value.num == 100 and sum(hist.histogram_value.bucket) == 100
    assert (hist.histogram_value.min, hist.histogram_value.max) == (0.0, 99.0)
    # What TensorBoard's tabs (and this plugin) read: the [left, right, count] buckets of the histograms plugin.
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    acc.Reload()
    assert acc.SummaryMetadata("debug/activation/a").plugin_data.plugin_name == "histograms"
    buckets = tensor_util.make_ndarray(acc.Tensors("debug/activation/a")[0].tensor_proto)
    assert buckets.shape[1] == 3 and buckets[:, 2].sum() == 100
    assert buckets[0, 0] == 0.0 and buckets[-1, 1] == 99.0
    info = tensor_util.make_ndarray(ea.Tensors(metadata.RUN_INFO)[0].tensor_proto)
    raw = info.item() if info.shape == () else info.reshape(-1)[0]
    assert json.loads(raw)["content_version"] == metadata.CONTENT_VERSION
    assert "_hparams_/session_start_info" in ea.Tags()["tensors"]


def test_hparams_tab_lists_the_run(tmp_path):
    from tensorboard.plugins.hparams import metadata as hp_metadata

    with SummaryWriter(tmp_path / "run") as w:
        w.hparams({"lr": 0.01, "optimizer": "adam"})
        w.scalar(metadata.LOSS, 1.0, 1)
    ea = _accumulator(tmp_path / "run")
    content = ea.SummaryMetadata("_hparams_/session_start_info").plugin_data.content
    info = hp_metadata.parse_session_start_info_plugin_data(content)
    assert info.hparams["lr"].number_value == pytest.approx(0.01)
    assert info.hparams["optimizer"].string_value == "adam"


def test_flushes_within_flush_secs_without_close(tmp_path):
    w = SummaryWriter(tmp_path, flush_secs=0.3)
    try:
        w.scalar(metadata.LOSS, 1.0, 1)
        deadline = time.time() + 5
        while time.time() < deadline:
            if metadata.LOSS in _accumulator(tmp_path).Tags()["scalars"]:
                break
            time.sleep(0.1)
        else:
            raise AssertionError("not flushed after 5 s with flush_secs=0.3")
    finally:
        w.close()
    w.close()  # twice is fine


def test_full_queue_drops_and_counts_never_blocks(tmp_path, caplog):
    w = SummaryWriter(tmp_path, max_queue=1)
    try:
        with caplog.at_level(logging.WARNING):
            start = time.perf_counter()
            for step in range(20000):
                w.scalar(metadata.LOSS, 1.0, step)
            assert time.perf_counter() - start < 5
    finally:
        w.close()
    assert w.dropped > 0
    assert any("dropped" in r.getMessage() for r in caplog.records)
    kept = len(_accumulator(tmp_path).Scalars(metadata.LOSS))
    assert kept + w.dropped == 20000


def test_rotation_keeps_every_value_in_order(tmp_path):
    with SummaryWriter(tmp_path, max_file_bytes=4096) as w:
        w.run_info({"rank": 0})
        for step in range(1, 1001):
            w.scalar(metadata.LOSS, float(step), step)
    files = _event_files(tmp_path)
    assert len(files) > 5
    assert files[0] == os.path.basename(w.base_path) and files[1].endswith(".part0001")
    assert all(os.path.getsize(tmp_path / f) < 4096 + 200 for f in files)
    assert [e.step for e in _accumulator(tmp_path).Scalars(metadata.LOSS)] == list(range(1, 1001))


def test_budget_removes_oldest_parts_and_keeps_run_info(tmp_path, caplog):
    with caplog.at_level(logging.WARNING):
        with SummaryWriter(tmp_path, max_file_bytes=4096, max_run_bytes=16384) as w:
            w.run_info({"rank": 0})
            w.hparams({"lr": 0.1})
            for step in range(1, 3001):
                w.scalar(metadata.LOSS, float(step), step)
    total = sum(os.path.getsize(tmp_path / f) for f in os.listdir(tmp_path))
    assert total <= 16384 + 4096
    assert w.removed_parts and not any(os.path.exists(p) for p in w.removed_parts)
    assert any("budget" in r.getMessage() for r in caplog.records)
    ea = _accumulator(tmp_path)
    steps = [e.step for e in ea.Scalars(metadata.LOSS)]
    assert steps[-1] == 3000 and steps == sorted(steps) and steps[0] > 1   # newest kept, oldest gone
    assert metadata.RUN_INFO in ea.Tags()["tensors"]
    assert "_hparams_/session_start_info" in ea.Tags()["tensors"]


def test_bad_sizes_rejected():
    with pytest.raises(ValueError):
        SummaryWriter("unused", max_file_bytes=10)
    with pytest.raises(ValueError):
        SummaryWriter("unused", max_file_bytes=8192, max_run_bytes=10000)
    with pytest.raises(ValueError):
        SummaryWriter("unused", flush_secs=0)


def test_write_error_stops_writer_not_the_program(tmp_path):
    """A real write failure: the child's file size limit (RLIMIT_FSIZE) makes writes fail with EFBIG."""
    script = textwrap.dedent("""
        import logging, resource, signal, sys
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (20000, 20000))
        logging.basicConfig(level=logging.WARNING)
        from tb_plugin_mindspore.writing.writer import SummaryWriter
        w = SummaryWriter(sys.argv[1], flush_secs=0.05)
        for step in range(5000):
            w.scalar("core/loss", float(step), step)
        w.flush()
        w.close()
        print("FAILED", type(w.failed).__name__, w.failed is not None)
        print("STILL RUNNING")
    """)
    proc = warm.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                    timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "FAILED OSError True" in proc.stdout and "STILL RUNNING" in proc.stdout
    assert "stopped writing" in proc.stderr
    steps = [e.step for e in _accumulator(tmp_path).Scalars("core/loss")]
    assert steps == list(range(len(steps))) and 0 < len(steps) < 5000   # what fit is readable


def _metadata_count_per_file(folder, tag):
    from tensorboard.compat.proto import event_pb2

    from tb_plugin_mindspore.io import records

    counts = {}
    for name in _event_files(folder):
        data = open(os.path.join(folder, name), "rb").read()
        n = 0
        for _, _, raw in records.read_records(data):
            for v in event_pb2.Event.FromString(raw).summary.value:
                n += v.tag == tag and v.HasField("metadata")
        counts[name] = n
    return counts


def test_metadata_written_once_per_tag_and_file(tmp_path):
    names = ["layer%d.weight" % i for i in range(50)]
    with SummaryWriter(tmp_path / "one") as w:
        for step in range(1, 101):
            w.layers(metadata.UPDATE_RATIO_LAYERS, names, np.full(50, 1e-3), step)
    assert list(_metadata_count_per_file(tmp_path / "one", metadata.UPDATE_RATIO_LAYERS).values()) == [1]
    # Still a layers series with its names for TensorBoard's loader, at every step.
    from tensorboard.backend.event_processing.plugin_event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tmp_path / "one"), size_guidance={"tensors": 0})
    acc.Reload()
    assert len(acc.Tensors(metadata.UPDATE_RATIO_LAYERS)) == 100
    content = metadata.parse_content(acc.SummaryMetadata(metadata.UPDATE_RATIO_LAYERS).plugin_data.content)
    assert content["layers"] == names

    # After rotation every part file carries it once, so a part left alone after the budget still reads.
    with SummaryWriter(tmp_path / "rot", max_file_bytes=4096) as w:
        for step in range(1, 101):
            w.layers(metadata.UPDATE_RATIO_LAYERS, names, np.full(50, 1e-3), step)
    counts = _metadata_count_per_file(tmp_path / "rot", metadata.UPDATE_RATIO_LAYERS)
    assert len(counts) > 2 and set(counts.values()) == {1}


def _own_steps_with_budget(folder):
    with SummaryWriter(folder, max_file_bytes=4096, max_run_bytes=16384) as w:
        for step in range(1, 3001):
            w.scalar(metadata.LOSS, float(step), step)
    return [e.step for e in _accumulator(folder).Scalars(metadata.LOSS)], w


def test_budget_counts_only_this_writers_files(tmp_path):
    """Other writers' files (another rank's subfolder, an older run's file) do not eat this writer's budget."""
    alone, _ = _own_steps_with_budget(tmp_path / "alone")
    (tmp_path / "shared" / "rank1").mkdir(parents=True)
    (tmp_path / "shared" / "rank1" / "events.out.tfevents.1.host.1.1").write_bytes(b"\0" * 200000)
    (tmp_path / "shared" / "notes.bin").write_bytes(b"\0" * 50000)
    shared, w = _own_steps_with_budget(tmp_path / "shared")
    assert len(shared) == len(alone) and shared[-1] == 3000
    assert sum(os.path.getsize(p) for p in w.parts) <= 16384
    assert os.path.getsize(tmp_path / "shared" / "rank1" / "events.out.tfevents.1.host.1.1") == 200000


def test_removed_run_folder_is_recreated_with_run_info(tmp_path, caplog):
    import shutil

    folder = tmp_path / "run"
    with caplog.at_level(logging.WARNING):
        with SummaryWriter(folder, flush_secs=0.05) as w:
            w.run_info({"rank": 0})
            for step in range(1, 11):
                w.scalar(metadata.LOSS, float(step), step)
            w.flush()
            for _ in range(2):          # removed twice: recreated twice, one warning
                shutil.rmtree(folder)
                w.scalar(metadata.LOSS, 0.0, 0)
                w.flush()
            for step in range(11, 21):
                w.scalar(metadata.LOSS, float(step), step)
    assert w.recreated == 2 and w.failed is None
    assert sum("was removed" in r.getMessage() for r in caplog.records) == 1
    ea = _accumulator(folder)
    assert [e.step for e in ea.Scalars(metadata.LOSS)] == [0] + list(range(11, 21))
    assert metadata.RUN_INFO in ea.Tags()["tensors"]


def test_close_never_raises_after_failures(tmp_path):
    """Unwritable data at close (the file vanished under a failed writer, a closed file object): no exception."""
    w = SummaryWriter(tmp_path / "run", flush_secs=60)
    w.scalar(metadata.LOSS, 1.0, 1)
    w.flush()
    w._file.close()                     # what a failed rotation used to leave behind
    w.scalar(metadata.LOSS, 2.0, 2)
    w.flush()
    w.close()
    w.close()
    assert isinstance(w.failed, ValueError)


def test_ctrl_c_caught_by_the_program_keeps_recording(tmp_path):
    """SIGINT writes everything out but leaves the writer open: a program that catches it records on."""
    script = textwrap.dedent("""
        import os, signal, sys
        from tb_plugin_mindspore.writing.writer import SummaryWriter, install_signal_handlers
        signal.signal(signal.SIGINT, signal.default_int_handler)   # as started from a terminal (a shell's
        w = SummaryWriter(sys.argv[1], flush_secs=60)                # background job inherits SIGINT ignored)
        install_signal_handlers()
        w.scalar("core/loss", 1.0, 1)
        try:
            os.kill(os.getpid(), signal.SIGINT)
        except KeyboardInterrupt:
            from tb_plugin_mindspore.io import records
            print("CAUGHT", len(list(records.read_records(open(w.path, "rb").read()))), flush=True)
        w.scalar("core/loss", 2.0, 2)
    """)
    proc = warm.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True,
                    timeout=60, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "CAUGHT 2" in proc.stdout       # header and step 1 reached the file before KeyboardInterrupt was raised
    assert [e.step for e in _accumulator(tmp_path).Scalars("core/loss")] == [1, 2]
