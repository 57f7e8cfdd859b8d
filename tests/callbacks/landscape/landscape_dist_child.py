"""Run under msrun (or alone): one random landscape of a small fixed network, its grid split across the workers.

    landscape_dist_child.py LOGDIR SHARE_DIR GRID [HANG_RANK]

Every worker builds the same network (fixed seed) and evaluation arrays; rank 0 writes the merged landscape to
LOGDIR. A worker whose rank is HANG_RANK computes nothing and sleeps (a hung or lost worker; msrun itself stops the
whole job when a worker exits with an error) until rank 0 has written the landscape (the file ``LOGDIR.done``),
``LANDSCAPE_HANG`` seconds at most: it returns only after rank 0 is done, so rank 0 cannot have waited for it.
Prints one JSON line per worker: rank, workers, points evaluated, seconds.
"""

import json
import os
import sys
import time

import numpy as np


def main():
    logdir, share_dir, grid = sys.argv[1], sys.argv[2], int(sys.argv[3])
    die = int(sys.argv[4]) if len(sys.argv) > 4 else -1
    import mindspore as ms
    from mindspore import nn

    from tb_mindspore_callbacks.landscape.dist import compute_landscape_distributed, msrun_share

    share = msrun_share()
    if share is None:
        return
    done = logdir.rstrip(os.sep) + ".done"
    if share[0] == die:
        deadline = time.monotonic() + float(os.environ.get("LANDSCAPE_HANG", "10"))
        while not os.path.exists(done) and time.monotonic() < deadline:
            time.sleep(0.2)
        return
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    net = nn.SequentialCell([nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3)])
    rs = np.random.RandomState(0)
    x, y = rs.randn(64, 8).astype(np.float32), rs.randint(0, 3, 64).astype(np.int32)
    loss_net = nn.WithLossCell(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"))
    started = time.perf_counter()
    result = compute_landscape_distributed(loss_net, (x, y), "random", share_dir=share_dir, share=share,
                                           timeout=float(os.environ.get("LANDSCAPE_TIMEOUT", "120")),
                                           logdir=logdir if share[0] == 0 else None, grid=grid, extent=0.5,
                                           step=5, log=None, progress=False)
    print("WORKER " + json.dumps({"rank": share[0], "workers": share[1], "points": int(result.points_done),
                                  "complete": bool(result.complete), "seconds": time.perf_counter() - started}),
          flush=True)
    if share[0] == 0:
        open(done, "w").close()


if __name__ == "__main__":
    main()
