"""Diagnostic tier: evaluation loss and metrics on ``eval_dataset`` (``diagnostic/eval_loss``,
``diagnostic/eval/<metric>``) at every evaluation point."""

import numpy as np

from tb_plugin_mindspore import metadata

from ..common.util import cb_get, find_cell
from .base import Recorder

__all__ = ["EvalRecorder"]


class EvalRecorder(Recorder):
    name = "eval"

    def on_start(self, ctx):
        self.ctx = ctx
        self.model = ctx.settings.eval_model

    def _model(self):
        if self.model is not None:
            return self.model
        from mindspore import nn
        from mindspore.train import Model

        cb = self.ctx.cb_params
        backbone = loss_fn = None
        train_cell = find_cell(cb_get(cb, "train_network"), nn.TrainOneStepCell)
        loss_net = train_cell.network if train_cell is not None else None
        if isinstance(loss_net, nn.WithLossCell):
            backbone, loss_fn = loss_net._backbone, loss_net._loss_fn
        elif cb_get(cb, "loss_fn") is not None and cb_get(cb, "network") is not None:
            backbone, loss_fn = cb_get(cb, "network"), cb_get(cb, "loss_fn")
        if backbone is None:
            raise ValueError("cannot tell the forward network and loss function of this training cell; "
                             "pass eval_model=Model(net, loss_fn, metrics=...) to TrainMonitor")
        metrics = {"loss": nn.Loss()}
        metrics.update(self.ctx.settings.eval_metrics)
        self.model = Model(backbone, loss_fn, metrics=metrics)
        return self.model

    def on_point(self, r):
        if "eval" not in r.due or self.ctx.writer is None:
            return
        results = self._model().eval(self.ctx.settings.eval_dataset, dataset_sink_mode=False)
        for name, value in sorted(results.items()):
            try:
                number = float(np.asarray(value, dtype=np.float64).reshape(-1)[0]) if np.size(value) == 1 else None
            except (TypeError, ValueError):
                number = None
            if number is None:
                continue
            tag = metadata.EVAL_LOSS if name == "loss" else metadata.EVAL_METRIC_PREFIX + str(name)
            self.ctx.writer.scalar(tag, number, r.step)
