"""Run level: ``_meta/run_info`` (setup, monitoring options, the declared learning-rate intent ``lr_config``),
TensorBoard's HParams, the ``experiments.md`` registry line, and the run end marker ``_meta/run_end``."""

import json
import os
import re
import time

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.writing import write_faults
from tb_plugin_mindspore import __version__ as plugin_version

from ..common.util import cb_get, logger, lr_groups
from ..common.run_dir import RUN_HPARAMS_FILE, read_run_hparams
from ..common.model_kinds import is_ms_optimizer, is_torch_style_optimizer
from .base import Recorder
from .coverage import coverage, coverage_line
from .pipeline import network_of
from .events import json_value

__all__ = ["RunInfoRecorder", "lr_config", "LR_CHANGING_CALLBACKS"]

# MindSpore callbacks that change the learning rate while training: with one of them the intent is "dynamic".
LR_CHANGING_CALLBACKS = ("ReduceLROnPlateau", "LearningRateScheduler")
_KIND_ORDER = ("schedule", "list", "dynamic", "constant", "unknown")


def _group_config(lr):
    """``{"kind", "class", "value"}`` of one learning-rate object held by an optimizer."""
    from mindspore import Parameter, Tensor
    from mindspore.nn.learning_rate_schedule import LearningRateSchedule

    name = type(lr).__name__
    inner = getattr(lr, "learning_rate", None)
    if name == "_ConvertToCell" and isinstance(inner, Parameter):
        lr, name = inner, type(inner).__name__
    if isinstance(lr, (Parameter, Tensor)):
        values = np.asarray(lr.asnumpy(), dtype=np.float64).reshape(-1)
        if values.size == 1:
            return {"kind": "constant", "class": None, "value": float(values[0])}
        return _list_config(values)
    if name == "_IteratorLearningRate" and isinstance(inner, Parameter):
        return _list_config(np.asarray(inner.asnumpy(), dtype=np.float64).reshape(-1))
    if isinstance(lr, LearningRateSchedule):
        return {"kind": "schedule", "class": name, "value": None}
    if isinstance(lr, (int, float)):
        return {"kind": "constant", "class": None, "value": float(lr)}
    return {"kind": "unknown", "class": name, "value": None}


def _list_config(values):
    flat = bool(values.size and np.all(values == values[0]))
    return {"kind": "list", "class": None, "value": None, "length": int(values.size),
            "first": float(values[0]) if values.size else None, "last": float(values[-1]) if values.size else None,
            "flat": flat}


def lr_config(optimizer, callbacks=()):
    """The learning rate the optimizer was given, per group: ``{"kind", "class", "groups": [...]}``.

    Kinds: ``constant`` (a number), ``list`` (a list / 1-D Tensor indexed by the step, ``flat`` when all equal),
    ``schedule`` (a ``LearningRateSchedule`` object; ``class`` its class name), ``dynamic`` (a constant changed by
    a callback such as ``ReduceLROnPlateau``; ``changed_by`` names them), ``unknown`` (no optimizer). The run's
    kind is the most dynamic of its groups'.
    """
    if optimizer is None:
        return {"kind": "unknown", "class": None, "groups": []}
    try:
        if getattr(optimizer, "is_group_lr", False):
            sources = [optimizer.learning_rate[i] for i in lr_groups(optimizer)]
        else:
            sources = [optimizer.learning_rate]
        groups = [_group_config(lr) for lr in sources]
    except Exception as e:     # an optimizer we cannot read: say so rather than guess
        return {"kind": "unknown", "class": None, "groups": [], "error": str(e)[:200]}
    changers = sorted({type(cb).__name__ for cb in callbacks or ()} & set(LR_CHANGING_CALLBACKS))
    kinds = [g["kind"] for g in groups]
    kind = min(kinds, key=_KIND_ORDER.index) if kinds else "unknown"
    if changers and kind in ("constant", "unknown"):
        kind = "dynamic"
    classes = [g["class"] for g in groups if g["class"]]
    out = {"kind": kind, "class": classes[0] if classes else None, "groups": groups}
    if changers:
        out["changed_by"] = changers
    return out


