"""Two real MindSpore trainings for the report tests (run as a script in a child process: MindSpore stays out of
the test process): ``healthy`` and ``diverged`` (the learning rate far too high: the loss turns NaN / Inf), both
recorded by TrainMonitor with per-layer update ratios and gradient norms (the heatmaps).

    python report_runs.py LOGDIR
"""

import os
import sys


def train(run_dir, lr, epochs=4):
    import mindspore as ms
    from mindspore import nn
    from mindspore.train import Model

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from ms_training import tiny_dataset
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.SGD(net.trainable_params(), learning_rate=lr)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, optimizer))
    monitor = TrainMonitor(run_dir, collect_freq=2, debug=["update_ratio", "layer_grad_norm"], debug_freq=4,
                           hparams={"lr": lr})
    model.train(epochs, tiny_dataset(n=256, seed=0), callbacks=[monitor], dataset_sink_mode=False)  # 8 steps/epoch


if __name__ == "__main__":
    root = sys.argv[1]
    train(os.path.join(root, "healthy"), 0.05)
    train(os.path.join(root, "diverged"), 1e4)
