"""What MindSpore and mindformers users already write, in headless Chromium against a real ``tensorboard``: the
model graph SummaryCollector recorded (scopes that collapse and expand, operators, shapes, inputs that lead to their
node), a mindformers-style run written by tensorboardX (one run, not one per head; the layer x head table with its
step slider; samples as an x axis; mindformers' abnormal global norm and checkpoints on the step axis), and the
status of ``--logdir_spec``. Screenshots go to test-artifacts/user_files_*.png."""

import json
import os
import sys

import pytest

from browser_helpers import chart_attrs, open_tab, screenshot, wait_attr, wait_drawn
from tb_harness import tensorboard_process
import warm

pytestmark = pytest.mark.slow

STEPS, BATCH, LAYERS, HEADS = 30, 8, 3, 4


def write_mindformers_run(run):
    """A mindformers-style rank folder as tensorboardX writes it, and the files mindformers leaves beside it."""
    from tensorboardX import SummaryWriter

    with SummaryWriter(str(run)) as w:
        w.add_text("runner_wrapper", str({"type": "MFTrainOneStepCell", "use_clip_grad": True, "max_grad_norm": 1.0}), 1)
        for s in range(1, STEPS + 1):
            grad = 1.0 if s < STEPS else 900.0
            for tag, value in (("loss", 3.0 - 0.05 * s), ("grad-norm", grad), ("learning-rate", 1e-3)):
                w.add_scalar(tag, value, s)
                w.add_scalar(tag + " vs samples", value, s * BATCH)
            for layer in range(LAYERS):
                w.add_scalars("max_attention_logit/model.layers.%d.attention" % layer,
                              {"head_%d" % h: float(10 * layer + h + s) for h in range(HEADS)}, s)
    out = os.path.dirname(os.path.dirname(str(run)))
    with open(os.path.join(out, "abnormal_global_norm.json"), "w") as f:
        json.dump({str(STEPS): [900.0]}, f)
    with open(os.path.join(out, "health_ckpts.json"), "w") as f:
        json.dump([{"is_health": 0, "ckpt_name": "m_rank_0-1_10.ckpt"},
                   {"is_health": 1, "ckpt_name": "m_rank_0-1_20.ckpt"}], f)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory, ms_graph_runs):
    """The session's ``ms_graph_child.py`` files (tests/conftest.py) copied, and a mindformers run beside them."""
    import shutil

    pytest.importorskip("tensorboardX")
    root = tmp_path_factory.mktemp("user_files") / "logs"
    shutil.copytree(str(ms_graph_runs), str(root))
    write_mindformers_run(root / "mf" / "output" / "tensorboard" / "rank_0")
    return root


@pytest.fixture(scope="module")
def server(logdir):
    with tensorboard_process(logdir) as base:
        yield base


def test_mindformers_run_table_samples_axis_and_markers(server, page):
    frame = open_tab(page, server)
    wait_drawn(frame)
    runs = frame.eval_on_selector_all("[data-testid=run-item]", "(els) => els.map((e) => e.dataset.run)")
    run = "mf/output/tensorboard/rank_0"
    assert run in runs and not [r for r in runs if "head_" in r or "part_" in r], runs
    # mindformers' abnormal global norm on the gradient-norm chart, its checkpoints on every chart's step axis
    marks = wait_attr(frame, "grad-norm", "markers", "v && v.includes('abnormal_global_norm')")["markers"]
    assert "%s@%d:abnormal_global_norm" % (run, STEPS) in marks and "%s@10:checkpoint+" % run in marks
    assert "%s@20:checkpoint-" % run in wait_attr(frame, "loss", "markers", "v && v.includes('checkpoint')")["markers"]
    # the layer x head table, at the newest step, then at another one
    panel = frame.wait_for_selector("[data-testid=table-panel][data-tag='max_attention_logit/*']", timeout=30000)
    panel.scroll_into_view_if_needed()
    frame.wait_for_selector("[data-testid=table-panel][data-tag='max_attention_logit/*'][data-state=ready]",
                            timeout=30000)
    rows = panel.eval_on_selector_all("[data-testid=table-row]", "(els) => els.map((e) => e.textContent)")
    assert rows == ["model.layers.%d.attention" % i for i in range(LAYERS)]
    assert "step %d" % STEPS in panel.query_selector("[data-testid=table-step]").text_content()
    panel.query_selector("[data-testid=table-step-slider]").evaluate(
        "(e) => { e.value = '4'; e.dispatchEvent(new Event('change')); }")
    frame.wait_for_function("""() => document.querySelector("[data-testid=table-step]").textContent.startsWith('step 5 ')""",
                            timeout=30000)
    screenshot(page, "user_files_table.png")
    # samples as the x axis: the loss drawn over samples seen (step x batch), no duplicate "vs samples" charts
    assert not frame.query_selector("[data-testid=chart][data-tag$='_vs_samples']")
    frame.click("[data-testid=x-axis-samples]")
    attrs = wait_attr(frame, "loss", "xTitle", "v === 'samples seen'")
    attrs = wait_attr(frame, "loss", "xMax", "Number(v) >= %d" % (STEPS * BATCH))
    assert float(attrs["xMax"]) >= STEPS * BATCH and attrs["state"] == "drawn"
    frame.click("[data-testid=x-axis-step]")
    assert "add gradient clipping" not in frame.text_content("[data-testid=health-panel]").lower()


