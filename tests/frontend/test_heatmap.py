"""Per-layer heatmaps and distributions in headless Chromium against a real ``tensorboard``: the heatmap draws, hover
shows the right cell, marks, sort, search, collapsing groups, click-through to the layer's line chart, two runs
side by side, hostile layer names as text, the distribution view, and batched scalar requests."""

import math

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from browser_helpers import assert_same_origin, open_tab, screenshot, wait_drawn, wait_settled
from heatmap_data import HOSTILE_LAYER, STEPS, layer_names, ratio, write_heatmap_runs
from tb_harness import tensorboard_process

PANEL = '[data-testid=heatmap-panel][data-tag="debug/update_ratio"]'
BF16_REL = 2 ** -8


@pytest.fixture(scope="module")
def heatmap_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("heatmaps") / "logs"
    root.mkdir()
    names = write_heatmap_runs(root)
    with tensorboard_process(root) as base:
        yield base, names


def open_panel(page, base, panel=PANEL):
    frame = open_tab(page, base)
    frame.wait_for_selector(panel, timeout=60000).scroll_into_view_if_needed()
    frame.wait_for_selector(panel + "[data-state=drawn]", timeout=60000)
    return frame


def rows(frame, panel=PANEL):
    return frame.eval_on_selector_all(panel + " [data-testid=heatmap-row]", "(rs) => rs.map((r) => ({...r.dataset, text: r.querySelector('.ms-heatmap-label-text').textContent}))")


def row_index(frame, layer, panel=PANEL):
    for r in rows(frame, panel):
        if r["layer"] == layer:
            return int(r["row"])
    raise AssertionError("no row for %r" % layer)


def hover_cell(page, frame, row, col, run_index=0, panel=PANEL):
    """Moves the mouse to the centre of cell (row, col) of the run_index-th heatmap; returns the tooltip's data.

    Other panels may still be drawing and shift the layout after the canvas is measured, so the canvas is scrolled
    into view and the cell hovered again until the tooltip names it (or the attempts run out)."""
    tooltip = panel + " [data-testid=heatmap-tooltip]"
    shown = (
        "([sel, r, c]) => { const t = document.querySelector(sel); return Boolean(t && !t.hidden && t.dataset.row === String(r)"
        " && t.dataset.col === String(c)); }"
    )
    for attempt in range(6):
        maps = frame.query_selector_all(panel + " [data-testid=heatmap]")
        info = maps[run_index].evaluate("(h) => ({...h.dataset})")
        canvas = maps[run_index].query_selector("canvas")
        cols, row_h = int(info["cols"]), float(info["rowHeight"])
        x, y = (col + 0.5) * canvas.bounding_box()["width"] / cols, (row + 0.5) * row_h
        # hover() scrolls the canvas into view in whichever container scrolls and waits until it is stable and
        # receives the pointer; the first move makes sure a fresh mousemove reaches the cell
        canvas.hover(position={"x": x, "y": y + (0.25 if attempt % 2 else -0.25) * row_h})
        canvas.hover(position={"x": x, "y": y})
        try:
            frame.wait_for_function(shown, arg=[tooltip, row, col], timeout=2000)
            break
        except PlaywrightTimeout:
            if attempt == 5:
                raise
    return frame.eval_on_selector(tooltip, "(t) => ({...t.dataset, text: t.textContent})")


