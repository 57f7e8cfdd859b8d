"""Resumed runs and zoom windows through TensorBoard's own app: a real MindSpore training resumed from its
checkpoint into the same run folder (a new event file that goes back to an earlier step), MindSpore's own resumed
``*_MS`` run, and the exact zoom window of a long series that TensorBoard itself keeps only a sample of."""

import glob
import os
import sys

import numpy as np
import pytest

from dashboard_data import wait_until
from tb_harness import App
from tb_plugin_mindspore.io import records
from tensorboard.compat.proto import event_pb2
import warm

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)

# Phase "first": 4 epochs of 8 steps with a checkpoint per epoch; phase "resume": from the epoch-2 checkpoint,
# epochs 3-4 again (steps 17-32, the global step carried on) with another learning rate, into the same run folder.
RESUME_SCRIPT = r"""
import glob, os, sys
sys.path.insert(0, sys.argv[1])
import mindspore as ms
from mindspore import nn
from mindspore.train import CheckpointConfig, Model, ModelCheckpoint
from ms_training import tiny_dataset
from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

run_dir, ckpt_dir, phase = sys.argv[2], sys.argv[3], sys.argv[4]
ms.set_context(mode=ms.GRAPH_MODE)
ms.set_seed(0)
net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
# Model.train(initial_epoch=2) counts cur_step_num from 0 again; TrainMonitor carries the global step on from the
# epochs before (steps 17-32).
callbacks = [TrainMonitor(run_dir, collect_freq=2)]
if phase == "first":
    lr, initial_epoch = 0.05, 0
    callbacks.append(ModelCheckpoint(prefix="tiny", directory=ckpt_dir,
                                     config=CheckpointConfig(save_checkpoint_steps=8, keep_checkpoint_max=8)))
else:
    lr, initial_epoch = 0.01, 2
    [ckpt] = glob.glob(os.path.join(ckpt_dir, "tiny-2_*.ckpt"))
    ms.load_param_into_net(net, ms.load_checkpoint(ckpt))
optimizer = nn.Momentum(net.trainable_params(), learning_rate=lr, momentum=0.9)
model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
model.train(4, tiny_dataset(), callbacks=callbacks, dataset_sink_mode=False, initial_epoch=initial_epoch)
"""


def _file_points(path, tag):
    """``[(step, value)]`` of a scalar tag in one event file, in write order."""
    with open(path, "rb") as f:
        buf = f.read()
    out = []
    for _, _, data in records.read_records(buf):
        event = event_pb2.Event.FromString(data)
        for v in event.summary.value:
            if v.tag == tag:
                value = v.simple_value if v.WhichOneof("value") == "simple_value" else v.tensor.float_val[0]
                out.append((event.step, value))
    return out


@pytest.fixture(scope="module")
def resumed(tmp_path_factory):
    pytest.importorskip("mindspore")
    root = tmp_path_factory.mktemp("resumed")
    run_dir, ckpt_dir = root / "logs" / "tiny", root / "ckpt"
    for phase in ("first", "resume"):
        proc = warm.run([sys.executable, "-c", RESUME_SCRIPT, TESTS, str(run_dir), str(ckpt_dir), phase],
                        capture_output=True, text=True, timeout=300, env=dict(os.environ, GLOG_v="3"))
        assert proc.returncode == 0, proc.stderr[-3000:]
    files = sorted(glob.glob(str(run_dir / "*tfevents*")))
    assert len(files) == 2, files
    return root / "logs", [_file_points(f, "core/loss") for f in files]


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def resumed_app(request, resumed):
    logdir, _ = resumed
    app = App(logdir, load_fast=request.param)
    app.wait_for_runs(["tiny"])
    app.wait_for_last_step("tiny", "core/loss", 32)
    # The plugin reads the run's files itself once the tab asks for it (in the background).
    wait_until(lambda: app.plugin("/scalars", run="tiny", tag="core/loss")["restarts"])
    yield app
    app.close()


