"""Debug tier: per-layer update ratio ||w_after - w_before|| / ||w_before|| over the real optimizer step
(``debug/update_ratio``): the weights are kept on the device before a step that ends on a debug point."""

import time

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import debug_items

from .base import Recorder, due
from ..cells.layers import Snapshot, UpdateRatio, cached

__all__ = ["UpdateRatioRecorder"]


class UpdateRatioRecorder(Recorder):
    item = debug_items.UPDATE_RATIO
    name = item.name
    wants_step_begin = True

    def on_start(self, ctx):
        self.ctx = ctx
        self.pending = False
        self.first = True
        self.snapshot = self.ratio = None
        self.params = list(ctx.layer_params) + list(ctx.frozen_params)    # frozen ones after the trained ones
        self.names = list(ctx.layer_names) + list(ctx.frozen_names)
        if self.params:
            self.snapshot = cached(Snapshot, self.params)
            self.ratio = cached(UpdateRatio, self.params)

    def on_step_begin(self, step):
        """Before the step(s) ending at ``step`` run: keep the weights if a debug point falls in them (the first
        time compiles the copy: one-off time, written as core/compile_ms)."""
        if self.snapshot is None or self.pending or not due(self.ctx.step, step, self.ctx.settings.debug_freq):
            return
        start = time.perf_counter()
        self.snapshot()
        self.pending = True
        if self.first:
            self.first = False
            self.ctx.add_compile_ms((time.perf_counter() - start) * 1000.0)

    def on_point(self, r):
        if "debug" not in r.due or not self.pending or self.ctx.writer is None:
            return
        ratio, _ = self.ratio()
        self.ctx.writer.layers(metadata.UPDATE_RATIO_LAYERS, self.names, ratio.asnumpy(), r.step,
                               frozen=self.ctx.frozen_names)
        self.pending = False
