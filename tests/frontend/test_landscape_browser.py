"""The Loss landscape section in headless Chromium against a real ``tensorboard``: landscapes recorded by
LandscapeCallback in a real MindSpore run and MindSpore's own SummaryLandscape output (an ``_MS`` file), drawn as
contour + heatmap with the training path and as a WebGL surface; slider, log scale, rotation, two runs side by side.
Screenshots go to test-artifacts/landscape_*.png."""

import os
import sys

import numpy as np
import pytest

from browser_helpers import assert_same_origin, open_tab, screenshot
from tb_harness import tensorboard_process
from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import landscape_record
from tb_plugin_mindspore.writing.writer import SummaryWriter
import warm

pytestmark = pytest.mark.slow

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = os.path.join(TESTS, "callbacks", "landscape", "landscape_child.py")
HOSTILE = '<img src=x onerror="window.__hacked=1">'


@pytest.fixture(scope="module")
def landscape_server(tmp_path_factory):
    pytest.importorskip("mindspore")
    import ms_fixture_lib

    root = tmp_path_factory.mktemp("landscape_ui") / "logs"
    root.mkdir()
    fixtures = ms_fixture_lib.ms_fixtures(tmp_path_factory)
    os.rename(fixtures.copy_run("landscape", root), root / "summary_landscape")
    proc = warm.run([sys.executable, CHILD, str(root.parent / "t.npz"), "graph", "1", str(root / "ours")],
                    capture_output=True, text=True, timeout=300, env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    # A run whose name is markup: it must appear as text.
    x = np.linspace(-1, 1, 9)
    z = np.add.outer(x ** 2, 2 * x ** 2) + 0.1
    with SummaryWriter(root / HOSTILE) as w:
        w.value(summary.landscape("landscape/random", landscape_record(x, x, z, "random", center=(0, 0, 0.1))), 3)
    sharpness_run(root / "sharpness")
    with tensorboard_process(root) as base:
        yield base


def sharpness_run(logdir):
    """A real short training with SharpnessCallback: sharpness profiles at steps 3 and 6."""
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model

    from tb_mindspore_callbacks import SharpnessCallback

    rs = np.random.RandomState(0)
    x, y = rs.randn(32, 6).astype(np.float32), rs.randint(0, 3, 32).astype(np.int32)
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(6, 8), nn.Tanh(), nn.Dense(8, 3)])
    cb = SharpnessCallback(str(logdir), (x, y), every=3, probe_samples=32, profile_every=1)
    data = ds.NumpySlicesDataset({"x": np.tile(x, (6, 1)), "y": np.tile(y, 6)}, shuffle=False).batch(32)
    Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
          nn.SGD(net.trainable_params(), 0.5)).train(1, data, callbacks=[cb], dataset_sink_mode=False)
    assert cb.failed is None and [r.step for r in cb.results] == [3, 6]


def wait_panel(frame, run=None, timeout=60000):
    sel = "[data-testid=landscape-panel][data-state=drawn]" + ('[data-run="%s"]' % run if run else "")
    frame.wait_for_selector(sel, timeout=timeout)
    return frame.query_selector(sel)


def show(frame, run):
    """Chooses ``run`` in the section's run selector and waits until its panel is drawn."""
    frame.wait_for_selector("[data-testid=landscape-section][data-state=ready]", timeout=60000)
    frame.select_option("[data-testid=landscape-run-a]", run)
    return wait_panel(frame, run.replace('"', '\\"'))


def data(handle, sel=None):
    target = handle.query_selector(sel) if sel else handle
    return target.evaluate("(e) => ({...e.dataset})")


def pixel(canvas_handle, xy):
    """RGBA of a 2-D canvas at CSS pixel ``"x,y"``."""
    x, y = (float(v) for v in xy.split(","))
    return canvas_handle.evaluate(
        """(c, [x, y]) => { const r = c.width / c.clientWidth;
            return Array.from(c.getContext("2d").getImageData(Math.round(x * r), Math.round(y * r), 1, 1).data); }""",
        [x, y])


def gl_pixels(canvas_handle, xy=None):
    """(share of non-white pixels, RGBA at ``xy``) of the WebGL canvas (read back through an image)."""
    return canvas_handle.evaluate(
        """async (c, xy) => {
            const img = new Image(); img.src = c.toDataURL(); await img.decode();
            const t = document.createElement("canvas"); t.width = c.width; t.height = c.height;
            const g = t.getContext("2d"); g.drawImage(img, 0, 0);
            const d = g.getImageData(0, 0, t.width, t.height).data;
            let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 720) n++;
            let at = null;
            if (xy) {
                const r = c.width / c.clientWidth; const [x, y] = xy.split(",").map(Number);
                const o = (Math.round(y * r) * t.width + Math.round(x * r)) * 4; at = Array.from(d.slice(o, o + 4));
            }
            return [n / (d.length / 4), at, t.toDataURL().length];
        }""", xy)


