"""The health corpus (``bench/health_corpus.py``): its plan is reproducible and covers the issue's axes, cases and
catalogue; the judge cuts a run at a step and sums results up per rule; its short form (a handful of real tiny
trainings) finds each fault with the right rule and layer and nothing on the healthy runs."""

import collections
import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import corpus_catalogue as cat  # noqa: E402
import corpus_judge  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.health.rules import RULES_BY_ID  # noqa: E402

from corpus_helpers import corpus_results  # noqa: E402
from health_helpers import make_run  # noqa: E402


def test_plan_is_reproducible_and_covers_the_issue():
    a, b = cat.plan(seed=3), cat.plan(seed=3)
    assert [s.to_json() for s in a] == [s.to_json() for s in b]
    assert [s.to_json() for s in cat.plan(seed=4)] != [s.to_json() for s in a]
    assert len(a) >= 300
    kinds = collections.Counter(s.kind for s in a)
    assert abs(kinds["healthy"] - kinds["fault"]) <= len(a) // 5
    cases = collections.Counter(s.case for s in a)
    for case in list(cat.HEALTHY) + list(cat.ALL_FAULTS):
        assert cases[case] >= 3, case
    for axis, values in (("arch", cat.ARCHS), ("optimizer", cat.OPTIMIZERS), ("schedule", cat.SCHEDULES),
                         ("mode", cat.MODES), ("entry", cat.ENTRIES), ("dtype", ("fp32", "fp16"))):
        assert {getattr(s, axis) for s in a} == set(values), axis
    assert min(s.batch for s in a) == 4 and max(s.batch for s in a) == 256
    for s in a:
        assert all(r in RULES_BY_ID for r in s.expected), s.id
        if s.dtype == "fp16":
            assert s.entry == "model"
        if s.kind == "fault":
            assert s.expected and s.fault_step is not None
    assert sum(s.msrun for s in a) >= len(cat.MSRUN_FAULTS)


def test_shards_partition_the_plan():
    specs = cat.plan(seed=0)
    ids = [s.id for k in range(4) for s in cat.shard(specs, k, 4)]
    assert sorted(ids) == sorted(s.id for s in specs)


def test_truncate_cuts_every_series_at_the_step():
    steps = np.arange(10, 101, 10)
    rows = [(s, 0.5, 1.0, 2.0, 10, 0) for s in steps]
    run = make_run({metadata.LOSS: (steps, np.linspace(2, 1, 10))}, intervals={metadata.LOSS: rows},
                   layers={metadata.UPDATE_RATIO_LAYERS: (["a", "b"], (steps, np.full((10, 2), 1e-3)))})
    cut = corpus_judge.truncate(run, 55, now=123.0)
    assert cut.scalars[metadata.LOSS].steps.tolist() == [10, 20, 30, 40, 50]
    assert cut.intervals[metadata.LOSS].steps.tolist() == [10, 20, 30, 40, 50]
    assert cut.layers[metadata.UPDATE_RATIO_LAYERS].values.shape == (5, 2)
    assert cut.state.now == 123.0 and cut.run_end is None
    assert len(run.scalars[metadata.LOSS]) == 10        # the original is left alone


def test_summary_rows_recall_false_alarms_and_place():
    results = [
        {"id": "h1", "kind": "healthy", "case": "plain", "status": "trained", "expected": [], "alarms": []},
        {"id": "h2", "kind": "healthy", "case": "plain", "status": "trained", "expected": [],
         "alarms": ["loss_oscillation"]},
        {"id": "f1", "kind": "fault", "case": "layer_explosion", "status": "trained",
         "expected": ["grad_explosion", "nonfinite"], "found": {"grad_explosion": True, "nonfinite": False},
         "delay_steps": {"grad_explosion": 2}, "right_place": {"grad_explosion": True}},
        {"id": "f2", "kind": "fault", "case": "layer_explosion", "status": "trained",
         "expected": ["grad_explosion", "nonfinite"], "found": {"grad_explosion": False, "nonfinite": True},
         "delay_steps": {"nonfinite": 0}, "right_place": {}},
    ]
    s = corpus_judge.summarize(results, ["grad_explosion", "nonfinite", "loss_oscillation"])
    g = s["rules"]["grad_explosion"]
    assert (g["trials"], g["found"], g["recall"], g["median_delay_steps"]) == (2, 1, 0.5, 2)
    assert g["right_place"] == 1.0 and g["missed"] == ["f2"]
    assert s["rules"]["nonfinite"]["trials"] == 0              # only an alternative for this fault
    assert s["rules"]["loss_oscillation"]["false_alarms_per_100"] == 50.0
    assert s["catalogue"]["recall"] == 1.0 and s["healthy"]["with_alarm"] == ["h2"]


def test_input_bound_pace_follows_the_measured_step():
    import corpus_train

    pace = corpus_train.Pace()
    assert pace.delay() == corpus_train.SLOW_BATCH_S                     # nothing measured yet
    for step in (1, 2, 3):
        pace.begin()
        pace.end(step)
    assert len(pace.steps_s) == 2                                        # step 1 (the compile) is left out
    pace.steps_s = [0.3, 0.5, 0.4]
    assert pace.delay() == 2 * 0.4
    pace.steps_s = [0.01] * 3
    assert pace.delay() == corpus_train.SLOW_BATCH_S                     # never under the fixed floor
    pace.steps_s = [0.01] * 3 + [1.0] * corpus_train.PACE_WINDOW
    assert pace.delay() == 2.0                                           # the last PACE_WINDOW steps only
    summary = pace.summary()
    assert summary["batch_ms_median"] == 450.0 and summary["step_ms_median"] == 1000.0    # 0.1, 0.8, 0.1, 2 s
    assert summary["factor"] == corpus_train.PACE and summary["batches"] == 4


