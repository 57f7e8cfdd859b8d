"""The health corpus's many-rank runs: four ``msrun`` CPU workers, each training a small MLP with ``Model.train`` and
``TrainMonitor`` into one run folder (rank 0's event files, every rank's statistics file), healthy or with one
rank's fault: a straggler (slow data pipeline), a hung rank (it sleeps from step S), a dead rank (SIGKILL after
step S), a corrupted shard (inputs x30 from step S).

    python bench/corpus_msrun.py OUT ID        # runs one job of OUT/plan.json (it starts msrun itself)

As in ``tests/cluster/msrun_child.py``, every step spends ``COMPUTE`` s asleep as its device time: four workers
share two cores here, and CPU-bound steps would make the timings a matter of scheduling.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

WORKERS = 4
COMPUTE = 0.1
SLOW_WAIT = 0.2


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_job(spec, out, timeout=600):
    """Runs the job of ``spec`` into ``<out>/runs/<id>`` and writes ``<out>/meta/<id>.json``."""
    run_dir = os.path.join(out, "runs", spec.id)
    work = os.path.join(out, "work", spec.id)
    shutil.rmtree(work, ignore_errors=True)     # a job trained again: its old done markers would end it at once
    os.makedirs(work)
    os.makedirs(os.path.join(out, "meta"), exist_ok=True)
    bin_dir = os.path.dirname(sys.executable)
    cmd = [os.path.join(bin_dir, "msrun"), "--worker_num=%d" % WORKERS, "--local_worker_num=%d" % WORKERS,
           "--master_port=%d" % _free_port(), "--log_dir=%s" % os.path.join(work, "msrun_log"), "--join=True",
           os.path.abspath(__file__), "child", json.dumps(spec.to_json()), run_dir, work]
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), GLOG_v="3")
    meta = {"spec": spec.to_json(), "run_dir": os.path.relpath(run_dir, out), "started": time.time(), "live": []}
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=work,
                            start_new_session=True)
    done_dir = os.path.join(work, "done")
    expected = WORKERS - (1 if spec.case in ("hung_rank", "dead_rank") else 0)
    deadline = time.time() + timeout
    while proc.poll() is None and time.time() < deadline:
        finished = len(os.listdir(done_dir)) if os.path.isdir(done_dir) else 0
        if finished >= expected and spec.case == "hung_rank":
            time.sleep(3)                 # the others went on; the hung rank never will
            break
        time.sleep(0.5)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finished = sorted(os.listdir(done_dir)) if os.path.isdir(done_dir) else []
    meta["workers_done"] = finished
    meta["status"] = "trained" if len(finished) >= expected else "error"
    if meta["status"] == "error":
        meta["error"] = "%d of %d workers finished" % (len(finished), expected)
    injected = os.path.join(work, "injected.json")
    meta["injected"] = json.load(open(injected)) if os.path.exists(injected) else []
    meta["finished"] = time.time()
    path = os.path.join(out, "meta", spec.id + ".json")
    with open(path + ".tmp", "w") as f:
        json.dump(meta, f, indent=1)
    os.replace(path + ".tmp", path)
    return meta


def _barrier(folder, rank, workers, timeout=180):
    os.makedirs(folder, exist_ok=True)
    open(os.path.join(folder, "ready.%d" % rank), "w").close()
    deadline = time.time() + timeout
    while len(os.listdir(folder)) < workers and time.time() < deadline:
        time.sleep(0.05)


def child(spec_json, run_dir, work):
    """One msrun worker (msrun's scheduler process runs this too and does nothing)."""
    if os.environ.get("MS_ROLE") == "MS_SCHED":
        return
    spec = json.loads(spec_json)
    rank = int(os.environ.get("RANK_ID", "0"))
    faulty = rank == spec.get("fault_rank")
    case, at, steps = spec["case"], spec.get("fault_step") or 0, spec["steps"]
    if faulty and case == "dead_rank":
        pid = os.fork()          # before MindSpore is imported: the child trains and is killed
        if pid:
            os.waitpid(pid, 0)
            return
    import mindspore as ms
    from mindspore import dataset as ds
    from mindspore import nn
    from mindspore.train import Callback, Model

    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(spec["seed"] % 1000 + rank)
    ds.config.set_prefetch_size(2)
    teacher = np.random.RandomState(1234).normal(size=(8, 3))

    def batches():
        rs = np.random.RandomState(spec["seed"] % 1000 + rank)
        for i in range(steps):
            time.sleep(SLOW_WAIT if faulty and case == "straggler" else 0.0)
            x = rs.randn(16, 8).astype(np.float32)
            y = np.argmax(x @ teacher, axis=1).astype(np.int32)
            if faulty and case == "corrupt_rank" and i + 1 >= at:
                x = x * 30.0
            yield x, y

    net = nn.SequentialCell([nn.Dense(8, 32), nn.ReLU(), nn.Dense(32, 3)])
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.01, 0.9)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))

    def warm():
        rs = np.random.RandomState(rank)
        for _ in range(2):
            yield rs.randn(16, 8).astype(np.float32), rs.randint(0, 3, 16).astype(np.int32)

    model.train(1, ds.GeneratorDataset(warm, ["x", "y"], shuffle=False), dataset_sink_mode=False)
    _barrier(os.path.join(work, "barrier"), rank, WORKERS)
    data = ds.GeneratorDataset(batches, ["x", "y"], shuffle=False, num_parallel_workers=1,
                               python_multiprocessing=False)

    class Fault(Callback):
        def on_train_step_end(self, run_context):
            time.sleep(COMPUTE)
            step = int(run_context.original_args().cur_step_num)
            if not faulty or step != at:
                return
            with open(os.path.join(work, "injected.json"), "w") as f:
                json.dump([{"step": step, "time": time.time(), "what": case, "rank": rank}], f)
            if case == "dead_rank":
                time.sleep(0.5)           # the writer thread puts the last rows on disk, as a real process would
                os.kill(os.getpid(), signal.SIGKILL)
            if case == "hung_rank":
                while True:
                    time.sleep(3600)

    monitor = TrainMonitor(run_dir, collect_freq=spec["collect_freq"], registry=None,
                           hparams={"case": case, "rank_size": WORKERS})
    if faulty and case in ("straggler", "corrupt_rank"):
        with open(os.path.join(work, "injected.json"), "w") as f:
            json.dump([{"step": at or 1, "time": time.time(), "what": case, "rank": rank}], f)
    model.train(1, data, callbacks=[Fault(), monitor], dataset_sink_mode=False)
    os.makedirs(os.path.join(work, "done"), exist_ok=True)
    open(os.path.join(work, "done", "rank%d" % rank), "w").close()


if __name__ == "__main__":
    if sys.argv[1] == "child":
        child(*sys.argv[2:5])
    else:
        import corpus_catalogue as cat

        out, wanted = sys.argv[1], sys.argv[2]
        with open(os.path.join(out, "plan.json")) as f:
            specs = {s["id"]: cat.Spec.from_json(s) for s in json.load(f)["specs"]}
        print(json.dumps(run_job(specs[wanted], out)["status"]))
