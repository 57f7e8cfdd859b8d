"""The computation of a loss landscape: directions, grid, evaluation point by point, the record.

Three kinds, all around the network's current parameters ``w`` and evaluated in eval mode on one fixed evaluation
subset (see ``landscape_eval``):

* ``"random"``: the plane ``w + a d1 + b d2`` spanned by two random Gaussian directions with filter normalization
  (Li et al. 2018, "Visualizing the Loss Landscape of Neural Nets", Sec. 4), see
  ``tb_plugin_mindspore.landscape.directions``;
* ``"pca"``: the plane of the two leading PCA directions of the training trajectory (Li et al. 2018, Sec. 7), with
  their explained variance and the trajectory projected on it;
* ``"interpolation"``: the 1-D line ``(1 - alpha) * theta_a + alpha * theta_b`` between two parameter sets
  (Goodfellow, Vinyals, Saxe 2015, "Qualitatively characterizing neural network optimization problems").

Entry points: :func:`compute_landscape` (any loss network, now), :func:`interpolate` and
:func:`landscape_from_checkpoint` (on demand from saved checkpoints). How it is computed is one validated
:class:`~tb_mindspore_callbacks.landscape.settings.LandscapeSettings`; what and where to (method, step, trajectory,
end points) is a :class:`LandscapeJob`.
"""

import dataclasses
import time
from typing import Any, Optional

import numpy as np

import mindspore as ms

from tb_plugin_mindspore.landscape import directions as dirs
from tb_plugin_mindspore.landscape import format as fmt
from tb_plugin_mindspore.landscape import grid as gridlib
from tb_plugin_mindspore.landscape.trajectory import Trajectory

from .evaluation import EvalData, LossEvaluator, resolve_loss_network
from .run import Interrupts, LandscapeInterrupted, LandscapeResult, Progress, write_record
from .settings import METHODS, TAG_PREFIX, LandscapeSettings

__all__ = ["compute_landscape", "interpolate", "landscape_from_checkpoint", "LandscapeJob", "evaluate_points"]


@dataclasses.dataclass
class LandscapeJob:
    """What one landscape is of and where it goes: the method, the step and unit it is written at, the trajectory
    (PCA) or end points (interpolation), and axis labels for the path's ends."""

    method: str = "random"
    step: int = 0
    unit: str = "step"
    step_per_epoch: int = 1
    trajectory: Any = None
    params_a: Any = None
    params_b: Any = None
    labels: Optional[dict] = None
    share: Optional[tuple] = None   # (rank, workers): evaluate only the grid points k with k % workers == rank

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError("method must be one of %s, got %r" % (", ".join(METHODS), self.method))
        if self.share is not None:
            rank, workers = self.share
            if not (isinstance(workers, int) and workers >= 1 and isinstance(rank, int) and 0 <= rank < workers):
                raise ValueError("share must be (rank, workers) with 0 <= rank < workers, got %r" % (self.share,))

    def mine(self, coords):
        """The indices of ``coords`` this worker evaluates (all of them without a share)."""
        if self.share is None:
            return list(range(len(coords)))
        rank, workers = self.share
        return list(range(rank, len(coords), workers))


def _named_arrays(ev, source, what):
    """A parameter set as arrays in the evaluator's order: a list of arrays, a {name: array} dict (MindSpore
    checkpoint dicts of Parameters too), or a checkpoint file path."""
    if isinstance(source, str):
        source = ms.load_checkpoint(source)
    if isinstance(source, dict):
        out = []
        for name, dtype in zip(ev.names, ev.dtypes):
            if name not in source:
                raise KeyError("%s has no parameter %r" % (what, name))
            v = source[name]
            v = v.asnumpy() if hasattr(v, "asnumpy") else np.asarray(v)
            out.append(np.array(v, dtype=dtype, copy=True))
        return out
    arrays = [np.asarray(a) for a in source]
    if len(arrays) != len(ev.params):
        raise ValueError("%s has %d arrays for %d parameters" % (what, len(arrays), len(ev.params)))
    for a, p in zip(arrays, ev.params):
        if tuple(a.shape) != tuple(p.shape):
            raise ValueError("%s: shape %s for parameter %s of shape %s" % (what, a.shape, p.name, p.shape))
    return arrays