def test_input_bound_counts_only_where_the_pipeline_dominated():
    """The trainer's pace (each batch waits twice the median step it measured) is in the meta; a run whose batches
    did not take clearly longer than its steps was not input-bound and is no trial. Older runs (a fixed 100 ms
    batch, no pace) are judged by their recorded step time."""
    spec = cat.Spec(index=1, seed=1, kind="fault", case="input_bound", expected=("input_bound",))
    steps = np.arange(10, 101, 10)
    run = make_run({metadata.STEP_TIME_MS: (steps, np.full(10, 40.0))})
    pace = {"factor": 2.0, "min_batch_ms": 100.0, "batches": 100, "steps": 99}
    assert corpus_judge.void_reason(spec, run, {"pace": dict(pace, batch_ms_median=160.0, step_ms_median=80.0)}) == ""
    why = corpus_judge.void_reason(spec, run, {"pace": dict(pace, batch_ms_median=110.0, step_ms_median=100.0)})
    assert why.startswith("batches of 110 ms against steps of 100 ms") and "not input-bound" in why
    assert corpus_judge.void_reason(spec, run, {}) == ""                 # 40 ms steps against the fixed 100 ms
    slow = make_run({metadata.STEP_TIME_MS: (steps, np.full(10, 700.0))})
    assert "the prefetching pipeline keeps up" in corpus_judge.void_reason(spec, slow, {})


def test_a_healthy_run_whose_steps_waited_for_data_is_input_bound_in_fact():
    """Averaged over every step the trainer timed (the interval series, weighted by their step counts), a healthy
    run that waited more than a fifth of each step for data, and more than a batch hand-over, is listed apart; the
    figures of 0204-healthy-plain-mlp (GRAPH, the loop, batch 256 on a loaded machine)."""
    spec = cat.Spec(index=204, seed=1, kind="healthy", case="plain")
    steps = np.arange(10, 121, 10)

    def run_of(wait_ms, step_ms, intervals=True):
        scalars = {metadata.DATA_WAIT_MS: (steps, np.full(12, 0.2)), metadata.STEP_TIME_MS: (steps, np.full(12, 50.0)),
                   metadata.LOSS: (steps, np.linspace(2, 1, 12))}
        if not intervals:
            scalars.update({metadata.DATA_WAIT_MS: (steps, wait_ms), metadata.STEP_TIME_MS: (steps, step_ms)})
            return make_run(scalars)
        rows = {tag: [(s, 0.1, v, 4 * v, 10, 0) for s, v in zip(steps, values)]
                for tag, values in ((metadata.DATA_WAIT_MS, wait_ms), (metadata.STEP_TIME_MS, step_ms))}
        return make_run(scalars, intervals=rows)

    # The points (sampled steps) say the wait is tiny; every step's mean says 9.4 ms of 27.2: 34%.
    wait = np.array([0.21, 7.88, 11.84, 26.62, 13.27, 0.64, 8.39, 1.35, 10.72, 5.85, 10.3, 14.53])
    why = corpus_judge.void_reason(spec, run_of(wait, np.full(12, 17.8)))
    assert why.startswith("planned healthy, input-bound in fact: its steps waited 9.3") and "(34% of" in why
    assert corpus_judge.input_bound_in_fact(run_of(wait, np.full(12, 17.8), intervals=False)).startswith("planned")
    assert corpus_judge.void_reason(spec, run_of(np.full(12, 2.2), np.full(12, 8.7))) == ""    # a hand-over: 20%
    assert corpus_judge.void_reason(spec, run_of(np.full(12, 9.0), np.full(12, 40.0))) == ""   # 18% of the step
    assert corpus_judge.void_reason(spec, make_run({metadata.LOSS: (steps, np.linspace(2, 1, 12))})) == ""


@pytest.mark.slow
def test_quick_corpus_finds_each_fault_and_nothing_on_healthy_runs(tmp_path):
    pytest.importorskip("mindspore")
    results = corpus_results(tmp_path, ["quick"], timeout=3000)
    for case in ("small_batch", "early_growth"):
        assert results[case]["alarms"] == [], results[case]["findings"]
    for case in ("nan_at_step", "layer_explosion", "frozen_layer", "dead_layer", "overflow_storm", "broken_eval"):
        r = results[case]
        required = cat.ALL_FAULTS[case].rules
        assert all(r["found"][rule] for rule in required), (case, r["findings"])
        assert all(r["right_place"].get(rule, True) for rule in required), (case, r["findings"])
    assert results["nan_at_step"]["delay_steps"]["nonfinite"] == 0
    assert "overfitting" not in results["broken_eval"]["alarms"]
    # The frozen layer is listed in the layer tiers, marked frozen.
    from tb_plugin_mindspore.health import sources

    (run,) = sources.runs_from_logdir(os.path.join(tmp_path, "runs", "0004-fault-frozen_layer-mlp"))
    weights = run.layers[metadata.WEIGHT_NORM_LAYERS]
    assert "l0.weight" in weights.layers and weights.frozen == ("l0.weight",)
    assert run.frozen_layers() == {"l0.weight": "requires_grad=False"}
