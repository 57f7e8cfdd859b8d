"""mindformers' own callbacks and writers on a small network on CPU (run in the mindformers environment:
``run_in_env("mindformers", [mf_child.py, OUT, STEPS])``).

What runs, and where it writes (the layout of a mindformers training's output folder):

* ``mindformers.utils.tensorboard._set_tensorboard_writer`` (tensorboardX) into ``OUT/output/tensorboard/rank_0``,
  ``write_args_to_tensorboard`` with a ``MindFormerConfig`` (lr_schedule, runner_wrapper with gradient clipping,
  optimizer) as TensorBoard text;
* ``MFLossMonitor`` (loss, learning rate, gradient norm, loss scale, iteration time, throughput, batch size and
  their "vs samples" twins, the loss parts of an MoE / MTP model) over ``Model.train`` in GRAPH_MODE: its train cell
  returns what mindformers' ``MFTrainOneStepCell`` returns (loss, overflow, loss scale, learning rate, global norm),
  since that cell's overflow check has no CPU kernel (``NPUGetFloatStatusV2``);
* ``TrainingStateMonitor`` with weight norm, optimizer-state norms (Adam), stable rank / top eigenvalue and max
  attention logit (the network answers ``get_max_attention_logit()`` as mindformers' attention does), and
  ``check_for_global_norm`` with a spike threshold the last step reaches: mindformers writes
  ``OUT/output/abnormal_global_norm.json`` and stops the training (``TREError``); local norms need the parallel
  dump of an Ascend run and are left out;
* ``CheckpointMonitor(use_checkpoint_health_monitor=True)``: checkpoints, ``health_ckpts.json`` and ``meta.json``;
* ``TopkBiasBalanceCallback``'s expert loads (``expert_load/<layer>`` add_scalars) from a network that answers
  ``update_topk_bias`` as mindformers' MoE does;
* the PyNative trainer's log records (``OUT/output/log/rank_0/info.log``), written by its monitors' own writer
  functions (see :func:`pynative_log_records`).

Prints one JSON line: what was written (``{"steps", "stopped_at", "abnormal", "files": [...]}``).
"""

import glob
import json
import os
import sys

import numpy as np

HEADS, LAYERS, EXPERTS = 4, 2, 4


def main(out, steps):
    os.environ.setdefault("MF_LOG_PATH", os.path.join(out, "log"))
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import Parameter, Tensor, nn, ops
    from mindspore.train import Model

    from mindformers.core.callback.callback import (CheckpointMonitor, MFLossMonitor, TopkBiasBalanceCallback,
                                                    TrainingStateMonitor)
    from mindformers.tools.register import MindFormerConfig
    from mindformers.utils import tensorboard as mf_tb

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    output = os.path.join(out, "output")
    os.makedirs(output, exist_ok=True)
    os.chdir(out)                     # mindformers writes abnormal_global_norm.json under ./output
    tb_dir = os.path.join(output, "tensorboard", "rank_0")
    config = MindFormerConfig(**{
        "tensorboard": {"tensorboard_dir": tb_dir, "tensorboard_queue_size": 1, "log_timers_to_tensorboard": True,
                        "log_loss_scale_to_tensorboard": True, "log_expert_load_to_tensorboard": True},
        "lr_schedule": {"type": "CosineWithWarmUpLR", "learning_rate": 1e-3, "warmup_ratio": 0.1, "total_steps": -1},
        "optimizer": {"type": "AdamW", "betas": [0.9, 0.95], "eps": 1e-8, "weight_decay": 0.1},
        "runner_wrapper": {"type": "MFTrainOneStepCell", "scale_sense": 1.0, "use_clip_grad": True,
                           "max_grad_norm": 1.0},
    })
    mf_tb.update_tensorboard_args(config.tensorboard)
    mf_tb._set_tensorboard_writer(config.tensorboard)
    mf_tb.write_args_to_tensorboard(config)

    class Attention(nn.Cell):
        def __init__(self, i):
            super().__init__()
            self.proj = nn.Dense(8, 8)
            self.max_logits_val = Parameter(Tensor(np.zeros(HEADS, np.float32)), name="layers.%d.max_logits_val" % i,
                                            requires_grad=False)

        def construct(self, x):
            y = self.proj(x)
            ops.assign(self.max_logits_val, ops.abs(y[0, :HEADS]) * 10.0)
            return y

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.embed = nn.Dense(4, 8)
            self.layers = nn.CellList([Attention(i) for i in range(LAYERS)])
            self.head = nn.Dense(8, 3)

        def construct(self, x):
            h = self.embed(x)
            for layer in self.layers:
                h = layer(h)
            return self.head(h)

        def get_max_attention_logit(self):       # mindformers' attention layers answer this
            return {"decoder.layers.%d.self_attention.core_attention" % i: l.max_logits_val
                    for i, l in enumerate(self.layers)}

        def update_topk_bias(self, gradient_accumulation_steps=1):   # MoE expert loads, as mindformers' MoE answers
            self.moe_steps = getattr(self, "moe_steps", 0) + 1
            return [("layers.%d.moe" % i, Tensor(np.arange(1, EXPERTS + 1, dtype=np.float32) * (i + 1) + self.moe_steps))
                    for i in range(LAYERS)]

    net = Net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    lr = nn.CosineDecayLR(1e-4, 1e-3, steps)
    opt = nn.Adam(net.trainable_params(), learning_rate=lr)

    class TrainCell(nn.Cell):
        """What MFTrainOneStepCell returns with its local norms: (loss, overflow, loss scale, learning rate, global
        norm, per-parameter norms, their sizes)."""

        def __init__(self):
            super().__init__(auto_prefix=False)
            self.network = net
            self.optimizer = opt
            self.weights = opt.parameters
            self.grad = ops.GradOperation(get_by_list=True)
            self.loss_net = nn.WithLossCell(net, loss_fn)
            self.sizes = Tensor(np.array([int(np.prod(p.shape)) for p in opt.parameters], np.int32))

        def construct(self, x, y, bump):
            loss = self.loss_net(x, y)
            grads = self.grad(self.loss_net, self.weights)(x, y)
            squares = [ops.reduce_sum(g * g) for g in grads]
            norm = ops.sqrt(ops.addn(squares)) * bump.mean()
            local = ops.stack([ops.sqrt(q) for q in squares])
            grads = ops.clip_by_global_norm(grads, 1.0)
            self.optimizer(grads)
            rate = self.optimizer.get_lr()
            return loss, ops.zeros((), ms.bool_), ops.ones((), ms.float32), rate, norm, local, self.sizes

    rng = np.random.RandomState(0)
    n = steps * 4
    bump = np.ones(n, np.float32)
    bump[-4:] = 1000.0                # the last step's global norm reaches the spike threshold
    data = ds.NumpySlicesDataset({"x": rng.randn(n, 4).astype(np.float32),
                                  "y": rng.randint(0, 3, size=n).astype(np.int32), "bump": bump},
                                 shuffle=False).batch(4)
    cell = TrainCell()
    callbacks = [
        MFLossMonitor(learning_rate=lr, per_print_times=1, origin_epochs=1, dataset_size=steps, global_batch_size=4),
        TrainingStateMonitor(origin_epochs=1, dataset_size=steps, step_interval=1, global_batch_size=4,
                             tensor_model_parallel_size=1, config={
            "weight_state_format": ["tensorboard", "log"], "optimizer_state_format": ["tensorboard"],
            "max_attention_logit_format": ["tensorboard"], "check_for_global_norm": True,
            "global_norm_spike_threshold": 500.0,
            "stable_rank_config": {"format": ["tensorboard"], "step_interval": 2, "target": ["embed", "head"]},
        }),
        CheckpointMonitor(prefix="tiny", directory=output,
                          save_checkpoint_steps=2, keep_checkpoint_max=100, use_checkpoint_health_monitor=True,
                          health_ckpts_record_dir=output, embedding_size=32),   # embed.weight: 8 x 4
        _TopkBias(TopkBiasBalanceCallback, cell),
    ]
    stopped = None
    try:
        Model(cell).train(1, data, callbacks=callbacks, dataset_sink_mode=False)
    except RuntimeError as e:      # TREError: mindformers stops the training at an abnormal global norm
        stopped = str(e)[:200]
    mf_tb._unset_tensorboard_writer()
    pynative_log_records(steps)
    files = sorted(os.path.relpath(p, out) for p in glob.glob(os.path.join(out, "**", "*"), recursive=True)
                   if os.path.isfile(p) and not p.endswith(".ckpt"))
    print(json.dumps({"steps": steps, "stopped": stopped, "files": files}))


