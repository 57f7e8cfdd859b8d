"""Loss landscapes of a MindSpore network, recorded as summaries the MindSpore tab draws.

Three kinds, all around the network's current parameters ``w`` and evaluated in eval mode on one fixed evaluation
subset:

* ``"random"``: the plane ``w + a d1 + b d2`` spanned by two random Gaussian directions with filter normalization
  (Li et al. 2018, "Visualizing the Loss Landscape of Neural Nets", Sec. 4: ``d <- d * ||w|| / ||d||`` per filter;
  biases and BatchNorm / LayerNorm parameters ignored or included), see ``tb_plugin_mindspore.landscape.directions``;
* ``"pca"``: the plane of the two leading PCA directions of the training trajectory (Li et al. 2018, Sec. 7), with
  their explained variance and the trajectory projected on it;
* ``"interpolation"``: the 1-D line ``(1 - alpha) * theta_a + alpha * theta_b`` between two parameter sets
  (Goodfellow, Vinyals, Saxe 2015, "Qualitatively characterizing neural network optimization problems").

How it is evaluated: the subset is taken once into host memory and cut into fixed-size batches; the loss network is
compiled once in GRAPH_MODE in eval mode (``set_train(False)``: no dropout, BatchNorm moving statistics); each grid
point writes precomputed float32 arrays into the parameters in place (``ops.assign``) and runs the compiled graph
over the batches. Parameters, train / eval flags and the execution mode are restored exactly afterwards (a
training run goes on bit-identically). Ctrl-C (or SIGTERM) stops after the point being evaluated; the finished
points are written (``complete: false``) and ``LandscapeInterrupted`` (a ``KeyboardInterrupt``) is raised.

Entry points: :func:`compute_landscape` (any loss network, now), :func:`interpolate`,
:func:`landscape_from_checkpoint` (on demand from saved checkpoints) and :class:`LandscapeCallback` (in
``Model.train``: at the end of training and / or every N epochs).
"""

import contextlib
import logging
import signal
import sys
import threading
import time

import numpy as np

import mindspore as ms
from mindspore import Tensor, nn, ops
from mindspore.train import Callback

from tb_plugin_mindspore import summary
from tb_plugin_mindspore.landscape import directions as dirs
from tb_plugin_mindspore.landscape import format as fmt
from tb_plugin_mindspore.landscape import grid as gridlib
from tb_plugin_mindspore.landscape.trajectory import Trajectory
from tb_plugin_mindspore.writer import SummaryWriter

__all__ = [
    "LandscapeCallback", "LandscapeInterrupted", "LandscapeResult", "EvalData", "LossEvaluator",
    "compute_landscape", "interpolate", "landscape_from_checkpoint", "METHODS", "TAG_PREFIX",
]

logger = logging.getLogger("tb_mindspore_callbacks")

METHODS = ("random", "pca", "interpolation")
TAG_PREFIX = "landscape/"
DEFAULT_GRID = 21
DEFAULT_EXTENT = 1.0
DEFAULT_BATCHES = 4           # "a few batches" of the evaluation dataset
DEFAULT_ARRAY_SAMPLES = 256   # evaluation subset taken from numpy arrays
DEFAULT_ARRAY_BATCH = 32
DEFAULT_ALPHAS = np.linspace(-0.5, 1.5, 41)


class LandscapeInterrupted(KeyboardInterrupt):
    """Ctrl-C / SIGTERM during a landscape; ``result`` holds the finished points (already written)."""

    def __init__(self, result):
        super().__init__("loss landscape interrupted after %d of %d points"
                         % (result.points_done, result.z.size) if result is not None else "loss landscape interrupted")
        self.result = result


# ---------------------------------------------------------------------------------------------------------------
# The evaluation subset and the compiled loss

def _is_dataset(data):
    return hasattr(data, "create_tuple_iterator") and hasattr(data, "get_batch_size")


