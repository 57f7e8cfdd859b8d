"""Training loss trends: ``loss_not_decreasing``, ``loss_plateau``, ``loss_oscillation`` and ``loss_spike``."""

import numpy as np

from .. import detectors
from .base import INFO, WARN, Finding, rule
from .common import aligned_interval, envelope, fmt, loss_points


@rule("loss_not_decreasing", WARN,
      "common practice (a loss that does not fall: learning rate too small or not applied, labels not matching "
      "the inputs); the 1% minimum relative decrease is our heuristic",
      "Loss did not decrease (or rose) between the start and the end of the run.",
      min_rel_decrease=0.01, min_points=8, window_frac=0.2)
def loss_not_decreasing(run, cfg):
    pts = loss_points(run, cfg["min_points"])
    if pts is None:
        return []
    early, late = detectors.early_late(pts.x, max(2, int(pts.size * cfg["window_frac"])))
    rel = (early - late) / max(abs(early), 1e-12)
    if rel >= cfg["min_rel_decrease"]:
        return []
    steps = pts.span(0, -1)
    if rel < -cfg["min_rel_decrease"]:
        verb = "rose from %s to %s (%+.0f%%)" % (fmt(early), fmt(late), -rel * 100)
    else:
        verb = "stayed at %s (%s at the end)" % (fmt(early), fmt(late))
    return [Finding("loss_not_decreasing", WARN,
                    "Loss %s over steps %d-%d: the model is not learning. Check the learning rate (too small, or "
                    "not applied), that labels match inputs, and that gradients reach the weights."
                    % (verb, steps[0], steps[1]), pts.tag, steps)]


@rule("loss_plateau", INFO, "common practice (a loss flat after a decrease: converged, or stuck for lack of "
      "capacity or learning rate); window and tolerance are our heuristics",
      "Loss flat over the last part of the run although it decreased before.",
      window_frac=0.3, rel_tol=0.01, min_points=12)
