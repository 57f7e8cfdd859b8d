"""Activation probe: the outputs of chosen cells on a few samples, taken by one extra forward pass.

Forward hooks run only in PYNATIVE_MODE, and a PYNATIVE forward pass dispatches every operator from Python: for the
demo transformer on two CPU cores the activation and attention probes cost about 0.25 s of wall time a debug point
op by op, against 0.07 s with each probed cell's ``construct`` compiled by ``mindspore.jit`` (the hooks still see
every probed cell's output) after a compile of about 7 s. So a probe runs op by op for its first passes and compiled
from then on (``tiering.py``): a short run never pays the compile (the demo's 8 debug points, most tests). The
compiled blocks are kept per cell, so later probes, later ``TrainMonitor`` objects on the same network included,
reuse them at once. A cell that cannot be compiled is probed without compiling from then on. The training network
itself is untouched: the class's ``construct`` is restored before the probe returns, and the probe never runs inside
a training step.
"""

import contextlib
import time
import weakref

from ..common.util import logger
from . import tiering

__all__ = ["ActivationProbe", "TorchActivationProbe", "torch_blocks"]

_NONE = object()
# cell -> its compiled construct, or None once compiling it failed (then it runs op by op).
_COMPILED = weakref.WeakKeyDictionary()


def _compiled(cell):
    """The compiled ``construct`` of ``cell`` (made on first use), or None if compiling it failed before."""
    import mindspore as ms

    try:
        return _COMPILED[cell]
    except KeyError:
        fn = _COMPILED[cell] = ms.jit(cell.construct)
        return fn
    except TypeError:        # not weak-referenceable: a new wrapper each time rather than never compiling
        return ms.jit(cell.construct)


def _is_compiled(cell):
    try:
        return _COMPILED.get(cell) is not None
    except TypeError:
        return False


def _mark_failed(cell):
    try:
        _COMPILED[cell] = None
    except TypeError:
        pass


def _positional_count(net, given):
    """How many of ``given`` positional inputs ``net.construct`` takes (``given`` when it takes any number or its
    signature cannot be read)."""
    import inspect

    try:
        params = list(inspect.signature(net.construct).parameters.values())
    except (TypeError, ValueError):
        return given
    if any(p.kind == p.VAR_POSITIONAL for p in params):
        return given
    return min(given, sum(1 for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)))


class ActivationProbe:
    """Captures the outputs of ``cells`` (``[(name, cell)]``, inside ``net``) for the first ``samples`` samples.

    ``probe(inputs)`` runs ``net(*inputs)`` in inference mode without a backward graph and returns ``{name: numpy
    array}`` (the first Tensor of a cell's output). The global execution mode is switched to PYNATIVE_MODE for the
    pass and back afterwards.
    """

    def __init__(self, net, cells, samples, take_inputs=False):
        self.net = net
        self.cells = list(cells)
        self.samples = int(samples)
        # take_inputs: keep each probed cell's inputs (a tuple of Tensors) instead of its output.
        self.take_inputs = bool(take_inputs)
        # Only cells with no probed cell inside them are compiled: a compiled parent would run its probed children
        # inside its graph, where their hooks do not fire.
        probed = {id(c) for _, c in self.cells}
        self._compile = []
        for _, cell in self.cells:
            inner = {id(c) for _, c in cell.cells_and_names() if c is not cell}
            if not inner & probed:
                self._compile.append(cell)
        self._op_by_op = [0, 0.0]    # passes run op by op so far, their wall time together

    def __call__(self, inputs):
        from mindspore import Tensor, nn

        if not self.cells or inputs is None:
            return {}
        net = self.net
        sliced = []
        for x in inputs:
            if isinstance(x, Tensor) and x.ndim >= 1 and x.shape[0] > self.samples:
                x = x[:self.samples]
            sliced.append(x)
        if isinstance(net, nn.WithLossCell) and sliced:
            net, sliced = net._backbone, sliced[:1]     # WithLossCell(data, label) runs backbone(data): skip the loss
        else:
            # A loop's inputs=(data, label) with network= its backbone: the columns past what it takes are labels.
            sliced = sliced[:_positional_count(net, len(sliced))]
        was_training, needed_grad = net.training, net.requires_grad
        blocks_compiled = all(_is_compiled(c) for c in self._compile)
        compiled = tiering.due(*self._op_by_op) or (bool(self._compile) and blocks_compiled)
        started = time.perf_counter()
        try:
            net.set_train(False)
            net.set_grad(False)         # no backward graph is recorded for this forward pass
            first = compiled and not blocks_compiled
            with tiering.pynative(), (tiering.compiling() if first else contextlib.nullcontext()):
                try:
                    captured = self._forward(net, sliced, compiled=compiled)
                except Exception as e:  # a block MindSpore cannot compile: probe op by op from now on
                    if not compiled:
                        raise
                    logger.info("tb-mindspore: activations: compiling the probed cells failed (%s); probing them "
                                "without compiling", str(e).splitlines()[0] if str(e) else type(e).__name__)
                    for cell in self._compile:
                        _mark_failed(cell)
                    self._compile = []
                    captured = self._forward(net, sliced, compiled=False)
        finally:
            net.set_grad(needed_grad)
            net.set_train(was_training)
        if not compiled:
            self._op_by_op[0] += 1
            self._op_by_op[1] += time.perf_counter() - started
        if self.take_inputs:
            return {name: tuple(t.asnumpy() if isinstance(t, Tensor) else t for t in captured[name])
                    for name, _ in self.cells if name in captured}
        return {name: captured[name].asnumpy() for name, _ in self.cells if name in captured}

    def _forward(self, net, sliced, compiled):
        from mindspore import Tensor

        captured = {}

        def hook_for(name):
            def hook(cell, hook_inputs, output):
                if self.take_inputs:
                    captured[name] = tuple(hook_inputs)
                    return
                while isinstance(output, (tuple, list)) and output:
                    output = output[0]
                if isinstance(output, Tensor):
                    captured[name] = output
            return hook

        swapped = []            # (cell, the instance's own construct attribute or a marker)
        handles = []
        try:
            if compiled:
                for cell in self._compile:
                    fn = _compiled(cell)
                    if fn is None:
                        continue
                    swapped.append((cell, cell.__dict__.get("construct", _NONE)))
                    object.__setattr__(cell, "construct", fn)
            handles = [cell.register_forward_hook(hook_for(name)) for name, cell in self.cells]
            net(*sliced)
        finally:
            for h in handles:
                h.remove()
            for cell, own in swapped:
                if own is _NONE:
                    cell.__dict__.pop("construct", None)
                else:
                    object.__setattr__(cell, "construct", own)
        return captured



