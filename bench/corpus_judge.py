"""Judges the health corpus's runs with the health rules (what ``tb-mindspore check`` says) and sums them up.

* :func:`judge_run`: one trained run -> ``{"id", "kind", "case", "findings", "found", "delay_steps",
  "live_delay_s", "right_place", ...}``: every finding, whether the fault's rules named it (warn or error), how
  many steps after the fault the data first showed it (the shortest prefix of the run on which the rule fires:
  the run's series cut at each recorded step, bisected; cluster rules read the rank files whole, their delay is
  the step their finding starts at), the seconds from the injection to the live health event, and whether the
  finding names the faulty layer or rank.
* :func:`summarize`: the results -> one row per rule (trials, recall, false alarms per 100 healthy runs, median
  delay, right layer / rank) and the catalogue's totals.
"""

import dataclasses
import json
import os
import re
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import corpus_catalogue as cat  # noqa: E402
from corpus_files import write_result  # noqa: E402

ALARM = ("warn", "error")
# Rules whose series are not in the RunSeries (they read rank files from disk): their delay is their finding's start.
FILE_RULES = frozenset({"slow_rank", "rank_diverging", "rank_stopped", "memory_growth", "device_memory_limit"})
_IGNORED_LAYER = re.compile(r"(^|[./_])(bias|beta|gamma)$")


def load_run(run_dir, now=None):
    """The run's :class:`RunSeries` (as ``check`` reads it)."""
    from tb_plugin_mindspore.health import sources

    runs = sources.runs_from_logdir(run_dir, now=now)
    return runs[0] if runs else None


def truncate(run, step, now):
    """A copy of ``run`` as it was when step ``step`` had been recorded (every series cut there, no end marker,
    the clock at ``now``)."""
    from tb_plugin_mindspore.health.series import RunState

    def cut(series):
        keep = series.steps <= step
        changes = {f.name: getattr(series, f.name)[keep] for f in dataclasses.fields(series)
                   if isinstance(getattr(series, f.name), np.ndarray) and getattr(series, f.name).shape[:1] ==
                   series.steps.shape}
        return dataclasses.replace(series, **changes)

    scalars = {t: cut(s) for t, s in run.scalars.items()}
    scalars = {t: s for t, s in scalars.items() if len(s)}
    state = dataclasses.replace(run.state, now=now) if run.state is not None else RunState(now=now)
    return dataclasses.replace(
        run, scalars=scalars, intervals={t: cut(s) for t, s in run.intervals.items()},
        layers={t: cut(s) for t, s in run.layers.items()},
        health_events=[e for e in run.health_events if int(e.get("step", 0)) <= step], run_end=None, state=state)


def fires(run, rule_id):
    """The warn / error findings of ``rule_id`` on ``run`` (offline and merged live ones)."""
    from tb_plugin_mindspore.health import engine

    findings = engine.check_run(run)
    out = []
    for f in findings:
        for g in [f] + list(f.follow_ons):
            if g.rule == rule_id and g.level in ALARM:
                out.append(g)
    return out


def first_step_found(run, rule_id, fault_step):
    """The smallest recorded step ``s >= fault_step`` such that the run cut at ``s`` makes ``rule_id`` fire, or
    None (bisection over the loss series' steps; a prefix that fires is assumed to keep firing)."""
    loss = run.get("loss") or (next(iter(run.scalars.values())) if run.scalars else None)
    if loss is None:
        return None
    steps = np.unique(loss.steps[loss.steps >= fault_step])
    if not steps.size:
        return None
    wall = {int(s): float(w) for s, w in zip(loss.steps, loss.wall_times)}
    lo, hi = 0, steps.size - 1
    if not fires(truncate(run, int(steps[hi]), wall.get(int(steps[hi]), 0.0) + 1.0), rule_id):
        return None
    while lo < hi:
        mid = (lo + hi) // 2
        s = int(steps[mid])
        if fires(truncate(run, s, wall.get(s, 0.0) + 1.0), rule_id):
            hi = mid
        else:
            lo = mid + 1
    return int(steps[lo])


def _weights(names):
    return {n for n in names if not _IGNORED_LAYER.search(n)}


