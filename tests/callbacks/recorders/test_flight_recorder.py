"""The flight recorder on real trainings: a 4-layer MLP whose layer 3 gets a NaN / huge gradient at step S.

Checked in GRAPH_MODE and PYNATIVE_MODE, through ``Model.train`` + ``TrainMonitor`` and the hand-written loop +
``LoopMonitor`` (every combination for the NaN; the others in the modes that cover their code paths): the ring on the device holds each step's per-layer gradient norms; when the
anomaly fires, the dumped window (``debug/flight/*``) holds the steps before S at their real steps, the finding names
layer 3 and step S, and the debug tier records every step for the next N steps; a healthy run writes no flight tag.
"""


import numpy as np
import pytest

from cb_helpers import read_run, run_info, set_mode
from flight_nets import dataset, layer3_name, parts, train_loop

from mindspore.train import Callback, Model

from tb_plugin_mindspore import metadata
from tb_plugin_mindspore.writing.writer import SummaryWriter
from tb_mindspore_callbacks import LoopMonitor, MonitoredTrainCell, TrainMonitor
from tb_mindspore_callbacks.recorders.flight_origin import ring_rows
from tb_mindspore_callbacks.recorders.flight_recorder import FlightRecorder, parse_flight_steps

K, N, COLLECT = 6, 4, 5


@pytest.fixture
def in_mode(request):
    """``mode`` for tests parametrized on it explicitly (not every combination runs)."""
    set_mode(request.param)
    yield request.param
    set_mode("graph")


def layer_indices(optimizer):
    return [i for i, p in enumerate(optimizer.parameters) if len(p.shape) >= 2]


class _EveryStep(Callback):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def on_train_step_end(self, run_context):
        self.fn(int(run_context.original_args().cur_step_num))


@pytest.mark.slow
def test_ring_keeps_each_steps_layer_norms_at_their_steps(mode):
    _, with_loss, opt = parts()
    cell = MonitoredTrainCell(with_loss, opt)
    assert cell.track_flight(layer_indices(opt), 8)
    assert cell.track_flight(layer_indices(opt), 5)          # a smaller ring asked later: the one there is kept
    truth = {}
    Model(cell).train(1, dataset(12), callbacks=[_EveryStep(lambda s: truth.setdefault(s, cell.layer_grad_norms()))],
                      dataset_sink_mode=False)
    rows, count = cell.flight_ring()
    assert count == 12 and rows.shape == (8, 4)
    order, back = ring_rows(count, rows.shape[0])
    assert (12 - back).tolist() == list(range(5, 13))
    np.testing.assert_allclose(rows[order], np.stack([truth[s] for s in range(5, 13)]), rtol=1e-6)


@pytest.mark.parametrize("in_mode", ["graph"], indirect=True)
@pytest.mark.slow
def test_recorder_names_layer3_and_step_from_the_ring(in_mode, tmp_path):
    """The recorder alone on a MonitoredTrainCell (its own trigger): dump, origin, debug tier after."""
    bad = 14
    _, with_loss, opt = parts()
    cell = MonitoredTrainCell(with_loss, opt)
    names = [opt.parameters[i].name for i in layer_indices(opt)]
    params = [opt.parameters[i] for i in layer_indices(opt)]
    recorder = FlightRecorder(steps=K, debug_steps=N)
    writer = SummaryWriter(str(tmp_path))
    assert recorder.begin(cell, layer_indices(opt), names, params, COLLECT, 0)
    events = []

    def each(step):
        recorder.step_end(step, writer)
        if step % COLLECT == 0:
            event = recorder.check(step, writer)
            if event is not None:
                events.append(event)

    Model(cell).train(1, dataset(25, bad), callbacks=[_EveryStep(each)], dataset_sink_mode=False)
    writer.close()
    (event,) = events                                        # the NaN that stays in the weights fires once
    assert event["step"] == 15 and event["first_step"] == bad and event["layers"] == [layer3_name(opt)]
    assert event["rule"] == "nonfinite" and "started in layer %s at step %d" % (layer3_name(opt), bad) in event["message"]
    _, tensors = read_run(tmp_path)
    flight = dict(tensors[metadata.FLIGHT_GRAD_NORM_LAYERS])
    assert sorted(flight) == list(range(15 - K - COLLECT + 1, 16))       # the ring: K + COLLECT steps
    assert set(range(bad - K, bad)) < set(flight)
    nonfinite = dict(tensors[metadata.FLIGHT_NONFINITE_LAYERS])
    assert nonfinite[bad].tolist() == [1.0, 1.0, 1.0, 0.0] and not nonfinite[bad - 1].any()
    assert np.isfinite(flight[bad - 1]).all()
    # the debug tier, every step after the detection for N steps
    assert [s for s, _ in tensors[metadata.GRAD_NORM_LAYERS]] == list(range(16, 16 + N))
    assert [s for s, _ in tensors[metadata.UPDATE_RATIO_LAYERS]] == list(range(16, 16 + N))