def torch_blocks(module):
    """``[(name, module)]``: the top-level blocks of a torch-style module, by ``named_parameters()``-style names.

    The numbered children of containers (``bert.encoder.layer.0``, ``layers.3``: the repeated blocks) and, on the
    way to them, every other child that holds parameters (``bert.embeddings``, ``bert.pooler``, ``classifier``),
    in module order. Without numbered blocks: the module's children that hold parameters.
    """
    named = dict(module.named_modules())
    blocks = set()
    for name in named:
        parent, _, last = name.rpartition(".")
        if name and last.isdigit() and parent in named and type(named[parent]).__name__ in ("ModuleList",
                                                                                          "Sequential"):
            if not any(name.startswith(b + ".") for b in blocks):
                blocks.add(name)
    ancestors = {b.rsplit(".", i)[0] for b in blocks for i in range(1, b.count(".") + 1)}
    out = []

    def has_params(m):
        return any(True for _ in m.parameters())

    def visit(prefix, parent):
        for name, child in parent.named_children():
            full = prefix + name
            if full in blocks:
                out.append((full, child))
            elif full in ancestors:
                visit(full + ".", child)
            elif has_params(child):
                out.append((full, child))

    visit("", module)
    return out


class TorchActivationProbe:
    """:class:`ActivationProbe` for a torch-style module (MindNLP's ``mindtorch``): forward hooks on ``modules``
    (``[(name, module)]``) during one forward pass in eval mode on the first ``samples`` samples.

    ``probe(inputs)``: ``inputs`` is the step's batch as given to :meth:`LoopMonitor.step` (a dict of keyword
    arguments, e.g. ``input_ids``, or a tuple of positional ones); returns ``{name: numpy array}``.
    """

    def __init__(self, module, modules, samples):
        self.net = module
        self.cells = list(modules)
        self.samples = int(samples)

    def _slice(self, x):
        shape = getattr(x, "shape", None)
        if shape is not None and len(shape) >= 1 and shape[0] > self.samples:
            return x[:self.samples]
        return x

    def __call__(self, inputs):
        if not self.cells or inputs is None:
            return {}
        captured = {}

        def hook_for(name):
            def hook(module, hook_inputs, output):
                while isinstance(output, (tuple, list)) and output:
                    output = output[0]
                if hasattr(output, "shape"):
                    captured[name] = output
            return hook

        was_training = bool(getattr(self.net, "training", True))
        handles = []
        try:
            self.net.eval()
            handles = [m.register_forward_hook(hook_for(name)) for name, m in self.cells]
            if isinstance(inputs, dict):
                self.net(**{k: self._slice(v) for k, v in inputs.items()})
            else:
                self.net(*[self._slice(x) for x in inputs])
        finally:
            for h in handles:
                h.remove()
            self.net.train(was_training)
        out = {}
        for name, _ in self.cells:
            if name in captured:
                value = captured[name]
                out[name] = value.asnumpy() if hasattr(value, "asnumpy") else value.detach().cpu().numpy()
        return out
