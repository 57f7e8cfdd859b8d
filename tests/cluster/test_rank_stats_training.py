"""Rank statistics from real MindSpore training: TrainMonitor and LoopMonitor write their rank's rows (the loss and
gradient norm the core tier records at the same steps), host memory in the core tier, no device memory on CPU
(said in the run info, never invented); a rank that writes no event file still writes its rows; the live memory
watch on synthetic rows."""

import json
import math

import numpy as np
import pytest

pytest.importorskip("mindspore")

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_plugin_mindspore.answers import cluster  # noqa: E402

from ms_training import tiny_dataset, train_tiny  # noqa: E402


def rank_rows(run_dir, rank=0):
    path = str(run_dir / "cluster" / ("rank%d.tbmsrank" % rank))
    data = cluster.ClusterData("run", cluster.SOURCE_RANK_FILES, [(rank, path)])
    data.reload()
    ranks, steps, _, mats = data.aligned()
    return ranks[0], steps, {f: m[0] for f, (m, _) in mats.items()}


def scalars(run_dir):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    ea = EventAccumulator(str(run_dir), size_guidance={"scalars": 0, "tensors": 0})
    ea.Reload()
    out = {t: {e.step: e.value for e in ea.Scalars(t)} for t in ea.Tags()["scalars"]}
    info = ea.Tensors(metadata.RUN_INFO)[-1]
    return out, json.loads(tensor_util.make_ndarray(info.tensor_proto).reshape(-1)[0])


@pytest.mark.slow
def test_train_monitor_writes_its_rank_rows_and_core_memory(tmp_path):
    train_tiny(tmp_path / "run", epochs=4, collect_freq=5)
    rank, steps, cols = rank_rows(tmp_path / "run")
    assert steps.tolist() == [5, 10, 15, 20, 25, 30, 32] and rank.host
    core, info = scalars(tmp_path / "run")
    for s, loss in zip(steps.tolist(), cols["loss"].tolist()):
        assert loss == pytest.approx(core[metadata.LOSS][s], rel=1e-6)
    np.testing.assert_allclose(cols["grad_norm"], [core[metadata.GRAD_NORM][s] for s in steps.tolist()], rtol=1e-6)
    assert np.isfinite(cols["step_time_ms"]).all() and (cols["step_time_ms"] > 0).all()
    assert sorted(core[metadata.HOST_MEMORY_MB]) == steps.tolist()
    assert all(v > 10 for v in core[metadata.HOST_MEMORY_MB].values())
    assert metadata.DEVICE_MEMORY_MB not in core and np.isnan(cols["device_memory_mb"]).all()
    assert info["rank_stats"] == {"file": "cluster/rank0.tbmsrank", "device_memory": "not reported by the CPU backend"}


def test_a_rank_that_writes_no_event_file_still_writes_its_rows(tmp_path, monkeypatch):
    monkeypatch.setenv("RANK_ID", "2")
    monkeypatch.setenv("RANK_SIZE", "4")
    train_tiny(tmp_path / "run", epochs=2, collect_freq=4)
    rank, steps, cols = rank_rows(tmp_path / "run", rank=2)
    assert rank.header["rank_size"] == 4 and steps.tolist() == [4, 8, 12, 16]
    assert np.isfinite(cols["loss"]).all()
    assert not [p for p in (tmp_path / "run").iterdir() if "tfevents" in p.name]     # rank 2 writes no event file


def test_loop_monitor_writes_rows_with_the_data_wait(tmp_path):
    import mindspore as ms
    from mindspore import nn

    from tb_mindspore_callbacks import LoopMonitor

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(0)
    net = nn.SequentialCell(nn.Dense(8, 16), nn.ReLU(), nn.Dense(16, 3))
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    grad_fn = ms.value_and_grad(lambda x, y: loss_fn(net(x), y), None, opt.parameters)
    with LoopMonitor(str(tmp_path / "loop"), opt, collect_freq=4) as mon:
        for x, y in tiny_dataset().create_tuple_iterator():
            mon.begin_step()
            loss, grads = grad_fn(x, y)
            opt(grads)
            mon.step(loss, grads)
    _, steps, cols = rank_rows(tmp_path / "loop")
    assert steps.tolist() == [4, 8]
    assert np.isfinite(cols["data_wait_ms"]).all() and np.isfinite(cols["grad_norm"]).all()
    ms.set_context(mode=ms.GRAPH_MODE)


def test_live_memory_watch_reports_a_leak_once():
    from tb_mindspore_callbacks.recorders.rank_stats import LiveMemoryWatch

    watch = LiveMemoryWatch()
    found = []
    for i in range(60):
        row = {"host_memory_mb": 1000.0 + 5.0 * i, "device_memory_mb": math.nan, "device_limit_mb": math.nan}
        found += watch.check(10 * (i + 1), row)
    assert [f[0] for f in found] == ["memory_growth"]
    assert found[0][1].startswith("The host memory (RSS) of this rank grows steadily: 500 MB per 1,000 steps")
