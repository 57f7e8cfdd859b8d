"""PyTorch and torch-style models (MindNLP's ``mindtorch`` modules, anything with ``named_parameters()`` and
torch-style ``param_groups``) recorded in the MindSpore callbacks' data contract, without MindSpore:

* :class:`~.monitor.TorchMonitor`: a plain training loop (``mon.step(loss)`` after ``optimizer.step()``);
* :class:`~.trainer_callback.TrainerMonitor`: a ``transformers`` ``TrainerCallback`` (imports transformers);
* :class:`~.params.ModuleParams`: the module adapter (parameter names from ``named_parameters()``, the optimizer's
  groups and applied learning rates), :class:`~.recording.Recording`: the tiers from four events of any entry
  point, :mod:`.tensor_ops`: the few tensor operations they need.

Exports are imported on first use (``TrainerMonitor`` needs ``transformers``; nothing here needs MindSpore).
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
    value = getattr(importlib.import_module("." + module, __name__), name)
    globals()[name] = value
    return value
