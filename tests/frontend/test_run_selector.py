"""The run selector against a real ``tensorboard``: plain-text search, regex filter, grouping by a regex capture and
by a hyperparameter (a group drawn as the mean of its runs with a min / max band), and the short form of
``bench/many_runs_ui.py`` (first render and grouping on many runs)."""

import json
import os
import sys

import pytest

from browser_helpers import open_tab, screenshot, wait_drawn, wait_attr
from tb_harness import tensorboard_process

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                "bench"))
import many_runs_ui  # noqa: E402

RUNS = 40          # 10 learning rates x 4 batch sizes
TAGS = 6
POINTS = 20


@pytest.fixture(scope="module")
def selector_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("selector") / "logs"
    many_runs_ui.write_runs(root, RUNS, TAGS, POINTS)
    with tensorboard_process(root) as base:
        many_runs_ui.wait_loaded(base, RUNS, timeout=120)
        yield base


def expected_loss(run_name, step):
    """The value write_runs wrote, as float32."""
    import math

    import numpy as np

    hp = dict(many_runs_ui.run_names(RUNS))[run_name]
    rate = 0.02 * (1 + math.log10(hp["lr"]) + 4.5) / 5
    return float(np.float32(2.5 * math.exp(-rate * step) + 0.01 * hp["seed"]))


def group_json(page, frame, group, tmp_path):
    card = frame.locator('[data-testid=chart-card][data-tag="core/loss"]')
    card.locator("[data-testid=download-button]").click()
    with page.expect_download() as info:
        card.locator('[data-testid=download-menu] [data-testid=download-json][data-run="%s"]' % group).click()
    path = tmp_path / "group.json"
    info.value.save_as(path)
    return json.loads(path.read_text())


@pytest.mark.slow
def test_search_filter_and_grouping(selector_server, page, tmp_path):
    frame = open_tab(page, selector_server)
    wait_drawn(frame)
    assert frame.text_content("[data-testid=run-count]") == str(RUNS)
    # Regex filter, then the same text searched literally.
    frame.fill("[data-testid=run-filter]", r"lr0\.1_")
    wait_attr(frame, "core/loss", "runCount", "v === '4'")
    assert frame.text_content("[data-testid=run-count]") == "4 / %d" % RUNS
    frame.click("[data-testid=run-filter-regex]")
    wait_attr(frame, "core/loss", "runCount", "v === '0'")          # the backslash is now a character
    frame.fill("[data-testid=run-filter]", "(")                         # no regex error in text mode
    assert frame.locator(".ms-filter-error").is_hidden()
    frame.fill("[data-testid=run-filter]", "lr0.1_")
    wait_attr(frame, "core/loss", "runCount", "v === '4'")
    frame.fill("[data-testid=run-filter]", "")
    frame.click("[data-testid=run-filter-regex]")
    wait_attr(frame, "core/loss", "runCount", "v === '%d'" % RUNS)

    # Group by the learning rate in the run names: one line per group, its mean with the min / max band.
    frame.select_option("[data-testid=run-group-by]", "regex")
    frame.fill("[data-testid=run-group-regex]", "lr([0-9.e-]+)")
    attrs = wait_attr(frame, "core/loss", "runCount", "v === '10'")
    assert attrs["state"] == "drawn"
    headers = frame.eval_on_selector_all("[data-testid=run-group]", "(hs) => hs.map((h) => [h.dataset.group, h.dataset.count])")
    assert [h[0] for h in headers] == many_runs_ui.LRS and all(h[1] == "4" for h in headers)
    body = group_json(page, frame, "0.01 (4 runs)", tmp_path)
    members = [n for n, _ in many_runs_ui.run_names(RUNS) if n.startswith("lr0.01_")]
    assert len(members) == 4 and len(body["points"]) == POINTS
    for point, row in zip(body["points"], body["interval"]):
        values = [expected_loss(m, point["step"]) for m in members]
        assert point["value"] == pytest.approx(sum(values) / 4, rel=1e-5)
        assert row["min"] == pytest.approx(min(values), rel=1e-5) and row["max"] == pytest.approx(max(values), rel=1e-5)
        assert row["count"] == 4
    # Unchecking a run takes it out of its group.
    frame.click('[data-testid=run-item][data-run="%s"] [data-testid=run-checkbox]' % members[0])
    frame.wait_for_selector('[data-testid=chart-card][data-tag="core/loss"] [data-testid=download-json]'
                            '[data-run="0.01 (3 runs)"]', state="attached")
    body = group_json(page, frame, "0.01 (3 runs)", tmp_path)
    assert body["interval"][0]["count"] == 3
    frame.click('[data-testid=run-item][data-run="%s"] [data-testid=run-checkbox]' % members[0])

    # Group by a hyperparameter from the run information.
    frame.select_option("[data-testid=run-group-by]", "hparam")
    # make_run_dir's "bs" is offered under its canonical name.
    frame.wait_for_selector('[data-testid=run-group-hparam] option[value="batch_size"]', state="attached")
    frame.select_option("[data-testid=run-group-hparam]", "batch_size")
    wait_attr(frame, "core/loss", "runCount", "v === '4'")
    headers = frame.eval_on_selector_all("[data-testid=run-group]", "(hs) => hs.map((h) => h.dataset.group)")
    assert headers == ["batch_size=16", "batch_size=32", "batch_size=64", "batch_size=128"]
    screenshot(page, "run-selector-grouped.png")
    frame.select_option("[data-testid=run-group-by]", "none")
    wait_attr(frame, "core/loss", "runCount", "v === '%d'" % RUNS)
    assert page.console_errors == [], page.console_errors


