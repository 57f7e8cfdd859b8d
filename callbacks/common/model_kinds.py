"""What kind of model or optimizer an object is: the one-line errors at construction, and which adapter a monitor
uses (a ``mindspore.nn`` network, a torch-style module such as MindNLP's ``mindtorch`` models, real PyTorch).

Pure Python: nothing here imports MindSpore (a ``mindspore.nn.Cell`` is recognised by its class's module).
"""

__all__ = ["is_cell", "is_ms_optimizer", "is_pytorch", "is_torch_style_module", "is_torch_style_optimizer",
           "describe", "not_a_cell"]

_LOOP_ADVICE = ("train it in a hand-written loop recorded by LoopMonitor(logdir, optimizer, network=model) "
                "(from tb_mindspore_callbacks import LoopMonitor)")
_PYTORCH_ADVICE = ("MindSpore's training cells cannot run it; record PyTorch training with this project's "
                   "transformers TrainerCallback or PyTorch recorder")


def _mro_modules(obj):
    return [(c.__module__ or "", c.__name__) for c in type(obj).__mro__]


def is_cell(obj):
    """A ``mindspore.nn.Cell`` (recognised without importing MindSpore)."""
    return any(m.startswith("mindspore.nn") and n == "Cell" for m, n in _mro_modules(obj))


def is_ms_optimizer(obj):
    """A ``mindspore.nn.Optimizer``."""
    return any(m.startswith("mindspore.nn") and n == "Optimizer" for m, n in _mro_modules(obj))


def is_pytorch(obj):
    """An object of real PyTorch (``torch.nn.Module``, ``torch.optim.Optimizer``); not MindNLP's ``mindtorch``,
    which some environments also import under the name ``torch``."""
    modules = [m for m, _ in _mro_modules(obj)]
    if any(m.split(".")[0] in ("mindtorch", "mindspore", "mindnlp") for m in modules):
        return False
    return any(m == "torch" or m.startswith("torch.") for m in modules)


def is_torch_style_module(obj):
    """A module with torch's parameter API (``named_parameters()``) that is not a ``mindspore.nn.Cell``: MindNLP's
    ``mindtorch`` models, or real PyTorch."""
    return not is_cell(obj) and callable(getattr(obj, "named_parameters", None)) \
        and callable(getattr(obj, "parameters", None))


def is_torch_style_optimizer(obj):
    """An optimizer with torch's ``param_groups`` (a list of dicts, each with ``params``)."""
    groups = getattr(obj, "param_groups", None)
    if is_ms_optimizer(obj) or not isinstance(groups, (list, tuple)) or not groups:
        return False
    return all(isinstance(g, dict) and "params" in g for g in groups)


def _origin(obj):
    top = (type(obj).__module__ or "").split(".")[0]
    if is_pytorch(obj):
        return "a PyTorch %s" % ("optimizer" if is_torch_style_optimizer(obj) else "module")
    if is_torch_style_optimizer(obj):
        return "a torch-style optimizer%s" % (" from %s" % top if top and top != "__main__" else "")
    if is_torch_style_module(obj):
        return "a torch-style module%s" % (" from %s" % top if top and top != "__main__" else "")
    return None


def describe(obj):
    """``BertForSequenceClassification (a torch-style module from mindnlp)``, ``int``, ``None``: what was given, in
    a few words, for error messages."""
    if obj is None:
        return "None"
    name = type(obj).__name__
    origin = _origin(obj)
    return "%s (%s)" % (name, origin) if origin else name


def not_a_cell(what, obj, needed="a mindspore.nn.Cell"):
    """The one-line message for ``obj`` given where ``needed`` is required: what was given and what to use."""
    text = "%s needs %s, got %s" % (what, needed, describe(obj))
    if is_pytorch(obj):
        return "%s: %s" % (text, _PYTORCH_ADVICE)
    if is_torch_style_module(obj) or is_torch_style_optimizer(obj):
        return "%s: %s" % (text, _LOOP_ADVICE)
    return text
