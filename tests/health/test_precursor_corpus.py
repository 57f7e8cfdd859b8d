"""The health corpus's precursor set (``bench/corpus_precursors.py``, ``health_corpus.py precursors``): its plan
covers both entry points and both modes for every precursor, apart from the main plan; the failure and lead time are
measured on the run cut at each step; its short form (real tiny trainings) gives each precursor as a watch (level
info, never warn or error), the failure it announces and the lead time between them, and nothing on the healthy
transformer."""

import os
import sys

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))

import corpus_catalogue as cat  # noqa: E402
import corpus_precursors as cp  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.health.rules import RULES_BY_ID  # noqa: E402

from corpus_helpers import corpus_results  # noqa: E402
from health_helpers import make_run  # noqa: E402


def test_precursor_rules_are_watches_never_errors():
    for rule in cp.PRECURSOR_RULES:
        assert RULES_BY_ID[rule].level == "info", rule


def test_plan_covers_entries_and_modes_and_leaves_the_main_plan_alone():
    specs = cp.plan(per_case=4, seed=0)
    assert [s.to_json() for s in specs] == [s.to_json() for s in cp.plan(per_case=4, seed=0)]
    for name, case in cp.CASES.items():
        runs = [s for s in specs if s.case == name]
        assert {(s.entry, s.mode) for s in runs} == {(e, m) for e in cat.ENTRIES for m in cat.MODES}, name
        if case.rule is not None:
            assert case.rule in cp.PRECURSOR_RULES and case.failure
    assert {c.rule for c in cp.CASES.values()} - {None} == set(cp.PRECURSOR_RULES)
    assert sum(c.rule is None for c in cp.CASES.values()) >= 3
    assert not set(cp.CASES) & (set(cat.ALL_FAULTS) | set(cat.HEALTHY))      # the main catalogue is not touched
    assert all(s.fault_step for s in specs if s.case == "adam_epsilon")


def test_divergence_is_the_loss_at_twice_its_best():
    loss = np.concatenate([np.linspace(1.4, 0.3, 30), np.full(10, 0.3), np.full(10, 0.9)])
    run = make_run({metadata.LOSS: (np.arange(2, 101, 2), loss)})
    step, wall = cp.divergence_step(run)
    assert step == 2 * (40 + 3)          # the third point at 0.9: the trailing median of 5 is 0.9 > 2 x 0.3
    assert wall is not None
    assert cp.divergence_step(make_run({metadata.LOSS: np.linspace(1.4, 0.3, 50)})) == (None, None)
    nan = np.linspace(1.4, 0.3, 20)
    nan[12] = np.nan
    assert cp.divergence_step(make_run({metadata.LOSS: nan}))[0] == 13


def test_first_firing_bisects_to_the_first_step_of_the_watch():
    logits = np.concatenate([np.full(20, 5.0), np.linspace(5.0, 200.0, 20)])
    steps = np.arange(2, 81, 2)
    run = make_run({metadata.LOSS: (steps, np.linspace(2, 1, 40)), metadata.ATTENTION_MAX_LOGIT: (steps, logits)})
    step, _ = cp.first_firing(run, {"attention_logit_growth"}, ("info",))
    first = int(steps[np.nonzero(logits >= 50.0)[0][0]])      # tenfold the early 5, above 30
    assert step == first
    assert cp.first_firing(run, {"attention_logit_growth"}, ("warn", "error")) == (None, None)


def test_summary_lead_times_and_false_watches():
    results = [
        {"id": "a", "case": "attention_growth", "precursor": "attention_logit_growth", "status": "trained",
         "entry": "model", "mode": "graph", "watch": ["attention_logit_growth"], "precursor_levels": ["info"],
         "failure_step": 100, "lead_steps": 40, "lead_s": 4.0},
        {"id": "b", "case": "attention_growth", "precursor": "attention_logit_growth", "status": "trained",
         "entry": "loop", "mode": "pynative", "watch": ["attention_logit_growth"], "precursor_levels": ["info"],
         "failure_step": 90, "lead_steps": 60, "lead_s": 9.0},
        {"id": "c", "case": "attention_growth", "precursor": "attention_logit_growth", "status": "trained",
         "entry": "loop", "mode": "graph", "watch": [], "precursor_levels": [], "failure_step": None},
        {"id": "h", "case": "control_transformer", "precursor": None, "status": "trained", "entry": "model",
         "mode": "graph", "watch": ["attention_logit_growth"], "precursor_levels": ["info"], "alarms": []},
    ]
    row = cp.summarize(results)["rules"]["attention_logit_growth"]
    assert (row["trials"], row["found"], row["failures"], row["before_failure"]) == (3, 2, 2, 2)
    assert row["lead_steps_median"] == 50 and row["lead_steps_range"] == [40, 60]
    assert row["lead_s_median"] == 6.5 and row["false_watches"] == 1 and row["missed"] == ["c"]
    text = cp.table(cp.summarize(results), "cmd")
    assert "| `attention_logit_growth` | info | 3 | 67% (2 of 3) | 2 of 3 | 2 of 2 | 50 steps (40 to 60); 6.5 s " \
           "(4.0 to 9.0) | 1 of 1 |" in text


@pytest.mark.slow
def test_quick_precursors_watch_before_the_failure_and_stay_quiet_on_a_healthy_transformer(tmp_path):
    pytest.importorskip("mindspore")
    results = corpus_results(tmp_path, ["precursors", "--quick"], timeout=1800)
    for case in ("attention_growth", "adam_epsilon", "lr_above_stability"):
        r, rule = results[case], cp.CASES[case].rule
        assert r["watch"] == [rule], (case, r["findings"])
        watches = [f for f in r["findings"] if f["rule"] in cp.PRECURSOR_RULES]
        assert watches and all(f["level"] == "info" and f["watch"] for f in watches), watches
        assert r["failure_step"] is not None and r["lead_steps"] is not None, (case, r)
    # Attention logits and Adam's epsilon come well before their failures on these seeds (28 and 14 steps); the
    # edge of stability comes a few steps before or after it (its lead time's range in RULES.md).
    assert results["attention_growth"]["lead_steps"] > 0 and results["adam_epsilon"]["lead_steps"] > 0
    control = results["control_transformer"]
    # The attention probe's extra forward pass every 2 steps may cost more CPU than a few-millisecond GRAPH step:
    # monitoring_overhead says so, rightly (RULES.md); nothing else may warn.
    assert control["watch"] == [] and set(control["alarms"]) <= {"monitoring_overhead"}, control["findings"]
    assert control["recorded"]["debug/attention/max_logit"]
