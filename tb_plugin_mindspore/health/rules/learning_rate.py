"""The learning rate: ``lr_constant`` (schedule not applied, frozen groups), ``lr_warmup_unfinished`` (a warm-up
longer than the run) and ``lr_update_mismatch`` (recorded LR not applied), judged against what the user declared.

Declared intent (:func:`declared`): the run information's ``lr_config`` (what the optimizer was given, recorded
by the callbacks: ``{"kind": "constant" | "list" | "schedule" | "dynamic" | "unknown", "class", "groups": [{"kind",
"class", "value"}]}``) and the hyperparameters (a key such as ``lr_schedule`` / ``scheduler`` / ``warmup_steps``).
A flat applied learning rate is an error when a schedule was configured, nothing when a constant one was, and a
warning (as before) when nothing says which.
"""

import math
import re

import numpy as np

from .. import detectors
from .base import ERROR, WARN, Finding, rule
from .common import diverged_at, finite, fmt
from .run_state import progress

CONSTANT, SCHEDULE, DYNAMIC = "constant", "schedule", "dynamic"
_CONSTANT_WORDS = frozenset({"constant", "const", "fixed", "none", "flat", "off", "false", "no", "null", ""})
_SCHEDULE_KEY = re.compile(r"(sched|lr_policy|lr_decay|decay_type|warm_?up)", re.I)
_KINDS = {"constant": CONSTANT, "list": SCHEDULE, "schedule": SCHEDULE, "dynamic": DYNAMIC}


def _hparams_intent(hparams):
    """``(CONSTANT | SCHEDULE | None, "key=value")`` from the hyperparameters."""
    if not isinstance(hparams, dict):
        return None, ""
    found = None, ""
    for key in sorted(hparams):
        if not _SCHEDULE_KEY.search(str(key)):
            continue
        value = hparams[key]
        said = "%s=%s" % (key, value)
        if isinstance(value, bool):
            intent = SCHEDULE if value else CONSTANT
        elif isinstance(value, (int, float)):
            if "warm" not in str(key).lower():
                continue
            intent = SCHEDULE if value > 0 else None
        elif isinstance(value, str):
            intent = CONSTANT if value.strip().lower() in _CONSTANT_WORDS else SCHEDULE
        else:
            continue
        if intent == SCHEDULE:
            return intent, said
        if intent is not None and found[0] is None:
            found = intent, said
    return found


def declared(run, group=None):
    """``(CONSTANT | SCHEDULE | DYNAMIC | None, how it was said)`` for parameter group ``group`` (None: the
    optimizer as a whole). A schedule named in the hyperparameters wins over a constant given to the optimizer
    (the schedule was meant, and is not reaching the optimizer)."""
    info = run.info if isinstance(run.info, dict) else {}
    hp_intent, hp_said = _hparams_intent(info.get("hparams"))
    config = info.get("lr_config") if isinstance(info.get("lr_config"), dict) else {}
    entry = config
    groups = config.get("groups") if isinstance(config.get("groups"), list) else []
    if group is not None and group < len(groups) and isinstance(groups[group], dict):
        entry = groups[group]
    elif group is None and len(groups) == 1 and isinstance(groups[0], dict):
        entry = groups[0]         # one group: its entry says more (a list's length, whether it is flat)
    if not isinstance(entry, dict):
        entry = {}
    kind = _KINDS.get(entry.get("kind"))
    if entry.get("kind") == "list" and entry.get("flat") is True:
        kind = CONSTANT           # a list of one repeated value is a constant
    cls = entry.get("class")
    opt_said = "the optimizer was given %s" % (
        "a %s schedule" % cls if kind == SCHEDULE and cls else
        "a schedule (%s)" % entry.get("kind") if kind == SCHEDULE else
        "a constant learning rate" if kind == CONSTANT else "a dynamic learning rate")
    if hp_intent == SCHEDULE:
        if kind == SCHEDULE:
            return SCHEDULE, opt_said
        return SCHEDULE, "the hyperparameters say %s%s" % (
            hp_said, " but the optimizer was given a constant learning rate" if kind == CONSTANT else "")
    if kind is not None:
        return kind, opt_said
    if hp_intent == CONSTANT:
        return CONSTANT, "the hyperparameters say %s" % hp_said
    return None, ""


