"""Takes the README's screenshot of the Compare section from a real ``tensorboard`` over two runs, in headless
Chromium (Debian's ``chromium``).

    .venv/bin/python scripts/compare_screenshot.py RUN REFERENCE [OUT]

RUN and REFERENCE are run folders (e.g. a MindSpore port and its PyTorch reference, recorded by the callbacks and
``TorchMonitor``); they are linked into a temporary logdir as ``mindspore_port`` and ``pytorch_reference``.
Writes OUT (default ``docs/compare.png``).
"""

import os
import shutil
import sys
import tempfile
import time

from playwright.sync_api import sync_playwright

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshots import ARGS, serve  # noqa: E402


def main(run, reference, out="docs/compare.png"):
    logdir = tempfile.mkdtemp(prefix="tbms-compare-shot-")
    os.symlink(os.path.abspath(run), os.path.join(logdir, "mindspore_port"))
    os.symlink(os.path.abspath(reference), os.path.join(logdir, "pytorch_reference"))
    proc, base = serve(logdir)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=ARGS)
            page = browser.new_page(viewport={"width": 1280, "height": 2600})   # the whole section on screen
            page.goto(base + "/#mindspore")
            frame = page.wait_for_selector("iframe", timeout=60000).content_frame()
            section = frame.locator("[data-testid=compare-section]")
            section.wait_for(state="visible", timeout=120000)
            frame.wait_for_function("() => document.querySelectorAll('[data-testid=compare-run] option').length >= 2",
                                    timeout=60000)
            frame.select_option("[data-testid=compare-run]", "mindspore_port")
            frame.select_option("[data-testid=compare-reference]", "pytorch_reference")
            frame.click("[data-testid=compare-go]")
            frame.wait_for_selector("[data-testid=compare-panel][data-state=ready]", timeout=120000)
            section.scroll_into_view_if_needed()
            time.sleep(1.0)           # the charts draw once on screen
            os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
            section.screenshot(path=out)
            print("wrote", out)
            browser.close()
    finally:
        proc.terminate()
        proc.wait(10)
        shutil.rmtree(logdir, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    main(*sys.argv[1:4])
