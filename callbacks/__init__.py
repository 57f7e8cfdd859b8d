"""Companion MindSpore callbacks of tb-plugin-mindspore (installed as ``tb_mindspore_callbacks``).

One line to make the gradient norm visible, one callback to record the core tier::

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor, make_run_dir

    train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)
    Model(train_net).train(epochs, dataset, callbacks=[TrainMonitor(make_run_dir(experiment="mnist"))])

The MindSpore callbacks need MindSpore (the ``mindspore`` extra). The exports below are imported on first use, so
users without MindSpore can import this package's framework-neutral parts: ``tb_mindspore_callbacks.torch_style``
(PyTorch and torch-style models: ``TorchMonitor``, the module adapter, the ``transformers`` ``TrainerCallback``) and
``run_dir`` never import MindSpore.
"""

import importlib

# Public name -> the submodule that defines it (imported on first access: see the module doc).
_EXPORTS = {
    "LoopMonitor": "loop",
    "TrainMonitor": "monitor",
    "DEBUG_ITEMS": "monitor",
    "Recorder": "recorders",
    "StepRecord": "recorders",
    "make_run_dir": "run_dir",
    "run_dir_name": "run_dir",
    "MonitoredTrainCell": "train_cell",
    "MonitoredLossScaleCell": "train_cell",
    # Loss landscapes (random / PCA / interpolation), see landscape.py.
    "LandscapeCallback": "landscape",
    "LandscapeInterrupted": "landscape",
    "compute_landscape": "landscape",
    "interpolate": "landscape",
    "landscape_from_checkpoint": "landscape",
    # Sharpness (top Hessian eigenvalue, trace, edge-of-stability line), see sharpness.py.
    "SharpnessCallback": "sharpness",
    "SharpnessProbe": "sharpness",
    # PyTorch and torch-style models (no MindSpore needed), see torch_style/.
    "TorchMonitor": "torch_style",
}

__all__ = sorted(_EXPORTS) + ["run_demo"]


def __getattr__(name):
    # Lazy exports, so that importing the package (or its framework-neutral submodules) works without MindSpore.
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))


def run_demo(*args, **kwargs):
    """See :func:`tb_mindspore_callbacks.demo.run_demo` (imported lazily)."""
    from .demo import run_demo as _run_demo

    return _run_demo(*args, **kwargs)
