"""The writer's directly encoded events are byte for byte what protobuf writes, in both of its implementations
(MindSpore switches a training process to the pure-Python one), and a written file reads back the same."""

import json
import math
import os
import subprocess
import sys
import textwrap

import numpy as np

from tb_plugin_mindspore import contract, metadata
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.writing import summary, wire
from tb_plugin_mindspore.writing.writer import SummaryWriter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Values at the edges of the format: zero (a oneof field is written even when 0), negative zero, NaN, infinities,
# beyond float32 (stored as infinite), subnormal, a huge and a negative step, wall time 0 (left out).
SCALARS = [("core/loss", 0.0), ("core/loss", -0.0), ("core/grad_norm", math.nan), ("x", math.inf),
           ("x", -math.inf), ("x", 1e300), ("x", -1e39), ("x", 1e-45), ("ünïcode/tag", 3.25), ("", 1.5)]
STEPS = [0, 1, 127, 128, 2 ** 40, -5]
WALLS = [0.0, 1765000000.123456]
INTERVALS = [(metadata.LOSS, 0.1, 0.5, 2.0, 10, 1), (metadata.GRAD_NORM, math.nan, math.nan, math.nan, 3, 3),
             ("custom/tag", -1e308, 0.0, 1e308, 0, 0)]

CHECK = textwrap.dedent("""
    import json, sys
    import numpy as np
    from google.protobuf.internal import api_implementation
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writing import summary, wire
    sys.path.insert(0, %(here)r)
    from test_wire import INTERVALS, SCALARS, STEPS, WALLS

    def proto(wall, step, value):
        return event_pb2.Event(wall_time=wall, step=step, summary=summary_pb2.Summary(value=[value]))

    bad = []
    for wall in WALLS:
        for step in STEPS:
            for tag, v in SCALARS:
                ours = wire.event(wall, step, [wire.scalar_value(tag, v)])
                if ours != proto(wall, step, summary.scalar(tag, v)).SerializeToString():
                    bad.append(("scalar", tag, repr(v), step, wall))
            for args in INTERVALS:
                value = summary.interval(*args)
                meta = value.metadata.SerializeToString()
                stats = np.frombuffer(value.tensor.tensor_content, "<f8").tolist()
                ours = wire.event(wall, step, [wire.tensor_value(value.tag, wire.float64_tensor(stats), meta)])
                if ours != proto(wall, step, value).SerializeToString():
                    bad.append(("interval", args[0], step, wall))
                value.ClearField("metadata")
                ours = wire.event(wall, step, [wire.tensor_value(value.tag, wire.float64_tensor(stats))])
                if ours != proto(wall, step, value).SerializeToString():
                    bad.append(("interval without metadata", args[0], step, wall))
    print(json.dumps({"implementation": api_implementation.Type(), "bad": bad}))
""")


def _check(implementation):
    env = dict(os.environ, PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=implementation)
    code = CHECK % {"here": os.path.dirname(os.path.abspath(__file__))}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_encoded_events_equal_protobufs_pure_python():
    found = _check("python")
    assert found["implementation"] == "python"
    assert found["bad"] == []


def test_encoded_events_equal_protobufs_upb():
    found = _check("upb")
    assert found["implementation"] == "upb"
    assert found["bad"] == []


def test_written_file_reads_back_every_value_and_metadata_once_per_part(tmp_path):
    from tensorboard.compat.proto import event_pb2

    with SummaryWriter(tmp_path, max_file_bytes=1024) as w:
        for step in range(1, 41):
            w.scalar(metadata.LOSS, 1.0 / step, step, wall_time=100.0 + step)
            w.interval(metadata.LOSS, 0.1, 0.5, float(step), 10, step % 3, step, wall_time=100.0 + step)
    assert w.failed is None and len(w.parts) > 2
    seen = {}
    for part in w.parts:
        with open(part, "rb") as f:
            events = [event_pb2.Event.FromString(r) for _, _, r in records.read_records(f.read())][1:]
        with_metadata = [v.tag for e in events for v in e.summary.value if v.HasField("metadata")]
        assert with_metadata == [metadata.interval_tag(metadata.LOSS)]     # once in each part
        for e in events:
            for v in e.summary.value:
                seen[(v.tag, e.step)] = (e.wall_time, v)
    for step in range(1, 41):
        wall, v = seen[(metadata.LOSS, step)]
        assert wall == 100.0 + step and v.simple_value == summary.scalar(metadata.LOSS, 1.0 / step).simple_value
        wall, v = seen[(metadata.interval_tag(metadata.LOSS), step)]
        stats = contract.interval.decode(np.frombuffer(v.tensor.tensor_content, "<f8"))
        assert wall == 100.0 + step and stats.fields() == (0.1, 0.5, float(step), 10, step % 3)
