"""MindSpore's summary files (``*_MS``) and lineage files (``*_lineage``): their reader and their messages decoded.

``SummaryRecord`` and ``SummaryCollector`` write ``<prefix>.out.events.summary.<time>.<device>.<host><suffix>``
(default prefix ``events``, suffix ``_MS``) and a ``..._lineage`` twin. Both use TFRecord framing
(``u64 length | masked crc32c(length) | payload | masked crc32c(payload)``); the payload is MindSpore's ``Event``
(summary files) or ``LineageEvent`` (lineage files), see ``ms_proto``. Nothing here imports MindSpore. A file is
read from where it stopped by the one record reader, ``io/records.RecordFile`` (cut-off records left for next time,
damaged records skipped and named, replaced files read again); :class:`MsFile` adds the decoding of its payloads:
one that does not decode is skipped and reported as a problem ``(offset, reason)``, like a damaged record.

The decoding helpers (:func:`histogram_buckets`, :func:`tensor_array`, :func:`landscape_dict`,
:func:`lineage_update`) turn the messages into plain Python / numpy values; ``ms_logdir.MsLogdir`` and
``convert`` build on them.
"""

import json
import os

import numpy as np
from google.protobuf.message import DecodeError

from ..io import ms_proto
from ..io.records import RecordFile, short_error

SUMMARY_MARK = ".out.events.summary."
LINEAGE_SUFFIX = "_lineage"


def file_kind(name):
    """``"summary"``, ``"lineage"`` or ``None`` for a file name (not a path)."""
    if SUMMARY_MARK not in name:
        return None
    if name.endswith(LINEAGE_SUFFIX):
        return "lineage"
    return "summary"


class MsFile(RecordFile):
    """Incremental reader of one ``_MS`` or ``_lineage`` file: an ``io.records.RecordFile`` whose payloads
    decode as MindSpore's ``Event`` or ``LineageEvent`` (``kind``: ``"summary"`` / ``"lineage"``)."""

    def __init__(self, path, kind=None):
        super().__init__(path)
        self.kind = kind or file_kind(os.path.basename(path)) or "summary"

    def read_events(self, max_bytes):
        """Like :meth:`read_payloads` but decoded: returns ``(events, bytes_read)``, events as ``(offset, message)``.

        Payloads that do not decode are recorded as problems and left out.
        """
        payloads, offsets, nread = self.read_payloads(max_bytes)
        cls = ms_proto.LineageEvent if self.kind == "lineage" else ms_proto.Event
        parse = cls.FromString
        events = []
        for offset, data in zip(offsets, payloads):
            try:
                events.append((offset, parse(data)))
            except (DecodeError, RuntimeError, ValueError) as e:
                self.problem(offset, "undecodable payload (%s); record skipped" % short_error(e))
        return events, nread


def decode_tag(raw):
    return raw.decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------------------------------
# Value decoding (messages -> plain values)

def histogram_buckets(histogram):
    """TensorBoard's bucket list ``[[left, right, count], ...]`` (floats) of a MindSpore ``Summary.Histogram``."""
    return [[b.left, b.left + b.width, float(b.count)] for b in histogram.buckets]


def histogram_stats(histogram):
    """What TensorBoard's format has no place for: non-finite counts and exact min / max / sum / count."""
    return {
        "count": histogram.count, "min": histogram.min, "max": histogram.max, "sum": histogram.sum,
        "nan_count": histogram.nan_count, "pos_inf_count": histogram.pos_inf_count,
        "neg_inf_count": histogram.neg_inf_count,
    }


# MindSpore DataType code -> numpy dtype (for raw_data and for the result's dtype).
_NP_TYPES = {
    1: np.bool_, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint8, 7: np.uint16, 8: np.uint32,
    9: np.uint64, 10: np.float16, 11: np.float32, 12: np.float64, 43: np.complex64, 44: np.complex128,
}