def _lr_series(run):
    """``[(group index or None, series)]``: one entry per parameter group when groups are recorded, else the
    learning rate."""
    groups = run.learning_rate_groups()
    if groups:
        return list(enumerate(groups))
    series = run.get("learning_rate")
    return [(None, series)] if series is not None else []


def _name(group):
    return "learning rate" if group is None else "learning rate of parameter group %d" % group


@rule("lr_constant", ERROR,
      "our heuristic, judged against the declared intent (the optimizer's learning-rate object recorded in run "
      "information, and the hyperparameters): a learning rate that never leaves its initial value although a "
      "schedule was configured means the schedule is not reaching the optimizer; a group with learning rate 0 is "
      "frozen",
      "Learning rate flat through the whole run although a schedule was configured (error), or flat with nothing "
      "said about the intent (warning); a parameter group whose learning rate is 0 (frozen).",
      rel_tol=1e-6, min_points=5, min_steps=20)
def lr_constant(run, cfg):
    judged = []
    for group, series in _lr_series(run):
        pts = finite(series, cfg["min_points"])
        if pts is None:
            continue
        steps = pts.span(0, -1)
        if steps[1] - steps[0] < cfg["min_steps"]:
            continue
        x = pts.x
        hi = float(np.max(np.abs(x)))
        flat = hi == 0 or float(np.max(x)) - float(np.min(x)) <= cfg["rel_tol"] * hi
        judged.append((group, pts, steps, hi == 0, flat))
    if not judged:
        return []
    zero = [j for j in judged if j[3]]
    if len(zero) == len(judged):
        group, pts, steps = judged[0][:3]
        return [Finding("lr_constant", ERROR, "Learning rate is 0 for the whole run (steps %d-%d): no weight "
                        "changes. Pass a positive learning rate or schedule to the optimizer." % steps,
                        pts.tag, steps)]
    findings = []
    if zero:
        groups = [j[0] for j in zero]
        group, pts, steps = zero[0][:3]
        findings.append(Finding(
            "lr_constant", WARN,
            "Parameter group%s %s ha%s learning rate 0 for the whole run (steps %d-%d): %s parameters are frozen "
            "while the other groups learn. If that is not intended, give %s a positive learning rate." % (
                "s" if len(groups) > 1 else "", ", ".join(str(g) for g in groups), "ve" if len(groups) > 1 else "s",
                steps[0], steps[1], "their" if len(groups) > 1 else "its", "them" if len(groups) > 1 else "it"),
            pts.tag, steps))
    for group, pts, steps, is_zero, flat in judged:
        if is_zero or not flat:
            continue
        found = _flat(run, group, pts, steps)
        if found is not None:
            findings.append(found)
            break     # one flat finding: the first group (the others usually share the cause)
    return findings


def _list_pending(run, group, last_step):
    """Whether the optimizer was given a list of per-step rates longer than the run got through (its changes may
    come after the last recorded step)."""
    info = run.info if isinstance(run.info, dict) else {}
    config = info.get("lr_config") if isinstance(info.get("lr_config"), dict) else {}
    groups = config.get("groups") if isinstance(config.get("groups"), list) else []
    entries = [groups[group]] if group is not None and group < len(groups) else (groups or [config])
    return any(isinstance(e, dict) and e.get("kind") == "list" and isinstance(e.get("length"), int)
               and e["length"] > last_step for e in entries)


