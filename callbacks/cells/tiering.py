"""Op by op first, compiled once that has cost about a compile: the rule for the monitors' own small graphs (weight
norms, the update ratio's snapshot and ratio) and the activation probe's blocks.

Compiling one of them costs far more than running it once op by op (two CPU cores: the demo transformer's weight
norms 1.3 s to compile, about 10 ms a call op by op; the activation and attention probes' blocks 7 s against 0.25 s
a debug point), and a compiled call is cheaper than an op-by-op one. A run that calls such a graph a few times (the
demo's 8 diagnostic and debug points, most short runs and tests) is better off never compiling it, one that calls it
thousands of times is better off compiling it at once, and neither is known in advance. So each graph runs op by op
until those calls have taken ``COMPILE_AFTER_S`` seconds of wall time together, and compiled from then on (the
ski-rental rule: a run pays at most that budget more than the better of the two choices would have cost it).
"""

import contextlib
import inspect
import time

from mindspore import nn

__all__ = ["COMPILE_AFTER_S", "OpByOpFirst", "pynative"]

COMPILE_AFTER_S = 2.0


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
    """A cell whose calls run its ``construct`` op by op (PYNATIVE_MODE, its ``mindspore.jit`` left out) until they
    have taken ``COMPILE_AFTER_S`` together, and compiled from then on (in either mode). The same values either way.
    """

    op_by_op_s = 0.0        # wall time of the calls run op by op so far (per instance once set)

    def __call__(self, *args):
        if self.op_by_op_s >= COMPILE_AFTER_S:
            return super().__call__(*args)
        started = time.perf_counter()
        with pynative():
            out = inspect.unwrap(type(self).construct)(self, *args)
        self.op_by_op_s += time.perf_counter() - started
        return out
