"""Writer side of the data contract: builds ``Summary.Value`` protos for each kind of data we record.

Numbers come in as Python floats / numpy arrays (already on the host); nothing here touches MindSpore. Formats are
described in ``metadata.py``; histograms use TensorBoard's own histogram format so the Histograms tab shows them.
"""

import json

import numpy as np
from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata

from . import metadata


def _tensor_proto(array, dtype=types_pb2.DT_DOUBLE):
    array = np.asarray(array, dtype=np.float64 if dtype == types_pb2.DT_DOUBLE else np.float32)
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(n)) for n in array.shape]
    )
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, tensor_content=array.tobytes())


def scalar(tag, value):
    """A plain scalar (``simple_value``), readable by every TensorBoard tool. NaN and Inf are kept as they are."""
    return summary_pb2.Summary.Value(tag=tag, simple_value=float(value))


def interval(scalar_tag, minimum, mean, maximum, count, nonfinite):
    """Statistics of every step since the previous recorded point of ``scalar_tag`` (see metadata.INTERVAL_FIELDS).

    min / mean / max are over the finite values only; ``nonfinite`` counts NaN and Inf steps.
    """
    values = [minimum, mean, maximum, count, nonfinite]
    return summary_pb2.Summary.Value(
        tag=metadata.interval_tag(scalar_tag),
        metadata=metadata.create_summary_metadata(
            metadata.KIND_INTERVAL, fields=list(metadata.INTERVAL_FIELDS), of=scalar_tag
        ),
        tensor=_tensor_proto(values),
    )


def layers(tag, layer_names, values, description=""):
    """One value per layer at one step (update ratio, gradient norm, weight norm, ...)."""
    values = np.asarray(values, dtype=np.float32).reshape(-1)
    if len(layer_names) != values.size:
        raise ValueError("%d layer names for %d values in %r" % (len(layer_names), values.size, tag))
    return summary_pb2.Summary.Value(
        tag=tag,
        metadata=metadata.create_summary_metadata(
            metadata.KIND_LAYERS, description=description, layers=list(layer_names)
        ),
        tensor=_tensor_proto(values, dtype=types_pb2.DT_FLOAT),
    )


def run_info(info):
    """Run-level facts (format version, rank, configuration) as one JSON string."""
    body = dict(info)
    body.setdefault("content_version", metadata.CONTENT_VERSION)
    text = json.dumps(body, sort_keys=True, default=str).encode("utf-8")
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING,
        tensor_shape=tensor_shape_pb2.TensorShapeProto(),
        string_val=[text],
    )
    return summary_pb2.Summary.Value(
        tag=metadata.RUN_INFO,
        metadata=metadata.create_summary_metadata(metadata.KIND_RUN_INFO),
        tensor=tensor,
    )


def histogram(tag, values, bins=30):
    """Distribution of ``values`` in TensorBoard's histogram format (k x 3 tensor of left, right, count)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    if finite.size == 0:
        edges = np.array([0.0, 0.0])
        counts = np.array([0.0])
    else:
        lo, hi = float(finite.min()), float(finite.max())
        if lo == hi:
            lo, hi = lo - 0.5, hi + 0.5
        counts, edges = np.histogram(finite, bins=bins, range=(lo, hi))
    buckets = np.stack([edges[:-1], edges[1:], counts.astype(np.float64)], axis=1)
    md = histogram_metadata.create_summary_metadata(display_name=tag, description="")
    md.data_class = summary_pb2.DATA_CLASS_TENSOR
    return summary_pb2.Summary.Value(tag=tag, metadata=md, tensor=_tensor_proto(buckets))
