"""Sharpness on real MindSpore networks: the top Hessian eigenvalue against a dense eigendecomposition of the
explicit Hessian (numpy, from an analytic gradient), Hutchinson's trace, exact restoration of the parameters, the
callback in Model.train with SGD and Adam, and the health rule on a real too-large learning rate."""

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import nn  # noqa: E402
import mindspore.dataset as ds  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_mindspore_callbacks import SharpnessCallback, SharpnessProbe  # noqa: E402
from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.contract import vocabulary  # noqa: E402
from tb_plugin_mindspore.health import check_logdir  # noqa: E402

N, D_IN, HIDDEN, CLASSES = 32, 6, 8, 3


def mlp(seed=0):
    ms.set_seed(seed)
    return nn.SequentialCell([nn.Dense(D_IN, HIDDEN), nn.Tanh(), nn.Dense(HIDDEN, CLASSES)])


def data(seed=0):
    rs = np.random.RandomState(seed)
    return rs.randn(N, D_IN).astype(np.float32), rs.randint(0, CLASSES, N).astype(np.int32)


def numpy_hessian(net, x, y):
    """The explicit Hessian of the mean softmax cross-entropy of ``net`` (Dense-Tanh-Dense) at its parameters, by
    central differences (float64) of the analytic gradient, in ``trainable_params()`` order."""
    shapes = [tuple(p.shape) for p in net.trainable_params()]
    theta = np.concatenate([p.asnumpy().astype(np.float64).ravel() for p in net.trainable_params()])

    def grad(t):
        parts, o = [], 0
        for s in shapes:
            n = int(np.prod(s))
            parts.append(t[o:o + n].reshape(s))
            o += n
        w1, b1, w2, b2 = parts
        h = np.tanh(x @ w1.T + b1)
        z = h @ w2.T + b2
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        dz = p.copy()
        dz[np.arange(len(y)), y] -= 1
        dz /= len(y)
        dh = dz @ w2 * (1 - h ** 2)
        return np.concatenate([(dh.T @ x).ravel(), dh.sum(0), (dz.T @ h).ravel(), dz.sum(0)])

    eye = np.eye(theta.size)
    hess = np.stack([(grad(theta + 1e-5 * e) - grad(theta - 1e-5 * e)) / 2e-5 for e in eye])
    return (hess + hess.T) / 2


def test_top_eigenvalue_within_5_percent_of_dense_with_at_most_20_products(mode):
    x, y = data()
    net = mlp()
    before = [p.asnumpy().copy() for p in net.trainable_params()]
    dense = np.linalg.eigvalsh(numpy_hessian(net, x, y))
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    probe = SharpnessProbe(loss_net, (x, y), iterations=20, trace_probes=0, probe_samples=N)
    result = probe.measure(step=0)
    assert result.hvps <= 20
    assert result.hvp_mode == "forward"
    assert abs(result.sharpness / dense[-1] - 1) < 0.05, (result.sharpness, dense[-3:])
    for a, p in zip(before, net.trainable_params()):   # the parameters are restored bit for bit
        np.testing.assert_array_equal(a, p.asnumpy())
    assert ms.get_context("mode") == (ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)


def test_warm_start_and_trace():
    x, y = data(1)
    net = mlp(1)
    hess = numpy_hessian(net, x, y)
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    probe = SharpnessProbe(loss_net, (x, y), iterations=20, trace_probes=30, seed=3, probe_samples=N)
    first = probe.measure(step=1)
    # Hutchinson's standard error with 30 probes; the estimate is within 4 of them of the true trace.
    assert abs(first.trace - np.trace(hess)) < 4 * first.trace_std_error + 1e-6
    warm = SharpnessProbe(loss_net, (x, y), iterations=4, trace_probes=0, probe_samples=N)
    warm._vector = first.vector   # the previous eigenvector: 4 products are enough at the same point
    assert abs(warm.measure(step=2).sharpness / np.linalg.eigvalsh(hess)[-1] - 1) < 0.01


