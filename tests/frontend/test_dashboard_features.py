"""Dashboard features in headless Chromium on a real ``tensorboard``: axis modes, log y, smoothing, tooltips,
min/max band, CSV / JSON download, run filter, live refresh keeping zoom / selection / scroll, and names shown as
text (never run as HTML)."""

import csv
import io
import json
import math
import os
import time

import pytest

from browser_helpers import (
    T0,
    assert_same_origin,
    chart_attrs,
    chart_selector,
    open_tab,
    screenshot,
    wait_attr,
    wait_drawn,
    write_dashboard_runs,
)
from tb_harness import tensorboard_process


@pytest.fixture
def tab(page, dashboard_server):
    base, written = dashboard_server
    frame = open_tab(page, base)
    wait_drawn(frame)
    yield page, frame, written
    assert_same_origin(page, base)


def set_smoothing(frame, value):
    box = frame.locator("[data-testid=smoothing-input]")
    box.fill(str(value))
    box.dispatch_event("change")


def canvas_png(frame, tag):
    return frame.eval_on_selector(chart_selector(tag), "(c) => c.querySelector('canvas').toDataURL()")


def test_x_axis_modes_and_log_y(tab):
    page, frame, written = tab
    tag = "core/grad_norm"
    attrs = chart_attrs(frame, tag)
    assert float(attrs["xMin"]) == 1 and float(attrs["xMax"]) == 200

    frame.check("[data-testid=x-axis-relative]")
    rel_max = max(p[1] - pts[0][1] for pts in (written[r][tag] for r in written) for p in pts)
    attrs = wait_attr(frame, tag, "xMax", "v !== undefined && Number(v) < 1000")
    assert float(attrs["xMin"]) == pytest.approx(0, abs=1e-6)
    assert float(attrs["xMax"]) == pytest.approx(rel_max, rel=1e-6)
    screenshot(page, "axis-relative.png")

    frame.check("[data-testid=x-axis-wall]")
    attrs = wait_attr(frame, tag, "xMin", "v !== undefined && Number(v) > 1e9")
    first_wall = min(pts[0][1] for pts in (written[r][tag] for r in written))
    assert float(attrs["xMin"]) == pytest.approx(first_wall, abs=1e-3)
    screenshot(page, "axis-wall.png")

    frame.check("[data-testid=x-axis-step]")
    attrs = wait_attr(frame, tag, "xMax", "Number(v) === 200")
    lin_min = float(chart_attrs(frame, "core/learning_rate")["yMin"])
    assert lin_min <= 0  # the learning rate decays to 0: a linear axis reaches 0
    frame.check("[data-testid=log-y]")
    attrs = wait_attr(frame, "core/learning_rate", "yMin", "Number(v) > 0")
    assert float(attrs["points"]) > 0
    screenshot(page, "log-y.png")


def test_smoothing_changes_the_line(tab):
    page, frame, written = tab
    tag = "core/loss"
    set_smoothing(frame, 0)
    attrs = wait_attr(frame, tag, "series", "v === '6'")  # per run: the line + the min/max band (2 series)
    raw_png = canvas_png(frame, tag)
    set_smoothing(frame, 0.95)
    attrs = wait_attr(frame, tag, "series", "v === '8'")  # + the smoothed line
    smooth_png = canvas_png(frame, tag)
    assert raw_png != smooth_png
    assert frame.locator("[data-testid=smoothing-slider]").input_value() == "0.95"
    screenshot(page, "smoothing-0.95.png")


def hover_chart(frame, tag, fraction):
    over = frame.locator(chart_selector(tag) + " .u-over")
    box = over.bounding_box()
    over.hover(position={"x": box["width"] * fraction, "y": box["height"] / 2})
    tooltip = frame.locator(chart_selector(tag) + " [data-testid=chart-tooltip]")
    tooltip.wait_for(state="visible", timeout=10000)
    return tooltip


def test_tooltip_shows_run_step_value_time(tab):
    page, frame, written = tab
    tag = "core/grad_norm"
    set_smoothing(frame, 0)
    wait_attr(frame, tag, "series", "v === '2'")
    tooltip = hover_chart(frame, tag, 0.5)
    rows = tooltip.locator("tr[data-run]")
    assert rows.count() == 2
    for i in range(2):
        row = rows.nth(i)
        run = row.get_attribute("data-run")
        cells = [c.strip() for c in row.locator("td").all_text_contents()]
        # swatch, run, value, step, time
        assert cells[1] == run
        step = int(cells[3])
        assert 80 <= step <= 120, cells
        expected = {p[0]: p for p in written[run][tag]}[step]
        assert float(cells[2]) == pytest.approx(expected[2], rel=2e-3), (cells, expected)
        assert cells[4].startswith(time.strftime("%Y-%m-%d", time.localtime(expected[1])))
    screenshot(page, "tooltip.png")


