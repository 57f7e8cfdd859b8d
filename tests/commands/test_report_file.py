"""``tb-mindspore report``: the real command on real MindSpore runs, the file opened in headless Chromium with the
network off (charts, heatmaps and health findings drawn from the inlined data), one run folder, bad input."""

import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "frontend"))

from browser_helpers import screenshot  # noqa: E402
import warm  # noqa: E402

STATIC = os.path.join(os.path.dirname(os.path.dirname(HERE)), "tb_plugin_mindspore", "static", "report.js")


def report(*args):
    return warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "report"] + [str(a) for a in args],
                    capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def runs_logdir(tmp_path_factory):
    """healthy + diverged, trained by the real TrainMonitor in a child process."""
    pytest.importorskip("mindspore")
    root = tmp_path_factory.mktemp("report") / "logs"
    proc = warm.run([sys.executable, os.path.join(HERE, "report_runs.py"), str(root)], capture_output=True,
                    text=True, timeout=300, env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    return root


def inline_data(path):
    html = path.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="ms-report-data">(.*?)</script>', html, re.S)
    return html, json.loads(m.group(1))


CANVAS_INK_JS = """(sel) => {
    const c = document.querySelector(sel);
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0 && (d[i] < 230 || d[i + 1] < 230 || d[i + 2] < 230)) n++;
    return n;
}"""


@pytest.mark.slow
def test_report_opens_offline_with_charts_heatmaps_and_findings(runs_logdir, tmp_path, browser):
    if not os.path.exists(STATIC):
        pytest.skip("the frontend is not built (npm run build in frontend/)")
    out = tmp_path / "report.html"
    proc = report(runs_logdir, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout and "2 runs" in proc.stdout
    html, data = inline_data(out)
    # Self-contained: nothing to load from anywhere (no external script, style sheet, image or font).
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=", html)
    assert data["routes"]["runs"]["runs"] == ["diverged", "healthy"]
    assert data["meta"]["source"] == str(runs_logdir)

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    requests = []
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    context.on("request", lambda r: requests.append(r.url))
    page = context.new_page()
    errors = []
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(out.as_uri())
        page.wait_for_selector("[data-testid=mindspore-dashboard][data-state=ready]", timeout=30000)
        # Health findings listed: the diverged run's non-finite loss is an error.
        page.wait_for_selector("[data-testid=health-panel][data-state=ready]", timeout=30000)
        finding = page.locator('[data-testid=health-finding][data-run="diverged"][data-level=error]').first
        assert finding.is_visible()
        # Core and diagnostic charts drawn with both runs, every chart at once (no scrolling in a report).
        page.wait_for_function("""() => {
            const cs = [...document.querySelectorAll('[data-testid=chart]')];
            return cs.length >= 5 && cs.every((c) => c.dataset.state === 'drawn' || c.dataset.empty === 'true');
        }""", timeout=30000)
        loss = page.locator('[data-testid=chart][data-tag="core/loss"]')
        assert loss.get_attribute("data-run-count") == "2" and int(loss.get_attribute("data-points")) > 10
        assert page.evaluate(CANVAS_INK_JS, '[data-testid=chart][data-tag="core/loss"] canvas') > 500
        # Per-layer heatmaps drawn for both runs.
        page.wait_for_selector('[data-testid=heatmap-panel][data-tag="debug/update_ratio"] '
                               '[data-testid=heatmap][data-state=drawn]', timeout=30000)
        maps = page.locator('[data-testid=heatmap-panel][data-tag="debug/update_ratio"] [data-testid=heatmap]')
        assert maps.count() >= 1
        assert page.evaluate(CANVAS_INK_JS, '[data-testid=heatmap-panel][data-tag="debug/update_ratio"] '
                                            '[data-testid=heatmap] canvas') > 100
        assert "Report of" in page.text_content("[data-testid=report-note]")
        screenshot(page, "report.png")
        page.screenshot(path=os.path.join(os.path.dirname(screenshot(page, "report.png")), "report-full.png"),
                        full_page=True)
    finally:
        context.close()
    assert all(u.startswith("file:") for u in requests), requests
    assert errors == [], errors


@pytest.mark.slow
def test_report_of_one_run_folder(runs_logdir, tmp_path):
    if not os.path.exists(STATIC):
        pytest.skip("the frontend is not built (npm run build in frontend/)")
    out = tmp_path / "one.html"
    proc = report(runs_logdir / "healthy", "--out", out, "--title", "<b>healthy</b>")
    assert proc.returncode == 0, proc.stderr
    assert "1 run," in proc.stdout
    html, data = inline_data(out)
    assert data["routes"]["runs"]["runs"] == ["healthy"]
    assert "core/loss" in data["scalars"]["healthy"]
    assert "debug/update_ratio" in data["layers"]["healthy"]
    assert "<title>&lt;b&gt;healthy&lt;/b&gt;</title>" in html


@pytest.mark.slow
def test_report_bad_input_one_line_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    cases = [
        ([tmp_path / "missing"], "no such folder"),
        ([empty], "no training runs"),
        ([empty, "--out", tmp_path / "nowhere" / "r.html"], "does not exist"),
        ([empty, "--out", tmp_path], "is a folder"),
        ([], "missing LOGDIR_OR_RUN"),
    ]
    for args, words in cases:
        proc = report(*args)
        assert proc.returncode == 2, (args, proc.stderr)
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and lines[0].startswith("tb-mindspore report: error:"), lines
    help_ = report("--help")
    assert help_.returncode == 0 and "LOGDIR_OR_RUN" in help_.stdout and "--out" in help_.stdout
