"""Hostile names in a real headless browser: run folders, tags, hyperparameters, landscape tags, MindSpore file
names (in the warnings) and health findings that hold markup are shown as text in every view of the tab, and
nothing they hold becomes an element or runs. A real ``tensorboard`` process, Debian's Chromium."""

import os

import numpy as np
import pytest

import hostile
from tb_harness import tensorboard_process

from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import landscape_record

# No "/" in a run folder's name; every name below would create an element or run code if used as markup.
RUN = '<x-pwn id="r"><img src=x onerror="window.__pwned=1">'
MS_RUN = "ms <x-pwn><svg onload=window.__pwned=2>"
TAG = 'core/<x-pwn><img src=y onerror="window.__pwned=3">'
LANDSCAPE_TAG = 'landscape/<x-pwn><img src=z onerror="window.__pwned=4">'
HPARAM = '<x-pwn><img src=w onerror="window.__pwned=5">'
MARKERS = (RUN, MS_RUN, TAG.split("/", 1)[1], HPARAM)

NO_INJECTION = """() => document.querySelectorAll('x-pwn, [onerror], [onload]').length === 0
    && window.__pwned === undefined"""


@pytest.fixture(scope="module")
def hostile_logdir(tmp_path_factory):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path_factory.mktemp("hostile_names") / "logs"
    with SummaryWriter(str(root / RUN), flush_secs=0.5) as w:
        w.run_info({"hparams": {HPARAM: HPARAM, "lr": 0.1}})
        for step in range(1, 41):
            loss = float("nan") if step == 30 else 2.0 / step
            w.scalar("core/loss", loss, step)
            w.scalar(TAG, float(step), step)
        x = np.linspace(-1, 1, 5)
        w.value(summary.landscape(LANDSCAPE_TAG, landscape_record(x, x, np.add.outer(x ** 2, x ** 2), "random")), 40)
    hostile.write_ms(str(root / MS_RUN / hostile.MS_NAME),
                     [hostile.ms_scalar_event(s, 1.0 / s, tag=b"<x-pwn>loss</x-pwn>") for s in range(1, 11)]
                     + [hostile.ms_media_event(1, tag=b'<x-pwn><img src=v onerror="window.__pwned=6">')],
                     tail=b"\x05" * 40)                         # a damaged tail: a warning naming the file
    return root


@pytest.mark.slow
def test_hostile_names_stay_text_in_every_view(page, hostile_logdir):
    from browser_helpers import assert_same_origin, open_tab, screenshot, wait_drawn

    with tensorboard_process(hostile_logdir) as base:
        frame = open_tab(page, base)
        wait_drawn(frame)
        frame.wait_for_selector("[data-testid=warnings-banner]:not([hidden])", timeout=30000)
        frame.click("[data-testid=warnings-toggle]")
        frame.wait_for_selector("[data-testid=health-panel]:not([data-state=loading])", timeout=60000)
        for section in ("landscape-section", "runinfo-section", "media-section"):
            frame.wait_for_selector("[data-testid=%s]:not([data-state=loading])" % section, state="attached",
                                    timeout=60000)
        frame.evaluate("() => document.querySelectorAll('details').forEach((d) => { d.open = true; })")
        page.wait_for_timeout(1500)
        text = frame.evaluate("() => document.body.innerText")
        for marker in MARKERS:
            assert marker in text, marker
        files = frame.eval_on_selector_all("[data-testid=warning-item]", "(ws) => ws.map((w) => w.dataset.file)")
        assert any(f.startswith(MS_RUN + "/") for f in files), files
        assert frame.evaluate(NO_INJECTION)
        assert page.evaluate(NO_INJECTION)
        screenshot(page, "hostile-names-every-view.png")
        assert_same_origin(page, base)