def right_place(spec, meta, finding):
    """Whether ``finding`` names the faulty layer (exactly the weights expected) or rank; None when the fault has
    no place."""
    fault = cat.ALL_FAULTS.get(spec.case)
    if fault is None:
        return None
    if fault.layer:
        expected = meta.get("fault_layer_name")
        named = _weights(finding.get("layers") or [])
        if not named:
            named = {n for n in meta.get("layers", []) if n in finding["message"]}
        return named == {expected}
    if fault.rank:
        ranks = finding.get("ranks")
        if ranks is None:
            m = re.search(r"\b[Rr]anks? ([\d, and]+)", finding["message"])    # "Rank 3 ...", "... of rank 1 ..."
            ranks = [int(r) for r in re.findall(r"\d+", m.group(1))] if m else []
        return list(ranks) == [spec.fault_rank]
    return None


def judge_run(out, spec):
    """Judges one trained run; returns its result dict (also written to ``<out>/results/<id>.json``)."""
    from tb_plugin_mindspore.health import engine

    meta_path = os.path.join(out, "meta", spec.id + ".json")
    with open(meta_path) as f:
        meta = json.load(f)
    result = {"id": spec.id, "kind": spec.kind, "case": spec.case, "expected": list(spec.expected),
              "spec": spec.to_json(), "status": meta.get("status"), "error": meta.get("error")}
    run_dir = os.path.join(out, meta["run_dir"])
    started = time.perf_counter()
    # "now": a minute after the run's last record (as if checked right after it ended).
    run = load_run(run_dir, now=meta.get("finished", time.time()) + 60.0) if os.path.isdir(run_dir) else None
    if run is None:
        result["status"] = "error"
        result["error"] = result["error"] or "no run folder"
        result["findings"] = []
        return write_result(out, result)
    void = void_reason(spec, run, meta)
    if void:
        result["void"] = void
    findings = [f.to_json() for f in engine.check_run(run)]
    flat = []
    for f in findings:
        flat.append(f)
        flat.extend(f.get("follow_ons") or [])
    result["findings"] = findings
    result["alarms"] = sorted({f["rule"] for f in flat if f["level"] in ALARM})
    result["found"] = {}
    result["delay_steps"] = {}
    result["right_place"] = {}
    fault_step = spec.fault_step or 1
    for rule_id in spec.expected:
        hits = [f for f in flat if f["rule"] == rule_id and f["level"] in ALARM]
        result["found"][rule_id] = bool(hits)
        if not hits:
            continue
        if rule_id in FILE_RULES:
            result["delay_steps"][rule_id] = max(0, min(f["steps"][0] for f in hits) - fault_step)
        else:
            first = first_step_found(run, rule_id, fault_step)
            if first is not None:
                result["delay_steps"][rule_id] = max(0, first - fault_step)
        places = [right_place(spec, meta, f) for f in hits]
        if any(p is not None for p in places):
            result["right_place"][rule_id] = any(places)
    injected = [i for i in meta.get("injected") or [] if i.get("time")]
    if injected:
        t0 = min(i["time"] for i in injected)
        for ev in meta.get("live") or []:
            from tb_plugin_mindspore.health.rules.common import rule_of

            rule_id = rule_of(ev["rule"])
            if rule_id in spec.expected and ev["time"] >= t0 - 1.0:
                result.setdefault("live_delay_s", {}).setdefault(rule_id, round(ev["time"] - t0, 3))
                result.setdefault("live_delay_steps", {}).setdefault(
                    rule_id, max(0, int(ev["step"]) - fault_step))
    result["judge_s"] = round(time.perf_counter() - started, 3)
    return write_result(out, result)


# input_bound is in effect when a batch takes at least this many times the step (1.25: a fifth of the step waits).
INPUT_BOUND_RATIO = 1.25


