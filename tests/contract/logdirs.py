"""Small real logdirs for the contract tests: event files written with TensorBoard's own ``EventFileWriter`` and
our builders, and MindSpore ``*_MS`` files framed as MindSpore frames them (``records.frame`` + its ``Event``)."""

import os

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.io import ms_proto

T0 = 1_700_000_000.0


def write_events(run_dir, steps=20, loss=lambda s: 1.0 / s, update_ratio=None, extra=()):
    """Our kinds of series for ``steps`` steps into ``run_dir``: loss with its interval statistics, run info,
    optionally a per-layer update ratio (``{layer: value}``, every step), then ``extra`` ``(step, Summary.Value)``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    os.makedirs(run_dir, exist_ok=True)
    writer = EventFileWriter(run_dir)

    def add(step, *values):
        writer.add_event(event_pb2.Event(step=step, wall_time=T0 + step, summary=summary_pb2.Summary(value=values)))

    add(0, summary.run_info({"collect_freq": 1, "lr_config": {"kind": "constant", "value": 0.1}}))
    for s in range(1, steps + 1):
        value = loss(s)
        add(s, summary.scalar(metadata.LOSS, value), summary.interval(metadata.LOSS, value, value, value, 1, 0))
        if update_ratio:
            names = sorted(update_ratio)
            add(s, summary.layers(metadata.UPDATE_RATIO_LAYERS, names, [update_ratio[n] for n in names]))
    for step, value in extra:
        add(step, value)
    writer.close()
    return run_dir


def ms_scalar_event(step, value, tag=b"loss/auto"):
    e = ms_proto.Event()
    e.step, e.wall_time = step, T0 + step
    v = e.summary.value.add()
    v.tag, v.scalar_value = tag, value
    return e


def write_ms(run_dir, created, steps, tag=b"loss/auto", loss=lambda s: 2.0 / s):
    """One MindSpore summary file named as MindSpore names it, created at ``created`` (seconds), with ``tag`` at
    ``steps``."""
    os.makedirs(run_dir, exist_ok=True)
    path = os.path.join(run_dir, "events.out.events.summary.%d.0.host_MS" % created)
    with open(path, "wb") as f:
        f.write(records.frame(ms_proto.Event(wall_time=created, version=b"MindSpore.Event:1").SerializeToString()))
        for s in steps:
            f.write(records.frame(ms_scalar_event(s, loss(s), tag).SerializeToString()))
    return path


def mixed_logdir(root):
    """Event-file runs, ``*_MS`` runs (several files in one folder, a re-run), a folder holding both, nested
    subfolders and the logdir's own files; returns ``root``."""
    root = str(root)
    write_events(os.path.join(root, "events_only"))
    write_events(os.path.join(root, "nested", "deep", "run"), steps=8)
    write_ms(os.path.join(root, "collector"), 1_700_000_000, range(1, 11))
    write_ms(os.path.join(root, "collector"), 1_700_000_100, range(6, 16))      # a resume from step 6
    write_ms(os.path.join(root, "nested", "ms_run"), 1_700_000_000, range(1, 6))
    both = os.path.join(root, "both")            # one folder, event files and *_MS files: one run in the tab
    write_events(both, steps=10)
    write_ms(both, 1_700_000_000, range(1, 11), tag=b"accuracy/auto", loss=lambda s: s / 10.0)
    write_ms(root, 1_700_000_000, range(1, 4))   # the logdir itself is a run (".")
    return root
