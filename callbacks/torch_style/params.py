"""The torch-style module adapter: a model's trainable parameters under their ``named_parameters()`` names, the
optimizer's parameter groups (``param_groups``, each with its ``lr``), and which of them are layers.

Works for any model with ``named_parameters()`` and any optimizer with torch-style ``param_groups`` (PyTorch,
MindNLP's torch-style modules), or explicit ``param_names=`` / ``params=`` / ``lr=`` where a model or optimizer
does not offer them. Imports neither PyTorch nor MindSpore.
"""

import numbers
import re

from tb_plugin_mindspore.contract import layers as layers_contract

__all__ = ["ModuleParams", "LayerPick", "DEFAULT_MAX_LAYERS"]

DEFAULT_MAX_LAYERS = 64     # as the MindSpore callbacks' layer selection


def _compile(pattern, what):
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str):
        raise ValueError("%s must be a regular expression string or None, got %r" % (what, pattern))
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError("%s is not a valid regular expression (%r): %s" % (what, pattern, e)) from None


def _shape(tensor):
    shape = getattr(tensor, "shape", None)
    return tuple(int(n) for n in shape) if shape is not None else ()


class LayerPick:
    """Which parameters get per-layer statistics (the same rules as the MindSpore callbacks' ``layers_include``):

    ``include`` (regex searched in the name; ``None``: every parameter with at least 2 dimensions), ``exclude``
    (regex, applied after), ``max_layers`` (more matches: an evenly spaced subset over the depth, first and last
    kept). Raises ValueError for a bad regex or ``max_layers < 1``.
    """

    def __init__(self, include=None, exclude=None, max_layers=DEFAULT_MAX_LAYERS):
        self.include = _compile(include, "layers_include")
        self.exclude = _compile(exclude, "layers_exclude")
        if isinstance(max_layers, bool) or not isinstance(max_layers, int) or max_layers < 1:
            raise ValueError("max_layers must be an int >= 1, got %r" % (max_layers,))
        self.max_layers = max_layers
        self.truncated_from = None

    def indices(self, names, shapes):
        """Indices of the selected parameters, in model order."""
        picked, self.truncated_from = layers_contract.select(names, shapes, self.include, self.exclude,
                                                             self.max_layers)
        return picked

    def describe(self):
        return {"include": self.include.pattern if self.include is not None else None,
                "exclude": self.exclude.pattern if self.exclude is not None else None,
                "max_layers": self.max_layers}


