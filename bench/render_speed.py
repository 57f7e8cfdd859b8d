"""Benchmark: the MindSpore tab in headless Chromium (Debian's ``chromium``) against a real ``tensorboard``.

    python bench/render_speed.py [--path DIR] [--reloads 3] [--what charts,heatmap]

* ``charts``: first render of a tab with 20 charts (5 core, 8 diagnostic, 7 debug tags; 2 runs x 5,000 steps each,
  downsampled by the server), in a window tall enough to show all of them. The server is warmed once (the first
  read of a run is TensorBoard loading it, not the tab); then the page is reloaded ``--reloads`` times and each
  time measured from the start of the plugin frame's navigation until every chart is drawn. Also counts the
  scalar requests the page made.
* ``heatmap``: a 200 layers x 5,000 steps update-ratio heatmap: time to draw its canvas (``HeatmapCanvas.draw``,
  every cell visited), the whole render (labels, axis, canvas), and fetch + decode + statistics, over several
  redraws (sorting again redraws).

Issue targets: first render <= 1.5 s, heatmap of 200 x 5,000 cells drawn in <= 1 s.
Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import json
import math
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))
sys.path.insert(0, os.path.join(ROOT, "tests", "frontend"))

from browser_helpers import CHROMIUM_ARGS, chromium_path  # noqa: E402
from tb_harness import tensorboard_process  # noqa: E402

TAGS = ["core/loss", "core/learning_rate", "core/grad_norm", "core/step_time_ms", "core/throughput"] + [
    "diagnostic/metric_%02d" % i for i in range(8)
] + ["debug/stat_%02d" % i for i in range(7)]
STEPS = 5000
LAYERS = 200
LAYER_STEPS = 5000


def write_chart_runs(root):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    for r, run in enumerate(("run_a", "run_b")):
        with SummaryWriter(os.path.join(str(root), run), max_queue=len(TAGS) * STEPS + 10) as w:
            for step in range(1, STEPS + 1):
                for k, tag in enumerate(TAGS):
                    w.scalar(tag, math.sin(step * 0.01 * (k + 1)) + r + 1e-3 * step, step, wall_time=1.7e9 + step)


def layer_names(n=LAYERS):
    parts = ["attn.q", "attn.k", "attn.v", "attn.o", "ffn.w1", "ffn.w2", "norm1", "norm2"]
    return ["encoder.layers.%d.%s.weight" % (i // len(parts), parts[i % len(parts)]) for i in range(n)]


def write_layer_run(root, layers=LAYERS, steps=LAYER_STEPS, run="layers_run"):
    """One run with a ``debug/update_ratio`` vector of ``layers`` values at each of ``steps`` steps (log-normal
    around 1e-5 .. 1e-1 per layer, slowly decaying, with noise)."""
    import numpy as np

    from tb_plugin_mindspore.writing.writer import SummaryWriter

    rng = np.random.default_rng(0)
    names = layer_names(layers)
    base = rng.uniform(-5, -1, size=layers)
    with SummaryWriter(os.path.join(str(root), run), max_queue=steps + 10) as w:
        for s in range(1, steps + 1):
            v = 10 ** (base - 0.5 * s / steps + rng.normal(0, 0.15, layers))
            w.layers("debug/update_ratio", names, v, s, wall_time=1.7e9 + s)
    return names


def all_drawn_js(n):
    return ("() => { const cs = [...document.querySelectorAll('[data-testid=chart]')];"
            " return cs.length === %d && cs.every((c) => c.dataset.state === 'drawn'); }" % n)


def measure_charts(browser, root, reloads=3):
    context = browser.new_context(viewport={"width": 1400, "height": 4200})
    page = context.new_page()
    urls = []
    page.on("request", lambda r: urls.append(r.url))
    try:
        with tensorboard_process(root) as base:
            page.goto(base + "/#mindspore")
            frame = page.wait_for_selector("iframe", timeout=120000).content_frame()
            frame.wait_for_function(all_drawn_js(len(TAGS)), timeout=300000)
            timings = []
            requests = []
            for _ in range(reloads):
                urls.clear()
                page.reload()
                frame = page.wait_for_selector("iframe", timeout=60000).content_frame()
                frame.wait_for_function(all_drawn_js(len(TAGS)), timeout=120000, polling="raf")
                timings.append(frame.evaluate("performance.now()") / 1000.0)
                requests.append(len([u for u in urls if "/data/plugin/mindspore/scalars" in u]))
            points = frame.eval_on_selector_all("[data-testid=chart]", "(cs) => cs.map((c) => Number(c.dataset.points))")
            if not all(p > 2000 for p in points):
                raise AssertionError("not every chart has both runs drawn: %r" % points)
            return {"first_render_s": timings, "scalar_requests": requests, "charts": len(TAGS), "runs": 2,
                    "steps": STEPS}
    finally:
        context.close()


PANEL = '[data-testid=heatmap-panel][data-tag="debug/update_ratio"]'


def measure_heatmap(browser, root, redraws=5):
    context = browser.new_context(viewport={"width": 1400, "height": 1200})
    page = context.new_page()
    try:
        with tensorboard_process(root) as base:
            page.goto(base + "/#mindspore")
            frame = page.wait_for_selector("iframe", timeout=120000).content_frame()
            deadline = time.time() + 300
            while True:  # until TensorBoard has loaded every step (the panel shows what it had at first)
                frame.wait_for_selector(PANEL + "[data-state=drawn]", timeout=300000)
                cols = frame.get_attribute(PANEL + " [data-testid=heatmap]", "data-cols")
                if cols == str(LAYER_STEPS):
                    break
                if time.time() > deadline:
                    raise AssertionError("heatmap never got all steps (cols=%s)" % cols)
                time.sleep(2)
                page.reload()
                frame = page.wait_for_selector("iframe", timeout=60000).content_frame()
            first = frame.eval_on_selector(PANEL, "(p) => ({...p.dataset})")
            tree_rows = int(frame.get_attribute(PANEL + " [data-testid=heatmap]", "data-rows"))
            draws, renders = redraw(frame, redraws)
            # Exactly one row per layer: the search "weight" matches every layer and lists them flat.
            frame.fill(PANEL + " [data-testid=heatmap-search]", "weight")
            frame.wait_for_function("(sel) => document.querySelector(sel + ' [data-testid=heatmap]').dataset.rows"
                                    " === '%d'" % LAYERS, arg=PANEL)
            flat_draws, flat_renders = redraw(frame, redraws)
            hm = frame.eval_on_selector(PANEL + " [data-testid=heatmap]", "(h) => ({...h.dataset})")
            page.screenshot(path=os.path.join(ROOT, "test-artifacts", "bench-heatmap.png"))
            return {
                "layers": LAYERS, "rows": int(hm["rows"]), "tree_rows": tree_rows, "cols": int(hm["cols"]),
                "canvas_width_px": int(hm["width"]),
                "first_draw_ms": float(first["drawMs"]), "first_render_ms": float(first["renderMs"]),
                "load_decode_ms": float(first.get("loadMs", "nan")), "stats_ms": float(first.get("prepareMs", "nan")),
                "redraw_ms": flat_draws, "rerender_ms": flat_renders,
                "tree_redraw_ms": draws, "tree_rerender_ms": renders,
            }
    finally:
        context.close()


def redraw(frame, n):
    """Redraws the heatmap n times (changing the sort order); returns (canvas draw ms, whole render ms) lists."""
    draws, renders = [], []
    for i in range(n):
        order = ["mean-desc", "name"][i % 2]
        frame.select_option(PANEL + " [data-testid=heatmap-sort]", order)
        frame.wait_for_function(
            "([sel, s]) => document.querySelector(sel).dataset.state === 'drawn' &&"
            " document.querySelector(sel + ' [data-testid=heatmap-sort]').value === s", arg=[PANEL, order])
        info = frame.eval_on_selector(PANEL, "(p) => ({...p.dataset})")
        draws.append(float(info["drawMs"]))
        renders.append(float(info["renderMs"]))
    return draws, renders


def run(path, what, reloads):
    from playwright.sync_api import sync_playwright

    os.makedirs(os.path.join(ROOT, "test-artifacts"), exist_ok=True)
    figures = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS)
        try:
            if "charts" in what:
                root = os.path.join(path, "charts")
                if not os.path.isdir(root):
                    write_chart_runs(root)
                figures["charts"] = measure_charts(browser, root, reloads)
            if "heatmap" in what:
                root = os.path.join(path, "heatmap")
                if not os.path.isdir(root):
                    write_layer_run(root)
                figures["heatmap"] = measure_heatmap(browser, root)
        finally:
            browser.close()
    return figures


def print_table(figures):
    rows = []
    if "charts" in figures:
        c = figures["charts"]
        rows.append(("first render, %d charts x %d runs x %d steps (s)" % (c["charts"], c["runs"], c["steps"]),
                     "min %.3f  median %.3f" % (min(c["first_render_s"]), statistics.median(c["first_render_s"])),
                     "<= 1.5"))
        rows.append(("scalar requests per first render", " ".join(map(str, c["scalar_requests"])), ""))
    if "heatmap" in figures:
        h = figures["heatmap"]
        label = "heatmap %d x %d cells" % (h["rows"], h["cols"])
        rows.append((label + ": canvas draw (ms)", "median %.1f  max %.1f" % (
            statistics.median(h["redraw_ms"]), max(h["redraw_ms"])), "<= 1000"))
        rows.append((label + ": whole render (ms)", "median %.1f  max %.1f" % (
            statistics.median(h["rerender_ms"]), max(h["rerender_ms"])), ""))
        tree = "heatmap %d rows (with module groups) x %d" % (h["tree_rows"], h["cols"])
        rows.append((tree + ": first draw / render (ms)", "%.1f / %.1f" % (h["first_draw_ms"], h["first_render_ms"]), ""))
        rows.append((tree + ": redraw (ms)", "median %.1f" % statistics.median(h["tree_redraw_ms"]), ""))
        rows.append((label + ": fetch + decode (ms)", "%.1f" % h["load_decode_ms"], ""))
        rows.append((label + ": per-layer statistics (ms)", "%.1f" % h["stats_ms"], ""))
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-28s %s" % (width, "figure", "measured", "target"))
    for r in rows:
        print("%-*s  %-28s %s" % (width, r[0], r[1], r[2]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "tb-mindspore-bench", "render"),
                        help="folder for the generated event files (kept and reused)")
    parser.add_argument("--reloads", type=int, default=3)
    parser.add_argument("--what", default="charts,heatmap")
    args = parser.parse_args(argv)
    figures = run(args.path, args.what.split(","), args.reloads)
    print_table(figures)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
