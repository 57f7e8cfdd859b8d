"""Is there data to judge, and is it finite: ``no_loss`` and ``nonfinite``."""

import numpy as np

from .. import detectors
from .base import ERROR, INFO, WARN, Finding, rule
from .common import aligned_interval, events_of, layer_list, layers_at, rule_of, steps_of


@rule("no_loss", WARN, "our heuristic: without a training loss of a few points the trend rules have nothing to "
      "judge the run by",
      "The run records no training loss (or too few points to judge trends).",
      min_points=5)
def no_loss(run, cfg):
    loss = run.get("loss")
    if loss is None:
        tags = sorted(set(run.scalars) | set(run.other_tags))
        holds = run.info.get("mindspore_holds") if isinstance(run.info, dict) else None
        if not tags and run.landscape_tags:
            return []   # a loss-landscape run (from checkpoints, or a LandscapeCallback of its own): not a training run
        if not tags and holds:
            # An evaluation-only or lineage-only MindSpore run (SummaryCollector in Model.eval): nothing missing.
            return [Finding("no_loss", INFO, "No scalars in this run: it holds %s; the training rules have nothing "
                            "to check." % holds, "", (0, 0))]
        if not tags:
            return [Finding("no_loss", WARN, "No scalars recorded in this run. Record training with "
                            "tb_mindspore_callbacks.TrainMonitor (or check that the run folder is the one "
                            "training writes to).", "", (0, 0))]
        first, last = run.first_step() or 0, run.last_step() or 0
        return [Finding("no_loss", WARN, "No training loss among the %d recorded tag(s) (%s), so the loss rules "
                        "cannot run. Record it as core/loss (TrainMonitor does) or under a usual name (loss, "
                        "train/loss)." % (len(tags), layer_list(tags, 6)), "", (first, last))]
    if len(loss) < cfg["min_points"]:
        return [Finding("no_loss", INFO, "Only %d loss point(s) so far; trend rules need at least %d."
                        % (len(loss), cfg["min_points"]), loss.tag, steps_of(loss, 0, -1))]
    return []


def nonfinite_ranges(run, series):
    """``[(first, last)]`` step ranges known to contain a non-finite value, in step order; and the count."""
    iv = aligned_interval(run, series)
    if iv is None:
        return detectors.nonfinite_ranges(series.steps, series.values)
    return detectors.nonfinite_ranges(series.steps, series.values, iv["nonfinite"], iv["count"])


_NAMES = {"loss": "Loss", "grad_norm": "Gradient norm", "eval_loss": "Eval loss"}
_ADVICE = ("Lower the learning rate, add gradient clipping (MonitoredTrainCell(clip_grad_norm=...)), check the input "
           "data for NaN/Inf at that step, or use loss scaling for float16.")
_EVAL_ONLY = ("The train loss and gradient norm stayed finite, so training did not diverge: the model breaks in eval "
              "mode (BatchNorm moving statistics far from the training batches, dropout, or an eval dataset / loss "
              "prepared differently); see train_eval_gap.")
_OVERFLOW = ("A loss-scale cell is in use and the loss stayed finite: these are overflow steps that dynamic loss "
             "scaling skipped, which is expected now and then (overflow_storm speaks when they go on).")


def _kind(values):
    """"NaN", "Inf" or "NaN/Inf": what the non-finite recorded values are."""
    kinds = values[~np.isfinite(values)]
    if kinds.size and np.all(np.isnan(kinds)):
        return "NaN"
    return "Inf" if kinds.size and np.all(np.isinf(kinds)) else "NaN/Inf"


@rule("nonfinite", ERROR, "standard practice (Megatron-LM check_for_nan_in_loss_and_grad; mindformers "
      "check_for_nan_in_loss_and_grad): a NaN/Inf loss or gradient norm means the weights are corrupted",
      "NaN or Inf in loss, gradient norm or eval loss, at the first step it happened; weights that stay NaN to "
      "the end of the run (weight norms or update ratios).")