def tensor_array(tensor):
    """A numpy array for a MindSpore ``TensorProto`` (shape from ``dims`` when the element count agrees).

    MindSpore stores every summary tensor's values in ``float_data`` whatever its ``data_type``; other value fields
    are used when present. The dtype follows ``data_type`` where it is numeric, else float32.
    """
    dtype = _NP_TYPES.get(tensor.data_type)
    if tensor.raw_data and dtype is not None:
        size = np.dtype(dtype).itemsize
        raw = tensor.raw_data[:len(tensor.raw_data) // size * size]
        values = np.frombuffer(raw, dtype=dtype).copy()
    elif len(tensor.float_data):
        values = np.array(tensor.float_data, dtype=np.float32)
    elif len(tensor.double_data):
        values = np.array(tensor.double_data, dtype=np.float64)
    elif len(tensor.int64_data):
        values = np.array(tensor.int64_data, dtype=np.int64)
    elif len(tensor.int32_data):
        values = np.array(tensor.int32_data, dtype=np.int32)
    elif len(tensor.uint64_data):
        values = np.array(tensor.uint64_data, dtype=np.uint64)
    else:
        values = np.zeros(0, dtype=np.float32)
    if dtype is not None and values.dtype != dtype:
        # NaN / Inf cannot become integers: such a tensor keeps its float values.
        if not (values.dtype.kind == "f" and np.dtype(dtype).kind in "iub" and not np.all(np.isfinite(values))):
            values = values.astype(dtype)
    dims = [int(d) for d in tensor.dims]
    if dims and all(d >= 0 for d in dims) and int(np.prod(dims, dtype=np.int64)) == values.size:
        values = values.reshape(dims)
    elif not dims and values.size == 1:
        values = values.reshape(())
    return values


def _point(point):
    if point is None:
        return None
    return {axis: tensor_array(getattr(point, axis)).tolist() for axis in ("x", "y", "z")}


def landscape_dict(msg):
    """A ``LossLandscape`` message as plain Python values (the format ``summary.landscape`` writes too)::

        {"landscape": {"x": [...], "y": [...], "z": [[...], ...]},        # z: len(y) rows of len(x) losses
         "loss_path": {"intervals": [...], "x": [...], "y": [...], "z": [...]} or None,
         "convergence_point": {"x": [...], "y": [...], "z": [...]} or None,
         "metadata": {"decomposition": "PCA", "unit": "step", "step_per_epoch": 1}}
    """
    out = {
        "landscape": _point(msg.landscape) if msg.HasField("landscape") else None,
        "loss_path": None,
        "convergence_point": _point(msg.convergence_point) if msg.HasField("convergence_point") else None,
        "metadata": {
            "decomposition": decode_tag(msg.metadata.decomposition),
            "unit": decode_tag(msg.metadata.unit),
            "step_per_epoch": int(msg.metadata.step_per_epoch),
        },
    }
    if msg.HasField("loss_path"):
        path = _point(msg.loss_path.points) if msg.loss_path.HasField("points") else {"x": [], "y": [], "z": []}
        path["intervals"] = [int(i) for i in msg.loss_path.intervals]
        out["loss_path"] = path
    return out


# ---------------------------------------------------------------------------------------------------------------
# Lineage

def _text(value):
    """A proto2 string field holding invalid UTF-8 comes back as bytes; make it text."""
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _user_info(info, out):
    for key, value in info.map_str.items():
        out[key] = value
    for key, value in info.map_int32.items():
        out[key] = int(value)
    for key, value in info.map_double.items():
        out[key] = float(value)
    for key, value in info.map_dict.items():
        nested = {}
        _user_info(value, nested)
        out[key] = nested
    for child in info.user_info:
        _user_info(child, out)


def lineage_update(lineage, event):
    """Merges one ``LineageEvent`` into ``lineage`` (a dict, changed in place). May raise on damaged data.

    Keys: ``hparams`` (flat name -> value: optimizer, learning_rate, loss_function, epoch, batch_size,
    parallel_mode, device_num, train_dataset_size, train_dataset_path, network, loss, model_path, model_size,
    eval metrics as ``metric/<name>``, valid_dataset_*, plus every user-defined key), ``user`` (the user-defined
    data as given), ``wall_time`` (last update). The dataset pipeline is decoded by ``ms_lineage.lineage_update``.
    """
    which = event.WhichOneof("what")
    hp = lineage.setdefault("hparams", {})
    lineage["wall_time"] = event.wall_time
    if which == "train_lineage":
        t = event.train_lineage
        if t.HasField("hyper_parameters"):
            h = t.hyper_parameters
            for name in ("optimizer", "loss_function", "parallel_mode"):
                if h.HasField(name):
                    hp[name] = _text(getattr(h, name))
            for name in ("learning_rate",):
                if h.HasField(name):
                    hp[name] = float(getattr(h, name))
            for name in ("epoch", "device_num", "batch_size"):
                if h.HasField(name):
                    hp[name] = int(getattr(h, name))
        if t.HasField("train_dataset"):
            if t.train_dataset.HasField("train_dataset_path"):
                hp["train_dataset_path"] = _text(t.train_dataset.train_dataset_path)
            if t.train_dataset.HasField("train_dataset_size"):
                hp["train_dataset_size"] = int(t.train_dataset.train_dataset_size)
        if t.HasField("algorithm"):
            if t.algorithm.HasField("network"):
                hp["network"] = _text(t.algorithm.network)
            if t.algorithm.HasField("loss"):
                hp["loss"] = float(t.algorithm.loss)
        if t.HasField("model"):
            if t.model.HasField("path"):
                hp["model_path"] = _text(t.model.path)
            if t.model.HasField("size"):
                hp["model_size"] = int(t.model.size)
    elif which == "evaluation_lineage":
        e = event.evaluation_lineage
        if e.HasField("metric"):
            try:
                metrics = json.loads(_text(e.metric))
            except ValueError:
                metrics = None
            if isinstance(metrics, dict):
                for key, value in metrics.items():
                    hp["metric/%s" % key] = value
            else:
                hp["metric"] = _text(e.metric)
        if e.HasField("valid_dataset"):
            if e.valid_dataset.HasField("valid_dataset_path"):
                hp["valid_dataset_path"] = _text(e.valid_dataset.valid_dataset_path)
            if e.valid_dataset.HasField("valid_dataset_size"):
                hp["valid_dataset_size"] = int(e.valid_dataset.valid_dataset_size)
    elif which == "user_defined_info":
        user = lineage.setdefault("user", {})
        _user_info(event.user_defined_info, user)
        for key, value in user.items():
            if not isinstance(value, dict):
                hp[key] = value
    return lineage
