"""The flight recorder's ring buffer on the device: the last steps of per-layer gradient norms.

Two non-trainable Parameters on the training cell (``MonitoredTrainCell``) or on ``LoopMonitor``'s compiled
statistics: ``tbms_flight`` (capacity x layers, float32) and ``tbms_flight_count`` (int32, rows written so far).
Each step :func:`ring_write` puts that step's per-layer norms (already computed for the global norm, see
``train_cell.grad_norms``) into row ``count % capacity`` inside the compiled step: one small scatter, nothing
copied to the host. :func:`read_ring` copies it out when an anomaly fires.
"""

import numpy as np

from mindspore import ops, Parameter, Tensor
import mindspore as ms

__all__ = ["ring_parameters", "ring_write", "read_ring"]


def ring_parameters(capacity, layers, prefix="tbms_flight"):
    """``(ring, count)`` Parameters for ``capacity`` steps of ``layers`` values (NaN until written)."""
    ring = Parameter(Tensor(np.full((int(capacity), max(int(layers), 1)), np.nan, np.float32)), name=prefix,
                     requires_grad=False)
    count = Parameter(Tensor(np.zeros((1,), np.int32)), name=prefix + "_count", requires_grad=False)
    return ring, count


def ring_write(ring, count, values):
    """Writes ``values`` (float32[layers]) into the next row of ``ring`` and counts it; returns a token. In the
    graph."""
    slot = ops.floor_mod(count, ring.shape[0])
    token = ops.scatter_update(ring, slot, ops.cast(values, ms.float32).reshape((1, -1)))
    return ops.depend(ops.assign_add(count, ops.ones_like(count)), token)


def read_ring(ring, count):
    """``(rows float32[capacity, layers], count int)`` copied to the host."""
    return ring.asnumpy().copy(), int(count.asnumpy().reshape(-1)[0])
