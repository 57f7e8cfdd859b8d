"""The Health panel's causes in headless Chromium against a real ``tensorboard``: a finding that follows from the
first NaN is listed under it (folded), not at the top, and a finding that names the layers where it started links
to the flight recorder's per-layer heatmap around its steps.

The run is written with our own SummaryWriter (real event files with the contract's tags): a loss NaN from step
41, a gradient norm that explodes after it (the follow-on), the live health event the callbacks write (layer
``1.weight``) and the flight recorder's per-layer gradient norms of steps 31-41.
"""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "frontend"))

from browser_helpers import assert_same_origin, open_tab, screenshot  # noqa: E402
from tb_harness import fetch_json, tensorboard_process  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402

NAN_STEP = 41
STEPS = 60
LAYERS = ["0.weight", "1.weight", "2.weight"]


def _write_run(path):
    from tb_plugin_mindspore.contract import health_event
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    rng = np.random.default_rng(0)
    w = SummaryWriter(str(path), flush_secs=0.5)
    try:
        w.run_info({"collect_freq": 1, "epochs": 1, "steps_per_epoch": STEPS}, step=0)
        for s in range(1, STEPS + 1):
            w.scalar(metadata.LOSS, 2.0 - s / 40.0 if s < NAN_STEP else float("nan"), s)
            grad = 1.0 + 0.05 * rng.normal() if s < NAN_STEP + 4 else 1e4 * (1 + s - NAN_STEP)
            w.scalar(metadata.GRAD_NORM, grad, s)
            w.scalar(metadata.LEARNING_RATE, 1e-3, s)
        for s in range(NAN_STEP - 10, NAN_STEP + 1):
            row = np.array([0.5, 0.4 if s < NAN_STEP else np.nan, 0.3], dtype=np.float32)
            w.layers(metadata.FLIGHT_GRAD_NORM_LAYERS, LAYERS, row, s)
        w.value(health_event.value("nonfinite", "error", NAN_STEP, first_step=NAN_STEP,
                                   message="NaN/Inf since step %d in the loss" % NAN_STEP,
                                   advice="lower the learning rate", layers=["1.weight"]), NAN_STEP)
    finally:
        w.close()


@pytest.fixture(scope="module")
def causes_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("health_causes") / "logs"
    _write_run(root / "diverged")
    with tensorboard_process(root) as base:
        yield base


@pytest.mark.slow
def test_follow_ons_fold_under_their_cause_and_layers_link_to_the_heatmap(page, causes_server):
    base = causes_server
    failed = []
    page.on("response", lambda r: r.status >= 500 and failed.append("%d %s" % (r.status, r.url)))
    report = fetch_json(base + "/data/plugin/mindspore/health")
    (run,) = report["runs"]
    (cause,) = [f for f in run["findings"] if f["rule"] == "nonfinite" and f["tag"] == metadata.LOSS]
    assert cause["layers"] == ["1.weight"] and cause["source"] == "offline+live"
    assert cause["steps"][0] == NAN_STEP
    follow = cause.get("follow_ons") or []
    assert [f["rule"] for f in follow] == ["grad_explosion"], cause
    assert follow[0]["caused_by"] == {"rule": "nonfinite", "tag": metadata.LOSS, "step": NAN_STEP}
    assert "grad_explosion" not in [f["rule"] for f in run["findings"]]

    frame = open_tab(page, base)
    frame.wait_for_selector("[data-testid=health-panel][data-state=ready]", timeout=60000)
    row = '[data-testid=health-run][data-run="diverged"]'
    sel = row + ' [data-testid=health-finding][data-rule=nonfinite][data-tag="core/loss"]'
    assert frame.get_attribute(sel, "data-follow-ons") == "1"
    assert frame.get_attribute(sel, "data-layers") == "1.weight"
    # The follow-on is folded under its cause, not a top-level finding.
    tops = frame.eval_on_selector_all(row + " [data-testid=health-finding]", "(els) => els.map((e) => e.dataset.rule)")
    assert "grad_explosion" not in tops
    nested = sel + " [data-testid=health-follow-ons]"
    assert frame.get_attribute(nested, "open") is None
    assert not frame.is_visible(nested + " [data-testid=health-follow-on]")
    frame.click(nested + " summary")
    frame.wait_for_selector(nested + ' [data-testid=health-follow-on][data-rule=grad_explosion]', state="visible")
    screenshot(page, "health-follow-ons.png")

    # The layers link opens the flight recorder's heatmap around the finding's steps.
    link = sel + " [data-testid=health-layers-link]"
    assert frame.get_attribute(link, "data-heatmap") == metadata.FLIGHT_GRAD_NORM_LAYERS
    window = "%d-%d" % (NAN_STEP - 10, NAN_STEP + 10)
    assert frame.get_attribute(link, "data-window") == window
    assert "1.weight" in frame.inner_text(link)
    frame.click(link)
    panel = '[data-testid=heatmap-panel][data-tag="%s"]' % metadata.FLIGHT_GRAD_NORM_LAYERS
    frame.wait_for_function("([sel, w]) => { const p = document.querySelector(sel); "
                            "return p && p.dataset.highlight === w; }", arg=[panel, window], timeout=30000)
    frame.wait_for_selector(panel + ' [data-testid=heatmap][data-run="diverged"] [data-testid=heatmap-band]',
                            timeout=30000)
    screenshot(page, "health-layers-link.png")
    assert page.console_errors == [], (page.console_errors, failed)
    assert_same_origin(page, base)
