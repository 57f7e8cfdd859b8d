"""Directions of a 2-D loss-landscape plane: random with filter normalization, or the PCA of a trajectory.

References
----------
* Li, Xu, Taylor, Studer, Goldstein, "Visualizing the Loss Landscape of Neural Nets", NeurIPS 2018
  (arXiv:1712.09913).
  - Sec. 4, filter normalization: a random Gaussian direction ``d`` with the shape of the weights ``w`` is rescaled
    filter by filter, ``d_ij <- d_ij / ||d_ij|| * ||w_ij||`` (``d_ij``: the j-th filter, i.e. output unit, of layer
    i). For fully connected layers a filter is one output neuron: a row of a MindSpore ``Dense`` weight
    ``(out, in)``, a row of an ``Embedding`` table, the first axis of a ``Conv2d`` weight ``(out, in, kh, kw)``.
  - Biases and BatchNorm parameters (every parameter with at most one dimension) are either left unperturbed
    (direction 0, ``bias_bn="ignore"``, the paper's default) or "included" as in the authors' reference code
    (``net_plotter.normalize_directions_for_weights``: the direction of a 1-D parameter is the parameter itself).
  - Sec. 7, trajectories: the rows ``theta_i - theta_n`` (snapshots minus the final parameters) are decomposed with
    PCA (the reference code uses scikit-learn's ``PCA``, which centres the rows); the two leading components span
    the plane, the explained variance says how much of the path lies in it, and each snapshot is projected onto
    the plane.
* MindSpore's own ``SummaryLandscape`` (MindInsight) normalizes per tensor instead (``norm="layer"`` here).

Everything is numpy; parameters are lists of arrays (one per parameter, in a fixed order) or flat vectors described
by a :class:`Layout`.
"""

import numpy as np

BIAS_BN_OPTIONS = ("ignore", "include")
NORM_OPTIONS = ("filter", "layer", "none")
_EPS = 1e-10   # as in the reference code: d * ||w|| / (||d|| + 1e-10)


def _check(norm, bias_bn):
    if norm not in NORM_OPTIONS:
        raise ValueError("norm must be one of %s, got %r" % (", ".join(NORM_OPTIONS), norm))
    if bias_bn not in BIAS_BN_OPTIONS:
        raise ValueError("bias_bn must be one of %s, got %r" % (", ".join(BIAS_BN_OPTIONS), bias_bn))


class Layout:
    """Shapes of a list of parameters and their offsets in one flat vector."""

    def __init__(self, shapes):
        self.shapes = [tuple(int(n) for n in s) for s in shapes]
        self.sizes = [int(np.prod(s, dtype=np.int64)) for s in self.shapes]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes, dtype=np.int64)]).astype(np.int64)
        self.size = int(self.offsets[-1])

    @classmethod
    def of(cls, arrays):
        return cls([np.shape(a) for a in arrays])

    def flatten(self, arrays, dtype=np.float32):
        out = np.empty(self.size, dtype=dtype)
        for a, lo, hi in zip(arrays, self.offsets[:-1], self.offsets[1:]):
            out[lo:hi] = np.asarray(a).reshape(-1)
        return out

    def unflatten(self, vector, dtype=None):
        vector = np.asarray(vector)
        if vector.shape != (self.size,):
            raise ValueError("vector of length %s for a layout of %d values" % (vector.shape, self.size))
        return [vector[lo:hi].reshape(s).astype(dtype or vector.dtype, copy=dtype is not None)
                for s, lo, hi in zip(self.shapes, self.offsets[:-1], self.offsets[1:])]

    def low_dim_mask(self):
        """Flat boolean mask of the values that belong to parameters with at most one dimension (biases, BN)."""
        mask = np.zeros(self.size, dtype=bool)
        for s, lo, hi in zip(self.shapes, self.offsets[:-1], self.offsets[1:]):
            if len(s) <= 1:
                mask[lo:hi] = True
        return mask


