"""Charts that never mislead, in headless Chromium on a real ``tensorboard`` (one page load, several checks): a sparse
series keeps its recorded values bold under smoothing, the tooltip shows the raw value and the interval's
min / mean / max / count, every axis has a title with its unit, run names are whole on hover, cards of unchecked runs
collapse, the zoom reset says what it does, and the tab follows TensorBoard's dark mode. Screenshots go to
test-artifacts/."""

import os

import pytest

from browser_helpers import ARTIFACTS, assert_same_origin, chart_attrs, chart_selector, open_tab, screenshot, wait_attr, wait_drawn


def hover_step(frame, tag, step):
    """Hovers the chart at ``step`` (from its current x range); returns the tooltip's rows as lists of cell texts."""
    attrs = chart_attrs(frame, tag)
    x_min, x_max = float(attrs["xMin"]), float(attrs["xMax"])
    over = frame.locator(chart_selector(tag) + " .u-over")
    over.scroll_into_view_if_needed()
    box = over.bounding_box()
    over.hover(position={"x": box["width"] * (step - x_min) / (x_max - x_min), "y": box["height"] / 2})
    tooltip = frame.locator(chart_selector(tag) + " [data-testid=chart-tooltip]")
    tooltip.wait_for(state="visible", timeout=10000)
    head = [c.strip() for c in tooltip.locator("tr").first.locator("th").all_text_contents()]
    rows = {}
    for row in tooltip.locator("tr[data-run]").all():
        rows[row.get_attribute("data-run")] = dict(zip(head, [c.strip() for c in row.locator("td").all_text_contents()]))
    return rows


def set_tensorboard_theme(page, name):
    page.click("button[aria-label='Menu for changing light or dark theme']")
    page.click("[role=menuitem]:has-text('%s')" % name)
    page.wait_for_selector("[role=menu]", state="detached")


