"""Run under msrun: every worker trains a small network with ``Model.train`` and ``TrainMonitor``; every rank writes
its rank statistics into the shared run folder.

    msrun_child.py LOGDIR STEPS SLOW_RANK KILL_RANK KILL_STEP

Every step spends ``COMPUTE`` s of device time (a sleep: four workers share two cores, and CPU-bound steps would
make the timings a matter of scheduling); every batch takes ``BASE_WAIT`` s in the data pipeline and rank
SLOW_RANK's ``SLOW_WAIT`` s (a slow input pipeline on one rank, 3x its step, so that prefetching, kept short,
cannot hide it, and its data wait stays more than half of its excess step time, what ``slow_rank`` calls "waiting
for data", when the machine's load slows its steps too: at 0.2 s a CI run at load 5 per CPU measured 135 ms a step
of excess, less than half of it data wait); rank KILL_RANK's training
process is killed with SIGKILL after step KILL_STEP (a dead rank). That process is a child of msrun's worker, which
then exits normally: msrun stops the whole job when a worker fails, and the point is the others going on. msrun's
scheduler process runs this script too and does nothing. Prints one ``WORKER {json}`` line per finished worker.
"""

import json
import os
import signal
import sys
import time

import numpy as np

COMPUTE = float(os.environ.get("CLUSTER_COMPUTE", "0.1"))
BASE_WAIT = float(os.environ.get("CLUSTER_BASE_WAIT", "0"))
SLOW_WAIT = float(os.environ.get("CLUSTER_SLOW_WAIT", "0.3"))


def barrier(folder, rank, workers, timeout=120):
    """Waits until every worker has reached this point (a file per worker in ``folder``)."""
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, "ready.%d" % rank), "w").close()
    deadline = time.time() + timeout
    while len(os.listdir(folder)) < workers and time.time() < deadline:
        time.sleep(0.05)


def main():
    logdir, steps, slow, kill, kill_step = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
        int(sys.argv[5])
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return
    rank = int(os.environ.get("RANK_ID", "0"))
    if rank == kill:
        child = os.fork()           # before MindSpore is imported: the child trains and is killed
        if child:
            _, status = os.waitpid(child, 0)
            print("KILLED " + json.dumps({"rank": rank, "signal": os.WTERMSIG(status)}), flush=True)
            return
    import mindspore as ms
    from mindspore import dataset as ds
    from mindspore import nn
    from mindspore.train import Callback, Model

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(rank)
    ds.config.set_prefetch_size(2)

    def batches():
        rs = np.random.RandomState(rank)
        for _ in range(steps):
            time.sleep(SLOW_WAIT if rank == slow else BASE_WAIT)
            yield rs.randn(16, 8).astype(np.float32), rs.randint(0, 3, 16).astype(np.int32)

    def warm_batches():
        rs = np.random.RandomState(rank)
        for _ in range(2):
            yield rs.randn(16, 8).astype(np.float32), rs.randint(0, 3, 16).astype(np.int32)

    net = nn.SequentialCell([nn.Dense(8, 32), nn.ReLU(), nn.Dense(32, 3)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
    # Compile first, then start together: otherwise the workers' compilations (CPU-bound, seconds apart on two
    # cores) land in each other's first steps, and batches read ahead while compiling hide the slow pipeline.
    model.train(1, ds.GeneratorDataset(warm_batches, ["x", "y"], shuffle=False), dataset_sink_mode=False)
    barrier(logdir + "_barrier", rank, workers=4)
    data = ds.GeneratorDataset(batches, ["x", "y"], shuffle=False, num_parallel_workers=1,
                               python_multiprocessing=False)

    class Compute(Callback):
        """Device time of the step (before TrainMonitor in the list: its time is step time, not data wait)."""

        def on_train_step_end(self, run_context):
            time.sleep(COMPUTE)

    class Kill(Callback):
        def on_train_step_end(self, run_context):
            if rank == kill and run_context.original_args().cur_step_num == kill_step:
                time.sleep(0.5)          # let the writer thread put the last rows on disk, as a real process would
                os.kill(os.getpid(), signal.SIGKILL)

    monitor = TrainMonitor(logdir, collect_freq=2, registry=None)
    started = time.time()
    model.train(1, data, callbacks=[Compute(), monitor, Kill()], dataset_sink_mode=False)
    print("WORKER " + json.dumps({"rank": rank, "seconds": round(time.time() - started, 2)}), flush=True)


if __name__ == "__main__":
    main()
