"""One series for the Health panel, ``check`` and ``report``: on a run of 24,000 points a tag (beyond TensorBoard's
10,000-point sample of scalars) the three give the same findings with the same numbers, because the panel judges
the series the charts draw (every point, through ``Sources``) rather than TensorBoard's sample."""

import json
import os
import re
import sys
import time
import urllib.request

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.health import engine, sources

from health_helpers import T0
from tb_harness import tensorboard_process
import warm

STEPS = 24_000
SPIKES = np.arange(1_000, STEPS, 1_150)[:20]          # 20 single-step loss spikes
NAMES = ["encoder.weight", "head.weight"]


def write_long_run(folder):
    """24,000 steps of loss (20 single-step spikes, each 20x the loss around it) and gradient norm with their
    interval rows, and every second step the update ratios of two layers (the head's far above 0.1)."""
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    rng = np.random.default_rng(0)
    t = np.arange(1, STEPS + 1)
    loss = 0.3 + 1.2 * np.exp(-t / 4000.0) + rng.normal(0, 0.01, STEPS)
    loss[SPIKES - 1] *= 20.0
    grad = 1.0 + rng.normal(0, 0.05, STEPS)
    ratios = np.stack([np.exp(rng.normal(np.log(1e-3), 0.3, STEPS)), np.exp(rng.normal(np.log(0.35), 0.3, STEPS))],
                      axis=1)
    w = SummaryWriter(str(folder), flush_secs=1.0, max_queue=1_000_000)
    try:
        w.run_info({"collect_freq": 1, "epochs": 1, "steps_per_epoch": STEPS}, step=0)
        for i, s in enumerate(t):
            wall = T0 + 0.05 * s
            w.scalar(metadata.LOSS, float(loss[i]), int(s), wall)
            w.interval(metadata.LOSS, float(loss[i]), float(loss[i]), float(loss[i]), 1, 0, step=int(s),
                       wall_time=wall)
            w.scalar(metadata.GRAD_NORM, float(grad[i]), int(s), wall)
            if s % 2 == 0:
                w.layers(metadata.UPDATE_RATIO_LAYERS, NAMES, ratios[i].astype(np.float32), int(s), wall)
        from tb_plugin_mindspore.contract import run_end as run_end_contract

        w.value(run_end_contract.value("finished", STEPS, T0 + 0.05 * STEPS), STEPS)
    finally:
        w.close(timeout=600)


def _comparable(report):
    """``{run: [(rule, level, tag, steps, message)]}`` without the clock's rules (they read the time of asking)."""
    out = {}
    for run in report["runs"]:
        out[run["run"]] = sorted((f["rule"], f["level"], f["tag"], tuple(f["steps"]), f["message"])
                                 for f in run["findings"] if f["rule"] not in engine.CLOCK_RULES)
    return out


def _diff(got, expected):
    """The findings one side has and the other has not (readable in a failure)."""
    a, b = set(expected.get("long", [])), set(got.get("long", []))
    return {"only in check": sorted(a - b), "only here": sorted(b - a)}


def _get(url):
    with urllib.request.urlopen(url, timeout=60) as r:
        return json.loads(r.read().decode("utf-8"))


@pytest.mark.slow
def test_panel_check_and_report_agree_on_a_run_longer_than_the_sample(tmp_path):
    logdir = tmp_path / "logs"
    write_long_run(logdir / "long")
    check = engine.report(sources.runs_from_logdir(str(logdir)))
    expected = _comparable(check)
    spikes = sum(int(re.search(r"spiked (\d+) time", f[4]).group(1)) for f in expected["long"] if f[0] == "loss_spike")
    assert spikes == len(SPIKES), expected                           # every spike, sampled or not
    assert any(f[0] == "layer_too_fast" for f in expected["long"]), expected

    with tensorboard_process(logdir) as base:
        deadline, panel = time.time() + 240, None
        while time.time() < deadline:
            panel = _comparable(_get(base + "/data/plugin/mindspore/health"))
            if panel == expected:
                break
            time.sleep(1.0)
    assert panel == expected, _diff(panel, expected)

    out = tmp_path / "report.html"
    proc = warm.run([sys.executable, "-m", "tb_plugin_mindspore.cli", "report", str(logdir), "--out", str(out)],
                    capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    html = out.read_text(encoding="utf-8")
    start = html.index('<script type="application/json" id="ms-report-data">') + len(
        '<script type="application/json" id="ms-report-data">')
    data = json.loads(html[start:html.index("</script>", start)])
    reported = _comparable(data["routes"]["health"])
    assert reported == expected, _diff(reported, expected)
    assert os.path.getsize(out) > 0


def test_a_layer_vector_written_twice_at_one_step_keeps_its_last_row(tmp_path):
    """TensorBoard's data server keeps the last of two records at one step and its Python loader keeps both; the
    rules read one row per step, the last, whichever loader the panel has (``check`` reads the files itself)."""
    from tb_plugin_mindspore.health.series import LayerSeries
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    rows = LayerSeries.from_rows("t", ["a", "b"], [3, 1, 2, 2], [30.0, 10.0, 20.0, 21.0],
                                 [[3, 3], [1, 1], [2, 2], [5, 5]])
    assert rows.steps.tolist() == [1, 2, 3]
    assert rows.values.tolist() == [[1, 1], [5, 5], [3, 3]] and rows.wall_times.tolist() == [10.0, 21.0, 30.0]
    # From event files: both writes of step 2 are read, the later one is judged.
    run_dir = tmp_path / "run"
    w = SummaryWriter(str(run_dir))
    for step, values in ((1, [1.0, 1.0]), (2, [2.0, 2.0]), (2, [5.0, 5.0]), (3, [3.0, 3.0])):
        w.layers(metadata.GRAD_NORM_LAYERS, ["a", "b"], np.array(values), step)
    w.close()
    (run,) = sources.runs_from_logdir(str(tmp_path))
    series = run.layer_series("layer_grad_norm")
    assert series.steps.tolist() == [1, 2, 3] and series.values[1].tolist() == [5.0, 5.0]
