"""The Health panel and the damaged-records banner in headless Chromium, against a real ``tensorboard``.

The runs are real tiny MindSpore trainings from ``tests/health/health_training.py``: one with a NaN injected at a
known step (the ``nonfinite`` rule, an error) and a healthy control (ok). They are trained in a subprocess, so
MindSpore's global context stays out of the browser tests' process. The banner test damages one record of a real
MindSpore summary file (from ``tests/ms_fixture_lib.py``).
"""

import os
import sys
import textwrap

import pytest

from browser_helpers import assert_same_origin, chart_attrs, chart_selector, open_tab, screenshot
from tb_harness import fetch_json, tensorboard_process

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
import ms_fixture_lib  # noqa: E402
import warm  # noqa: E402

NAN_STEP = 14            # one sample of batch 14 (1-based) holds +Inf: the loss is NaN from step 14 on
EPOCHS = 3
STEPS_PER_EPOCH = 16     # 16 batches of health_training.BATCH samples

TRAIN = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, sys.argv[2])
    import health_training as ht

    root, nan_step, epochs = sys.argv[1], int(sys.argv[3]), int(sys.argv[4])
    poisoned = ht.classification_data(n=16 * ht.BATCH, poison_row=(nan_step - 1) * ht.BATCH + 5)
    ht.train(root + "/nan_run", train_data=poisoned, epochs=epochs, collect_freq=1, extra=False)
    ht.train(root + "/healthy", epochs=6, extra=False)
    """
)


@pytest.fixture(scope="module")
def health_logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("health_panel") / "logs"
    root.mkdir()
    env = dict(os.environ, GLOG_v="3", OMP_NUM_THREADS="1")
    proc = warm.run(
        [sys.executable, "-c", TRAIN, str(root), os.path.join(TESTS, "health"), str(NAN_STEP), str(EPOCHS)],
        env=env, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-5000:]
    return root


@pytest.fixture(scope="module")
def health_server(health_logdir):
    with tensorboard_process(health_logdir) as base:
        yield base


def _wait_health(frame, runs, timeout=60000):
    frame.wait_for_function(
        """(n) => { const p = document.querySelector("[data-testid=health-panel]");
                   return p && p.dataset.state === "ready" && Number(p.dataset.runs) === n; }""",
        arg=runs,
        timeout=timeout,
    )


def _run_row(frame, run):
    return '[data-testid=health-run][data-run="%s"]' % run


@pytest.mark.slow
def test_health_panel_shows_findings_and_highlights_the_step_range(page, health_server):
    base = health_server
    # What the route says (the panel must show exactly this).
    report = fetch_json(base + "/data/plugin/mindspore/health")
    statuses = {r["run"]: r["status"] for r in report["runs"]}
    assert statuses == {"nan_run": "error", "healthy": "ok"}
    (loss_finding,) = [f for r in report["runs"] if r["run"] == "nan_run" for f in r["findings"]
                       if f["rule"] == "nonfinite" and f["tag"] == "core/loss"]
    assert loss_finding["steps"] == [NAN_STEP, EPOCHS * STEPS_PER_EPOCH]
    expected_range = "%d-%d" % tuple(loss_finding["steps"])

    frame = open_tab(page, base)
    _wait_health(frame, 2)
    panel = frame.eval_on_selector("[data-testid=health-panel]", "(p) => ({...p.dataset})")
    assert panel["status"] == "error"
    assert frame.get_attribute("[data-testid=health-toggle]", "aria-expanded") == "true"

    # Badges: error for the problem run, ok for the control.
    assert frame.get_attribute(_run_row(frame, "nan_run") + " [data-testid=health-badge]", "data-status") == "error"
    assert frame.inner_text(_run_row(frame, "nan_run") + " [data-testid=health-badge]").strip().lower() == "error"
    assert frame.get_attribute(_run_row(frame, "healthy") + " [data-testid=health-badge]", "data-status") == "ok"
    assert frame.locator(_run_row(frame, "healthy") + " [data-testid=health-finding]").count() == 0 or \
        frame.is_hidden(_run_row(frame, "healthy") + " [data-testid=health-findings]")

    # The problem run's findings: errors first, the rule and its step range as text and as attributes.
    findings = frame.eval_on_selector_all(
        _run_row(frame, "nan_run") + " [data-testid=health-finding]", "(els) => els.map((e) => ({...e.dataset}))"
    )
    levels = [f["level"] for f in findings]
    assert levels == sorted(levels, key=["error", "warn", "info"].index)
    sel = (_run_row(frame, "nan_run") + ' [data-testid=health-finding][data-rule=nonfinite][data-tag="core/loss"]')
    assert frame.get_attribute(sel, "data-steps") == expected_range
    assert frame.inner_text(sel + " [data-testid=health-rule]") == "nonfinite"
    assert frame.inner_text(sel + " [data-testid=health-steps]") == "steps %d\u2013%d" % tuple(loss_finding["steps"])
    assert "NaN" in frame.inner_text(sel + " [data-testid=health-message]")
    screenshot(page, "health-panel.png")

    # Clicking the finding scrolls to the loss chart and shades the step range on it.
    frame.click(sel + " button")
    chart = chart_selector("core/loss")
    frame.wait_for_function(
        """([sel, range]) => { const c = document.querySelector(sel);
               return c && c.dataset.highlight === range && c.dataset.state === "drawn"
                   && c.dataset.highlightPx && c.dataset.highlightPx !== "outside"; }""",
        arg=[chart, expected_range],
        timeout=30000,
    )
    frame.wait_for_function(
        """(sel) => { const r = document.querySelector(sel).getBoundingClientRect();
                      return r.top >= 0 && r.bottom <= window.innerHeight; }""",
        arg=chart,
        timeout=10000,
    )
    attrs = chart_attrs(frame, "core/loss")
    assert attrs["highlightRun"] == "nan_run"
    # The shaded band starts at the NaN step's pixel, which lies inside the x range drawn.
    assert float(attrs["xMin"]) <= NAN_STEP <= float(attrs["xMax"])
    assert frame.get_attribute(sel, "data-active") == "true"
    screenshot(page, "health-highlight.png")

    # A refresh (live reload) keeps the open panel, the clicked finding and the highlight.
    count = int(frame.get_attribute("[data-testid=mindspore-dashboard]", "data-refresh-count"))
    frame.click("[data-testid=refresh]")
    frame.wait_for_function(
        "(n) => Number(document.querySelector('[data-testid=mindspore-dashboard]').dataset.refreshCount) > n",
        arg=count,
    )
    _wait_health(frame, 2)
    assert frame.get_attribute(sel, "data-active") == "true"
    assert chart_attrs(frame, "core/loss")["highlight"] == expected_range

    # Only the runs shown in the run selector: with the problem run unchecked, all is ok and the panel collapses.
    frame.click('[data-testid=run-item][data-run="nan_run"] [data-testid=run-checkbox]')
    _wait_health(frame, 1)
    assert frame.get_attribute("[data-testid=health-panel]", "data-status") == "ok"
    assert frame.get_attribute("[data-testid=health-toggle]", "aria-expanded") == "false"
    assert frame.is_hidden("[data-testid=health-body]")
    frame.click('[data-testid=run-item][data-run="nan_run"] [data-testid=run-checkbox]')
    _wait_health(frame, 2)
    assert frame.get_attribute("[data-testid=health-panel]", "data-status") == "error"

    assert page.console_errors == []
    assert_same_origin(page, base)


# -- damaged records ------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def damaged_logdir(tmp_path_factory):
    """A real MindSpore summary run whose third record has one flipped byte inside its payload."""
    fixtures = ms_fixture_lib.ms_fixtures(tmp_path_factory)
    root = tmp_path_factory.mktemp("damaged") / "logs"
    root.mkdir()
    dest = fixtures.copy_run("record", root)
    rel = fixtures.files("record")[0]
    offsets = [entry[0] for entry in fixtures.reference[rel]]
    target = sorted(offsets)[2]
    path = os.path.join(dest, os.path.basename(rel))
    data = bytearray(open(path, "rb").read())
    data[target + 12 + 5] ^= 0xFF           # 12 header bytes (length, length checksum), then the payload
    with open(path, "wb") as f:
        f.write(bytes(data))
    return root, os.path.join("record", os.path.basename(rel)), target


@pytest.mark.slow
def test_warnings_banner_lists_the_skipped_record(page, damaged_logdir):
    root, rel, offset = damaged_logdir
    with tensorboard_process(root) as base:
        frame = open_tab(page, base)
        frame.wait_for_selector("[data-testid=warnings-banner]:not([hidden])", timeout=60000)
        assert frame.get_attribute("[data-testid=warnings-banner]", "data-count") == "1"
        assert frame.inner_text("[data-testid=warnings-title]") == "1 unreadable input left out"
        assert frame.is_hidden("[data-testid=warnings-list]")
        frame.click("[data-testid=warnings-toggle]")
        item = frame.eval_on_selector("[data-testid=warning-item]", "(e) => ({...e.dataset, text: e.textContent})")
        assert item["run"] == "record"
        assert item["file"] == rel
        assert item["offset"] == str(offset)
        assert rel in item["text"] and str(offset) in item["text"]
        assert "checksum" in item["text"]
        screenshot(page, "warnings-banner.png")
        # The open list survives a refresh.
        frame.click("[data-testid=refresh]")
        frame.wait_for_timeout(1500)
        assert frame.is_visible("[data-testid=warning-item]")
        assert page.console_errors == []
        assert_same_origin(page, base)
