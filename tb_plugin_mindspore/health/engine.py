"""Runs the health rules over runs and builds the findings report.

Report shape (stable; the ``check`` command's JSON and the plugin's ``health`` route both return it)::

    {"runs": [{"run": str, "status": "ok" | "warn" | "error",
               "findings": [{"rule": str, "level": "info" | "warn" | "error", "message": str, "tag": str,
                             "steps": [first, last]}]}]}

A finding may add (only when set): ``layers`` (where it started), ``source`` ("live": recorded by the callbacks
while training; "offline+live": found by a rule and seen while training), ``action`` / ``checkpoint`` (what the
callbacks did), ``follow_ons`` (findings that follow from this one, nested) and ``caused_by`` on those
(``health/causes.py``). ``status`` counts the top-level findings (a follow-on's cause is at least as severe).

``status`` is the most severe level among the run's findings (``info`` counts as ``ok``). Findings are sorted by
level (errors first), then by first step. ``tag`` is the tag as recorded in the run ("" for run-level findings
such as a stalled run); ``steps`` is the step range that shows the problem.

Configuration: ``{rule id: {threshold name: value, "enabled": bool, "level": "info"|"warn"|"error"}}``. Unknown
rule ids or threshold names raise :class:`ConfigError` (a typo must not silently do nothing).
"""

import logging
import re

from ..sources import clusters
from . import causes, diagnosis, foreign
from .rules import ERROR, INFO, LEVEL_RANK, LEVELS, RULES, RULES_BY_ID, WARN, Finding  # noqa: F401
from .rules import cluster as cluster_rules
from .rules.common import diverged_at
from .series import (IntervalSeries, LayerSeries, RunSeries, RunState, Series)  # noqa: F401

logger = logging.getLogger(__name__)

STATUS_OK = "ok"


class ConfigError(ValueError):
    """A health configuration that names an unknown rule or threshold, or has a bad value."""


def _merged_config(rule, config):
    cfg = dict(rule.defaults)
    extra = dict((config or {}).get(rule.id) or {})
    enabled = extra.pop("enabled", True)
    level = extra.pop("level", None)
    for key, value in extra.items():
        if key not in cfg:
            raise ConfigError("rule %r has no threshold %r (it has: %s)" % (
                rule.id, key, ", ".join(sorted(cfg)) or "none"))
        default = cfg[key]
        if isinstance(default, (int, float)) and not isinstance(default, bool):
            try:
                number = float(value)
            except (TypeError, ValueError):
                number = None
            if number is None or isinstance(value, bool) or number != number:
                raise ConfigError("rule %r threshold %r must be a number, got %r" % (rule.id, key, value))
            value = int(number) if isinstance(default, int) and number.is_integer() else number
        elif isinstance(default, str):
            value = str(value)
            if key == "ignore" and value:
                try:
                    re.compile(value)
                except re.error as e:
                    raise ConfigError("rule %r threshold %r is not a valid regular expression: %s" % (
                        rule.id, key, e))
        cfg[key] = value
    if level is not None and level not in LEVELS:
        raise ConfigError("rule %r level must be one of %s, got %r" % (rule.id, ", ".join(LEVELS), level))
    return cfg, bool(enabled), level


def validate_config(config):
    """Raises :class:`ConfigError` if ``config`` names an unknown rule or threshold."""
    for rule_id in (config or {}):
        if rule_id not in RULES_BY_ID:
            raise ConfigError("unknown health rule %r (known: %s)" % (rule_id, ", ".join(sorted(RULES_BY_ID))))
    for rule in RULES:
        _merged_config(rule, config)


# Rules whose answer depends on the time of the check (``run.state.now``), not only on the run's data: a cached
# report re-runs these on every request (see ``cache.py``).
CLOCK_RULES = frozenset({"run_stalled", "run_unfinished"})


def split_rules():
    """``(data rules, clock rules)``: the rules that depend only on the run's data, and those in CLOCK_RULES."""
    return ([r for r in RULES if r.id not in CLOCK_RULES], [r for r in RULES if r.id in CLOCK_RULES])