class EvalData:
    """A fixed evaluation subset as host (numpy) batches: every grid point sees exactly the same samples.

    Build it with :meth:`take` from a MindSpore dataset (its first ``num_batches`` batches, default 4, or its first
    ``num_samples`` samples), from a tuple of numpy column arrays (first ``num_samples``, default 256), or from a
    list of batches (tuples of arrays). The samples are re-cut into batches of ``batch_size`` (default: the
    dataset's batch size; 32 for arrays); a smaller last batch is evaluated too (one more compilation).
    """

    def __init__(self, columns, batch_size):
        self.columns = [np.ascontiguousarray(c) for c in columns]
        n = {len(c) for c in self.columns}
        if len(n) != 1:
            raise ValueError("evaluation columns have different lengths: %s" % sorted(n))
        self.num_samples = n.pop()
        if self.num_samples == 0:
            raise ValueError("the evaluation subset is empty")
        self.batch_size = int(max(1, min(batch_size, self.num_samples)))

    @property
    def batches(self):
        for lo in range(0, self.num_samples, self.batch_size):
            yield tuple(c[lo:lo + self.batch_size] for c in self.columns)

    @classmethod
    def take(cls, data, num_samples=None, num_batches=None, batch_size=None):
        if isinstance(data, EvalData):
            if num_samples is None and batch_size is None:
                return data
            return cls([c[:num_samples] for c in data.columns], batch_size or data.batch_size)
        if _is_dataset(data):
            if num_samples is None and num_batches is None:
                num_batches = DEFAULT_BATCHES
            got, parts = 0, []
            for i, batch in enumerate(data.create_tuple_iterator(num_epochs=1, output_numpy=True)):
                if num_batches is not None and i >= num_batches:
                    break
                batch = [np.asarray(b) for b in batch]
                if num_samples is not None:
                    batch = [b[:num_samples - got] for b in batch]
                parts.append(batch)
                got += len(batch[0])
                if num_samples is not None and got >= num_samples:
                    break
            if not parts:
                raise ValueError("the evaluation dataset gave no batches")
            columns = [np.concatenate([p[k] for p in parts]) for k in range(len(parts[0]))]
            return cls(columns, batch_size or len(parts[0][0]))
        if isinstance(data, (tuple, list)) and data and all(isinstance(c, np.ndarray) for c in data):
            n = len(data[0]) if num_samples is None else num_samples
            n = min(n, DEFAULT_ARRAY_SAMPLES) if num_samples is None else n
            return cls([c[:n] for c in data], batch_size or DEFAULT_ARRAY_BATCH)
        if isinstance(data, (tuple, list)) and data and all(isinstance(b, (tuple, list)) for b in data):
            batches = list(data)[:num_batches] if num_batches else list(data)
            columns = [np.concatenate([np.asarray(b[k]) for b in batches]) for k in range(len(batches[0]))]
            if num_samples is not None:
                columns = [c[:num_samples] for c in columns]
            return cls(columns, batch_size or len(batches[0][0]))
        raise TypeError("eval_data must be a MindSpore dataset, a tuple of numpy column arrays, a list of batches or "
                        "an EvalData, got %s" % type(data).__name__)


def _np_dtype(ms_dtype):
    """The numpy dtype of a MindSpore dtype, or None where numpy has none (bfloat16, float8).

    Not ``mindspore.dtype_to_nptype``: deprecated since MindSpore 2.7, it logs a warning on every call.
    """
    try:
        return np.dtype(str(ms_dtype).lower())      # Float32 -> float32, Bool -> bool
    except TypeError:
        return None


def _float_params(network):
    from mindspore.common import dtype as mstype

    return [p for p in network.trainable_params() if p.dtype in mstype.float_type]


def _cells(network):
    seen, out = set(), []
    for _, cell in network.cells_and_names():
        if id(cell) not in seen:
            seen.add(id(cell))
            out.append(cell)
    return out