def nonfinite(run, cfg):
    findings = []
    # First bad steps of the live NaN/Inf events (exact: the training cell marks the step inside an interval).
    live_first = [int(ev["first_step"]) for ev in events_of(run) if rule_of(ev["rule"]) == "nonfinite"]
    loss = run.get("loss")
    overflow_only = run.get("loss_scale") is not None and (loss is None or not nonfinite_ranges(run, loss)[0])
    for quantity in ("loss", "grad_norm", "eval_loss"):
        series = run.get(quantity)
        if series is None:
            continue
        ranges, count = nonfinite_ranges(run, series)
        if not ranges:
            continue
        lo, hi = ranges[0]
        exact = [s for s in live_first if lo <= s <= hi] if quantity != "eval_loss" else []
        if exact:
            lo = min(exact)      # the callbacks saw the exact first bad step while training
        where = ("at step %d" % lo) if lo == hi or exact else (
            "between steps %d and %d (recorded every few steps; the interval statistics caught it)" % (lo, hi))
        level, advice = ERROR, _ADVICE
        if quantity == "grad_norm" and overflow_only:
            level, advice = INFO, _OVERFLOW
        if quantity == "eval_loss" and not findings:
            advice = _EVAL_ONLY       # training stayed finite: the model breaks in eval mode, not in training
        if _stays_nonfinite(series, lo):
            what = "%s became %s %s and stayed non-finite to the end of the run (step %d)" % (
                _NAMES[quantity], _kind(series.values), where, int(series.steps[-1]))
        else:
            what = "%s became %s %s (%d non-finite step(s) in all)" % (_NAMES[quantity], _kind(series.values),
                                                                       where, count)
            if not np.isfinite(series.values[-1]):
                what += " and is still non-finite at the last recorded step %d" % int(series.steps[-1])
        layers = layers_at(run, lo) if level == ERROR and quantity != "eval_loss" and not findings else ()
        if layers:
            what += " (non-finite gradients in layer %s at that step)" % layer_list(list(layers))
        findings.append(Finding("nonfinite", level, "%s." % what, series.tag, (lo, ranges[-1][1]),
                                layers=layers, advice=advice))
    weights = _nan_weights(run, min((f.steps[0] for f in findings if f.level == ERROR), default=None))
    if weights is not None:
        findings.append(weights)
    return findings


def _stays_nonfinite(series, first):
    """Whether every recorded value from step ``first`` on is NaN/Inf (at least two of them)."""
    tail = series.values[series.steps >= first]
    return tail.size >= 2 and not np.any(np.isfinite(tail))


def _weight_evidence(run):
    """``(series tag, steps, finite per step, layers per step or None)`` from the global weight norm, else the
    per-layer weight norms, else the per-layer update ratios (NaN when the weights are); ``None`` without any."""
    series = run.get("weight_norm")
    if series is not None and len(series):
        return series.tag, series.steps, np.isfinite(series.values), None
    for quantity in ("layer_weight_norm", "update_ratio"):
        layers = run.layer_series(quantity)
        if layers is not None and layers.steps.size and layers.layers:
            finite = np.isfinite(layers.values)
            return layers.tag, layers.steps, finite.all(axis=1), (layers.layers, finite)
    return None


def _nan_weights(run, first_bad):
    """The finding "weights are NaN from step S to the end" when the weight norms (or update ratios) are non-finite
    from some recorded step to the last one; ``first_bad`` (the first non-finite loss / gradient step, or None)
    dates it when it lies between the last finite record and the first non-finite one."""
    evidence = _weight_evidence(run)
    if evidence is None:
        return None
    tag, steps, finite, per_layer = evidence
    if finite.all() or finite[-1]:
        return None
    k = int(np.nonzero(finite)[0][-1]) + 1 if finite.any() else 0      # first record of the NaN tail
    prev = int(steps[k - 1]) if k > 0 else None
    start = int(steps[k])
    if first_bad is not None and (prev is None or prev < first_bad) and first_bad <= start:
        start = first_bad
    layers = ()
    if per_layer is not None:
        names, layer_finite = per_layer
        layers = tuple(n for n, ok in zip(names, layer_finite[k]) if not ok)
    recorded = " (first recorded at step %d)" % int(steps[k]) if start != int(steps[k]) else ""
    which = ("" if not layers or len(layers) == len(per_layer[0]) else
             " in %d layer(s) (%s)" % (len(layers), ", ".join(layers[:4]) + (" ..." if len(layers) > 4 else "")))
    return Finding("nonfinite", ERROR,
                   "Weights are NaN from step %d to the end of the run (step %d)%s%s: the model is destroyed and "
                   "every later value of this run is meaningless. Restart from a checkpoint saved before step %d "
                   "with the cause fixed (see the first non-finite loss or gradient); the callbacks' live health "
                   "can stop training or skip such an update when it happens." % (
                       start, int(steps[-1]), which, recorded, start), tag, (start, int(steps[-1])),
                   layers=layers if which else ())
