"""Sharpness while training: the Hessian's top eigenvalue and trace on a fixed probe batch, every N steps.

Hessian-vector products are computed in GRAPH_MODE on the probe batch, in eval mode (no dropout), by one of:

* ``"exact"``: forward-over-reverse done as reverse-over-reverse, the gradient of ``<grad L(w), v>`` (``v`` held in
  non-trainable parameters, so the graph is compiled once). MindSpore 2.10 cannot differentiate the backward of its
  cross-entropy losses (``SoftmaxCrossEntropyWithLogits``, ``CrossEntropyLoss``: "GatherDGradV2 ... pointer is
  null", or a shape error in ``AddN``), so this works for losses such as ``MSELoss`` only;
* ``"forward"`` / ``"central"``: finite differences of the compiled gradient, ``(g(w + e v) - g(w)) / e`` (one
  gradient per product, ``g(w)`` shared by all of them; error O(e)) or ``(g(w + e v) - g(w - e v)) / 2e`` (two;
  O(e^2)); Pearlmutter 1994 gives the exact operator they approximate. They work wherever training does;
* ``"auto"``: exact when it compiles, otherwise ``"forward"`` (logged once; a failed compilation makes MindSpore
  print its error and write ``rank_0/om/analyze_fail.ir`` in the working folder, hence not the default).

The default is ``"forward"`` with ``e = 1e-4 ||w||``: on a tiny MLP with cross-entropy its top eigenvalue is within
3e-4 (relative) of the dense Hessian's (``"central"``: 1e-6 with ``1e-3``) at half the cost; on the demo transformer
(||w|| = 39) two random starts agree within 0.5 % (``1e-3`` is too coarse there: 5 % low).

The top eigenvalue comes from Lanczos (warm-started from the previous top eigenvector), the trace from Hutchinson's
estimator, the reference line from the optimizer (see ``tb_plugin_mindspore.landscape.hessian``): ``2 / lr`` for
SGD (Cohen et al. 2021), ``(2 + 2 beta) / lr`` with momentum, and for Adam the preconditioned sharpness against
``(2 + 2 beta1) / ((1 - beta1) lr)`` = 38 / lr at beta1 = 0.9 (Cohen et al. 2022).

Entry points: :class:`SharpnessCallback` (``Model.train``) and :class:`SharpnessProbe` (``probe.measure(step,
optimizer)`` from a hand-written loop).
"""

import dataclasses
import time
from typing import Optional

import numpy as np

from mindspore import Parameter, ParameterTuple, Tensor, nn, ops
from mindspore.train import Callback

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import directions as dirs
from tb_plugin_mindspore.landscape import hessian
from tb_plugin_mindspore.landscape.format import profile_record
from tb_plugin_mindspore.writing.writer import SummaryWriter

from ..common.util import cb_get, find_optimizer, host_learning_rates, logger
from .evaluation import EvalData, LossEvaluator, check_eval_data, resolve_loss_network

__all__ = ["SharpnessCallback", "SharpnessProbe", "SharpnessResult", "optimizer_reference", "HVP_MODES",
           "PROFILE_TAG"]

HVP_MODES = ("forward", "central", "exact", "auto")
PROFILE_TAG = "landscape/sharpness_profile"


class _Grad(nn.Cell):
    """The gradient of the loss network's output w.r.t. ``weights``."""

    def __init__(self, network, weights):
        super().__init__(auto_prefix=False)
        self.network = network
        self.weights = weights
        self.grad = ops.GradOperation(get_by_list=True)

    def construct(self, *inputs):
        return self.grad(self.network, self.weights)(*inputs)


class _ExactHvp(nn.Cell):
    """``H v`` as the gradient of ``<grad L, v>``; ``v`` lives in ``self.vec`` (written with ``ops.assign``)."""

    def __init__(self, network, weights):
        super().__init__(auto_prefix=False)
        self.first = _Grad(network, weights)
        self.weights = weights
        self.vec = ParameterTuple([Parameter(Tensor(np.zeros(p.shape, np.float32)), name="sharpness_v.%d" % i,
                                             requires_grad=False) for i, p in enumerate(weights)])
        self.grad = ops.GradOperation(get_by_list=True)

    def dot(self, *inputs):
        g = self.first(*inputs)
        total = 0.0
        for gi, vi in zip(g, self.vec):
            total = total + (gi * vi).sum()
        return total

    def construct(self, *inputs):
        return self.grad(self.dot, self.weights)(*inputs)


