"""``MonitorSettings``: every option of ``TrainMonitor`` / ``LoopMonitor``, validated once at construction.

Misuse (a bad regex, ``collect_freq <= 0``, an unknown debug item, metric or action) raises ValueError here with
a one-line message, never during training.
"""

import math
import os
import re

from ..layers import DEFAULT_MAX_LAYERS, LayerSelection

__all__ = ["MonitorSettings", "DEBUG_ITEMS", "ANOMALY_ACTIONS", "LIVE_HEALTH_DEFAULTS", "check_int"]

# Opt-in debug items (``debug=`` accepts a subset, or "all").
DEBUG_ITEMS = ("update_ratio", "layer_grad_norm", "activations", "data_wait", "attention_logits")
# What live health may do when it finds a problem (``on_anomaly=``); "log" (a log line and an event in the run)
# always happens.
ANOMALY_ACTIONS = ("log", "stop", "skip", "checkpoint")
# Live-health thresholds (``live_health={...}`` overrides them); the rule thresholds mirror the offline rules
# (see live_health.py), these are the live-only ones.
LIVE_HEALTH_DEFAULTS = {
    "warmup_points": 5,        # core points seen before spikes are judged (the first steps move a lot)
    "grad_factor": None,       # gradient norm this many times the running max = explosion (None: rule's 10)
    "loss_factor": None,       # loss this many times the largest before = spike (None: rule's 10)
    "stall_s": None,           # seconds without a step = stalled (None: 10x the usual interval, at least 120 s)
    "notify": None,            # webhooks each live finding is posted to (notify.py: URLs, "env:VAR", dicts)
}


def check_int(name, value, minimum=1, allow_none=False):
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError("%s must be %san int >= %d, got %r" % (name, "None or " if allow_none else "", minimum, value))
    return value


def parse_debug(debug):
    if debug is None or debug is False:
        return ()
    if debug is True or debug == "all":
        return DEBUG_ITEMS
    if isinstance(debug, str):
        debug = [debug]
    try:
        items = tuple(debug)
    except TypeError:
        raise ValueError("debug must be 'all' or a list of %s, got %r" % (", ".join(DEBUG_ITEMS), debug)) from None
    unknown = [i for i in items if i not in DEBUG_ITEMS]
    if unknown:
        raise ValueError("unknown debug item(s) %s; choose from %s (or 'all')"
                         % (", ".join(repr(u) for u in unknown), ", ".join(DEBUG_ITEMS)))
    return tuple(i for i in DEBUG_ITEMS if i in items)


def parse_metrics(metrics):
    """``{name: Metric}`` from None, a dict, or names known to ``mindspore.train.get_metric_fn``."""
    from mindspore.train import Metric, get_metric_fn

    if metrics is None:
        return {}
    if isinstance(metrics, str):
        metrics = [metrics]
    if isinstance(metrics, dict):
        out = {}
        for name, m in metrics.items():
            if not isinstance(m, Metric):
                raise ValueError("eval_metrics[%r] must be a mindspore.train.Metric, got %r" % (name, m))
            out[str(name)] = m
        return out
    out = {}
    for name in metrics:
        try:
            out[str(name)] = get_metric_fn(name)
        except Exception as e:
            raise ValueError("unknown eval metric %r (%s)" % (name, e)) from None
    return out


def parse_actions(on_anomaly):
    """``on_anomaly`` -> a tuple of :data:`ANOMALY_ACTIONS` ("log" always included)."""
    items = [on_anomaly] if isinstance(on_anomaly, str) else on_anomaly
    try:
        items = tuple(items)
    except TypeError:
        items = None
    if not items or any(not isinstance(i, str) or i not in ANOMALY_ACTIONS for i in items):
        raise ValueError("on_anomaly must be one of %s or a tuple of them, got %r"
                         % (", ".join(repr(a) for a in ANOMALY_ACTIONS), on_anomaly))
    return tuple(a for a in ANOMALY_ACTIONS if a == "log" or a in items)


def parse_live_health(live_health):
    """``live_health`` -> None (off) or the thresholds dict (defaults updated by a dict given)."""
    if live_health is False or live_health is None:
        return None
    if live_health is True:
        return dict(LIVE_HEALTH_DEFAULTS)
    if not isinstance(live_health, dict):
        raise ValueError("live_health must be True, False or a dict of thresholds (%s), got %r"
                         % (", ".join(LIVE_HEALTH_DEFAULTS), live_health))
    unknown = sorted(set(live_health) - set(LIVE_HEALTH_DEFAULTS))
    if unknown:
        raise ValueError("unknown live_health threshold(s) %s; choose from %s"
                         % (", ".join(repr(u) for u in unknown), ", ".join(LIVE_HEALTH_DEFAULTS)))
    out = dict(LIVE_HEALTH_DEFAULTS)
    for key, value in live_health.items():
        if key == "notify":
            from ..notify import parse_notify

            out[key] = parse_notify(value) or None
            continue
        if key == "warmup_points":
            check_int("live_health['warmup_points']", value, minimum=1)
        elif value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                    or not value > (1 if key.endswith("factor") else 0) or not math.isfinite(value)):
            raise ValueError("live_health[%r] must be None or a number > %d, got %r"
                             % (key, 1 if key.endswith("factor") else 0, value))
        out[key] = value
    return out


