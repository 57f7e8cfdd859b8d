"""The monitors read nothing back from the device between collection points.

On Ascend the host dispatches steps ahead of the device; one host read of a device value per step (``asnumpy()``,
``float(t)``, ``t.item()``, a ``bool`` test, a runtime synchronize) would cost the pipeline that overlap. On CPU
the cost does not show, so it is counted: every host read of a MindSpore tensor and every explicit synchronisation
made from the monitors' code (a frame of ``tb_mindspore_callbacks`` on the stack) is attributed to the step in
flight, in both entry points and both modes, with the default tiers (core + diagnostic, live health, flight
recorder, rank statistics). Reads made by MindSpore's own ``Model.train`` are not counted: they happen without us.
"""

import sys
import threading

import numpy as np
import pytest

ms = pytest.importorskip("mindspore")
from mindspore import Tensor, nn  # noqa: E402
from mindspore.train import Callback, Model  # noqa: E402

from cb_helpers import classification_data, dense_net  # noqa: E402

COLLECT = 10
STEPS = 60
# Host reads at a collection point, whatever collect_freq is (measured: Model.train 2, the step ring and its count;
# the loop 6, with the kept losses stacked into one read). A read per kept loss would grow with collect_freq.
MAX_AT_POINT = 10
# Once, when training begins (measured 11: run info, the learning-rate configuration, the rings' counts, whether
# the cell already ran).
MAX_AT_START = 12
READS = ("asnumpy", "item", "__float__", "__int__", "__bool__", "tolist", "__array__", "__index__", "numpy")


class HostReads:
    """Counts host reads of tensors made from the monitors' code (main thread and helper threads alike), per step."""

    def __init__(self):
        self.step = 0
        self.by_step = {}
        self.where = {}
        self._saved = []

    def _ours(self):
        frame = sys._getframe(2)
        while frame is not None:
            name = frame.f_globals.get("__name__", "")
            if name.startswith("tb_mindspore_callbacks") or name.startswith("tb_plugin_mindspore"):
                return "%s:%d" % (name, frame.f_lineno)
            frame = frame.f_back
        return None

    def _wrap(self, owner, attr):
        original = getattr(owner, attr)
        counter = self

        def counted(*args, **kwargs):
            where = counter._ours()
            if where is not None:
                counter.by_step[counter.step] = counter.by_step.get(counter.step, 0) + 1
                counter.where.setdefault(counter.step, []).append("%s %s" % (attr, where))
            return original(*args, **kwargs)

        setattr(owner, attr, counted)
        self._saved.append((owner, attr, original))

    def __enter__(self):
        for attr in READS:
            if hasattr(Tensor, attr):
                self._wrap(Tensor, attr)
        for owner_name, attr in (("mindspore.runtime", "synchronize"), ("mindspore.hal", "synchronize")):
            owner = sys.modules.get(owner_name)
            if owner is not None and hasattr(owner, attr):
                self._wrap(owner, attr)
        return self

    def __exit__(self, *exc):
        for owner, attr, original in reversed(self._saved):
            setattr(owner, attr, original)

    def between_points(self, first_step):
        """Steps after warm-up that are not collection points and still had host reads from our code."""
        return {s: self.where[s] for s, n in self.by_step.items()
                if s > first_step and s % COLLECT != 0 and s != STEPS and n}


class StepClock(Callback):
    """First in the callback list: tells the counter which step is in flight."""

    def __init__(self, counter):
        self.counter = counter

    def on_train_step_begin(self, run_context):
        self.counter.step = run_context.original_args().cur_step_num  # counted from 1 before this hook runs


def _assert_quiet(counter):
    assert threading.current_thread() is threading.main_thread()
    leaks = counter.between_points(first_step=2)
    assert not leaks, "host reads between collection points: %s" % leaks
    points = {s: n for s, n in counter.by_step.items() if s % COLLECT == 0 and s > 0}
    assert points, "no host read at any collection point: the counter saw nothing"
    assert max(points.values()) <= MAX_AT_POINT, counter.where
    assert counter.by_step.get(0, 0) <= MAX_AT_START, counter.where


@pytest.mark.slow
def test_model_train_reads_nothing_between_points(tmp_path, mode):
    from tb_mindspore_callbacks import MonitoredTrainCell, TrainMonitor

    net = dense_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)
    model = Model(MonitoredTrainCell.wrap(net, loss_fn, opt))
    with HostReads() as counter:
        monitor = TrainMonitor(str(tmp_path / "run"), collect_freq=COLLECT)
        model.train(1, classification_data(STEPS), callbacks=[StepClock(counter), monitor], dataset_sink_mode=False)
    _assert_quiet(counter)


@pytest.mark.parametrize("update", ["mon.update", "optimizer"])
@pytest.mark.slow
def test_loop_reads_nothing_between_points(tmp_path, mode, update):
    from tb_mindspore_callbacks import LoopMonitor

    net = dense_net()
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), learning_rate=0.05, momentum=0.9)

    def forward(x, y):
        return loss_fn(net(x), y)

    grad_fn = ms.value_and_grad(forward, None, opt.parameters)
    if mode == "graph":
        grad_fn = ms.jit(grad_fn)
    data = list(classification_data(STEPS).create_tuple_iterator())
    with HostReads() as counter:
        with LoopMonitor(str(tmp_path / "run"), opt, network=net, collect_freq=COLLECT) as mon:
            for i, (x, y) in enumerate(data):
                counter.step = i + 1
                loss, grads = grad_fn(x, y)
                if update == "mon.update":
                    mon.update(grads)
                else:
                    opt(grads)
                mon.step(loss, grads)
    _assert_quiet(counter)
    assert np.isfinite(float(loss.asnumpy()))
