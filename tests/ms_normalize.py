"""Turns a summary Event / LineageEvent into plain JSON-able values, field by field.

Duck-typed: works on MindSpore's generated classes and on ``tb_plugin_mindspore.io.ms_proto``'s alike, so the
tests can compare our decoding of a real file with MindSpore's own.
"""

import base64


def _s(value):
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else value


def tensor(t):
    return {"dims": list(t.dims), "data_type": int(t.data_type), "float_data": list(t.float_data),
            "double_data": list(t.double_data), "int32_data": list(t.int32_data),
            "int64_data": list(t.int64_data), "raw_data": base64.b64encode(t.raw_data).decode()}


def point(p):
    return {axis: tensor(getattr(p, axis)) for axis in ("x", "y", "z")}


def value(v):
    kind = v.WhichOneof("value")
    out = {"tag": _s(v.tag), "kind": kind}
    if kind == "scalar_value":
        out["scalar"] = v.scalar_value
    elif kind == "histogram":
        h = v.histogram
        out["histogram"] = {
            "buckets": [[b.left, b.width, b.count] for b in h.buckets],
            "nan_count": h.nan_count, "pos_inf_count": h.pos_inf_count, "neg_inf_count": h.neg_inf_count,
            "max": h.max, "min": h.min, "sum": h.sum, "count": h.count,
        }
    elif kind == "tensor":
        out["tensor"] = tensor(v.tensor)
    elif kind == "image":
        im = v.image
        out["image"] = {"height": im.height, "width": im.width, "colorspace": im.colorspace,
                        "encoded": base64.b64encode(im.encoded_image).decode()}
    elif kind == "loss_landscape":
        ll = v.loss_landscape
        out["landscape"] = {
            "landscape": point(ll.landscape), "convergence_point": point(ll.convergence_point),
            "loss_path": {"intervals": list(ll.loss_path.intervals), "points": point(ll.loss_path.points)},
            "metadata": {"decomposition": _s(ll.metadata.decomposition), "unit": _s(ll.metadata.unit),
                         "step_per_epoch": ll.metadata.step_per_epoch},
        }
    return out


def event(ev):
    which = ev.WhichOneof("what")
    out = {"what": which, "wall_time": ev.wall_time, "step": ev.step}
    if which == "version":
        out["version"] = _s(ev.version)
    elif which == "summary":
        out["values"] = [value(v) for v in ev.summary.value]
    elif which == "train_lineage":
        hp = ev.train_lineage.hyper_parameters
        out["hyper_parameters"] = {
            "optimizer": _s(hp.optimizer), "learning_rate": hp.learning_rate, "loss_function": _s(hp.loss_function),
            "epoch": hp.epoch, "batch_size": hp.batch_size, "device_num": hp.device_num,
            "parallel_mode": _s(hp.parallel_mode),
        }
        out["train_dataset_size"] = ev.train_lineage.train_dataset.train_dataset_size
        out["network"] = _s(ev.train_lineage.algorithm.network)
        out["loss"] = ev.train_lineage.algorithm.loss
    elif which == "user_defined_info":
        out["user"] = [
            {"map_str": dict(u.map_str), "map_int32": dict(u.map_int32), "map_double": dict(u.map_double)}
            for u in ev.user_defined_info.user_info
        ]
    return out
