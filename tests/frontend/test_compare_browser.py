"""The Compare section in headless Chromium against a real ``tensorboard``: a "port" whose names are MindSpore's
(``bn.gamma``, ``emb.embedding_table``) against a "reference" with PyTorch's, their update ratios apart from step 5
in one layer. Pick the two runs, compare: the verdict, the likely class, the order, the curves, the layer table
and the mapping, which the user edits (pairs an unmapped layer). Screenshot: test-artifacts/compare.png."""

import os

import numpy as np
import pytest

from browser_helpers import ARTIFACTS, assert_same_origin, open_tab
from tb_harness import tensorboard_process
from tb_plugin_mindspore.writing.writer import SummaryWriter

pytestmark = pytest.mark.slow

PORT_LAYERS = ["emb.embedding_table", "fc.weight", "fc.bias", "bn.gamma", "bn.beta", "head.kernel"]
REF_LAYERS = ["emb.weight", "fc.weight", "fc.bias", "bn.weight", "bn.bias", "head.weight"]
HOSTILE = '<img src=x onerror="window.__hacked=1">'


def write(folder, layers, apart_from=None, steps=40):
    rng = np.random.default_rng(0)
    with SummaryWriter(str(folder)) as w:
        w.run_info({"layer_shapes": {n: [8, 4] if n.startswith(("emb.", "head.", "fc.weight")) else [8]
                                     for n in layers}}, step=0)
        for s in range(1, steps + 1):
            w.scalar("core/loss", 2.0 * np.exp(-s / 20) + 0.05 * rng.random(), s)
            w.scalar("core/learning_rate", 1e-3, s)
            w.scalar("core/grad_norm", 1.0 + 0.1 * rng.random(), s)
            ratios = 1e-3 * (1 + 0.5 * rng.random(len(layers)))
            grads = 0.1 * (1 + rng.random(len(layers)))
            norms = 1 + 0.01 * s + 0.01 * rng.random(len(layers))
            if apart_from is not None and s >= apart_from:
                ratios[1] *= 1.5                    # fc.weight's updates 50 % larger from there
            w.layers("debug/update_ratio", layers, ratios, s)
            w.layers("debug/layer_grad_norm", layers, grads, s)
            w.layers("diagnostic/layer_weight_norm", layers, norms, s)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    root = tmp_path_factory.mktemp("compare_ui") / "logs"
    root.mkdir()
    write(root / "ms_port", PORT_LAYERS, apart_from=5)
    write(root / "torch_reference", REF_LAYERS)
    with SummaryWriter(str(root / HOSTILE)) as w:
        w.scalar("core/loss", 1.0, 1)
    with tensorboard_process(root) as base:
        yield base


def test_compare_two_runs_edit_the_mapping(page, server):
    frame = open_tab(page, server)
    section = frame.locator("[data-testid=compare-section]")
    section.wait_for(state="visible", timeout=60000)
    frame.wait_for_function("() => document.querySelectorAll('[data-testid=compare-run] option').length >= 3",
                            timeout=60000)
    frame.select_option("[data-testid=compare-run]", "ms_port")
    frame.select_option("[data-testid=compare-reference]", "torch_reference")
    frame.click("[data-testid=compare-go]")
    frame.wait_for_selector("[data-testid=compare-panel][data-state=ready]", timeout=60000)
    panel = frame.locator("[data-testid=compare-panel]")
    assert panel.get_attribute("data-verdict") == "part"
    assert panel.get_attribute("data-first-quantity") == "update_ratio"
    assert panel.get_attribute("data-first-step") == "5"
    verdict = frame.locator("[data-testid=compare-verdict]").inner_text()
    assert verdict.startswith("Part at step 5: update ratio parts first (fc.weight)")
    likely = frame.locator("[data-testid=compare-likely]")
    assert likely.get_attribute("data-family") == "optimizer"
    assert frame.locator("[data-testid=compare-evidence] li").count() >= 1
    rows = frame.locator("[data-testid=compare-order-row]")
    assert rows.first.get_attribute("data-quantity") == "update_ratio"
    # The two runs' loss and the update ratio of the first layer, drawn.
    frame.wait_for_function("() => document.querySelectorAll('[data-testid=compare-curve] canvas').length >= 4",
                            timeout=30000)
    layer_curve = frame.locator("[data-testid=compare-layer-curve]").first
    assert layer_curve.get_attribute("data-column") == "fc.weight"
    assert layer_curve.get_attribute("data-first-step") == "5"
    parted = frame.locator("[data-testid=compare-layer-row].ms-compare-parted")
    assert parted.count() == 1 and parted.first.get_attribute("data-layer") == "fc.weight"
    # The mapping: MindSpore's names renamed by the built-in rules, head.kernel left unmapped (listed).
    rules = {frame.locator("[data-testid=compare-pair]").nth(i).get_attribute("data-run"):
             frame.locator("[data-testid=compare-pair]").nth(i).get_attribute("data-rule")
             for i in range(frame.locator("[data-testid=compare-pair]").count())}
    assert rules == {"emb.embedding_table": "built-in", "fc.weight": "same name", "fc.bias": "same name",
                     "bn.gamma": "built-in", "bn.beta": "built-in"}
    unmapped = frame.locator("[data-testid=compare-unmapped-run]")
    assert unmapped.count() == 1 and unmapped.first.get_attribute("data-run") == "head.kernel"
    assert "head.weight" in frame.locator("[data-testid=compare-unmapped-reference]").inner_text()
    section.scroll_into_view_if_needed()
    frame.wait_for_timeout(500)          # the charts draw once on screen
    os.makedirs(ARTIFACTS, exist_ok=True)
    section.screenshot(path=os.path.join(ARTIFACTS, "compare.png"))
    # Pair it by hand and compare again: the pair is now part of the comparison.
    frame.select_option('[data-testid=compare-pair-select][data-run="head.kernel"]', "head.weight")
    frame.click("[data-testid=compare-apply]")
    frame.wait_for_function(
        "() => [...document.querySelectorAll('[data-testid=compare-pair]')].some("
        "(r) => r.dataset.run === 'head.kernel' && r.dataset.rule === 'mapping file')", timeout=30000)
    assert frame.locator("[data-testid=compare-unmapped-run]").count() == 0
    assert frame.locator('[data-testid=compare-layer-row][data-layer="head.weight"]').count() == 1
    # Names are text, never markup; nothing leaves the TensorBoard origin.
    assert frame.evaluate("() => window.__hacked") is None
    assert_same_origin(page, server)
    assert page.console_errors == []


def test_bad_pick_says_why(page, server):
    frame = open_tab(page, server)
    frame.locator("[data-testid=compare-section]").wait_for(state="visible", timeout=60000)
    frame.wait_for_function("() => document.querySelectorAll('[data-testid=compare-run] option').length >= 3",
                            timeout=60000)
    frame.select_option("[data-testid=compare-run]", "ms_port")
    frame.select_option("[data-testid=compare-reference]", "ms_port")
    frame.click("[data-testid=compare-go]")
    frame.wait_for_selector("[data-testid=compare-panel][data-state=error]", timeout=30000)
    assert "pick two different runs" in frame.locator("[data-testid=compare-status]").inner_text()
