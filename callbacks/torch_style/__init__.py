"""PyTorch and torch-style models (MindNLP's ``mindtorch`` modules, anything with ``named_parameters()`` and
torch-style ``param_groups``) recorded in the MindSpore callbacks' data contract, without MindSpore:

* :class:`~.monitor.TorchMonitor`: a plain training loop (``mon.step(loss)`` after ``optimizer.step()``);
* :class:`~.trainer_callback.TrainerMonitor`: a ``transformers`` ``TrainerCallback`` (imports transformers);
* :class:`~.params.ModuleParams`: the module adapter (parameter names from ``named_parameters()``, the optimizer's
  groups and applied learning rates), :class:`~.recording.Recording`: the tiers from four events of any entry
  point, :mod:`.tensor_ops`: the few tensor operations they need.

Exports are imported on first use (``TrainerMonitor`` needs ``transformers``; nothing here needs MindSpore).

May import: ``tb_plugin_mindspore``'s ``contract`` and ``writing`` layers (and ``metadata``); never MindSpore, the
MindSpore callbacks' ``common``, ``cells`` or ``recorders`` (they import MindSpore), nor the server's ``answers``,
``server`` or ``commands``. PyTorch and transformers only inside the modules that need them.
"""

import importlib

_EXPORTS = {
    "TorchMonitor": "monitor",
    "GradTap": "monitor",
    "TrainerMonitor": "trainer_callback",
    "ModuleParams": "params",
    "LayerPick": "params",
    "Recording": "recording",
    "RecordSettings": "recording",
    "DEBUG_ITEMS": "recording",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    # lazy: TrainerMonitor imports transformers, which only its users have
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value
