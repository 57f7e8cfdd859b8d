"""Real MindSpore summary files for the graph and rotation tests (run in a subprocess: ``python ms_graph_child.py OUT``).

OUT/graph/    SummaryCollector(collect_graph=True) in Model.train, GRAPH_MODE (a two-cell network: Dense, ReLU, Dense)
OUT/rotated/  a size-rotated run: 400 steps of a scalar, a new SummaryRecord(part_<k>, max_file_size=...) every 100
              steps (MindSpore stops writing a file at max_file_size: long runs close it and open the next part)
OUT/multi/    one folder, two SummaryRecord files one after the other (steps 1-50, then 51-100)
OUT/expected.json: the losses and the parameter names fed in.
"""

import json
import os
import sys
import time

import numpy as np


def main(out):
    import mindspore as ms
    import mindspore.dataset as ds
    from mindspore import nn
    from mindspore.train import Model, SummaryCollector
    from mindspore.train.summary import SummaryRecord

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(1)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Dense(4, 8)
            self.act = nn.ReLU()
            self.fc2 = nn.Dense(8, 3)

        def construct(self, x):
            return self.fc2(self.act(self.fc1(x)))

    rng = np.random.RandomState(0)
    data = ds.NumpySlicesDataset({"x": rng.randn(16, 4).astype(np.float32),
                                  "y": rng.randint(0, 3, size=16).astype(np.int32)}, shuffle=False).batch(4)
    net = Net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.05, 0.9))
    collector = SummaryCollector(os.path.join(out, "graph"), collect_freq=1,
                                 collect_specified_data={"collect_graph": True, "collect_input_data": False})
    model.train(1, data, callbacks=[collector], dataset_sink_mode=False)

    for part in range(4):   # parts written within one second have the same file name (each in its own folder)
        with SummaryRecord(os.path.join(out, "rotated", "part_%d" % part), max_file_size=64 << 10) as record:
            for step in range(part * 100 + 1, part * 100 + 101):
                record.add_value("scalar", "loss", ms.Tensor(np.float32(1.0 / step)))
                record.record(step)
    for first in (1, 51):
        time.sleep(1.1)   # MindSpore names a file by the second it was opened: a second file in the same second replaces it
        with SummaryRecord(os.path.join(out, "multi")) as record:
            for step in range(first, first + 50):
                record.add_value("scalar", "loss", ms.Tensor(np.float32(2.0 / step)))
                record.record(step)
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump({"params": [p.name for p in net.trainable_params()], "rotated_steps": 400}, f)


if __name__ == "__main__":
    main(sys.argv[1])
