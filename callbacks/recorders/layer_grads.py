"""Debug tier: per-layer gradient norms of the last step (``debug/layer_grad_norm``), computed inside the
training step by the step source's cell (asked for at start, before the first compiled step)."""

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import debug_items

from .base import Recorder

__all__ = ["LayerGradRecorder"]


class LayerGradRecorder(Recorder):
    item = debug_items.LAYER_GRAD_NORM
    name = item.name

    def on_start(self, ctx):
        self.ctx = ctx
        if ctx.cell is not None and ctx.layer_index:
            if not ctx.source.track_layer_grad_norms(ctx.layer_index):
                ctx.not_recorded("layer_grad_norm", "per-layer gradient norms need the training cell to be set up "
                                                    "before its first step; call train_cell.track_layer_grad_norms"
                                                    "(...) earlier or use a fresh cell")

    def on_point(self, r):
        if "debug" not in r.due or self.ctx.writer is None:
            return
        values = r.layer_grad_norm
        if values is not None and len(values) == len(self.ctx.layer_names):
            self.ctx.writer.layers(metadata.GRAD_NORM_LAYERS, self.ctx.layer_names, values, r.step)
