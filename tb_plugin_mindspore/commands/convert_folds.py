"""``tb-mindspore convert --fold-event-files``: event-file runs written as several folders, written back as one run.

The folders that one training writes (``sources/run_fold.py``: rotated ``<run>/part_N`` folders; tensorboardX's
add_scalars key folders ``<run>/<main_tag>/<key>/`` holding the tag ``main_tag``) are listed by TensorBoard's own
tabs as runs of their own. This writes, for each run made of several folders, one folder ``OUT/<run>/`` holding a
copy of every member's event files, in order, with a key folder's tag renamed ``<main_tag>/<key>``: TensorBoard's
own tabs then show one run with every head or expert as a tag. Runs of one folder are left where they are (point
TensorBoard at both, e.g. ``--logdir_spec``). Records are copied as they are (a damaged one is skipped and counted);
each output file is written whole again on every call, so the call can be repeated as the training goes on.
"""

import os

from ..io import records
from ..sources import run_fold


def event_folders(logdir, skip=None):
    """``{run name: [event file names]}`` of the folders under a local ``logdir`` holding event files."""
    out = {}
    skip = os.path.realpath(skip) if skip else None
    for root, dirs, names in os.walk(logdir):
        dirs.sort()
        if skip and os.path.realpath(root) == skip:
            dirs[:] = []
            continue
        files = sorted(n for n in names if "tfevents" in n)
        if files:
            out[os.path.relpath(root, logdir).replace(os.sep, "/")] = files
    return out


def _events(path):
    """The events of one file (records that do not parse are skipped); yields ``(Event, ok)``."""
    from tensorboard.compat.proto import event_pb2

    with open(path, "rb") as f:
        data = f.read()
    for _, _, payload in records.read_records(data):
        if payload is None:
            yield None, False
            continue
        try:
            yield event_pb2.Event.FromString(payload), True
        except Exception:
            yield None, False


def _scalar_tags(logdir, run, files):
    tags = set()
    for name in files:
        for event, ok in _events(os.path.join(logdir, run, name)):
            if ok and event.HasField("summary"):
                tags.update(v.tag for v in event.summary.value)
            if len(tags) > 1:
                return tags
    return tags


def fold_event_files(logdir, out):
    """Writes the runs of several folders under ``logdir`` into ``out`` (module doc). Returns
    ``{"runs": {run: [member folder, ...]}, "files": int, "events": int, "skipped_records": int}``."""
    folders = event_folders(logdir, skip=out)
    physical = {run: _scalar_tags(logdir, run, files) for run, files in folders.items()}
    fold = run_fold.RunFold({r: (t if len(t) == 1 else ()) for r, t in physical.items()})
    result = {"runs": {}, "files": 0, "events": 0, "skipped_records": 0}
    for logical in fold.logical_runs():
        if not fold.folded(logical):
            continue
        members = fold.members[logical]
        result["runs"][logical] = [m.run for m in members]
        target = os.path.join(out, logical if logical != "." else "")
        os.makedirs(target, exist_ok=True)
        for index, member in enumerate(members):
            for name in folders.get(member.run, ()):
                frames = []
                for event, ok in _events(os.path.join(logdir, member.run, name)):
                    if not ok:
                        result["skipped_records"] += 1
                        continue
                    if member.main_tag is not None and event.HasField("summary"):
                        for value in event.summary.value:
                            if value.tag == member.main_tag:
                                value.tag = member.main_tag + "/" + member.key
                                if value.HasField("metadata") and value.metadata.display_name:
                                    value.metadata.display_name = value.tag
                    frames.append(records.frame(event.SerializeToString()))
                    result["events"] += 1
                # member order first in the name: TensorBoard reads a folder's files in name order
                out_name = "%s.fold_%05d_%s" % (name, index, member.run.replace("/", "__"))
                with open(os.path.join(target, out_name), "wb") as f:
                    f.write(b"".join(frames))
                result["files"] += 1
    return result