def close(rgba, hex_color, tol=60):
    want = [int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]
    return sum(abs(a - b) for a, b in zip(rgba[:3], want)) < tol


def test_contour_and_surface_with_the_training_path(page, landscape_server):
    base = landscape_server
    frame = open_tab(page, base)
    panel = show(frame, "ours")
    section = frame.query_selector("[data-testid=landscape-section]")
    assert section.get_attribute("data-runs") == "4"
    p = data(panel)
    assert p["tag"] == "landscape/pca" and p["step"] == "12" and p["source"] == "tb_mindspore_callbacks"
    info = panel.query_selector("[data-testid=landscape-info]").inner_text()
    assert "explained variance" in info and "5 × 5 grid" in info
    contour = data(panel, "[data-testid=landscape-contour]")
    assert contour["state"] == "drawn" and contour["heatmap"] == "on" and int(contour["isolines"]) > 0
    npath = int(contour["pathPoints"])
    assert npath >= 4
    canvas = panel.query_selector("[data-testid=landscape-contour-canvas]")
    assert close(pixel(canvas, contour["pathStart"]), "#00c853"), pixel(canvas, contour["pathStart"])
    assert close(pixel(canvas, contour["pathEnd"]), "#ff1744"), pixel(canvas, contour["pathEnd"])
    surface = data(panel, "[data-testid=landscape-surface]")
    assert surface["renderer"] in ("webgl2", "webgl") and surface["state"] == "drawn"
    assert surface["triangles"] == str(4 * 4 * 2) and surface["pathPoints"] == str(npath)
    gl = panel.query_selector("[data-testid=landscape-surface-canvas]")
    share, at_start, _ = gl_pixels(gl, surface["pathStart"])
    assert share > 0.05, share
    assert close(at_start, "#00c853"), at_start
    # both axis names sit outside the box the surface is drawn in; the legend lists the markers drawn
    assert surface["axisLabelsClear"] == "2", surface
    legend = panel.query_selector("[data-testid=landscape-legend]")
    assert legend.get_attribute("data-markers") == "start,end,minimum"
    section.scroll_into_view_if_needed()
    screenshot(page, "landscape_pca.png")

    # Rotating the surface changes the view and the image.
    before = gl_pixels(gl)[2]
    box = gl.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] / 2 + 120, box["y"] + box["height"] / 2 + 40, steps=5)
    page.mouse.up()
    frame.wait_for_function("(a) => document.querySelector('[data-testid=landscape-surface]').dataset.azimuth !== a",
                            arg=surface["azimuth"])
    assert gl_pixels(gl)[2] != before

    # Log scale and the step slider.
    frame.check("[data-testid=landscape-opt-log]")
    frame.wait_for_selector("[data-testid=landscape-contour][data-log=on]")
    frame.eval_on_selector("[data-testid=landscape-step-slider]",
                           "(s) => { s.value = '0'; s.dispatchEvent(new Event('input')); }")
    frame.wait_for_selector('[data-testid=landscape-panel][data-step="4"][data-state=drawn]')
    assert "(1 of 3)" in panel.query_selector("[data-testid=landscape-step]").inner_text()
    frame.uncheck("[data-testid=landscape-opt-log]")
    assert page.console_errors == []
    assert_same_origin(page, base)


def test_mindspore_summary_landscape_displays(page, landscape_server):
    frame = open_tab(page, landscape_server)
    panel = show(frame, "summary_landscape")
    p = data(panel)
    assert p["source"] == "mindspore" and p["method"] == "pca" and p["tag"] == "landscape_[1, 3]"
    assert "MindSpore SummaryLandscape" in panel.query_selector("[data-testid=landscape-info]").inner_text()
    contour = data(panel, "[data-testid=landscape-contour]")
    assert contour["pathPoints"] == "3" and int(contour["isolines"]) > 0
    surface = data(panel, "[data-testid=landscape-surface]")
    assert surface["triangles"] == "8" and surface["pathPoints"] == "3"
    frame.query_selector("[data-testid=landscape-section]").scroll_into_view_if_needed()
    screenshot(page, "landscape_summary_landscape_pca.png")
    frame.select_option('[data-run="summary_landscape"] [data-testid=landscape-select]', "landscape_[3]")
    frame.wait_for_selector('[data-testid=landscape-panel][data-tag="landscape_[3]"][data-state=drawn]')
    contour = data(panel, "[data-testid=landscape-contour]")
    assert contour["pathPoints"] == "0" and "center" in contour
    screenshot(page, "landscape_summary_landscape_random.png")
    assert page.console_errors == []


