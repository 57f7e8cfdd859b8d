"""A torch-style model's parameters for ``LoopMonitor`` (MindNLP's ``mindtorch`` modules): the torch-style module
adapter :class:`~.torch_style.params.ModuleParams` (``named_parameters()`` names, ``param_groups`` with ``lr``),
plus what the loop reads from it: whether a learning rate can be read at all, and the gradients on ``.grad``.

Which parameters: the module's trainable ones (``network=``), else the optimizer's ``param_groups`` in order (each
once). Names: ``named_parameters()``'s, or ``param_names=`` (a list in that order, or a callable ``param -> name``).
"""

from .torch_style.params import ModuleParams

__all__ = ["LoopParams", "loop_params", "group_params"]


def group_params(optimizer):
    """The parameters of a torch-style optimizer's ``param_groups``, in order, each once."""
    seen, out = set(), []
    for group in optimizer.param_groups:
        for p in group["params"]:
            if id(p) not in seen:
                seen.add(id(p))
                out.append(p)
    return out


class LoopParams(ModuleParams):
    """:class:`ModuleParams` with ``has_lr`` and ``grads()``."""

    @property
    def has_lr(self):
        return self.optimizer is not None or self._lr is not None

    def grads(self):
        """The parameters' ``.grad`` (torch style); None when every one is missing (cleared or not computed)."""
        grads = [getattr(p, "grad", None) for p in self.params]
        return None if all(g is None for g in grads) else grads


def loop_params(optimizer=None, network=None, param_names=None, lr=None):
    """The :class:`LoopParams` of a torch-style loop; None without parameters. Raises ValueError for names that do
    not fit (a list of the wrong length, names that repeat)."""
    params = None
    if network is None:
        params = group_params(optimizer) if optimizer is not None else []
    if callable(param_names):
        tensors = params if params is not None else [p for _, p in network.named_parameters()
                                                     if getattr(p, "requires_grad", True)]
        param_names = [str(param_names(p)) for p in tensors]
    table = LoopParams(model=network, optimizer=optimizer, param_names=param_names, params=params, lr=lr)
    if not table.params:
        return None
    if len(set(table.names)) != len(table.names):
        repeated = sorted({n for n in table.names if table.names.count(n) > 1})[:3]
        raise ValueError("parameter names must be unique, %s repeat" % ", ".join(repr(n) for n in repeated))
    return table
