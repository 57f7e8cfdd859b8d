"""The landscape record: one dict per landscape, written as JSON by ``summary.landscape`` (plugin kind ``landscape``).

It has the keys of MindSpore's ``LossLandscape`` message as ``sources.ms_files.landscape_dict`` decodes it, so a
landscape computed by ``tb_mindspore_callbacks`` and one written by MindSpore's ``SummaryLandscape`` are read by
the same code::

    {"landscape": {"x": [nx], "y": [ny], "z": [[nx] * ny]},    # z[j][i]: loss at (x[i], y[j]); null: not computed
     "loss_path": {"intervals": [steps], "x": [...], "y": [...], "z": [...]} or None,
     "convergence_point": {"x": [cx], "y": [cy], "z": [loss]} or None,
     "metadata": {"decomposition": "Random" | "PCA" | "Interpolation", "unit": "step" | "epoch",
                  "step_per_epoch": int,
                  # ours only (MindSpore's records have just the three keys above):
                  "source": "tb_mindspore_callbacks", "format": 1, "method": "random" | "pca" | "interpolation",
                  "dims": 2 | 1, "grid": [nx, ny], "extent": [xmin, xmax, ymin, ymax], "num_samples": int,
                  "complete": bool, "rows_done": int, "points_done": int, "seconds_per_point": float, ...}}

A 1-D landscape (linear interpolation) has ``y == [0]`` and one row of ``z``. :func:`normalize_record` turns a
record of either source into the plain arrays the ``landscape`` route sends.
"""

import numpy as np

SOURCE = "tb_mindspore_callbacks"
FORMAT = 1
DECOMPOSITION = {"random": "Random", "pca": "PCA", "interpolation": "Interpolation", "profile": "Profile"}


def _floats(values):
    return [float(v) if v is not None and np.isfinite(v) else None for v in np.asarray(values, np.float64).ravel()]


def landscape_record(x, y, z, method, path=None, center=None, unit="step", step_per_epoch=1, **metadata):
    """Builds the record (plain Python values; non-finite losses become None, i.e. JSON null).

    ``path``: ``{"steps": [...], "x": [...], "y": [...], "z": [...]}`` (the trajectory projected on the plane);
    ``center``: ``(x, y, loss)`` of the point the landscape is centred on. Extra keyword arguments go into
    ``metadata``.
    """
    if method not in DECOMPOSITION:
        raise ValueError("method must be one of %s, got %r" % (", ".join(DECOMPOSITION), method))
    x = np.asarray(x, np.float64).ravel()
    y = np.asarray(y, np.float64).ravel()
    z = np.asarray(z, np.float64).reshape(len(y), len(x))
    meta = {
        "decomposition": DECOMPOSITION[method],
        "unit": unit,
        "step_per_epoch": int(step_per_epoch),
        "source": SOURCE,
        "format": FORMAT,
        "method": method,
        "dims": 1 if len(y) == 1 else 2,
        "grid": [int(len(x)), int(len(y))],
        "extent": [float(x[0]), float(x[-1]), float(y[0]), float(y[-1])],
    }
    meta.update(metadata)
    record = {
        "landscape": {"x": _floats(x), "y": _floats(y), "z": [_floats(row) for row in z]},
        "loss_path": None,
        "convergence_point": None,
        "metadata": meta,
    }
    if path is not None:
        record["loss_path"] = {
            "intervals": [int(s) for s in path["steps"]],
            "x": _floats(path["x"]), "y": _floats(path["y"]), "z": _floats(path["z"]),
        }
    if center is not None:
        cx, cy, cz = center
        record["convergence_point"] = {"x": _floats([cx]), "y": _floats([cy]), "z": _floats([cz])}
    return record


def profile_record(t, rows, labels, loss0, sharpness, slope=None, **metadata):
    """A 1-D "sharpness profile": ``rows[k][i]`` the loss at distance ``t[i]`` (parameter-space L2) from the current
    parameters along direction ``labels[k]`` (first: the top Hessian eigenvector). Written as a landscape record
    with ``method: "profile"``, ``dims: 1``, one row of ``z`` per direction; ``metadata.quadratic`` holds the
    second-order model ``loss0 + slope t + sharpness t^2 / 2`` along the eigenvector."""
    rows = np.asarray(rows, np.float64)
    if rows.ndim != 2 or rows.shape[0] != len(labels) or rows.shape[1] != len(t):
        raise ValueError("profile rows must be (directions, points) = (%d, %d), got %s"
                         % (len(labels), len(t), rows.shape))
    quadratic = {"loss0": float(loss0), "slope": None if slope is None or not np.isfinite(slope) else float(slope),
                 "curvature": float(sharpness)}
    meta = {"dims": 1, "lines": [str(s) for s in labels], "sharpness": float(sharpness), "quadratic": quadratic,
            "x_label": "distance from the current parameters (L2)", "y_label": ""}
    meta.update(metadata)
    return landscape_record(t, np.arange(len(labels), dtype=np.float64), rows, "profile", center=(0.0, 0.0, loss0),
                            **meta)


