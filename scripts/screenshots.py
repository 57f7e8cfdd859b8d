"""Takes the README's screenshots of the MindSpore tab from a real ``tensorboard`` over LOGDIR (the demo's:
``tb-mindspore demo --no-serve``), in headless Chromium (Debian's ``chromium``).

    .venv/bin/python scripts/screenshots.py LOGDIR [OUT_DIR]

Writes into OUT_DIR (default ``docs``): ``screenshot.png`` (the tab: Health panel and core charts),
``heatmaps.png`` (the per-layer update-ratio heatmap of the first run, the second one side by side: the demo's
healthy run and the one with the learning rate too high), ``landscape.png`` (the loss landscape section),
``media.png`` (the Images and tensors section: the SummaryCollector run's images and tensor).
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run"]
CORE_DRAWN = ("() => { const c = [...document.querySelectorAll('[data-testid=chart][data-tier=core]')];"
              " return c.length > 0 && c.every((x) => x.dataset.state === 'drawn'); }")


def serve(logdir):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    proc = subprocess.Popen([tensorboard, "--logdir", logdir, "--port", str(port), "--host", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    for _ in range(240):
        try:
            urllib.request.urlopen(base + "/data/plugins_listing", timeout=2)
            return proc, base
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit("tensorboard did not start")


def shoot(frame, selector, path):
    target = frame.locator(selector).first
    target.scroll_into_view_if_needed()
    time.sleep(0.8)   # canvases drawn after the scroll
    target.screenshot(path=path)
    print("wrote", path)


def main(logdir, out="docs"):
    os.makedirs(out, exist_ok=True)
    proc, base = serve(logdir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 860})
            page.goto(base + "/#mindspore")
            frame = page.wait_for_selector("iframe", timeout=60000).content_frame()
            frame.wait_for_function(CORE_DRAWN, timeout=120000)
            frame.wait_for_selector("[data-testid=health-panel][data-state=ready]", timeout=60000)
            time.sleep(1.0)
            page.screenshot(path=os.path.join(out, "screenshot.png"))
            print("wrote", os.path.join(out, "screenshot.png"))
            heatmap = '[data-testid=heatmap-panel][data-tag="debug/update_ratio"]'
            frame.locator(heatmap).scroll_into_view_if_needed()
            frame.wait_for_selector(heatmap + "[data-state=drawn]", timeout=60000)
            compare = frame.locator(heatmap + " [data-testid=heatmap-compare] option").all()
            if len(compare) > 1:   # the second run side by side (the demo's run with the learning rate too high)
                frame.select_option(heatmap + " [data-testid=heatmap-compare]", compare[1].get_attribute("value"))
                frame.wait_for_function("(sel) => document.querySelectorAll(sel + ' [data-testid=heatmap]"
                                        "[data-state=drawn]').length === 2", arg=heatmap, timeout=60000)
            shoot(frame, heatmap, os.path.join(out, "heatmaps.png"))
            landscape = "[data-testid=landscape-section]"
            if frame.locator(landscape).count():
                frame.locator(landscape).scroll_into_view_if_needed()
                shoot(frame, landscape, os.path.join(out, "landscape.png"))
            media = "[data-testid=media-section]"
            if frame.locator(media + "[data-state=ready]").count():
                frame.wait_for_function("() => [...document.querySelectorAll('[data-testid=media-image]')]"
                                        ".every((i) => i.dataset.state === 'loaded')", timeout=60000)
                shoot(frame, media, os.path.join(out, "media.png"))
            browser.close()
    finally:
        proc.terminate()


if __name__ == "__main__":
    main(*sys.argv[1:])
