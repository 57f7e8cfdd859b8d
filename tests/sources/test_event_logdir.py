"""The plugin's own reader of TensorBoard event files (``sources/event_logdir.py``, ``event_provider.py``): what
``check`` and ``report`` load. It must give what TensorBoard's own loader gives (runs, summary metadata, data
classes, values), read a run of many files in time linear in their number, and leave out, count and name what it
cannot read."""

import json
import os
import sys
import time

import numpy as np
import pytest
from tensorboard import context as tb_context
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.sources import event_logdir, event_provider
from tb_plugin_mindspore.writing import summary
import warm

CLI = os.path.join(os.path.dirname(sys.executable), "tb-mindspore")
T0 = 1_700_000_000.0
CTX = tb_context.RequestContext()


def _event(step, *values, wall=None):
    return event_pb2.Event(step=step, wall_time=T0 + step if wall is None else wall,
                           summary=summary_pb2.Summary(value=list(values)))


def _write(path, events, tail=b""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(records.frame(event_pb2.Event(wall_time=T0, file_version="brain.Event:2").SerializeToString()))
        for e in events:
            f.write(e if isinstance(e, bytes) else records.frame(e.SerializeToString()))
        f.write(tail)
    return str(path)


def _every_kind(run_dir):
    """Scalars (ours and a legacy simple_value), interval rows, per-layer vectors, run info, a histogram (new and
    legacy), text, HParams, an image and a graph, over two files, written by TensorBoard's own writer."""
    from tensorboard.plugins.histogram import summary_v2 as histogram_summary
    from tensorboard.plugins.hparams import summary_v2 as hparams_summary
    from tensorboard.plugins.text import summary_v2 as text_summary

    for part in range(2):
        writer = EventFileWriter(str(run_dir), filename_suffix=".part%d" % part)

        def add(step, *values):
            writer.add_event(_event(step, *values))

        if part == 0:
            add(0, summary.run_info({"collect_freq": 1}))
            writer.add_event(event_pb2.Event(step=0, wall_time=T0, graph_def=b"\x0a\x03abc"))
            writer.add_event(event_pb2.Event(step=0, wall_time=T0, summary=hparams_summary.hparams_pb(
                {"lr": 0.1, "optimizer": "adam"})))
        for s in range(1 + part * 30, 31 + part * 30):
            add(s, summary.scalar(metadata.LOSS, 1.0 / s), summary.interval(metadata.LOSS, 0.5 / s, 1.0 / s, 2.0 / s,
                                                                            4, 0),
                summary.layers(metadata.UPDATE_RATIO_LAYERS, ["a", "b"], [1e-3 * s, 2e-3]),
                summary_pb2.Summary.Value(tag="legacy/acc", simple_value=s / 100.0))
            if s % 10 == 0:
                hist = histogram_summary.histogram_pb("weights/hist", np.arange(s, dtype=np.float64))
                add(s, *hist.value)
                legacy = summary_pb2.HistogramProto(min=0, max=s, num=s, sum=s, sum_squares=s,
                                                    bucket_limit=[1.0, float(s)], bucket=[1.0, s - 1.0])
                add(s, summary_pb2.Summary.Value(tag="legacy/histo", histo=legacy))
                add(s, *text_summary.text_pb("notes", "step %d" % s).value)
                image = summary_pb2.Summary.Image(height=1, width=1, colorspace=1, encoded_image_string=b"png%d" % s)
                add(s, summary_pb2.Summary.Value(tag="legacy/image", image=image))
        writer.close()


def _tensorboard_provider(logdir):
    """TensorBoard's own Python loader, every point kept (what ``check`` used before)."""
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer

    mux = plugin_event_multiplexer.EventMultiplexer(size_guidance={"tensors": 0}, tensor_size_guidance={
        "scalars": 0, metadata.PLUGIN_NAME: 0, "histograms": 0, "text": 0, "hparams": 0})
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    return data_provider.MultiplexerDataProvider(mux, str(logdir))


def _listing(series):
    return {run: {tag: (ts.max_step, ts.max_wall_time, ts.plugin_content, ts.display_name, ts.description)
                  for tag, ts in tags.items()} for run, tags in series.items()}


def test_same_runs_metadata_and_values_as_tensorboards_loader(tmp_path):
    _every_kind(tmp_path / "logs" / "a")
    _every_kind(tmp_path / "logs" / "nested" / "b")
    _write(str(tmp_path / "logs" / "events.out.tfevents.1.root"), [_event(1, summary.scalar(metadata.LOSS, 3.0))])
    ours = event_provider.load(str(tmp_path / "logs"))
    theirs = _tensorboard_provider(tmp_path / "logs")
    assert sorted(r.run_name for r in ours.list_runs(CTX, experiment_id="")) == \
        sorted(r.run_name for r in theirs.list_runs(CTX, experiment_id="")) == [".", "a", "nested/b"]
    plugins = theirs.list_plugins(CTX, experiment_id="")
    assert sorted(ours.list_plugins(CTX, experiment_id="")) == sorted(plugins)
    assert {"scalars", metadata.PLUGIN_NAME, "histograms", "text", "hparams", "images", "graphs"} <= set(plugins)
    kw = dict(experiment_id="", downsample=10 ** 9)
    for plugin in plugins:
        assert _listing(ours.list_scalars(CTX, experiment_id="", plugin_name=plugin)) == \
            _listing(theirs.list_scalars(CTX, experiment_id="", plugin_name=plugin)), plugin
        assert ours.read_scalars(CTX, plugin_name=plugin, **kw) == theirs.read_scalars(CTX, plugin_name=plugin, **kw)
        assert _listing(ours.list_tensors(CTX, experiment_id="", plugin_name=plugin)) == \
            _listing(theirs.list_tensors(CTX, experiment_id="", plugin_name=plugin)), plugin
        a, b = (p.read_tensors(CTX, plugin_name=plugin, **kw) for p in (ours, theirs))
        assert {r: sorted(t) for r, t in a.items()} == {r: sorted(t) for r, t in b.items()}
        for run, tags in b.items():
            for tag, data in tags.items():
                assert [(d.step, d.wall_time) for d in a[run][tag]] == [(d.step, d.wall_time) for d in data]
                for x, y in zip(a[run][tag], data):
                    assert x.numpy.dtype == y.numpy.dtype and np.array_equal(x.numpy, y.numpy), (run, tag)
        a = ours.list_blob_sequences(CTX, experiment_id="", plugin_name=plugin)
        b = theirs.list_blob_sequences(CTX, experiment_id="", plugin_name=plugin)
        assert {r: sorted(t) for r, t in a.items()} == {r: sorted(t) for r, t in b.items()}, plugin
    images = ours.read_blob_sequences(CTX, plugin_name="images", **kw)["a"]["legacy/image"]
    assert ours.read_blob(CTX, blob_key=images[-1].values[2].blob_key) == b"png60"
    loss = ours.read_scalars(CTX, plugin_name="scalars", **kw)["a"][metadata.LOSS]
    assert [d.step for d in loss] == list(range(1, 61))


def _bad_utf8_record(step):
    """A record whose checksums are good but whose tag is not UTF-8: protobuf refuses to decode it."""
    data = _event(step, summary.scalar("core/lossXX", 9.0)).SerializeToString().replace(b"lossXX", b"loss\xff\xfe")
    return records.frame(data)


@pytest.mark.slow
def test_undecodable_record_is_skipped_counted_and_named(tmp_path):
    logs = tmp_path / "logs"
    path = _write(str(logs / "bad" / "events.out.tfevents.1.host"),
                  [_event(1, summary.scalar(metadata.LOSS, 1.0)), _bad_utf8_record(2),
                   _event(3, summary.scalar(metadata.LOSS, 3.0))])
    _write(str(logs / "good" / "events.out.tfevents.1.host"), [_event(s, summary.scalar(metadata.LOSS, s))
                                                               for s in range(1, 6)])
    reader = event_logdir.EventLogdir(str(logs)).read_all()
    assert reader.series("bad")[metadata.LOSS].scalar_arrays()[0].tolist() == [1, 3]
    assert len(reader.series("good")[metadata.LOSS]) == 5
    offset = len(records.frame(event_pb2.Event(wall_time=T0, file_version="brain.Event:2").SerializeToString())) + \
        len(records.frame(_event(1, summary.scalar(metadata.LOSS, 1.0)).SerializeToString()))
    (w,) = reader.warnings()
    assert w["run"] == "bad" and w["file"] == "bad/" + os.path.basename(path) and w["offset"] == offset
    assert "undecodable record" in w["reason"] and "utf-8" in w["reason"].lower()
    assert reader.stats()["skipped"] == 1

    proc = warm.run([CLI, "check", str(logs), "--format", "json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout)
    assert [r["run"] for r in out["runs"]] == ["bad", "good"]
    assert [(w["file"], w["offset"]) for w in out["warnings"]] == [("bad/" + os.path.basename(path), offset)]
    assert "warning: bad/%s at byte %d: undecodable record" % (os.path.basename(path), offset) in proc.stderr
    assert "Traceback" not in proc.stderr
    text = warm.run([CLI, "check", str(logs)], capture_output=True, text=True, timeout=120).stdout
    assert "left out (not read):" in text and "undecodable record" in text


def _many_files(folder, n, records_each=3):
    os.makedirs(folder, exist_ok=True)
    step = 0
    for i in range(n):
        events = []
        for _ in range(records_each):
            step += 1
            events.append(_event(step, summary_pb2.Summary.Value(tag="loss", simple_value=1.0 / step)))
        _write(os.path.join(folder, "events.out.tfevents.%010d.host.%d" % (i, i)), events)
    return step


def _read_cpu(logdir):
    t0 = time.process_time()
    reader = event_logdir.EventLogdir(logdir).read_all()
    return time.process_time() - t0, reader


def test_many_files_are_read_in_linear_time(tmp_path):
    """TensorBoard's directory watcher listed the folder once per file (quadratic: 1,000 files 18 s, 10,000 never
    finished); this reader lists it once per reload. 10x the files must cost about 10x, not 100x (CPU time, best
    of two, so that a loaded machine does not decide)."""
    small, large = str(tmp_path / "small"), str(tmp_path / "large")
    _many_files(os.path.join(small, "run"), 200)
    steps = _many_files(os.path.join(large, "run"), 2000)
    small_cpu = min(_read_cpu(small)[0] for _ in range(2))
    large_cpu, reader = min((_read_cpu(large) for _ in range(2)), key=lambda x: x[0])
    assert len(reader.series("run")["loss"]) == steps
    assert large_cpu < 2.0, large_cpu                       # about 0.3 s on an idle machine
    assert large_cpu / max(small_cpu, 1e-3) < 20, (small_cpu, large_cpu)


def test_unreadable_entries_are_named_never_opened(tmp_path):
    logs = tmp_path / "logs"
    _write(str(logs / "good" / "events.out.tfevents.1.host"), [_event(1, summary.scalar(metadata.LOSS, 1.0))])
    (logs / "fifo").mkdir()
    os.mkfifo(logs / "fifo" / "events.out.tfevents.1.host")
    (logs / "loop").mkdir()
    os.symlink("events.out.tfevents.2.host", logs / "loop" / "events.out.tfevents.1.host")
    os.symlink("events.out.tfevents.1.host", logs / "loop" / "events.out.tfevents.2.host")
    reader = event_logdir.EventLogdir(str(logs)).read_all()
    reasons = {w["file"]: w["reason"] for w in reader.warnings()}
    assert "FIFO" in reasons["fifo/events.out.tfevents.1.host"]
    assert "symbolic link loop" in reasons["loop/events.out.tfevents.1.host"]
    assert len(reader.series("good")[metadata.LOSS]) == 1


@pytest.mark.parametrize("cut", [1, 5, 12, 20])
def test_a_record_being_written_is_read_once_complete(tmp_path, cut):
    data = records.frame(_event(2, summary.scalar(metadata.LOSS, 2.0)).SerializeToString())
    path = _write(str(tmp_path / "run" / "events.out.tfevents.1.host"),
                  [_event(1, summary.scalar(metadata.LOSS, 1.0))], tail=data[:cut])
    reader = event_logdir.EventLogdir(str(tmp_path))
    reader.read_all()
    assert reader.series("run")[metadata.LOSS].scalar_arrays()[0].tolist() == [1]
    with open(path, "ab") as f:
        f.write(data[cut:])
    reader.read_all()
    assert reader.series("run")[metadata.LOSS].scalar_arrays()[0].tolist() == [1, 2]
    assert reader.warnings() == []


def test_damage_full_of_plausible_lengths_is_searched_at_memory_speed(tmp_path):
    """8 MB whose every offset has a length below 2^32 (small numbers, as a file of counters would hold) and no
    valid checksum: the search for the next record tests every offset at once (it took about 7 us per offset in
    Python: about a minute for this file, hours for gigabytes)."""
    good = records.frame(_event(9, summary.scalar(metadata.LOSS, 9.0)).SerializeToString())
    path = _write(str(tmp_path / "run" / "events.out.tfevents.1.host"), [_event(1, summary.scalar(metadata.LOSS, 1.0))],
                  tail=bytes([1, 0, 0, 0, 0, 0, 0, 0]) * (1 << 20) + good)
    t0 = time.process_time()
    reader = event_logdir.EventLogdir(str(tmp_path)).read_all()
    assert time.process_time() - t0 < 5.0                 # about 0.3 s on an idle machine
    assert reader.series("run")[metadata.LOSS].scalar_arrays()[0].tolist() == [1, 9]
    (w,) = [w for w in reader.warnings() if "skipping" in w["reason"]]
    assert w["file"] == "run/" + os.path.basename(path)


def test_the_commands_read_each_event_file_once_for_the_provider_and_the_tabs_store(tmp_path, monkeypatch):
    """``Sources.for_logdir`` (check, report): the provider and the tab's every-point store (the final timeline of a
    resumed run, as the charts and the Health panel read it) are filled by one read of each file."""
    from tb_plugin_mindspore.io.records import RecordFile
    from tb_plugin_mindspore.sources import logdir as logdir_module

    loss = lambda step: summary_pb2.Summary.Value(tag="loss", simple_value=float(step))   # noqa: E731
    paths = [_write(tmp_path / "run" / "events.out.tfevents.1.a", [_event(s, loss(s)) for s in range(1, 11)]),
             _write(tmp_path / "run" / "events.out.tfevents.2.a", [_event(s, loss(s)) for s in range(6, 13)])]
    read = {}
    real = RecordFile.read_payloads

    def counting(self, max_bytes):     # the real reader, its bytes counted per file
        out = real(self, max_bytes)
        read[self.path] = read.get(self.path, 0) + out[2]
        return out

    monkeypatch.setattr(RecordFile, "read_payloads", counting)
    sources = logdir_module.Sources.for_logdir(str(tmp_path))
    timeline = sources.series("run", "loss")
    assert sources.token("run", "loss").door.name == logdir_module.EVENTS
    assert timeline.steps.tolist() == list(range(1, 13))            # steps 6-10 of the first file superseded
    assert timeline.values.tolist() == [float(s) for s in range(1, 13)]
    assert len(timeline.restarts) == 1
    assert read == {p: os.path.getsize(p) for p in paths}            # every byte read once
    assert sources.points("scalars", {"run": ["loss"]}, scalar=True)["run"]["loss"].steps.tolist() == (
        list(range(1, 11)) + list(range(6, 13)))                     # the provider: every point, as TensorBoard's
