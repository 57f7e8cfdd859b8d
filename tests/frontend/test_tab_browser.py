"""Headless Chromium on a real ``tensorboard`` process: the MindSpore tab draws the core charts from real event
files, run checkboxes remove a run's line, the empty state explains an empty logdir, and no request leaves the
TensorBoard origin."""

import os

import pytest

from browser_helpers import (
    CORE_TAGS,
    RUNS,
    assert_same_origin,
    chart_attrs,
    chart_selector,
    count_color_pixels,
    open_tab,
    run_color,
    screenshot,
    wait_drawn,
)
from tb_harness import tensorboard_process


def test_core_charts_draw_and_run_toggle(page, dashboard_server):
    base, written = dashboard_server
    counts = {run: {tag: len(points) for tag, points in tags.items()} for run, tags in written.items()}
    frame = open_tab(page, base, in_tensorboard=True)    # the tab in TensorBoard's page, as a user opens it
    wait_drawn(frame)

    core = frame.eval_on_selector_all("[data-testid=chart][data-tier=core]", "(cs) => cs.map((c) => c.dataset.tag)")
    assert core[:3] == ["core/loss", "core/learning_rate", "core/grad_norm"]
    assert sorted(core) == sorted(CORE_TAGS)

    # Every recorded point of both runs is drawn (200 steps < the 2000-point budget); the NaN loss is marked.
    for tag in CORE_TAGS:
        attrs = chart_attrs(frame, tag)
        assert attrs["runCount"] == "2", (tag, attrs)
        expected = sum(counts[run][tag] for run in RUNS) - (1 if tag == "core/loss" else 0)
        assert int(attrs["points"]) == expected, (tag, attrs)
    assert chart_attrs(frame, "core/loss")["nonfinite"] == "1"
    assert frame.locator("[data-testid=nonfinite-note]").count() == 1

    # Diagnostic and debug sections exist because the runs have such tags.
    tiers = frame.eval_on_selector_all("[data-testid=tier-section]", "(ss) => ss.map((s) => s.dataset.tier)")
    assert tiers == ["core", "diagnostic", "debug"]

    # All runs checked by default, each with its own color.
    boxes = frame.locator("[data-testid=run-checkbox]")
    assert boxes.count() == 2 and all(boxes.nth(i).is_checked() for i in range(2))
    color_a, color_b = run_color(frame, "run_a"), run_color(frame, "run_b")
    assert color_a != color_b
    before = count_color_pixels(frame, "core/grad_norm", color_b)
    assert before > 50, before
    screenshot(page, "dashboard.png")

    # Unchecking run_b removes its line from every chart.
    frame.locator('[data-testid=run-checkbox][data-run="run_b"]').uncheck()
    frame.wait_for_function(
        "(sel) => document.querySelector(sel).dataset.runCount === '1'", arg=chart_selector("core/grad_norm")
    )
    attrs = chart_attrs(frame, "core/grad_norm")
    assert int(attrs["points"]) == counts["run_a"]["core/grad_norm"]
    after = count_color_pixels(frame, "core/grad_norm", color_b)
    assert after < before / 20, (before, after)
    assert count_color_pixels(frame, "core/grad_norm", color_a) > 50
    screenshot(page, "dashboard-run-b-hidden.png")

    frame.locator('[data-testid=run-checkbox][data-run="run_b"]').check()
    frame.wait_for_function(
        "(sel) => document.querySelector(sel).dataset.runCount === '2'", arg=chart_selector("core/grad_norm")
    )

    scalar_requests = [u for u in page.network_log.urls if "/data/plugin/mindspore/scalars" in u]
    assert scalar_requests, page.network_log.urls
    assert_same_origin(page, base)
    assert page.console_errors == [], page.console_errors


@pytest.mark.slow
def test_empty_logdir_explains_why(page, empty_logdir):
    with tensorboard_process(empty_logdir) as base:
        frame = open_tab(page, base)
        empty = frame.wait_for_selector("[data-testid=empty-state]", timeout=60000)
        assert empty.get_attribute("data-reason") == "no_event_files"
        message = frame.text_content("[data-testid=empty-message]")
        assert "No event files" in message and str(empty_logdir) in message
        assert frame.text_content("[data-testid=empty-logdir]") == str(empty_logdir)
        assert frame.locator("[data-testid=chart]").count() == 0
        screenshot(page, "empty-state.png")
        assert_same_origin(page, base)


@pytest.mark.slow
def test_empty_state_for_ms_files_and_relative_logdir(page, tmp_path):
    """Only MindSpore _MS files, given as a relative --logdir: the tab says so and shows where the path resolved."""
    logdir = tmp_path / "ms_only"
    (logdir / "run").mkdir(parents=True)
    (logdir / "run" / "events.out.events.summary.1700000000.0.host_MS").write_bytes(b"\0" * 64)
    relative = os.path.relpath(str(logdir), os.getcwd())
    assert not os.path.isabs(relative)
    with tensorboard_process(relative) as base:
        frame = open_tab(page, base)
        empty = frame.wait_for_selector("[data-testid=empty-state]", timeout=60000)
        assert empty.get_attribute("data-reason") == "only_ms_files"
        assert "_MS" in frame.text_content("[data-testid=empty-message]")
        assert frame.text_content("[data-testid=empty-logdir]") == relative
        assert frame.text_content("[data-testid=empty-logdir-abs]") == str(logdir)
        screenshot(page, "empty-state-ms-files.png")
        assert_same_origin(page, base)


@pytest.mark.slow
def test_tab_works_under_path_prefix(page, dashboard_logdir):
    root, written = dashboard_logdir
    with tensorboard_process(root, path_prefix="/tb") as base:
        frame = open_tab(page, base, in_tensorboard=True)
        wait_drawn(frame)
        assert chart_attrs(frame, "core/grad_norm")["runCount"] == "2"
        plugin_requests = [u for u in page.network_log.urls if "/data/plugin/mindspore/" in u]
        assert plugin_requests and all(u.startswith(base + "/data/plugin/mindspore/") for u in plugin_requests)
        assert_same_origin(page, base)


@pytest.mark.slow
def test_real_mindspore_run_draws_core_tier(page, recorded_logdir):
    """Runs recorded by TrainMonitor during real MindSpore training: every core curve is drawn, point for point."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    expected = {}
    for run in ("run_a", "run_b"):
        acc = EventAccumulator(str(recorded_logdir / run), size_guidance={"scalars": 0})
        acc.Reload()
        for tag in ("core/loss", "core/learning_rate", "core/grad_norm"):
            expected[tag] = expected.get(tag, 0) + len(acc.Scalars(tag))
    with tensorboard_process(recorded_logdir) as base:
        frame = open_tab(page, base)
        wait_drawn(frame)
        for tag, points in expected.items():
            attrs = chart_attrs(frame, tag)
            assert attrs["runCount"] == "2" and int(attrs["points"]) == points, (tag, attrs)
        assert count_color_pixels(frame, "core/loss", run_color(frame, "run_a")) > 20
        screenshot(page, "real-run.png")
        assert_same_origin(page, base)
        assert page.console_errors == [], page.console_errors
