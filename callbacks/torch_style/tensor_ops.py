"""The few tensor operations the torch-style recorder needs, for PyTorch tensors (fused ``torch._foreach_*`` calls,
kept on the device until a point is written) and for any other tensor with a torch-like API (MindNLP's, converted
to numpy one by one: slower, same numbers).

A *handle* is what an operation returns before it is read: a tensor of the framework (PyTorch) or a numpy array;
:meth:`to_numpy` reads it. Imports neither PyTorch nor MindSpore at import time.
"""

import sys

import numpy as np

__all__ = ["ops_for", "TorchOps", "NumpyOps", "as_numpy"]


def as_numpy(tensor):
    """Any tensor (PyTorch, MindSpore, MindNLP, numpy, a number) as a float64 numpy array."""
    if isinstance(tensor, np.ndarray):
        return tensor.astype(np.float64, copy=False)
    if hasattr(tensor, "asnumpy"):                      # MindSpore tensors
        return np.asarray(tensor.asnumpy(), dtype=np.float64)
    detach = getattr(tensor, "detach", None)
    if detach is not None:
        t = detach()
        if hasattr(t, "float") and hasattr(t, "cpu"):
            t = t.float().cpu()
        if hasattr(t, "numpy"):
            return np.asarray(t.numpy(), dtype=np.float64)
    return np.asarray(tensor, dtype=np.float64)


def _is_torch(tensor):
    """A real PyTorch tensor. MindNLP puts its ``mindtorch`` under the name ``torch`` in ``sys.modules``; its
    tensors (MindSpore tensors) lack ``torch._foreach_*`` and take the numpy path."""
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(tensor, getattr(torch, "Tensor", ())):
        return False
    return not any((c.__module__ or "").split(".")[0] in ("mindtorch", "mindspore") for c in type(tensor).__mro__)


def ops_for(tensors):
    """:class:`TorchOps` when the tensors are PyTorch tensors, else :class:`NumpyOps`."""
    sample = next((t for t in tensors if t is not None), None)
    return TorchOps() if sample is not None and _is_torch(sample) else NumpyOps()


class TorchOps:
    """Fused PyTorch operations: one ``_foreach_norm`` per call, results stay on the device."""

    name = "torch"

    def __init__(self):
        import torch

        self.torch = torch

    def norms(self, tensors):
        """L2 norm of each tensor (a missing one, ``None``, counts as 0) as one float32 tensor."""
        torch = self.torch
        present = [i for i, t in enumerate(tensors) if t is not None]
        with torch.no_grad():
            if not present:
                return torch.zeros(len(tensors), dtype=torch.float32)
            found = torch._foreach_norm([tensors[i].detach() for i in present])
            device = found[0].device
            found = torch.stack([n.to(device=device, dtype=torch.float32) for n in found])
            if len(present) == len(tensors):
                return found
            out = torch.zeros(len(tensors), dtype=torch.float32, device=device)
            out[torch.tensor(present, device=device)] = found
            return out

    def total(self, norms):
        """The global L2 norm from per-tensor norms."""
        with self.torch.no_grad():
            return self.torch.linalg.vector_norm(norms)

    def copy(self, tensors):
        """Float32 copies (the weights before an update)."""
        with self.torch.no_grad():
            return [t.detach().float().clone() for t in tensors]

    def change_norms(self, after, before):
        """``||after_i - before_i||`` per tensor."""
        torch = self.torch
        with torch.no_grad():
            diffs = torch._foreach_sub([a.detach().float() for a in after], before)
            return self.norms(diffs)

    def keep(self, value):
        """A per-step value (the loss) kept without reading it."""
        if isinstance(value, self.torch.Tensor):
            return value.detach().reshape(-1)[:1].float()
        return self.torch.tensor([float(value)], dtype=self.torch.float32)

    def stack(self, kept):
        """Kept values (1-element tensors) as one float64 numpy array, read in one transfer."""
        if not kept:
            return np.zeros(0)
        with self.torch.no_grad():
            device = kept[0].device
            return self.torch.cat([k.to(device) for k in kept]).double().cpu().numpy()

    def to_numpy(self, handle):
        if isinstance(handle, np.ndarray):
            return handle.astype(np.float64, copy=False)
        return handle.detach().double().cpu().numpy()


class NumpyOps:
    """Any tensor with a torch-like or MindSpore API, read to numpy one at a time."""

    name = "numpy"

    def norms(self, tensors):
        return np.array([0.0 if t is None else float(np.linalg.norm(as_numpy(t).reshape(-1))) for t in tensors],
                        dtype=np.float64)

    def total(self, norms):
        return np.array(float(np.sqrt(np.sum(np.square(norms)))))

    def copy(self, tensors):
        return [as_numpy(t).copy() for t in tensors]

    def change_norms(self, after, before):
        return np.array([float(np.linalg.norm((as_numpy(a) - b).reshape(-1))) for a, b in zip(after, before)])

    def keep(self, value):
        return float(as_numpy(value).reshape(-1)[0])

    def stack(self, kept):
        return np.asarray(kept, dtype=np.float64)

    def to_numpy(self, handle):
        return np.asarray(handle, dtype=np.float64)