class LossEvaluator:
    """Mean loss of ``loss_network`` over an :class:`EvalData`, with parameters set in place.

    ``loss_network(*batch_columns)`` must return the mean loss of the batch (e.g. ``nn.WithLossCell`` with a
    ``reduction="mean"`` loss); batches are weighted by their size. Use inside :meth:`session`.
    """

    def __init__(self, loss_network, data, parameters=None):
        self.network = loss_network
        self.data = data
        self.params = list(parameters) if parameters is not None else _float_params(loss_network)
        if not self.params:
            raise ValueError("the network has no trainable floating-point parameters")
        self.names = [p.name for p in self.params]
        self.dtypes = [_np_dtype(p.dtype) for p in self.params]
        self._inputs = [(len(b[0]), tuple(Tensor(c) for c in b)) for b in data.batches]
        self.evaluations = 0

    @property
    def num_samples(self):
        return self.data.num_samples

    def read(self):
        """Copies of the current parameter values (exact)."""
        return [p.asnumpy().copy() for p in self.params]

    def write(self, arrays, only=None):
        """Copies ``arrays`` into the parameters' own memory (``ops.assign``).

        Not ``Parameter.set_data``: in PYNATIVE_MODE that gives the parameter a new tensor, and graphs compiled with
        ``jit`` before (MindSpore's optimizers are) keep updating the old one, so training would silently go on
        from stale weights (seen with MindSpore 2.10).
        """
        for k in (range(len(self.params)) if only is None else only):
            a, dtype = arrays[k], self.dtypes[k]
            if dtype is None:
                ops.assign(self.params[k], Tensor(a, dtype=self.params[k].dtype))
                continue
            if a.dtype != dtype:
                a = a.astype(dtype)
            ops.assign(self.params[k], Tensor(a))

    def loss(self):
        total = 0.0
        for n, tensors in self._inputs:
            total += n * float(self.network(*tensors).asnumpy())
        self.evaluations += 1
        return total / self.num_samples

    @contextlib.contextmanager
    def session(self):
        """Eval mode in GRAPH_MODE; yields copies of the parameters; restores parameters, flags and mode exactly.

        GRAPH_MODE even when the caller trains in PYNATIVE_MODE: a ``jit`` graph built in PyNative mode does not see
        ``set_data`` on its parameters (MindSpore 2.10), a GRAPH_MODE cell call does.
        """
        saved = self.read()
        flags = [(c, getattr(c, "training", False), getattr(c, "_phase", None)) for c in _cells(self.network)]
        mode = ms.get_context("mode")
        try:
            if mode != ms.GRAPH_MODE:
                ms.set_context(mode=ms.GRAPH_MODE)
            self.network.set_train(False)
            yield [a.copy() for a in saved]
        finally:
            self.write(saved)
            for cell, training, phase in flags:
                cell.add_flags(training=training)
                if phase is not None:
                    cell._phase = phase
            if mode != ms.GRAPH_MODE:
                ms.set_context(mode=mode)


# ---------------------------------------------------------------------------------------------------------------
# Interrupts and progress

class _Interrupts:
    """SIGINT / SIGTERM -> KeyboardInterrupt while ``armed`` (during evaluation), remembered otherwise.

    MindSpore's runtime turns Ctrl-C during a graph call into SIGTERM for the whole process; catching SIGTERM here
    lets the landscape stop cleanly instead (the previous handlers are back afterwards).
    """

    def __init__(self):
        self.armed = False
        self.pending = False
        self._previous = {}

    def _handler(self, signum, frame):
        if self.armed:
            self.armed = False
            raise KeyboardInterrupt("signal %d" % signum)
        self.pending = True

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                try:
                    self._previous[sig] = signal.signal(sig, self._handler)
                except (ValueError, OSError):
                    pass
        return self

    def __exit__(self, *exc):
        self.armed = False
        for sig, previous in self._previous.items():
            try:
                signal.signal(sig, previous)
            except (ValueError, OSError, TypeError):
                pass
        return False


class _Progress:
    """A one-line progress bar on a terminal; otherwise a line through ``log`` every 10 %."""

    def __init__(self, total, log, enabled=True, stream=None, label="landscape"):
        self.total = max(1, total)
        self.log = log
        self.enabled = enabled
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(enabled and getattr(self.stream, "isatty", lambda: False)())
        self.label = label
        self.start = time.perf_counter()
        self.next_tenth = 1
        self.last = 0.0

    def update(self, done):
        if not self.enabled:
            return
        elapsed = time.perf_counter() - self.start
        left = elapsed / done * (self.total - done) if done else float("nan")
        if self.tty:
            now = time.perf_counter()
            if now - self.last < 0.2 and done < self.total:
                return
            self.last = now
            filled = int(30 * done / self.total)
            self.stream.write("\r%s [%s%s] %d/%d points %3d%%  %s left " % (
                self.label, "#" * filled, "." * (30 - filled), done, self.total, 100 * done // self.total,
                gridlib.format_seconds(left)))
            self.stream.flush()
        elif done * 10 >= self.next_tenth * self.total:
            while done * 10 >= self.next_tenth * self.total:
                self.next_tenth += 1
            # Every 10 %, but not more than one line every 2 s (small grids finish without a wall of lines).
            if elapsed - self.last >= 2.0 or (done == self.total and self.last > 0):
                self.last = elapsed
                self.log("%s: %d/%d points (%d%%), %s elapsed, about %s left" % (
                    self.label, done, self.total, 100 * done // self.total, gridlib.format_seconds(elapsed),
                    gridlib.format_seconds(left)))

    def close(self):
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


# ---------------------------------------------------------------------------------------------------------------
# Results