def test_interval_band_toggles(tab):
    page, frame, written = tab
    attrs = chart_attrs(frame, "core/loss")
    assert attrs["series"] == "8"  # 2 runs x (raw, smoothed, band max, band min)
    assert chart_attrs(frame, "core/grad_norm")["series"] == "4"  # no interval recorded for grad_norm
    frame.uncheck("[data-testid=show-interval]")
    wait_attr(frame, "core/loss", "series", "v === '4'")  # raw + smoothed per run


def open_download_menu(frame, tag):
    card = frame.locator('[data-testid=chart-card][data-tag="%s"]' % tag)
    card.locator("[data-testid=download-button]").click()
    return card.locator("[data-testid=download-menu]")


def test_csv_and_json_downloads_match_the_data(tab, tmp_path):
    page, frame, written = tab
    tag = "core/loss"
    menu = open_download_menu(frame, tag)
    with page.expect_download() as info:
        menu.locator('[data-testid=download-csv][data-run="run_b"]').click()
    path = tmp_path / "loss.csv"
    info.value.save_as(path)
    assert info.value.suggested_filename == "run_b__core_loss.csv"
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    expected = written["run_b"][tag]
    assert [int(r["step"]) for r in rows] == [p[0] for p in expected]
    for r, (step, wall, value) in zip(rows, expected):
        assert float(r["wall_time"]) == pytest.approx(wall, abs=1e-3)
        if math.isnan(value):
            assert r["value"] == "NaN"
        else:
            assert float(r["value"]) == pytest.approx(value, rel=1e-6)  # float32 on disk

    menu = open_download_menu(frame, tag)
    with page.expect_download() as info:
        menu.locator('[data-testid=download-json][data-run="run_a"]').click()
    path = tmp_path / "loss.json"
    info.value.save_as(path)
    body = json.loads(path.read_text())
    assert body["run"] == "run_a" and body["tag"] == tag
    assert [p["step"] for p in body["points"]] == [p[0] for p in written["run_a"][tag]]
    assert body["interval"] and set(body["interval"][0]) == {"step", "min", "mean", "max", "count", "nonfinite"}


def test_run_regex_filter(tab):
    page, frame, written = tab
    frame.fill("[data-testid=run-filter]", "_A$")
    wait_attr(frame, "core/loss", "runCount", "v === '1'")
    assert frame.locator('[data-testid=run-item][data-run="run_b"]').is_hidden()
    assert frame.locator('[data-testid=run-item][data-run="run_a"]').is_visible()
    frame.fill("[data-testid=run-filter]", "(")
    assert frame.locator(".ms-filter-error").is_visible()
    wait_attr(frame, "core/loss", "runCount", "v === '2'")
    frame.fill("[data-testid=run-filter]", "")
    assert frame.locator(".ms-filter-error").is_hidden()

    frame.click("[data-testid=runs-none]")
    attrs = wait_attr(frame, "core/loss", "runCount", "v === '0'")
    assert attrs["points"] == "0" and attrs["state"] == "empty"
    assert "No selected run" in frame.text_content(
        '[data-testid=chart-card][data-tag="core/loss"] [data-testid=chart-status]'
    )
    frame.click("[data-testid=runs-all]")
    wait_attr(frame, "core/loss", "runCount", "v === '2'")
    assert page.console_errors == [], page.console_errors


def drag_zoom(frame, tag, start, stop):
    over = frame.locator(chart_selector(tag) + " .u-over")
    box = over.bounding_box()
    y = box["y"] + box["height"] / 2
    mouse = frame.page.mouse
    mouse.move(box["x"] + box["width"] * start, y)
    mouse.down()
    mouse.move(box["x"] + box["width"] * (start + stop) / 2, y, steps=4)
    mouse.move(box["x"] + box["width"] * stop, y, steps=4)
    mouse.up()


def refresh_count(frame):
    return int(frame.eval_on_selector("[data-testid=mindspore-dashboard]", "(d) => d.dataset.refreshCount || '0'"))


