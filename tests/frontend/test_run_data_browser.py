"""The "Run info" and "Images and tensors" sections in headless Chromium against a real ``tensorboard``: MindSpore's
own files (SummaryRecord images and tensors, summary-op images and tensors, SummaryCollector's lineage) and a run
recorded by the real TrainMonitor with hyperparameters. Screenshots go to test-artifacts/run_data_*.png."""

import base64
import os
import shutil
import sys

import numpy as np
import pytest

from browser_helpers import ARTIFACTS, assert_same_origin, open_tab, screenshot
from ms_training import MONITORED_HPARAMS
from tb_harness import tensorboard_process
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.writing.writer import SummaryWriter

pytestmark = pytest.mark.slow

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOSTILE = '<img src=x onerror="window.__hacked=1">'


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    import ms_fixture_lib

    return ms_fixture_lib.ms_fixtures(tmp_path_factory)


@pytest.fixture(scope="module")
def server(tmp_path_factory, fixtures, monitored_run):
    root = tmp_path_factory.mktemp("run_data_ui") / "logs"
    root.mkdir()
    for run in ("collector", "record", "ops"):
        fixtures.copy_run(run, root)
    shutil.copytree(monitored_run, root / "monitored")
    # Names and values that are markup: they must appear as text.
    with SummaryWriter(root / HOSTILE) as w:
        w.run_info({"hparams": {HOSTILE: HOSTILE}}, step=0)
        w.value(summary.tensor(HOSTILE, np.arange(3, dtype=np.float32)), 1)
        w.scalar("core/loss", 1.0, 1)
    with tensorboard_process(root) as base:
        yield base


def reference_images(fixtures, run):
    """{step: (width, height, bytes)} of the run's image values, decoded by MindSpore's own classes."""
    out = {}
    for rel in fixtures.files(run):
        for _, event in fixtures.reference[rel]:
            for value in event.get("values") or []:
                if value["kind"] == "image":
                    im = value["image"]
                    out[event["step"]] = (im["width"], im["height"], base64.b64decode(im["encoded"]))
    return out


def quoted(text):
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def choose_run(frame, run):
    frame.wait_for_selector("[data-testid=media-section][data-state=ready]", timeout=60000)
    frame.wait_for_selector("[data-testid=media-run] option[value=%s]" % quoted(run), state="attached", timeout=30000)
    frame.select_option("[data-testid=media-run]", run)
    frame.wait_for_selector("[data-testid=media-section][data-run=%s]" % quoted(run), timeout=10000)


def set_slider(handle, index):
    handle.evaluate("(e, v) => { e.value = String(v); e.dispatchEvent(new Event('input')); }", index)


def image_state(card):
    return card.query_selector("[data-testid=media-image]").evaluate(
        """async (img) => {
            const bytes = new Uint8Array(await (await fetch(img.src)).arrayBuffer());
            let bin = ""; for (const b of bytes) bin += String.fromCharCode(b);
            return {state: img.dataset.state, step: img.dataset.step, w: img.naturalWidth, h: img.naturalHeight,
                    shownWidth: img.getBoundingClientRect().width, b64: btoa(bin)};
        }""")


def wait_image(frame, run, tag, step):
    sel = '[data-testid=media-image-card][data-run="%s"][data-tag="%s"]' % (run, tag)
    frame.wait_for_selector(sel + ' [data-testid=media-image][data-state=loaded][data-step="%d"]' % step,
                            timeout=30000)
    return frame.query_selector(sel)


@pytest.mark.parametrize("run,tag,size", [("record", "pic", (5, 4)), ("ops", "ximage", (7, 6))])
def test_images_load_at_their_size_with_a_step_slider(page, server, fixtures, run, tag, size):
    frame = open_tab(page, server)
    choose_run(frame, run)
    written = reference_images(fixtures, run)
    steps = sorted(written)
    card = wait_image(frame, run, tag, steps[-1])          # the last step first
    got = image_state(card)
    width, height, data = written[steps[-1]]
    assert (got["w"], got["h"]) == (width, height) == size
    assert base64.b64decode(got["b64"]) == data             # the bytes MindSpore wrote
    assert got["shownWidth"] >= 150                          # scaled up to be seen
    assert card.get_attribute("data-steps") == str(len(steps))
    set_slider(card.query_selector("[data-testid=media-image-slider]"), 0)
    card = wait_image(frame, run, tag, steps[0])
    got = image_state(card)
    assert base64.b64decode(got["b64"]) == written[steps[0]][2] and (got["w"], got["h"]) == size
    label = card.query_selector("[data-testid=media-image-slider-label]").inner_text()
    assert label == "step %d (1 of %d)" % (steps[0], len(steps))
    assert "%d × %d px" % size in card.query_selector("[data-testid=media-image-info]").inner_text()
    card.scroll_into_view_if_needed()
    screenshot(page, "run_data_images_%s.png" % run)
    assert page.console_errors == []
    assert_same_origin(page, server)


