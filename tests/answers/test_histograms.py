"""The ``histograms`` route (distributions over time as quantile bands), through TensorBoard's own app on real event
files (ours and TensorBoard's own histogram summaries), with both loaders."""

import math

import numpy as np
import pytest

from dashboard_data import STEPS, T0, wait_until, write_layer_runs
from tb_harness import App
from tb_plugin_mindspore.answers import histograms

QUANTILES = [0.0, 0.0668, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9332, 1.0]
HIST_STEPS = list(range(4, STEPS + 1, 4))


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("hist") / "logs"
    root.mkdir()
    write_layer_runs(root)
    return root


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, logdir):
    a = App(logdir, load_fast=request.param)
    a.wait_for_runs(["alpha"])
    wait_until(lambda: a.plugin("/histograms", run="alpha", tag="debug/activation/encoder.0")["total_steps"]
               == len(HIST_STEPS), what="all histogram steps")
    yield a
    a.close()


def test_tags_list_histograms(app):
    runs = app.plugin("/tags")["runs"]
    debug = {e["tag"]: e for e in runs["alpha"]["debug"]}
    assert debug["debug/activation/encoder.0"] == {"tag": "debug/activation/encoder.0",
                                                   "display_name": "activation/encoder.0", "kind": "histogram"}
    diag = {e["tag"]: e for e in runs["alpha"]["diagnostic"]}
    assert diag["weights/stock"]["kind"] == "histogram"


def test_quantile_bands_of_a_normal_distribution(app):
    body = app.plugin("/histograms", run="alpha", tag="debug/activation/encoder.0")
    assert body["quantiles"] == QUANTILES and body["tier"] == "debug"
    assert body["downsampled"] is False
    assert [r[0] for r in body["rows"]] == HIST_STEPS
    for row in body["rows"]:
        step, wall, count, qs = row[0], row[1], row[2], row[3:]
        assert wall == pytest.approx(T0 + step) and count == 4000
        assert qs == sorted(qs)
        samples = np.random.default_rng(step).normal(step, 1.0, 4000)
        assert qs[0] == pytest.approx(samples.min()) and qs[-1] == pytest.approx(samples.max())
        width = (samples.max() - samples.min()) / 30   # one bucket of the 30 written
        for q, got in zip(QUANTILES[1:-1], qs[1:-1]):
            assert abs(got - np.quantile(samples, q)) <= width, (step, q)
        assert qs[4] == pytest.approx(step, abs=0.1)   # the median of normal(step, 1)


def test_stock_tensorboard_histograms(app):
    body = app.plugin("/histograms", run="alpha", tag="weights/stock")
    first = body["rows"][0]
    assert first[0] == 4 and first[2] == 100
    # values 4..103 in 10 equal buckets: min 4, max 103, median ~ 53.5
    assert first[3] == pytest.approx(4.0) and first[-1] == pytest.approx(103.0)
    assert first[7] == pytest.approx(53.5, abs=10.0)


def test_empty_histogram_has_nan_quantiles(app):
    body = app.plugin("/histograms", run="alpha", tag="debug/activation/empty")
    for row in body["rows"]:
        assert row[2] == 0 and row[3:] == ["NaN"] * 9


def test_max_steps_keeps_first_and_last(app):
    body = app.plugin("/histograms", run="alpha", tag="debug/activation/encoder.0", max_steps=3)
    assert body["downsampled"] is True and body["total_steps"] == len(HIST_STEPS)
    assert [r[0] for r in body["rows"]] == [4, 20, 40]


def test_errors(app):
    app.plugin("/histograms", expect=404, run="nope", tag="debug/activation/encoder.0")
    assert "no histogram" in app.plugin("/histograms", expect=404, run="alpha", tag="core/loss")["error"]["message"]
    app.plugin("/histograms", expect=400, run="alpha")
    app.plugin("/histograms", expect=400, run="alpha", tag="weights/stock", max_steps="-1")


def test_quantiles_function_edges():
    qs, total = histograms.quantiles([[0.0, 1.0, 0.0], [1.0, 2.0, 10.0], [2.0, 3.0, 0.0]])
    assert total == 10 and qs[0] == 1.0 and qs[-1] == 2.0 and qs[4] == pytest.approx(1.5)
    qs, total = histograms.quantiles(np.zeros((0, 3)))
    assert total == 0 and all(math.isnan(q) for q in qs)
    qs, _ = histograms.quantiles([[5.0, 5.0, 3.0]])     # a constant tensor: one zero-width bucket
    assert list(qs) == [5.0] * 9
