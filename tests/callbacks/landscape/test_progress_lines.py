"""Progress lines of the demo and of the loss landscape: never a zero or negative time left."""

import io

from tb_mindspore_callbacks import demo
from tb_mindspore_callbacks.landscape.run import Progress, time_left_text


def test_demo_time_left_never_says_zero():
    assert demo.time_left(65.2, 10.0, False) == "ETA 1:05"
    assert demo.time_left(0.0, 10.0, False) == "ETA under 1 s"
    assert demo.time_left(-3.0, 10.0, False) == "ETA under 1 s"
    assert demo.time_left(None, 1.0, False) == ""
    assert demo.time_left(0.0, 42.4, True) == "done in 0:42"


def test_landscape_time_left_never_says_zero():
    assert time_left_text(125.0, 10.0, False) == "about 2 min 05 s left"
    assert time_left_text(0.0004, 10.0, False) == "less than a second left"
    assert time_left_text(-1.0, 10.0, False) == "less than a second left"
    assert time_left_text(float("nan"), 0.0, False) == "time left unknown"
    assert time_left_text(0.0, 41.0, True) == "done in 41 s"


def test_landscape_progress_ends_with_done_not_zero_left():
    lines = []
    p = Progress(4, lines.append, stream=io.StringIO())
    p.start -= 10.0       # 10 s ago: every 10 % line is due
    for done in range(1, 5):
        p.update(done)
    assert lines and lines[-1].startswith("landscape: 4/4 points, done in "), lines
    assert not any("0.00 ms" in l or " 0 ms left" in l for l in lines), lines


def test_demo_progress_last_line_says_done():
    class Ctx:
        def __init__(self, step):
            self.cur_step_num = step
            self.net_outputs = None

    class RunContext:
        def __init__(self, step):
            self.args = Ctx(step)

        def original_args(self):
            return self.args

        def request_stop(self):
            pass

    out = io.StringIO()
    bar = demo._Progress("[x] run", 4, stream=out, lines=2)
    bar.on_train_begin(None)
    for step in range(1, 5):
        bar.on_train_step_end(RunContext(step))
    lines = out.getvalue().splitlines()
    assert lines[0] == "[x] run: compiling the training graph..."
    assert lines[-1].startswith("[x] run [########################] 4/4 steps") and "done in 0:00" in lines[-1], lines
    assert not any("ETA 0:00" in l for l in lines), lines
    assert len(lines) == 4, lines     # compiling, step 1, then 2 lines in all (50 %, 100 %)
