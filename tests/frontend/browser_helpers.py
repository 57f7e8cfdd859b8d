"""Helpers of the browser tests: the event data the dashboard is tested on, opening the tab, reading charts.

The event data is written by one function, :func:`write_dashboard_runs`, so it is easy to swap for a recorded
MindSpore run (the ``recorded_logdir`` fixture of ``tests/conftest.py``).
"""

import math
import os
import re
import shutil

import pytest

ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "test-artifacts")

CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]

RUNS = ("run_a", "run_b")
STEPS = 200
CORE_TAGS = ("core/loss", "core/learning_rate", "core/grad_norm", "core/step_time_ms", "core/throughput")
T0 = 1_700_000_000.0


def write_dashboard_runs(root, steps=STEPS):
    """Two runs of core/* scalars (+ interval statistics, a diagnostic and a debug tag) under ``root``.

    Returns {run: {tag: [(step, wall_time, value), ...]}}. run_b has one NaN loss at step 100.
    """
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    written = {}
    for r, run in enumerate(RUNS):
        lr0 = 0.05 if r == 0 else 0.01
        series = {}
        with SummaryWriter(os.path.join(str(root), run), flush_secs=0.5) as w:
            for step in range(1, steps + 1):
                wall = T0 + r * 5.0 + step * (0.5 + 0.1 * r)
                loss = 2.5 * math.exp(-step / (60.0 + 40 * r)) + 0.1 + 0.05 * math.sin(step * 0.7 + r)
                if run == "run_b" and step == 100:
                    loss = float("nan")
                values = {
                    "core/loss": loss,
                    "core/learning_rate": lr0 * (0.5 * (1 + math.cos(math.pi * step / steps))),
                    "core/grad_norm": 1.5 * math.exp(-step / 80.0) + 0.2 + 0.1 * math.cos(step * 0.3 + r),
                    "core/step_time_ms": 60.0 + 5 * math.sin(step * 0.2) + 10 * r,
                    "core/throughput": 32 * 1000.0 / (60.0 + 5 * math.sin(step * 0.2) + 10 * r),
                }
                if step % 10 == 0:
                    values["diagnostic/weight_norm"] = 10.0 + 0.01 * step + r
                    values["debug/data_wait_ms"] = 1.0 + 0.2 * math.sin(step)
                for tag, value in values.items():
                    w.scalar(tag, value, step, wall_time=wall)
                    series.setdefault(tag, []).append((step, wall, value))
                if step % 5 == 0 and not math.isnan(loss):
                    w.interval("core/loss", loss - 0.2, loss, loss + 0.3, 5, 0, step, wall_time=wall)
        written[run] = series
    return written


def chromium_path():
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if not path:
        pytest.skip("chromium is not installed (apt-get install chromium)")
    return path


class NetworkLog:
    """Every request the page makes (main page, the plugin iframe, workers), for asserting on origins."""

    def __init__(self, context):
        self.urls = []
        context.on("request", lambda request: self.urls.append(request.url))

    def outside(self, base):
        """Requests whose URL does not start at the TensorBoard origin (data: and blob: URLs never leave)."""
        origin = "/".join(base.split("/", 3)[:3]) + "/"
        return [u for u in self.urls if not (u.startswith(origin) or u.startswith(("data:", "blob:")))]


def assert_same_origin(page, base):
    outside = page.network_log.outside(base)
    assert outside == [], "requests left the TensorBoard origin: %r" % outside[:10]


# The page TensorBoard's iframe loads for the tab (served by TensorBoard's core plugin: our bundle's module, the
# <base> our routes are relative to).
TAB_PAGE = "/data/plugin_entry.html?name=mindspore"