def test_flight_recorder_option_is_validated():
    assert parse_flight_steps(None) == parse_flight_steps(0) == parse_flight_steps(False) == 0
    assert parse_flight_steps(100) == 100
    for bad in (-1, 2.5, True, "100"):
        with pytest.raises(ValueError, match="flight_recorder must be an int >= 1"):
            parse_flight_steps(bad)
    with pytest.raises(ValueError, match="flight steps must be an int >= 1"):
        FlightRecorder(steps=0)
    with pytest.raises(ValueError, match="flight spike_factor must be a finite number > 1"):
        FlightRecorder(spike_factor=1.0)
    with pytest.raises(ValueError, match="flight_recorder must be an int >= 1"):
        TrainMonitor("unused", flight_recorder=-5)
    assert TrainMonitor("unused", flight_recorder=None).settings.flight_recorder == 0


# -- through the monitors: live health fires, the flight recorder answers -----------------------------------------
def _train(entry, logdir, steps, bad=None, value=float("nan"), default=False):
    """One run of the MLP with the flight recorder (K steps, debug tier N steps after; ``default``: the monitors'
    own, 100 and 50); returns the optimizer (for the layer names)."""
    _, with_loss, opt = parts()
    kwargs = dict(collect_freq=COLLECT, registry=None)
    if not default:
        kwargs.update(flight_recorder=0, recorders=[FlightRecorder(steps=K, debug_steps=N)])
    if entry == "model":
        monitor = TrainMonitor(str(logdir), **kwargs)
        Model(MonitoredTrainCell(with_loss, opt)).train(1, dataset(steps, bad, value), callbacks=[monitor],
                                                        dataset_sink_mode=False)
    else:
        with LoopMonitor(str(logdir), opt, **kwargs) as monitor:
            train_loop(monitor, with_loss, opt, dataset(steps, bad, value))
    return opt


def _events(tensors):
    out = []
    for _, value in tensors.get(metadata.HEALTH_EVENT, []):
        raw = value.reshape(-1)[0] if value.shape else value.item()
        out.append(metadata.decode_health_event(raw.decode("utf-8") if isinstance(raw, bytes) else raw))
    return out


