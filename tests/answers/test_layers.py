"""The ``layers`` route (per-layer heatmaps) and the layer entries of ``tags``, through TensorBoard's own app on
real event files, with both loaders."""

import gzip
import math

import numpy as np
import pytest

from dashboard_data import (FAMILY_PARAMS, HOSTILE, RATIO_LAYERS, STEPS, T0, family_value, ratio_value,
                            wait_until, weight_norm_value, write_layer_runs)
from tb_harness import App
from tb_plugin_mindspore.answers import encode

BF16_REL = 2 ** -8   # bfloat16 keeps 8 significant bits: relative error <= 2^-8


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("layers") / "logs"
    root.mkdir()
    write_layer_runs(root)
    return root


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, logdir):
    a = App(logdir, load_fast=request.param)
    a.wait_for_runs(["alpha", "beta"])
    wait_until(lambda: a.plugin("/layers", run="alpha", tag="debug/update_ratio")["total_steps"] == STEPS,
               what="all steps of alpha")
    wait_until(lambda: a.plugin("/layers", run="beta", tag="debug/update_ratio")["total_steps"] == 10,
               what="all steps of beta")
    yield a
    a.close()


def decode(body):
    assert body["encoding"] == "bf16-planes"
    values, missing = encode.decode_bf16_planes_b64(body["values"], body["shape"])
    return values, missing


def assert_close(got, expected):
    if math.isnan(expected):
        assert math.isnan(got)
    elif math.isinf(expected) or expected == 0:
        assert got == expected
    else:
        assert abs(got - expected) <= BF16_REL * abs(expected), (got, expected)


def test_tags_list_layer_series(app):
    runs = app.plugin("/tags")["runs"]
    debug = {e["tag"]: e for e in runs["alpha"]["debug"]}
    ratio = debug["debug/update_ratio"]
    assert ratio == {"tag": "debug/update_ratio", "display_name": "update_ratio", "kind": "layers",
                     "source": "vector", "layers": 4}
    assert debug["local_norm/*"] == {"tag": "local_norm/*", "display_name": "local_norm", "kind": "layers",
                                     "source": "family", "layers": 3}
    diag = {e["tag"]: e for e in runs["alpha"]["diagnostic"]}
    assert diag["diagnostic/layer_weight_norm"]["kind"] == "layers"
    # the family's member scalars are still listed (as before), marked with their family
    member = debug["local_norm/" + FAMILY_PARAMS[0]]
    assert member == {"tag": "local_norm/" + FAMILY_PARAMS[0], "display_name": "local_norm/" + FAMILY_PARAMS[0],
                      "kind": "scalar", "interval": False, "family": "local_norm/*"}
    core = {e["tag"]: e for e in runs["alpha"]["core"]}
    assert core["core/loss"] == {"tag": "core/loss", "display_name": "loss", "kind": "scalar", "interval": False}
    assert [e["tag"] for e in runs["beta"]["debug"]] == ["debug/update_ratio"]


def test_update_ratio_matrix(app):
    body = app.plugin("/layers", run="alpha", tag="debug/update_ratio")
    assert body["run"] == "alpha" and body["tier"] == "debug" and body["display_name"] == "update_ratio"
    assert body["source"] == "vector" and body["scale"] == "ratio"
    assert body["layers"] == RATIO_LAYERS   # the hostile name comes back exactly as written
    assert body["steps"] == list(range(1, STEPS + 1))
    assert body["wall_times"] == pytest.approx([T0 + s for s in range(1, STEPS + 1)])
    assert body["shape"] == [4, STEPS] and body["total_steps"] == STEPS and body["downsampled"] is False
    values, missing = decode(body)
    assert not missing.any()
    for i in range(4):
        for j, step in enumerate(body["steps"]):
            assert_close(float(values[i, j]), ratio_value(i, step))
    assert body["summary"]["nonfinite"] == 2 and body["summary"]["missing"] == 0
    assert body["summary"]["finite_min"] == 0.0
    assert body["summary"]["finite_max"] == pytest.approx(ratio_value(2, STEPS), rel=1e-6)


