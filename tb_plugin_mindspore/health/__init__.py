"""Training health diagnosis: rules over one run's series, a findings report, and where the series come from.

* ``rules/``: one small function per rule, each with its id, level, source and thresholds, a module per concern.
* ``detectors.py``: the signal maths the rules share (robust std, rolling medians, EMA z-scores, episodes,
  envelopes), pure numpy.
* ``engine.py``: runs the rules, builds the report ``{"runs": [{"run", "status", "findings": [...]}]}``.
* ``causes.py``: live events merged with the offline finding of the same problem; findings that follow from a
  divergence (NaN to the end) nested under it.
* ``series.py``: :class:`RunSeries`, what the rules read (tags of any origin resolved to quantities).
* ``sources.py``: RunSeries through the one door for data (``sources.logdir.Sources``): the plugin's, or a logdir on
  disk read as the tab reads it (the CLI).
* ``settings.py``: the rules' configuration from ``RULE.PARAM=VALUE`` settings (``check --set``, TensorBoard's
  ``--mindspore_health_set``).

The plugin's ``health`` answers are ``answers/health.py``; ``tb-mindspore check`` is ``commands/check.py``.

Typical use::

    from tb_plugin_mindspore import health

    report = health.check_logdir("./summary_log")                       # from disk
    report = health.check_provider(data_provider, ctx, experiment_id)   # inside TensorBoard

May import: ``sources`` and everything below it (``writing``, ``landscape``, ``contract``, ``io``); never
``answers``, ``server`` or ``commands``.
"""

from .engine import (ConfigError, check_run, describe_rules, reaches, report, run_report,  # noqa: F401
                     status_of, validate_config)
from .series import IntervalSeries, LayerSeries, RunSeries, RunState, Series  # noqa: F401


def check_logdir(logdir, config=None, now=None):
    """The findings report for every run under a local logdir."""
    from . import sources   # lazy: importing health (the callbacks' live rules do, in training) loads no reader

    validate_config(config)
    return report(sources.runs_from_logdir(logdir, now=now), config)


def check_provider(data_provider, ctx, experiment_id, runs=None, logdir=None, config=None, now=None):
    """The findings report for the runs of TensorBoard's data provider (the plugin's ``health`` route)."""
    from . import sources   # lazy: importing health (the callbacks' live rules do, in training) loads no reader

    validate_config(config)
    return report(sources.runs_from_provider(data_provider, ctx, experiment_id, runs=runs, logdir=logdir, now=now),
                  config)