@pytest.mark.parametrize("in_mode", ["graph", "pynative"], indirect=True)
@pytest.mark.parametrize("entry", ["model", "loop"])
@pytest.mark.slow
def test_nan_in_layer3_is_dumped_named_and_followed_by_debug(in_mode, entry, tmp_path):
    bad, steps = 14, 20
    opt = _train(entry, tmp_path, steps, bad)
    _, tensors = read_run(tmp_path)
    event = [e for e in _events(tensors) if e["rule"] == "nonfinite"][0]
    detected = event["step"]
    assert detected == 15                                   # the core point after the NaN
    assert event["first_step"] == bad and event["layers"] == [layer3_name(opt)]
    assert layer3_name(opt) in event["message"]
    flight = dict(tensors[metadata.FLIGHT_GRAD_NORM_LAYERS])
    # the ring's K + COLLECT steps up to the detection (a later event for the NaN still in the weights adds the
    # steps after it)
    assert set(range(detected - K - COLLECT + 1, detected + 1)) <= set(flight)
    assert min(flight) == detected - K - COLLECT + 1
    nonfinite = dict(tensors[metadata.FLIGHT_NONFINITE_LAYERS])
    assert nonfinite[bad].tolist() == [1.0, 1.0, 1.0, 0.0]
    assert not any(nonfinite[s].any() for s in range(bad - K, bad))
    boosted = list(range(detected + 1, detected + N + 1))
    assert [s for s, _ in tensors[metadata.GRAD_NORM_LAYERS]] == boosted
    assert [s for s, _ in tensors[metadata.UPDATE_RATIO_LAYERS]] == boosted
    if (in_mode, entry) == ("graph", "model"):
        _check_heatmaps(tmp_path, opt, bad, detected)


def _check_heatmaps(logdir, opt, bad, detected):
    """The tab lists the flight window in the debug tier and serves it as a layer heatmap (real TensorBoard)."""
    import time

    from tb_harness import App
    from tb_plugin_mindspore.answers import encode

    app = App(logdir)
    try:
        app.wait_for_runs(["."])
        deadline = time.monotonic() + 60
        while True:
            debug = {e["tag"]: e for e in app.plugin("/tags")["runs"]["."]["debug"]}
            if metadata.FLIGHT_NONFINITE_LAYERS in debug or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert debug[metadata.FLIGHT_GRAD_NORM_LAYERS]["kind"] == "layers"
        assert debug[metadata.FLIGHT_NONFINITE_LAYERS]["layers"] == 4
        body = app.plugin("/layers", run=".", tag=metadata.FLIGHT_GRAD_NORM_LAYERS)
        assert layer3_name(opt) in body["layers"] and detected in body["steps"]
        values, missing = encode.decode_bf16_planes_b64(body["values"], body["shape"])
        column = body["steps"].index(bad)
        row = body["layers"].index(layer3_name(opt))
        assert np.isnan(values[row, column]) and np.isfinite(values[row, column - 1]) and not missing.any()
    finally:
        app.close()


@pytest.mark.parametrize("in_mode", ["graph"], indirect=True)
@pytest.mark.slow
def test_huge_gradient_in_layer3_names_the_spike(in_mode, tmp_path):
    bad, steps = 32, 38
    opt = _train("model", tmp_path, steps, bad, value=1e6)
    _, tensors = read_run(tmp_path)
    event = _events(tensors)[0]           # the explosion, merged with the NaN loss that follows it at 33
    assert event["step"] == 35 and event["first_step"] == bad and event["layers"] == [layer3_name(opt)]
    assert "started in layer %s at step %d (gradient norm" % (layer3_name(opt), bad) in event["message"]
    assert set(range(bad - K, 36)) <= {s for s, _ in tensors[metadata.FLIGHT_GRAD_NORM_LAYERS]}


@pytest.mark.parametrize("in_mode,entry", [("graph", "model"), ("pynative", "loop")], indirect=["in_mode"])
@pytest.mark.slow
def test_healthy_run_writes_no_flight_tags(in_mode, entry, tmp_path):
    _train(entry, tmp_path, 30, default=True)
    _, tensors = read_run(tmp_path)
    info = run_info(tensors)[1]["flight_recorder"]
    assert info["active"] and info["steps"] == 100 and info["capacity"] == 100 + COLLECT
    assert metadata.FLIGHT_GRAD_NORM_LAYERS not in tensors and metadata.FLIGHT_NONFINITE_LAYERS not in tensors
    assert metadata.GRAD_NORM_LAYERS not in tensors and not _events(tensors)
