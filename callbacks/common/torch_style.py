"""Torch-style models in ``LoopMonitor`` (MindNLP's ``mindtorch`` modules, any model whose parameters come from
``named_parameters()``): which parameters are trained, their names, and the learning rate applied per group.

Pure Python (no MindSpore, no torch import): the maths of the adapter, in small helpers that a PyTorch-side
recorder can share.

* Parameters: the optimizer's ``param_groups`` in order (each parameter once), else the module's trainable
  parameters (``named_parameters()`` with ``requires_grad``); the gradients given to the monitor follow this order.
* Names: ``param_names=`` (a list in that order, or a callable ``param -> name``), else the module's
  ``named_parameters()`` names (``bert.encoder.layer.0.attention.self.query.weight``), else ``param.name``.
* Learning rate: ``lr=`` (a callable returning a number or one number per group, or a number), else
  ``param_groups[i]["lr"]`` read when the step is taken.
"""

__all__ = ["ParamTable", "torch_table", "optimizer_params", "named_parameters_map", "parameter_names",
           "group_lrs", "lr_values"]


def optimizer_params(optimizer):
    """The parameters of a torch-style optimizer's ``param_groups``, in order, each once; and the group sizes."""
    seen, params, sizes = set(), [], []
    for group in optimizer.param_groups:
        count = 0
        for p in group["params"]:
            if id(p) not in seen:
                seen.add(id(p))
                params.append(p)
                count += 1
        sizes.append(count)
    return params, sizes


def named_parameters_map(module):
    """``{id(param): name}`` from ``module.named_parameters()`` (the first name of a shared parameter)."""
    out = {}
    for name, p in module.named_parameters():
        out.setdefault(id(p), str(name))
    return out


def parameter_names(params, module=None, param_names=None):
    """A name for every parameter: ``param_names`` (list or callable), else the module's names, else ``p.name``
    (else ``param<i>``). Raises ValueError for a list of the wrong length or names that are not unique."""
    if param_names is not None and not callable(param_names):
        names = [str(n) for n in param_names]
        if len(names) != len(params):
            raise ValueError("param_names has %d names for %d parameters (give one per parameter, in the order of "
                             "the gradients)" % (len(names), len(params)))
    else:
        by_id = named_parameters_map(module) if module is not None else {}
        names = []
        for i, p in enumerate(params):
            if callable(param_names):
                names.append(str(param_names(p)))
            elif id(p) in by_id:
                names.append(by_id[id(p)])
            else:
                names.append(str(getattr(p, "name", None) or "param%d" % i))
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})[:3]
        raise ValueError("parameter names must be unique, %s repeat" % ", ".join(repr(d) for d in dup))
    return names


def group_lrs(optimizer):
    """``param_groups[i]["lr"]`` as floats (NaN where a group has none)."""
    out = []
    for group in optimizer.param_groups:
        try:
            out.append(float(group.get("lr")))
        except (TypeError, ValueError):
            out.append(float("nan"))
    return tuple(out)


def lr_values(value):
    """A number or a sequence of numbers (per group) as a tuple of floats."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return tuple(float(v) for v in value)
    return (float(value),)


class ParamTable:
    """Every trained parameter in the order of the gradients, its name, and the applied learning rate(s).

    ``optimizer``: the torch-style optimizer (or None); ``lr``: the ``lr=`` given (callable or number) or None.
    """

    def __init__(self, params, names, optimizer=None, lr=None, group_sizes=None):
        self.params = list(params)
        self.names = list(names)
        self.optimizer = optimizer
        self.group_sizes = list(group_sizes or [])
        self._lr = lr

    @property
    def has_lr(self):
        return self._lr is not None or self.optimizer is not None

    def lrs(self):
        """The learning rate of every group now (``()`` when none can be read)."""
        if self._lr is not None:
            return lr_values(self._lr() if callable(self._lr) else self._lr)
        if self.optimizer is not None:
            return group_lrs(self.optimizer)
        return ()

    def grads(self):
        """The parameters' ``.grad`` (torch style); None when every one is missing (cleared or not computed)."""
        grads = [getattr(p, "grad", None) for p in self.params]
        return None if all(g is None for g in grads) else grads

    def lr_config(self):
        """The run info's ``lr_config``: a torch-style schedule changes ``param_groups`` in place, unseen by the
        monitor, so the kind is ``unknown``; the rates at the start are kept per group (``initial``)."""
        try:
            values = self.lrs()
        except Exception:
            values = ()
        groups = [{"kind": "unknown", "class": None, "initial": v} for v in values]
        source = "lr=" if self._lr is not None else "param_groups" if self.optimizer is not None else None
        return {"kind": "unknown", "class": None, "groups": groups, "source": source}


def torch_table(optimizer=None, network=None, param_names=None, lr=None):
    """The :class:`ParamTable` of a torch-style loop (see the module docstring); None without parameters."""
    if optimizer is not None:
        params, sizes = optimizer_params(optimizer)
    elif network is not None:
        params = [p for _, p in network.named_parameters() if getattr(p, "requires_grad", True)]
        sizes = [len(params)]
    else:
        params, sizes = [], []
    if not params:
        return None
    names = parameter_names(params, network, param_names)
    return ParamTable(params, names, optimizer=optimizer, lr=lr, group_sizes=sizes)