@pytest.mark.slow
def test_live_refresh_keeps_zoom_selection_and_scroll(page, tmp_path):
    root = tmp_path / "live"
    root.mkdir()
    write_dashboard_runs(root, steps=60)
    with tensorboard_process(root) as base:
        frame = open_tab(page, base, in_tensorboard=True)    # TensorBoard's reload button is pressed below
        wait_drawn(frame)
        tag = "core/grad_norm"
        assert chart_attrs(frame, tag)["points"] == "120"

        drag_zoom(frame, tag, 0.3, 0.6)
        attrs = wait_attr(frame, tag, "zoomed", "v === 'true'")
        x_min, x_max = float(attrs["xMin"]), float(attrs["xMax"])
        assert 1 < x_min < x_max < 60
        frame.locator('[data-testid=run-checkbox][data-run="run_b"]').uncheck()
        wait_attr(frame, tag, "runCount", "v === '1'")
        assert chart_attrs(frame, tag)["zoomed"] == "true"  # toggling a run keeps the zoom
        frame.eval_on_selector("[data-testid=main]", "(m) => { m.scrollTop = 120; }")

        # More training steps arrive in run_a (a second event file, as after a restart).
        from tb_plugin_mindspore.writing.writer import SummaryWriter

        with SummaryWriter(os.path.join(str(root), "run_a")) as w:
            for step in range(61, 101):
                w.scalar(tag, 0.3 + 0.001 * step, step, wall_time=T0 + 100 + step)

        deadline = time.time() + 60
        while True:
            before = refresh_count(frame)
            frame.click("[data-testid=refresh]")
            frame.wait_for_function(
                "(n) => Number(document.querySelector('[data-testid=mindspore-dashboard]').dataset.refreshCount) > n",
                arg=before,
            )
            page.wait_for_timeout(300)
            if chart_attrs(frame, tag)["points"] == "100":
                break
            assert time.time() < deadline, chart_attrs(frame, tag)
            page.wait_for_timeout(700)

        attrs = chart_attrs(frame, tag)
        assert attrs["zoomed"] == "true" and attrs["runCount"] == "1"
        assert float(attrs["xMin"]) == pytest.approx(x_min) and float(attrs["xMax"]) == pytest.approx(x_max)
        assert not frame.locator('[data-testid=run-checkbox][data-run="run_b"]').is_checked()
        assert frame.eval_on_selector("[data-testid=main]", "(m) => m.scrollTop") == 120

        # TensorBoard's own reload button refreshes the tab too (through TensorBoard's plugin messages).
        before = refresh_count(frame)
        page.click("app-header-reload button.reload-button")
        frame.wait_for_function(
            """(n) => { const d = document.querySelector('[data-testid=mindspore-dashboard]').dataset;
                       return Number(d.refreshCount) > n && d.refreshSource === 'tensorboard'; }""",
            arg=before,
            timeout=20000,
        )
        # Double click resets the zoom to the whole (longer) run.
        frame.locator(chart_selector(tag) + " .u-over").dblclick()
        attrs = wait_attr(frame, tag, "zoomed", "v === 'false'")
        assert float(attrs["xMax"]) == 100
        screenshot(page, "live-refresh.png")
        assert_same_origin(page, base)


HOSTILE_RUN = '<img src=x onerror="window.__pwned=1">'
QUOTED_RUN = "qu\"ote's & ünïcødé ラン"
HOSTILE_TAG = "core/<b onmouseover=window.__pwned=2>bold</b>"


@pytest.mark.slow
def test_names_are_shown_as_text(page, tmp_path):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path / "hostile"
    for run in (HOSTILE_RUN, QUOTED_RUN):
        with SummaryWriter(os.path.join(str(root), run)) as w:
            for step in range(1, 21):
                w.scalar("core/loss", 1.0 / step, step, wall_time=T0 + step)
                w.scalar(HOSTILE_TAG, float(step), step, wall_time=T0 + step)
    with tensorboard_process(root) as base:
        frame = open_tab(page, base)
        wait_drawn(frame)
        names = frame.eval_on_selector_all("[data-testid=run-item] .ms-run-name", "(ns) => ns.map((n) => n.textContent)")
        assert sorted(names) == sorted([HOSTILE_RUN, QUOTED_RUN])
        tags = frame.eval_on_selector_all("[data-testid=chart]", "(cs) => cs.map((c) => c.dataset.tag)")
        assert HOSTILE_TAG in tags
        title = frame.eval_on_selector_all(
            "[data-testid=chart-title]", "(ts) => ts.map((t) => t.textContent)"
        )
        assert HOSTILE_TAG[len("core/"):] in title
        hover_chart(frame, HOSTILE_TAG, 0.5)
        open_download_menu(frame, HOSTILE_TAG)
        # Nothing the names hold became an element or ran.
        assert frame.evaluate("document.querySelectorAll('img, b').length") == 0
        assert frame.evaluate("[...document.scripts].every((s) => !s.textContent.includes('__pwned'))")
        assert frame.evaluate("window.__pwned === undefined")
        assert page.evaluate("window.__pwned === undefined")
        screenshot(page, "hostile-names.png")
        assert_same_origin(page, base)