def open_tab(page, base, timeout=60000, in_tensorboard=False):
    """Opens the MindSpore tab; returns its Frame once the dashboard exists.

    By default the page TensorBoard's iframe loads (:data:`TAB_PAGE`) is opened on its own: the same document,
    bundle and routes from the same server, without TensorBoard's own frontend around it, which costs the browser
    and the server more than the tab (measured: 1.1 s of CPU a page instead of 2.5 s on two cores). With
    ``in_tensorboard=True`` TensorBoard is opened on the tab and the iframe's Frame returned: for what needs the
    host (its reload button and theme menu, its reload messages, the tab in TensorBoard's page)."""
    if in_tensorboard:
        page.goto(base + "/#mindspore")
        frame = page.wait_for_selector("iframe", timeout=timeout).content_frame()
    else:
        # Chromium asks a top-level page's origin for /favicon.ico (TensorBoard has none: a 404 in the console);
        # in TensorBoard's page the host's icon link answers it.
        page.route("**/favicon.ico", lambda route: route.fulfill(status=204, body=""))
        page.goto(base + TAB_PAGE)
        frame = page.main_frame
    frame.wait_for_selector("[data-testid=mindspore-dashboard]", timeout=timeout)
    return frame


def wait_settled(frame, timeout=30000):
    """Waits until the Health panel and the status (warnings banner) have their answers: they come after the
    charts' listings (on many runs after the charts' series) and change the layout above the charts when they do.
    A test that measures where a chart is on screen calls this first."""
    frame.wait_for_function(
        """() => {
            const app = document.querySelector("[data-testid=mindspore-dashboard]");
            if (!app) return false;
            if (app.dataset.state === "empty") return true;
            const health = document.querySelector("[data-testid=health-panel]");
            return (!health || health.dataset.state !== "loading") && Boolean(app.dataset.statusState);
        }""",
        timeout=timeout,
    )


def screenshot(page, name):
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, name)
    page.screenshot(path=path, full_page=False)
    return path


def chart_selector(tag):
    return '[data-testid=chart][data-tag="%s"]' % tag.replace("\\", "\\\\").replace('"', '\\"')


def chart_attrs(frame, tag):
    return frame.eval_on_selector(chart_selector(tag), "(c) => ({...c.dataset})")


def wait_drawn(frame, tier="core", timeout=60000):
    """Waits until every chart of ``tier`` is drawn with at least one point."""
    frame.wait_for_function(
        """(tier) => {
            const charts = [...document.querySelectorAll(`[data-testid=chart][data-tier="${tier}"]`)];
            return charts.length > 0 && charts.every((c) => c.dataset.state === "drawn" && Number(c.dataset.points) > 0);
        }""",
        arg=tier,
        timeout=timeout,
    )
    wait_settled(frame, timeout=timeout)


def wait_attr(frame, tag, key, predicate_js, timeout=20000):
    """Waits until the chart's data-<key> satisfies ``predicate_js`` (a JS expression of ``v``); returns its data."""
    frame.wait_for_function(
        "([sel, key]) => { const c = document.querySelector(sel); const v = c && c.dataset[key]; return %s; }"
        % predicate_js,
        arg=[chart_selector(tag), key],
        timeout=timeout,
    )
    return chart_attrs(frame, tag)


def run_color(frame, run):
    """The run's swatch color in the run list as (r, g, b)."""
    css = frame.eval_on_selector(
        '[data-testid=run-item][data-run="%s"] .ms-swatch' % run, "(s) => getComputedStyle(s).backgroundColor"
    )
    return tuple(int(x) for x in re.findall(r"\d+", css)[:3])


def count_color_pixels(frame, tag, rgb, tolerance=40):
    """Pixels of the chart's canvas close to ``rgb`` (the drawn line of one run)."""
    return frame.evaluate(
        """([sel, rgb, tol]) => {
            const canvas = document.querySelector(sel).querySelector("canvas");
            const d = canvas.getContext("2d").getImageData(0, 0, canvas.width, canvas.height).data;
            let n = 0;
            for (let i = 0; i < d.length; i += 4) {
                if (d[i + 3] > 200 && Math.abs(d[i] - rgb[0]) + Math.abs(d[i + 1] - rgb[1]) + Math.abs(d[i + 2] - rgb[2]) < tol) n++;
            }
            return n;
        }""",
        [chart_selector(tag), list(rgb), tolerance],
    )