def test_model_graph_section(server, page):
    frame = open_tab(page, server)
    section = frame.wait_for_selector("[data-testid=graph-section][data-state=ready]", timeout=60000)
    assert section.is_visible()
    frame.select_option("[data-testid=graph-run]", "graph")
    frame.wait_for_selector("[data-testid=graph-section][data-state=ready]", timeout=30000)
    assert "nodes" in frame.text_content("[data-testid=graph-info]")
    relu = frame.wait_for_selector("[data-testid=graph-node][data-op=ReLU]", state="attached", timeout=30000)
    relu.scroll_into_view_if_needed()
    assert "float32[4, 8]" in relu.text_content()
    # collapse the scope the operator sits in, expand it again
    scope = frame.query_selector("[data-testid=graph-scope][data-path='Default/network-WithLossCell']")
    scope.click()
    frame.wait_for_function("""() => !document.querySelector("[data-testid=graph-node][data-op=ReLU]")""", timeout=10000)
    frame.click("[data-testid=graph-scope][data-path='Default/network-WithLossCell']")
    relu = frame.wait_for_selector("[data-testid=graph-node][data-op=ReLU]", timeout=10000)
    # an input leads to the node it comes from
    relu.query_selector("[data-testid=graph-input]").click()
    frame.wait_for_selector("[data-testid=graph-node][data-highlight=true][data-op=BiasAdd]", timeout=10000)
    screenshot(page, "user_files_graph.png")
    assert not page.console_errors, page.console_errors


def test_logdir_spec_status_says_how_tensorboard_was_started(logdir, page):
    spec = "graphs:%s,mindformers:%s" % (logdir, logdir / "mf")
    with tensorboard_process(logdir, logdir_spec=spec) as base:
        frame = open_tab(page, base)
        frame.wait_for_function("""() => { const e = document.querySelector("[data-testid=logdir]");
                                    return e && e.textContent.startsWith("--logdir_spec"); }""", timeout=60000)
        assert frame.text_content("[data-testid=logdir]").endswith("mindformers:%s" % (logdir / "mf"))
        frame.wait_for_function(
            """() => [...document.querySelectorAll("[data-testid=run-item]")].some(
                (e) => e.dataset.run === "mindformers/output/tensorboard/rank_0")""", timeout=60000)


def test_the_report_holds_the_table_the_graph_and_the_markers(logdir, tmp_path, browser):
    out = tmp_path / "report.html"
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "report", str(logdir), "--out", str(out)],
                    capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, offline=True)
    context.route("**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort())
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(out.as_uri())
        page.wait_for_selector("[data-testid=mindspore-dashboard][data-state=ready]", timeout=60000)
        page.wait_for_selector("[data-testid=table-panel][data-tag='max_attention_logit/*'][data-state=ready]",
                               timeout=60000)
        page.wait_for_selector("[data-testid=graph-section][data-state=ready]", timeout=60000)
        page.select_option("[data-testid=graph-run]", "graph")
        page.wait_for_selector("[data-testid=graph-node][data-op=ReLU]", state="attached", timeout=30000)
        marks = page.wait_for_function(
            """() => { const c = document.querySelector('[data-testid=chart][data-tag="grad-norm"]');
                return c && c.dataset.markers && c.dataset.markers.includes('abnormal_global_norm'); }""",
            timeout=30000)
        assert marks
    finally:
        context.close()
    assert errors == [], errors