@pytest.mark.slow
def test_charts_never_mislead(page, dashboard_server):
    base, written = dashboard_server
    frame = open_tab(page, base, in_tensorboard=True)   # the dark mode below follows TensorBoard's theme menu
    wait_drawn(frame)
    frame.locator(chart_selector("debug/data_wait_ms")).scroll_into_view_if_needed()  # cards load when seen
    wait_attr(frame, "debug/data_wait_ms", "state", "v === 'drawn'")

    # Smoothing (0.6 by default) over a 20-point series: the recorded values stay the bold line; dense: TensorBoard's way.
    assert frame.locator("[data-testid=smoothing-input]").input_value() == "0.6"
    assert chart_attrs(frame, "debug/data_wait_ms")["smoothing"] == "raw-bold"
    assert chart_attrs(frame, "core/loss")["smoothing"] == "smoothed-bold"
    note = frame.locator('[data-testid=chart-card][data-tag="debug/data_wait_ms"] [data-testid=sparse-smoothing-note]')
    assert note.is_visible() and "raw line bold" in note.text_content()
    frame.locator('[data-testid=chart-card][data-tag="debug/data_wait_ms"]').screenshot(
        path=os.path.join(ARTIFACTS, "honest-sparse-smoothing.png"))

    # Axis titles with units (the contract route names them).
    assert chart_attrs(frame, "core/throughput")["yTitle"] == "throughput (samples/s)"
    assert chart_attrs(frame, "core/step_time_ms")["yTitle"] == "step time (ms)"
    assert chart_attrs(frame, "debug/data_wait_ms")["yTitle"] == "data wait (ms)"
    assert chart_attrs(frame, "core/loss")["yTitle"] == "loss" and chart_attrs(frame, "core/loss")["xTitle"] == "step"

    # The tooltip: raw value next to the smoothed one, and the interval statistics where they were recorded.
    rows = hover_step(frame, "core/loss", 50)
    a = rows["run_a"]
    assert int(a["Step"]) == 50, a
    loss = {p[0]: p[2] for p in written["run_a"]["core/loss"]}[50]
    assert float(a["Value"]) == pytest.approx(loss, rel=2e-3)
    lo, mean, hi = (float(v) for v in a["Interval min / mean / max"].split(" / "))
    assert (lo, mean, hi) == (pytest.approx(loss - 0.2, rel=2e-3), pytest.approx(loss, rel=2e-3), pytest.approx(loss + 0.3, rel=2e-3))
    assert a["Steps"] == "5" and "Smoothed" in a
    screenshot(page, "honest-tooltip-interval.png")

    # The zoom reset is labelled in words; whole run names on hover.
    reset = frame.locator('[data-testid=chart-card][data-tag="core/loss"] [data-testid=reset-zoom]')
    assert reset.text_content() == "reset zoom" and reset.get_attribute("aria-label") == "Reset zoom"
    names = frame.eval_on_selector_all("[data-testid=run-name]", "(ns) => ns.map((n) => [n.textContent, n.title])")
    assert names and all(text == title for text, title in names)

    # No checked run: every card shrinks to its title and a one-line note.
    full = frame.eval_on_selector('[data-testid=chart-card][data-tag="core/loss"]', "(c) => c.getBoundingClientRect().height")
    frame.click("[data-testid=runs-none]")
    frame.wait_for_function("() => [...document.querySelectorAll('[data-testid=chart-card]')].every((c) => c.dataset.empty === 'true')")
    heights = frame.eval_on_selector_all("[data-testid=chart-card]", "(cs) => cs.map((c) => c.getBoundingClientRect().height)")
    assert max(heights) < min(80, full / 2), (heights, full)
    screenshot(page, "honest-no-run-selected.png")
    frame.click("[data-testid=runs-all]")
    wait_attr(frame, "core/loss", "runCount", "v === '2'")
    assert frame.eval_on_selector('[data-testid=chart-card][data-tag="core/loss"]', "(c) => c.dataset.empty") == "false"

    # Dark mode follows TensorBoard's own theme menu (it puts the class dark-mode on its page's body), both ways.
    light_bg = frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
    set_tensorboard_theme(page, "Dark")
    assert page.evaluate("() => document.body.classList.contains('dark-mode')")
    frame.wait_for_function("() => document.querySelector('[data-testid=mindspore-dashboard]').dataset.theme === 'dark'")
    dark_bg = frame.evaluate("() => getComputedStyle(document.body).backgroundColor")
    assert dark_bg != light_bg
    assert sum(int(x) for x in dark_bg[dark_bg.index("(") + 1:dark_bg.index(")")].split(",")[:3]) < 3 * 80, dark_bg
    wait_drawn(frame)
    screenshot(page, "honest-dark-mode.png")
    set_tensorboard_theme(page, "Light")
    frame.wait_for_function("() => document.querySelector('[data-testid=mindspore-dashboard]').dataset.theme === 'light'")
    assert_same_origin(page, base)
    assert page.console_errors == [], page.console_errors


@pytest.mark.slow
def test_sharpness_chart_draws_the_stability_line(page, tmp_path):
    """The top-eigenvalue chart carries the run's edge-of-stability line (a reference series named by the contract)
    as a dashed line of the run's colour; a run without the line is drawn without it."""
    from tb_harness import tensorboard_process
    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    for run, with_line in (("adam", True), ("no_line", False)):
        with SummaryWriter(str(tmp_path / run), flush_secs=0.2) as w:
            for step in range(10, 210, 10):
                w.scalar(metadata.LOSS, 1.0 / step, step)
                w.scalar(metadata.SHARPNESS, 0.5 * step, step)
                if with_line:
                    w.scalar(metadata.SHARPNESS_THRESHOLD, 38 / 1e-3 / 400, step)
    with tensorboard_process(tmp_path) as base:
        frame = open_tab(page, base)
        wait_drawn(frame)
        card = chart_selector(metadata.SHARPNESS)
        frame.locator(card).scroll_into_view_if_needed()
        wait_attr(frame, metadata.SHARPNESS, "state", "v === 'drawn'")
        wait_attr(frame, metadata.SHARPNESS, "references", "v === '1'")
        attrs = chart_attrs(frame, metadata.SHARPNESS)
        assert attrs["runCount"] == "2" and attrs["references"] == "1"
        frame.locator('[data-testid=chart-card][data-tag="%s"]' % metadata.SHARPNESS).screenshot(
            path=os.path.join(ARTIFACTS, "sharpness-stability-line.png"))
