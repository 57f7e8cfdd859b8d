"""Protobuf values of the JSON kinds the recorders write: the live health events and the run end marker.

Each is one JSON string tensor under its tag (``metadata.HEALTH_EVENT``, ``metadata.RUN_END``), with our plugin's
content naming its kind, as ``_meta/run_info`` is written.
"""

import json

from tb_plugin_mindspore import metadata

__all__ = ["json_value"]


def json_value(tag, kind, obj):
    """A ``Summary.Value`` holding ``obj`` as one JSON string (NaN / Inf written as strings: JSON has none)."""
    from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2

    text = json.dumps(obj, sort_keys=True, default=str, allow_nan=False) if _finite(obj) else \
        json.dumps(_no_nan(obj), sort_keys=True, default=str)
    tensor = tensor_pb2.TensorProto(dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(),
                                    string_val=[text.encode("utf-8")])
    return summary_pb2.Summary.Value(tag=tag, metadata=metadata.create_summary_metadata(kind), tensor=tensor)


def _finite(obj):
    try:
        json.dumps(obj, default=str, allow_nan=False)
        return True
    except ValueError:
        return False


def _no_nan(obj):
    if isinstance(obj, float) and obj != obj or obj in (float("inf"), float("-inf")):
        return str(obj)
    if isinstance(obj, dict):
        return {k: _no_nan(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_no_nan(v) for v in obj]
    return obj