@pytest.mark.slow
def test_route_answers_the_final_timeline_of_a_resumed_training(resumed, resumed_app):
    _, (first, second) = resumed
    assert first[0][0] <= 2 and first[-1][0] == 32 and second[0][0] in (17, 18) and second[-1][0] == 32
    restart = second[0][0]
    expected = [p for p in first if p[0] < restart] + second
    for route in ("/scalars", "/scalars_batch"):
        body = resumed_app.plugin(route, run="tiny", tag="core/loss")
        series = body if route == "/scalars" else body["series"][0]
        steps = [p[0] for p in series["points"]]
        assert steps == [s for s, _ in expected]                         # no step twice, no going back
        np.testing.assert_allclose([p[2] for p in series["points"]], [v for _, v in expected], rtol=1e-6)
        [mark] = series["restarts"]
        assert mark["step"] == restart and mark["superseded_points"] == len([s for s, _ in first if s >= restart])
        assert "tfevents" in mark["source"]
        assert "superseded" not in series
        # Asked for, the old segment comes too: the first run's points from the restart on.
        shown = resumed_app.plugin(route, run="tiny", tag="core/loss", superseded="1")
        shown = shown if route == "/scalars" else shown["series"][0]
        [old] = shown["superseded"]
        assert [p[0] for p in old["points"]] == [s for s, _ in first if s >= restart]
        np.testing.assert_allclose([p[2] for p in old["points"]], [v for s, v in first if s >= restart], rtol=1e-6)


def test_resumed_ms_run_is_drawn_the_same_way(ms_layouts):
    app = App(ms_layouts.root)
    try:
        app.wait_for_runs(["resume"])
        wait_until(lambda: app.plugin("/scalars", run="resume", tag="loss")["total_points"] == 15)
        body = app.plugin("/scalars", run="resume", tag="loss", superseded="1")
        first, second = ms_layouts.expected["resume"]["first"]["loss"], ms_layouts.expected["resume"]["second"]["loss"]
        assert [p[0] for p in body["points"]] == list(range(1, 16))
        np.testing.assert_allclose([p[2] for p in body["points"]], [v for s, v in first if s < 6] + [v for _, v in second])
        assert [(r["step"], r["superseded_points"]) for r in body["restarts"]] == [(6, 5)]
        [old] = body["superseded"]
        assert [p[0] for p in old["points"]] == [6, 7, 8, 9, 10]
        np.testing.assert_allclose([p[2] for p in old["points"]], [v for s, v in first if s >= 6])
    finally:
        app.close()


LONG = 20_000


@pytest.fixture(scope="module")
def long_logdir(tmp_path_factory):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path_factory.mktemp("long") / "logs"
    rng = np.random.default_rng(0)
    values = (2.0 + np.cumsum(rng.normal(size=LONG)) * 0.001).astype(np.float32)
    values[12_344] = 500.0           # a one-step spike
    values[15_001] = np.nan
    with SummaryWriter(os.path.join(str(root), "long"), max_queue=LONG + 10) as w:
        for i, v in enumerate(values.tolist()):
            w.scalar("core/loss", v, i + 1, wall_time=1.7e9 + i)
    return root, values


@pytest.mark.slow
def test_zoom_window_of_a_long_series_is_exact(long_logdir):
    root, values = long_logdir
    app = App(root)   # TensorBoard keeps 10,000 of the 20,000 points; the plugin reads them all
    try:
        app.wait_for_runs(["long"])
        app.wait_for_last_step("long", "core/loss", LONG)
        wait_until(lambda: app.plugin("/scalars", run="long", tag="core/loss", max_points=10)["total_points"] == LONG,
                   timeout=120)
        whole = app.plugin("/scalars", run="long", tag="core/loss")
        assert whole["total_points"] == LONG and whole["downsampled"] and len(whole["points"]) <= 2000
        steps = {p[0] for p in whole["points"]}
        assert {1, 12_345, 15_002, LONG} <= steps                         # first, spike, NaN, last
        # A window of 1,000 steps on 400 columns: every point of it (plus one on each side).
        body = app.plugin("/scalars", run="long", tag="core/loss", x_min=12_000, x_max=12_999, width=400,
                          max_points=2002)
        assert [p[0] for p in body["points"]] == list(range(11_999, 13_001))
        np.testing.assert_allclose([p[2] for p in body["points"]], values[11_998:13_000], rtol=1e-7)
        assert body["window"] == {"x_min": 12_000, "x_max": 12_999, "width": 400, "points_inside": 1000}
        # A wide window: per column the true extremes of every point, the same in the batch route.
        body = app.plugin("/scalars_batch", run="long", tag="core/loss", x_min=10_000, x_max=18_000, width=300,
                          max_points=1502)["series"][0]
        kept = {p[0] for p in body["points"]}
        assert {12_345, 15_002} <= kept and len(body["points"]) <= 1502 and body["downsampled"]
        app.plugin("/scalars", expect=400, run="long", tag="core/loss", x_min=5, x_max=4)
        app.plugin("/scalars", expect=400, run="long", tag="core/loss", width=0)
        app.plugin("/scalars", expect=400, run="long", tag="core/loss", superseded="maybe")
    finally:
        app.close()


