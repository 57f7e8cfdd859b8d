"""Diagnostic tier: per-layer weight norms and the global weight norm (one fused computation on the device), at
every diagnostic point; the norms are shared with live health (``ctx.shared["weight_norms"]``)."""

import math

import numpy as np

from tb_plugin_mindspore import metadata

from .base import Recorder
from ..cells.layers import WeightNorms, cached

__all__ = ["WeightNormRecorder", "all_weight_norms"]


def all_weight_norms(ctx):
    """L2 norm of every trained parameter (``ctx.params``, float64 numpy), one compiled computation; None without
    parameters."""
    params = list(ctx.params)
    if not params:
        return None
    return np.asarray(cached(WeightNorms, params)().asnumpy(), dtype=np.float64)


def frozen_norms(ctx):
    """L2 norms of the frozen layers (``ctx.frozen_params``; float64 numpy), or None when there are none."""
    if not ctx.frozen_params:
        return None
    return np.asarray(cached(WeightNorms, list(ctx.frozen_params))().asnumpy(), dtype=np.float64)


class WeightNormRecorder(Recorder):
    """``diagnostic/weight_norm`` and ``diagnostic/layer_weight_norm``."""

    name = "weight_norms"

    def on_start(self, ctx):
        self.ctx = ctx
        if ctx.params:
            cached(WeightNorms, list(ctx.params))    # built now, compiled at its first point

    def on_point(self, r):
        if "diagnostic" not in r.due or self.ctx.writer is None:
            return
        norms = all_weight_norms(self.ctx)
        if norms is None:
            return
        w = self.ctx.writer
        self.ctx.shared["weight_norms"] = {"step": r.step, "norms": norms,
                                           "names": list(self.ctx.param_names)}
        w.scalar(metadata.WEIGHT_NORM_GLOBAL, math.sqrt(float(np.sum(norms * norms))), r.step)
        frozen = frozen_norms(self.ctx)
        if self.ctx.layer_names or frozen is not None:
            values = norms[self.ctx.layer_index]
            if frozen is not None:
                values = np.concatenate([values, frozen])
            w.layers(metadata.WEIGHT_NORM_LAYERS, self.ctx.layer_names + self.ctx.frozen_names, values, r.step,
                     frozen=self.ctx.frozen_names)