def _timed_estimate(ev, interrupts, settings, method, nx, ny, probe, mine=None):
    """Evaluates the centre (the first call compiles), then ``probe()``: the seconds of each of a few grid points
    evaluated as the grid does it (parameters computed and written, then the loss). Prints the cost estimate of the
    ``mine`` points this worker evaluates (default all). Returns (loss, seconds per point).

    The estimate is the mean of those points after the first (which still pays one-off costs). Timing one loss
    evaluation alone, as before, left out writing the parameters and caught the slow first calls after compiling:
    0.29-3.2x the measured cost on the demo model (BENCHMARKS.md)."""
    interrupts.armed = True
    t0 = time.perf_counter()
    centre = ev.loss()
    compile_s = time.perf_counter() - t0
    interrupts.armed = False
    times = probe()
    spp = float(np.mean(times[1:] if len(times) > 1 else times))
    if settings.estimate:
        text = gridlib.cost_text(method, nx, ny, ev.num_samples, spp)
        if mine is not None and mine < nx * ny:
            text += " [this worker: %d points, about %s]" % (mine, gridlib.format_seconds(mine * spp))
        settings.say(text + " [compile and first evaluation: %s]" % gridlib.format_seconds(compile_s))
    return centre, spp


def _probe(ev, interrupts, coords, base, dx, dy, points=5):
    """A cost probe: evaluates the first ``points`` points of ``coords``'s first row one by one, like the grid;
    returns the seconds each took. Ctrl-C during it stops the landscape like one before the first point."""
    row = [c for c in coords[:points] if c[1] == coords[0][1]]

    def run():
        stamps = [time.perf_counter()]
        _, _, interrupted = evaluate_points(ev, interrupts, row, base, dx, dy,
                                            on_point=lambda *a: stamps.append(time.perf_counter()))
        if interrupted:
            raise KeyboardInterrupt
        return list(np.diff(stamps))

    return run


def _share_points(ev, interrupts, coords, base, dx, dy, job, on_point=None, progress=None):
    """:func:`evaluate_points` on this worker's share of ``coords``; NaN elsewhere. ``done`` counts this worker's."""
    idx = job.mine(coords)
    losses, done, interrupted = evaluate_points(ev, interrupts, [coords[k] for k in idx], base, dx, dy, on_point,
                                                progress)
    out = np.full(len(coords), np.nan)
    out[idx] = losses
    return out, done, interrupted


def evaluate_points(ev, interrupts, coords, base, dx, dy, on_point=None, progress=None):
    """Losses at ``base + a dx + b dy`` (``dy`` None: a line) for each ``(a, b)`` of ``coords``, in order.
    Returns ``(losses, done, interrupted)``; stops early (NaN for the rest) on an interrupt."""
    active = [k for k in range(len(base)) if np.any(dx[k]) or (dy is not None and np.any(dy[k]))]
    out = np.full(len(coords), np.nan)
    done = 0
    row_b, row = None, None
    interrupts.armed = True
    try:
        for n, (a, b) in enumerate(coords):
            if row_b != b:
                row_b = b
                fb = np.float32(b)
                row = [base[k] + fb * dy[k] if dy is not None else base[k] for k in range(len(base))]
            fa = np.float32(a)
            arrays = {k: row[k] + fa * dx[k] for k in active}
            ev.write(arrays, only=active)
            out[n] = ev.loss()
            done = n + 1
            if progress is not None:
                progress.update(done)
            if on_point is not None:
                on_point(n, float(a), float(b), out[n])
    except KeyboardInterrupt:
        return out, done, True
    finally:
        interrupts.armed = False
    return out, done, False


def _trajectory_matrix(ev, trajectory):
    if isinstance(trajectory, Trajectory):
        return trajectory.matrix()
    if isinstance(trajectory, tuple) and len(trajectory) == 2 and not isinstance(trajectory[0], (str, dict)):
        steps, matrix = trajectory
        return list(steps), np.asarray(matrix) if not isinstance(matrix, np.memmap) else matrix
    layout = dirs.Layout([p.shape for p in ev.params])
    rows = [layout.flatten(_named_arrays(ev, t, "trajectory snapshot %d" % i)) for i, t in enumerate(trajectory)]
    return list(range(len(rows))), np.stack(rows)



