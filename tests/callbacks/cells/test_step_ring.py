"""The step ring of ``MonitoredTrainCell``: every step's values kept on the device and folded on the host, whatever
the collect interval, and a monitored step small enough for MindSpore to run on the calling thread."""

import math
import os
import sys

import pytest

pytest.importorskip("mindspore")

from mindspore import nn  # noqa: E402
from mindspore.train import Model  # noqa: E402

from tb_plugin_mindspore import metadata  # noqa: E402
from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor  # noqa: E402
from tb_mindspore_callbacks.cells.train_cell import STEP_RING_ROWS  # noqa: E402

from cb_helpers import LossWithBump, classification_data, dense_net, read_run, set_mode, train_in_sinks  # noqa: E402
import warm  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))


def _interval(tensors, tag, step):
    (values,) = [v for s, v in tensors[metadata.interval_tag(tag)] if s == step]
    return dict(zip(metadata.INTERVAL_FIELDS, values.tolist()))


@pytest.mark.parametrize("mode", ["graph", "pynative"])
@pytest.mark.slow
def test_a_collect_interval_longer_than_a_compiled_cells_ring_keeps_every_step(tmp_path, mode):
    """A cell that ran before the monitor came (so its ring keeps its 64 rows) under ``collect_freq=100``: the ring
    is read before it wraps, and the spike at step 30 and the NaN at step 90 are in the interval of step 100."""
    set_mode(mode)
    net = dense_net()
    cell = MonitoredTrainCell(LossWithBump(net), nn.SGD(net.trainable_params(), learning_rate=0.05))
    warm = classification_data(1, bump=[0.0])
    for batch in warm.create_tuple_iterator():
        cell(*batch)                                   # it ran: the monitor cannot resize the ring
    assert cell.tbms_steps.shape[0] == STEP_RING_ROWS < 100
    bumps = [0.0] * 120
    bumps[29], bumps[89] = 1000.0, float("nan")
    monitor = TrainMonitor(str(tmp_path), collect_freq=100)
    Model(cell).train(1, classification_data(120, bump=bumps), callbacks=[monitor], dataset_sink_mode=False)
    assert monitor.errors == 0
    assert cell.tbms_steps.shape[0] == STEP_RING_ROWS
    _, tensors = read_run(tmp_path)
    first = _interval(tensors, metadata.LOSS, 100)
    assert first["count"] == 100 and first["nonfinite"] == 1 and first["max"] > 1000
    last = _interval(tensors, metadata.LOSS, 120)
    assert last["count"] == 20 and last["nonfinite"] == 0 and last["max"] < 10
    grad = _interval(tensors, metadata.GRAD_NORM, 100)
    assert grad["count"] == 100 and math.isfinite(grad["mean"])


def test_the_monitor_sizes_the_ring_for_its_collect_interval_before_the_first_step(tmp_path):
    set_mode("graph")
    net = dense_net()
    cell = MonitoredTrainCell(LossWithBump(net), nn.SGD(net.trainable_params(), learning_rate=0.05))
    monitor = TrainMonitor(str(tmp_path), collect_freq=150)
    Model(cell).train(1, classification_data(150, bump=[0.0] * 150), callbacks=[monitor], dataset_sink_mode=False)
    assert cell.tbms_steps.shape[0] >= 150 and monitor.errors == 0
    _, tensors = read_run(tmp_path)
    assert _interval(tensors, metadata.LOSS, 150)["count"] == 150


@pytest.mark.slow
def test_a_sink_longer_than_the_default_ring_keeps_every_step(tmp_path):
    """Sinks of 150 steps (more than the ring's 64 rows, and than the flight recorder's 110): ``TrainMonitor`` sizes
    the ring for a whole sink before the first step, so the spike at step 30 and the NaN at step 200, both inside a
    sink, are in their points' intervals at their steps (the sinks driven as on a device: ``train_in_sinks``)."""
    set_mode("graph")
    net = dense_net()
    cell = MonitoredTrainCell(LossWithBump(net), nn.SGD(net.trainable_params(), learning_rate=0.05))
    sink_size, sinks = 150, 2
    bumps = [0.0] * (sink_size * sinks)
    bumps[29], bumps[199] = 1000.0, float("nan")
    monitor = TrainMonitor(str(tmp_path), collect_freq=10, batch_size=8)
    sized = []
    train_in_sinks(monitor, cell, bumps, sink_size, after_begin=lambda: sized.append(cell.tbms_steps.shape[0]))
    assert sized[0] >= sink_size
    assert monitor.errors == 0
    _, tensors = read_run(tmp_path)
    first, second = _interval(tensors, metadata.LOSS, 150), _interval(tensors, metadata.LOSS, 300)
    assert first["count"] == 150 and first["max"] > 1000 and first["nonfinite"] == 0
    assert second["count"] == 150 and second["nonfinite"] == 1 and second["max"] < 10


