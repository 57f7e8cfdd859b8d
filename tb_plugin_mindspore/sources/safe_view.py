"""A logdir as TensorBoard's own Python loader may safely read it, for commands that load a whole logdir at once.

TensorBoard's loader blocks forever on a FIFO named like an event file, and raises ``MemoryError`` out of
``Reload`` on a record header claiming 2^60 bytes. :func:`problems` lists such files (``logdir_status``);
:func:`safe_view` yields the logdir itself when there are none, else a temporary folder with the same run folders
that holds symbolic links to the readable event files and, for a file with an impossible record length, a copy of
its records before that one. Nothing in the logdir is changed.
"""

import contextlib
import os
import shutil
import tempfile

from ..io import event_headers
from . import logdir_status


def problems(logdir):
    """``[{"file" (relative to logdir), "offset", "reason", "cut"}]``; ``cut`` is the byte offset to read up to
    (a record whose length breaks the loader), None for a file left out whole or only reported."""
    counts = logdir_status.scan(logdir)
    out = [{"file": os.path.relpath(path, logdir), "offset": None, "reason": reason, "cut": None}
           for path, reason in counts["hostile"]]
    scanner = event_headers.HeaderScanner(logdir, budget_s=30.0)
    for f in scanner.findings(counts["event_paths"]):
        fatal = "loaders cannot read past it" in f["reason"]
        out.append({"file": os.path.relpath(f["file"], logdir), "offset": f["offset"], "reason": f["reason"],
                    "cut": f["offset"] if fatal else None})
    return out


@contextlib.contextmanager
def safe_view(logdir, found=None):
    """Yields a folder to load instead of ``logdir`` (``logdir`` itself when nothing in it is hostile)."""
    found = problems(logdir) if found is None else found
    if not found:
        yield logdir
        return
    skip = {p["file"]: p for p in found}
    tmp = tempfile.mkdtemp(prefix="tb-mindspore-view-")
    try:
        for root, dirs, names in os.walk(logdir):
            dirs.sort()
            rel_root = os.path.relpath(root, logdir)
            for name in names:
                if not logdir_status.is_tf_event_file(name):
                    continue
                rel = os.path.normpath(os.path.join(rel_root, name))
                problem = skip.get(rel)
                if problem is not None and problem["cut"] is None and problem["offset"] is None:
                    continue              # a FIFO, socket, link loop: never opened
                dest = os.path.join(tmp, rel)
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                if problem is not None and problem["cut"] is not None:
                    with open(os.path.join(root, name), "rb") as src, open(dest, "wb") as out:
                        _copy_prefix(src, out, problem["cut"])
                else:
                    os.symlink(os.path.join(os.path.abspath(root), name), dest)
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy_prefix(src, out, length, chunk=8 << 20):
    left = length
    while left > 0:
        data = src.read(min(chunk, left))
        if not data:
            break
        out.write(data)
        left -= len(data)
