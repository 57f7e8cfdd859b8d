"""Where an anomaly started: the first step and layer of a flight-recorder window (pure numpy, no MindSpore).

The flight recorder keeps, for the last steps, the gradient norm of every layer. When an anomaly fires, these
helpers order the kept rows by step (:func:`ring_rows`) and find its origin (:func:`find_origin`):

* a layer is *bad* at a step when its gradient norm is not finite (some element NaN / Inf), or when it *spiked*:
  above ``spike_factor`` times the median of its own finite norms over the earlier steps of the window (at least
  ``min_history`` of them; a median-relative threshold as in robust outlier tests, Hampel 1974);
* the first bad step is the earliest step with a bad layer; non-finite layers there win over spiking ones;
* the origin among the bad layers of that step follows how a gradient anomaly spreads. Backpropagation carries an
  anomaly that enters at layer k (a NaN or a huge factor in its backward pass) to every layer *before* k, so the
  bad layers are k and the ones before it, and the origin is the deepest bad layer. An anomaly that enters in the
  forward pass at layer k (an activation that overflows) reaches the weight gradients of k and every layer after
  it: the origin is the shallowest bad layer. A set touching neither end, or both (every layer at once: nothing
  tells where), is named by network order, its first layer.
"""

from collections import namedtuple

import numpy as np

__all__ = ["Origin", "find_origin", "ring_rows", "SPIKE_FACTOR", "MIN_HISTORY"]

SPIKE_FACTOR = 10.0
MIN_HISTORY = 3

# first: index of the first bad row; layers: the origin's name (a list, as in a health event); cause: "nonfinite"
# or "spike"; bad: names of every bad layer at that row (network order); ratio: norm / own median of the origin
# (None for a non-finite one).
Origin = namedtuple("Origin", ["first", "layers", "cause", "bad", "ratio"])


def ring_rows(count, capacity, since=0):
    """Row indices of a ring buffer in step order, oldest first, and how many steps back each row lies.

    ``count``: rows written so far (the n-th write went to row ``(n - 1) % capacity``); ``since``: writes made
    before the current run (left out). Returns ``(rows, back)``: int arrays, ``back`` 0 for the newest row.
    """
    count, capacity, since = int(count), int(capacity), int(since)
    if capacity < 1:
        raise ValueError("capacity must be >= 1, got %r" % (capacity,))
    first = max(count - capacity, since, 0)
    written = np.arange(first, count, dtype=np.int64)      # 0-based write numbers, oldest first
    return written % capacity, (count - 1) - written


def _check_factor(spike_factor, min_history):
    if isinstance(spike_factor, bool) or not isinstance(spike_factor, (int, float)) or not spike_factor > 1:
        raise ValueError("spike_factor must be a number > 1, got %r" % (spike_factor,))
    if isinstance(min_history, bool) or not isinstance(min_history, int) or min_history < 1:
        raise ValueError("min_history must be an int >= 1, got %r" % (min_history,))


def bad_layers(norms, spike_factor=SPIKE_FACTOR, min_history=MIN_HISTORY, overflow_ok=False, start=0):
    """``(nonfinite, spike, ratio)``: bool / bool / float arrays shaped like ``norms`` (rows = steps, oldest first;
    columns = layers). ``ratio`` is each norm over the median of the same layer's finite norms in the rows before
    (NaN where fewer than ``min_history`` of them). ``overflow_ok``: non-finite norms are a loss scale's overflow
    steps (skipped, expected), never bad. Ratios are computed from row ``start`` on (NaN before)."""
    _check_factor(spike_factor, min_history)
    norms = np.asarray(norms, dtype=np.float64)
    if norms.ndim != 2:
        raise ValueError("norms must be a 2-d array (steps x layers), got shape %s" % (norms.shape,))
    is_finite = np.isfinite(norms)
    finite = np.where(is_finite, norms, np.nan)
    nonfinite = np.zeros_like(is_finite) if overflow_ok else ~is_finite
    ratio = np.full(norms.shape, np.nan)
    for i in range(max(min_history, int(start)), norms.shape[0]):
        history = finite[:i]
        enough = np.sum(~np.isnan(history), axis=0) >= min_history
        if not enough.any():
            continue
        with np.errstate(all="ignore"):
            median = np.nanmedian(history[:, enough], axis=0)
            ratio[i, enough] = np.where(median > 0, norms[i, enough] / median, np.nan)
    with np.errstate(invalid="ignore"):
        spike = is_finite & (ratio > spike_factor)
    return nonfinite, spike, ratio


def find_origin(norms, names, start=0, spike_factor=SPIKE_FACTOR, min_history=MIN_HISTORY, overflow_ok=False):
    """The :class:`Origin` of the first anomaly in ``norms`` (steps x layers, oldest first) at row ``start`` or
    later (the rows before only serve as history), or None if no layer is bad there. ``names``: the layer names,
    in network order (the columns). ``overflow_ok``: see :func:`bad_layers`."""
    norms = np.asarray(norms, dtype=np.float64)
    names = [str(n) for n in names]
    if norms.ndim != 2 or norms.shape[1] != len(names):
        raise ValueError("norms must be steps x layers with one column per name (%d names), got shape %s"
                         % (len(names), norms.shape))
    nonfinite, spike, ratio = bad_layers(norms, spike_factor, min_history, overflow_ok, start)
    any_bad = (nonfinite | spike).any(axis=1)
    any_bad[:max(int(start), 0)] = False
    if not any_bad.any():
        return None
    first = int(np.argmax(any_bad))
    cause = "nonfinite" if nonfinite[first].any() else "spike"
    bad = np.flatnonzero(nonfinite[first] if cause == "nonfinite" else spike[first])
    n = len(names)
    touches_first, touches_last = bad[0] == 0, bad[-1] == n - 1
    if touches_first and not touches_last:
        origin = int(bad[-1])          # entered in the backward pass: spread towards the input
    else:
        origin = int(bad[0])           # forward pass, a single layer, or every layer at once: network order
    value = ratio[first, origin]
    return Origin(first, [names[origin]], cause, [names[i] for i in bad],
                  None if cause == "nonfinite" or not np.isfinite(value) else float(value))
