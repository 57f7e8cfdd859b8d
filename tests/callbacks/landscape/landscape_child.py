"""A tiny real training run with or without LandscapeCallback (run in a fresh process by test_landscape.py).

``python landscape_child.py OUT.npz MODE WITH LOGDIR``: trains Dense-BatchNorm-ReLU-Dense for 3 epochs of 4 steps
(Momentum, fixed seeds) in MODE ("graph" / "pynative"); WITH=1 adds LandscapeCallback (random, PCA and
interpolation, every epoch, 5 x 5 grid) writing to LOGDIR. Saves the final parameters and every step's loss to
OUT.npz, so two runs can be compared bit for bit. No dropout: MindSpore 2.10's CPU Dropout is not deterministic
from one process to the next even with fixed seeds, so a run with it cannot be compared bit for bit at all.
``sigint`` as WITH instead starts a 41 x 41 landscape after training and sends this process SIGINT while it runs.
"""

import os
import signal
import sys
import threading

import numpy as np

import mindspore as ms
from mindspore import nn
import mindspore.dataset as ds
from mindspore.train import Callback, Model

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".."))   # the repository root


def main():
    out, mode, with_landscape, logdir = sys.argv[1:5]
    # Python's own SIGINT handler, as in a program started from a terminal: a test process started in the background
    # by a shell ignores SIGINT and its children inherit that (the interrupt then never came: "NOT INTERRUPTED").
    signal.signal(signal.SIGINT, signal.default_int_handler)
    ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
    ms.set_seed(3)
    np.random.seed(3)
    rs = np.random.RandomState(0)
    x = rs.randn(64, 6).astype(np.float32)
    y = (x[:, 0] - x[:, 2] > 0).astype(np.int32)
    net = nn.SequentialCell(nn.Dense(6, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Dense(16, 2))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.05, 0.9))
    train = ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(16)
    losses = []

    class Losses(Callback):
        def on_train_step_end(self, run_context):
            losses.append(float(run_context.original_args().net_outputs.asnumpy()))

    callbacks = [Losses()]
    if with_landscape == "1":
        from tb_mindspore_callbacks import LandscapeCallback

        callbacks.append(LandscapeCallback(logdir, (x[:32], y[:32]), methods=("random", "pca", "interpolation"),
                                           every_epochs=1, grid=5, extent=0.3, log=None, progress=False))
    model.train(3, train, callbacks=callbacks, dataset_sink_mode=False)
    params = {p.name: p.asnumpy() for p in net.get_parameters()}
    if with_landscape == "sigint":
        from tb_mindspore_callbacks import LandscapeInterrupted, compute_landscape

        big_x = np.tile(x, (64, 1))
        big_y = np.tile(y, 64)
        loss_net = nn.WithLossCell(net, loss_fn)
        timer = []

        def on_point(index, a, b, loss):
            if index == 0:   # the graph is compiled and running: Ctrl-C in half a second
                t = threading.Timer(0.5, lambda: os.kill(os.getpid(), signal.SIGINT))
                t.start()
                timer.append(t)

        try:
            compute_landscape(loss_net, (big_x, big_y), grid=41, num_samples=len(big_x), eval_batch_size=len(big_x),
                              logdir=logdir, on_point=on_point, log=None, progress=False)
            print("NOT INTERRUPTED")
        except LandscapeInterrupted as e:
            print("INTERRUPTED points=%d rows=%d" % (e.result.points_done, e.result.rows_done))
        same = all(np.array_equal(params[p.name], p.asnumpy()) for p in net.get_parameters())
        print("RESTORED" if same else "CHANGED")
        handler = signal.getsignal(signal.SIGINT)
        print("SIGINT handler: %s (%r; SIGTERM %r)" % (handler is signal.default_int_handler, handler,
                                                       signal.getsignal(signal.SIGTERM)))
    np.savez(out, losses=np.array(losses), **params)


if __name__ == "__main__":
    main()