@dataclasses.dataclass
class SharpnessResult:
    """One measurement. ``sharpness``: the top Hessian eigenvalue; ``preconditioned``: the top eigenvalue of
    ``P^-1 H`` (Adam) or None; ``threshold``: the optimizer's stability line for the one that applies
    (``stability_ratio`` = that value / threshold); ``trace``: Hutchinson's estimate."""

    step: int
    sharpness: float
    trace: float
    trace_std_error: float
    preconditioned: Optional[float]
    threshold: Optional[float]
    stability_ratio: Optional[float]
    optimizer_kind: Optional[str]
    lr: Optional[float]
    hvps: int
    hvp_mode: str
    seconds: float
    residual: float
    vector: np.ndarray = dataclasses.field(repr=False, default=None)
    profile: Optional[dict] = dataclasses.field(repr=False, default=None)   # the landscape record, or None


def _scalar(x):
    return float(np.asarray(x.asnumpy() if hasattr(x, "asnumpy") else x, dtype=np.float64).reshape(-1)[0])


def optimizer_reference(optimizer, names):
    """``(kind, beta, inverse_sqrt_p)`` for ``optimizer``: kind ``"sgd"`` / ``"momentum"`` / ``"adam"`` or None
    (no known stability line); ``inverse_sqrt_p`` the flat ``P^-1/2`` of Adam's preconditioner in the order of
    ``names``, else None. MindSpore's ``Adam`` applies ``lr sqrt(1 - b2^t) / (1 - b1^t) * m / (sqrt(v) + eps)``, so
    ``P = (1 - b1^t) (sqrt(v) + eps) / sqrt(1 - b2^t)``; ``AdamWeightDecay`` has no bias correction:
    ``P = sqrt(v) + eps``."""
    if optimizer is None:
        return None, None, None
    moments = getattr(optimizer, "moment2", None) or getattr(optimizer, "moments2", None)
    if moments is not None and hasattr(optimizer, "beta1"):
        beta1 = _scalar(optimizer.beta1)
        eps = _scalar(optimizer.eps)
        by_name = {p.name.split(".", 1)[-1]: p for p in moments}
        scale, correction = 1.0, 1.0
        if hasattr(optimizer, "beta1_power") and hasattr(optimizer, "beta2_power"):
            b1t, b2t = _scalar(optimizer.beta1_power), _scalar(optimizer.beta2_power)
            scale = (1.0 - b1t) if b1t < 1.0 else 1.0
            correction = np.sqrt(1.0 - b2t) if b2t < 1.0 else 1.0
        parts = []
        for name in names:
            v = by_name.get(name)
            if v is None:
                return "adam", beta1, None
            p = scale * (np.sqrt(np.maximum(v.asnumpy().astype(np.float64), 0.0)) + eps) / correction
            parts.append((1.0 / np.sqrt(p)).reshape(-1))
        return "adam", beta1, np.concatenate(parts)
    momentum = getattr(optimizer, "momentum", None)
    if momentum is not None:
        beta = _scalar(momentum)
        return ("momentum" if beta > 0 else "sgd"), beta, None
    if type(optimizer).__name__ == "SGD":
        return "sgd", 0.0, None
    return None, None, None


