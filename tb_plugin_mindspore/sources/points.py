"""Every stored point of some series as numpy arrays, read fast where TensorBoard's Python loader holds them.

TensorBoard's ``MultiplexerDataProvider`` (the Python loader's provider) turns each stored point into a numpy
array through ``tensor_util.make_ndarray``: about 30 microseconds a point, seconds for a long run. With the
loader's multiplexer at hand (``context.multiplexer``; ``None`` under ``--load_fast``), the points are decoded
here straight from their ``TensorProto`` (a float in ``float_val`` or ``double_val``, or raw ``tensor_content``),
about ten times faster; any other encoding, series the multiplexer does not hold (MindSpore ``*_MS`` runs, the
fast loader) and anything unexpected are read through the data provider as before.
"""

import collections

import numpy as np
from tensorboard.compat.proto import types_pb2
from tensorboard.data import provider as tb_provider

# Read every stored point; the loader keeps as many as its sample limits allow.
READ_ALL = 10 ** 9

# ``steps`` (int64), ``walls`` (float64), ``values``: float64 (n,) for scalars, a list of float64 arrays for tensors.
Points = collections.namedtuple("Points", "steps walls values")

_CONTENT_DTYPES = {types_pb2.DT_FLOAT: np.float32, types_pb2.DT_DOUBLE: np.float64,
                   types_pb2.DT_INT32: np.int32, types_pb2.DT_INT64: np.int64}


def _size(tp):
    n = 1
    for d in tp.tensor_shape.dim:
        n *= d.size
    return n


def tensor_values(tp):
    """The values of a ``TensorProto`` as a flat float64 array, or ``None`` for an encoding not handled here."""
    n = _size(tp)
    if tp.tensor_content:
        dtype = _CONTENT_DTYPES.get(tp.dtype)
        if dtype is None or len(tp.tensor_content) != n * np.dtype(dtype).itemsize:
            return None
        return np.frombuffer(tp.tensor_content, dtype=dtype).astype(np.float64)
    if tp.dtype == types_pb2.DT_FLOAT:
        vals = tp.float_val
    elif tp.dtype == types_pb2.DT_DOUBLE:
        vals = tp.double_val
    else:
        return None
    if len(vals) == n:
        return np.array(vals, dtype=np.float64)
    if len(vals) == 1:   # a repeated value is stored once
        return np.full(n, vals[0], dtype=np.float64)
    return None


def scalar_value(tp):
    """The one value of a scalar ``TensorProto`` as a float, or ``None``."""
    if not tp.tensor_content and _size(tp) == 1:
        if tp.dtype == types_pb2.DT_FLOAT and len(tp.float_val) == 1:
            return tp.float_val[0]
        if tp.dtype == types_pb2.DT_DOUBLE and len(tp.double_val) == 1:
            return tp.double_val[0]
    values = tensor_values(tp)
    return float(values[0]) if values is not None and values.size == 1 else None


def _scalars_fast(protos):
    """The values of scalar ``TensorProto`` s that all hold one float in ``float_val`` (what TensorBoard makes of a
    ``simple_value``), else ``None``."""
    if all(p.dtype == types_pb2.DT_FLOAT and len(p.float_val) == 1 for p in protos):
        return np.array([p.float_val[0] for p in protos], dtype=np.float64)
    return None


def _rows_fast(protos):
    """The rows of ``TensorProto`` s that all hold ``tensor_content`` of one dtype and size, else ``None``."""
    first = protos[0]
    dtype = _CONTENT_DTYPES.get(first.dtype)
    size = _size(first)
    nbytes = size * np.dtype(dtype).itemsize if dtype is not None else 0
    if not nbytes or any(p.dtype != first.dtype or len(p.tensor_content) != nbytes for p in protos):
        return None
    table = np.frombuffer(b"".join(p.tensor_content for p in protos), dtype=dtype).astype(np.float64)
    return list(table.reshape(len(protos), size))


def _from_events(events, scalar):
    n = len(events)
    steps = np.fromiter((e.step for e in events), dtype=np.int64, count=n)
    walls = np.fromiter((e.wall_time for e in events), dtype=np.float64, count=n)
    protos = [e.tensor_proto for e in events]
    if scalar:
        values = _scalars_fast(protos)
        if values is None:
            values = [scalar_value(p) for p in protos]
            if any(v is None for v in values):
                return None
            values = np.array(values, dtype=np.float64)
        return Points(steps, walls, values)
    values = _rows_fast(protos)
    if values is None:
        values = [tensor_values(p) for p in protos]
        if any(v is None for v in values):
            return None
    return Points(steps, walls, values)


def _from_data(data, scalar):
    n = len(data)
    steps = np.fromiter((d.step for d in data), dtype=np.int64, count=n)
    walls = np.fromiter((d.wall_time for d in data), dtype=np.float64, count=n)
    if scalar:
        return Points(steps, walls, np.fromiter((d.value for d in data), dtype=np.float64, count=n))
    return Points(steps, walls, [_numbers(d.numpy) for d in data])


def _numbers(array):
    """A flat float64 array (empty for a tensor that holds no numbers, e.g. strings)."""
    try:
        return np.asarray(array, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        return np.empty(0)


def _mux_events(multiplexer, run, tag, plugin_name):
    try:
        if multiplexer.SummaryMetadata(run, tag).plugin_data.plugin_name != plugin_name:
            return None
        return multiplexer.Tensors(run, tag)
    except (KeyError, AttributeError):
        return None


def read(data_provider, ctx, experiment_id, plugin_name, run_tags, scalar, multiplexer=None):
    """``{run: {tag: Points}}`` of every stored point of the series ``run_tags`` (``{run: [tag]}``) of a plugin.

    ``scalar``: read them as scalars (``read_scalars``) rather than tensors. Series without points are left out."""
    out, rest = {}, {}
    for run, tags in run_tags.items():
        for tag in tags:
            events = _mux_events(multiplexer, run, tag, plugin_name) if multiplexer is not None else None
            points = _from_events(events, scalar) if events else None
            if points is None:
                rest.setdefault(run, []).append(tag)
            else:
                out.setdefault(run, {})[tag] = points
    if rest:
        rtf = tb_provider.RunTagFilter(runs=sorted(rest), tags=sorted({t for tags in rest.values() for t in tags}))
        read_fn = data_provider.read_scalars if scalar else data_provider.read_tensors
        data = read_fn(ctx, experiment_id=experiment_id, plugin_name=plugin_name, downsample=READ_ALL,
                       run_tag_filter=rtf)
        for run, tags in rest.items():
            for tag in tags:
                series = (data.get(run) or {}).get(tag)
                if series:
                    out.setdefault(run, {})[tag] = _from_data(series, scalar)
    return out