@pytest.mark.slow
def test_exact_products_where_mindspore_can_differentiate_twice():
    rs = np.random.RandomState(2)
    x, t = rs.randn(N, D_IN).astype(np.float32), rs.randn(N, 1).astype(np.float32)
    net = nn.Dense(D_IN, 1)
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    design = np.hstack([x.astype(np.float64), np.ones((N, 1))])
    dense_top = np.linalg.eigvalsh(2 * design.T @ design / N)[-1]    # MSE on a linear model: H = 2 X^T X / n
    for hvp in ("exact", "central", "forward"):
        result = SharpnessProbe(loss_net, (x, t), iterations=20, trace_probes=0, hvp=hvp, probe_samples=N).measure(0)
        assert result.hvp_mode == hvp
        assert abs(result.sharpness / dense_top - 1) < 2e-3, (hvp, result.sharpness, dense_top)


@pytest.mark.parametrize("kwargs, message", [
    ({"hvp": "hessian"}, "hvp must be one of forward, central, exact, auto, got 'hessian'"),
    ({"iterations": 0}, "iterations must be an int >= 1, got 0"),
    ({"trace_probes": -1}, "trace_probes must be an int >= 0, got -1"),
    ({"probe_samples": 2.5}, "probe_samples must be an int >= 1, got 2.5"),
    ({"fd_scale": 0}, "fd_scale must be a number in (0, 1), got 0"),
    ({"every": 0}, "every must be an int >= 1, got 0"),
])
def test_bad_settings_are_refused_at_construction(tmp_path, kwargs, message):
    with pytest.raises(ValueError) as info:
        SharpnessCallback(str(tmp_path), data(), **kwargs)
    assert str(info.value) == message