_none_to_nan = np.vectorize(lambda v: np.nan if v is None else float(v), otypes=[np.float64])


def _array(values, default=()):
    """Nested lists of numbers / None (JSON null) as a float64 array (NaN for None)."""
    if values is None:
        values = default
    a = np.array(values, dtype=object)
    return _none_to_nan(a) if a.size else np.zeros(a.shape, dtype=np.float64)


def _axis(values, along):
    """MindSpore keeps one row / column of the mesh, but accept a whole mesh too."""
    a = _array(values)
    if a.ndim == 2 and a.size:
        a = a[0] if along == "x" else a[:, 0]
    return a.ravel()


def normalize_record(record):
    """A record of either source as plain numpy arrays and fields (raises ValueError when it has no grid)::

        {"source", "method", "dims", "x" (nx,), "y" (ny,), "z" (ny, nx) with NaN where missing,
         "path": {"x", "y", "z", "steps"} or None, "center": {"x", "y", "z"} or None, "unit", "step_per_epoch",
         "complete": bool, "explained_variance_ratio": list or None, "metadata": dict}
    """
    if not isinstance(record, dict):
        raise ValueError("a landscape record must be a JSON object")
    try:
        return _normalized(record)
    except (IndexError, KeyError, AttributeError, OverflowError, TypeError) as e:   # any other shape: the contract
        raise ValueError("the landscape record is malformed (%s: %s)" % (type(e).__name__, e)) from None


def _normalized(record):
    meta = record.get("metadata") or {}
    grid = record.get("landscape") or {}
    x = _axis(grid.get("x"), "x")
    y = _axis(grid.get("y"), "y")
    if x.size == 0:
        raise ValueError("the landscape has no x axis")
    if y.size == 0:
        y = np.array([0.0])
    z = _array(grid.get("z"))
    if z.size != x.size * y.size:
        raise ValueError("the landscape has %d losses for a %d x %d grid" % (z.size, x.size, y.size))
    z = z.reshape(y.size, x.size)
    method = str(meta.get("method") or str(meta.get("decomposition") or "unknown").lower())
    source = str(meta.get("source") or "mindspore")
    dims = int(meta.get("dims") or (1 if y.size == 1 else 2))
    path = None
    lp = record.get("loss_path")
    if isinstance(lp, dict) and lp.get("x") is not None and len(lp.get("x") or []) > 0:
        px = _array(lp.get("x")).ravel()
        py = _array(lp.get("y"), [0.0] * px.size).ravel()
        pz = _array(lp.get("z")).ravel()
        n = min(px.size, py.size)
        steps = [int(s) for s in (lp.get("intervals") or [])]
        if len(steps) != n:
            steps = list(range(n))
        path = {"x": px[:n], "y": py[:n], "z": pz[:n] if pz.size >= n else np.full(n, np.nan), "steps": steps}
    center = None
    cp = record.get("convergence_point")
    if isinstance(cp, dict) and cp.get("x"):
        cx, cy, cz = (_array(cp.get(k), d).ravel() for k, d in (("x", [0.0]), ("y", [0.0]), ("z", [np.nan])))
        center = {"x": float(cx[0]), "y": float(cy[0]) if cy.size else 0.0, "z": float(cz[0]) if cz.size else np.nan}
    evr = meta.get("explained_variance_ratio")
    return {
        "source": source,
        "method": method,
        "dims": dims,
        "x": x,
        "y": y,
        "z": z,
        "path": path,
        "center": center,
        "unit": str(meta.get("unit") or "step"),
        "step_per_epoch": int(meta.get("step_per_epoch") or 1),
        "complete": bool(meta.get("complete", True)),
        "explained_variance_ratio": [float(v) for v in evr] if isinstance(evr, (list, tuple)) else None,
        "metadata": meta,
    }