_NORM_CELL = re.compile(r"(BatchNorm|LayerNorm|GroupNorm|InstanceNorm|RMSNorm|RmsNorm)")


def optimizer_eps(optimizer):
    """The optimizer's epsilon (Adam's denominator term) as a float, or None when it has none."""
    eps = getattr(optimizer, "eps", None) if optimizer is not None else None
    if eps is None:
        return None
    try:
        value = float(np.asarray(eps.asnumpy() if hasattr(eps, "asnumpy") else eps, dtype=np.float64).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        return None
    return value if np.isfinite(value) else None


def normalisation_cells(network):
    """``{cell class: count}`` of the normalisation layers in ``network`` (``{}`` when none, None when the
    network is not known): what the health rules weigh before blaming depth for vanishing gradients."""
    if network is None:
        return None
    try:
        names = [type(cell).__name__ for _, cell in network.cells_and_names()]
    except Exception:
        return None
    out = {}
    for name in names:
        if _NORM_CELL.search(name):
            out[name] = out.get(name, 0) + 1
    return out


def optimizer_kind(optimizer):
    """``"mindspore"`` (an ``nn.Optimizer``), ``"torch-style"`` (``param_groups``), ``"other"`` or None."""
    if optimizer is None:
        return None
    if is_ms_optimizer(optimizer):
        return "mindspore"
    if is_torch_style_optimizer(optimizer):
        return "torch-style"
    return "other"


class RunInfoRecorder(Recorder):
    """Writes run info at start (after every other recorder's ``on_start``) and the run end marker at the end."""

    name = "run_info"

    def on_start(self, ctx):
        import mindspore as ms

        self.ctx = ctx
        s = ctx.settings
        cb = ctx.cb_params
        from_folder = read_run_hparams(s.logdir)
        merged = dict(from_folder or {})
        merged.update(s.hparams or {})
        self.hparams = merged or None
        source = [name for name, given in ((RUN_HPARAMS_FILE, from_folder), ("hparams=", s.hparams)) if given]
        sink = bool(cb_get(cb, "dataset_sink_mode", False))
        kind = getattr(ctx.source, "kind", None)
        cell = ctx.cell if kind == "monitored_cell" else None
        table = getattr(ctx.source, "table", None)
        optimizer = table.optimizer if table is not None else ctx.optimizer
        covered = coverage(s, ctx.source, bool(ctx.params), getattr(ctx.source, "has_lr", ctx.optimizer is not None),
                           ctx.shared.get("not_recorded"))
        info = {
            "mindspore_version": ms.__version__,
            "plugin_version": plugin_version,
            "collect_freq": s.collect_freq,
            "rank": ctx.info.get("rank"),
            "rank_size": ctx.info.get("rank_size"),
            "mode": "GRAPH_MODE" if ms.get_context("mode") == ms.GRAPH_MODE else "PYNATIVE_MODE",
            "dataset_sink_mode": sink,
            "sink_size": cb_get(cb, "sink_size") if sink else None,
            "batch_size": ctx.pipeline.batch,
            "epochs": cb_get(cb, "epoch_num"),
            "steps_per_epoch": cb_get(cb, "batch_num"),
            "entry_point": "loop" if ctx.pipeline.owner == "LoopMonitor" else "Model.train",
            "step_source": kind,
            "monitored_cell": cell is not None,
            "train_cell": type(ctx.cell).__name__ if kind in ("monitored_cell", "mindformers") else None,
            "optimizer": type(optimizer).__name__ if optimizer is not None else None,
            "optimizer_kind": optimizer_kind(optimizer),
            "lr_groups": getattr(cell, "num_lr_groups", None),
            "lr_config": table.lr_config() if table is not None else
            lr_config(ctx.optimizer, cb_get(cb, "list_callback") or ()),
            "recorded": covered["recorded"],
            "not_recorded": covered["not_recorded"],
            "diagnostic": {"freq": s.diagnostic_freq or "epoch", "weight_norms": s.weight_norms,
                           "eval": s.eval_dataset is not None, "eval_freq": s.eval_freq or "epoch",
                           "eval_metrics": sorted(s.eval_metrics)},
            "debug": {"items": list(s.debug), "freq": s.debug_freq,
                      "activation_cells": ctx.info.pop("activation_cells", [])},
            "layers": dict(s.layers.describe(), selected=len(ctx.layer_names),
                           matched=s.layers.truncated_from or len(ctx.layer_names), frozen=len(ctx.frozen_names)),
            "normalisation": normalisation_cells(network_of(ctx)),
            "optimizer_eps": optimizer_eps(ctx.optimizer),
            "layer_sizes": {n: int(np.prod(p.shape)) if len(p.shape) else 1
                            for n, p in zip(list(ctx.layer_names) + list(ctx.frozen_names),
                                            list(ctx.layer_params) + list(ctx.frozen_params))},
            # Shapes of the layers (what `tb-mindspore compare` checks a layer mapping against).
            "layer_shapes": {p.name: [int(n) for n in p.shape] for p in ctx.layer_params},
            "hparams": self.hparams,
            "hparams_source": source or None,
            "logdir": str(ctx.logdir) if "://" in str(ctx.logdir) else os.path.abspath(ctx.logdir),
            "start_time": time.time(),
            "compile_ms_tag": metadata.COMPILE_MS,
        }
        extra = {k: v for k, v in ctx.info.items() if k not in ("rank", "rank_size")}
        info.update(extra)
        ctx.info = info
        line = coverage_line(ctx.pipeline.owner, covered["not_recorded"])
        if line:
            logger.warning(line)
        self.step = ctx.step
        self.rewrite()
        if info["rank"] == 0:
            self._append_registry(info)

    def rewrite(self):
        """Run info and hparams (again into a new file when the writer was replaced)."""
        w = self.ctx.writer
        if w is None:
            return
        w.run_info(self.ctx.info, step=self.step)
        if self.hparams:
            w.hparams(self.hparams, step=self.step, start_time=self.ctx.info["start_time"])

    def on_end(self, status):
        w = self.ctx.writer
        if w is not None:
            w.value(json_value(metadata.RUN_END, metadata.KIND_RUN_END, status), status["step"], sticky=True)

    def _append_registry(self, info):
        s = self.ctx.settings
        if s.registry is None or (s.registry == "auto" and "://" in str(s.logdir)):
            return      # no local folder next to a remote run folder (s3://...)
        path = s.registry
        if path == "auto":
            path = os.path.join(os.path.dirname(os.path.abspath(s.logdir)), "experiments.md")
        path = str(path)
        try:
            new = not os.path.exists(path)
            line = "| %s | %s | %s | %s | %s | %s |\n" % (
                time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(info["start_time"])),
                os.path.basename(os.path.abspath(s.logdir)),
                json.dumps(self.hparams or {}, sort_keys=True, default=str).replace("|", "\\|"),
                "collect_freq=%d debug=%s" % (s.collect_freq, ",".join(s.debug) or "-"),
                "%s %s" % (info["mode"], "sink" if info["dataset_sink_mode"] else "no-sink"),
                "MindSpore %s, %d rank(s)" % (info["mindspore_version"], info["rank_size"]),
            )
            text = line
            if new:
                text = ("# Experiments\n\nOne line per run, appended by tb_mindspore_callbacks.TrainMonitor.\n\n"
                        "| started | run | hparams | monitoring | mode | setup |\n"
                        "|---|---|---|---|---|---|\n" + line)
            with open(path, "a", encoding="utf-8") as f:
                f.write(text)
        except OSError as e:
            write_faults.report(path, e, "appending to the registry %s" % path, scope=s.logdir)