class LandscapeResult:
    """One computed landscape. ``z[j, i]`` is the loss at ``(x[i], y[j])`` (NaN: not computed); ``record`` is the
    dict written to the summary (see ``tb_plugin_mindspore.landscape.format``); ``directions`` the two directions
    (lists of arrays in the order of ``names``), None for interpolation."""

    def __init__(self, method, x, y, z, record, directions, names, points_done, rows_done, complete, tag=None,
                 step=None, path=None, center_loss=None, seconds=None, seconds_per_point=None, extra=None):
        self.method = method
        self.x, self.y, self.z = x, y, z
        self.record = record
        self.directions = directions
        self.names = names
        self.points_done = points_done
        self.rows_done = rows_done
        self.complete = complete
        self.tag = tag
        self.step = step
        self.path = path
        self.center_loss = center_loss
        self.seconds = seconds
        self.seconds_per_point = seconds_per_point
        self.extra = extra or {}

    def __repr__(self):
        return "LandscapeResult(%s, %d x %d, %d points%s)" % (
            self.method, len(self.x), len(self.y), self.points_done, "" if self.complete else ", interrupted")


def _write_record(writer, logdir, tag, step, record):
    own = None
    if writer is None:
        if logdir is None:
            return
        writer = own = SummaryWriter(logdir)
    try:
        writer.value(summary.landscape(tag, record), int(step))
        writer.flush()
    finally:
        if own is not None:
            own.close()


# ---------------------------------------------------------------------------------------------------------------
# The computation

def _resolve_loss_network(loss_network=None, network=None, loss_fn=None):
    if loss_network is not None:
        return loss_network
    if network is None:
        raise ValueError("give loss_network (a cell that returns the loss), or network and loss_fn")
    if loss_fn is None:
        return network
    return nn.WithLossCell(network, loss_fn)


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


def _timed_estimate(ev, interrupts, log, method, nx, ny, estimate):
    """Evaluates the centre twice (the first call compiles), prints the cost estimate; returns (loss, seconds)."""
    interrupts.armed = True
    t0 = time.perf_counter()
    centre = ev.loss()
    compile_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ev.loss()
    spp = time.perf_counter() - t0
    interrupts.armed = False
    if estimate:
        log(gridlib.cost_text(method, nx, ny, ev.num_samples, spp) + " [compile and first evaluation: %s]"
            % gridlib.format_seconds(compile_s))
    return centre, spp


def _points(ev, interrupts, coords, base, dx, dy, on_point, progress):
    """Losses at ``base + a dx + b dy`` for each ``(a, b)`` of ``coords`` (in order). Returns (losses, done);
    stops early (NaN for the rest) on an interrupt."""
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