def tensor_values(card):
    return card.eval_on_selector_all("[data-testid=tensor-value]", "(cells) => cells.map((c) => c.dataset.value)")


def test_tensor_values_and_statistics_per_step(page, server, fixtures):
    frame = open_tab(page, server)
    choose_run(frame, "record")
    sel = '[data-testid=media-tensor-card][data-run=record][data-tag=weights_t]'
    frame.wait_for_selector(sel + "[data-state=drawn][data-step='5']", timeout=30000)
    card = frame.query_selector(sel)
    expected = {step: values for _, step, _, values in fixtures.expected["record"]["tensor"]}
    assert [float(v) for v in tensor_values(card)] == expected[5]
    assert card.query_selector("[data-testid=media-tensor-table]").get_attribute("data-layout") == "grid"
    assert card.get_attribute("data-shape") == "2x3"
    stats = card.query_selector("[data-testid=media-tensor-stats]").inner_text()
    assert stats.startswith("shape [2, 3] · float32 · 6 values · min ")
    set_slider(card.query_selector("[data-testid=media-tensor-slider]"), 0)
    frame.wait_for_selector(sel + "[data-step='1']", timeout=10000)
    assert [float(v) for v in tensor_values(card)] == expected[1]
    # The summary op's tensor (GRAPH_MODE TensorSummary) in another run.
    choose_run(frame, "ops")
    sel = '[data-testid=media-tensor-card][data-run=ops][data-tag=xtensor]'
    frame.wait_for_selector(sel + "[data-state=drawn]", timeout=30000)
    card = frame.query_selector(sel)
    last = fixtures.expected["ops"][-1]
    assert card.get_attribute("data-step") == str(last[0])
    assert [float(v) for v in tensor_values(card)] == last[2]
    card.scroll_into_view_if_needed()
    screenshot(page, "run_data_tensors.png")
    assert page.console_errors == []


def hparams_of(card):
    rows = card.query_selector_all("[data-testid=runinfo-hparam]")
    return {row.get_attribute("data-name"): (row.query_selector(".ms-rd-value").inner_text(),
                                             row.get_attribute("data-source")) for row in rows}


def facts(card, testid):
    table = card.query_selector("[data-testid=%s]" % testid)
    return {tr.query_selector("th").inner_text(): tr.query_selector("td").inner_text()
            for tr in table.query_selector_all("tr")}


def test_run_info_shows_lineage_and_train_monitor_hparams(page, server, fixtures):
    frame = open_tab(page, server)
    frame.wait_for_selector("[data-testid=runinfo-section][data-state=ready]", timeout=60000)
    frame.wait_for_selector("[data-testid=runinfo-card][data-run=collector]", timeout=30000)
    frame.wait_for_selector("[data-testid=runinfo-card][data-run=monitored]", timeout=30000)
    given = fixtures.expected["collector"]["lineage"]
    card = frame.query_selector("[data-testid=runinfo-card][data-run=collector]")
    hp = hparams_of(card)
    assert hp["learning_rate"] == ("0.05", "lineage")
    assert hp["batch_size"][0] == str(given["batch_size"]) and hp["epochs"][0] == str(given["epoch"])
    assert hp["optimizer"][0] == given["optimizer"] and hp["loss_function"][0] == given["loss_function"]
    assert hp["note"][0] == "fixture" and hp["seed"][0] == "7"
    lineage = facts(card, "runinfo-lineage")
    assert lineage["Network"] == given["network"] and lineage["Optimizer"] == "Momentum"
    assert lineage["Loss function"] == "SoftmaxCrossEntropyWithLogits" and lineage["Learning rate"] == "0.05"
    assert lineage["Train dataset size"] == "16" and lineage["Dataset pipeline"].startswith("Batch")
    assert facts(card, "runinfo-user") == {"note": "fixture", "seed": "7"}
    assert card.get_attribute("data-sources") == "lineage_file"

    card = frame.query_selector("[data-testid=runinfo-card][data-run=monitored]")
    hp = hparams_of(card)
    # Under their canonical names, with the names they were recorded as.
    assert hp == {"hidden_size": ("16", "run_info"), "learning_rate": ("0.05", "run_info"),
                  "optimizer": ("momentum", "run_info"), "schedule": ("piecewise", "run_info"),
                  "warmup": ("false", "run_info")}
    assert len(hp) == len(MONITORED_HPARAMS)
    assert card.query_selector('[data-testid=runinfo-hparam][data-name=learning_rate] '
                               '[data-testid=runinfo-hparam-from]').inner_text() == "run info as lr"
    basics = facts(card, "runinfo-basics")
    assert basics["Mode"] == "GRAPH_MODE" and basics["collect_freq"] == "4" and basics["Rank"].startswith("0")
    assert basics["MindSpore"].count(".") >= 1
    assert card.get_attribute("data-sources") == "run_info hparams"
    assert card.query_selector("[data-testid=runinfo-lineage]") is None
    frame.query_selector("[data-testid=runinfo-card][data-run=collector]").scroll_into_view_if_needed()
    screenshot(page, "run_data_run_info.png")
    # The section follows the run list's checkboxes: an unchecked run's card goes, and comes back.
    unchecked = '[data-testid=run-item][data-run="monitored"] [data-testid=run-checkbox]'
    frame.click(unchecked)
    frame.wait_for_selector("[data-testid=runinfo-card][data-run=monitored]", state="detached", timeout=10000)
    assert frame.query_selector("[data-testid=runinfo-card][data-run=collector]") is not None
    assert " of " in frame.inner_text("[data-testid=runinfo-section-count]")
    frame.click(unchecked)
    frame.wait_for_selector("[data-testid=runinfo-card][data-run=monitored]", timeout=10000)
    assert page.console_errors == []
    assert_same_origin(page, server)


