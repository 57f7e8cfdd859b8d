"""What the callbacks found while training: ``live_health``, the live health events recorded in the run.

Each event (``_meta/health_event``, written at the step it was detected) becomes a finding with the step range
from its first bad step to its detection, the layers where it started (the flight recorder's evidence) and the
action taken (training stopped, update skipped, checkpoint saved). Its ``rule`` is the offline rule that judges
the same thing (a NaN is ``nonfinite``, a gradient spike ``grad_explosion``), so the engine merges it into that
rule's finding when both found it (``health/causes.py``) instead of reporting it twice.
"""

from ... import metadata
from .base import ERROR, WARN, Finding, rule
from .common import events_of, rule_of, run_end_of

_ACTIONS = {"stopped": "Training was stopped at step %d.",
            "skipped_update": "The update of step %d was skipped (the weights kept their last good values).",
            "checkpoint": "A checkpoint of the last good state was saved before step %d"}


def _tag(run, rule_id, layers):
    if layers:
        for tag in (metadata.FLIGHT_GRAD_NORM_LAYERS, metadata.GRAD_NORM_LAYERS):
            if tag in run.layers:
                return tag
    quantity = {"nonfinite": "loss", "grad_explosion": "grad_norm", "loss_spike": "loss"}.get(rule_id)
    return (run.tag_of(quantity) or "") if quantity else ""


def action_text(event):
    """What was done about an event, in words ("" when nothing)."""
    action = event.get("action") or "none"
    text = _ACTIONS[action] % int(event["step"]) if action in _ACTIONS else ""
    if action == "checkpoint":
        text += (": %s." % event["checkpoint"]) if event.get("checkpoint") else "."
    elif event.get("checkpoint"):
        text += (" " if text else "") + "The last good state was saved to %s." % event["checkpoint"]
    return text


def event_finding(run, event):
    """The finding of one decoded health event."""
    rule_id = rule_of(event["rule"])
    layers = tuple(event.get("layers") or ())
    first, step = int(event.get("first_step", event["step"])), int(event["step"])
    parts = [event.get("message") or ("%s detected while training" % event["rule"])]
    if layers and not any(n in parts[0] for n in layers):
        parts.append("It started in layer %s." % ", ".join(layers[:4]))
    parts.append("Detected while training at step %d%s." % (step, (", first bad step %d" % first) if first < step
                                                           else ""))
    if event.get("advice"):
        parts.append(event["advice"][0].upper() + event["advice"][1:].rstrip(".") + ".")
    if action_text(event):
        parts.append(action_text(event))
    message = " ".join(p.strip().rstrip(".") + "." for p in parts if p)
    return Finding(rule_id, ERROR if event.get("severity") == "error" else WARN, message,
                   _tag(run, rule_id, layers), (min(first, step), step), layers=layers, source="live",
                   action=event.get("action") or "", checkpoint=event.get("checkpoint"))


@rule("live_health", ERROR,
      "the callbacks' live health checks (NaN/Inf, gradient spikes, loss spikes, stalls) recorded while training "
      "under _meta/health_event, with the flight recorder's first layers and the action taken",
      "What the callbacks detected while training, with the layers where it started and the action taken; merged "
      "into the offline rule's finding when that rule finds the same thing.")
def live_health(run, cfg):
    last, ended = run.last_step(), run_end_of(run) is not None
    out = []
    for ev in events_of(run):
        if rule_of(ev["rule"]) == "run_stalled" and not ended and (last is None or last <= int(ev["step"])):
            continue      # the run is still silent: the run_stalled rule judges the present (with the clock)
        out.append(event_finding(run, ev))
    return out
