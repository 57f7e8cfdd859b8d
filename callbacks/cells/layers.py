"""Per-layer statistics computed on the device: which parameters are "layers", and fused norm computations.

A *layer* is one MindSpore parameter, named by its parameter name (``encoder.0.dense1.weight``): names are stable
across runs and readable. :class:`LayerSelection` picks them by regex; every statistic over them is one compiled
computation over all selected parameters at once (one launch, one small vector back to the host), never an
``asnumpy()`` of the parameters themselves. The cells' ``construct`` is compiled in PYNATIVE_MODE too
(``mindspore.jit``): op by op, a norm per parameter would be hundreds of launches.
"""

import re

import numpy as np

import mindspore as ms
from mindspore import nn, ops, Parameter, ParameterTuple, Tensor
from mindspore.ops import composite as C

from tb_plugin_mindspore.contract import layers as layers_contract

from .train_cell import norm_plan, square_sums

__all__ = ["LayerSelection", "WeightNorms", "Snapshot", "UpdateRatio", "DEFAULT_MAX_LAYERS", "cached"]

DEFAULT_MAX_LAYERS = 64

_to_float32 = C.MultitypeFuncGraph("tbms_to_float32")


@_to_float32.register("Tensor")
def _to_float32_tensor(x):
    return ops.cast(x, ms.float32)


_difference = C.MultitypeFuncGraph("tbms_difference")


@_difference.register("Tensor", "Tensor")
def _difference_tensor(after, before):
    return ops.cast(after, ms.float32) - ops.cast(before, ms.float32)


def _compile(pattern, what):
    if pattern is None:
        return None
    if isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise ValueError("%s must be a regular expression string or None, got %r" % (what, pattern))
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError("%s is not a valid regular expression (%r): %s" % (what, pattern, e)) from None


class LayerSelection:
    """Which parameters get per-layer statistics.

    Args:
      include: regex searched in each parameter name; ``None`` selects every parameter with at least 2 dimensions
        (weight matrices, embeddings, convolution kernels; not biases or norm scales).
      exclude: regex; matching names are dropped (applied after ``include``).
      max_layers: upper bound on the number of layers (keeps the number of series bounded on large models). When
        more match, an evenly spaced subset over the network's depth is kept, first and last included.

    Raises ValueError for a bad regex or ``max_layers < 1`` (at construction, not mid-training).
    """

    def __init__(self, include=None, exclude=None, max_layers=DEFAULT_MAX_LAYERS):
        self.include = _compile(include, "layers_include")
        self.exclude = _compile(exclude, "layers_exclude")
        if isinstance(max_layers, bool) or not isinstance(max_layers, int) or max_layers < 1:
            raise ValueError("max_layers must be an int >= 1, got %r" % (max_layers,))
        self.max_layers = max_layers
        self.truncated_from = None   # number of matching parameters when more than max_layers matched

    def select(self, params, names=None):
        """The selected parameters, in network order (``names``: their names when not ``p.name``, e.g. the
        ``named_parameters()`` names of a torch-style module)."""
        return [params[i] for i in self.select_indices(params, names)]

    def select_indices(self, params, names=None):
        """Indices into ``params`` of the selected parameters, in network order."""
        names = [p.name for p in params] if names is None else list(names)
        picked, self.truncated_from = layers_contract.select(names, [p.shape for p in params], self.include,
                                                             self.exclude, self.max_layers)
        return picked

    def select_more(self, params):
        """The parameters of ``params`` that match the selection's regexes (or have 2+ dimensions), without the
        ``max_layers`` bound or touching ``truncated_from`` (frozen parameters, listed beside the trained ones)."""
        out = []
        for p in params:
            if self.include is None:
                if len(p.shape) < 2:
                    continue
            elif not self.include.search(p.name):
                continue
            if self.exclude is not None and self.exclude.search(p.name):
                continue
            out.append(p)
        return out[:self.max_layers]

    def describe(self):
        return {
            "include": self.include.pattern if self.include is not None else None,
            "exclude": self.exclude.pattern if self.exclude is not None else None,
            "max_layers": self.max_layers,
        }