def _flat(run, group, pts, steps):
    intent, said = declared(run, group)
    value = fmt(float(pts.x[0]))
    if intent in (CONSTANT, DYNAMIC) or (intent == SCHEDULE and _list_pending(run, group, steps[1])):
        return None
    if intent == SCHEDULE:
        return Finding("lr_constant", ERROR,
                       "The %s stayed at %s for the whole run (steps %d-%d, %d points) although a schedule was "
                       "configured (%s): the schedule is not reaching the optimizer. Pass the schedule itself as "
                       "learning_rate=... (a LearningRateSchedule or a list of per-step values), not a number "
                       "computed from it, and check its step counts (warm-up / decay steps within the run)." % (
                           _name(group), value, steps[0], steps[1], pts.size, said), pts.tag, steps)
    return Finding("lr_constant", WARN,
                   "The %s stayed at %s for the whole run (steps %d-%d, %d points). If you configured a warm-up "
                   "or decay, the schedule is not reaching the optimizer: pass the schedule itself as "
                   "learning_rate=... (a LearningRateSchedule or a list of per-step values), not a number "
                   "computed from it. Ignore this if a constant rate is intended (say so with hparams="
                   "{\"lr_schedule\": \"constant\"} and this goes away)." % (
                       _name(group), value, steps[0], steps[1], pts.size), pts.tag, steps)


def _step_median(layers):
    """Median over layers of a LayerSeries, per step (finite values only)."""
    vals = np.where(np.isfinite(layers.values), layers.values, np.nan)
    return detectors.quiet_nanmedian(vals, axis=1) if vals.size else np.array([])


def step_changes(log_lr, min_change, flat_frac):
    """``[(k, first, last)]``: indices ``k`` where the log learning rate jumps by at least ``log(min_change)`` from
    ``k - 1`` to ``k`` and is flat on both sides (``first..k-1`` and ``k..last``, at least two points each, stay
    within ``flat_frac`` of the jump of their side's value): a step decay, not a ramp (warm-up, cosine), across
    which confounders (gradient size, optimizer moments) hide the learning rate's effect. Largest jump first."""
    out = []
    n = log_lr.size
    for k in range(1, n):
        jump = abs(log_lr[k] - log_lr[k - 1])
        if not jump >= math.log(min_change):
            continue
        tol = flat_frac * jump
        first = k - 1
        while first > 0 and abs(log_lr[first - 1] - log_lr[k - 1]) <= tol:
            first -= 1
        last = k
        while last + 1 < n and abs(log_lr[last + 1] - log_lr[k]) <= tol:
            last += 1
        if k - first >= 2 and last - k + 1 >= 2:
            out.append((jump, k, first, last))
    return [(k, first, last) for _, k, first, last in sorted(out, reverse=True)]


@rule("lr_update_mismatch", WARN,
      "CS231n (Karpathy), 'Neural Networks Part 3': the update/weight ratio tracks the learning rate; an update "
      "size that ignores a step change of the LR means the recorded LR is not the applied one. Judged only at "
      "step changes (flat before and after) and before any NaN/Inf: across a warm-up or a divergence the update "
      "size also follows the gradients (our restriction)",
      "Learning rate steps up or down a lot while the per-layer update ratio does not follow.",
      min_lr_change=2.0, follow_frac=0.25, window=5, min_points=4, flat_frac=0.25)
def lr_update_mismatch(run, cfg):
    lr = run.get("learning_rate")
    ratio = run.layer_series("update_ratio")
    if lr is None or ratio is None or ratio.steps.size < cfg["min_points"]:
        return []
    horizon = diverged_at(run)
    lr_keep = np.isfinite(lr.values) & (lr.values > 0)
    if horizon is not None:
        lr_keep &= lr.steps < horizon
    lr_steps, log_lr = lr.steps[lr_keep], np.log(lr.values[lr_keep])
    upd = _step_median(ratio)
    ok = np.isfinite(upd) & (upd > 0)
    if horizon is not None:
        ok &= ratio.steps < horizon
    if np.count_nonzero(ok) < cfg["min_points"]:
        return []
    r_steps, log_upd = ratio.steps[ok], np.log(upd[ok])
    window = max(2, int(cfg["window"]))
    for k, first, last in step_changes(log_lr, cfg["min_lr_change"], cfg["flat_frac"]):
        change_at = int(lr_steps[k])
        # The update ratio at step s measures the update made at s: before the change, and from it on, each side
        # within the stretch where the learning rate is flat (at most ``window`` points next to the change).
        before = np.nonzero((r_steps >= lr_steps[first]) & (r_steps <= lr_steps[k - 1]))[0][-window:]
        after = np.nonzero((r_steps >= change_at) & (r_steps <= lr_steps[last]))[0][:window]
        if before.size < 2 or after.size < 2:
            continue
        lr_change = float(log_lr[k] - log_lr[k - 1])
        upd_change = float(np.median(log_upd[after]) - np.median(log_upd[before]))
        if abs(upd_change) >= cfg["follow_frac"] * abs(lr_change) and np.sign(upd_change) == np.sign(lr_change):
            return []
        span = (int(r_steps[before[0]]), int(r_steps[after[-1]]))
        return [Finding("lr_update_mismatch", WARN,
                        "Learning rate changed %s-fold at step %d but the median update ratio changed only "
                        "%s-fold over steps %d-%d: the recorded learning rate is probably not the one the "
                        "optimizer applies (a schedule computed beside the optimizer, or per-group rates that "
                        "override it)." % (fmt(math.exp(lr_change)), change_at, fmt(math.exp(upd_change)),
                                           span[0], span[1]), lr.tag, span)]
    return []


