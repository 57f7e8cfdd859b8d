"""A watchdog for training with MindSpore's ``SummaryCollector`` / ``SummaryRecord`` inside the test process.

``SummaryRecord`` forks a writer pool from the (multi-threaded) test process; now and then one of the pool's workers
hangs on a lock when the pool is terminated at close, and ``Model.train`` waits for it forever (MindSpore's bug, in
the pool's own termination). :func:`unblock_summary_writers` kills the children this process started inside the
block soon after training has ended (or after ``limit`` seconds), which lets ``Model.train`` return; by then the
pool has written its data, and the test judges what is on disk. Children that existed before the block (the
session's browser driver and Chromium, a TensorBoard server) are left alone.
"""

import contextlib
import threading
import time


@contextlib.contextmanager
def unblock_summary_writers(limit=120.0, after_train_end=10.0):
    """Yields a MindSpore callback to list *before* ``SummaryCollector``: its ``on_train_end`` marks the end of
    training, and the children are killed ``after_train_end`` seconds after it (the pool's close takes well under a
    second when it does not hang), or ``limit`` seconds after the block began, whichever comes first."""
    import psutil
    from mindspore.train import Callback

    done = threading.Event()
    ended = []
    before = {c.pid for c in psutil.Process().children(recursive=True)}
    start = time.monotonic()

    class TrainEnd(Callback):
        def on_train_end(self, run_context):
            ended.append(time.monotonic())

    def due():
        now = time.monotonic()
        return now - start >= limit or (ended and now - ended[0] >= after_train_end)

    def watch():
        while not due():
            if done.wait(0.2):
                return
        for child in psutil.Process().children(recursive=True):
            if child.pid in before:
                continue
            try:
                child.kill()
            except psutil.Error:
                pass

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    try:
        yield TrainEnd()
    finally:
        done.set()
        thread.join()
