"""Loss landscapes computed on real MindSpore networks: filter-normalized directions, a convex problem with a known
loss, PCA of a trajectory in a known plane, interpolation, checkpoints, exact restoration (training continues bit
for bit, in a fresh process per run), and Ctrl-C keeping what is finished."""

import json
import os
import signal
import sys

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402
import mindspore.dataset as ds  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_mindspore_callbacks import (  # noqa: E402
    LandscapeCallback, LandscapeInterrupted, MonitoredTrainCell, compute_landscape, interpolate,
    landscape_from_checkpoint,
)
from tb_mindspore_callbacks.landscape import EvalData  # noqa: E402
import warm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
QUIET = {"log": None, "progress": False}


def read_landscapes(logdir):
    """{tag: [(step, record)]} from every event file under ``logdir``."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    ea = EventAccumulator(str(logdir), size_guidance={"tensors": 0})
    ea.Reload()
    out = {}
    for tag in ea.Tags()["tensors"]:
        for e in ea.Tensors(tag):
            text = tensor_util.make_ndarray(e.tensor_proto).reshape(-1)[0]
            out.setdefault(tag, []).append((e.step, json.loads(text.decode("utf-8"))))
    return out


def params_of(net):
    return {p.name: p.asnumpy().copy() for p in net.get_parameters()}


def assert_same_params(before, net):
    after = params_of(net)
    assert before.keys() == after.keys()
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


# ---------------------------------------------------------------------------------------------------------------
# A convex toy problem: linear regression with MSE, parameters at the least-squares solution.

def regression(seed=0, n=64):
    rs = np.random.RandomState(seed)
    x = rs.randn(n, 3).astype(np.float32)
    y = (x @ np.array([[1.5], [-2.0], [0.5]]) + 0.3 + 0.1 * rs.randn(n, 1)).astype(np.float32)
    design = np.hstack([x.astype(np.float64), np.ones((n, 1))])
    sol = np.linalg.lstsq(design, y.astype(np.float64), rcond=None)[0]
    net = nn.Dense(3, 1)
    net.weight.set_data(Tensor(sol[:3].T.astype(np.float32)))
    net.bias.set_data(Tensor(sol[3].astype(np.float32)))
    return net, x, y


def mse(x, y, w, b):
    pred = x.astype(np.float64) @ np.asarray(w, np.float64).T + np.asarray(b, np.float64)
    return float(np.mean((pred - y) ** 2))


@pytest.mark.slow
def test_convex_toy_minimum_at_the_centre_and_grid_equals_the_analytic_loss(mode, tmp_path):
    net, x, y = regression()
    before = params_of(net)
    w0, b0 = net.weight.asnumpy(), net.bias.asnumpy()
    result = compute_landscape(nn.WithLossCell(net, nn.MSELoss()), (x, y), grid=11, extent=1.0, bias_bn="include",
                               logdir=tmp_path, tag="landscape/toy", step=7, **QUIET)
    assert result.complete and result.points_done == 121 and result.z.shape == (11, 11)
    assert np.unravel_index(np.nanargmin(result.z), result.z.shape) == (5, 5)
    assert result.center_loss == pytest.approx(mse(x, y, w0, b0), rel=1e-5)
    names = result.names
    d1 = dict(zip(names, result.directions[0]))
    d2 = dict(zip(names, result.directions[1]))
    wn, bn = net.weight.name, net.bias.name
    # "include": the direction of the 1-D bias is the bias itself (Li et al.'s reference code).
    np.testing.assert_array_equal(d1[bn], b0)
    for j, b in enumerate(result.y):
        for i, a in enumerate(result.x):
            w = w0 + np.float32(b) * d2[wn] + np.float32(a) * d1[wn]
            bias = b0 + np.float32(b) * d2[bn] + np.float32(a) * d1[bn]
            assert result.z[j, i] == pytest.approx(mse(x, y, w, bias), rel=2e-5, abs=1e-6), (i, j)
    # Convex: second differences along both axes are >= 0.
    assert (np.diff(result.z, 2, axis=1) > -1e-6).all() and (np.diff(result.z, 2, axis=0) > -1e-6).all()
    assert_same_params(before, net)
    written = read_landscapes(tmp_path)["landscape/toy"]
    assert [s for s, _ in written] == [7]
    rec = written[0][1]
    np.testing.assert_allclose(np.array(rec["landscape"]["z"]), result.z)
    md = rec["metadata"]
    assert md["method"] == "random" and md["complete"] is True and md["grid"] == [11, 11]
    assert md["normalization"] == "filter" and md["bias_bn"] == "include" and md["num_samples"] == 64
    assert rec["convergence_point"]["z"][0] == pytest.approx(result.center_loss)
    assert ms.get_context("mode") == (ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)


def conv_net():
    ms.set_seed(1)
    return nn.SequentialCell(nn.Conv2d(2, 4, 3, has_bias=True), nn.BatchNorm2d(4), nn.ReLU(), nn.Flatten(),
                             nn.Dense(4 * 5 * 5, 3), nn.LayerNorm((3,)))


@pytest.mark.parametrize("bias_bn", ["ignore", "include"])
def test_directions_are_filter_normalized_on_a_real_network(bias_bn):
    net = conv_net()
    rs = np.random.RandomState(0)
    x = rs.randn(24, 2, 5, 5).astype(np.float32)
    y = rs.randint(0, 3, 24).astype(np.int32)
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(4)
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    net.set_train(True)
    before = params_of(net)
    result = compute_landscape(loss_net, data, grid=2, seed=5, bias_bn=bias_bn, **QUIET)
    # "A few batches" of the dataset: 4 batches of 4.
    assert result.record["metadata"]["num_samples"] == 16
    weights = {p.name: p.asnumpy() for p in net.trainable_params()}
    checked = 0
    for direction in result.directions:
        for name, d in zip(result.names, direction):
            w = weights[name]
            assert d.shape == w.shape
            if w.ndim <= 1:   # biases, BatchNorm and LayerNorm gamma / beta
                np.testing.assert_array_equal(d, np.zeros_like(w) if bias_bn == "ignore" else w)
            else:             # conv filters (out, in, kh, kw), dense rows (out, in): one norm per output unit
                dn = np.linalg.norm(d.reshape(d.shape[0], -1).astype(np.float64), axis=1)
                wn = np.linalg.norm(w.reshape(w.shape[0], -1).astype(np.float64), axis=1)
                np.testing.assert_allclose(dn, wn, rtol=1e-5)
                checked += 1
    assert checked == 4
    assert not np.allclose(result.directions[0][0], result.directions[1][0])
    assert_same_params(before, net)
    # Eval mode during the landscape, train mode (as before) afterwards.
    assert all(c.training for _, c in net.cells_and_names())


def test_pca_path_projection_reproduces_known_points(tmp_path):
    net, x, y = regression(seed=1)
    w0, b0 = net.weight.asnumpy(), net.bias.asnumpy()
    final = np.concatenate([w0.ravel(), b0.ravel()]).astype(np.float64)
    q, _ = np.linalg.qr(np.random.RandomState(2).randn(4, 2))
    u, v = q[:, 0], q[:, 1]
    a = np.linspace(-1.2, -0.15, 8)
    b = 0.3 * np.sin(np.linspace(0, np.pi, 8)) - 0.2     # uncorrelated with a
    snaps = (final + a[:, None] * u + b[:, None] * v).astype(np.float32)
    steps = list(range(0, 80, 10))
    loss_net = nn.WithLossCell(net, nn.MSELoss())
    result = compute_landscape(loss_net, (x, y), "pca", trajectory=(steps, snaps), bias_bn="include", grid=9,
                               logdir=tmp_path, step=80, **QUIET)
    path = result.path
    assert path["steps"] == steps + [80]
    np.testing.assert_allclose(path["x"][:-1], a, atol=2e-5)
    np.testing.assert_allclose(path["y"][:-1], b, atol=2e-5)
    assert (path["x"][-1], path["y"][-1]) == (0.0, 0.0)
    # The snapshots lie in the plane, so the path's losses are the losses of the snapshots themselves.
    for k in range(len(a)):
        theta = snaps[k].astype(np.float64)
        assert path["z"][k] == pytest.approx(mse(x, y, theta[:3][None, :], theta[3:]), rel=1e-4)
    md = result.record["metadata"]
    assert sum(md["explained_variance_ratio"]) == pytest.approx(1.0, abs=1e-6)
    assert max(md["path_residual"]) < 1e-4 and md["snapshots"] == 8
    ext = md["extent"]
    assert ext[0] < a.min() and ext[1] > 0 and ext[2] < b.min() and ext[3] > 0
    rec = read_landscapes(tmp_path)["landscape/pca"][0][1]
    assert rec["loss_path"]["intervals"] == steps + [80] and rec["metadata"]["decomposition"] == "PCA"


def test_interpolation_between_two_parameter_sets(tmp_path):
    net, x, y = regression(seed=3)
    w0, b0 = net.weight.asnumpy(), net.bias.asnumpy()
    zeros = [np.zeros_like(w0), np.zeros_like(b0)]
    result = interpolate(nn.WithLossCell(net, nn.MSELoss()), (x, y), params_a=zeros, logdir=tmp_path, **QUIET)
    alphas = result.x
    assert len(alphas) == 41 and alphas[0] == -0.5 and alphas[-1] == 1.5
    at = {round(float(al), 6): z for al, z in zip(alphas, result.z[0])}
    assert at[0.0] == pytest.approx(float(np.mean(y.astype(np.float64) ** 2)), rel=1e-5)
    assert at[1.0] == pytest.approx(mse(x, y, w0, b0), rel=1e-5)
    assert np.nanargmin(result.z[0]) == int(np.where(np.isclose(alphas, 1.0))[0][0])
    for al, z in zip(alphas, result.z[0]):
        assert z == pytest.approx(mse(x, y, np.float32(al) * w0, np.float32(al) * b0), rel=1e-4)
    rec = read_landscapes(tmp_path)["landscape/interpolation"][0][1]
    assert rec["metadata"]["dims"] == 1 and rec["landscape"]["y"] == [0.0]
    assert rec["loss_path"]["x"] == [0.0, 1.0]


def test_interrupt_keeps_the_finished_rows_and_restores_everything(tmp_path):
    net, x, y = regression(seed=4)
    before = params_of(net)
    handler = signal.getsignal(signal.SIGINT)
    nx = 9

    def stop(index, a, b, loss):
        if index == 2 * nx + 3:
            raise KeyboardInterrupt

    with pytest.raises(LandscapeInterrupted) as info:
        compute_landscape(nn.WithLossCell(net, nn.MSELoss()), (x, y), grid=nx, logdir=tmp_path, on_point=stop,
                          **QUIET)
    result = info.value.result
    assert isinstance(info.value, KeyboardInterrupt)
    assert not result.complete and result.rows_done == 2 and result.points_done == 2 * nx + 4
    assert np.isfinite(result.z[:2]).all() and np.isfinite(result.z[2, :4]).all()
    assert np.isnan(result.z[2, 4:]).all() and np.isnan(result.z[3:]).all()
    assert_same_params(before, net)
    assert signal.getsignal(signal.SIGINT) is handler
    rec = read_landscapes(tmp_path)["landscape/random"][0][1]
    md = rec["metadata"]
    assert md["complete"] is False and md["rows_done"] == 2 and md["points_done"] == 2 * nx + 4
    z = rec["landscape"]["z"]
    assert all(v is not None for row in z[:2] for v in row) and z[3] == [None] * nx


@pytest.mark.slow
def test_ctrl_c_during_a_graph_call_stops_cleanly(tmp_path):
    """A real SIGINT while the compiled graph runs (MindSpore turns it into SIGTERM for the process)."""
    out = tmp_path / "out.npz"
    proc = warm.run([sys.executable, os.path.join(HERE, "landscape_child.py"), str(out), "graph", "sigint",
                     str(tmp_path / "logs")], capture_output=True, text=True, timeout=300,
                    env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "INTERRUPTED" in proc.stdout and "RESTORED" in proc.stdout and "SIGINT handler: True" in proc.stdout
    rec = read_landscapes(tmp_path / "logs")["landscape/random"][0][1]
    md = rec["metadata"]
    assert md["complete"] is False and 0 < md["points_done"] < 41 * 41
    z = np.array([[np.nan if v is None else v for v in row] for row in rec["landscape"]["z"]])
    assert np.isfinite(z).sum() == md["points_done"]


def _child(tmp_path, name, mode, with_landscape):
    out = tmp_path / ("%s.npz" % name)
    proc = warm.run([sys.executable, os.path.join(HERE, "landscape_child.py"), str(out), mode,
                     with_landscape, str(tmp_path / ("logs_" + name))], capture_output=True, text=True,
                    timeout=300, env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return np.load(out)


@pytest.mark.parametrize("train_mode", ["graph", "pynative"])
@pytest.mark.slow
def test_training_continues_bit_identically_after_landscapes(tmp_path, train_mode):
    without = _child(tmp_path, "without", train_mode, "0")
    with_ = _child(tmp_path, "with", train_mode, "1")
    assert set(without.files) == set(with_.files)
    for name in without.files:
        np.testing.assert_array_equal(without[name], with_[name], err_msg=name)
    got = read_landscapes(tmp_path / "logs_with")
    assert sorted(got) == ["landscape/interpolation", "landscape/pca", "landscape/random"]
    for tag, items in got.items():
        assert [s for s, _ in items] == [4, 8, 12], tag
        assert all(r["metadata"]["complete"] for _, r in items)
    pca = got["landscape/pca"][-1][1]
    assert pca["metadata"]["snapshots"] >= 3 and len(pca["loss_path"]["x"]) == pca["metadata"]["snapshots"] + 1
    inter = got["landscape/interpolation"][-1][1]
    assert inter["metadata"]["endpoints"]["a"] == "start of training (step 0)"


def test_callback_in_model_train_with_monitored_train_cell(tmp_path):
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    x = rs.randn(32, 4).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int32)
    net = nn.SequentialCell(nn.Dense(4, 8), nn.ReLU(), nn.Dense(8, 2))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, nn.Momentum(net.trainable_params(), 0.1, 0.9)))
    messages = []
    cb = LandscapeCallback(tmp_path, (x, y), grid=3, log=messages.append, progress=False)
    model.train(2, ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8), callbacks=[cb],
                dataset_sink_mode=False)
    got = read_landscapes(tmp_path)
    assert [s for s, _ in got["landscape/random"]] == [8]
    assert any("sample evaluations" in m and "about" in m for m in messages), messages
    centre = got["landscape/random"][0][1]["convergence_point"]["z"][0]
    ev = EvalData.take((x, y))
    logits = net(Tensor(ev.columns[0])).asnumpy().astype(np.float64)
    logp = logits - np.log(np.exp(logits).sum(axis=1, keepdims=True))
    assert centre == pytest.approx(float(-logp[np.arange(len(y)), y].mean()), rel=1e-4)


def test_landscape_from_a_checkpoint_leaves_the_network_as_it_was(tmp_path):
    net, x, y = regression(seed=5)
    ckpt = str(tmp_path / "best.ckpt")
    ms.save_checkpoint(net, ckpt, append_dict={"global_step": 42})
    best = mse(x, y, net.weight.asnumpy(), net.bias.asnumpy())
    net.weight.set_data(Tensor(np.ones((1, 3), np.float32)))
    before = params_of(net)
    result = landscape_from_checkpoint(ckpt, net, (x, y), logdir=tmp_path / "logs", loss_fn=nn.MSELoss(), grid=5,
                                       **QUIET)
    assert result.center_loss == pytest.approx(best, rel=1e-5)
    assert np.nanargmin(result.z) == 12
    assert_same_params(before, net)
    got = read_landscapes(tmp_path / "logs")
    assert [s for s, _ in got["landscape/random"]] == [42]


def test_ctrl_c_in_the_callback_writes_the_finished_part_and_stops_training(tmp_path):
    net, x, y = regression(seed=6)
    model = Model(net, nn.MSELoss(), nn.Momentum(net.trainable_params(), 0.01, 0.9))
    steps = []

    class Steps(ms.train.Callback):
        def on_train_step_end(self, run_context):
            steps.append(run_context.original_args().cur_step_num)

    def stop(index, a, b, loss):
        if index == 7:
            raise KeyboardInterrupt

    cb = LandscapeCallback(tmp_path, (x, y), every_epochs=1, grid=5, on_point=stop, **QUIET)
    with pytest.raises(LandscapeInterrupted):
        model.train(3, ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(16), callbacks=[Steps(), cb],
                    dataset_sink_mode=False)
    assert steps == [1, 2, 3, 4]      # stopped at the end of the first epoch
    assert cb._writer is None          # closed, so the partial landscape is on disk
    rec = read_landscapes(tmp_path)["landscape/random"]
    assert [s for s, _ in rec] == [4] and rec[0][1]["metadata"]["points_done"] == 8


# ---------------------------------------------------------------------------------------------------------------
# Every setting is checked at construction (a typo must not cost an epoch of training).

XY = (np.zeros((4, 3), np.float32), np.zeros((4, 1), np.float32))


@pytest.mark.parametrize("kwargs, error, message", [
    ({"norm": "filtre"}, ValueError, "norm must be one of filter, layer, none, got 'filtre'"),
    ({"bias_bn": "exclude"}, ValueError, "bias_bn must be one of ignore, include, got 'exclude'"),
    ({"extent": 0}, ValueError, "extent must be a number, (ex, ey) or (xmin, xmax, ymin, ymax) with min < max, got 0"),
    ({"extent": "wide"}, ValueError, "extent must be a number, (ex, ey) or (xmin, xmax, ymin, ymax), got 'wide'"),
    ({"extent": (1, 2, 3)}, ValueError, "extent must be a number, (ex, ey) or (xmin, xmax, ymin, ymax) with min"),
    ({"pca_extent": "big"}, ValueError, 'pca_extent must be a number, (ex, ey) or (xmin, xmax, ymin, ymax) or "auto"'),
    ({"grid": 1}, ValueError, "grid must be 2..1024 points per axis, got 1"),
    ({"grid": "21"}, ValueError, "grid must be an int or a pair of ints, got '21'"),
    ({"seed": -1}, ValueError, "seed must be an int >= 0, got -1"),
    ({"alphas": [0.5]}, ValueError, "alphas must be a 1-D sequence of at least 2 finite numbers, got [0.5]"),
    ({"num_samples": 0}, ValueError, "num_samples must be None or an int >= 1, got 0"),
    ({"num_batches": 2.5}, ValueError, "num_batches must be None or an int >= 1, got 2.5"),
    ({"eval_batch_size": True}, ValueError, "eval_batch_size must be None or an int >= 1, got True"),
    ({"log": "stdout"}, TypeError, "log must be None or a callable, got str"),
    ({"on_point": 3}, TypeError, "on_point must be None or a callable, got int"),
    ({"progress": "yes"}, ValueError, "progress must be True or False, got 'yes'"),
    ({"grd": 21}, TypeError, "unknown landscape setting(s): grd (known: grid, extent"),
    ({"methods": ("random", "pcaa")}, ValueError, "methods must be a non-empty subset of random, pca, interpolation"),
    ({"every_epochs": 0}, ValueError, "every_epochs must be None or an int >= 1, got 0"),
    ({"at_end": False}, ValueError, "every_epochs=None with at_end=False would never compute a landscape"),
    ({"max_snapshots": 2}, ValueError, "max_snapshots must be an int >= 3, got 2"),
    ({"snapshot_every": 0}, ValueError, "stride must be an int >= 1, got 0"),
    ({"tag_prefix": ""}, ValueError, "tag_prefix must be a non-empty string, got ''"),
    ({"loss_network": "net"}, TypeError, "loss_network must be a mindspore.nn.Cell, got str"),
    ({"eval_data": {"x": 1}}, TypeError, "eval_data must be a MindSpore dataset, a tuple of numpy column arrays"),
    ({"settings": {"grid": 5}}, TypeError, "settings must be a LandscapeSettings, got dict"),
])
def test_callback_rejects_bad_settings_at_construction(tmp_path, kwargs, error, message):
    kwargs = dict(kwargs)
    eval_data = kwargs.pop("eval_data", XY)
    with pytest.raises(error) as info:
        LandscapeCallback(str(tmp_path), eval_data, **kwargs)
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)
    assert not any(tmp_path.iterdir())   # nothing written


def test_settings_object_is_shared_and_keywords_replace_its_fields(tmp_path):
    from tb_mindspore_callbacks.landscape import LandscapeSettings

    base = LandscapeSettings(grid=(5, 3), norm="layer", log=None, progress=False)
    cb = LandscapeCallback(str(tmp_path), XY, settings=base, seed=3)
    assert (cb.settings.grid, cb.settings.norm, cb.settings.seed) == ((5, 3), "layer", 3)
    assert base.seed == 0   # frozen: the shared object is not changed
    net, x, y = regression()
    with pytest.raises(ValueError, match="norm must be one of filter, layer, none, got 'l2'"):
        compute_landscape(nn.WithLossCell(net, nn.MSELoss()), (x, y), norm="l2", **QUIET)
    with pytest.raises(ValueError, match="method must be one of random, pca, interpolation, got 'hessian'"):
        compute_landscape(nn.WithLossCell(net, nn.MSELoss()), (x, y), method="hessian", **QUIET)
    result = compute_landscape(nn.WithLossCell(net, nn.MSELoss()), (x, y), settings=base, **QUIET)
    assert result.z.shape == (3, 5) and result.record["metadata"]["normalization"] == "layer"
