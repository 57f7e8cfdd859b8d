"""Companion MindSpore callbacks of tb-plugin-mindspore (installed as ``tb_mindspore_callbacks``).

One line to make the gradient norm visible, one callback to record the core tier::

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor, make_run_dir

    train_net = MonitoredTrainCell.wrap(net, loss_fn, optimizer)
    Model(train_net).train(epochs, dataset, callbacks=[TrainMonitor(make_run_dir(experiment="mnist"))])

Importing this package imports MindSpore (install the ``mindspore`` extra); the TensorBoard side does not need it.

A ladder like the server side's: ``common`` < ``cells`` < ``recorders`` and ``landscape`` (side by side, never
importing each other) < the adapters at the top (``TrainMonitor`` in ``monitor.py``, ``LoopMonitor`` in ``loop.py``,
the demo). They may import ``tb_plugin_mindspore``'s ``io``, ``contract``, ``landscape``, ``writing``, ``sources`` and
``health`` layers, never its ``answers``, ``server`` or ``commands``.
"""

from .loop import LoopMonitor
from .monitor import DEBUG_ITEMS, TrainMonitor
from .recorders import Debug, Diagnostic, Eval, Layers, LiveHealth, Ranks, Recorder, StepRecord, Storage
from .common.run_dir import make_run_dir, run_dir_name
from .cells.train_cell import MonitoredLossScaleCell, MonitoredTrainCell

__all__ = ["MonitoredTrainCell", "MonitoredLossScaleCell", "TrainMonitor", "LoopMonitor", "DEBUG_ITEMS",
           "Recorder", "StepRecord", "make_run_dir", "run_dir_name", "run_demo",
           # the options, grouped by what they switch on
           "Debug", "Diagnostic", "Eval", "Layers", "LiveHealth", "Ranks", "Storage"]

# Loss landscapes (random / PCA / interpolation), see landscape.py.
from .landscape import (  # noqa: E402
    LandscapeCallback, LandscapeInterrupted, compute_landscape, interpolate, landscape_from_checkpoint,
)
__all__ += ["LandscapeCallback", "LandscapeInterrupted", "compute_landscape", "interpolate",
            "landscape_from_checkpoint"]

# Sharpness (top Hessian eigenvalue, trace, edge-of-stability line), see sharpness.py.
from .landscape.sharpness import SharpnessCallback, SharpnessProbe  # noqa: E402
__all__ += ["SharpnessCallback", "SharpnessProbe"]


def run_demo(*args, **kwargs):
    """See :func:`tb_mindspore_callbacks.demo.run_demo` (imported lazily)."""
    from .demo import run_demo as _run_demo   # lazy: the demo's model and datasets load only when it runs

    return _run_demo(*args, **kwargs)
