"""Companion MindSpore callbacks of tb-plugin-mindspore (installed as ``tb_mindspore_callbacks``).

One line to make the gradient norm visible, one callback to record the core tier::

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor, make_run_dir

    train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)
    Model(train_net).train(epochs, dataset, callbacks=[TrainMonitor(make_run_dir(experiment="mnist"))])

The MindSpore callbacks need MindSpore (the ``mindspore`` extra); the TensorBoard side does not. The exports below
are imported on first use, so users without MindSpore can import this package's framework-neutral parts:
``tb_mindspore_callbacks.torch_style`` (PyTorch and torch-style models: ``TorchMonitor``, the module adapter, the
``transformers`` ``TrainerCallback``) and ``common.run_dir`` never import MindSpore.

A ladder like the server side's: ``common`` < ``cells`` < ``recorders`` and ``landscape`` (side by side, never
importing each other) < the adapters at the top (``TrainMonitor`` in ``monitor.py``, ``LoopMonitor`` in ``loop.py``,
the demo; ``torch_style`` for PyTorch, which imports only ``tb_plugin_mindspore`` and no MindSpore). They may import
``tb_plugin_mindspore``'s ``io``, ``contract``, ``landscape``, ``writing``, ``sources`` and ``health`` layers, never
its ``answers``, ``server`` or ``commands``.
"""

import importlib

from .mindformers_registry import register_when_imported as _register_with_mindformers

# A YAML `callbacks:` entry `type: TrainMonitor` in mindformers: registered once mindformers' registry is imported
# (this imports neither mindformers nor MindSpore).
_register_with_mindformers()

# Public name -> the submodule that defines it, imported on first access (for users without MindSpore).
_EXPORTS = {
    "LoopMonitor": "loop",
    "TrainMonitor": "monitor",
    "DEBUG_ITEMS": "monitor",
    "Recorder": "recorders",
    "StepRecord": "recorders",
    # the options, grouped by what they switch on
    "Debug": "recorders",
    "Diagnostic": "recorders",
    "Eval": "recorders",
    "Layers": "recorders",
    "LiveHealth": "recorders",
    "Ranks": "recorders",
    "Storage": "recorders",
    "make_run_dir": "common.run_dir",
    "run_dir_name": "common.run_dir",
    "MonitoredTrainCell": "cells.train_cell",
    "MonitoredLossScaleCell": "cells.train_cell",
    # Loss landscapes (random / PCA / interpolation), see landscape/.
    "LandscapeCallback": "landscape",
    "LandscapeInterrupted": "landscape",
    "compute_landscape": "landscape",
    "interpolate": "landscape",
    "landscape_from_checkpoint": "landscape",
    # Sharpness (top Hessian eigenvalue, trace, edge-of-stability line), see landscape/sharpness.py.
    "SharpnessCallback": "landscape.sharpness",
    "SharpnessProbe": "landscape.sharpness",
    # PyTorch and torch-style models (no MindSpore needed), see torch_style/.
    "TorchMonitor": "torch_style",
}

__all__ = sorted(_EXPORTS) + ["run_demo"]


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    # lazy: importing the package must not import MindSpore (users of torch_style have none)
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def run_demo(*args, **kwargs):
    """See :func:`tb_mindspore_callbacks.demo.run_demo` (imported lazily)."""
    from .demo import run_demo as _run_demo   # lazy: the demo's model and datasets load only when it runs

    return _run_demo(*args, **kwargs)
