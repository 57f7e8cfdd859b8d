"""Per-layer vectors: one float32 value per layer at one step (update ratio, gradient norm, weight norm, flight
recorder dumps); the layer names are in the plugin content (``"layers": [...]``)."""

import numpy as np

from .. import metadata
from . import _tensors


def value(tag, layer_names, values, description="", frozen=()):
    """``Summary.Value`` of one step's vector; raises ValueError when names and values differ in length.
    ``frozen``: the names among ``layer_names`` that the optimizer does not train (content field ``frozen``, only
    written when there are some; readers that do not know it ignore it)."""
    from tensorboard.compat.proto import summary_pb2

    values = np.asarray(values, dtype=np.float32).reshape(-1)
    if len(layer_names) != values.size:
        raise ValueError("%d layer names for %d values in %r" % (len(layer_names), values.size, tag))
    fields = {"layers": [str(n) for n in layer_names]}
    if frozen:
        fields["frozen"] = [str(n) for n in frozen]
    return summary_pb2.Summary.Value(
        tag=tag,
        metadata=metadata.create_summary_metadata(metadata.KIND_LAYERS, description=description, **fields),
        tensor=_tensors.numeric(values, dtype="float32"),
    )


def names(content):
    """The layer names of a parsed plugin content of kind ``layers`` (``[]`` when it has none or is another kind)."""
    if not isinstance(content, dict) or content.get("kind") != metadata.KIND_LAYERS:
        return []
    found = content.get("layers")
    return [str(n) for n in found] if isinstance(found, list) else []


def frozen(content):
    """The names marked frozen in a parsed plugin content of kind ``layers`` (``[]`` when none)."""
    if not isinstance(content, dict) or content.get("kind") != metadata.KIND_LAYERS:
        return []
    found = content.get("frozen")
    return [str(n) for n in found] if isinstance(found, list) else []


def decode(content, array):
    """One step's values (float64, one per layer name) or ``None`` when their count is not the names' count."""
    values = _tensors.floats(array)
    layer_names = names(content)
    if values is None or not layer_names or values.size != len(layer_names):
        return None
    return values


def select(names, shapes, include=None, exclude=None, max_layers=None):
    """``(picked, truncated_from)``: the indices of the layers a per-layer series records, in model order: those
    whose name ``include`` (a compiled regex) finds, or every parameter of two or more dimensions without it, less
    those ``exclude`` finds; more than ``max_layers`` are thinned to that many evenly spaced (``truncated_from`` their
    count, else None). MindSpore's cells and the torch-style adapter choose alike."""
    picked = []
    for i, (name, shape) in enumerate(zip(names, shapes)):
        if include is None:
            if len(shape) < 2:
                continue
        elif not include.search(name):
            continue
        if exclude is not None and exclude.search(name):
            continue
        picked.append(i)
    if max_layers is None or len(picked) <= max_layers:
        return picked, None
    keep = np.unique(np.round(np.linspace(0, len(picked) - 1, max_layers)).astype(int))
    return [picked[i] for i in keep], len(picked)