def test_heatmap_draws_and_hover_shows_the_cell(page, heatmap_server):
    base, names = heatmap_server
    frame = open_panel(page, base)
    info = frame.eval_on_selector(PANEL + " [data-testid=heatmap]", "(h) => ({...h.dataset})")
    assert info["run"] == "run_a" and int(info["cols"]) == STEPS and info["state"] == "drawn"
    layer = "encoder.layers.1.attn.v.weight"
    i = names["run_a"].index(layer)
    for col in (0, 29, STEPS - 1):
        tip = hover_cell(page, frame, row_index(frame, layer), col)
        step = col + 1
        assert tip["layer"] == layer and tip["step"] == str(step) and tip["run"] == "run_a"
        expected = ratio(0, i, step, names["run_a"])
        assert abs(float(tip["value"]) - expected) <= BF16_REL * expected, (tip, expected)
        assert layer in tip["text"]
    # the NaN cell (layer 2, step 30)
    tip = hover_cell(page, frame, row_index(frame, names["run_a"][2]), 29)
    assert tip["value"] == "NaN" and "NaN" in tip["text"]
    # the color of a pixel follows the value: the too-fast head is red, the frozen layer grey
    head = frame.evaluate(
        """([sel, r]) => { const c = document.querySelector(sel + ' [data-testid=heatmap] canvas');
            const h = c.height / Number(c.parentNode.parentNode.dataset.rows);
            return [...c.getContext('2d').getImageData(c.width / 2, (r + 0.5) * h, 1, 1).data]; }""",
        [PANEL, row_index(frame, "head.weight")],
    )
    assert head[0] > 100 and head[1] < 60 and head[2] < 60, head
    # axis titles, and step ticks from the first to the last step, each label whole inside its map
    hm = PANEL + " [data-testid=heatmap]"
    assert frame.text_content(hm + " [data-testid=heatmap-x-title]") == "step"
    assert frame.text_content(PANEL + " [data-testid=heatmap-y-title]").startswith("layer (")
    ticks = frame.eval_on_selector_all(hm + ":first-of-type [data-testid=heatmap-tick]", """(ts) => ts.map((t) => {
        const r = t.getBoundingClientRect(), m = t.closest('[data-testid=heatmap]').getBoundingClientRect();
        return [t.dataset.step, r.left >= m.left - 0.5 && r.right <= m.right + 0.5]; })""")
    assert ticks[0][0] == "1" and ticks[-1][0] == str(STEPS) and len(ticks) >= 3, ticks
    assert all(inside for _, inside in ticks), ticks
    screenshot(page, "heatmap-update-ratio.png")
    assert_same_origin(page, base)
    assert page.console_errors == [], page.console_errors


def test_marks_and_hostile_names_are_text(page, heatmap_server):
    base, _ = heatmap_server
    frame = open_panel(page, base)
    by_layer = {r["layer"]: r for r in rows(frame)}
    assert by_layer["head.weight"]["mark"] == "fast"
    assert by_layer["encoder.layers.0.ffn.w2.weight"]["mark"] == "slow"
    assert by_layer[HOSTILE_LAYER]["mark"] == "frozen"
    assert by_layer["encoder.layers.0.attn.k.weight"]["mark"] == "nonfinite"
    assert by_layer[HOSTILE_LAYER]["text"] == HOSTILE_LAYER
    notes = frame.text_content(PANEL + " [data-testid=heatmap-notes]")
    assert "2 layers not learning" in notes and "1 layer too fast" in notes
    tip = hover_cell(page, frame, row_index(frame, HOSTILE_LAYER), 3)
    assert HOSTILE_LAYER in tip["text"] and tip["value"] == "0"
    assert frame.evaluate("() => window.__pwned === undefined && document.querySelectorAll('img').length === 0")
    assert page.evaluate("() => window.__pwned === undefined")


def test_sort_search_and_collapse(page, heatmap_server):
    base, names = heatmap_server
    frame = open_panel(page, base)
    frame.select_option(PANEL + " [data-testid=heatmap-sort]", "mean-desc")
    frame.wait_for_function("(sel) => document.querySelector(sel + ' [data-testid=heatmap-row]').dataset.layer === 'head.weight'", arg=PANEL)
    frame.select_option(PANEL + " [data-testid=heatmap-sort]", "mean-asc")
    frame.wait_for_function("([sel, first]) => document.querySelector(sel + ' [data-testid=heatmap-row]').dataset.layer === first",
                            arg=[PANEL, HOSTILE_LAYER])    # frozen: the lowest mean
    frame.select_option(PANEL + " [data-testid=heatmap-sort]", "name")

    frame.fill(PANEL + " [data-testid=heatmap-search]", "FFN.W2")
    frame.wait_for_function("(sel) => document.querySelectorAll(sel + ' [data-testid=heatmap-row]').length === 3", arg=PANEL)
    assert [r["layer"] for r in rows(frame)] == ["encoder.layers.%d.ffn.w2.weight" % b for b in range(3)]
    info = frame.eval_on_selector(PANEL + " [data-testid=heatmap]", "(h) => ({...h.dataset})")
    assert info["rows"] == "3"
    frame.fill(PANEL + " [data-testid=heatmap-search]", "")

    frame.select_option(PANEL + " [data-testid=heatmap-depth]", "0")
    frame.wait_for_function("(sel) => document.querySelectorAll(sel + ' [data-testid=heatmap-row]').length === 4", arg=PANEL)
    top = rows(frame)
    assert [r["layer"] for r in top] == [HOSTILE_LAYER, "embedding.weight", "encoder.layers", "head.weight"]
    assert top[2]["kind"] == "group"
    # a collapsed group is one row: the geometric mean of its 15 layers
    tip = hover_cell(page, frame, 2, 5)
    assert tip["kind"] == "group" and "15 layers" in tip["text"]
    frame.click(PANEL + ' [data-testid=heatmap-row][data-layer="encoder.layers"]')
    frame.wait_for_function("(sel) => document.querySelectorAll(sel + ' [data-testid=heatmap-row]').length === 7", arg=PANEL)
    screenshot(page, "heatmap-collapsed.png")


