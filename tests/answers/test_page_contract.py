"""The ``contract`` route: the page's part of the data contract, built from metadata.py and the health rules."""

import json
import os

from tb_harness import App
from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.health.rules import RULES_BY_ID
from tb_plugin_mindspore.answers import page_contract

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "frontend", "test", "fixtures", "contract.json")


def test_contract_names_our_tags_tiers_and_the_rules_thresholds():
    c = page_contract.build()
    assert [t["id"] for t in c["tiers"]] == list(metadata.TIERS)
    assert c["tag_order"][:3] == [metadata.LOSS, metadata.LEARNING_RATE, metadata.GRAD_NORM]
    assert c["axes"][metadata.THROUGHPUT] == {"label": "throughput", "unit": "samples/s"}
    assert c["axes"][metadata.STEP_TIME_MS]["unit"] == "ms"
    assert c["update_ratio"]["slow"] == RULES_BY_ID["layer_not_learning"].defaults["low"]
    assert c["update_ratio"]["fast"] == RULES_BY_ID["layer_too_fast"].defaults["high"]
    debug_tags = {t for e in c["expected"][metadata.DEBUG] for t in e["tags"]}
    assert {metadata.UPDATE_RATIO_LAYERS, metadata.GRAD_NORM_LAYERS, metadata.DATA_WAIT_MS} <= debug_tags


def test_a_configured_threshold_moves_the_heatmap_mark():
    c = page_contract.build({"layer_too_fast": {"high": "0.5"}, "layer_not_learning": {"enabled": False}})
    assert c["update_ratio"]["fast"] == 0.5
    assert c["update_ratio"]["slow"] == RULES_BY_ID["layer_not_learning"].defaults["low"]


def test_the_frontend_fixture_is_what_the_server_answers():
    """frontend/test/fixtures/contract.json (the page's unit tests read it) must not drift from the server."""
    with open(FIXTURE, encoding="utf-8") as f:
        assert json.load(f) == json.loads(json.dumps(page_contract.build())), (
            "regenerate it: python -c \"import json; from tb_plugin_mindspore.answers import page_contract as p; "
            "print(json.dumps(p.build(), indent=1, ensure_ascii=False, sort_keys=True))\" > frontend/test/fixtures/contract.json")


def test_contract_route_through_tensorboard(tmp_path):
    app = App(str(tmp_path))
    try:
        assert app.plugin("/contract") == json.loads(json.dumps(page_contract.build()))
    finally:
        app.close()