def void_reason(spec, run, meta=None):
    """Why a run is no trial, or "": a fault that did not take effect, or a healthy run that overfits in fact
    (:func:`overfits`) or is input-bound in fact (:func:`input_bound_in_fact`). ``input_bound``: the pipeline
    waits a multiple of the step a batch (the meta's ``pace``, :class:`corpus_train.Pace`) while it prefetches during
    the step, so the run is input-bound in fact only when its batches took clearly longer than its steps (their
    medians, as the trainer measured them: at least
    ``INPUT_BOUND_RATIO`` times, below which under 20% of a step would wait, the TensorFlow profiler's line for
    'highly' input-bound). Runs recorded before the pace existed waited a fixed ``SLOW_BATCH_S``, compared with the
    recorded step time. ``overfitting``: the network must fit its few noisy samples (the train loss's last points
    under half its first ones); one that does not, in the run's steps, cannot overfit them."""
    from tb_plugin_mindspore import metadata

    if spec.kind == "healthy":
        return overfits(run) or input_bound_in_fact(run)
    if spec.kind != "fault":
        return ""
    if spec.case == "overfitting":
        loss = run.scalars.get(metadata.LOSS)
        if loss is None or len(loss) < 6:
            return ""
        first, last = float(np.median(loss.values[:3])), float(np.median(loss.values[-3:]))
        if last >= 0.5 * first:
            return "the network did not fit its training samples (train loss %.3g to %.3g)" % (first, last)
        return ""
    if spec.case != "input_bound":
        return ""
    pace = (meta or {}).get("pace")
    if pace and pace.get("batch_ms_median") and pace.get("step_ms_median"):
        batch_ms, step_ms = pace["batch_ms_median"], pace["step_ms_median"]
        if batch_ms < INPUT_BOUND_RATIO * step_ms:
            return ("batches of %.0f ms against steps of %.0f ms (under %.2gx): the prefetching pipeline nearly keeps "
                    "up, the run is not input-bound" % (batch_ms, step_ms, INPUT_BOUND_RATIO))
        return ""
    import corpus_train

    series = run.scalars.get(metadata.STEP_TIME_MS)
    if series is None or not len(series):
        return ""
    step_ms = float(np.median(series.values[1:] if len(series) > 1 else series.values))
    batch_ms = 1000.0 * corpus_train.SLOW_BATCH_S
    if step_ms >= batch_ms:
        return ("steps of %.0f ms against a batch of %.0f ms: the prefetching pipeline keeps up, the run is not "
                "input-bound" % (step_ms, batch_ms))
    return ""


def overfits(run, margin=0.05, last=3):
    """Why a run planned healthy overfits in fact, or "": its recorded eval loss ends (its last point and the
    median of its last ``last`` points) more than ``margin`` above its best while the train loss fell from the best
    evaluation to the end (Prechelt's generalization loss above 5%, measured here on the run's own series; tiny
    models trained long on small data do this whatever the plan called them). A warning there is right, not a false
    alarm; such runs are listed apart."""
    from tb_plugin_mindspore import metadata

    ev, tr = run.scalars.get(metadata.EVAL_LOSS), run.scalars.get(metadata.LOSS)
    if ev is None or tr is None or len(ev) < last + 1:
        return ""
    steps, x = np.asarray(ev.steps), np.asarray(ev.values, dtype=float)
    ok = np.isfinite(x)
    steps, x = steps[ok], x[ok]
    if x.size < last + 1:
        return ""
    best = int(np.argmin(x))
    end, tail = float(x[-1]), float(np.median(x[-last:]))
    if best >= x.size - 1 or min(end, tail) <= (1 + margin) * float(x[best]):
        return ""
    ts, tv = np.asarray(tr.steps), np.asarray(tr.values, dtype=float)
    at_best, at_end = tv[(ts <= steps[best]) & np.isfinite(tv)], tv[np.isfinite(tv)]
    if not at_best.size or not at_end.size:
        return ""
    before, after = float(np.median(at_best[-last:])), float(np.median(at_end[-last:]))
    if after >= before:
        return ""
    return ("planned healthy, overfits in fact: its eval loss rose from its best %.4g at step %d to %.4g at step %d "
            "(+%.0f%%) while its train loss fell from %.4g to %.4g" % (
                float(x[best]), int(steps[best]), end, int(steps[-1]), 100 * (end / float(x[best]) - 1), before,
                after))


# A run planned healthy is input-bound in fact when its steps waited for data more than this share of the time each
# step took with its wait, on average over every step (the TensorFlow profiler's line for 'highly' input-bound).
INPUT_BOUND_SHARE = 0.20


def _mean_per_step(run, tag):
    """The mean of ``tag`` over every step the trainer timed: its interval series (each point's mean over the steps
    since the previous one, weighted by their count), else the mean of its recorded points; None without either."""
    iv = run.intervals.get(tag)
    if iv is not None and len(iv):
        ok = np.isfinite(iv.mean) & (iv.count > 0)
        if ok.any():
            return float(np.sum(iv.mean[ok] * iv.count[ok]) / np.sum(iv.count[ok]))
    pts = run.scalars.get(tag)
    if pts is not None and len(pts):
        vals = np.asarray(pts.values, dtype=float)
        vals = vals[np.isfinite(vals)]
        if vals.size:
            return float(vals.mean())
    return None


