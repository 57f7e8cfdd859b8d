"""Op by op first, compiled once that would pay: the rule for the activation and attention probes' blocks
(``activations.py``), and the count of the time their deferred compiles took.

Compiling the probed blocks costs far more than probing once op by op (two CPU cores, the demo transformer: 7 s
against 0.25 s a debug point op by op and 0.07 s compiled). A run that probes a few times (the demo's 8 debug
points, most short runs and tests) is better off never compiling them, one that probes thousands of times is better
off compiling at once, and neither is known in advance. So a probe runs op by op for its first
``COMPILE_AFTER_CALLS`` passes or until they have taken ``COMPILE_AFTER_S`` seconds of wall time together, whichever
comes first, and compiled from then on (the ski-rental rule: a run pays at most that budget more than the better of
the two choices would have cost it; a compile costs about 20-30 op-by-op passes here, so 20 compile a little early
rather than late). The seconds are a cap for a model whose passes are slow, at about what compiling the demo's
blocks costs (each probe: 3.3-4.7 s against 0.16-0.28 s a pass op by op, idle). At 2 s the demo's 8 debug points
came close to the cap on an idle machine and passed it under load: in the test suite both probes of both its runs
compiled, for one or two passes each (19 s of CPU).

The monitors' reduction graphs (weight norms, the update ratio's snapshot and ratio) compile at their first call:
op by op they cost 10-25 ms of CPU a call on a small model against 0.4 ms compiled (MindSpore's PYNATIVE dispatch
is about 0.5 ms an operator here), more than a small model's steps when they run at every point, and a healthy
run's ``monitoring_overhead`` warned on it.
"""

import contextlib
import time

__all__ = ["COMPILE_AFTER_CALLS", "COMPILE_AFTER_S", "compile_time", "compiling", "due", "pynative"]

COMPILE_AFTER_CALLS = 20
COMPILE_AFTER_S = 5.0

# Wall and calling-thread CPU seconds of the calls that compiled one of these graphs, in this process.
_COMPILES = [0.0, 0.0]


def compile_time():
    """``(wall, cpu)``: seconds the calls that compiled a monitoring graph took so far in this process (CPU time of
    the calling thread): one-off time that the monitor keeps out of the recording's cost (core/compile_ms)."""
    return tuple(_COMPILES)


def due(calls, seconds):
    """Whether a graph called op by op ``calls`` times, taking ``seconds`` of wall time together, is compiled now."""
    return calls >= COMPILE_AFTER_CALLS or seconds >= COMPILE_AFTER_S


@contextlib.contextmanager
def compiling():
    """Counts the block's time in :func:`compile_time` (a call that compiles a monitoring graph)."""
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        yield
    finally:
        _COMPILES[0] += time.perf_counter() - wall
        _COMPILES[1] += time.thread_time() - cpu


@contextlib.contextmanager
def pynative():
    """PYNATIVE_MODE for the duration of the block; the global mode is switched back after it."""
    import mindspore as ms

    mode = ms.get_context("mode")
    if mode != ms.PYNATIVE_MODE:
        ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        yield
    finally:
        if mode != ms.PYNATIVE_MODE:
            ms.set_context(mode=mode)
