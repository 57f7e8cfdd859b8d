"""Writer side of the data contract: builds ``Summary.Value`` protos for each kind of data we record.

Numbers come in as Python floats / numpy arrays (already on the host); nothing here touches MindSpore. Our plugin's
kinds are built by their module in ``contract/`` (next to the decoder that reads them back); this module keeps the
writer's call signatures and TensorBoard's own formats (scalars, histograms, HParams) so its tabs show them.
"""

import numpy as np
from tensorboard.compat.proto import summary_pb2, tensor_pb2, tensor_shape_pb2, types_pb2
from tensorboard.plugins.histogram import metadata as histogram_metadata

from .. import contract


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
    """Statistics of every step since the previous recorded point of ``scalar_tag`` (``contract.interval``).

    min / mean / max are over the finite values only; ``nonfinite`` counts NaN and Inf steps.
    """
    return contract.interval.value(scalar_tag, contract.interval.IntervalStats(minimum, mean, maximum, count,
                                                                               nonfinite))


def layers(tag, layer_names, values, description="", frozen=()):
    """One value per layer at one step (update ratio, gradient norm, weight norm, ...): ``contract.layers``."""
    return contract.layers.value(tag, layer_names, values, description, frozen)


def run_info(info):
    """Run-level facts (format version, rank, configuration) as one JSON string: ``contract.run_info``."""
    return contract.run_info.value(info)


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


def histogram_proto(tag, buckets, stats=None):
    """An already bucketed histogram, ``[[left, right, count], ...]`` in ascending order, as a classic
    ``HistogramProto`` (``histo``), the format ``EventAccumulator.Histograms()``, ``tbparse`` and both of
    TensorBoard's loaders read. ``stats``: the exact ``min`` / ``max`` / ``sum`` where known (MindSpore
    records them); otherwise taken from the buckets. Each bucket's right edge is its limit, the first left edge the
    minimum, as TensorBoard reads it back."""
    array = np.asarray(buckets, dtype=np.float64).reshape(-1, 3)
    stats = stats or {}
    histo = summary_pb2.HistogramProto()
    if array.shape[0]:
        lo = stats.get("min", array[0, 0])
        hi = stats.get("max", array[-1, 1])
        histo.min = float(lo) if np.isfinite(lo) else float(array[0, 0])
        histo.max = float(hi) if np.isfinite(hi) else float(array[-1, 1])
        histo.num = float(array[:, 2].sum())
        total = stats.get("sum")
        centres = (array[:, 0] + array[:, 1]) / 2.0
        histo.sum = float(total) if total is not None and np.isfinite(total) else float(np.dot(centres, array[:, 2]))
        histo.sum_squares = float(np.dot(centres * centres, array[:, 2]))
        histo.bucket_limit.extend(array[:, 1].tolist())
        histo.bucket.extend(array[:, 2].tolist())
    return summary_pb2.Summary.Value(tag=tag, histo=histo)


def landscape(tag, landscape_dict):
    """A loss landscape as one JSON string tensor of our plugin (``contract.landscape``).

    ``landscape_dict`` is the format of ``sources.ms_files.landscape_dict``: ``landscape`` {x, y, z},
    ``loss_path`` {intervals, x, y, z} or None, ``convergence_point`` {x, y, z} or None, ``metadata``
    {decomposition, unit, step_per_epoch}. Non-finite losses are written as null.
    """
    return contract.landscape.value(tag, landscape_dict)


def tensor(tag, array, description=""):
    """A tensor of any numeric dtype as a tensor of our plugin (``contract.tensor``), e.g. MindSpore's
    TensorSummary."""
    return contract.tensor.value(tag, array, description)


def health_event(rule, severity, step, **fields):
    """A live health event (``contract.health_event``)."""
    return contract.health_event.value(rule, severity, step, **fields)


def run_end(status, step, wall_time, reason=""):
    """The run end marker (``contract.run_end``)."""
    return contract.run_end.value(status, step, wall_time, reason)


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
