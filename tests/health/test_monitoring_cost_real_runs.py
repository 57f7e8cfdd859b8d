"""``monitoring_overhead`` on real GRAPH_MODE trainings of a small transformer: the first point of each kind compiles
its monitoring graphs (0.6-0.9 s of CPU each, against 2-6 ms for the later points), a one-off that is not the cost
of recording (a healthy debug-tier run warned on it); a recording that costs more than the steps at every point
still warns."""

import json
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.health import engine, sources  # noqa: E402
import warm  # noqa: E402

# Serial: the rule judges recording CPU time against the steps' wall time, which neighbours' load stretches (in the
# parallel phase the heavy run's ratio fell under the 50% line); alone, the ratio is what the run costs.
pytestmark = [pytest.mark.slow, pytest.mark.serial]

# Trains, in one child process: the healthy debug-tier transformer of the corpus (update ratios, layer gradient
# norms and data wait every 10 steps, diagnostic every 5) with Model.train and the loop, and the precursor set's
# healthy transformer recording its attention probe, update ratios and layer gradient norms at every step.
_CHILD = r"""
import gc, json, sys
sys.path[:0] = [sys.argv[1]]
import corpus_catalogue as cat, corpus_precursors as cp, corpus_train as ct

out = sys.argv[2]
status = {}
for i, entry in enumerate(("model", "loop")):
    spec = cat.Spec(index=i, seed=7, kind="healthy", case="plain", arch="transformer", optimizer="adamw",
                    schedule="warmup_cosine", mode="graph", entry=entry, batch=32, steps=40, collect_freq=5,
                    debug=True)
    status["healthy_" + entry] = ct.train_run(spec, out)["status"], spec.id
    gc.collect()
    gc.freeze()         # as the corpus scripts do between runs: MindSpore's collection before each compile skips it
plain = cp.monitor_kwargs


def every_step(spec, live):
    kw = plain(spec, live)
    kw.update(collect_freq=1, debug_freq=1)
    return kw


cp.monitor_kwargs = every_step
spec = cp.PSpec(index=2, case="control_transformer", seed=3, mode="graph", entry="model", steps=30)
status["heavy_model"] = cp.train_run(spec, out)["status"], spec.id
print(json.dumps(status))
"""


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    pytest.importorskip("mindspore")
    out = tmp_path_factory.mktemp("monitoring_cost")
    proc = warm.run([sys.executable, "-c", _CHILD, os.path.join(ROOT, "bench"), str(out)],
                    capture_output=True, text=True, timeout=900, env=dict(os.environ, GLOG_v="3"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    status = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {name: s for name, (s, _) in status.items()} == dict.fromkeys(status, "trained"), status
    runs = {}
    for name, (_, run_id) in status.items():
        (runs[name],) = sources.runs_from_logdir(out / "runs" / run_id)
    return runs


def _overhead(run):
    return [f.to_json() for f in engine.check_run(run) if f.rule == "monitoring_overhead"]


@pytest.mark.parametrize("entry", ["model", "loop"])
def test_first_points_compile_once_and_do_not_count_as_recording_cost(trained, entry):
    run = trained["healthy_" + entry]
    cost = run.scalars[metadata.MONITOR_CPU_MS]
    assert cost.steps[:4].tolist() == [5, 10, 15, 20]
    # The first diagnostic point (step 5) and the first debug point (step 10) each compiled graphs for 0.6-0.9 s of
    # CPU, counted in the next interval (120-180 ms a step over its 5 steps) before they were left out.
    assert np.all(cost.values < 10.0), cost.values.tolist()
    assert _overhead(run) == []


def test_recording_that_costs_more_than_the_steps_still_warns(trained):
    run = trained["heavy_model"]
    (f,) = _overhead(run)
    assert f["level"] == "warn" and f["tag"] == metadata.MONITOR_CPU_MS
    # About 30 ms of CPU a step for the attention probe and the debug tier at every step.
    assert np.median(run.scalars[metadata.MONITOR_CPU_MS].values[1:]) > 10.0