class ModuleParams:
    """A model's trainable parameters by name, with the optimizer's groups.

    Args:
      model: anything with ``named_parameters()`` (a ``torch.nn.Module``, a MindNLP module); parameters with
        ``requires_grad`` False are left out. Or None with ``params=``.
      optimizer: a torch-style optimizer (``param_groups``: dicts with ``"params"`` and ``"lr"``), or None.
      param_names: names for ``params`` (or, with a model, names replacing ``named_parameters()``' in its order).
      params: the parameter tensors when there is no model (e.g. gradients given in this order).
      lr: the applied learning rate where no ``param_groups`` say it: a number, a sequence (one per group) or a
        callable returning either; it overrides the groups' ``lr``.
      scheduler: the LR scheduler, if any (its class goes into ``lr_config``).

    Raises ValueError naming what was given when the model has no ``named_parameters()``, the names and
    parameters differ in number, the optimizer has no ``param_groups``, or ``lr`` is of the wrong kind.
    """

    def __init__(self, model=None, optimizer=None, param_names=None, params=None, lr=None, scheduler=None):
        if model is not None:
            if not callable(getattr(model, "named_parameters", None)):
                raise ValueError("model must have named_parameters() (a torch.nn.Module or a torch-style module), "
                                 "got %s; pass params= and param_names= instead" % type(model).__name__)
            named = [(str(n), p) for n, p in model.named_parameters() if getattr(p, "requires_grad", True)]
            names = [n for n, _ in named]
            tensors = [p for _, p in named]
        elif params is not None:
            tensors = list(params)
            names = ["param%d" % i for i in range(len(tensors))]
        else:
            tensors, names = [], []
        if param_names is not None:
            param_names = [str(n) for n in param_names]
            if tensors and len(param_names) != len(tensors):
                raise ValueError("param_names has %d names for %d parameters" % (len(param_names), len(tensors)))
            names = param_names
        if optimizer is not None and not isinstance(getattr(optimizer, "param_groups", None), (list, tuple)):
            raise ValueError("optimizer must have torch-style param_groups (a list of dicts with 'params' and "
                             "'lr'), got %s; pass lr= instead" % type(optimizer).__name__)
        if lr is not None and not (callable(lr) or _is_number(lr) or _is_numbers(lr)):
            raise ValueError("lr must be a number, a sequence of numbers (one per group) or a callable, got %r"
                             % (lr,))
        self.names = names
        # Where the names come from (the run information says it): the model's named_parameters() or given.
        self.names_from = "named_parameters" if model is not None and param_names is None else "given"
        self.params = tensors
        self.shapes = [_shape(p) for p in tensors]
        self.optimizer = optimizer
        self.scheduler = scheduler
        self._lr = lr
        self.groups = self._group_of_params()

    def __len__(self):
        return len(self.params)

    def _group_of_params(self):
        """Index of each parameter's optimizer group (-1: in none)."""
        if self.optimizer is None:
            return [0] * len(self.params)
        where = {}
        for g, group in enumerate(self.optimizer.param_groups):
            for p in group.get("params", ()):
                where.setdefault(id(p), g)
        return [where.get(id(p), -1) for p in self.params]

    @property
    def num_groups(self):
        if self.optimizer is not None:
            return len(self.optimizer.param_groups)
        lrs = self.lrs()
        return max(1, len(lrs))

    def lrs(self):
        """The learning rate each group applies now (floats), ``()`` when nothing says."""
        lr = self._lr
        if lr is not None:
            value = lr() if callable(lr) else lr
            return tuple(float(v) for v in (value if _is_numbers(value) else [value]))
        if self.optimizer is None:
            return ()
        return tuple(_to_float(group.get("lr")) for group in self.optimizer.param_groups)

    def lr_config(self):
        """The declared learning-rate intent in the run information's format (``contract.run_info``): a group
        with ``initial_lr`` (set by PyTorch's LR schedulers) or a scheduler given is a ``schedule``, a plain number
        a ``constant``, an ``lr=`` callable ``dynamic``."""
        if self._lr is not None:
            kind = "dynamic" if callable(self._lr) else "constant"
            values = [] if callable(self._lr) else list(self.lrs())
            groups = [{"kind": kind, "class": None, "value": v if kind == "constant" else None}
                      for v in (values or [None])]
            return {"kind": kind, "class": None, "groups": groups}
        if self.optimizer is None:
            return {"kind": "unknown", "class": None, "groups": []}
        sched = type(self.scheduler).__name__ if self.scheduler is not None else None
        groups = []
        for group in self.optimizer.param_groups:
            if self.scheduler is not None or "initial_lr" in group:
                groups.append({"kind": "schedule", "class": sched, "value": None})
            else:
                groups.append({"kind": "constant", "class": None, "value": _to_float(group.get("lr"))})
        kinds = [g["kind"] for g in groups]
        kind = "schedule" if "schedule" in kinds else ("constant" if kinds else "unknown")
        return {"kind": kind, "class": sched, "groups": groups}

    def describe_optimizer(self):
        """``{"class", "groups": [{hyperparameters of the group but its params}]}`` for the run information (what
        a port check compares: eps, betas, weight decay per group)."""
        if self.optimizer is None:
            return None
        groups = []
        for group in self.optimizer.param_groups:
            out = {}
            for key, value in group.items():
                if key == "params":
                    out["params"] = len(value)
                elif _is_number(value) or isinstance(value, (bool, str)) or value is None:
                    out[key] = value
                elif _is_numbers(value):
                    out[key] = [float(v) for v in value]
                else:
                    try:
                        out[key] = float(value)
                    except (TypeError, ValueError):
                        out[key] = str(value)[:80]
            groups.append(out)
        return {"class": type(self.optimizer).__name__, "groups": groups}


def _is_number(value):
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _is_numbers(value):
    return isinstance(value, (list, tuple)) and bool(value) and all(_is_number(v) for v in value)


def _to_float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return float("nan")