class SharpnessProbe:
    """Hessian-vector products of a loss network on a fixed probe batch, and the measurements built on them.

    Args:
      loss_network / network + loss_fn: the cell ``(*columns) -> mean loss`` (e.g. ``nn.WithLossCell``).
      probe_data: the probe batch (numpy columns, a dataset, ...; see ``EvalData``), ``probe_samples`` of it
        (default 8: on the demo transformer a gradient on 8 samples costs about a quarter of a training step of 32)
        in one batch.
      iterations: Lanczos products per measurement (default 6, warm-started from the previous eigenvector; the
        first measurement, cold, takes ``max(iterations, 12)``; for Adam as many again for the preconditioned
        sharpness).
      trace_probes: Rademacher probes for the trace (default 2; 0: no trace).
      profile_points: the 1-D sharpness profile, the loss at this many points along the top eigenvector and along a
        random filter-normalized direction (default 21; 0: none), on the probe batch, every ``profile_every``-th
        measurement (default 4: 42 forward passes cost about as much as the rest of a measurement).
      hvp: ``"forward"`` (default), ``"central"``, ``"exact"`` or ``"auto"``; fd_scale: the finite-difference step relative to
        the parameters' norm (default 1e-4).
    """

    def __init__(self, loss_network=None, probe_data=None, *, network=None, loss_fn=None, probe_samples=8,
                 iterations=6, trace_probes=2, profile_points=21, profile_every=4, hvp="forward", fd_scale=1e-4,
                 seed=0):
        if hvp not in HVP_MODES:
            raise ValueError("hvp must be one of %s, got %r" % (", ".join(HVP_MODES), hvp))
        for name, value, low in (("probe_samples", probe_samples, 1), ("iterations", iterations, 1),
                                 ("trace_probes", trace_probes, 0), ("profile_every", profile_every, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError("%s must be an int >= %d, got %r" % (name, low, value))
        if profile_points != 0 and (isinstance(profile_points, bool) or not isinstance(profile_points, int)
                                    or not 3 <= profile_points <= 201):
            raise ValueError("profile_points must be 0 or an int in 3..201, got %r" % (profile_points,))
        if not (isinstance(fd_scale, (int, float)) and 0 < fd_scale < 1):
            raise ValueError("fd_scale must be a number in (0, 1), got %r" % (fd_scale,))
        if probe_data is None:
            raise ValueError("probe_data is required (a fixed probe batch)")
        check_eval_data(probe_data)
        self._loss_parts = (loss_network, network, loss_fn)
        self.probe_data = probe_data
        self.probe_samples = probe_samples
        self.iterations, self.trace_probes = iterations, trace_probes
        self.profile_points, self.profile_every = profile_points, profile_every
        self._measurements = 0
        self.hvp_mode, self.fd_scale, self.seed = hvp, fd_scale, seed
        self._ev = None
        self._vector = None       # the previous top eigenvectors: warm starts
        self._pre_vector = None
        self._count = 0
        self.note = None   # why "auto" fell back to finite differences

    # -- set-up ----------------------------------------------------------------------------------------------------
    def bind(self, loss_network=None):
        """Builds the evaluator (once) on ``loss_network`` or the one given at construction."""
        if self._ev is None:
            net = resolve_loss_network(*self._loss_parts) if any(p is not None for p in self._loss_parts[:2]) \
                else loss_network
            if net is None:
                raise ValueError("SharpnessProbe needs loss_network= (a cell returning the loss) or network= and "
                                 "loss_fn=")
            data = EvalData.take(self.probe_data, num_samples=self.probe_samples, batch_size=self.probe_samples)
            self._ev = LossEvaluator(net, data)
            self.layout = dirs.Layout([p.shape for p in self._ev.params])
            self._weights = ParameterTuple(self._ev.params)
            self._grad = _Grad(net, self._weights)
            self._exact = None
        return self._ev

    @property
    def names(self):
        return self._ev.names

    # -- products --------------------------------------------------------------------------------------------------
    def _gradient(self):
        total = None
        for n, tensors in self._ev._inputs:
            g = self.layout.flatten([t.asnumpy() for t in self._grad(*tensors)], dtype=np.float64) * n
            total = g if total is None else total + g
        return total / self._ev.num_samples

    def _exact_hvp(self, v):
        for p, a in zip(self._exact.vec, self.layout.unflatten(v.astype(np.float32))):
            ops.assign(p, Tensor(a))
        total = None
        for n, tensors in self._ev._inputs:
            h = self.layout.flatten([t.asnumpy() for t in self._exact(*tensors)], dtype=np.float64) * n
            total = h if total is None else total + h
        return total / self._ev.num_samples

    def _fd_hvp(self, v, w0, g0):
        """Forward (``g0`` given: the gradient at ``w0``) or central difference of the gradient along ``v``."""
        e = self.fd_scale * max(float(np.linalg.norm(w0)), 1.0) / max(float(np.linalg.norm(v)), 1e-30)
        out = []
        for sign in ((1.0,) if g0 is not None else (1.0, -1.0)):
            self._ev.write(self.layout.unflatten((w0 + sign * e * v).astype(np.float32)))
            out.append(self._gradient())
        self._ev.write(self.layout.unflatten(w0.astype(np.float32)))
        return (out[0] - g0) / e if g0 is not None else (out[0] - out[1]) / (2.0 * e)

    def _pick_mode(self):
        if self.hvp_mode in ("forward", "central"):
            return self.hvp_mode
        if self._exact is False:
            return "forward"
        if self._exact is None:
            try:
                self._exact = _ExactHvp(self._ev.network, self._weights)
                self._exact_hvp(np.zeros(self.layout.size))
            except Exception as e:   # MindSpore cannot differentiate this loss twice
                if self.hvp_mode == "exact":
                    raise ValueError("exact Hessian-vector products do not compile for this loss network: %s"
                                     % str(e).strip().splitlines()[0])
                self._exact = False
                self.note = str(e).strip().splitlines()[0][:300]
                logger.info("tb-mindspore sharpness: exact Hessian-vector products unavailable (%s); using finite "
                            "differences of the gradient", self.note)
                return "forward"
        return "exact"

    def matvec(self):
        """``f(v) -> H v`` (flat float64) at the current parameters; use inside :meth:`session`."""
        mode = self._pick_mode()
        w0 = self.layout.flatten(self._ev.read(), dtype=np.float64)
        g0 = self._gradient() if mode == "forward" else None

        def f(v):
            self._count += 1
            return self._exact_hvp(v) if mode == "exact" else self._fd_hvp(v, w0, g0)
        f.mode = mode
        if g0 is not None:
            f.slope = lambda v: float(g0 @ v)   # the directional derivative, for the profile's quadratic model
        return f

    def session(self):
        """GRAPH_MODE and eval mode for the products; parameters, flags and mode restored exactly afterwards."""
        return self._ev.session()

    # -- measurements ----------------------------------------------------------------------------------------------
    def _iterations(self, warm):
        """Products for one Lanczos run: ``iterations`` from a warm start, more from a random one."""
        return self.iterations if warm is not None else max(self.iterations, 12)

    def measure(self, step, optimizer=None, loss_network=None, lr=None):
        """Top eigenvalue, trace and stability line at the current parameters; returns a :class:`SharpnessResult`.
        ``lr``: the learning rate of the stability line (default: what ``optimizer`` applied last)."""
        self.bind(loss_network)
        started = time.perf_counter()
        kind, beta, inv_sqrt_p = optimizer_reference(optimizer, self._ev.names)
        if lr is None and optimizer is not None:
            lrs = host_learning_rates(optimizer)
            lr = lrs[0] if lrs else None
        self._count = 0
        with self.session():
            f = self.matvec()
            dim = self.layout.size
            top = hessian.lanczos_top(f, dim, self._iterations(self._vector), v0=self._vector,
                                      seed=self.seed + int(step))
            self._vector = top["vector"]
            pre = None
            if inv_sqrt_p is not None:
                top_p = hessian.lanczos_top(lambda v: inv_sqrt_p * f(inv_sqrt_p * v), dim,
                                            self._iterations(self._pre_vector), v0=self._pre_vector,
                                            seed=self.seed + int(step))
                pre, self._pre_vector = top_p["eigenvalue"], top_p["vector"]
            trace = {"trace": float("nan"), "std_error": float("nan")}
            if self.trace_probes:
                trace = hessian.hutchinson_trace(f, dim, self.trace_probes, seed=self.seed + int(step))
            hvps = self._count
            profile = None
            if self.profile_points and self._measurements % self.profile_every == 0:
                profile = self._profile(step, top["eigenvalue"], f)
        self._measurements += 1
        threshold = hessian.stability_threshold(kind, lr, beta) if kind is not None and lr is not None else None
        watched = pre if kind == "adam" else top["eigenvalue"]
        ratio = watched / threshold if threshold and watched is not None and np.isfinite(threshold) else None
        if profile is not None:
            profile["metadata"].update({"threshold": threshold, "optimizer": kind, "lr": lr})
        return SharpnessResult(int(step), top["eigenvalue"], trace["trace"], trace["std_error"], pre, threshold,
                               ratio, kind, lr, hvps, f.mode, time.perf_counter() - started,
                               top["residual"], self._vector, profile)

    def _profile(self, step, sharpness, f):
        """The loss along the top eigenvector and a random filter-normalized direction (both unit length), over
        +-r with r = sqrt(2 L0 / sharpness): the quadratic model rises by L0 at the ends along the eigenvector."""
        w0 = self._ev.read()
        flat = self.layout.flatten(w0, dtype=np.float64)
        loss0 = self._ev.loss()
        slope = float(getattr(f, "slope", lambda v: np.nan)(self._vector))
        r = float(np.sqrt(2.0 * max(abs(loss0), 1e-6) / sharpness)) if sharpness > 0 else 1e-2 * np.linalg.norm(flat)
        (rand,) = dirs.random_directions(w0, seed=self.seed, count=1)
        rand = self.layout.flatten(rand, dtype=np.float64)
        rand /= max(float(np.linalg.norm(rand)), 1e-30)
        ts = np.linspace(-r, r, self.profile_points)
        rows = []
        for d in (self._vector, rand):
            row = []
            for t in ts:
                self._ev.write(self.layout.unflatten((flat + t * d).astype(np.float32)))
                row.append(self._ev.loss())
            rows.append(row)
        self._ev.write(w0)
        return profile_record(ts, rows, ["top Hessian eigenvector", "random direction (filter-normalized)"],
                              loss0, sharpness, slope, step=int(step), num_samples=int(self._ev.num_samples))


def write_result(writer, result, wall_time=None):
    """Writes a :class:`SharpnessResult` as diagnostic scalars (``metadata.SHARPNESS_*``) and its profile as a
    landscape (``landscape/sharpness_profile``)."""
    r, step = result, result.step
    if r.profile is not None:
        writer.value(summary.landscape(PROFILE_TAG, r.profile), step, wall_time)
    writer.scalar(metadata.SHARPNESS, r.sharpness, step, wall_time)
    if np.isfinite(r.trace):
        writer.scalar(metadata.HESSIAN_TRACE, r.trace, step, wall_time)
    if r.preconditioned is not None:
        writer.scalar(metadata.SHARPNESS_PRECONDITIONED, r.preconditioned, step, wall_time)
    if r.threshold is not None and np.isfinite(r.threshold):
        writer.scalar(metadata.SHARPNESS_THRESHOLD, r.threshold, step, wall_time)
    if r.stability_ratio is not None:
        writer.scalar(metadata.SHARPNESS_RATIO, r.stability_ratio, step, wall_time)


class SharpnessCallback(Callback):
    """Records sharpness every ``every`` steps of ``Model.train`` (and at step ``every``, not at step 0).

    Args:
      logdir: the run folder (TrainMonitor's, so the curves belong to that run); or ``writer=``.
      probe_data: the fixed probe batch; other arguments as :class:`SharpnessProbe`. By default the loss network
        is the one inside the training cell (``train_network.network``).

    Written (diagnostic tier): ``diagnostic/sharpness/top_eigenvalue``, ``.../hessian_trace``,
    ``.../preconditioned`` (Adam), ``.../stability_threshold`` and ``.../stability_ratio``. A failure is logged
    once and stops the measurements; training goes on.
    """

    def __init__(self, logdir, probe_data, every=500, loss_network=None, network=None, loss_fn=None, writer=None,
                 **probe_options):
        super().__init__()
        if isinstance(every, bool) or not isinstance(every, int) or every < 1:
            raise ValueError("every must be an int >= 1, got %r" % (every,))
        if writer is None and logdir is None:
            raise ValueError("give logdir (the run folder) or writer")
        self.every = every
        self.logdir = logdir
        self.probe = SharpnessProbe(loss_network, probe_data, network=network, loss_fn=loss_fn, **probe_options)
        self._writer, self._own_writer = writer, writer is None
        self.results = []
        self.failed = None

    def on_train_step_end(self, run_context):
        if self.failed is not None:
            return
        cb = run_context.original_args()
        step = int(cb_get(cb, "cur_step_num", 0) or 0)
        if step <= 0 or step % self.every:
            return
        try:
            inner = getattr(cb_get(cb, "train_network"), "network", None)
            result = self.probe.measure(step, find_optimizer(cb), loss_network=inner)
            if self._writer is None:
                self._writer = SummaryWriter(self.logdir)
            write_result(self._writer, result)
            self.results.append(result)
        except Exception as e:   # nothing from monitoring may stop training
            self.failed = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")
            logger.warning("tb-mindspore sharpness stopped at step %d: %s", step, self.failed)

    def on_train_end(self, run_context):
        if self._writer is not None and self._own_writer:
            self._writer.close()
            self._writer = None