@pytest.mark.slow
@pytest.mark.serial   # a render-time bound
def test_many_runs_first_render_short(tmp_path, browser):
    """Short form of bench/many_runs_ui.py: 300 runs x 20 tags (the bench: 2,000 runs, BENCHMARKS.md)."""
    runs = 300
    root = tmp_path / "logs"
    many_runs_ui.write_runs(root, runs, 20, 10)
    with tensorboard_process(root, timeout=120) as base:
        many_runs_ui.wait_loaded(base, runs, timeout=300)
        figures = many_runs_ui.measure(browser, base, runs, reloads=1)
    assert figures["capped"] and figures["runs_per_chart"] == 100
    assert figures["groups"] == 10
    # Target 3 s on 2,000 runs (the bench); a generous bound here for a shared machine.
    assert min(figures["first_render_s"]) < 6.0, figures


@pytest.mark.slow
def test_a_catastrophic_filter_pattern_never_freezes_the_page(tmp_path, page):
    """^(a+)+$ against a long run name took exponential time in JavaScript's RegExp (the page froze); the filter
    matches in linear time, and a pattern it cannot run that way (a backreference) is refused with the reason."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writing import summary

    root = tmp_path / "logs"
    names = ["a" * 60 + "b", "a" * 30, "lr0.1"]
    for name in names:
        writer = EventFileWriter(str(root / name))
        for step in range(1, 6):
            writer.add_event(event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=summary_pb2.Summary(
                value=[summary.scalar(metadata.LOSS, 1.0 / step)])))
        writer.close()
    with tensorboard_process(root) as base:
        frame = open_tab(page, base)
        wait_drawn(frame)
        frame.fill("[data-testid=run-filter]", "^(a+)+$")
        # The page answers at once: the count is already updated when the next evaluation runs.
        assert frame.evaluate("() => 1 + 1") == 2
        wait_attr(frame, "core/loss", "runCount", "v === '1'")
        assert frame.text_content("[data-testid=run-count]") == "1 / 3"
        assert frame.locator("[data-testid=run-filter-error]").is_hidden()
        frame.fill("[data-testid=run-filter]", r"(a)\1")
        frame.wait_for_selector("[data-testid=run-filter-error]", state="visible")
        assert "backreferences are not supported" in frame.text_content("[data-testid=run-filter-error]")
        frame.fill("[data-testid=run-filter]", "")
        wait_attr(frame, "core/loss", "runCount", "v === '3'")
    assert page.console_errors == [], page.console_errors