def test_weight_norm_and_signed_vectors_pick_their_scale(app):
    wn = app.plugin("/layers", run="alpha", tag="diagnostic/layer_weight_norm")
    assert wn["scale"] == "log" and wn["layers"] == RATIO_LAYERS[:3]
    values, _ = decode(wn)
    assert_close(float(values[2, 4]), weight_norm_value(2, 5))
    centered = app.plugin("/layers", run="alpha", tag="debug/centered")
    assert centered["scale"] == "linear"
    values, _ = decode(centered)
    assert values[0, 9] == -10.0 and values[1, 9] == 2.0


def test_columns_merge_in_buckets_and_keep_non_finite(app):
    body = app.plugin("/layers", run="alpha", tag="debug/update_ratio", max_steps=7)
    # 40 steps into buckets of ceil(40 / 7) = 6 steps: 7 columns, each labelled with its last step
    assert body["downsampled"] is True and body["total_steps"] == STEPS
    assert body["steps"] == [6, 12, 18, 24, 30, 36, 40]
    assert body["shape"] == [4, 7]
    values, _ = decode(body)
    mean0 = np.mean([ratio_value(0, s) for s in range(1, 7)])
    assert_close(float(values[0, 0]), mean0)
    # layer 1: the NaN at step 7 and the +Inf at step 9 are in bucket 1 (steps 7-12): the first one (NaN) wins
    assert math.isnan(values[1, 1])
    assert_close(float(values[1, 0]), np.mean([ratio_value(1, s) for s in range(1, 7)]))
    assert values[3].tolist() == [0.0] * 7


def test_family_of_scalar_tags(app):
    body = app.plugin("/layers", run="alpha", tag="local_norm/*")
    assert body["source"] == "family" and body["scale"] == "log" and body["display_name"] == "local_norm"
    assert body["layers"] == sorted(FAMILY_PARAMS)
    assert body["members"] == ["local_norm/" + p for p in sorted(FAMILY_PARAMS)]
    values, missing = decode(body)
    order = [FAMILY_PARAMS.index(p) for p in body["layers"]]
    for row, p in enumerate(order):
        for j, step in enumerate(body["steps"]):
            if p == 2 and step % 2:
                assert missing[row, j]          # not written at odd steps: missing, not NaN
            else:
                assert not missing[row, j]
                assert_close(float(values[row, j]), family_value(p, step))
    assert body["summary"]["missing"] == STEPS // 2 and body["summary"]["nonfinite"] == 0


def test_one_layer_at_full_precision(app):
    body = app.plugin("/layers", run="alpha", tag="debug/update_ratio", layer=RATIO_LAYERS[1])
    assert body["layer"] == RATIO_LAYERS[1]
    by_step = {p[0]: p[2] for p in body["points"]}
    assert len(by_step) == STEPS
    assert by_step[7] == "NaN" and by_step[9] == "Infinity"
    assert by_step[20] == pytest.approx(ratio_value(1, 20), rel=1e-7)   # float32 exact
    hostile = app.plugin("/layers", run="alpha", tag="debug/update_ratio", layer=HOSTILE)
    assert {p[2] for p in hostile["points"]} == {0.0}
    fam = app.plugin("/layers", run="alpha", tag="local_norm/*", layer=FAMILY_PARAMS[2])
    assert [p[0] for p in fam["points"]] == list(range(2, STEPS + 1, 2))   # only the steps it was written at


def test_second_run_for_side_by_side(app):
    body = app.plugin("/layers", run="beta", tag="debug/update_ratio")
    assert body["layers"] == ["encoder.0.attn.weight", "head.weight"] and body["shape"] == [2, 10]


def test_errors(app):
    assert app.plugin("/layers", expect=404, run="nope", tag="debug/update_ratio")["error"]["code"] == 404
    assert "no per-layer series" in app.plugin("/layers", expect=404, run="alpha", tag="nope")["error"]["message"]
    # a scalar tag or an interval are not per-layer series
    app.plugin("/layers", expect=404, run="alpha", tag="core/loss")
    app.plugin("/layers", expect=404, run="alpha", tag="adam_m_norm/*")
    app.plugin("/layers", expect=404, run="alpha", tag="debug/update_ratio", layer="no.such.layer")
    app.plugin("/layers", expect=400, run="alpha")
    app.plugin("/layers", expect=400, run="alpha", tag="debug/update_ratio", max_steps="0")
    app.plugin("/layers", expect=400, run="alpha", tag="debug/update_ratio", max_steps="x")


