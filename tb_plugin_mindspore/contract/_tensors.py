"""Tensor helpers shared by the builders and decoders of :mod:`tb_plugin_mindspore.contract` (protos imported
lazily)."""

import json

import numpy as np

from .. import metadata


_SHAPES = {}      # TensorShapeProto per shape (copied into each TensorProto; the writer makes the same few again)


def _shape(dims):
    from tensorboard.compat.proto import tensor_shape_pb2

    found = _SHAPES.get(dims)
    if found is None:
        if len(_SHAPES) >= 256:
            _SHAPES.clear()
        found = _SHAPES[dims] = tensor_shape_pb2.TensorShapeProto(
            dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(n)) for n in dims])
    return found


def numeric(array, dtype="float64"):
    """A ``TensorProto`` holding ``array`` as raw ``tensor_content`` (``dtype``: "float64" or "float32")."""
    from tensorboard.compat.proto import tensor_pb2, types_pb2

    array = np.asarray(array, dtype=np.float64 if dtype == "float64" else np.float32)
    proto_dtype = types_pb2.DT_DOUBLE if dtype == "float64" else types_pb2.DT_FLOAT
    return tensor_pb2.TensorProto(dtype=proto_dtype, tensor_shape=_shape(tuple(array.shape)),
                                  tensor_content=array.tobytes())


def string(text):
    """A scalar string ``TensorProto`` holding ``text`` (str or bytes)."""
    from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2, types_pb2

    if isinstance(text, str):
        text = text.encode("utf-8")
    return tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                  string_val=[text])


def json_string_value(tag, kind, body, **content):
    """``Summary.Value`` of one JSON object as a string tensor of our plugin's ``kind``."""
    from tensorboard.compat.proto import summary_pb2

    text = json.dumps(body, sort_keys=True, default=str)
    return summary_pb2.Summary.Value(tag=tag, metadata=metadata.create_summary_metadata(kind, **content),
                                     tensor=string(text))


def text_of(array):
    """The text of a string tensor as read back by a data provider (numpy array of bytes / str), or ``None``."""
    a = np.asarray(array)
    if a.size == 0:
        return None
    value = a.reshape(-1)[0]
    if isinstance(value, (bytes, bytearray, np.bytes_)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, str):
        return value
    return None


def json_of(array, what):
    """The JSON value of a string tensor; raises ``metadata.ContentError`` when unreadable."""
    text = text_of(array)
    if text is None:
        raise metadata.ContentError("%s is not a string tensor" % what)
    return metadata.loads_json(text, what)


def floats(array):
    """A tensor's values as a flat float64 array, or ``None`` when they are not numbers."""
    try:
        return np.asarray(array, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return None