class MonitorSettings:
    """The validated options (see ``TrainMonitor`` for their meaning)."""

    def __init__(self, logdir, collect_freq=10, flush_secs=2.0, batch_size=None, rank=None, all_ranks=False,
                 max_queue=10000, diagnostic_freq=None, weight_norms=True, eval_dataset=None, eval_metrics=None,
                 eval_freq=None, eval_model=None, debug=(), debug_freq=100, activation_samples=4,
                 activations_include=None, layers_include=None, layers_exclude=None,
                 max_layers=DEFAULT_MAX_LAYERS, hparams=None, registry="auto", max_file_bytes=None,
                 max_run_bytes=None, live_health=True, on_anomaly=("log",), checkpoint_dir=None,
                 flight_recorder=100):
        from tb_plugin_mindspore.writer import check_sizes

        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            raise ValueError("logdir must be a non-empty path, got %r" % (logdir,))
        self.collect_freq = check_int("collect_freq", collect_freq)
        if isinstance(flush_secs, bool) or not isinstance(flush_secs, (int, float)) or not flush_secs > 0:
            raise ValueError("flush_secs must be a number > 0, got %r" % (flush_secs,))
        self.batch_size = check_int("batch_size", batch_size, allow_none=True)
        self.rank = check_int("rank", rank, minimum=0, allow_none=True)
        self.max_queue = check_int("max_queue", max_queue)
        self.diagnostic_freq = check_int("diagnostic_freq", diagnostic_freq, allow_none=True)
        self.eval_freq = check_int("eval_freq", eval_freq, allow_none=True)
        self.debug_freq = check_int("debug_freq", debug_freq)
        self.activation_samples = check_int("activation_samples", activation_samples)
        self.debug = parse_debug(debug)
        self.eval_metrics = parse_metrics(eval_metrics)
        if eval_dataset is not None and not hasattr(eval_dataset, "create_tuple_iterator"):
            raise ValueError("eval_dataset must be a mindspore.dataset Dataset, got %r" % (eval_dataset,))
        if eval_model is not None and not hasattr(eval_model, "eval"):
            raise ValueError("eval_model must be a mindspore.train.Model, got %r" % (eval_model,))
        if eval_model is not None and eval_dataset is None:
            raise ValueError("eval_model was given without an eval_dataset")
        self.layers = LayerSelection(layers_include, layers_exclude, max_layers)
        if activations_include is not None:
            try:
                self.activations_include = re.compile(activations_include)
            except (re.error, TypeError) as e:
                raise ValueError("activations_include is not a valid regular expression (%r): %s"
                                 % (activations_include, e)) from None
        else:
            self.activations_include = None
        if hparams is not None and not isinstance(hparams, dict):
            raise ValueError("hparams must be a dict or None, got %r" % (hparams,))
        if registry is not None and not isinstance(registry, (str, os.PathLike)):
            raise ValueError("registry must be 'auto', a file path or None, got %r" % (registry,))
        self.max_file_bytes, self.max_run_bytes = check_sizes(max_file_bytes, max_run_bytes)
        self.live_health = parse_live_health(live_health)
        self.on_anomaly = parse_actions(on_anomaly)
        if self.live_health is None and self.on_anomaly != ("log",):
            raise ValueError("on_anomaly=%r needs live_health on (it acts on what live health finds)"
                             % (on_anomaly,))
        if checkpoint_dir is not None and not isinstance(checkpoint_dir, (str, os.PathLike)):
            raise ValueError("checkpoint_dir must be a path or None, got %r" % (checkpoint_dir,))
        self.logdir = str(logdir)
        self.checkpoint_dir = str(checkpoint_dir) if checkpoint_dir is not None else None
        self.flush_secs = float(flush_secs)
        self.all_ranks = bool(all_ranks)
        self.weight_norms = bool(weight_norms)
        self.eval_dataset = eval_dataset
        self.eval_model = eval_model
        self.hparams = dict(hparams) if hparams else None
        self.registry = registry
        from ..flight_recorder import parse_flight_steps
        self.flight_recorder = parse_flight_steps(flight_recorder)