KERNELS = r"""
import glob, os, re, sys, tempfile
sys.path.insert(0, sys.argv[1])
os.environ["MS_DEV_SAVE_GRAPHS_PATH"] = sys.argv[2]
import mindspore as ms
from mindspore import nn
from mindspore.train import Model
ms.set_context(mode=ms.GRAPH_MODE, save_graphs=1)
import cost_models
from tb_mindspore_callbacks import MonitoredTrainCell, Storage, TrainMonitor


def kernels(seen):
    # The largest graph compiled since ``seen`` (the step; the others are small helper graphs).
    counts = {}
    for path in glob.glob(os.path.join(sys.argv[2], "**", "final_actor_set_kernel_graph_*.ir"), recursive=True):
        if path not in seen:
            with open(path) as f:
                counts[path] = sum(1 for line in f if re.match(r"%\d+ = kernel_graph\d*:", line))
    seen.update(counts)
    return max(counts.values())


seen = {}
net, loss_fn, opt = cost_models.parts("0.1m")
Model(nn.TrainOneStepCell(nn.WithLossCell(net, loss_fn), opt)).train(1, cost_models.dataset("0.1m", 2),
                                                                     dataset_sink_mode=False)
print("BARE", kernels(seen))
net, loss_fn, opt = cost_models.parts("0.1m")
monitor = TrainMonitor(tempfile.mkdtemp(), storage=Storage(registry=None))       # the defaults
Model(MonitoredTrainCell.wrap(net, loss_fn, opt)).train(1, cost_models.dataset("0.1m", 2), callbacks=[monitor],
                                                       dataset_sink_mode=False)
print("MONITORED", kernels(seen))
"""


def _step_kernels(tmp_path):
    """``{"BARE": n, "MONITORED": n}``: kernels of the 0.1M model's training step graph, bare and monitored."""
    out = warm.run([sys.executable, "-c", KERNELS, os.path.join(HERE, os.pardir, os.pardir, os.pardir, "bench"),
                    str(tmp_path / "graphs")], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    return {k: int(v) for k, v in (l.split() for l in out.stdout.splitlines() if l.startswith(("BARE ", "MONITORED ")))}


@pytest.mark.slow
def test_the_monitored_step_of_a_small_model_stays_within_mindspores_single_thread_limit(tmp_path):
    """MindSpore (``kSingleThreadExecutionActorMaxNum``) runs a step graph of more than 100 kernels on its actor
    threads, whatever it costs: on the 0.1M model that hand-off cost 2-3 ms a step, more than the step. The monitored
    step with the monitor's defaults (layers tracked, the flight recorder's ring) adds few kernels and stays under
    the line where the bare step is (63 kernels here; 112 when the statistics ran in the graph)."""
    counts = _step_kernels(tmp_path)
    assert counts["MONITORED"] <= 100 and counts["MONITORED"] - counts["BARE"] <= 25, counts


def test_newest_rows_come_oldest_first_and_stop_at_what_the_ring_holds():
    import numpy as np

    from tb_mindspore_callbacks.cells.flight_ring import newest_rows

    ring = np.array([[4.0], [5.0], [2.0], [3.0]])          # capacity 4, six rows written: rows 2..5 kept
    assert newest_rows(ring, 6, 3)[:, 0].tolist() == [3.0, 4.0, 5.0]
    assert newest_rows(ring, 6, 10)[:, 0].tolist() == [2.0, 3.0, 4.0, 5.0]    # no more than the ring holds
    assert newest_rows(ring[:, :], 2, 5)[:, 0].tolist() == [4.0, 5.0]          # no more than were written
    assert newest_rows(ring, 6, 0).shape == (0, 1) and newest_rows(ring, 6, -2).shape == (0, 1)