def test_click_opens_line_chart_and_compare_runs(page, heatmap_server):
    base, names = heatmap_server
    frame = open_panel(page, base)
    layer = "encoder.layers.1.attn.q.weight"
    frame.click(PANEL + ' [data-testid=heatmap-row][data-layer="%s"]' % layer)
    chart = frame.wait_for_selector(PANEL + " [data-testid=layer-detail-chart][data-state=drawn]")
    assert chart.get_attribute("data-layer") == layer and chart.get_attribute("data-points") == str(STEPS)
    assert frame.text_content(PANEL + " [data-testid=layer-detail-title]") == layer

    frame.select_option(PANEL + " [data-testid=heatmap-compare]", "run_b")
    frame.wait_for_function("(sel) => document.querySelectorAll(sel + ' [data-testid=heatmap][data-state=drawn]').length === 2", arg=PANEL)
    runs = frame.eval_on_selector_all(PANEL + " [data-testid=heatmap]", "(hs) => hs.map((h) => h.dataset.run)")
    assert runs == ["run_a", "run_b"]
    frame.wait_for_function("(sel) => document.querySelector(sel + ' [data-testid=layer-detail-chart]').dataset.points === '%d'" % (2 * STEPS), arg=PANEL)
    # run_b is 2x faster at the same cell; it has no hostile-named layer
    i = names["run_b"].index(layer)
    tip = hover_cell(page, frame, row_index(frame, layer), 10, run_index=1)
    assert tip["run"] == "run_b" and abs(float(tip["value"]) - ratio(1, i, 11, names["run_b"])) <= BF16_REL * 0.01
    tip = hover_cell(page, frame, row_index(frame, HOSTILE_LAYER), 10, run_index=1)
    assert tip["value"] == "" and "not in this run" in tip["text"]
    screenshot(page, "heatmap-compare.png")
    frame.click(PANEL + " [data-testid=layer-detail-close]")
    assert frame.locator(PANEL + " [data-testid=layer-detail]").is_hidden()


def test_weight_norm_heatmap_uses_a_sequential_scale(page, heatmap_server):
    base, _ = heatmap_server
    panel = '[data-testid=heatmap-panel][data-tag="diagnostic/layer_weight_norm"]'
    frame = open_panel(page, base, panel)
    assert frame.get_attribute(panel + " [data-testid=heatmap-legend]", "data-scale") == "log"
    assert frame.locator(panel + " [data-testid=heatmap-mark]").count() == 0


@pytest.mark.slow
def test_distribution_view(page, heatmap_server):
    base, _ = heatmap_server
    frame = open_tab(page, base)
    sel = '[data-testid=histogram-chart][data-tag="debug/activation/encoder.layers.0"]'
    frame.wait_for_selector(sel, timeout=60000)
    frame.wait_for_selector(sel + "[data-state=drawn]", timeout=60000)
    # The Health panel and the status banner change the layout above the chart when their answers come (under load,
    # after the chart is drawn): the pointer goes where the chart is once they have.
    wait_settled(frame)
    chart = frame.query_selector(sel)
    chart.scroll_into_view_if_needed()
    assert chart.get_attribute("data-steps") == str(2 * (STEPS // 5)) and chart.get_attribute("data-run-count") == "2"
    box = chart.query_selector(".u-over").bounding_box()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] / 2)
    frame.wait_for_selector(sel + " [data-testid=bands-tooltip]:not([hidden])")
    tips = frame.eval_on_selector_all(sel + " [data-testid=bands-tooltip] tr[data-run]", "(rs) => rs.map((r) => ({...r.dataset}))")
    last = {t["run"]: t for t in tips}
    assert last["run_a"]["step"] == str(STEPS)
    assert math.isclose(float(last["run_a"]["median"]), 0.1 * STEPS, abs_tol=0.3)
    frame.query_selector(sel).scroll_into_view_if_needed()
    frame.query_selector('[data-testid=histogram-card][data-tag="debug/activation/encoder.layers.0"]').screenshot(
        path=screenshot_path("distribution.png"))
    assert page.console_errors == [], page.console_errors