def test_two_runs_side_by_side_turn_together(page, landscape_server):
    frame = open_tab(page, landscape_server)
    show(frame, "ours")
    frame.select_option("[data-testid=landscape-run-b]", "summary_landscape")
    wait_panel(frame, "summary_landscape")
    assert frame.eval_on_selector("[data-testid=landscape-columns]", "(c) => c.children.length") == 2
    gl = frame.query_selector('[data-run="ours"] [data-testid=landscape-surface-canvas]')
    gl.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowUp")
    frame.wait_for_function("""() => { const s = [...document.querySelectorAll('[data-testid=landscape-surface]')];
        return s.length === 2 && s[0].dataset.azimuth === s[1].dataset.azimuth
            && s[0].dataset.azimuth !== '-2.200'; }""")
    frame.query_selector("[data-testid=landscape-section]").scroll_into_view_if_needed()
    screenshot(page, "landscape_side_by_side.png")
    # The interpolation (1-D) of the first run as a profile.
    frame.select_option('[data-run="ours"] [data-testid=landscape-select]', "landscape/interpolation")
    frame.wait_for_selector('[data-run="ours"][data-tag="landscape/interpolation"][data-state=drawn]')
    prof = data(frame.query_selector('[data-run="ours"] [data-testid=landscape-profile]'))
    assert prof["state"] == "drawn" and int(prof["points"]) == 5 and "pathStart" in prof and "pathEnd" in prof
    assert frame.is_hidden('[data-run="ours"] [data-testid=landscape-contour]')
    assert page.console_errors == []


def test_run_names_are_text(page, landscape_server):
    frame = open_tab(page, landscape_server)
    panel = show(frame, HOSTILE)
    assert panel.query_selector("[data-testid=landscape-run]").inner_text() == HOSTILE
    assert frame.evaluate("() => window.__hacked === undefined && !document.querySelector('img[src=x]')")


def test_surface_without_webgl_falls_back_to_canvas_2d(page, landscape_server):
    page.add_init_script("""(() => { const get = HTMLCanvasElement.prototype.getContext;
        HTMLCanvasElement.prototype.getContext = function (kind, ...rest) {
            return /webgl/.test(kind) ? null : get.call(this, kind, ...rest); }; })()""")
    frame = open_tab(page, landscape_server)
    panel = show(frame, "ours")
    surface = data(panel, "[data-testid=landscape-surface]")
    assert surface["renderer"] == "canvas2d" and surface["state"] == "drawn" and surface["pathPoints"] != "0"
    canvas = panel.query_selector("[data-testid=landscape-surface-canvas]")
    coloured = canvas.evaluate("""(c) => { const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] + d[i + 1] + d[i + 2] < 720) n++;
        return n / (d.length / 4); }""")
    assert coloured > 0.05, coloured
    assert page.console_errors == []


def test_sharpness_profile_next_to_the_landscape(page, landscape_server):
    frame = open_tab(page, landscape_server)
    panel = show(frame, "sharpness")
    p = data(panel)
    assert p["tag"] == "landscape/sharpness_profile" and p["method"] == "profile" and p["dims"] == "1"
    assert p["step"] == "6"
    prof = data(panel, "[data-testid=landscape-profile]")
    # Both directions (21 points each) and the dashed quadratic model of the top eigenvalue.
    assert prof["state"] == "drawn" and prof["lines"] == "2" and prof["points"] == "42" and prof["quadratic"] == "on"
    assert "stability line 2/lr = 4 " in prof["note"], prof   # SGD at lr 0.5
    title = panel.query_selector("[data-testid=landscape-profile-title]").inner_text()
    assert title.startswith("Loss along the top Hessian eigenvector"), title
    assert frame.is_hidden('[data-run="sharpness"] [data-testid=landscape-contour]')
    info = panel.query_selector("[data-testid=landscape-info]").inner_text()
    assert "21 points" in info, info
    # The eigenvector's line (red) is drawn: some canvas pixels carry its colour.
    canvas = panel.query_selector("[data-testid=landscape-profile-canvas]")
    reds = canvas.evaluate("""(c) => { const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
        let n = 0; for (let i = 0; i < d.length; i += 4) if (d[i] > 150 && d[i + 1] < 90 && d[i + 2] < 90) n++;
        return n; }""")
    assert reds > 50, reds
    # One profile per recorded step: the slider goes back to step 3.
    frame.eval_on_selector('[data-run="sharpness"] [data-testid=landscape-step-slider]',
                           "(s) => { s.value = '0'; s.dispatchEvent(new Event('input')); }")
    frame.wait_for_selector('[data-testid=landscape-panel][data-run="sharpness"][data-step="3"][data-state=drawn]')
    frame.query_selector("[data-testid=landscape-section]").scroll_into_view_if_needed()
    screenshot(page, "landscape_sharpness_profile.png")
    assert page.console_errors == []
