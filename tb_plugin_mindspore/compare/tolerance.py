"""How far apart two runs may be before they *part*: relative differences, tolerances from the runs' own float
noise, and the first step each column leaves its tolerance. Pure numpy, vectorised over steps x columns.

* The relative difference of two values is ``|a - b| / max(|a|, |b|, s)`` (``s``: a small scale of the column, so
  values near 0 do not blow it up); NaN against NaN, or the same infinity, is 0; a non-finite value against a
  finite one is infinite.
* The tolerance of a value is ``max(floor, K * noise, K * recent)``:

  - ``floor``: what the numbers can resolve. They are float32 (TensorBoard's ``simple_value``, our per-layer
    vectors), and a gradient in a ReLU network moves by a whole element's share when rounding flips a unit across
    0: :data:`FLOORS` (1e-4 for the loss and weight norms, 1e-3 for the global gradient norm, 3e-3 for a layer's
    gradient norm and update ratio; measured, MindSpore against PyTorch on the test models: loss <= 3e-6, a
    ReLU flip 1e-3 in one small layer's gradient); an update ratio is a difference of nearly equal weights, so its
    floor grows as the ratio shrinks (one float32 ulp of the weights over the ratio); a loss logged rounded to a
    few decimals (Hugging Face's: 4) gets half its last digit.
  - ``noise``: the runs' own float noise. With a noise pair (the reference trained twice: another thread count,
    device or nondeterministic kernel), the running maximum of their relative difference at each step. Without,
    the difference at the quantity's first common step, where two ports that agree differ by rounding only (the
    median over its columns, so a few layers that differ already do not raise the others' tolerance; at most
    :data:`NOISE_MAX`: more at the first step is a difference, not noise). Reduced-precision runs (bfloat16,
    float16) need a noise pair.
  - ``recent`` (without a noise pair): the largest difference of the same column over the previous
    :data:`WINDOW` common steps. Float noise grows as training goes on (a rounding flip at a ReLU kink, Adam's
    normalisation of tiny gradients), but smoothly; a porting difference shows as a jump at the step it first
    acts. The learning rate, computed the same way at every step, has no such allowance.
  - ``K`` = :data:`NOISE_FACTOR`.

* A column *parts* at the first step whose difference is above its tolerance and, against that same tolerance,
  stays above at 2 of the next 3 common steps (fewer near the end): a single rounding flip does not count.
* Drift: differences that grew smoothly past :data:`DRIFT_LEVEL` (1 %, the migration guide's manual rule) without a
  parting are reported as drift, not as a parting.
"""

import warnings

import numpy as np

__all__ = ["FLOORS", "NOISE_FACTOR", "NOISE_MAX", "WINDOW", "DRIFT_LEVEL", "relative_difference", "quantum",
           "floors", "noise_from_first_steps", "noise_from_pair", "recent_max", "tolerances", "first_parting",
           "first_drift"]

FLOAT32_EPS = float(np.finfo(np.float32).eps)
FLOORS = {"loss": 1e-4, "learning_rate": 1e-5, "grad_norm": 1e-3, "layer_grad_norm": 3e-3, "update_ratio": 3e-3,
          "weight_norm": 1e-4, "layer_weight_norm": 1e-4, "eval_loss": 1e-4}
NOISE_FACTOR = 10.0
NOISE_MAX = 1e-3
WINDOW = 10
DRIFT_LEVEL = 1e-2
EXACT = ("learning_rate",)      # computed alike at every step: no allowance for growing noise
PERSIST = (2, 3)          # parted: above tolerance at a step and at 2 of the 3 common steps after it
# Quantities that trainers log rounded (Hugging Face: the loss to 4 decimals); others are never rounded, and round
# values of theirs (a learning rate of 3e-4) are no sign of rounding.
ROUNDED = ("loss", "eval_loss")