def compute_landscape(loss_network=None, eval_data=None, method="random", *, network=None, loss_fn=None,
                      trajectory=None, params_a=None, params_b=None, logdir=None, writer=None, tag=None, step=0,
                      unit="step", step_per_epoch=1, labels=None, evaluator=None, settings=None, share=None,
                      **options):
    """Computes one landscape around the current parameters and writes it (with ``logdir`` or ``writer``).

    Args:
      loss_network: a cell ``(*batch columns) -> mean loss`` (or give ``network`` and ``loss_fn``).
      eval_data: the evaluation subset (see :class:`~tb_mindspore_callbacks.landscape.evaluation.EvalData`).
      method: ``"random"``, ``"pca"`` or ``"interpolation"``.
      trajectory: for PCA, a :class:`~tb_plugin_mindspore.landscape.Trajectory`, or ``(steps, snapshots)`` with
        snapshots ``(n, D)`` flat vectors (parameters in ``trainable_params()`` order), or a list of parameter sets
        (checkpoint paths, dicts or lists of arrays); at least 3 snapshots.
      params_a, params_b: for interpolation, ``theta(alpha) = (1 - alpha) theta_a + alpha theta_b``;
        ``params_b`` defaults to the current parameters.
      tag, step, unit, step_per_epoch: where it is written (default tag ``landscape/<method>``).
      share: ``(rank, workers)``: evaluate only the points ``k % workers == rank`` (the others stay NaN); see
        ``landscape_dist`` for splitting a landscape across ``msrun`` workers.
      settings / options: a :class:`~tb_mindspore_callbacks.landscape.settings.LandscapeSettings`, and / or its
        fields as keywords (grid, extent, seed, norm, bias_bn, alphas, num_samples, num_batches, eval_batch_size,
        log, progress, estimate, on_point); ``extent`` of a PCA landscape is its ``pca_extent``.

    Returns a :class:`LandscapeResult`. On Ctrl-C / SIGTERM: writes the finished points, restores the parameters
    and raises :class:`LandscapeInterrupted` (its ``result`` holds them).
    """
    if method == "pca" and "extent" in options:
        extent = options.pop("extent")
        options["pca_extent"] = "auto" if extent is None else extent
    settings = LandscapeSettings.from_kwargs(settings, **options)
    job = LandscapeJob(method, int(step), unit, step_per_epoch, trajectory, params_a, params_b, labels, share)
    tag = tag or TAG_PREFIX + method
    if evaluator is None:
        if eval_data is None:
            raise ValueError("eval_data is required (the fixed evaluation subset)")
        loss_network = resolve_loss_network(loss_network, network, loss_fn)
        evaluator = LossEvaluator(loss_network, EvalData.take(eval_data, **settings.data_options()))
    return _run(evaluator, settings, job, tag, writer, logdir)


def _run(ev, settings, job, tag, writer, logdir):
    started = time.perf_counter()
    result, interrupted = None, False
    with Interrupts() as interrupts:
        try:
            with ev.session() as w0:
                result, interrupted = _compute(ev, interrupts, w0, settings, job)
        except KeyboardInterrupt:
            # Interrupted before the first point (while compiling / timing): nothing to write.
            raise LandscapeInterrupted(None)
        result.seconds = time.perf_counter() - started
        result.record["metadata"]["elapsed_s"] = round(result.seconds, 3)
        result.tag, result.step = tag, job.step
        if result.points_done:
            write_record(writer, logdir, tag, job.step, result.record)
        if interrupted or interrupts.pending:   # pending: Ctrl-C while writing / restoring; still a stop request
            raise LandscapeInterrupted(result)
    done = "%d points in %s" % (result.points_done, gridlib.format_seconds(result.seconds))
    settings.say("loss landscape (%s) done: %s; written as %s at step %s" % (job.method, done, tag, job.step)
                 if (logdir or writer) else "loss landscape (%s) done: %s" % (job.method, done))
    return result