def input_bound_in_fact(run, share=INPUT_BOUND_SHARE):
    """Why a run planned healthy was input-bound in fact, or "": its steps waited for their batches (the trainer's
    own timing of every step, from the end of one step to the start of the next) more than ``share`` of the time a
    step took with its wait, on average over the run (the TensorFlow profiler's input-pipeline analysis reads
    averages; ``input_bound`` reads the median of the recorded points), and more than the rule's ``min_wait_ms`` a
    step (less is a batch hand-over, not a pipeline that holds training up). The corpus's runs take their batches
    from a MindSpore dataset's iterator, as users do; on a loaded machine its threads wait for a core like the
    training does, and small fast steps (an MLP at batch 256) can end up waiting for it: a warning there is right,
    not a false alarm, and such runs are listed apart."""
    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.health.rules import RULES_BY_ID

    min_wait_ms = float(RULES_BY_ID["input_bound"].defaults["min_wait_ms"])
    wait, step = _mean_per_step(run, metadata.DATA_WAIT_MS), _mean_per_step(run, metadata.STEP_TIME_MS)
    if wait is None or step is None or wait <= min_wait_ms or wait <= share * (wait + step):
        return ""
    return ("planned healthy, input-bound in fact: its steps waited %.3g ms for data on average against %.3g ms of "
            "computing (%.0f%% of each step with its wait, over %.0f%%)" % (
                wait, step, 100 * wait / (wait + step), 100 * share))


def _median(values):
    return statistics.median(values) if values else None


def summarize(results, rule_ids):
    """``{"rules": {rule: row}, "catalogue": {...}, "healthy": {...}, "faults": {case: {...}}}``."""
    healthy = [r for r in results if r["kind"] == "healthy" and r.get("status") == "trained" and not r.get("void")]
    faulty = [r for r in results if r["kind"] == "fault" and r.get("status") == "trained" and not r.get("void")]
    rows = {}
    def required(r):
        fault = cat.ALL_FAULTS.get(r["case"])
        return fault.rules if fault is not None else tuple(r["expected"][:1])

    for rule_id in rule_ids:
        trials = [r for r in faulty if rule_id in required(r)]
        also = [r for r in faulty if rule_id in r["expected"] and rule_id not in required(r)]
        found = [r for r in trials if r["found"].get(rule_id)]
        false = [r for r in healthy if rule_id in r.get("alarms", [])]
        delays = [r["delay_steps"][rule_id] for r in trials + also if rule_id in r.get("delay_steps", {})]
        live = [r["live_delay_s"][rule_id] for r in trials + also if rule_id in r.get("live_delay_s", {})]
        places = [r["right_place"][rule_id] for r in trials if rule_id in r.get("right_place", {})]
        rows[rule_id] = {
            "trials": len(trials), "found": len(found),
            "recall": (len(found) / len(trials)) if trials else None,
            "false_alarms_per_100": (100.0 * len(false) / len(healthy)) if healthy else None,
            "false_alarm_runs": [r["id"] for r in false],
            "median_delay_steps": _median(delays), "median_live_delay_s": _median(live),
            "right_place": (sum(places) / len(places)) if places else None, "place_trials": len(places),
            "missed": [r["id"] for r in trials if not r["found"].get(rule_id)],
        }
    detected = [r for r in faulty if any(r["found"].values())]
    placed = [r for r in faulty if r.get("right_place")]
    right = [r for r in placed if any(r["right_place"].values())]
    per_fault = {}
    for r in faulty:
        d = per_fault.setdefault(r["case"], {"runs": 0, "found": 0, "missed": []})
        d["runs"] += 1
        if any(r["found"].values()):
            d["found"] += 1
        else:
            d["missed"].append(r["id"])
    return {
        "rules": rows,
        "catalogue": {"runs": len(faulty), "found": len(detected),
                      "recall": len(detected) / len(faulty) if faulty else None,
                      "right_place": len(right) / len(placed) if placed else None, "place_runs": len(placed)},
        "healthy": {"runs": len(healthy),
                    "with_alarm": sorted(r["id"] for r in healthy if r.get("alarms")),
                    "alarms_per_100": 100.0 * sum(len(r.get("alarms", [])) for r in healthy) / max(1, len(healthy))},
        "faults": per_fault,
        "errors": sorted(r["id"] for r in results if r.get("status") != "trained"),
        "void": {r["id"]: r["void"] for r in results if r.get("void")},
    }