_CACHE = []          # [(key, cell)], most recent last
_CACHE_SIZE = 8
# A network with at most this many tensors shares one compiled graph per kind and shape signature with every other
# network of those shapes (the tensors go in at each call): a second network, or a monitor made again for a new
# network of those shapes, compiles nothing (each compile costs 0.3-0.8 s on a 2-core machine, whatever the
# network's size). Passing the tensors costs at each call (``bench/compile_cost.py``, GRAPH_MODE, 2-core CPU: with
# 8 tensors the weight norms 0.81 ms against 0.44 with a graph of the network's own, the update ratio 1.80 against
# 0.72; with 16, 0.95 and 4.9 against 0.44 and 1.08), so larger networks keep graphs of their own that hold their
# Parameters.
SHARED_MAX_TENSORS = 8
_SHARED = []         # [(key, cell)], most recent last
_SHARED_SIZE = 16


def cached(cls, params, *args):
    """``cls(params, *args)`` or its shared-graph form, reused for the same parameters (a new cell would be
    compiled again).

    Monitors are often recreated (one per ``Model.train`` call) for the same network; compiling their small
    graphs again each time would cost seconds. The cache keeps the last few cells (they hold their parameters).
    """
    key = (cls, tuple(id(p) for p in params), args)
    for i, (k, cell) in enumerate(_CACHE):
        if k == key:
            _CACHE.append(_CACHE.pop(i))
            return cell
    params = list(params)
    if _all_parameters(params) and len(params) > SHARED_MAX_TENSORS:
        cell = UpdateRatio(cached(Snapshot, params)) if cls is UpdateRatio else cls(params, *args)
    else:
        cell = _bound(cls, params)
    _CACHE.append((key, cell))
    del _CACHE[:-_CACHE_SIZE]
    return cell


def _all_parameters(params):
    return all(isinstance(p, Parameter) for p in params)


def _shared(cls, tensors):
    """The one compiled ``cls`` cell for tensors of these shapes and types (built on first use)."""
    key = (cls, tuple((tuple(t.shape), str(t.dtype)) for t in tensors))
    for i, (k, cell) in enumerate(_SHARED):
        if k == key:
            _SHARED.append(_SHARED.pop(i))
            return cell
    cell = cls([tuple(t.shape) for t in tensors])
    _SHARED.append((key, cell))
    del _SHARED[:-_SHARED_SIZE]
    return cell


def _bound(cls, tensors):
    """``cls`` over ``tensors`` given at each call to a graph shared by every network of the same shapes: for few
    tensors (:data:`SHARED_MAX_TENSORS`) and for tensors that are not Parameters (a torch-style module's parameters,
    e.g. MindNLP's ``mindtorch`` ones, are plain Tensors that a cell cannot hold as its own)."""
    if cls is WeightNorms:
        return _Bound(_shared(_WeightNormsOf, tensors), tensors)
    if cls is Snapshot:
        return _Bound(_shared(_SnapshotOf, tensors), tensors, _copies(tensors, "tbms_before_t"))
    if cls is UpdateRatio:
        snapshot = cached(Snapshot, tensors)      # the copy the network's snapshot keeps
        before = snapshot.inputs[1] if isinstance(snapshot, _Bound) else snapshot.before
        return _Bound(_shared(_UpdateRatioOf, tensors), tensors, before)
    raise TypeError("%s needs mindspore Parameters" % cls.__name__)


class _Bound:
    """A shared compiled cell called with this network's tensors (and, for the update ratio and the snapshot, the
    kept copy), each as one variable input (``mindspore.mutable``: compiled once, the current values read at every
    call)."""

    def __init__(self, cell, *inputs):
        self.cell = cell
        self.inputs = tuple(tuple(i) for i in inputs)

    def __call__(self):
        return self.cell(*(ms.mutable(i) for i in self.inputs))


