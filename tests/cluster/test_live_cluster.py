"""The cluster rules while training (``callbacks/live_cluster.py``): the writing rank reads the run folder's rank
files in a background thread and names a slow, a diverging or a stopped rank once, as a live health event and a log
line, which ``tb-mindspore check`` merges with its own finding."""

import json
import logging
import time

import numpy as np
import pytest

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.commands import check as cli

from cluster_data import write_cluster, write_rank_file


def test_watch_names_a_slow_and_a_stopped_rank_once(tmp_path):
    from tb_mindspore_callbacks.recorders.live_cluster import LiveClusterWatch

    write_cluster(tmp_path / "job", ranks=8, slow=(5, 60), stop=(3, 120), with_event_file=False)
    emitted = []
    watch = LiveClusterWatch(tmp_path / "job", lambda *a: emitted.append(a))
    found = watch.check()
    assert sorted(f.rule for f in found) == ["rank_stopped", "slow_rank"]
    by_rule = {a[0]: a for a in emitted}
    rule, severity, step, first_step, message = by_rule["slow_rank"]
    assert severity == "warning" and message.startswith("Rank 5 (node node1) is 12% slower than the median rank")
    assert 60 <= first_step <= 80 and step >= first_step
    assert by_rule["rank_stopped"][1] == "error" and by_rule["rank_stopped"][4].startswith("Rank 3 ")
    assert watch.check() == [] and len(emitted) == 2          # each (rule, rank) once
    assert watch.errors == 0


def test_healthy_cluster_stays_quiet(tmp_path):
    from tb_mindspore_callbacks.recorders.live_cluster import LiveClusterWatch

    write_cluster(tmp_path / "job", ranks=8, with_event_file=False)
    emitted = []
    assert LiveClusterWatch(tmp_path / "job", lambda *a: emitted.append(a)).check() == [] and emitted == []


def _events(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    ea = EventAccumulator(str(run_dir), size_guidance={"tensors": 0})
    ea.Reload()
    if metadata.HEALTH_EVENT not in ea.Tags()["tensors"]:
        return []
    out = []
    for e in ea.Tensors(metadata.HEALTH_EVENT):
        raw = tensor_util.make_ndarray(e.tensor_proto).reshape(-1)[0]
        out.append(metadata.decode_health_event(raw.decode("utf-8") if isinstance(raw, bytes) else raw))
    return out


@pytest.mark.slow
def test_rank0_of_a_real_loop_names_a_stopped_rank_while_training(tmp_path, monkeypatch, caplog, capsys):
    """Rank 0 of a 4-rank job trains for real (LoopMonitor); ranks 1-3 are rank files written beside it as it goes,
    with rank 0's own step times and losses give or take 1-3%; rank 3's rows end at step 12. The watch, every 0.2 s
    here, names rank 3 while rank 0 trains, and nobody else."""
    ms = pytest.importorskip("mindspore")
    from mindspore import Tensor, nn

    from tb_mindspore_callbacks import LoopMonitor
    from tb_mindspore_callbacks.recorders import live_cluster

    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("RANK_SIZE", "4")
    monkeypatch.setattr(live_cluster, "CHECK_SECS", 0.2)
    ms.set_context(mode=ms.GRAPH_MODE)
    ms.set_seed(0)
    run = tmp_path / "job"
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    rs = np.random.RandomState(0)
    x = Tensor(rs.randn(16, 8).astype(np.float32))
    y = Tensor(rs.randint(0, 3, 16).astype(np.int32))
    rows = {1: [], 2: [], 3: []}

    def write_others(step, step_ms, loss):
        for rank, kept in rows.items():
            if rank == 3 and step > 12:
                continue
            kept.append((step, step_ms * (1 + 0.01 * rank), loss * (1 + 0.01 * rank)))
            steps = np.array([r[0] for r in kept])
            n = steps.size
            cols = {"step_time_ms": np.array([r[1] for r in kept]), "data_wait_ms": np.full(n, 0.1),
                    "loss": np.array([r[2] for r in kept]), "host_memory_mb": np.full(n, 500.0)}
            write_rank_file(str(run / metadata.CLUSTER_DIR / ("rank%d%s" % (rank, metadata.RANK_FILE_SUFFIX))),
                            rank, steps, time.time() + 0 * steps, cols, rank_size=4)

    seen_while_training = False
    with caplog.at_level(logging.WARNING):
        with LoopMonitor(str(run), opt, collect_freq=4, registry=None) as mon:
            started = time.perf_counter()
            for step in range(1, 61):
                loss, grads = grad_fn(x, y)
                mon.update(grads)
                mon.step(loss, grads)
                time.sleep(0.03)
                if step % 4 == 0:
                    now = time.perf_counter()
                    write_others(step, (now - started) * 250.0, float(loss.asnumpy()))
                    started = now
                seen_while_training = seen_while_training or any(
                    "Rank 3 " in r.getMessage() and "stopped writing" in r.getMessage() for r in caplog.records)
        assert mon.monitor.errors == 0
    assert seen_while_training
    live = [e for e in _events(run) if e.get("source") == "live" and e["rule"] in live_cluster.RULES]
    assert len(live) == 1, live
    assert live[0]["rule"] == "rank_stopped" and live[0]["message"].startswith("Rank 3 ")
    assert live[0]["severity"] == "error" and live[0]["first_step"] == 12
    cli.main(["check", str(run), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    (found,) = [f for r in report["runs"] for f in r["findings"] if f["rule"] == "rank_stopped"]
    assert found["source"] == "offline+live" and found["message"].startswith("Rank 3 ")
