"""One warning per fault: every writer of a run (event files, per-rank statistics, the experiments registry) that
cannot write reports through :func:`report`, and a fault is warned about once: a full disk or a read-only folder
stops several writers of a run at once, but the user reads one line.

A fault is the error's kind (its ``errno``: no space left, read-only file system, permission denied, ...), the
file system it happened on (the device of the nearest existing folder above the path) and the run it hit (its run
folder, ``scope``): the writers of one run stopped by one full disk are one fault; another run is another.
"""

import errno as errno_module
import logging
import os
import threading

logger = logging.getLogger("tb_plugin_mindspore.writer")

_lock = threading.Lock()
_seen = {}          # fault -> how many writers hit it


def _device(path):
    """The device of the nearest existing folder at or above ``path`` (None for a URL or when nothing exists)."""
    path = os.path.abspath(str(path))
    while True:
        try:
            return os.stat(path).st_dev
        except OSError:
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent


def fault_of(path, error, scope=None):
    """The fault ``error`` (an exception raised writing ``path`` for the run in ``scope``) is: ``(errno or error
    type, device or path, scope)``."""
    code = getattr(error, "errno", None)
    where = None if "://" in str(path) else _device(path)
    return (code if code is not None else type(error).__name__, where if where is not None else str(path),
            os.path.abspath(str(scope)) if scope is not None and "://" not in str(scope) else scope)


def report(path, error, what, scope=None):
    """Warns about ``error`` writing ``path`` (``what`` stopped: "writing <file>", "rank 0 statistics") the first
    time its fault happens to the run in ``scope`` (its run folder); later writers stopped by the same fault are
    only counted (and logged at debug level). Returns True when this call warned."""
    fault = fault_of(path, error, scope)
    with _lock:
        count = _seen.get(fault, 0)
        _seen[fault] = count + 1
    if count:
        logger.debug("tb-mindspore: %s stopped too (%s)", what, error)
        return False
    extra = ""
    if getattr(error, "errno", None) in (errno_module.ENOSPC, errno_module.EROFS, errno_module.EACCES,
                                         errno_module.EDQUOT, errno_module.EFBIG):
        extra = " (and every other monitoring file on this file system)"
    logger.warning("tb-mindspore: stopped %s%s (%s); training continues without monitoring", what, extra, error)
    return True


def count(path, error, scope=None):
    """How many writers the fault of ``error`` at ``path`` stopped so far (tests)."""
    with _lock:
        return _seen.get(fault_of(path, error, scope), 0)