# -- in the tab (headless Chromium, a real tensorboard process) -------------------------------------------------------
def _open(page, base, tag):
    from browser_helpers import open_tab, wait_attr, wait_settled

    frame = open_tab(page, base)
    wait_attr(frame, tag, "state", "v === 'drawn'", timeout=60000)
    wait_settled(frame)          # the Health panel and the status change the layout above the chart when they come
    return frame


def _pixel(frame, tag, x):
    """The canvas pixels of column ``x`` (CSS pixels inside the chart's canvas) that are drawn, as (r, g, b, a)."""
    return frame.evaluate(
        """([sel, x]) => {
            const canvas = document.querySelector(sel).querySelector("canvas");
            const px = Math.round(x * devicePixelRatio);
            const d = canvas.getContext("2d").getImageData(px, 0, 1, canvas.height).data;
            const out = [];
            for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) out.push([d[i], d[i + 1], d[i + 2], d[i + 3]]);
            return out;
        }""",
        ["[data-testid=chart][data-tag=\"%s\"]" % tag, x],
    )


@pytest.mark.slow
def test_tab_marks_the_restart_and_shows_superseded_steps_on_demand(resumed, page):
    from browser_helpers import chart_attrs, wait_attr
    from tb_harness import tensorboard_process

    logdir, (first, second) = resumed
    restart = second[0][0]
    tag = "core/loss"
    with tensorboard_process(logdir) as base:
        from tb_harness import fetch_json

        wait_until(lambda: fetch_json(base + "/data/plugin/mindspore/scalars?run=tiny&tag=core/loss")["restarts"],
                   timeout=120)
        frame = _open(page, base, tag)
        attrs = wait_attr(frame, tag, "restartMarks", "v && v.includes('@')")
        assert attrs["restarts"] == "1" and attrs["superseded"] == "0"
        run, rest = attrs["restartMarks"].split("@")
        step, x = rest.split(":")
        assert run == "tiny" and int(step) == restart
        # The marker is drawn: a tall dashed grey column of pixels at the restart step.
        grey = [p for p in _pixel(frame, tag, int(x)) if abs(p[0] - 95) < 30 and abs(p[2] - 104) < 30]
        assert len(grey) > 40, grey[:5]
        assert "resumed at step %d" % restart in frame.inner_text("[data-testid=chart-card][data-tag=\"core/loss\"]")
        assert int(attrs["points"]) == len([s for s, _ in first if s < restart]) + len(second)
        # The setting draws the superseded segment (dashed) and keeps the marker.
        frame.check("[data-testid=show-superseded]")
        attrs = wait_attr(frame, tag, "superseded", "v === '1'")
        assert attrs["restarts"] == "1"
        frame.uncheck("[data-testid=show-superseded]")
        wait_attr(frame, tag, "superseded", "v === '0'")
        assert page.console_errors == [], page.console_errors


@pytest.mark.slow
def test_tab_zoom_fetches_the_window_at_full_resolution(long_logdir, page):
    from browser_helpers import chart_attrs, chart_selector, wait_attr
    from tb_harness import tensorboard_process

    root, values = long_logdir
    tag = "core/loss"
    with tensorboard_process(root) as base:
        # Wait until the plugin serves every point (TensorBoard keeps a sample), then open the tab.
        from tb_harness import fetch_json

        wait_until(lambda: fetch_json(base + "/data/plugin/mindspore/scalars?run=long&tag=core/loss&max_points=10")
                   ["total_points"] == LONG, timeout=120)
        frame = _open(page, base, tag)
        coarse = int(chart_attrs(frame, tag)["points"])
        assert coarse <= 2000
        over = frame.locator(chart_selector(tag) + " .u-over")
        box = over.bounding_box()
        y = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] * 0.60, y)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] * 0.61, y, steps=3)
        page.mouse.move(box["x"] + box["width"] * 0.62, y, steps=3)
        page.mouse.up()
        attrs = wait_attr(frame, tag, "windowState", "v === 'drawn'")
        lo, hi = (int(v) for v in attrs["window"].split("-"))
        assert 0 < hi - lo < LONG // 20 and attrs["zoomed"] == "true"
        inside = hi - lo + 1
        # Far more points than the whole-run answer had in this window: every point, or M4's per pixel column.
        assert int(attrs["windowPoints"]) >= min(inside, 1500), attrs
        # Reset: back to the whole run.
        frame.click('[data-testid=chart-card][data-tag="core/loss"] [data-testid=reset-zoom]')
        attrs = wait_attr(frame, tag, "zoomed", "v === 'false'")
        assert "window" not in attrs and int(attrs["points"]) == coarse
        assert page.console_errors == [], page.console_errors