def pynative_log_records(steps):
    """What mindformers' PyNative trainer writes only to its log, through its own monitors' writers (the monitors
    themselves hook a PyNative model's gradients, which this CPU setup has not): ``TrainStateMonitor``'s norm blocks
    and local losses (``Monitor._flush_logger``), ``MoeMonitor``'s tokens per expert (``flush``) and
    ``MaxLogitsMonitor``'s max attention logits (``_dump``), at steps 1 .. ``steps``."""
    import types

    import mindspore as ms
    from mindformers.pynative.callback.max_logits_monitor import MaxLogitsMonitor
    from mindformers.pynative.tools import monitor as pm

    train_state = pm.TrainStateMonitor(types.SimpleNamespace(), model=None)
    moe = pm.MoeMonitor(types.SimpleNamespace(monitor=types.SimpleNamespace(moe_monitor=types.SimpleNamespace(
        save_tokens_per_expert_interval=1, target_layers=None))), model=None)
    logits = MaxLogitsMonitor(step_interval=1, enable_logging=True)
    for step in range(1, steps + 1):
        records = [{"micro_step": 1}]
        records += [{"local_norm": "decoder.layers.%d.mlp.w1.weight: %10.6f" % (i, 0.1 * (i + 1) * step)}
                    for i in range(LAYERS)]
        records += [{"micro_step": 1, "local_loss": 3.0 - 0.1 * step}, {"micro_step": 2, "local_loss": 2.8 - 0.1 * step}]
        pm.Monitor._flush_logger(train_state, records, step)
        moe._step_tpe_records = {("decoder", None, i): [(step, step, 1, ms.Tensor(
            np.arange(EXPERTS, dtype=np.int32) + step * (i + 1)))] for i in range(LAYERS)}
        moe.flush(step)
        logits._dump({"decoder.layers.%d.self_attention" % i: ms.Tensor(
            np.arange(HEADS, dtype=np.float32) + step + 10 * i) for i in range(LAYERS)},
            types.SimpleNamespace(global_step=step, max_steps=steps))


def _TopkBias(cls, cell):
    """TopkBiasBalanceCallback writing the expert loads the cell answers (update_topk_bias) at each step end."""
    from mindspore.train import Callback

    inner = cls(balance_via_topk_bias=False, expert_num=EXPERTS)

    class ExpertLoads(Callback):
        def on_train_step_end(self, run_context):
            inner.cur_step = run_context.original_args().cur_step_num
            inner._update_topk_bias(cell)

    return ExpertLoads()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 12)
