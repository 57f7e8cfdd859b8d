"""Writer side of the data contract: builds ``Summary.Value`` protos for each kind of data we record.

Numbers come in as Python floats / numpy arrays (already on the host); nothing here touches MindSpore. Formats are
described in ``metadata.py``; histograms use TensorBoard's own histogram formats so its Histograms tab shows them.
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
    """Distribution of ``values`` as a classic ``HistogramProto`` (``histo``), the stock histogram format.

    TensorBoard's Histograms / Distributions tabs (both loaders turn it into their k x 3 ``[left, right, count]``
    tensor), ``EventAccumulator.Histograms()`` and ``tbparse`` read it. ``bins`` equal-width buckets between the
    finite minimum and maximum; NaN and Inf are left out (the format has no place for them).
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    finite = values[np.isfinite(values)]
    histo = summary_pb2.HistogramProto()
    if finite.size:
        lo, hi = float(finite.min()), float(finite.max())
        counts, edges = np.histogram(finite, bins=bins, range=(lo, hi) if lo < hi else (lo - 0.5, hi + 0.5))
        histo.min, histo.max, histo.num = lo, hi, float(finite.size)
        histo.sum, histo.sum_squares = float(finite.sum()), float(np.dot(finite, finite))
        histo.bucket_limit.extend(edges[1:].tolist())
        histo.bucket.extend(counts.astype(np.float64).tolist())
    return summary_pb2.Summary.Value(tag=tag, histo=histo)


# ---------------------------------------------------------------------------------------------------------------
# Builders for data that arrives already summarized (MindSpore's own ``_MS`` files, see ``convert.py``).

def histogram_buckets(tag, buckets):
    """A histogram that is already bucketed, ``[[left, right, count], ...]``, in TensorBoard's histogram format.

    An empty bucket list becomes one empty bucket ``[0, 0, 0]`` (TensorBoard needs at least one).
    """
    array = np.asarray(buckets, dtype=np.float64).reshape(-1, 3)
    if array.shape[0] == 0:
        array = np.zeros((1, 3), dtype=np.float64)
    md = histogram_metadata.create_summary_metadata(display_name=tag, description="")
    md.data_class = summary_pb2.DATA_CLASS_TENSOR
    return summary_pb2.Summary.Value(tag=tag, metadata=md, tensor=_tensor_proto(array))


def _json_safe(value):
    """NaN / Inf -> None, recursively (JSON has no place for them)."""
    if isinstance(value, float):
        return value if np.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v) for v in value]
    return value


def landscape(tag, landscape_dict):
    """A loss landscape as one JSON string tensor of our plugin (kind ``landscape``).

    ``landscape_dict`` is the format of ``reading.ms_files.landscape_dict``: ``landscape`` {x, y, z},
    ``loss_path`` {intervals, x, y, z} or None, ``convergence_point`` {x, y, z} or None, ``metadata``
    {decomposition, unit, step_per_epoch}. Non-finite losses are written as null.
    """
    text = json.dumps(_json_safe(landscape_dict), sort_keys=True).encode("utf-8")
    tensor = tensor_pb2.TensorProto(
        dtype=types_pb2.DT_STRING, tensor_shape=tensor_shape_pb2.TensorShapeProto(), string_val=[text],
    )
    return summary_pb2.Summary.Value(
        tag=tag,
        metadata=metadata.create_summary_metadata(metadata.KIND_LANDSCAPE, encoding="json"),
        tensor=tensor,
    )


_TB_DTYPES = {
    "bool": types_pb2.DT_BOOL, "int8": types_pb2.DT_INT8, "int16": types_pb2.DT_INT16,
    "int32": types_pb2.DT_INT32, "int64": types_pb2.DT_INT64, "uint8": types_pb2.DT_UINT8,
    "uint16": types_pb2.DT_UINT16, "uint32": types_pb2.DT_UINT32, "uint64": types_pb2.DT_UINT64,
    "float16": types_pb2.DT_HALF, "float32": types_pb2.DT_FLOAT, "float64": types_pb2.DT_DOUBLE,
    "complex64": types_pb2.DT_COMPLEX64, "complex128": types_pb2.DT_COMPLEX128,
}


def tensor(tag, array, description=""):
    """A tensor of any numeric dtype as a tensor of our plugin (kind ``tensor``), e.g. MindSpore's TensorSummary."""
    array = np.asarray(array)
    dtype = _TB_DTYPES.get(array.dtype.name)
    if dtype is None:
        array = array.astype(np.float64)
        dtype = types_pb2.DT_DOUBLE
    shape = tensor_shape_pb2.TensorShapeProto(
        dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=int(n)) for n in array.shape]
    )
    return summary_pb2.Summary.Value(
        tag=tag,
        metadata=metadata.create_summary_metadata(
            metadata.KIND_TENSOR, description=description, dtype=array.dtype.name
        ),
        tensor=tensor_pb2.TensorProto(
            dtype=dtype, tensor_shape=shape, tensor_content=np.ascontiguousarray(array).tobytes()
        ),
    )


# ---------------------------------------------------------------------------------------------------------------
# Hyperparameters in TensorBoard's own HParams format (its HParams tab lists the run with these values).

def _hparam_value(value):
    if isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, np.generic):
        return value.item()
    return str(value)


def hparams_values(hparams, start_time=None):
    """The ``Summary.Value`` list of one trial's hyperparameters (session start info of the HParams plugin).

    Values other than bool / number / str are written as their ``str()``.
    """
    from tensorboard.plugins.hparams import metadata as hparams_metadata
    from tensorboard.plugins.hparams import summary_v2 as hparams_summary

    clean = {str(k): _hparam_value(v) for k, v in hparams.items()}
    proto = hparams_summary.hparams_pb(clean, start_time_secs=start_time)
    values = list(proto.value)
    for v in values:   # as TensorBoard's own data-class migration of hparams values does
        v.metadata.data_class = summary_pb2.DATA_CLASS_TENSOR
        if not v.HasField("tensor"):
            v.tensor.CopyFrom(hparams_metadata.NULL_TENSOR)
    return values