def read_scalars(logdir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    ea = EventAccumulator(str(logdir), size_guidance={"scalars": 0})
    ea.Reload()
    return {tag: [(e.step, e.value) for e in ea.Scalars(tag)] for tag in ea.Tags()["scalars"]}


def train(logdir, optimizer_of, lr, steps=12, every=4, seed=0, **options):
    x, y = data(seed)
    net = mlp(seed)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = optimizer_of(net.trainable_params(), lr)
    dataset = ds.NumpySlicesDataset({"x": np.tile(x, (steps, 1)), "y": np.tile(y, steps)}, shuffle=False).batch(N)
    cb = SharpnessCallback(str(logdir), (x, y), every=every, iterations=12, trace_probes=1, **options)
    Model(net, loss_fn, opt).train(1, dataset, callbacks=[cb], dataset_sink_mode=False)
    return cb, read_scalars(logdir)


@pytest.mark.slow
def test_callback_records_sgd_sharpness_against_2_over_lr(tmp_path):
    cb, scalars = train(tmp_path, lambda p, lr: nn.SGD(p, learning_rate=lr), 0.1)
    assert cb.failed is None
    assert [s for s, _ in scalars[metadata.SHARPNESS]] == [4, 8, 12]
    assert all(v == pytest.approx(20.0) for _, v in scalars[metadata.SHARPNESS_THRESHOLD])   # 2 / 0.1
    ratio = dict(scalars[metadata.SHARPNESS_RATIO])
    for step, value in scalars[metadata.SHARPNESS]:
        assert ratio[step] == pytest.approx(value / 20.0, rel=1e-5)
    assert metadata.HESSIAN_TRACE in scalars and metadata.SHARPNESS_PRECONDITIONED not in scalars
    assert vocabulary.tier_of(metadata.SHARPNESS) == metadata.DIAGNOSTIC


@pytest.mark.slow
def test_callback_records_adam_preconditioned_sharpness_against_38_over_lr(tmp_path):
    cb, scalars = train(tmp_path, lambda p, lr: nn.Adam(p, learning_rate=lr), 0.01)
    assert cb.failed is None
    assert all(v == pytest.approx(3800.0) for _, v in scalars[metadata.SHARPNESS_THRESHOLD])   # (2 + 1.8) / 0.1 / lr
    pre = dict(scalars[metadata.SHARPNESS_PRECONDITIONED])
    assert all(pre[s] / 3800.0 == pytest.approx(r, rel=1e-5) for s, r in scalars[metadata.SHARPNESS_RATIO])
    r = cb.results[-1]
    assert r.optimizer_kind == "adam" and r.preconditioned > r.sharpness   # 1 / sqrt(v) >> 1 this early


@pytest.mark.slow
def test_health_rule_fires_on_a_too_large_learning_rate_and_stays_quiet_on_a_healthy_one(tmp_path):
    x, y = data()
    top = SharpnessProbe(nn.WithLossCell(mlp(), nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")),
                         (x, y), iterations=20, trace_probes=0).measure(0).sharpness
    # Full-batch gradient descent: stable below 2 / lr (Cohen et al. 2021).
    train(tmp_path / "too_large", lambda p, lr: nn.SGD(p, learning_rate=lr), 3.0 / top, steps=8, every=2)
    train(tmp_path / "healthy", lambda p, lr: nn.SGD(p, learning_rate=lr), 0.5 / top, steps=8, every=2)
    report = check_logdir(str(tmp_path))
    by_run = {r["run"]: [f["rule"] for f in r["findings"]] for r in report["runs"]}
    assert "sharpness_above_stability" in by_run["too_large"], report
    assert "sharpness_above_stability" not in by_run["healthy"], report
    finding = next(f for r in report["runs"] if r["run"] == "too_large" for f in r["findings"]
                   if f["rule"] == "sharpness_above_stability")
    assert "stability line" in finding["message"] and "\n" not in finding["message"]


def test_sharpness_profile_is_recorded_as_a_1d_landscape_at_each_measurement(tmp_path):
    import json

    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    from tb_plugin_mindspore.landscape.format import normalize_record

    cb, _ = train(tmp_path, lambda p, lr: nn.SGD(p, learning_rate=lr), 0.1, profile_every=1)
    ea = EventAccumulator(str(tmp_path), size_guidance={"tensors": 0})
    ea.Reload()
    events = ea.Tensors("landscape/sharpness_profile")
    assert [e.step for e in events] == [4, 8, 12]
    rec = normalize_record(json.loads(tensor_util.make_ndarray(events[-1].tensor_proto).reshape(-1)[0]))
    assert rec["method"] == "profile" and rec["dims"] == 1 and rec["z"].shape == (2, 21)
    eig, rand = rec["z"]
    centre = rec["center"]["z"]
    assert eig[10] == pytest.approx(centre, rel=1e-5) and rand[10] == pytest.approx(centre, rel=1e-5)
    # Along the top eigenvector the loss curves upward more than along a random direction of the same length,
    # and its curvature at the centre matches the measured sharpness (second difference, within 10 %).
    t = rec["x"]
    h = t[11] - t[10]
    second = (eig[11] - 2 * eig[10] + eig[9]) / h ** 2
    assert second == pytest.approx(cb.results[-1].sharpness, rel=0.1)
    assert (eig[0] + eig[-1]) / 2 - centre > (rand[0] + rand[-1]) / 2 - centre
    assert rec["metadata"]["threshold"] == pytest.approx(20.0) and rec["metadata"]["lines"][0] == "top Hessian eigenvector"


@pytest.mark.slow
def test_training_goes_on_bit_identically_with_the_callback(tmp_path, mode):
    def final_params(with_callback):
        x, y = data()
        net = mlp()
        loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        opt = nn.Momentum(net.trainable_params(), 0.1, 0.9)
        dataset = ds.NumpySlicesDataset({"x": np.tile(x, (6, 1)), "y": np.tile(y, 6)}, shuffle=False).batch(N)
        cbs = [SharpnessCallback(str(tmp_path / str(with_callback)), (x, y), every=2)] if with_callback else []
        Model(net, loss_fn, opt).train(1, dataset, callbacks=cbs, dataset_sink_mode=False)
        if cbs:
            assert cbs[0].failed is None and len(cbs[0].results) == 3
            assert cbs[0].results[0].optimizer_kind == "momentum"
            assert cbs[0].results[0].threshold == pytest.approx(38.0)   # (2 + 2 * 0.9) / 0.1
        return [p.asnumpy() for p in net.trainable_params()]

    for a, b in zip(final_params(False), final_params(True)):
        np.testing.assert_array_equal(a, b)
