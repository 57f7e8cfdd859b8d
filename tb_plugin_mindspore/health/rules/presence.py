"""Is there data to judge, and is it finite: ``no_loss`` and ``nonfinite``."""

import numpy as np

from .. import detectors
from .base import ERROR, INFO, WARN, Finding, rule
from .common import aligned_interval, layer_list, steps_of


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
_OVERFLOW = ("A loss-scale cell is in use and the loss stayed finite: these are overflow steps that dynamic loss "
             "scaling skipped, which is expected now and then.")


def _kind(values):
    """"NaN", "Inf" or "NaN/Inf": what the non-finite recorded values are."""
    kinds = values[~np.isfinite(values)]
    if kinds.size and np.all(np.isnan(kinds)):
        return "NaN"
    return "Inf" if kinds.size and np.all(np.isinf(kinds)) else "NaN/Inf"


@rule("nonfinite", ERROR, "standard practice (Megatron-LM check_for_nan_in_loss_and_grad; mindformers "
      "check_for_nan_in_loss_and_grad): a NaN/Inf loss or gradient norm means the weights are corrupted",
      "NaN or Inf in loss, gradient norm or eval loss, at the first step it happened.")
def nonfinite(run, cfg):
    findings = []
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
        where = ("at step %d" % lo) if lo == hi else ("between steps %d and %d (recorded every few steps; the "
                                                      "interval statistics caught it)" % (lo, hi))
        tail = ""
        if not np.isfinite(series.values[-1]):
            tail = " and is still non-finite at the last recorded step %d" % int(series.steps[-1])
        level, advice = ERROR, _ADVICE
        if quantity == "grad_norm" and overflow_only:
            level, advice = INFO, _OVERFLOW
        findings.append(Finding("nonfinite", level, "%s became %s %s (%d non-finite step(s) in all)%s. %s"
                                % (_NAMES[quantity], _kind(series.values), where, count, tail, advice),
                                series.tag, (lo, ranges[-1][1])))
    return findings
