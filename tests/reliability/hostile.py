"""Builders of hostile inputs for the reliability tests: event files, MindSpore ``*_MS`` files, records with
crafted lengths, deeply nested JSON. Everything is written with the project's own framing (``records.frame``) and
TensorBoard's / MindSpore's message definitions, so only the part under test is hostile."""

import json
import os
import struct

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.io import records
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.io import ms_proto

MS_NAME = "events.out.events.summary.1700000000.0.host_MS"
EVENT_NAME = "events.out.tfevents.1700000000.host"
T0 = 1_700_000_000.0


def nested_json(depth):
    """``{"version": 1, ...}``-free JSON text nested ``depth`` levels deep (arrays)."""
    return "[" * depth + "]" * depth


def frame_header(length):
    """A record header claiming ``length`` bytes, with a valid length checksum (what a loader trusts)."""
    header = struct.pack("<Q", length)
    return header + struct.pack("<I", records.masked_crc32c(header))


def _event(step, values, wall=None):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    return event_pb2.Event(step=step, wall_time=T0 + step if wall is None else wall,
                           summary=summary_pb2.Summary(value=values))


def write_events(path, events, tail=b""):
    """An event file: the version record, ``events`` (tensorboard ``Event`` messages), then raw ``tail`` bytes."""
    from tensorboard.compat.proto import event_pb2

    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(records.frame(event_pb2.Event(wall_time=T0, file_version="brain.Event:2").SerializeToString()))
        for e in events:
            f.write(records.frame(e.SerializeToString()))
        f.write(tail)
    return path


def loss_events(steps=20, tag="core/loss"):
    return [_event(s, [summary.scalar(tag, 1.0 / s)]) for s in range(1, steps + 1)]


def json_tensor_event(tag, text, kind=metadata.KIND_LANDSCAPE, content=None, step=1):
    """One of our plugin's string tensors holding ``text`` (a landscape or run information record); ``content``
    replaces the plugin content (bytes) when given."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    md = metadata.create_summary_metadata(kind)
    if content is not None:
        md.plugin_data.content = content
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    string_val=[text.encode("utf-8") if isinstance(text, str) else text])
    return _event(step, [summary_pb2.Summary.Value(tag=tag, metadata=md, tensor=tensor)])


def good_landscape_event(tag="landscape/random", step=1):
    from tb_plugin_mindspore.landscape import format as fmt

    x = np.linspace(-1, 1, 3)
    record = fmt.landscape_record(x, x, np.add.outer(x ** 2, x ** 2), "random")
    return json_tensor_event(tag, json.dumps(record), step=step)


def ms_scalar_event(step, value, tag=b"loss/auto", wall=None):
    e = ms_proto.Event()
    e.step, e.wall_time = step, T0 + step if wall is None else wall
    v = e.summary.value.add()
    v.tag, v.scalar_value = tag, value
    return e


def ms_landscape_event(nx, ny, nz, tag=b"landscape_[1]", step=0):
    """A MindSpore ``LossLandscape`` with ``nx`` x values, ``ny`` y values and ``nz`` losses (malformed unless
    ``nz == nx * ny``)."""
    e = ms_proto.Event()
    e.step, e.wall_time = step, T0
    v = e.summary.value.add()
    v.tag = tag
    ls = v.loss_landscape
    for axis, n in (("x", nx), ("y", ny), ("z", nz)):
        t = getattr(ls.landscape, axis)
        t.dims.append(n)
        t.data_type = 11
        t.float_data.extend([float(i) for i in range(n)])
    ls.metadata.decomposition = b"Random"
    ls.metadata.unit = b"step"
    ls.metadata.step_per_epoch = 1
    return e


def write_ms(path, events, tail=b"", wall=T0):
    """A MindSpore summary file: the version record, ``events`` (``ms_proto.Event``), then raw ``tail`` bytes."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(records.frame(ms_proto.Event(wall_time=wall, version=b"MindSpore.Event:1").SerializeToString()))
        for e in events:
            f.write(records.frame(e.SerializeToString()))
        f.write(tail)
    return path


def png_bytes(width=2, height=2):
    """A tiny valid RGB PNG (zlib only)."""
    import zlib

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    rows = b"".join(b"\x00" + b"\x80\x20\x10" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def ms_media_event(step, tag=b"x", wall=None):
    """One MindSpore summary holding an image, a tensor and a histogram, all under ``tag`` (as MindSpore's own
    summary-op tests do)."""
    e = ms_proto.Event()
    e.step, e.wall_time = step, T0 + step if wall is None else wall
    v = e.summary.value.add()
    v.tag = tag
    v.image.width, v.image.height, v.image.colorspace = 2, 2, 3
    v.image.encoded_image = png_bytes()
    v = e.summary.value.add()
    v.tag = tag
    v.tensor.dims.extend([2, 3])
    v.tensor.data_type = 11
    v.tensor.float_data.extend([0.5 * i for i in range(6)])
    v = e.summary.value.add()
    v.tag = tag + b"_hist"
    h = v.histogram
    for left in range(3):
        b = h.buckets.add()
        b.left, b.width, b.count = float(left), 1.0, 2
    h.min, h.max, h.count, h.sum = 0.0, 3.0, 6, 9.0
    return e
