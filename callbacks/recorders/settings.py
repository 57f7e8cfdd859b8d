"""``MonitorSettings``: the options of one monitored run (``TrainMonitor``, ``LoopMonitor``), validated once at
construction and kept flat as the recorders read them (``settings.debug_freq``, ``settings.eval_dataset``, ...).

The options come grouped by what they switch on (``options.py``: ``Debug``, ``Diagnostic``, ``Eval``, ``Layers``,
``LiveHealth``, ``Storage``, ``Ranks``); misuse raises ValueError there or here with a one-line message, never
during training.
"""

import os
import re

from tb_plugin_mindspore.writing.writer import check_sizes

from .flight_recorder import parse_flight_steps
from .options import (ANOMALY_ACTIONS, DEBUG_ITEMS, LIVE_HEALTH_DEFAULTS, Debug, Diagnostic, Eval, Layers,  # noqa: F401
                      LiveHealth, Ranks, Storage, check_int)
from ..common.model_kinds import (describe, is_cell, is_ms_optimizer, is_torch_style_module,
                                  is_torch_style_optimizer)

__all__ = ["MonitorSettings", "DEBUG_ITEMS", "ANOMALY_ACTIONS", "LIVE_HEALTH_DEFAULTS", "check_int"]


def _group(name, value, cls):
    if value is None:
        return cls()
    if not isinstance(value, cls):
        raise ValueError("%s must be a %s(...), got %r" % (name, cls.__name__, value))
    return value


class MonitorSettings:
    """The validated options (see ``TrainMonitor`` for their meaning): the groups as given, and their values flat."""

    def __init__(self, logdir, *, collect_freq=10, batch_size=None, hparams=None, flight_recorder=100, debug=None,
                 diagnostic=None, eval=None, layers=None, health=None, storage=None, ranks=None):
        if not isinstance(logdir, (str, os.PathLike)) or not str(logdir):
            if is_cell(logdir) or is_torch_style_module(logdir) or is_ms_optimizer(logdir) \
                    or is_torch_style_optimizer(logdir):
                raise ValueError("logdir must be the run folder (a path), got %s: the monitors take no model "
                                 "first; TrainMonitor finds the training cell in Model.train's network, LoopMonitor "
                                 "takes it as LoopMonitor(logdir, optimizer, network=model)" % describe(logdir))
            raise ValueError("logdir must be a non-empty path, got %r" % (logdir,))
        self.logdir = str(logdir)
        self.collect_freq = check_int("collect_freq", collect_freq)
        self.batch_size = check_int("batch_size", batch_size, allow_none=True)
        if hparams is not None and not isinstance(hparams, dict):
            raise ValueError("hparams must be a dict or None, got %r" % (hparams,))
        self.hparams = dict(hparams) if hparams else None
        self.flight_recorder = parse_flight_steps(flight_recorder)

        debug = Debug.of(debug)
        self.debug, self.debug_freq = debug.items, debug.every
        self.activation_samples = debug.activation_samples
        self.activations_include = (re.compile(debug.activations_include)
                                    if debug.activations_include is not None else None)

        diagnostic = _group("diagnostic", diagnostic, Diagnostic)
        self.diagnostic_freq, self.weight_norms = diagnostic.every, diagnostic.weight_norms

        if eval is not None and not isinstance(eval, Eval):
            raise ValueError("eval must be an Eval(dataset, ...), got %r" % (eval,))
        self.eval_dataset = eval.dataset if eval is not None else None
        self.eval_metrics = eval.metrics if eval is not None else {}
        self.eval_freq = eval.every if eval is not None else None
        self.eval_model = eval.model if eval is not None else None

        self.layers = _group("layers", layers, Layers).selection

        health = LiveHealth() if health is None else LiveHealth.of(health)   # on unless health=False
        self.live_health = health.thresholds if health is not None else None
        self.on_anomaly = health.on_anomaly if health is not None else ("log",)
        self.checkpoint_dir = health.checkpoint_dir if health is not None else None
        self.notify = health.notify if health is not None else ()

        storage = _group("storage", storage, Storage)
        self.flush_secs, self.max_queue, self.registry = storage.flush_secs, storage.max_queue, storage.registry
        self.max_file_bytes, self.max_run_bytes = check_sizes(storage.max_file_bytes, storage.max_run_bytes)

        ranks = _group("ranks", ranks, Ranks)
        self.rank, self.all_ranks = ranks.rank, ranks.all
        self.groups = {"debug": debug, "diagnostic": diagnostic, "eval": eval, "layers": layers, "health": health,
                       "storage": storage, "ranks": ranks}