def compute_landscape(loss_network=None, eval_data=None, method="random", *, network=None, loss_fn=None,
                      grid=DEFAULT_GRID, extent=None, seed=0, norm="filter", bias_bn="ignore", trajectory=None,
                      params_a=None, params_b=None, alphas=None, num_samples=None, num_batches=None,
                      eval_batch_size=None, logdir=None, writer=None, tag=None, step=0, unit="step",
                      step_per_epoch=1, labels=None, log=print, progress=True, estimate=True, on_point=None,
                      evaluator=None):
    """Computes one landscape around the current parameters and writes it (with ``logdir`` or ``writer``).

    Args:
      loss_network: a cell ``(*batch columns) -> mean loss`` (or give ``network`` and ``loss_fn``).
      eval_data: the evaluation subset (see :class:`EvalData`); ``num_samples`` / ``num_batches`` /
        ``eval_batch_size`` choose how much and how it is batched.
      method: ``"random"``, ``"pca"`` or ``"interpolation"``.
      grid: points per axis, an int or ``(nx, ny)`` (default 21 x 21; for interpolation the number of alphas when
        ``alphas`` is not given).
      extent: half-width ``e`` (grid -e..e), ``(ex, ey)`` or ``(xmin, xmax, ymin, ymax)`` in units of the
        directions. Default 1.0 for random directions (filter-normalized: 1.0 moves each filter by its own norm);
        for PCA the projected trajectory plus a 20 % margin.
      seed, norm ("filter" | "layer" | "none"), bias_bn ("ignore" | "include"): random directions, see
        ``tb_plugin_mindspore.landscape.directions``. ``bias_bn`` also applies to the PCA directions.
      trajectory: for PCA, a :class:`~tb_plugin_mindspore.landscape.Trajectory`, or ``(steps, snapshots)`` with
        snapshots ``(n, D)`` flat vectors (parameters in ``trainable_params()`` order), or a list of parameter sets
        (checkpoint paths, dicts or lists of arrays); at least 3 snapshots.
      params_a, params_b, alphas: for interpolation, ``theta(alpha) = (1 - alpha) theta_a + alpha theta_b``;
        ``params_b`` defaults to the current parameters, ``alphas`` to -0.5..1.5 in steps of 0.05.
      tag, step: where it is written (default tag ``landscape/<method>``).
      log, progress, estimate: where messages go, whether a progress bar is shown, whether the cost estimate is
        printed before the grid starts.
      on_point: optional ``f(index, a, b, loss)`` called after each point (e.g. to stop it programmatically).

    Returns a :class:`LandscapeResult`. On Ctrl-C / SIGTERM: writes the finished points, restores the parameters
    and raises :class:`LandscapeInterrupted` (its ``result`` holds them).
    """
    if method not in METHODS:
        raise ValueError("method must be one of %s, got %r" % (", ".join(METHODS), method))
    if log is None:
        log = lambda *a, **k: None  # noqa: E731
    tag = tag or TAG_PREFIX + method
    if evaluator is None:
        loss_network = _resolve_loss_network(loss_network, network, loss_fn)
        if eval_data is None:
            raise ValueError("eval_data is required (the fixed evaluation subset)")
        data = EvalData.take(eval_data, num_samples=num_samples, num_batches=num_batches, batch_size=eval_batch_size)
        evaluator = LossEvaluator(loss_network, data)
    ev = evaluator
    started = time.perf_counter()
    interrupted = False
    result = None
    with _Interrupts() as interrupts:
        try:
            with ev.session() as w0:
                result, interrupted = _compute(ev, interrupts, w0, method, grid, extent, seed, norm, bias_bn,
                                               trajectory, params_a, params_b, alphas, unit, step_per_epoch, labels,
                                               log, progress, estimate, on_point, step)
        except KeyboardInterrupt:
            # Interrupted before the first point (while compiling / timing): nothing to write.
            raise LandscapeInterrupted(None)
        if result is not None:
            result.seconds = time.perf_counter() - started
            result.record["metadata"]["elapsed_s"] = round(result.seconds, 3)
            result.tag, result.step = tag, step
            if result.points_done:
                _write_record(writer, logdir, tag, step, result.record)
        if interrupted or interrupts.pending:   # pending: Ctrl-C while writing / restoring; still a stop request
            raise LandscapeInterrupted(result)
    done = "%d points in %s" % (result.points_done, gridlib.format_seconds(result.seconds))
    log("loss landscape (%s) done: %s; written as %s at step %s" % (method, done, tag, step)
        if (logdir or writer) else "loss landscape (%s) done: %s" % (method, done))
    return result


def _trajectory_matrix(ev, trajectory):
    if isinstance(trajectory, Trajectory):
        return trajectory.matrix()
    if isinstance(trajectory, tuple) and len(trajectory) == 2 and not isinstance(trajectory[0], (str, dict)):
        steps, matrix = trajectory
        return list(steps), np.asarray(matrix) if not isinstance(matrix, np.memmap) else matrix
    layout = dirs.Layout([p.shape for p in ev.params])
    rows = [layout.flatten(_named_arrays(ev, t, "trajectory snapshot %d" % i)) for i, t in enumerate(trajectory)]
    return list(range(len(rows))), np.stack(rows)


