"""The protobuf wire format of the writer's most frequent events, encoded directly.

A training process runs protobuf's pure-Python implementation (MindSpore sets
``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python`` when it is imported), where building and serialising an ``Event``
with one scalar costs about 100 us of the writer thread's CPU, most of the writer's cost per step. A scalar and an
interval are a handful of fields: this module writes their bytes as protobuf itself would (fields in number order,
proto3 defaults left out; ``tests/writing/test_wire.py`` checks the bytes against protobuf's), and the writer uses
it for those two kinds. Every other kind still goes through the protos.
"""

import struct

import numpy as np

__all__ = ["event", "scalar_value", "tensor_value", "float64_tensor"]

_DOUBLE = struct.Struct("<d")
_FLOAT = struct.Struct("<f")
_DT_DOUBLE = 2          # tensorflow.DataType.DT_DOUBLE
_FLOAT_MAX = float.fromhex("0x1.fffffep+127")


def varint(n):
    """Base-128 varint of an int (a negative int64 as its 64-bit two's complement, as protobuf writes it)."""
    n = int(n)
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(number, payload):
    """A length-delimited field (wire type 2)."""
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def scalar_value(tag, value):
    """``Summary.Value(tag=tag, simple_value=value)`` serialised (``simple_value`` is a float32 in a oneof: written
    even when 0)."""
    value = float(value)
    if value > _FLOAT_MAX:          # beyond float32: infinite, as protobuf stores it
        value = float("inf")
    elif value < -_FLOAT_MAX:
        value = float("-inf")
    tag = tag.encode("utf-8")
    return (_field(1, tag) if tag else b"") + b"\x15" + _FLOAT.pack(value)


def float64_tensor(values):
    """A ``TensorProto`` of a float64 vector held as ``tensor_content`` serialised (as
    ``contract._tensors.numeric``)."""
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    size = array.shape[0]
    dim = _field(2, (b"\x08" + varint(size)) if size else b"")        # TensorShapeProto.dim { size }
    content = array.tobytes()
    return b"\x08" + varint(_DT_DOUBLE) + _field(2, dim) + (_field(4, content) if content else b"")


def tensor_value(tag, tensor_bytes, metadata_bytes=None):
    """``Summary.Value(tag, tensor, metadata)`` serialised from the serialised tensor and metadata (metadata left
    out when None)."""
    tag = tag.encode("utf-8")
    out = (_field(1, tag) if tag else b"") + _field(8, tensor_bytes)
    if metadata_bytes is not None:
        out += _field(9, metadata_bytes)
    return out


def event(wall_time, step, values):
    """``Event(wall_time, step, summary=Summary(value=values))`` serialised; ``values``: serialised
    ``Summary.Value`` s."""
    out = b""
    if wall_time:
        out += b"\x09" + _DOUBLE.pack(wall_time)
    if step:
        out += b"\x10" + varint(step)
    return out + _field(5, b"".join(_field(1, v) for v in values))