def relative_difference(a, b):
    """``|a - b| / max(|a|, |b|, s)`` elementwise for ``(steps, columns)`` matrices; ``s`` is 1e-6 of the column's
    median magnitude (values near zero)."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        mag = np.maximum(np.abs(a), np.abs(b))
        finite_mag = np.where(np.isfinite(mag), mag, np.nan)
        with warnings.catch_warnings():     # a column of NaN only has no scale (handled below)
            warnings.simplefilter("ignore", RuntimeWarning)
            scale = np.nanmedian(finite_mag, axis=0) if finite_mag.size else np.zeros(a.shape[1:])
        scale = np.where(np.isfinite(scale) & (scale > 0), scale * 1e-6, 1e-30)
        d = np.abs(a - b) / np.maximum(mag, scale)
        fa, fb = np.isfinite(a), np.isfinite(b)
        both_bad = ~fa & ~fb
        same_bad = both_bad & ((np.isnan(a) & np.isnan(b)) | (a == b))
        d = np.where(fa & fb, d, np.where(same_bad, 0.0, np.inf))
    return d


def quantum(values):
    """The rounding step of values logged with few decimals (``round(x, 4)``: 1e-4), or 0 for full float."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    v = v[np.isfinite(v) & (v != 0)]
    if np.unique(v).size < 8:
        return 0.0
    v = v[:: max(1, v.size // 512)]         # a sample is enough to tell
    for digits in range(1, 7):
        scaled = v * 10.0 ** digits
        allowed = np.maximum(1e-3, np.abs(scaled) * 4 * FLOAT32_EPS)   # the values went through float32
        if np.all(np.abs(scaled - np.round(scaled)) <= allowed):
            return 10.0 ** -digits
    return 0.0


def floors(quantity, run, reference):
    """The floor of each value: :data:`FLOORS`, the update ratio's precision, a rounded log's half digit."""
    base = np.full(run.shape, FLOORS.get(quantity, 1e-4))
    mag = np.maximum(np.abs(run), np.abs(reference))
    with np.errstate(divide="ignore", invalid="ignore"):
        if quantity == "update_ratio":
            base = np.maximum(base, np.where(mag > 0, FLOAT32_EPS / mag, 0.0))
        for col in range(run.shape[1] if quantity in ROUNDED else 0):
            q = max(quantum(run[:, col]), quantum(reference[:, col]))
            if q:
                base[:, col] = np.maximum(base[:, col], np.where(mag[:, col] > 0, 0.5 * q / mag[:, col], 0.0))
    return np.nan_to_num(base, nan=FLOORS.get(quantity, 1e-4), posinf=1.0)


def noise_from_first_steps(diff):
    """The float noise of a quantity from its first common step: the median over columns of their differences
    there, 0 when above :data:`NOISE_MAX` (returned per column, all equal)."""
    if not diff.shape[0]:
        return np.zeros(diff.shape[1:])
    head = diff[0]
    head = head[np.isfinite(head)]
    eps = float(np.median(head)) if head.size else 0.0
    return np.full(diff.shape[1:], eps if eps <= NOISE_MAX else 0.0)


def noise_from_pair(steps, noise_steps, noise_diff):
    """The noise pair's envelope at ``steps``: the running maximum of its relative difference (``noise_diff``,
    ``(len(noise_steps), columns)``), taken at the last noise step at or before each step (its first before any)."""
    steps = np.asarray(steps, dtype=np.int64)
    noise_steps = np.asarray(noise_steps, dtype=np.int64)
    if not noise_steps.size:
        return None
    env = np.maximum.accumulate(np.nan_to_num(noise_diff, nan=0.0, posinf=1.0), axis=0)
    idx = np.clip(np.searchsorted(noise_steps, steps, side="right") - 1, 0, noise_steps.size - 1)
    return env[idx]


def _shift(a, k):
    """``a`` moved down by ``k`` rows (zeros above)."""
    if k <= 0:
        return a
    out = np.zeros_like(a)
    if k < a.shape[0]:
        out[k:] = a[:a.shape[0] - k]
    return out


def recent_max(diff, window=WINDOW):
    """Per row, the largest finite value of the ``window`` rows before it (0 for the first row): maxima over spans
    that double in length, combined to cover exactly ``window`` rows (a few passes, not one per row)."""
    d = np.where(np.isfinite(diff), diff, 0.0)
    acc = _shift(d, 1)          # span 1: the row before
    covered = np.zeros_like(d)
    span, offset, remaining = 1, 0, int(window)
    while remaining > 0:
        if remaining & 1:
            covered = np.maximum(covered, _shift(acc, offset))
            offset += span
        remaining >>= 1
        if remaining:
            acc = np.maximum(acc, _shift(acc, span))
            span *= 2
    return covered


def tolerances(quantity, run, reference, diff, noise=None):
    """``(tolerance matrix, noise used)``: ``max(floor, K * noise, K * recent)`` (see the module doc); ``noise``: a
    matrix from :func:`noise_from_pair`, or None for the runs' own (first step and recent steps)."""
    floor = floors(quantity, run, reference)
    if noise is not None:
        return np.maximum(floor, NOISE_FACTOR * noise), noise
    noise = np.broadcast_to(noise_from_first_steps(diff), diff.shape)
    tol = np.maximum(floor, NOISE_FACTOR * noise)
    if quantity not in EXACT:
        tol = np.maximum(tol, NOISE_FACTOR * recent_max(diff))
    return tol, noise


def first_parting(diff, tol):
    """Per column, the row where it parts (above its tolerance there and, against that tolerance, at 2 of the next
    3 rows; all of them when fewer are left), or -1."""
    above = diff > tol
    n = above.shape[0]
    if n == 0:
        return np.full(above.shape[1:], -1)
    need, window = PERSIST
    after = np.zeros(above.shape, dtype=np.int64)
    for k in range(1, window + 1):
        if k < n:
            after[:n - k] += diff[k:] > tol[:n - k]
    rows = np.arange(n)
    required = np.minimum(need, n - 1 - rows)[:, None]
    parted = above & (after >= required)
    first = np.argmax(parted, axis=0)
    return np.where(parted.any(axis=0), first, -1)


def first_drift(diff, level=DRIFT_LEVEL):
    """Per column, the first row whose difference passes ``level`` (-1: never)."""
    over = diff > level
    first = np.argmax(over, axis=0)
    return np.where(over.any(axis=0), first, -1)