def loss_plateau(run, cfg):
    pts = loss_points(run, cfg["min_points"])
    if pts is None:
        return []
    early, late = detectors.early_late(pts.x, max(2, pts.size // 10))
    total = float(early - late)
    if total <= 0:
        return []     # not decreasing at all: loss_not_decreasing speaks
    k = max(4, int(pts.size * cfg["window_frac"]))
    tail = pts.x[-k:]
    first, last = detectors.early_late(tail, max(2, k // 4))
    if abs(first - last) > cfg["rel_tol"] * total:
        return []
    steps = pts.span(-k, -1)
    return [Finding("loss_plateau", INFO,
                    "Loss has been flat at about %s since step %d (less than %.0f%% of its total decrease over the "
                    "last %d points). Converged, or stuck: a learning-rate decay, more capacity or more data may "
                    "help if the value is not good enough." % (fmt(float(np.median(tail))), steps[0],
                                                               cfg["rel_tol"] * 100, k),
                    pts.tag, steps)]


@rule("loss_oscillation", WARN,
      "common practice (a loss oscillating strongly without progress: learning rate too large or batch too small); "
      "noise measured as the robust spread (1.4826 x MAD) of the loss averaged over each recorded interval (the "
      "interval mean: single small-batch losses are noisy by nature) around a rolling mean, relative to the initial "
      "loss; only while the trend does not fall by more than that spread over the judged half (a loss that keeps "
      "falling and recovers from every bump is healthy) and while the run has not come down by 30% from its "
      "initial loss (a plateau reached, with the batches' own losses around it: a note); the 20% and 30% levels "
      "are our heuristics, checked on issue 32's corpus (RULES.md)",
      "Loss noise (spread of its interval means around the trend) large relative to the loss level while the trend "
      "makes no progress.",
      max_rel_noise=0.2, trend_window=5, learnt_frac=0.3, min_points=10)
def loss_oscillation(run, cfg):
    pts = loss_points(run, cfg["min_points"])
    if pts is None:
        return []
    level = abs(float(np.median(pts.x[:max(detectors.MIN_WARMUP, pts.size // 10)])))
    if level <= 0:
        return []
    x, averaged = pts.x, False
    iv = aligned_interval(run, pts.series)
    if iv is not None:
        mean = iv["mean"][pts.idx]
        if np.all(np.isfinite(mean)) and np.all(iv["count"][pts.idx] >= 1):
            x, averaged = mean, bool(np.any(iv["count"][pts.idx] > 1))
    half = pts.size // 2
    part = x[half:]
    trend = detectors.rolling_mean(part, cfg["trend_window"])   # a mean: a rolling median follows a zig-zag exactly
    noise = detectors.robust_std(part - trend)
    rel = noise / level
    if rel <= cfg["max_rel_noise"]:
        return []
    q = max(2, part.size // 4)
    fell = float(np.median(trend[:q]) - np.median(trend[-q:]))
    if fell > noise:
        return []            # the trend falls by more than the spread: noisy but learning
    steps = pts.span(half, -1)
    share = ("%.0f%% of" % (rel * 100)) if rel < 10 else ("%s times" % fmt(rel))
    what = "its interval means' spread" if averaged else "its spread"
    learnt = level - float(np.median(part))
    if averaged and learnt >= cfg["learnt_frac"] * level:
        # The run came down from its initial loss by a good part of it: a plateau reached, with each
        # batch's own loss around it (small batches, a fixed batch order), not a learning rate that keeps it from
        # learning. A note.
        return [Finding("loss_oscillation", INFO,
                        "The loss scatters around a plateau: over steps %d-%d %s around the trend is %s, %s the "
                        "initial loss %s, after it came down by %s. Batches that differ (a small batch, a fixed "
                        "batch order) scatter like this; a larger batch or shuffling narrows it." % (
                            steps[0], steps[1], what, fmt(noise), share, fmt(level), fmt(learnt)), pts.tag, steps)]
    if not averaged:
        # One batch's loss per point: a small batch scatters this much by nature. Without the interval means
        # (every step between two points averaged) the two cannot be told apart: a note, not a warning.
        return [Finding("loss_oscillation", INFO,
                        "The recorded loss scatters: over steps %d-%d %s around the trend is %s, %s the initial loss "
                        "%s, while the trend fell by only %s. Single-batch losses of a small batch scatter like "
                        "this; the interval statistics (MonitoredTrainCell) average every step and tell noise from "
                        "oscillation." % (steps[0], steps[1], what, fmt(noise), share, fmt(level),
                                          fmt(max(fell, 0.0))), pts.tag, steps)]
    return [Finding("loss_oscillation", WARN,
                    "Loss oscillates without progress: over steps %d-%d %s around the trend is %s, %s the initial "
                    "loss %s, while the trend fell by only %s." % (
                        steps[0], steps[1], what, fmt(noise), share, fmt(level), fmt(max(fell, 0.0))),
                    pts.tag, steps, advice="Lower the learning rate or use a larger batch.")]


@rule("loss_spike", WARN,
      "Megatron-LM check_for_spiky_loss: a loss more than 10x the largest loss observed so far",
      "Loss spikes: a point (or a step between two points, from the interval max) far above what came before.",
      factor=10.0, local_factor=4.0, local_window=10, warmup=10, min_points=6)
def loss_spike(run, cfg):
    pts = envelope(run, run.get("loss"), cfg["min_points"])
    if pts is None:
        return []
    x, lw = pts.x, max(1, int(cfg["local_window"]))
    prior_max, recent_med = detectors.max_before(x), detectors.trailing_median(x, lw)
    i = np.arange(pts.warmup(cfg["warmup"]), pts.size)
    is_spike = x[i] > cfg["factor"] * prior_max[i]
    is_local = ~is_spike & (recent_med[i] > 0) & (x[i] > cfg["local_factor"] * recent_med[i])
    findings = []
    for group, level, what in ((i[is_spike].tolist(), WARN, "%s times the largest loss before it (Megatron-LM's "
                                "spiky-loss factor is %s)" % ("%s", fmt(float(cfg["factor"])))),
                               (i[is_local].tolist(), INFO, "%s times the median of the %d points before it"
                                % ("%s", int(cfg["local_window"])))):
        if not group:
            continue
        peak = max(group, key=lambda j: x[j])
        prior = x[:peak]
        ref = float(np.max(prior)) if level == WARN else float(np.median(prior[-int(cfg["local_window"]):]))
        between = " between two recorded points (interval max)" if pts.from_interval[peak] else ""
        steps = pts.span(group[0], group[-1])
        findings.append(Finding(
            "loss_spike", level,
            "Loss spiked %d time(s) between steps %d and %d; the largest, %s at step %d%s, is %s. Check the batches "
            "at those steps; gradient clipping or a lower learning rate makes training robust to them." % (
                len(group), steps[0], steps[1], fmt(float(x[peak])), pts.step(peak), between,
                what % fmt(float(x[peak]) / max(ref, 1e-12))),
            pts.tag, steps))
    return findings
