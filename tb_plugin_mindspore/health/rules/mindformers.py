"""What mindformers itself found: ``abnormal_global_norm`` (the steps of ``abnormal_global_norm.json``, where its
``TrainingStateMonitor(check_for_global_norm=True)`` saw the global gradient norm reach its
``global_norm_spike_threshold`` and stopped the training). See ``health/foreign.py`` for how the file is read."""

from .base import ERROR, Finding, rule
from .common import fmt


@rule("abnormal_global_norm", ERROR,
      "mindformers' own check (TrainingStateMonitor check_for_global_norm / global_norm_spike_threshold): it "
      "stops the training at the first such step",
      "The steps where mindformers found the global gradient norm at or above its spike threshold "
      "(abnormal_global_norm.json), with its values.")
def abnormal_global_norm(run, cfg):
    info = run.info if isinstance(run.info, dict) else {}
    files = info.get("mindformers") if isinstance(info.get("mindformers"), dict) else {}
    norms = files.get("abnormal_global_norm") or {}
    if not norms:
        return []
    steps = sorted(int(s) for s in norms)
    first = steps[0]
    values = [v for s in steps for v in norms[str(s)]]
    peak = max(values) if values else float("nan")
    listed = ", ".join("%d (%s)" % (s, ", ".join(fmt(v) for v in norms[str(s)])) for s in steps[:5])
    more = " and %d more" % (len(steps) - 5) if len(steps) > 5 else ""
    tag = run.tag_of("grad_norm") or "grad-norm"
    return [Finding(
        "abnormal_global_norm", ERROR,
        "mindformers found the global gradient norm at or above its global_norm_spike_threshold at step %d and "
        "stopped the training (abnormal_global_norm.json: step (norms) %s%s; largest %s). Resume from a "
        "checkpoint before step %d with a lower learning rate or tighter gradient clipping, or skip the batches "
        "at those steps (use_skip_data_by_global_norm)." % (first, listed, more, fmt(peak), first),
        tag, (first, steps[-1]))]
