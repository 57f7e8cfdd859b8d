"""Takes the README's screenshot: serves LOGDIR with TensorBoard and captures the MindSpore tab in headless Chromium.

    .venv/bin/python scripts/screenshot.py LOGDIR [OUT.png]
"""

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

from playwright.sync_api import sync_playwright


def main(logdir, out="docs/screenshot.png"):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    tensorboard = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    proc = subprocess.Popen([tensorboard, "--logdir", logdir, "--port", str(port), "--host", "127.0.0.1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % port
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(base + "/data/plugins_listing", timeout=2)
                break
            except OSError:
                time.sleep(0.5)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(base + "/#mindspore")
            frame = page.wait_for_selector("iframe", timeout=60000).content_frame()
            frame.wait_for_function(
                "() => { const c = [...document.querySelectorAll('[data-testid=chart][data-tier=core]')];"
                " return c.length > 0 && c.every((x) => x.dataset.state === 'drawn'); }", timeout=60000)
            time.sleep(0.5)
            page.screenshot(path=out)
            browser.close()
    finally:
        proc.terminate()
    print("wrote", out)


if __name__ == "__main__":
    main(*sys.argv[1:])