def test_first_render_batches_scalar_requests(page, dashboard_server):
    base, written = dashboard_server
    frame = open_tab(page, base)
    wait_drawn(frame, "core")
    urls = page.network_log.urls
    singles = [u for u in urls if "/data/plugin/mindspore/scalars?" in u]
    batches = [u for u in urls if "/data/plugin/mindspore/scalars_batch?" in u]
    charts = frame.locator('[data-testid=chart][data-state=drawn]').count()
    # 5 core charts x 2 runs drawn from one or two batch requests, none per series
    assert charts >= 5 and singles == [] and 1 <= len(batches) <= 2, (len(batches), charts, singles[:3])


def screenshot_path(name):
    import os

    from browser_helpers import ARTIFACTS

    os.makedirs(ARTIFACTS, exist_ok=True)
    return os.path.join(ARTIFACTS, name)


@pytest.mark.slow
def test_health_finding_on_a_layer_tag_shades_its_steps_on_the_heatmap(page, heatmap_server):
    """The head's update ratio (0.3) is a layer_too_fast finding on debug/update_ratio; clicking it in the Health
    panel outlines the heatmap and shades the finding's steps on the run's map, and only on that run's."""
    from tb_harness import fetch_json

    base, _ = heatmap_server
    report = fetch_json(base + "/data/plugin/mindspore/health?run=run_a")
    (finding,) = [f for f in report["runs"][0]["findings"] if f["rule"] == "layer_too_fast"]
    assert finding["tag"] == "debug/update_ratio" and "head.weight" in finding["message"]
    first, last = finding["steps"]
    frame = open_panel(page, base)
    frame.wait_for_selector('[data-testid=health-panel][data-state=ready]', timeout=60000)
    if frame.get_attribute("[data-testid=health-toggle]", "aria-expanded") != "true":
        frame.click("[data-testid=health-toggle]")
    sel = ('[data-testid=health-run][data-run="run_a"] [data-testid=health-finding][data-rule=layer_too_fast] '
           'button')
    frame.click(sel)
    frame.wait_for_function(
        "(sel) => document.querySelector(sel + ' [data-testid=heatmap-band]') !== null",
        arg=PANEL + ' [data-testid=heatmap][data-run="run_a"]', timeout=30000)
    assert frame.get_attribute(PANEL, "data-highlight") == "%d-%d" % (first, last)
    maps = {m["run"]: m for m in frame.eval_on_selector_all(PANEL + " [data-testid=heatmap]",
                                                           "(ms) => ms.map((m) => ({...m.dataset}))")}
    # Steps 1..STEPS are the columns 0..STEPS-1: the band covers exactly the finding's steps.
    assert maps["run_a"]["highlightCols"] == "%d-%d" % (first - 1, last - 1)
    band = frame.eval_on_selector(PANEL + ' [data-testid=heatmap][data-run="run_a"] [data-testid=heatmap-band]',
                                  "(b) => { const r = b.getBoundingClientRect(), c = b.parentNode"
                                  ".querySelector('canvas').getBoundingClientRect();"
                                  " return [r.left - c.left, r.width, c.width]; }")
    left, width, canvas = band
    assert abs(left - (first - 1) / STEPS * canvas) <= 1.5
    assert abs(width - (last - first + 1) / STEPS * canvas) <= 1.5
    # The band is on run_a's map only (the finding is run_a's).
    assert frame.query_selector(PANEL + ' [data-testid=heatmap][data-run="run_b"] [data-testid=heatmap-band]') is None
    # run_b's finding moves the band to run_b's map.
    frame.click('[data-testid=health-run][data-run="run_b"] [data-testid=health-finding][data-rule=layer_too_fast] '
                'button')
    frame.wait_for_selector(PANEL + ' [data-testid=heatmap][data-run="run_b"] [data-testid=heatmap-band]',
                            timeout=10000)
    assert frame.query_selector(PANEL + ' [data-testid=heatmap][data-run="run_a"] [data-testid=heatmap-band]') is None
    assert page.console_errors == [], page.console_errors