def _compute(ev, interrupts, w0, method, grid, extent, seed, norm, bias_bn, trajectory, params_a, params_b, alphas,
             unit, step_per_epoch, labels, log, progress, estimate, on_point, step):
    names = ev.names
    meta = {"num_samples": int(ev.num_samples), "eval_batch_size": int(ev.data.batch_size), "eval_mode": True,
            "step": int(step), "parameters": int(sum(a.size for a in w0))}
    path = None
    extra = {}
    if method == "interpolation":
        if params_a is None:
            raise ValueError("interpolation needs params_a (and optionally params_b, default: the current parameters)")
        a_arrays = [x.astype(np.float32) for x in _named_arrays(ev, params_a, "params_a")]
        b_arrays = [x.astype(np.float32) for x in (w0 if params_b is None else _named_arrays(ev, params_b, "params_b"))]
        if alphas is None:   # -0.5..1.5, always through both end points
            n = gridlib.grid_shape(grid)[0]
            alphas = DEFAULT_ALPHAS if grid == DEFAULT_GRID else np.union1d(np.linspace(-0.5, 1.5, n), [0.0, 1.0])
        alphas_ = np.asarray(alphas, dtype=np.float64)
        dx = [b - a for a, b in zip(a_arrays, b_arrays)]
        x, y = alphas_, np.array([0.0])
        ev.write(b_arrays)
        centre, spp = _timed_estimate(ev, interrupts, log, method, len(x), 1, estimate)
        bar = _Progress(len(x), log, progress, label="loss interpolation")
        losses, done, interrupted = _points(ev, interrupts, [(a, 0.0) for a in x], a_arrays, dx, None, on_point, bar)
        bar.close()
        z = losses.reshape(1, -1)
        ends = []
        for alpha in (0.0, 1.0):
            hit = np.where(np.isclose(x, alpha))[0]
            ends.append(float(z[0, hit[0]]) if hit.size else (centre if alpha == 1.0 else float("nan")))
        lab = labels or {}
        path = {"steps": [int(lab.get("step_a", 0)), int(lab.get("step_b", step))], "x": [0.0, 1.0], "y": [0.0, 0.0],
                "z": ends}
        distance = float(np.sqrt(sum(float(np.sum(np.square(d, dtype=np.float64))) for d in dx)))
        meta.update({"alpha": "theta(alpha) = (1 - alpha) * theta_a + alpha * theta_b", "distance": distance,
                     "endpoints": {"a": str(lab.get("a", "params_a")), "b": str(lab.get("b", "current parameters"))},
                     "x_label": "alpha", "y_label": ""})
        record_center = (1.0, 0.0, centre)
        directions = None
        rows_total = 1
    else:
        if method == "random":
            d1, d2 = dirs.random_directions(w0, seed=seed, norm=norm, bias_bn=bias_bn)
            box = gridlib.extent_box(DEFAULT_EXTENT if extent is None else extent)
            meta.update({"seed": int(seed), "normalization": norm, "bias_bn": bias_bn,
                         "x_label": "random direction 1 (%s-normalized)" % norm,
                         "y_label": "random direction 2 (%s-normalized)" % norm})
        else:
            if trajectory is None:
                raise ValueError("a PCA landscape needs a trajectory (parameter snapshots taken during training)")
            steps, matrix = _trajectory_matrix(ev, trajectory)
            layout = dirs.Layout([a.shape for a in w0])
            final = layout.flatten(w0)
            # Li et al. use the snapshots before the final point: drop a last snapshot equal to the centre.
            if len(steps) and np.array_equal(np.asarray(matrix[-1]), final):
                steps, matrix = steps[:-1], matrix[:-1]
            mask = layout.low_dim_mask() if bias_bn == "ignore" else None
            pca = dirs.pca_directions(matrix, final, ignore_mask=mask)
            d1 = layout.unflatten(pca["components"][0])
            d2 = layout.unflatten(pca["components"][1])
            coords = pca["coords"]
            box = gridlib.auto_extent(coords) if extent in (None, "auto") else gridlib.extent_box(extent)
            path = {"steps": list(steps) + [int(step)], "x": list(coords[:, 0]) + [0.0],
                    "y": list(coords[:, 1]) + [0.0]}
            evr = pca["explained_variance_ratio"]
            meta.update({"bias_bn": bias_bn, "snapshots": int(len(steps)),
                         "explained_variance": pca["explained_variance"], "explained_variance_ratio": evr,
                         "path_residual": [None if not np.isfinite(r) else float(r) for r in pca["residual"]],
                         "x_label": "PC1 (%.1f %% of the variance)" % (100 * evr[0]),
                         "y_label": "PC2 (%.1f %% of the variance)" % (100 * evr[1])})
            extra["pca"] = pca
        x, y = gridlib.axes(grid, box)
        centre, spp = _timed_estimate(ev, interrupts, log, method, len(x), len(y), estimate)
        interrupted = False
        if path is not None:
            # The path's losses at its projected points (on the plane, so it lies on the drawn surface).
            plosses, _, interrupted = _points(ev, interrupts, list(zip(path["x"][:-1], path["y"][:-1])), w0, d1, d2,
                                              None, None)
            path["z"] = list(plosses) + [centre]
        losses, done = np.full(len(x) * len(y), np.nan), 0
        if not interrupted:
            bar = _Progress(len(x) * len(y), log, progress, label="loss landscape (%s)" % method)
            coords_xy = [(a, b) for b in y for a in x]
            losses, done, interrupted = _points(ev, interrupts, coords_xy, w0, d1, d2, on_point, bar)
            bar.close()
        z = losses.reshape(len(y), len(x))
        record_center = (0.0, 0.0, centre)
        directions = [d1, d2]
        rows_total = len(y)
    rows_done = int(done // len(x))
    meta.update({"complete": not interrupted, "rows_done": rows_done, "rows": rows_total,
                 "points_done": int(done), "seconds_per_point": round(spp, 6)})
    record = fmt.landscape_record(x, y, z, method, path=path, center=record_center, unit=unit,
                                  step_per_epoch=step_per_epoch, **meta)
    result = LandscapeResult(method, x, y, z, record, directions, names, int(done), meta["rows_done"],
                             not interrupted, path=path, center_loss=centre, seconds_per_point=spp, extra=extra)
    return result, interrupted


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
    loss_network = _resolve_loss_network(None, network, loss_fn)
    data = EvalData.take(eval_data, num_samples=kwargs.pop("num_samples", None),
                         num_batches=kwargs.pop("num_batches", None), batch_size=kwargs.pop("eval_batch_size", None))
    ev = LossEvaluator(loss_network, data)
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


# ---------------------------------------------------------------------------------------------------------------
# The Model.train callback

def _cb_get(cb_params, key, default=None):
    try:
        return getattr(cb_params, key)
    except (AttributeError, KeyError):
        return default


class LandscapeCallback(Callback):
    """Records loss landscapes during ``Model.train``: at the end of training and / or every ``every_epochs``.

    Args:
      logdir: the run folder (the same as ``TrainMonitor``'s, so the landscapes belong to that run).
      eval_data: the fixed evaluation subset (MindSpore dataset, numpy columns, ...; see :class:`EvalData`),
        taken once when training starts. Use a dataset other than the training one.
      loss_network / network + loss_fn: what to evaluate; by default the network inside the training cell
        (``train_network.network``, e.g. the ``WithLossCell`` that ``Model(net, loss_fn, opt)`` or
        ``MonitoredTrainCell.wrap`` builds).
      methods: any of ``"random"``, ``"pca"``, ``"interpolation"`` (start of training -> now).
      every_epochs: also every N epochs (None: only at the end); at_end: at the end of training.
      max_snapshots, snapshot_every, snapshot_dir: the trajectory kept for PCA: a snapshot every ``snapshot_every``
        steps, at most ``max_snapshots`` (then every second one is dropped and the interval doubles), in memory
        or as files in ``snapshot_dir``. Memory: max_snapshots x parameters x 4 bytes.
      Other arguments as :func:`compute_landscape` (grid, extent, seed, norm, bias_bn, num_samples, num_batches,
      eval_batch_size, alphas, log, progress, on_point).

    Ctrl-C during a landscape writes the finished points and stops training (``LandscapeInterrupted``).
    """

    def __init__(self, logdir, eval_data, loss_network=None, network=None, loss_fn=None, methods=("random",),
                 every_epochs=None, at_end=True, grid=DEFAULT_GRID, extent=None, pca_extent="auto", seed=0,
                 norm="filter", bias_bn="ignore", num_samples=None, num_batches=None, eval_batch_size=None,
                 alphas=None, max_snapshots=32, snapshot_every=1, snapshot_dir=None, tag_prefix=TAG_PREFIX,
                 log=print, progress=True, writer=None, on_point=None):
        super().__init__()
        methods = (methods,) if isinstance(methods, str) else tuple(methods)
        bad = [m for m in methods if m not in METHODS]
        if bad or not methods:
            raise ValueError("methods must be a non-empty subset of %s, got %r" % (", ".join(METHODS), methods))
        if every_epochs is not None and (isinstance(every_epochs, bool) or not isinstance(every_epochs, int)
                                         or every_epochs < 1):
            raise ValueError("every_epochs must be None or an int >= 1, got %r" % (every_epochs,))
        gridlib.grid_shape(grid)
        self.logdir = logdir
        self.eval_data = eval_data
        self._loss_network = loss_network
        self._network, self._loss_fn = network, loss_fn
        self.methods = methods
        self.every_epochs = every_epochs
        self.at_end = at_end
        self.options = {"grid": grid, "seed": seed, "norm": norm, "bias_bn": bias_bn, "alphas": alphas,
                        "log": log, "progress": progress, "on_point": on_point}
        self.extent = extent
        self.pca_extent = pca_extent
        self.data_options = {"num_samples": num_samples, "num_batches": num_batches, "batch_size": eval_batch_size}
        self.tag_prefix = tag_prefix
        self.log = log if log is not None else (lambda *a, **k: None)
        self.trajectory = None
        if "pca" in methods:
            self.trajectory = Trajectory(max_snapshots=max_snapshots, stride=snapshot_every, directory=snapshot_dir)
        self._start = None          # (step, arrays) at the start of training, for interpolation
        self._evaluator = None
        self._writer = writer
        self._own_writer = writer is None
        self._layout = None
        self._last_step = None
        self.results = []

    # -- set-up ----------------------------------------------------------------------------------------------------
    def _loss_net(self, cb):
        if self._loss_network is not None or self._network is not None:
            return _resolve_loss_network(self._loss_network, self._network, self._loss_fn)
        train = _cb_get(cb, "train_network")
        inner = getattr(train, "network", None)
        if isinstance(inner, nn.Cell):
            return inner
        raise ValueError("LandscapeCallback could not find the loss network inside the training cell; pass "
                         "loss_network= (a cell returning the loss) or network= and loss_fn=")

    def _ev(self, cb):
        if self._evaluator is None:
            data = EvalData.take(self.eval_data, **self.data_options)
            self._evaluator = LossEvaluator(self._loss_net(cb), data)
            self._layout = dirs.Layout([p.shape for p in self._evaluator.params])
        return self._evaluator

    def _writer_(self):
        if self._writer is None:
            self._writer = SummaryWriter(self.logdir)
        return self._writer

    def _flat(self):
        ev = self._evaluator
        return self._layout.flatten([p.asnumpy() for p in ev.params])

    # -- hooks -----------------------------------------------------------------------------------------------------
    def on_train_begin(self, run_context):
        cb = run_context.original_args()
        ev = self._ev(cb)
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        if "interpolation" in self.methods:
            self._start = (step, ev.read())
        if self.trajectory is not None:
            self.trajectory.add(step, self._flat())

    def on_train_step_end(self, run_context):
        if self.trajectory is None:
            return
        cb = run_context.original_args()
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        if self.trajectory.wants(step):
            self.trajectory.add(step, self._flat())

    def on_train_epoch_end(self, run_context):
        cb = run_context.original_args()
        epoch = int(_cb_get(cb, "cur_epoch_num", 0) or 0)
        last = int(_cb_get(cb, "epoch_num", 0) or 0)
        due = self.every_epochs is not None and epoch % self.every_epochs == 0
        if due or (self.at_end and epoch == last):
            self._run(cb, epoch)

    def on_train_end(self, run_context):
        cb = run_context.original_args()
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        if self.at_end and self._last_step != step:   # e.g. training stopped before its last epoch
            self._run(cb, int(_cb_get(cb, "cur_epoch_num", 0) or 0))
        self.close()

    def close(self):
        if self._writer is not None and self._own_writer:
            self._writer.close()
            self._writer = None

    def _run(self, cb, epoch):
        ev = self._ev(cb)
        step = int(_cb_get(cb, "cur_step_num", 0) or 0)
        self._last_step = step
        spe = int(_cb_get(cb, "batch_num", 1) or 1)
        common = dict(self.options, evaluator=ev, writer=self._writer_(), step=step, unit="step",
                      step_per_epoch=spe)
        self.log("tb-mindspore: loss landscapes at epoch %d (step %d): %s" % (epoch, step, ", ".join(self.methods)))
        try:
            for method in self.methods:
                kwargs = dict(common, tag=self.tag_prefix + method)
                if method == "random":
                    kwargs["extent"] = self.extent
                elif method == "pca":
                    before = sum(1 for s in self.trajectory.steps if s < step)
                    if before < 3:
                        self.log("tb-mindspore: PCA landscape skipped at step %d: %d trajectory snapshots before it "
                                 "(needs 3)" % (step, before))
                        continue
                    kwargs["extent"] = self.pca_extent
                    kwargs["trajectory"] = self.trajectory.matrix()
                else:
                    if self._start is None:
                        continue
                    kwargs["params_a"] = self._start[1]
                    kwargs["labels"] = {"a": "start of training (step %d)" % self._start[0],
                                        "b": "step %d" % step, "step_a": self._start[0], "step_b": step}
                try:
                    self.results.append(compute_landscape(method=method, **kwargs))
                except ValueError as e:   # e.g. a trajectory that spans fewer than two dimensions
                    self.log("tb-mindspore: %s landscape skipped at step %d: %s" % (method, step, e))
        except KeyboardInterrupt:
            self.close()
            raise
