"""The ``compare`` route through TensorBoard's own WSGI app (Python loader): the command's answer plus the curves
the Compare section draws; bad and hostile parameters answer 400 / 404 with a message, never a regular expression
compiled from a request."""

import json

import numpy as np
import pytest

from tb_harness import App
from tb_plugin_mindspore.writing.writer import SummaryWriter

LAYERS_MS = ["fc.weight", "fc.bias", "bn.gamma", "bn.beta", "head.kernel"]
LAYERS_PT = ["fc.weight", "fc.bias", "bn.weight", "bn.bias", "head.weight"]


def write(folder, layers, apart_from=None, steps=30):
    rng = np.random.default_rng(0)
    with SummaryWriter(str(folder)) as w:
        for s in range(1, steps + 1):
            w.scalar("core/loss", 2.0 - s / 100 + 0.01 * rng.random(), s)
            w.scalar("core/learning_rate", 1e-3, s)
            ratios = 1e-3 * (1 + rng.random(len(layers)))
            if apart_from is not None and s >= apart_from:
                ratios[0] *= 2
            w.layers("debug/update_ratio", layers, ratios, s)


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare_route")
    write(root / "port", LAYERS_MS, apart_from=7)
    write(root / "reference", LAYERS_PT)
    app = App(root)
    app.wait_for_runs(["port", "reference"])
    app.wait_for_last_step("port", "core/loss", 30)
    app.wait_for_last_step("reference", "core/loss", 30)
    return app


def test_answer_and_what_the_view_draws(app):
    body = app.plugin("/compare", run="port", reference="reference", max_points=10)
    assert body["verdict"] == "part" and body["first"]["quantity"] == "update_ratio"
    assert body["first"]["step"] == 7 and body["first"]["layers"] == ["fc.weight"]
    assert body["mapping"]["unmapped_run"] == ["head.kernel"]
    loss = body["curves"]["loss"]
    assert len(loss["steps"]) <= 11 and loss["steps"][0] == 1 and loss["steps"][-1] == 30
    assert set(loss) == {"column", "steps", "run", "reference", "difference", "tolerance", "first_step"}
    (curve,) = body["layer_curves"]
    assert curve["quantity"] == "update_ratio" and curve["column"] == "fc.weight" and 7 in curve["steps"]
    table = {r["layer"]: r for r in body["layer_table"]}
    assert table["bn.weight"]["run_layers"] == ["bn.gamma"]
    assert table["fc.weight"]["quantities"]["update_ratio"]["first_step"] == 7


def test_edits_pair_a_layer_and_leave_one_out(app):
    mapping = json.dumps({"pairs": {"head.kernel": ["head.weight"]}, "ignore": ["fc.weight"]})
    body = app.plugin("/compare", run="port", reference="reference", mapping=mapping)
    pairs = {p["run"][0]: p["rule"] for p in body["mapping"]["pairs"]}
    assert pairs["head.kernel"] == "mapping file" and "fc.weight" not in pairs
    assert body["mapping"]["ignored"] == ["fc.weight"] and body["verdict"] == "match"


@pytest.mark.parametrize("query, code, message", [
    ({"run": "port"}, 400, "missing query parameter 'reference'"),
    ({"run": "port", "reference": "port"}, 400, "pick two different runs"),
    ({"run": "port", "reference": "nope"}, 404, "no run named 'nope'"),
    ({"run": "port", "reference": "reference", "mapping": "{"}, 400, "the mapping is not JSON"),
    ({"run": "port", "reference": "reference", "mapping": json.dumps({"rules": [{"run": "(a+)+$", "reference": "x"}]})},
     400, "rules (regular expressions) belong in a mapping file"),
    ({"run": "port", "reference": "reference", "mapping": "[" * 100 + "]" * 100}, 400, "nests deeper than"),
    ({"run": "port", "reference": "reference", "mapping": " " * 200001}, 400, "longer than 200000 characters"),
    ({"run": "port", "reference": "reference", "offset": "x"}, 400, "'offset' must be an integer"),
])
def test_bad_parameters(app, query, code, message):
    body = app.plugin("/compare", expect=code, **query)
    assert message in body["error"]["message"]