def _compute(ev, interrupts, w0, settings, job):
    meta = {"num_samples": int(ev.num_samples), "eval_batch_size": int(ev.data.batch_size), "eval_mode": True,
            "step": int(job.step), "parameters": int(sum(a.size for a in w0))}
    if job.method == "interpolation":
        grid = _interpolation(ev, interrupts, w0, settings, job, meta)
    else:
        grid = _plane(ev, interrupts, w0, settings, job, meta)
    x, y, z, done, interrupted = grid["x"], grid["y"], grid["z"], grid["done"], grid["interrupted"]
    meta.update({"complete": not interrupted, "rows_done": int(done // len(x)), "rows": grid["rows"],
                 "points_done": int(done), "seconds_per_point": round(grid["spp"], 6)})
    record = fmt.landscape_record(x, y, z, job.method, path=grid["path"], center=grid["center"], unit=job.unit,
                                  step_per_epoch=job.step_per_epoch, **meta)
    result = LandscapeResult(job.method, x, y, z, record, grid["directions"], ev.names, int(done), meta["rows_done"],
                             not interrupted, path=grid["path"], center_loss=grid["center"][2],
                             seconds_per_point=grid["spp"], extra=grid.get("extra"))
    return result, interrupted


def _interpolation(ev, interrupts, w0, settings, job, meta):
    if job.params_a is None:
        raise ValueError("interpolation needs params_a (and optionally params_b, default: the current parameters)")
    a_arrays = [x.astype(np.float32) for x in _named_arrays(ev, job.params_a, "params_a")]
    b_arrays = [x.astype(np.float32) for x in
                (w0 if job.params_b is None else _named_arrays(ev, job.params_b, "params_b"))]
    x, y = settings.interpolation_alphas(), np.array([0.0])
    dx = [b - a for a, b in zip(a_arrays, b_arrays)]
    ev.write(b_arrays)
    coords = [(a, 0.0) for a in x]
    centre, spp = _timed_estimate(ev, interrupts, settings, job.method, len(x), 1,
                                  _probe(ev, interrupts, coords, a_arrays, dx, None), len(job.mine(coords)))
    bar = Progress(len(job.mine(coords)), settings.say, settings.progress, label="loss interpolation")
    losses, done, interrupted = _share_points(ev, interrupts, coords, a_arrays, dx, None, job, settings.on_point, bar)
    bar.close()
    z = losses.reshape(1, -1)
    ends = []
    for alpha in (0.0, 1.0):
        hit = np.where(np.isclose(x, alpha))[0]
        ends.append(float(z[0, hit[0]]) if hit.size else (centre if alpha == 1.0 else float("nan")))
    lab = job.labels or {}
    path = {"steps": [int(lab.get("step_a", 0)), int(lab.get("step_b", job.step))], "x": [0.0, 1.0],
            "y": [0.0, 0.0], "z": ends}
    distance = float(np.sqrt(sum(float(np.sum(np.square(d, dtype=np.float64))) for d in dx)))
    meta.update({"alpha": "theta(alpha) = (1 - alpha) * theta_a + alpha * theta_b", "distance": distance,
                 "endpoints": {"a": str(lab.get("a", "params_a")), "b": str(lab.get("b", "current parameters"))},
                 "x_label": "alpha", "y_label": ""})
    return {"x": x, "y": y, "z": z, "done": done, "interrupted": interrupted, "rows": 1, "path": path,
            "center": (1.0, 0.0, centre), "directions": None, "spp": spp}


def _random_directions(w0, settings, meta):
    d1, d2 = dirs.random_directions(w0, seed=settings.seed, norm=settings.norm, bias_bn=settings.bias_bn)
    meta.update({"seed": int(settings.seed), "normalization": settings.norm, "bias_bn": settings.bias_bn,
                 "x_label": "random direction 1 (%s-normalized)" % settings.norm,
                 "y_label": "random direction 2 (%s-normalized)" % settings.norm})
    return d1, d2, settings.box("random"), None, {}


def _pca_directions(ev, w0, settings, job, meta):
    if job.trajectory is None:
        raise ValueError("a PCA landscape needs a trajectory (parameter snapshots taken during training)")
    steps, matrix = _trajectory_matrix(ev, job.trajectory)
    layout = dirs.Layout([a.shape for a in w0])
    final = layout.flatten(w0)
    # Li et al. use the snapshots before the final point: drop a last snapshot equal to the centre.
    if len(steps) and np.array_equal(np.asarray(matrix[-1]), final):
        steps, matrix = steps[:-1], matrix[:-1]
    mask = layout.low_dim_mask() if settings.bias_bn == "ignore" else None
    pca = dirs.pca_directions(matrix, final, ignore_mask=mask)
    coords = pca["coords"]
    path = {"steps": list(steps) + [int(job.step)], "x": list(coords[:, 0]) + [0.0], "y": list(coords[:, 1]) + [0.0]}
    evr = pca["explained_variance_ratio"]
    meta.update({"bias_bn": settings.bias_bn, "snapshots": int(len(steps)),
                 "explained_variance": pca["explained_variance"], "explained_variance_ratio": evr,
                 "path_residual": [None if not np.isfinite(r) else float(r) for r in pca["residual"]],
                 "x_label": "PC1 (%.1f %% of the variance)" % (100 * evr[0]),
                 "y_label": "PC2 (%.1f %% of the variance)" % (100 * evr[1])})
    d1, d2 = layout.unflatten(pca["components"][0]), layout.unflatten(pca["components"][1])
    return d1, d2, settings.box("pca", coords), path, {"pca": pca}


def _plane(ev, interrupts, w0, settings, job, meta):
    if job.method == "random":
        d1, d2, box, path, extra = _random_directions(w0, settings, meta)
    else:
        d1, d2, box, path, extra = _pca_directions(ev, w0, settings, job, meta)
    x, y = gridlib.axes(settings.grid, box)
    coords = [(a, b) for b in y for a in x]
    centre, spp = _timed_estimate(ev, interrupts, settings, job.method, len(x), len(y),
                                  _probe(ev, interrupts, coords, w0, d1, d2), len(job.mine(coords)))
    interrupted = False
    if path is not None:
        # The path's losses at its projected points (on the plane, so it lies on the drawn surface).
        plosses, _, interrupted = evaluate_points(ev, interrupts, list(zip(path["x"][:-1], path["y"][:-1])), w0,
                                                  d1, d2)
        path["z"] = list(plosses) + [centre]
    losses, done = np.full(len(x) * len(y), np.nan), 0
    if not interrupted:
        bar = Progress(len(job.mine(coords)), settings.say, settings.progress, label="loss landscape (%s)" % job.method)
        losses, done, interrupted = _share_points(ev, interrupts, coords, w0, d1, d2, job, settings.on_point, bar)
        bar.close()
    return {"x": x, "y": y, "z": losses.reshape(len(y), len(x)), "done": done, "interrupted": interrupted,
            "rows": len(y), "path": path, "center": (0.0, 0.0, centre), "directions": [d1, d2], "spp": spp,
            "extra": extra}


def interpolate(loss_network=None, eval_data=None, params_a=None, params_b=None, alphas=None, **kwargs):
    """1-D loss along ``(1 - alpha) theta_a + alpha theta_b`` (``params_b``: default the current parameters)."""
    return compute_landscape(loss_network, eval_data, "interpolation", params_a=params_a, params_b=params_b,
                             alphas=alphas, **kwargs)


def _checkpoint_step(param_dict):
    gs = param_dict.get("global_step")
    if gs is None:
        return 0
    try:
        return int(np.asarray(gs.asnumpy() if hasattr(gs, "asnumpy") else gs).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return 0


def landscape_from_checkpoint(checkpoint, network, eval_data, logdir=None, loss_fn=None, method="random",
                              trajectory=None, start_checkpoint=None, step=None, writer=None, **kwargs):
    """A landscape around the parameters saved in ``checkpoint`` (a ``.ckpt`` path or a loaded dict).

    ``network`` (with ``loss_fn``, or already returning the loss) gets the checkpoint's parameters for the time of
    the computation; its own parameters are restored afterwards. PCA needs ``trajectory`` (a list of checkpoint
    paths along training); interpolation goes from ``start_checkpoint`` to ``checkpoint``. ``step`` defaults to the
    checkpoint's ``global_step``. Other arguments as :func:`compute_landscape`.
    """
    params = ms.load_checkpoint(checkpoint) if isinstance(checkpoint, str) else checkpoint
    loss_network = resolve_loss_network(None, network, loss_fn)
    data_keys = ("num_samples", "num_batches", "eval_batch_size")
    data_settings = LandscapeSettings.from_kwargs(**{k: kwargs.pop(k) for k in data_keys if k in kwargs})
    ev = LossEvaluator(loss_network, EvalData.take(eval_data, **data_settings.data_options()))
    target = _named_arrays(ev, params, "the checkpoint")
    original = ev.read()
    if step is None:
        step = _checkpoint_step(params)
    labels = kwargs.pop("labels", None)
    if method == "interpolation":
        if start_checkpoint is None:
            raise ValueError("interpolation from a checkpoint needs start_checkpoint")
        start = ms.load_checkpoint(start_checkpoint) if isinstance(start_checkpoint, str) else start_checkpoint
        labels = labels or {"a": str(start_checkpoint) if isinstance(start_checkpoint, str) else "start",
                            "b": str(checkpoint) if isinstance(checkpoint, str) else "checkpoint",
                            "step_a": _checkpoint_step(start), "step_b": step}
        kwargs["params_a"] = start
    try:
        ev.write(target)
        return compute_landscape(evaluator=ev, method=method, trajectory=trajectory, logdir=logdir, writer=writer,
                                 step=step, labels=labels, **kwargs)
    finally:
        ev.write(original)

