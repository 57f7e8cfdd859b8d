"""A watchdog for training with MindSpore's ``SummaryCollector`` / ``SummaryRecord`` inside the test process.

``SummaryRecord`` forks a writer pool from the (multi-threaded) test process; now and then one of the pool's workers
hangs on a lock when the pool is terminated at close, and ``Model.train`` waits for it forever (MindSpore's bug, in
the pool's own termination). :func:`unblock_summary_writers` kills the children this process started inside the
block after ``limit`` seconds, which lets ``Model.train`` return; by then the pool has written its data, and the test
judges what is on disk. Children that existed before the block (the session's browser driver and Chromium, a
TensorBoard server) are left alone.
"""

import contextlib
import threading


@contextlib.contextmanager
def unblock_summary_writers(limit=120.0):
    import psutil

    done = threading.Event()
    before = {c.pid for c in psutil.Process().children(recursive=True)}

    def watch():
        if done.wait(limit):
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
        yield
    finally:
        done.set()
        thread.join()