def test_answer_is_gzipped_when_accepted(app):
    resp = app.client.get("/data/plugin/mindspore/layers", query_string={"run": "alpha", "tag": "debug/update_ratio"},
                          headers={"Accept-Encoding": "gzip"})
    assert resp.status_code == 200 and resp.headers["Content-Encoding"] == "gzip"
    assert b'"encoding":"bf16-planes"' in gzip.decompress(resp.get_data())


def test_new_steps_show_up(tmp_path):
    """The cached answer is replaced once the run has new data."""
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    run = tmp_path / "live"
    w = SummaryWriter(str(run), flush_secs=0.1)
    try:
        for step in range(1, 4):
            w.layers("debug/update_ratio", ["a", "b"], [1e-3, 2e-3], step)
        w.flush()
        a = App(tmp_path)
        try:
            a.wait_for_runs(["live"])
            wait_until(lambda: a.plugin("/layers", run="live", tag="debug/update_ratio")["total_steps"] == 3)
            for step in range(4, 8):
                w.layers("debug/update_ratio", ["a", "b"], [1e-3, 2e-3], step)
            w.flush()
            body = wait_until(lambda: (lambda b: b if b["total_steps"] == 7 else None)(
                a.plugin("/layers", run="live", tag="debug/update_ratio")), what="the new steps")
            assert body["steps"] == list(range(1, 8))
        finally:
            a.close()
    finally:
        w.close()


@pytest.mark.slow
def test_real_mindspore_training_debug_tier(tmp_path):
    """TrainMonitor(debug="all") on a real tiny MindSpore training: the per-layer series and activation histograms
    it writes are listed and served (update ratio, gradient and weight norms per layer, distributions)."""
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Model

    from ms_training import tiny_dataset
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
    monitor = TrainMonitor(str(tmp_path / "debug_run"), collect_freq=4, debug="all", debug_freq=2, diagnostic_freq=4)
    model.train(3, tiny_dataset(), callbacks=[monitor], dataset_sink_mode=False)   # 24 steps
    weights = [p.name for p in net.trainable_params() if len(p.shape) >= 2]

    a = App(tmp_path)
    try:
        a.wait_for_runs(["debug_run"])
        tiers = wait_until(lambda: (lambda t: t if any(e["kind"] == "layers" for e in t["debug"]) else None)(
            a.plugin("/tags")["runs"]["debug_run"]), what="the debug tier")
        debug = {e["tag"]: e for e in tiers["debug"]}
        assert debug["debug/update_ratio"]["kind"] == "layers" and debug["debug/update_ratio"]["layers"] == len(weights)
        assert debug["debug/layer_grad_norm"]["kind"] == "layers"
        assert any(t.startswith("debug/activation/") and e["kind"] == "histogram" for t, e in debug.items())
        assert {e["tag"]: e for e in tiers["diagnostic"]}["diagnostic/layer_weight_norm"]["kind"] == "layers"

        ratio = a.plugin("/layers", run="debug_run", tag="debug/update_ratio")
        assert ratio["layers"] == weights and ratio["scale"] == "ratio"
        assert ratio["steps"] == list(range(2, 25, 2))
        values, missing = decode(ratio)
        assert not missing.any() and np.all(np.isfinite(values)) and np.all(values > 0) and np.all(values < 1)
        grad = a.plugin("/layers", run="debug_run", tag="debug/layer_grad_norm")
        assert grad["scale"] == "log" and grad["shape"][0] == len(weights)
        wn = a.plugin("/layers", run="debug_run", tag="diagnostic/layer_weight_norm")
        assert np.all(decode(wn)[0] > 0)
        act = sorted(t for t in debug if t.startswith("debug/activation/"))[0]
        bands = a.plugin("/histograms", run="debug_run", tag=act)
        assert bands["rows"] and all(r[2] > 0 for r in bands["rows"])
        assert all(r[3] <= r[7] <= r[11] for r in bands["rows"])   # min <= median <= max
    finally:
        a.close()
