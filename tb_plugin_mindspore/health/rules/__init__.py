"""The health rules: one small function each, with its id, level, source and configurable thresholds.

Every rule is ``fn(run, cfg) -> [Finding]`` where ``run`` is a :class:`~..series.RunSeries` and ``cfg`` the rule's
thresholds (its defaults, overridden by the user's configuration). A rule that lacks the series it needs returns
nothing: absence of data is reported once, by ``no_loss``, not by every rule.

One module per concern, in the order the rules run: ``presence`` (no_loss, nonfinite), ``gradients``,
``loss_scale`` (overflow storm, loss-scale collapse), ``losses``,
``learning_rate``, ``layers``, ``evaluation`` (overfitting), ``throughput``, ``run_state`` (stalled, unfinished),
``monitoring`` (log size, monitoring overhead), ``sharpness`` (curvature against the stability line), ``live``
(the health events the callbacks recorded while training). ``base`` holds the registry, ``common`` what the rules share (the
points a rule judges, interval envelopes, message formatting); the signal maths is in ``..detectors``.

Conventions:

* Steps are training steps as recorded. A value between two recorded points is known only through the interval
  statistics (min / mean / max / count / non-finite of every step since the previous point); rules that look for
  spikes or NaN read those too, and then report the step range the interval covers.
* "Warm-up" is counted in recorded points, shortened for short runs so that a 30-point run is still checked (never
  below ``MIN_WARMUP`` points).
* Thresholds come from published practice where there is one (the source is named next to it), otherwise they
  are our heuristics, said so, and configurable.
"""

from ..detectors import MIN_WARMUP  # noqa: F401
from .base import ERROR, INFO, LEVEL_RANK, LEVELS, RULES, WARN, Finding, Rule, rule  # noqa: F401
# Imported in the order the rules run (each module registers its rules in RULES).
from . import presence, gradients, loss_scale, losses, learning_rate  # noqa: F401,I100
from . import layers, evaluation, throughput, run_state, monitoring  # noqa: F401,I100
from . import sharpness, precursors  # noqa: F401,I100
from . import cluster  # noqa: F401,I100
from . import live  # noqa: F401,I100
from . import mindformers  # noqa: F401,I100

RULES_BY_ID = {r.id: r for r in RULES}

__all__ = ["ERROR", "INFO", "LEVELS", "LEVEL_RANK", "MIN_WARMUP", "RULES", "RULES_BY_ID", "WARN", "Finding", "Rule",
           "rule"]
