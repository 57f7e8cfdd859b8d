"""MindSpore's lineage (``*_lineage`` files) as plain values, with the whole dataset pipeline.

:func:`lineage_update` merges one ``LineageEvent`` into a dict, like ``ms_files.lineage_update``, and decodes the
dataset graph with everything ``SummaryCollector`` records about each pipeline node (``lineage.proto``'s
``DatasetGraph``): its parameters, the operations of a ``Map`` (``Decode``, ``Rescale``, ``TypeCast`` ... with their
parameters) and the sampler of a source dataset (``RandomSampler`` with ``num_samples`` ...)::

    {"op_type": "Batch", "params": {"batch_size": 4, ...}, "children": [
        {"op_type": "Map", "params": {"input_columns": ["\\"image\\""], ...},
         "operations": [{"name": "Decode", "params": {"rgb": true}}, ...], "children": [
            {"op_type": "ImageFolderDataset", "params": {...},
             "sampler": {"name": "RandomSampler", "params": {"num_samples": 8, ...}}}]}]}
"""

import json

from . import ms_files

MAX_DEPTH = 32


def _params(p):
    params = {}
    params.update({k: v for k, v in p.mapStr.items()})
    params.update({k: list(v.strValue) for k, v in p.mapStrList.items()})
    params.update({k: bool(v) for k, v in p.mapBool.items()})
    params.update({k: int(v) for k, v in p.mapInt.items()})
    params.update({k: float(v) for k, v in p.mapDouble.items()})
    return params


def _json_or_text(text):
    try:
        value = json.loads(text, parse_constant=str)
    except (ValueError, RecursionError):
        return text
    return value if isinstance(value, (dict, list)) else text


def operation(op, name_key):
    """One ``Operation`` (a map operation or a sampler): ``{"name", "params"}`` plus ``size`` / ``weights`` when
    recorded. ``name_key`` is the parameter holding the name (``tensor_op_name`` or ``sampler_name``)."""
    params = _params(op.operationParam) if op.HasField("operationParam") else {}
    out = {"name": params.pop(name_key, None)}
    extra = params.pop("tensor_op_params", None)
    if extra is not None:
        decoded = _json_or_text(extra)
        if isinstance(decoded, dict):
            params.update(decoded)
        else:
            params["tensor_op_params"] = decoded
    out["params"] = params
    if len(op.size):
        out["size"] = [int(v) for v in op.size]
    if len(op.weights):
        out["weights"] = [float(v) for v in op.weights]
    return out


def dataset_graph(graph, depth=0):
    """A ``DatasetGraph`` message as nested dicts (see the module doc); nesting is cut at ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        return {}
    node = {}
    if graph.HasField("parameter"):
        params = _params(graph.parameter)
        node["op_type"] = params.pop("op_type", None)
        node["params"] = params
    if len(graph.operations):
        node["operations"] = [operation(op, "tensor_op_name") for op in graph.operations]
    if graph.HasField("sampler"):
        node["sampler"] = operation(graph.sampler, "sampler_name")
    if graph.children:
        node["children"] = [dataset_graph(c, depth + 1) for c in graph.children]
    return node


def lineage_update(lineage, event):
    """``ms_files.lineage_update`` with the full dataset graph. May raise on damaged data."""
    ms_files.lineage_update(lineage, event)
    if event.WhichOneof("what") == "dataset_graph":
        lineage["dataset_graph"] = dataset_graph(event.dataset_graph)
    return lineage