def test_names_and_values_are_text(page, server):
    frame = open_tab(page, server)
    frame.wait_for_selector("[data-testid=runinfo-section][data-state=ready]", timeout=60000)
    sel = "[data-testid=runinfo-card][data-run=%s]" % quoted(HOSTILE)
    frame.wait_for_selector(sel, timeout=30000)
    card = frame.query_selector(sel)
    assert card.query_selector("[data-testid=runinfo-run-name]").inner_text() == HOSTILE
    assert hparams_of(card) == {HOSTILE: (HOSTILE, "run_info")}
    choose_run(frame, HOSTILE)
    tensor = "[data-testid=media-tensor-card][data-tag=%s]" % quoted(HOSTILE)
    frame.wait_for_selector(tensor + "[data-state=drawn]", timeout=30000)
    assert frame.evaluate("() => window.__hacked === undefined && !document.querySelector('img[src=x]')")
    assert page.console_errors == []


@pytest.fixture(scope="module")
def layouts(tmp_path_factory):
    import ms_fixture_lib

    return ms_fixture_lib.ms_layouts(tmp_path_factory)


def test_eval_only_run_and_superseded_files_in_run_info(page, tmp_path, layouts):
    """An evaluation-only SummaryCollector run (a lineage file, no series) is shown with its metrics and no
    checkbox, also when it is all there is; a resumed run lists its files and what the later one superseded; a
    MindSpore histogram's NaN count shows under its distribution."""
    only = tmp_path / "only"
    layouts.copy_run("evalonly", only)
    with tensorboard_process(only) as base:
        frame = open_tab(page, base)
        empty = frame.wait_for_selector("[data-testid=empty-state]", timeout=60000)
        assert empty.get_attribute("data-reason") == "only_ms_files"
        assert "TrainMonitor" not in empty.inner_text() and "Run info" in empty.inner_text()
        card = frame.wait_for_selector("[data-testid=runinfo-card][data-run=evalonly]", timeout=60000)
        assert card.is_visible() and card.get_attribute("data-unlisted") == "true"
        assert set(facts(card, "runinfo-metrics")) == {"acc"}
        assert frame.query_selector("[data-testid=run-checkbox][data-run=evalonly]") is None
        screenshot(page, "run_data_eval_only.png")
        assert page.console_errors == []
        page.goto("about:blank")  # the tab polls its server; leave it before that server stops
    both = tmp_path / "both"
    for run in ("evalonly", "resume", "edge"):
        layouts.copy_run(run, both)
    with tensorboard_process(both) as base:
        frame = open_tab(page, base)
        frame.wait_for_selector("[data-testid=runinfo-card][data-run=resume]", timeout=60000)
        rows = frame.query_selector_all("[data-testid=runinfo-card][data-run=resume] [data-testid=runinfo-file]")
        assert len(rows) == 2
        lost = rows[0].query_selector("[data-testid=runinfo-file-superseded]").inner_text()
        assert lost.startswith("steps 6–10 replaced by") and "loss, w" in lost
        assert frame.query_selector("[data-testid=run-checkbox][data-run=evalonly]") is None
        # Unchecking every listed run leaves the run without series in place.
        frame.click('[data-testid=run-item][data-run="resume"] [data-testid=run-checkbox]')
        frame.wait_for_selector("[data-testid=runinfo-card][data-run=resume]", state="detached", timeout=30000)
        assert frame.query_selector("[data-testid=runinfo-card][data-run=evalonly]") is not None
        assert frame.query_selector("[data-testid=runinfo-none-checked]") is not None
        screenshot(page, "run_data_files.png")
        # MindSpore's NaN counts under the distribution (135 of 216 weights NaN at every step).
        card = frame.wait_for_selector('[data-testid=histogram-card][data-tag="nanw"]', timeout=60000)
        card.scroll_into_view_if_needed()
        note = frame.wait_for_selector('[data-testid=histogram-card][data-tag="nanw"] [data-testid=hist-nonfinite]',
                                       timeout=60000)
        assert "edge: 3 steps, at step 3 135 NaN, 0 +Inf, 0 −Inf" in note.inner_text()
        card.screenshot(path=os.path.join(ARTIFACTS, "run_data_nonfinite.png"))
        assert page.console_errors == []
