"""Debug tier: the largest attention logit q·k/sqrt(d) of every ``nn.MultiheadAttention`` block of the network on a
few samples of the step's batch (``metadata.ATTENTION_MAX_LOGIT``, and per block ``ATTENTION_MAX_LOGIT_LAYERS``),
by one extra forward pass that keeps the blocks' inputs (``tb_mindspore_callbacks.activations``).

Why: attention logits that keep growing are the precursor of the loss spikes of large transformers (Dehghani et al.
2023, "Scaling Vision Transformers to 22 Billion Parameters": attention logit growth; Wortsman et al. 2023,
"Small-scale proxies for large-scale Transformer training instabilities"); QK-Clip (Kimi K2, MuonClip) and
Megatron-LM's ``qk_clip_threshold`` cap them at 100. The health rule ``attention_logit_growth`` watches this series
(and mindformers' ``max_attention_logit`` where it is recorded).

The logits are computed on the host from the captured query and key inputs and the block's own projection weights
(``in_proj_weight`` / ``q_proj_weight``, ``k_proj_weight``, their biases), with the block's heads; masks are not
applied (the largest logit over every pair, an upper bound of the attended one).
"""

import math

import numpy as np

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.contract import debug_items

from ..common.util import cb_get, find_cell, logger
from ..cells.activations import ActivationProbe
from .activations import clean_cell_name
from .base import Recorder

__all__ = ["AttentionLogitRecorder", "max_logit"]


def _array(param):
    return None if param is None else np.asarray(param.asnumpy(), dtype=np.float64)


def max_logit(query, key, w_q, w_k, b_q, b_k, heads, batch_first):
    """The largest q·k / sqrt(head_dim) over the batch, the heads and every (query, key) pair (float64 numpy).

    ``query`` / ``key``: (batch, length, embed) with ``batch_first`` else (length, batch, embed); ``w_q`` / ``w_k``:
    (embed, in); ``b_q`` / ``b_k``: (embed,) or None."""
    query, key = np.asarray(query, dtype=np.float64), np.asarray(key, dtype=np.float64)
    if not batch_first:
        query, key = query.transpose(1, 0, 2), key.transpose(1, 0, 2)
    q = query @ w_q.T + (0.0 if b_q is None else b_q)
    k = key @ w_k.T + (0.0 if b_k is None else b_k)
    b, lq, e = q.shape
    d = e // heads
    q = q.reshape(b, lq, heads, d).transpose(0, 2, 1, 3)
    k = k.reshape(b, k.shape[1], heads, d).transpose(0, 2, 1, 3)
    return float(np.max(q @ k.transpose(0, 1, 3, 2)) / math.sqrt(d))


def _projections(cell):
    """``(w_q, w_k, b_q, b_k)`` of a ``MultiheadAttention`` cell (numpy), or None."""
    e = int(cell.embed_dim)
    bias = _array(getattr(cell, "in_proj_bias", None))
    b_q, b_k = (None, None) if bias is None else (bias[:e], bias[e:2 * e])
    if getattr(cell, "in_proj_weight", None) is not None:
        w = _array(cell.in_proj_weight)
        return w[:e], w[e:2 * e], b_q, b_k
    if getattr(cell, "q_proj_weight", None) is not None and getattr(cell, "k_proj_weight", None) is not None:
        return _array(cell.q_proj_weight), _array(cell.k_proj_weight), b_q, b_k
    return None


class AttentionLogitRecorder(Recorder):
    item = debug_items.ATTENTION_LOGITS
    name = item.name

    def on_start(self, ctx):
        from mindspore import nn

        self.ctx = ctx
        self.probe = None
        probe_net = ctx.probe_net
        if probe_net is None:
            train_cell = find_cell(cb_get(ctx.cb_params, "train_network"), nn.TrainOneStepCell)
            probe_net = train_cell.network if train_cell is not None else None
        if probe_net is None:
            logger.warning("tb-mindspore: attention_logits: no network found to probe; skipped")
            return
        # A torch-style module has no nn.MultiheadAttention block, like a network without attention.
        blocks = [(clean_cell_name(name), cell) for name, cell in probe_net.cells_and_names()
                  if isinstance(cell, nn.MultiheadAttention)] if isinstance(probe_net, nn.Cell) else []
        if not blocks:
            logger.info("tb-mindspore: attention_logits: the network has no nn.MultiheadAttention block")
            return
        self.probe = ActivationProbe(probe_net, blocks, ctx.settings.activation_samples, take_inputs=True)
        self.blocks = dict(blocks)
        ctx.info["attention_blocks"] = [name for name, _ in blocks]

    def on_point(self, r):
        if "debug" not in r.due or self.ctx.writer is None or self.probe is None:
            return
        inputs = r.inputs
        if inputs is None:
            inputs = cb_get(self.ctx.cb_params, "train_dataset_element")
        names, values = [], []
        for name, captured in self.probe(inputs).items():
            cell = self.blocks[name]
            proj = _projections(cell)
            if proj is None or len(captured) < 2:
                continue
            names.append(name)
            values.append(max_logit(captured[0], captured[1], *proj, heads=int(cell.num_heads),
                                    batch_first=bool(cell.batch_first)))
        if not values:
            return
        w = self.ctx.writer
        w.scalar(metadata.ATTENTION_MAX_LOGIT, max(values), r.step)
        w.layers(metadata.ATTENTION_MAX_LOGIT_LAYERS, names, np.asarray(values, dtype=np.float32), r.step)
