"""What a run records and what it does not, and why: said once in the training log and in the run info
(``recorded`` / ``not_recorded``), so that nothing asked for is accepted and then silently empty.

Items (:data:`ITEMS`): the core quantities, the diagnostic and debug tiers' items, the flight recorder, live health
and its ``skip`` action. An item is *asked for* when the settings turn it on (the core quantities always are). The
step source says what it cannot give (``source.limits()``: ``{item: reason}``), recorders add what they found at
start (``ctx.shared["not_recorded"]``), and a run without parameters (no optimizer, no network) has no learning
rate, weight norms or update ratios.
"""

__all__ = ["ITEMS", "asked_items", "coverage", "coverage_line"]

ITEMS = ("loss", "learning_rate", "grad_norm", "weight_norms", "eval", "update_ratio", "layer_grad_norm",
         "activations", "data_wait", "attention_logits", "flight_recorder", "live_health", "skip")

# How the log line names an item.
_LABELS = {"loss": "core/loss", "learning_rate": "core/learning_rate", "grad_norm": "core/grad_norm",
           "weight_norms": "diagnostic weight norms", "eval": "evaluation", "update_ratio": "debug update_ratio",
           "layer_grad_norm": "debug layer_grad_norm", "activations": "debug activations",
           "data_wait": "debug data_wait", "attention_logits": "debug attention_logits",
           "flight_recorder": "flight recorder", "live_health": "live health",
           "skip": "on_anomaly='skip'"}

_NO_PARAMS = ("no parameters to read: give the optimizer (optimizer=) or, for a torch-style module, network= or "
              "param_names=")
_NO_LR = "no learning rate to read: give the optimizer (optimizer=) or lr= (a callable returning the rate)"


def asked_items(settings):
    """The items these settings turn on, in :data:`ITEMS` order."""
    on = {"loss", "learning_rate", "grad_norm"}
    if settings.weight_norms:
        on.add("weight_norms")
    if settings.eval_dataset is not None:
        on.add("eval")
    on.update(settings.debug)
    if settings.flight_recorder:
        on.add("flight_recorder")
    if settings.live_health is not None:
        on.add("live_health")
        if "skip" in settings.on_anomaly:
            on.add("skip")
    return [i for i in ITEMS if i in on]


def coverage(settings, source, params, has_lr, found=None):
    """``{"recorded": [...], "not_recorded": {item: reason}}`` of a run.

    ``params``: whether the run has parameters to read; ``has_lr``: whether a learning rate can be read;
    ``found``: what recorders found they cannot record (``{item: reason}``).
    """
    asked = asked_items(settings)
    missing = {}
    limits = getattr(source, "limits", None)
    for item, reason in (limits() if limits is not None else {}).items():
        missing.setdefault(item, reason)
    if not params:
        for item in ("weight_norms", "update_ratio", "layer_grad_norm", "flight_recorder"):
            missing.setdefault(item, _NO_PARAMS)
    if not has_lr:
        missing.setdefault("learning_rate", _NO_LR)
    for item, reason in (found or {}).items():
        missing.setdefault(item, reason)
    not_recorded = {i: missing[i] for i in asked if i in missing}
    return {"recorded": [i for i in asked if i not in not_recorded], "not_recorded": not_recorded}


def coverage_line(owner, not_recorded):
    """The one log line for what is not recorded (None when everything asked for is)."""
    if not not_recorded:
        return None
    parts = []
    seen = {}
    for item, reason in not_recorded.items():
        if reason in seen:          # one reason for several items is said once
            parts[seen[reason]] = parts[seen[reason]].replace(": ", ", %s: " % _LABELS.get(item, item), 1)
            continue
        seen[reason] = len(parts)
        parts.append("%s: %s" % (_LABELS.get(item, item), reason))
    return "tb-mindspore: %s does not record %s" % (owner, "; ".join(parts))