def enabled_rules(config=None, rules=None):
    """``[(rule, thresholds)]`` of the rules (default: every rule) that ``config`` leaves enabled."""
    out = []
    for rule in (RULES if rules is None else rules):
        cfg, enabled, _ = _merged_config(rule, config)
        if enabled:
            out.append((rule, cfg))
    return out


def judge_cluster_ahead(folder, view, config=None):
    """Judges the state ``view`` of the cluster at ``folder`` with the rules that read only the cluster, ahead of
    the checks (see ``rules.cluster.judge_ahead``): a check of a run of that cluster then finds those findings
    ready."""
    cluster_rules.judge_ahead(folder, view, enabled_rules(config))


def sort_findings(findings):
    """Errors first, then by first step and rule id (in place; returns the list)."""
    findings.sort(key=lambda f: (-LEVEL_RANK[f.level], f.steps[0], f.rule))
    return findings


def check_run(run, config=None, rules=None):
    """Findings (list of :class:`Finding`) for one :class:`RunSeries`, sorted errors first.

    ``rules``: run only these (:class:`Rule` objects; default: every rule)."""
    validate_config(config)
    findings = []
    with clusters.one_reload():     # the cluster rules see one state of the rank files
        for rule in (RULES if rules is None else rules):
            cfg, enabled, level = _merged_config(rule, config)
            if not enabled:
                continue
            try:
                found = cluster_rules.judged(rule, run, cfg) or []    # a cluster's state is judged once
            except Exception:  # one broken rule must not hide the others
                logger.exception("health rule %s failed on run %r", rule.id, run.run)
                continue
            for f in found:
                if level is not None and f.level != INFO:
                    f.level = level
                findings.append(f)
    findings = causes.resolve(findings, slack=_interval_steps(run), diverged=diverged_at(run))
    foreign.advise(run, findings)   # mindformers' configuration and checkpoints (health/foreign.py)
    try:
        diagnosis.explain(run, findings)
    except Exception:  # the rules' own advice stays
        logger.exception("weighing the causes failed on run %r", run.run)
    for f in findings:
        sort_findings(f.follow_ons)
        f.compose()
    return sort_findings(findings)


def _interval_steps(run):
    """Steps between two recorded points (the run's ``collect_freq``; 10 when unknown): how far apart a live event
    and the offline finding of the same problem may lie."""
    freq = (run.info or {}).get("collect_freq") if isinstance(run.info, dict) else None
    return int(freq) if isinstance(freq, int) and not isinstance(freq, bool) and 0 < freq < 10 ** 6 else 10


def status_of(findings):
    worst = max((LEVEL_RANK[f.level] for f in findings), default=0)
    return {0: STATUS_OK, 1: WARN, 2: ERROR}[worst]


def run_report(run, config=None):
    findings = check_run(run, config)
    return {"run": run.run, "status": status_of(findings), "findings": [f.to_json() for f in findings]}


def report(runs, config=None):
    """The findings report for an iterable of :class:`RunSeries` (sorted by run name)."""
    validate_config(config)
    return {"runs": [run_report(r, config) for r in sorted(runs, key=lambda r: r.run)]}


def describe_rules():
    """``[{"id", "level", "source", "summary", "defaults"}]`` of every rule, in the order they run."""
    return [r.describe() for r in RULES]


def reaches(status, level):
    """Whether a run ``status`` ("ok"/"warn"/"error") is at least ``level`` ("warn"/"error")."""
    rank = {STATUS_OK: 0, WARN: 1, ERROR: 2}
    return rank[status] >= rank[level]


__all__ = ["CLOCK_RULES", "ConfigError", "Finding", "IntervalSeries", "LayerSeries", "RunSeries", "RunState",
           "Series", "check_run", "describe_rules", "reaches", "report", "run_report", "sort_findings", "split_rules",
           "status_of", "validate_config", "INFO", "WARN", "ERROR"]
