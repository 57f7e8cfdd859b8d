"""The attention-logit probe (debug item "attention_logits"): the largest q.k/sqrt(d) of MindSpore's own
``nn.MultiheadAttention`` blocks, checked against the block's attention weights, and recorded while a real
``nn.TransformerEncoderLayer`` trains."""

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor  # noqa: E402
from tb_mindspore_callbacks.recorders.attention import _projections, max_logit  # noqa: E402

from cb_helpers import read_run, set_mode  # noqa: E402


@pytest.mark.parametrize("batch_first", [True, False])
def test_max_logit_matches_the_blocks_own_attention_weights(batch_first):
    set_mode("pynative")
    try:
        ms.set_seed(0)
        attn = nn.MultiheadAttention(8, 2, batch_first=batch_first)
        attn.set_train(False)
        rs = np.random.RandomState(0)
        x = rs.normal(size=(3, 5, 8) if batch_first else (5, 3, 8)).astype(np.float32) * 3
        _, weights = attn(Tensor(x), Tensor(x), Tensor(x), need_weights=True, average_attn_weights=False)
        weights = weights.asnumpy()                                     # (batch, heads, L, L)
        w_q, w_k, b_q, b_k = _projections(attn)
        xb = x if batch_first else x.transpose(1, 0, 2)
        q = (xb @ w_q.T + b_q).reshape(3, 5, 2, 4).transpose(0, 2, 1, 3)
        k = (xb @ w_k.T + b_k).reshape(3, 5, 2, 4).transpose(0, 2, 1, 3)
        logits = q @ k.transpose(0, 1, 3, 2) / 2.0
        soft = np.exp(logits - logits.max(-1, keepdims=True))
        assert np.allclose(soft / soft.sum(-1, keepdims=True), weights, atol=1e-4)   # the same logits MindSpore had
        assert max_logit(x, x, w_q, w_k, b_q, b_k, 2, batch_first) == pytest.approx(float(logits.max()), rel=1e-6)
    finally:
        set_mode("graph")


class Classifier(nn.Cell):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(16, 16)
        self.layer = nn.TransformerEncoderLayer(16, 2, dim_feedforward=32, dropout=0.0, batch_first=True)
        self.head = nn.Dense(16, 3)

    def construct(self, tokens):
        return self.head(self.layer(self.embed(tokens)).mean(axis=1))


@pytest.mark.slow
def test_probe_records_the_largest_logit_while_a_transformer_trains(tmp_path):
    import mindspore.dataset as ds

    set_mode("graph")
    ms.set_seed(0)
    rs = np.random.RandomState(0)
    tokens, labels = rs.randint(0, 16, (64, 6)).astype(np.int32), rs.randint(0, 3, 64).astype(np.int32)
    net = Classifier()
    opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
    model = Model(MonitoredTrainCell.wrap(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), opt))
    monitor = TrainMonitor(str(tmp_path), collect_freq=2, registry=None, debug=["attention_logits"], debug_freq=4)
    model.train(1, ds.NumpySlicesDataset({"x": tokens, "y": labels}, shuffle=False).batch(8),
                callbacks=[monitor], dataset_sink_mode=False)
    assert monitor.errors == 0
    scalars, tensors = read_run(tmp_path)
    top = scalars[metadata.ATTENTION_MAX_LOGIT]
    assert [s for s, _ in top] == [4, 8]
    assert all(np.isfinite(v) and v > 0 for _, v in top)
    per_block = tensors[metadata.ATTENTION_MAX_LOGIT_LAYERS]
    assert len(per_block) == 2 and all(v.reshape(-1)[0] == pytest.approx(t, rel=1e-5)
                                       for (_, v), (_, t) in zip(per_block, top))


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.slow
def test_loop_probe_takes_the_backbone_and_the_data_column_of_its_inputs(tmp_path, mode):
    # The loop's documented call: LoopMonitor(network=<the backbone>) and mon.step(..., inputs=(data, label)): the
    # backbone takes the data only (the label once made every probe call fail).
    from tb_mindspore_callbacks import Debug, LoopMonitor, Storage

    set_mode(mode)
    try:
        ms.set_seed(0)
        rs = np.random.RandomState(0)
        tokens, labels = rs.randint(0, 16, (16, 6)).astype(np.int32), rs.randint(0, 3, 16).astype(np.int32)
        net = Classifier()
        opt = nn.Adam(net.trainable_params(), learning_rate=1e-3)
        grad_fn = ms.value_and_grad(nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True,
                                                                                           reduction="mean")),
                                    None, opt.parameters)
        with LoopMonitor(str(tmp_path), opt, network=net, collect_freq=2, storage=Storage(registry=None),
                         debug=Debug(items=["attention_logits"], every=2)) as mon:
            for _ in range(4):
                x, y = Tensor(tokens[:8]), Tensor(labels[:8])
                mon.begin_step()
                loss, grads = grad_fn(x, y)
                opt(grads)
                mon.step(loss, grads, inputs=(x, y))
        assert mon.monitor.errors == 0
    finally:
        set_mode("graph")
    scalars, _ = read_run(tmp_path)
    top = scalars[metadata.ATTENTION_MAX_LOGIT]
    assert [s for s, _ in top] == [2, 4] and all(np.isfinite(v) and v > 0 for _, v in top)