def normalize_direction(d, w, norm="filter", bias_bn="ignore"):
    """The direction ``d`` for weight ``w`` rescaled as Li et al. 2018, Sec. 4 (float64 result, shape of ``w``).

    * ``norm="filter"``: each filter ``d[j]`` (slice along the first axis) gets the norm of ``w[j]``;
    * ``norm="layer"``: the whole tensor gets the norm of ``w`` (MindSpore SummaryLandscape's choice);
    * ``norm="none"``: ``d`` unchanged.
    Parameters with at most one dimension: zeros (``bias_bn="ignore"``) or ``w`` itself (``"include"``).
    """
    _check(norm, bias_bn)
    w = np.asarray(w, dtype=np.float64)
    d = np.array(d, dtype=np.float64).reshape(w.shape)
    if w.ndim <= 1:
        return np.zeros_like(w) if bias_bn == "ignore" else w.copy()
    if norm == "filter":
        fd = d.reshape(d.shape[0], -1)
        fw = w.reshape(w.shape[0], -1)
        scale = np.linalg.norm(fw, axis=1) / (np.linalg.norm(fd, axis=1) + _EPS)
        return (fd * scale[:, None]).reshape(w.shape)
    if norm == "layer":
        return d * (np.linalg.norm(w) / (np.linalg.norm(d) + _EPS))
    return d


def normalize_directions(directions, weights, norm="filter", bias_bn="ignore", dtype=np.float32):
    """:func:`normalize_direction` for every (direction, weight) pair of two lists."""
    if len(directions) != len(weights):
        raise ValueError("%d directions for %d weights" % (len(directions), len(weights)))
    return [normalize_direction(d, w, norm, bias_bn).astype(dtype) for d, w in zip(directions, weights)]


def random_directions(weights, seed=0, norm="filter", bias_bn="ignore", count=2, dtype=np.float32):
    """``count`` random Gaussian directions, each a list of arrays shaped like ``weights``, normalized.

    The same ``seed`` and shapes always give the same raw draws (so landscapes of one run at different epochs use
    the same directions, rescaled to the weights of that moment).
    """
    _check(norm, bias_bn)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(count):
        raw = [rng.standard_normal(np.shape(w)) for w in weights]
        out.append(normalize_directions(raw, weights, norm, bias_bn, dtype))
    return out


def _gram_centred(snapshots, chunk):
    """``(G, mean)``: the n x n Gram matrix of the column-centred rows, in float64, column block by block."""
    n, size = snapshots.shape
    gram = np.zeros((n, n), dtype=np.float64)
    mean = np.empty(size, dtype=np.float64)
    for lo in range(0, size, chunk):
        block = np.asarray(snapshots[:, lo:lo + chunk], dtype=np.float64)
        m = block.mean(axis=0)
        mean[lo:lo + chunk] = m
        block = block - m
        gram += block @ block.T
    return gram, mean


