"""Run under msrun with 2 workers: real data-parallel training (``mindspore.communication.init()``, gradients
all-reduced by the training cell's reducer), each rank on its own data shard, with ``Model.train`` and
``TrainMonitor``. Prints one ``DP_WORKER {json}`` line per worker.

    msrun_dp_child.py LOGDIR STEPS
"""

import json
import os
import sys

import numpy as np


def main():
    logdir, steps = sys.argv[1], int(sys.argv[2])
    import mindspore as ms
    from mindspore import dataset as ds
    from mindspore import nn
    from mindspore.communication import get_group_size, get_rank, init
    from mindspore.train import Model

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    init()              # msrun's scheduler process runs this script too: its init() is the rendezvous
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return
    ms.set_auto_parallel_context(parallel_mode=ms.ParallelMode.DATA_PARALLEL, gradients_mean=True)
    rank = get_rank()
    ms.set_seed(0)                                  # the same initial weights on every rank
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
    rs = np.random.RandomState(100 + rank)          # each rank its own data shard
    x = (rs.randn(steps * 8, 8) * (1.0 + rank)).astype(np.float32)
    y = rs.randint(0, 3, steps * 8).astype(np.int32)
    data = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(8)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    cell = MonitoredTrainCell.wrap(net, loss_fn, opt)
    monitor = TrainMonitor(logdir, collect_freq=2, registry=None, live_health=False)
    Model(cell).train(1, data, callbacks=[monitor], dataset_sink_mode=False)
    weights = float(np.abs(net.trainable_params()[0].asnumpy()).sum())
    print("DP_WORKER " + json.dumps({"rank": rank, "size": get_group_size(), "reducer": bool(cell.reducer_flag),
                                     "errors": monitor.errors, "weights": weights}), flush=True)


if __name__ == "__main__":
    main()
