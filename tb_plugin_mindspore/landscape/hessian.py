"""Hessian spectrum estimates from Hessian-vector products, and the edge-of-stability thresholds (numpy only).

* Top eigenvalue ("sharpness"): the Lanczos method with full reorthogonalization (Golub and Van Loan, "Matrix
  Computations", Sec. 10.1); after k products the largest Ritz value of the k x k tridiagonal matrix converges to the
  largest eigenvalue much faster than k power iterations (PyHessian, Yao et al. 2020, uses power iteration).
* Trace: Hutchinson's estimator ``E[z^T H z] = tr(H)`` with Rademacher probes ``z`` (Hutchinson 1990; Avron and
  Toledo 2011 for its variance).
* Edge of stability: full-batch gradient descent with step size ``lr`` is stable on a quadratic only while the
  sharpness is below ``2 / lr``, and in practice sharpness rises to that value and hovers there (Cohen, Kaur, Li,
  Kolter, Talwalkar 2021, "Gradient Descent on Neural Networks Typically Occurs at the Edge of Stability"); with
  heavy-ball momentum ``beta`` the bound is ``(2 + 2 beta) / lr`` (same paper, Sec. 2). For Adam the
  preconditioned sharpness ``lambda_max(P^-1 H)`` with ``P = (1 - beta1^t) diag(sqrt(v_hat) + eps)`` rises to
  ``(2 + 2 beta1) / ((1 - beta1) lr)``, 38 / lr for beta1 = 0.9 (Cohen et al. 2022, "Adaptive Gradient Methods at
  the Edge of Stability", Sec. 3).

A Hessian-vector product is any function ``matvec(v) -> H v`` on flat float64 vectors.
"""

import numpy as np

__all__ = ["lanczos_top", "hutchinson_trace", "stability_threshold", "OPTIMIZER_KINDS"]

OPTIMIZER_KINDS = ("sgd", "momentum", "adam")


def _unit(v):
    n = float(np.linalg.norm(v))
    if not np.isfinite(n) or n == 0.0:
        raise ValueError("the start vector is zero or not finite")
    return v / n


def lanczos_top(matvec, dim, iterations=20, v0=None, seed=0, tol=1e-10):
    """Largest eigenvalue of the symmetric operator ``matvec`` after at most ``iterations`` products.

    ``v0``: the start vector (e.g. the previous top eigenvector: a warm start converges in fewer products); random
    Gaussian otherwise. Returns ``{"eigenvalue", "vector" (unit, flat), "ritz_values" (ascending), "matvecs",
    "residual"}``; ``residual`` bounds ``||H y - theta y||`` for the returned Ritz pair (Golub and Van Loan 10.1.4).
    """
    if isinstance(iterations, bool) or not isinstance(iterations, (int, np.integer)) or iterations < 1:
        raise ValueError("iterations must be an int >= 1, got %r" % (iterations,))
    rs = np.random.RandomState(seed)
    v = _unit(np.asarray(v0, dtype=np.float64).reshape(-1) if v0 is not None else rs.standard_normal(dim))
    basis, alphas, betas = [v], [], []
    n = min(int(iterations), int(dim))
    last_beta = 0.0
    for j in range(n):
        w = np.asarray(matvec(basis[j]), dtype=np.float64).reshape(-1)
        alpha = float(w @ basis[j])
        alphas.append(alpha)
        stacked = np.stack(basis)
        for _ in range(2):   # full reorthogonalization, twice ("twice is enough", Parlett)
            w = w - stacked.T @ (stacked @ w)
        last_beta = float(np.linalg.norm(w))
        if j == n - 1 or last_beta <= tol * max(1.0, abs(alpha)):
            break   # out of products, or an invariant subspace (the Ritz values are exact)
        betas.append(last_beta)
        basis.append(w / last_beta)
    k = len(alphas)
    t = np.diag(alphas) + np.diag(betas[:k - 1], 1) + np.diag(betas[:k - 1], -1)
    values, vectors = np.linalg.eigh(t)
    y = vectors[:, -1]
    vector = np.stack(basis[:k]).T @ y
    return {"eigenvalue": float(values[-1]), "vector": _unit(vector), "ritz_values": values.tolist(),
            "matvecs": k, "residual": abs(last_beta * float(y[-1]))}


def hutchinson_trace(matvec, dim, probes=4, seed=0):
    """``tr(H)`` estimated as the mean of ``z^T H z`` over ``probes`` Rademacher vectors; returns
    ``{"trace", "std_error", "samples"}`` (``std_error``: NaN for a single probe)."""
    if isinstance(probes, bool) or not isinstance(probes, (int, np.integer)) or probes < 1:
        raise ValueError("probes must be an int >= 1, got %r" % (probes,))
    rs = np.random.RandomState(seed)
    samples = []
    for _ in range(int(probes)):
        z = rs.randint(0, 2, size=dim).astype(np.float64) * 2.0 - 1.0
        samples.append(float(z @ np.asarray(matvec(z), dtype=np.float64).reshape(-1)))
    err = float(np.std(samples, ddof=1) / np.sqrt(len(samples))) if len(samples) > 1 else float("nan")
    return {"trace": float(np.mean(samples)), "std_error": err, "samples": samples}


def stability_threshold(kind, lr, beta=0.9):
    """The sharpness at which the optimizer ``kind`` turns unstable on a quadratic with step size ``lr``:
    ``2 / lr`` (``"sgd"``), ``(2 + 2 beta) / lr`` (``"momentum"``, heavy ball), ``(2 + 2 beta1) / ((1 - beta1) lr)``
    (``"adam"``, for the preconditioned sharpness; 38 / lr at beta1 = 0.9). NaN when ``lr`` is not positive."""
    if kind not in OPTIMIZER_KINDS:
        raise ValueError("kind must be one of %s, got %r" % (", ".join(OPTIMIZER_KINDS), kind))
    if not (isinstance(lr, (int, float, np.floating)) and np.isfinite(lr) and lr > 0):
        return float("nan")
    if kind == "sgd":
        return 2.0 / lr
    if kind == "momentum":
        return (2.0 + 2.0 * beta) / lr
    return (2.0 + 2.0 * beta) / ((1.0 - beta) * lr)
