"""Findings that know their cause: live events merged with the offline finding of the same problem, and the
findings that follow a non-finite event nested under it.

* :func:`merge_live`: a live health event (``source`` "live") and the offline rule's finding of the same problem
  (same rule, overlapping steps, widened by one recording interval) become one finding: the offline one, with the
  event's layers, action and checkpoint and a sentence saying what was seen while training.
* :func:`nest_follow_ons`: once NaN/Inf reached the loss, the gradients or the weights for good (the run stayed
  non-finite to its end; its ``nonfinite`` error dates it), what other rules find from that step on (spikes,
  learning-rate or layer findings computed from meaningless values) follows from it: such findings move into the
  cause's ``follow_ons`` with ``caused_by`` set, so the cause stands alone at the top and their advice is not read
  as independent.

Both are pure functions over :class:`~.rules.base.Finding` lists.
"""

from .rules.base import ERROR, LEVEL_RANK
from .rules.live import action_text
from .series import ALIASES

# Rules whose findings can follow from a NaN/Inf (they judge values that are meaningless once it reached the
# weights); the others judge data presence, the learning rate given, the machine, the run's state or its logs.
CAN_FOLLOW = frozenset({"grad_explosion", "vanishing_gradients", "loss_not_decreasing", "loss_plateau",
                        "loss_oscillation", "loss_spike", "lr_update_mismatch", "layer_not_learning",
                        "layer_too_fast", "overfitting", "train_eval_gap", "sharpness_above_stability",
                        "rank_diverging"})


def _overlaps(a, b, slack):
    return a[0] - slack <= b[1] and b[0] <= a[1] + slack


def merge_live(findings, slack=0):
    """Merges each live finding into the offline finding of the same rule whose steps overlap it (within
    ``slack`` steps); returns the new list (live findings without a counterpart stay as they are)."""
    live = [f for f in findings if f.source == "live"]
    if not live:
        return list(findings)
    offline = [f for f in findings if f.source != "live"]
    kept = []
    for lf in live:
        same = [f for f in offline if f.rule == lf.rule and _overlaps(f.steps, lf.steps, slack)]
        if not same:
            kept.append(lf)
            continue
        target = min(same, key=lambda f: (abs(f.steps[0] - lf.steps[0]), f.steps[0]))
        if LEVEL_RANK[lf.level] > LEVEL_RANK[target.level]:
            target.level = lf.level
        if lf.layers:
            target.layers = lf.layers     # the flight recorder's origin, from every step before the anomaly
        if lf.action and lf.action != "none" and not target.action:
            target.action, target.checkpoint = lf.action, lf.checkpoint
            if target.source:
                target.message += " " + _action_sentence(lf)
        if target.source:
            continue      # already merged with an earlier event of the same problem
        target.message += " Seen while training (step %d)%s%s" % (
            lf.steps[1], (": started in layer %s" % ", ".join(lf.layers[:4])) if lf.layers else "",
            (". " + _action_sentence(lf)) if _action_sentence(lf) else ".")
        target.source = "offline+live"
    return offline + kept


def _action_sentence(f):
    return action_text({"action": f.action, "step": f.steps[1], "checkpoint": f.checkpoint})


def first_cause(findings, diverged):
    """The ``nonfinite`` error of training (not of the eval loss alone) that dates the divergence at step
    ``diverged`` (the first step of the non-finite stretch that lasts to the end), or ``None``."""
    if diverged is None:
        return None       # a NaN the run recovered from: what comes after is judged on its own
    evals = set(ALIASES["eval_loss"])
    causes = [f for f in findings if f.rule == "nonfinite" and f.level == ERROR and f.tag not in evals
              and f.steps[1] >= diverged]
    return min(causes, key=lambda f: f.steps[0]) if causes else None


def nest_follow_ons(findings, diverged):
    """Moves the findings that start at or after the step the run diverged at (see :func:`first_cause`) into its
    cause's ``follow_ons``; returns the top-level list."""
    cause = first_cause(findings, diverged)
    if cause is None:
        return list(findings)
    start = cause.steps[0]
    top = []
    for f in findings:
        if f is cause or f.rule not in CAN_FOLLOW or f.source == "live" or f.steps[0] < start:
            top.append(f)
            continue
        f.caused_by = {"rule": cause.rule, "tag": cause.tag, "step": int(start)}
        cause.follow_ons.append(f)
    cause.follow_ons.sort(key=lambda f: (f.steps[0], f.rule))
    return top


# Rules whose findings an overflow storm explains (no update was applied while it lasted: layers do not learn, the
# loss stalls, the scale sits at its floor, the gradient norm is non-finite at the skipped steps).
STORM_FOLLOWS = frozenset({"layer_not_learning", "loss_not_decreasing", "loss_plateau", "loss_oscillation",
                           "vanishing_gradients", "lr_update_mismatch", "loss_scale_collapse", "nonfinite",
                           "train_eval_gap", "overfitting"})


def nest_under_storm(findings):
    """Moves what an ``overflow_storm`` explains (see :data:`STORM_FOLLOWS`: findings whose steps reach into the
    storm; a ``nonfinite`` only as the info about skipped overflow steps) into the storm's ``follow_ons``."""
    storms = [f for f in findings if f.rule == "overflow_storm"]
    if not storms:
        return list(findings)
    storm = min(storms, key=lambda f: f.steps[0])
    top = []
    for f in findings:
        explained = (f is not storm and f.rule in STORM_FOLLOWS and f.source != "live"
                     and f.steps[1] >= storm.steps[0] and (f.rule != "nonfinite" or f.level == "info"))
        if not explained:
            top.append(f)
            continue
        f.caused_by = {"rule": storm.rule, "tag": storm.tag, "step": int(storm.steps[0])}
        storm.follow_ons.append(f)
    storm.follow_ons.sort(key=lambda f: (f.steps[0], f.rule))
    return top


def resolve(findings, slack=0, diverged=None):
    """:func:`merge_live`, :func:`nest_follow_ons`, then :func:`nest_under_storm`."""
    return nest_under_storm(nest_follow_ons(merge_live(findings, slack), diverged))
