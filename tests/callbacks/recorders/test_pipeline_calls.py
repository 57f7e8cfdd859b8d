"""The pipeline calls a recorder's hook only when the recorder defines it (an ordinary step then makes no call for
nothing), worked out once per list of recorders; hooks set on an instance and recorders of their own kind count."""

import pytest

pytest.importorskip("mindspore")

from tb_mindspore_callbacks.recorders import MonitorSettings, Pipeline, Recorder  # noqa: E402


class Counting(Recorder):
    name = "counting"

    def __init__(self):
        self.calls = []

    def on_step(self, record):
        self.calls.append(("on_step", record))


class Quiet(Recorder):
    name = "quiet"


class Waiting(Recorder):
    name = "waiting"
    wants_step_begin = True


def test_hooks_go_to_the_recorders_that_define_them(tmp_path):
    pipeline = Pipeline(MonitorSettings(str(tmp_path)), lambda s: [])
    counting, quiet, waiting = Counting(), Quiet(), Waiting()
    pipeline.recorders = [counting, quiet, waiting]
    assert pipeline._subscribers("on_step") == [counting]
    assert pipeline._subscribers("on_interval") == []
    # on_step_begin: only recorders that ask for it and define it; wants_step_begin alone still asks for the
    # data wait (step_begin is called).
    assert pipeline._subscribers("on_step_begin") == []
    assert pipeline.wants_step_begin
    pipeline._call("on_step", 7)
    assert counting.calls == [("on_step", 7)]

    # A hook set on one instance counts; a new list of recorders is looked at again.
    seen = []
    quiet.on_interval = seen.append
    pipeline.recorders = [counting, quiet]
    assert pipeline._subscribers("on_interval") == [quiet]
    assert not pipeline.wants_step_begin
    pipeline._call("on_interval", 3)
    assert seen == [3]

    # A failing hook is counted, never raised.
    def broken(record):
        raise RuntimeError("boom")

    counting.on_step = broken
    pipeline.recorders = [counting]
    pipeline._call("on_step", 1)
    assert pipeline.errors == 1
