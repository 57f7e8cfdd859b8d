"""Small helpers shared by the callbacks: rank detection, finding cells, host-side learning rate, loss values."""

import logging
import os

import numpy as np

logger = logging.getLogger("tb_mindspore_callbacks")


def detect_rank():
    """``(rank, rank_size)`` of this process.

    MindSpore's communication API when it is initialised, else the ``RANK_ID`` / ``RANK_SIZE`` environment
    (set by ``msrun`` and the usual launch scripts), else ``(0, 1)``.
    """
    try:
        from mindspore.communication import management

        if management.GlobalComm.INITED:
            return int(management.get_rank()), int(management.get_group_size())
    except Exception:  # communication not available in this build: fall back to the environment
        pass
    rank = _env_int("RANK_ID", 0)
    size = _env_int("RANK_SIZE", 1)
    return rank, max(size, rank + 1)


def _env_int(name, default):
    text = os.environ.get(name, "").strip()
    try:
        return int(text)
    except ValueError:
        return default


def cb_get(cb_params, key, default=None):
    """``cb_params.<key>`` or ``default`` (``_InternalCallbackParam`` raises KeyError for a missing key)."""
    try:
        return getattr(cb_params, key)
    except (AttributeError, KeyError):
        return default


def find_cell(network, cls):
    """The first cell of type ``cls`` in ``network`` (itself included), or ``None``."""
    if network is None:
        return None
    if isinstance(network, cls):
        return network
    try:
        for _, cell in network.cells_and_names():
            if isinstance(cell, cls):
                return cell
    except Exception:
        return None
    return None


def find_optimizer(cb_params):
    from mindspore import nn

    opt = cb_get(cb_params, "optimizer")
    if isinstance(opt, nn.Optimizer):
        return opt
    return find_cell(cb_get(cb_params, "train_network"), nn.Optimizer)


def loss_value(outputs):
    """The loss as a Python float from whatever the training network returned (Tensor, tuple, list, number)."""
    while isinstance(outputs, (tuple, list)):
        if not outputs:
            return float("nan")
        outputs = outputs[0]
    if outputs is None:
        return float("nan")
    if hasattr(outputs, "asnumpy"):
        outputs = outputs.asnumpy()
    array = np.asarray(outputs, dtype=np.float64)
    if array.size == 0:
        return float("nan")
    return float(array.reshape(-1)[0] if array.size == 1 else array.mean())


def loss_values(kept):
    """:func:`loss_value` of each of several kept losses, read from the device in one host read when they are
    tensors of one shape and dtype (stacked on the device first): a collection point then synchronises once, however
    many steps it covers."""
    firsts = []
    for outputs in kept:
        while isinstance(outputs, (tuple, list)) and outputs:
            outputs = outputs[0]
        firsts.append(outputs)
    tensors = [t for t in firsts if hasattr(t, "asnumpy") and hasattr(t, "shape")]
    if len(tensors) > 1 and len(tensors) == len(firsts) and \
            len({(tuple(t.shape), str(t.dtype)) for t in tensors}) == 1:
        from mindspore import ops  # lazy: this module is imported where MindSpore may be absent (TorchMonitor)

        rows = np.asarray(ops.stack(tensors).asnumpy(), dtype=np.float64).reshape(len(tensors), -1)
        return [float("nan") if row.size == 0 else float(row[0] if row.size == 1 else row.mean()) for row in rows]
    return [loss_value(v) for v in firsts]


def lr_groups(optimizer):
    """Indices (into ``optimizer.parameters``) of one parameter per learning-rate group, in order of appearance.

    A single entry ``(0,)`` when the optimizer has one learning rate for all parameters.
    """
    if not getattr(optimizer, "is_group_lr", False):
        return (0,)
    seen = {}
    lrs = list(optimizer.learning_rate)
    for index, lr in enumerate(lrs):
        seen.setdefault(id(lr), index)
    return tuple(sorted(seen.values()))


def host_learning_rates(optimizer):
    """Learning rate(s) the optimizer applied at its most recent step, computed on the host without side effects.

    The optimizer increments ``global_step`` after reading its LR, so the step just taken used
    ``lr(global_step - 1)``. One value per LR group (see :func:`lr_groups`).
    """
    import mindspore as ms
    from mindspore import Parameter, Tensor, nn

    step = int(np.asarray(optimizer.global_step.asnumpy()).reshape(-1)[0]) - 1
    step = max(step, 0)
    if getattr(optimizer, "is_group_lr", False):
        sources = [optimizer.learning_rate[i] for i in lr_groups(optimizer)]
    else:
        sources = [optimizer.learning_rate]
    values = []
    for lr in sources:
        values.append(_lr_at(lr, step, ms, Parameter, Tensor, nn))
    return values


def _lr_at(lr, step, ms, Parameter, Tensor, nn):
    if isinstance(lr, (Parameter, Tensor)):
        array = np.asarray(lr.asnumpy(), dtype=np.float64).reshape(-1)
        if array.size == 1:
            return float(array[0])
        return float(array[min(step, array.size - 1)])
    inner = getattr(lr, "learning_rate", None)
    name = type(lr).__name__
    if name in ("_IteratorLearningRate", "_ConvertToCell") and isinstance(inner, Parameter):
        return _lr_at(inner, step, ms, Parameter, Tensor, nn)
    if isinstance(lr, nn.Cell):
        out = lr(Tensor(np.array([step], dtype=np.int32)))
        return float(np.asarray(out.asnumpy(), dtype=np.float64).reshape(-1)[0])
    return float(lr)
