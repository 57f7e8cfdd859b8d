"""The one door for a logdir's points (``sources.logdir.Sources``): every door answers the same series with its
band by name, the event store's door keeps every point and the restart, the token follows new points and the door,
and the listings name the runs the tab lists."""

import time

import numpy as np
import pytest
from tensorboard import context as tb_context

from tb_plugin_mindspore.contract import interval as interval_contract
from tb_plugin_mindspore.sources import event_series
from tb_plugin_mindspore.sources.logdir import EVENTS, PROVIDER, Sources, load_provider
from tb_plugin_mindspore.writing.writer import SummaryWriter

LOSS = "core/loss"


def _write(run_dir, steps, offset=0.0):
    """One event file of ``core/loss`` at ``steps`` with its interval band (max = value + 1)."""
    w = SummaryWriter(str(run_dir))
    for s in steps:
        w.scalar(LOSS, 1.0 / s + offset, s)
        w.interval(LOSS, 0.5 / s, 1.0 / s, 1.0 / s + 1.0, 10, 0, s)
    w.close()
    time.sleep(1.1)   # the next file gets a later name (event file names hold the second)


@pytest.fixture
def resumed(tmp_path):
    """A run written to step 20, then resumed from step 11 (a second event file) with other values."""
    _write(tmp_path / "run", range(1, 21))
    _write(tmp_path / "run", range(11, 31), offset=5.0)
    return tmp_path


def _door(logdir, with_events):
    events = None
    if with_events:
        events = event_series.EventSeries(str(logdir))
        events.want("run")
        while events.sync("run", wait=None):
            pass
    return Sources(load_provider(str(logdir)), str(logdir), events=events).bind(tb_context.RequestContext(), "")


def test_the_event_store_door_answers_the_final_timeline_with_its_restart_and_named_band(resumed):
    door = _door(resumed, with_events=True)
    assert door.runs() == ["run"]
    assert door.token("run", LOSS).door.name == EVENTS
    series = door.series("run", LOSS)
    assert series.steps.tolist() == list(range(1, 31))                 # no step twice, no going back
    np.testing.assert_allclose(series.values[:10], [1.0 / s for s in range(1, 11)], rtol=1e-6)
    np.testing.assert_allclose(series.values[10:], [1.0 / s + 5 for s in range(11, 31)], rtol=1e-6)
    [restart] = series.restarts
    assert restart["step"] == 11 and restart["superseded_points"] == 10
    [lost] = series.superseded()
    assert lost.steps.tolist() == list(range(11, 21))
    band = series.band
    assert isinstance(band, interval_contract.IntervalTable) and band.steps.tolist() == list(range(1, 31))
    np.testing.assert_allclose(band.max, [1.0 / s + 1 for s in range(1, 31)], rtol=1e-6)
    assert band.count.tolist() == [10] * 30


def test_the_provider_door_answers_every_point_it_holds_with_the_same_band(resumed):
    door = _door(resumed, with_events=False)
    assert door.token("run", LOSS).door.name == PROVIDER
    series = door.series("run", LOSS)
    assert series.steps.size == 40 and series.restarts == []          # TensorBoard's loader keeps both files' points
    stored = _door(resumed, with_events=True).series("run", LOSS).band
    # Both doors name the band's fields the same way; the provider holds every row the files hold.
    assert set(series.band.steps.tolist()) == set(stored.steps.tolist())
    assert series.band._fields == stored._fields == ("steps",) + interval_contract.FIELDS


def test_the_token_follows_new_points_and_unknown_series_have_none(resumed):
    door = _door(resumed, with_events=False)
    before = door.token("run", LOSS)
    assert door.token("run", "core/nope") is None and door.token("nope", LOSS) is None
    assert door.series("run", "core/nope") is None
    _write(resumed / "run", [31])
    after = _door(resumed, with_events=False).token("run", LOSS)
    assert (before.step, after.step) == (30, 31) and before != after
    assert door.many("run", [LOSS, "core/nope"]).keys() == {LOSS}


@pytest.mark.parametrize("interval", [0, -1])
def test_load_once_reads_a_wanted_run_and_then_sleeps(resumed, interval):
    """``--reload_interval 0`` (TensorBoard: load once) or negative: the event store's thread reads a run when it is
    wanted and then waits; it once turned such an interval into a loop that never slept (a core spent for good)."""
    events = event_series.EventSeries(str(resumed))
    events.start(interval=interval)
    try:
        events.want("run")
        deadline = time.time() + 30
        while not events.caught_up("run") and time.time() < deadline:
            time.sleep(0.05)
        assert events.series("run", LOSS) is not None and events.caught_up("run")
        start = time.process_time()   # this thread sleeps: what the process spends now is the store's thread
        time.sleep(1.0)
        assert time.process_time() - start < 0.2, "the store's thread kept working while nothing changed"
    finally:
        events.stop()