def pca_directions(snapshots, final, n_components=2, ignore_mask=None, chunk=1 << 18):
    """PCA of a training trajectory (Li et al. 2018, Sec. 7).

    Args:
      snapshots: ``(n, D)`` array (or ``np.memmap``) of flat parameter vectors, in training order (n >= 3). They
        may or may not include ``final``.
      final: ``(D,)`` the parameters the landscape is centred on (usually the last ones).
      ignore_mask: optional ``(D,)`` booleans; those entries of the components are set to 0 (the reference code's
        ``ignore_biasbn``, see :meth:`Layout.low_dim_mask`) before the snapshots are projected.

    Returns a dict: ``components`` ``(n_components, D)`` float32 unit vectors; ``explained_variance`` (variance of
    the rows ``theta_i - final`` along each component, centred as scikit-learn's PCA, divided by n - 1);
    ``explained_variance_ratio`` (share of the total variance); ``coords`` ``(n, n_components)`` the snapshots'
    coordinates in the plane and ``residual`` ``(n,)`` how far each is from it (see :func:`project`). Component
    signs are chosen so that the first snapshot has a negative coordinate on each axis (the path runs towards the
    centre from below-left).

    Memory: the snapshots are read in column blocks of ``chunk`` values, so beyond them only O(n^2 + n * chunk)
    is allocated (plus the components).
    """
    snapshots = np.asarray(snapshots) if not isinstance(snapshots, np.memmap) else snapshots
    final = np.asarray(final, dtype=np.float64).reshape(-1)
    if snapshots.ndim != 2 or snapshots.shape[1] != final.size:
        raise ValueError("snapshots must be (n, %d), got %s" % (final.size, snapshots.shape))
    n = snapshots.shape[0]
    if n < 3:
        raise ValueError("a PCA landscape needs at least 3 parameter snapshots of the trajectory, got %d" % n)
    # Centring the rows theta_i - final column-wise is the same as centring the snapshots: final drops out.
    gram, _ = _gram_centred(snapshots, chunk)
    evals, evecs = np.linalg.eigh(gram)
    order = np.argsort(evals)[::-1]
    evals, evecs = np.clip(evals[order], 0.0, None), evecs[:, order]
    k = int(n_components)
    if np.count_nonzero(evals > evals[0] * 1e-12) < k:
        raise ValueError("the trajectory spans fewer than %d dimensions (the snapshots are (nearly) identical or "
                         "collinear); record more varied snapshots" % k)
    sigma = np.sqrt(evals[:k])
    components = np.zeros((k, final.size), dtype=np.float64)
    for lo in range(0, final.size, chunk):
        block = np.asarray(snapshots[:, lo:lo + chunk], dtype=np.float64)
        block = block - block.mean(axis=0)
        components[:, lo:lo + chunk] = (evecs[:, :k].T @ block) / sigma[:, None]
    components /= np.linalg.norm(components, axis=1, keepdims=True)
    if ignore_mask is not None:
        components[:, np.asarray(ignore_mask, dtype=bool)] = 0.0
    total = evals.sum()
    coords, residual = project(snapshots, final, components, chunk=chunk)
    for c in range(k):
        if coords[0, c] > 0:
            components[c] = -components[c]
            coords[:, c] = -coords[:, c]
    return {
        "components": components.astype(np.float32),
        "explained_variance": (evals[:k] / (n - 1)).tolist(),
        "explained_variance_ratio": (evals[:k] / total if total > 0 else np.zeros(k)).tolist(),
        "coords": coords,
        "residual": residual,
    }


def project(points, final, directions, chunk=1 << 18):
    """Coordinates of ``points - final`` in the plane of ``directions`` (least squares), and relative residuals.

    ``points`` ``(n, D)``, ``final`` ``(D,)``, ``directions`` ``(k, D)``. Returns ``(coords (n, k), residual (n,))``
    where ``residual[i] = ||(p_i - final) - coords_i @ directions|| / ||p_i - final||`` (0 for a point in the plane,
    NaN for ``p_i == final``). Least squares (not plain dot products) because directions need not be orthonormal
    (e.g. after the bias / BN entries are zeroed).
    """
    points = np.atleast_2d(points)
    final = np.asarray(final, dtype=np.float64).reshape(-1)
    directions = np.atleast_2d(np.asarray(directions))
    k, size = directions.shape
    n = points.shape[0]
    ata = np.zeros((k, k))
    atb = np.zeros((k, n))
    sq = np.zeros(n)
    for lo in range(0, size, chunk):
        a = np.asarray(directions[:, lo:lo + chunk], dtype=np.float64)
        b = np.asarray(points[:, lo:lo + chunk], dtype=np.float64) - final[lo:lo + chunk]
        ata += a @ a.T
        atb += a @ b.T
        sq += np.einsum("ij,ij->i", b, b)
    coords = np.linalg.lstsq(ata, atb, rcond=None)[0].T   # lstsq: a zero direction must not raise
    # ||b - A c||^2 = ||b||^2 - 2 c.(A^T b) + c^T (A^T A) c
    res2 = sq - 2 * np.einsum("ij,ji->i", coords, atb) + np.einsum("ij,jk,ik->i", coords, ata, coords)
    with np.errstate(invalid="ignore", divide="ignore"):
        residual = np.sqrt(np.clip(res2, 0.0, None)) / np.sqrt(sq)
    residual[sq == 0] = np.nan
    return coords, residual
