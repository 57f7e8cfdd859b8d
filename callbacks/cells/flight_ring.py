"""Ring buffers on the device: each step's monitored values as one row, read on the host now and then.

Non-trainable Parameters on the training cell (``MonitoredTrainCell``) or on ``LoopMonitor``'s compiled
statistics: a ring (capacity x columns, float32, NaN until written) and its count (int32, rows written so far).
Each step :func:`ring_write` (one ring) or :func:`rings_write` (two rings sharing one count) puts that step's
values into row ``count % capacity`` inside the compiled step: a small scatter, nothing copied to the host.
:func:`read_ring` copies a ring out: at a core point (the steps' loss, gradient norm and learning rates, folded
into the interval on the host) or when an anomaly fires (the flight recorder's per-layer norms).
"""

import numpy as np

from mindspore import ops, Parameter, Tensor
import mindspore as ms

__all__ = ["ring_parameters", "ring_write", "rings_write", "read_ring", "read_count", "newest_rows"]


def ring_parameters(capacity, layers, prefix="tbms_flight"):
    """``(ring, count)`` Parameters for ``capacity`` steps of ``layers`` values (NaN until written); the count is a
    0-d int32, so that a row is written with no reshape (a kernel each on a CPU)."""
    ring = Parameter(Tensor(np.full((int(capacity), max(int(layers), 1)), np.nan, np.float32)), name=prefix,
                     requires_grad=False)
    count = Parameter(Tensor(np.array(0, np.int32)), name=prefix + "_count", requires_grad=False)
    return ring, count


def ring_write(ring, count, values):
    """Writes ``values`` (float32[layers]) into the next row of ``ring`` and counts it; returns a token. In the
    graph."""
    return rings_write(count, ring, values)


def rings_write(count, ring, values, other=None, other_values=None):
    """Writes ``values`` (float32, one value per column) into the next row of ``ring`` and, when given,
    ``other_values`` into the next row of ``other`` (the same count; one slot for both when their capacities are
    equal), then counts the step once; returns a token. In the graph."""
    slot = ops.floor_mod(count, ring.shape[0])
    token = ops.scatter_update(ring, slot, ops.cast(values, ms.float32))
    if other is not None:
        if other.shape[0] != ring.shape[0]:
            slot = ops.floor_mod(count, other.shape[0])
        token = ops.depend(token, ops.scatter_update(other, slot, ops.cast(other_values, ms.float32)))
    return ops.depend(ops.assign_add(count, ops.ones_like(count)), token)


def read_count(count):
    """The rows written so far, copied to the host."""
    return int(count.asnumpy().reshape(-1)[0])


def read_ring(ring, count):
    """``(rows float32[capacity, layers], count int)`` copied to the host."""
    return ring.asnumpy().copy(), int(count.asnumpy().reshape(-1)[0])


def newest_rows(rows, count, n):
    """The newest ``n`` rows of a ring copied out by :func:`read_ring` (``rows``, ``count``), oldest first: at most
    the ring's capacity and the rows written (a ring that wrapped keeps only its capacity)."""
    take = max(0, min(int(n), rows.shape[0], int(count)))
    return rows[np.arange(count - take, count) % rows.shape[0]]