def _warmup_declared(run):
    """``(warm-up steps, key)`` from the hyperparameters (a key with "warm" and a positive number), or None."""
    hparams = (run.info or {}).get("hparams") if isinstance(run.info, dict) else None
    for key, value in sorted((hparams or {}).items()) if isinstance(hparams, dict) else ():
        if "warm" in str(key).lower() and isinstance(value, (int, float)) and not isinstance(value, bool) \
                and value > 0:
            return float(value), str(key)
    return None


@rule("lr_warmup_unfinished", WARN,
      "common practice: a warm-up is a small part of training (Goyal et al. 2017, 'Accurate, Large Minibatch SGD': "
      "5 of 90 epochs; Vaswani et al. 2017: 4,000 of 100,000 steps); a learning rate still rising over the last "
      "quarter of a finished run (or of a run past half its planned steps) means the warm-up is longer than the "
      "run (steps counted in epochs, a total-steps count too large); the 10% rise is our heuristic",
      "The learning rate is still rising at the end of the run: the warm-up never ended.",
      min_rise=0.1, tail_frac=0.25, min_points=8, min_progress=0.5)
def lr_warmup_unfinished(run, cfg):
    pts = finite(run.get("learning_rate"), cfg["min_points"])
    if pts is None:
        return []
    last, expected, finished = progress(run)
    if not finished and not (expected and last and last >= cfg["min_progress"] * expected):
        return []
    x = pts.x
    k = max(3, int(round(pts.size * cfg["tail_frac"])))
    tail = x[-k:]
    peak = float(np.max(x))
    if peak <= 0 or tail[0] <= 0 or np.any(np.diff(tail) < -1e-9 * peak):
        return []                  # it falls somewhere in the last quarter: the warm-up ended
    rise = float(tail[-1] / tail[0] - 1.0)
    if rise < cfg["min_rise"] or float(tail[-1]) < (1 - 1e-6) * peak:
        return []
    rising_from = int(np.nonzero(np.diff(x) > 0)[0][0]) if np.any(np.diff(x) > 0) else 0
    steps = pts.span(rising_from, -1)
    declared = _warmup_declared(run)
    said = (" (the hyperparameters say %s=%s, and the run ended at step %d)" % (
        declared[1], fmt(declared[0]), steps[1]) if declared else "")
    where = "at the end of the run" if finished else "at step %d of %d" % (last, expected)
    return [Finding("lr_warmup_unfinished", WARN,
                    "The learning rate is still rising %s: it went from %s to %s over the last %d points (steps "
                    "%d-%d) and never reached the end of its warm-up%s. The warm-up is longer than the run: the "
                    "training ran at a fraction of its intended learning rate." % (
                        where, fmt(float(tail[0])), fmt(float(tail[-1])), k, pts.step(-k), steps[1], said),
                    pts.tag, steps, advice="Set the warm-up in steps of this run (not epochs or samples), "
                    "a few percent of the total, and check the schedule's total steps.")]