_KEPT_COPIES = [0]


def _copies(tensors, prefix):
    _KEPT_COPIES[0] += 1
    return ParameterTuple([
        Parameter(Tensor(np.zeros(tuple(p.shape), np.float32)), name="%s%d.%d" % (prefix, _KEPT_COPIES[0], i),
                  requires_grad=False)
        for i, p in enumerate(tensors)
    ])


class _WeightNormsOf(nn.Cell):
    """:class:`WeightNorms` of tensors of the given shapes, given at each call."""

    def __init__(self, shapes):
        super().__init__(auto_prefix=False)
        self._groups = norm_plan(shapes)[0]

    @ms.jit
    def construct(self, params):
        return ops.sqrt(square_sums(params, self._groups))


class _SnapshotOf(nn.Cell):
    """:class:`Snapshot` of tensors given at each call into their copy (Parameters, given too)."""

    def __init__(self, shapes):
        super().__init__(auto_prefix=False)
        self.hyper_map = C.HyperMap()

    @ms.jit
    def construct(self, params, before):
        return self.hyper_map(ops.assign, before, self.hyper_map(_to_float32, params))


class _UpdateRatioOf(nn.Cell):
    """:class:`UpdateRatio` of tensors given at each call, against their copy (given too)."""

    def __init__(self, shapes):
        super().__init__(auto_prefix=False)
        self.hyper_map = C.HyperMap()
        self._groups = norm_plan(shapes)[0]

    @ms.jit
    def construct(self, params, before):
        diff = ops.sqrt(square_sums(self.hyper_map(_difference, params, before), self._groups))
        before_norm = ops.sqrt(square_sums(before, self._groups))
        after = ops.sqrt(square_sums(params, self._groups))
        return diff / before_norm, after


class WeightNorms(nn.Cell):
    """``construct() -> float32[n]``: the L2 norm of each parameter, in one compiled computation (a few kernels
    per group of parameters, ``train_cell.square_sums``)."""

    def __init__(self, params):
        super().__init__(auto_prefix=False)
        self.params = ParameterTuple(params)
        self._groups = norm_plan([p.shape for p in params])[0]

    @ms.jit
    def construct(self):
        return ops.sqrt(square_sums(self.params, self._groups))


class Snapshot(nn.Cell):
    """Keeps a copy of the parameters (``tbms_before.<name>``); ``construct()`` refreshes it on the device.

    Memory: one float32 copy of the selected parameters.
    """

    def __init__(self, params):
        super().__init__(auto_prefix=False)
        self.params = ParameterTuple(params)
        self.before = ParameterTuple([
            Parameter(Tensor(np.zeros(p.shape, np.float32)), name="tbms_before." + p.name, requires_grad=False)
            for p in params
        ])
        self.hyper_map = C.HyperMap()

    @ms.jit
    def construct(self):
        return self.hyper_map(ops.assign, self.before, self.hyper_map(_to_float32, self.params))


class UpdateRatio(nn.Cell):
    """``construct() -> (ratio float32[n], norm_after float32[n])`` against a :class:`Snapshot`.

    ratio_i = ||w_i(now) - w_i(snapshot)|| / ||w_i(snapshot)||: the real change made by the optimizer (Adam's
    included), not lr * grad. A zero weight at the snapshot gives Inf (or NaN if it did not move either).
    """

    def __init__(self, snapshot):
        super().__init__(auto_prefix=False)
        self.params = snapshot.params
        self.before = snapshot.before
        self.hyper_map = C.HyperMap()
        self._groups = norm_plan([p.shape for p in self.params])[0]

    @ms.jit
    def construct(self):
        diff = ops.sqrt(square_sums(self.hyper_map(_difference, self.params, self.before), self._groups))
        before = ops.sqrt(square_sums(self.before, self._groups))
        after = ops.sqrt(square_sums(self.params, self._groups))
        return diff / before, after
