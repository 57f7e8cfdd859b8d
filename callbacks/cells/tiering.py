"""Op by op first, compiled once that has cost about a compile: the rule for the monitors' own small graphs (weight
norms, the update ratio's snapshot and ratio) and the activation probe's blocks.

Compiling one of them costs far more than running it once op by op (two CPU cores: an 8-tensor MLP's weight norms
0.36 s to compile against 11 ms a call op by op and 0.4 ms compiled; the demo transformer's 1.3 s; the activation
and attention probes' blocks 7 s against 0.25 s a debug point op by op and 0.07 s compiled). A run that calls such a
graph a few times (the demo's 8 diagnostic and debug points, most short runs and tests) is better off never
compiling it, one that calls it thousands of times is better off compiling it at once, and neither is known in
advance. So each graph runs op by op for its first ``COMPILE_AFTER_CALLS`` calls or until they have taken
``COMPILE_AFTER_S`` seconds of wall time together, whichever comes first, and compiled from then on (the ski-rental
rule: a run pays at most that budget more than the better of the two choices would have cost it). A compile costs
25-150 op-by-op calls of the same graph here (the probes about 30, the weight norms 25-130, the update ratio's
snapshot about 35), so 20 calls compile a little early rather than late: a graph called at every step
(``Diagnostic(every=1)``) pays 20 cheap calls before its compile, not two seconds of them.
"""

import contextlib
import inspect
import time

from mindspore import nn

__all__ = ["COMPILE_AFTER_CALLS", "COMPILE_AFTER_S", "OpByOpFirst", "compile_time", "compiling", "due",
           "pynative"]

COMPILE_AFTER_CALLS = 20
COMPILE_AFTER_S = 2.0

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


class OpByOpFirst(nn.Cell):
    """A cell whose calls run its ``construct`` op by op (PYNATIVE_MODE, its ``mindspore.jit`` left out) until
    :func:`due`, and compiled from then on (in either mode). The same values either way."""

    op_by_op_calls = 0      # calls run op by op so far (per instance once set)
    op_by_op_s = 0.0        # their wall time together
    compiled = False        # True once a call ran compiled (the first such call compiled the cell)

    def __call__(self, *args):
        if due(self.op_by_op_calls, self.op_by_op_s):
            if self.compiled:
                return super().__call__(*args)
            with compiling():
                out = super().__call__(*args)
            self.compiled = True
            return out
        started = time.perf_counter()
        with pynative():
            out = inspect.unwrap(type(self).construct)(self, *args)
        self.op_by_op_s += time.perf_counter() - started
        self.op_by_op_calls += 1
        return out
