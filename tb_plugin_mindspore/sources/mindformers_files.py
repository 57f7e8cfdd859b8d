"""mindformers' own files beside its TensorBoard output, read onto the run's step axis.

mindformers (MindSpore Transformers) writes, next to ``<output>/tensorboard/rank_<k>/``:

* ``<output>/abnormal_global_norm.json``: ``{"<step>": [global norm, ...]}``, the steps where the global gradient
  norm reached ``global_norm_spike_threshold`` (``TrainingStateMonitor(check_for_global_norm=True)``); at the first
  one mindformers stops the training (``TREError``).
* ``<output>/health_ckpts.json``: ``[{"is_health": 0 | n, "ckpt_name": "<prefix>-<epoch>_<step in epoch>.ckpt"}]``
  (``CheckpointMonitor(use_checkpoint_health_monitor=True)``). **0 means healthy**; any other number counts the
  unhealthy data (mindformers' ``resume_ckpt.checkpoint_health_monitor``).
* ``<output>/checkpoint/rank_<k>/meta.json``: ``{"last_epoch", "last_step" (in the epoch), "last_ckpt_file"}``, the
  newest checkpoint (written after each save, and after the last one at the end of training).
* its log (``--mindspore_mindformers_log PATH`` or a ``*.log`` file in the run folder): the PyNative trainer's
  JSON-like records (per-parameter norms, tokens per expert, max attention logits), see ``mindformers_log.py``.

They are looked for in the run folder and in its two parent folders (``rank_<k>`` -> ``tensorboard`` -> the output
folder), by these fixed names only; the output folder's two files (written by rank 0) belong to the run of rank 0. Each file is read whole up to ``MAX_FILE_BYTES``; a larger, malformed or
unreadable file is left out and named in :attr:`MindformersFiles.problems` (``{"file", "offset", "reason"}``, as
the status route lists every hostile file), never raised.
"""

import json
import os
import re

MAX_FILE_BYTES = 16 << 20
MAX_ENTRIES = 100000
ABNORMAL = "abnormal_global_norm.json"
HEALTH = "health_ckpts.json"
META = "meta.json"
_CKPT = re.compile(r"-(\d+)_(\d+)\.[A-Za-z0-9]+$")
_RANK = re.compile(r"^rank_?(\d+)$")


_VERDICTS = {}          # (path, size, mtime_ns) -> problem or None: files looked at, kept while unchanged
_VERDICTS_MAX = 4096


def problems_under(run_folders):
    """``[{"file", "offset", "reason"}]`` of mindformers' files around these run folders (the places
    :func:`read_run` looks) that are left out: malformed, too large, not regular files. Each file is judged once
    while its size and modification time stay the same (the ``status`` route asks often)."""
    out, seen = [], set()
    for run_folder in run_folders:
        if not run_folder or "://" in str(run_folder):
            continue
        rank = _RANK.match(os.path.basename(os.path.abspath(run_folder)))
        for depth, folder in enumerate(candidates(run_folder)):
            names = [META]
            if depth == 0 or rank is None or int(rank.group(1)) == 0:
                names += [ABNORMAL, HEALTH]
            if rank is not None:
                names.append(os.path.join("checkpoint", "rank_%s" % rank.group(1), META))
            for name in names:
                path = os.path.join(folder, name)
                if path in seen:
                    continue
                seen.add(path)
                problem = _verdict(path)
                if problem is not None:
                    out.append(problem)
    return out


def _verdict(path):
    try:
        st = os.lstat(path)
    except OSError:
        return None
    key = (path, st.st_size, st.st_mtime_ns)
    if key in _VERDICTS:
        return _VERDICTS[key]
    problem = None
    try:
        value = read_json(path)
        check = {ABNORMAL: abnormal_norms, HEALTH: health_records, META: last_checkpoint}[os.path.basename(path)]
        check(value)
    except FileProblem as e:
        problem = {"file": path, "offset": None, "reason": str(e)}
    if len(_VERDICTS) >= _VERDICTS_MAX:
        _VERDICTS.clear()
    _VERDICTS[key] = problem
    return problem


class FileProblem(Exception):
    """A file left out, with a one-line reason."""


def read_json(path, max_bytes=None):
    """The JSON value of a file no larger than ``max_bytes`` (default ``MAX_FILE_BYTES``); raises
    :class:`FileProblem` otherwise."""
    max_bytes = MAX_FILE_BYTES if max_bytes is None else max_bytes
    try:
        st = os.stat(path)
    except OSError as e:
        raise FileProblem("cannot be read (%s)" % (e.strerror or e))
    import stat as stat_module

    if not stat_module.S_ISREG(st.st_mode):
        raise FileProblem("not a regular file; skipped")
    if st.st_size > max_bytes:
        raise FileProblem("%d bytes, more than the %d read; left out" % (st.st_size, max_bytes))
    try:
        with open(path, "rb") as f:
            raw = f.read(max_bytes + 1)
    except OSError as e:
        raise FileProblem("cannot be read (%s)" % (e.strerror or e))
    try:
        return json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise FileProblem("not valid JSON (%s); left out" % str(e).splitlines()[0][:120])


def abnormal_norms(value):
    """``{step: [norm, ...]}`` of an ``abnormal_global_norm.json`` value; raises :class:`FileProblem`."""
    if not isinstance(value, dict):
        raise FileProblem("expected an object of step -> [global norm, ...]; left out")
    out = {}
    for key, norms in list(value.items())[:MAX_ENTRIES]:
        try:
            step = int(key)
        except (TypeError, ValueError):
            raise FileProblem("step %r is not a number; left out" % str(key)[:40])
        if not isinstance(norms, list) or not all(isinstance(n, (int, float)) and not isinstance(n, bool)
                                                  for n in norms):
            raise FileProblem("the norms of step %d are not a list of numbers; left out" % step)
        out[step] = [float(n) for n in norms]
    return out


def checkpoint_step(name, steps_per_epoch=None):
    """The global step of a checkpoint named ``<prefix>-<epoch>_<step in epoch>.<ext>`` (None when the epoch is past
    the first and the epoch length is unknown)."""
    m = _CKPT.search(name or "")
    if m is None:
        return None
    epoch, step = int(m.group(1)), int(m.group(2))
    if epoch <= 1:
        return step
    if not steps_per_epoch:
        return None
    return (epoch - 1) * int(steps_per_epoch) + step


def health_records(value, steps_per_epoch=None):
    """``[{"ckpt", "step" (None when unknown), "healthy": bool, "is_health"}]`` of a ``health_ckpts.json`` value."""
    if not isinstance(value, list):
        raise FileProblem("expected a list of {is_health, ckpt_name}; left out")
    out = []
    for item in value[:MAX_ENTRIES]:
        if not isinstance(item, dict) or not isinstance(item.get("ckpt_name"), str):
            raise FileProblem("an entry without a ckpt_name; left out")
        flag = item.get("is_health")
        if not isinstance(flag, (int, float)) or isinstance(flag, bool):
            raise FileProblem("is_health of %s is not a number; left out" % item["ckpt_name"][:80])
        out.append({"ckpt": item["ckpt_name"], "step": checkpoint_step(item["ckpt_name"], steps_per_epoch),
                    "healthy": flag == 0, "is_health": flag})
    return out


def last_checkpoint(value, steps_per_epoch=None):
    """``{"ckpt", "epoch", "step_in_epoch", "step"}`` of a ``meta.json`` value."""
    if not isinstance(value, dict):
        raise FileProblem("expected an object {last_epoch, last_step, last_ckpt_file}; left out")
    epoch, step, name = value.get("last_epoch"), value.get("last_step"), value.get("last_ckpt_file")
    if not isinstance(epoch, int) or not isinstance(step, int) or isinstance(epoch, bool) or isinstance(step, bool):
        raise FileProblem("last_epoch / last_step are not whole numbers; left out")
    glob = step if epoch <= 1 else ((epoch - 1) * steps_per_epoch + step if steps_per_epoch else None)
    return {"ckpt": str(name) if name is not None else None, "epoch": epoch, "step_in_epoch": step, "step": glob}


def candidates(run_folder):
    """The folders mindformers' files may be in for a run folder: itself and its two parents."""
    out = []
    folder = os.path.abspath(run_folder)
    for _ in range(3):
        out.append(folder)
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return out


class MindformersFiles:
    """What mindformers wrote for one run folder (see the module doc). Empty when there is nothing."""

    def __init__(self):
        self.abnormal = {}          # step -> [global norm, ...]
        self.abnormal_file = None
        self.checkpoints = []       # [{"ckpt", "step", "healthy", "is_health"}]
        self.health_file = None
        self.last_checkpoint = None
        self.problems = []          # [{"file", "offset", "reason"}]

    def __bool__(self):
        return bool(self.abnormal or self.checkpoints or self.last_checkpoint)

    def as_dict(self):
        return {"abnormal_global_norm": {str(k): v for k, v in sorted(self.abnormal.items())},
                "abnormal_file": self.abnormal_file, "checkpoints": self.checkpoints,
                "health_file": self.health_file, "last_checkpoint": self.last_checkpoint}

    def last_healthy_before(self, step):
        """The newest healthy checkpoint at or before ``step`` (a dict of :attr:`checkpoints`), or None."""
        best = None
        for c in self.checkpoints:
            if c["healthy"] and c["step"] is not None and c["step"] <= step and (best is None or c["step"] > best["step"]):
                best = c
        return best


def read_run(run_folder, steps_per_epoch=None):
    """:class:`MindformersFiles` for a local run folder (nothing for a remote one)."""
    out = MindformersFiles()
    if not run_folder or "://" in str(run_folder):
        return out
    rank = _RANK.match(os.path.basename(os.path.abspath(run_folder)))
    for depth, folder in enumerate(candidates(run_folder)):
        # The output folder's own files are the training's, written by rank 0: given to rank 0's run only.
        shared = depth > 0 and rank is not None and int(rank.group(1)) != 0
        for name, apply in ((ABNORMAL, _apply_abnormal), (HEALTH, _apply_health)):
            if shared:
                continue
            path = os.path.join(folder, name)
            if getattr(out, "abnormal_file" if name == ABNORMAL else "health_file") or not os.path.lexists(path):
                continue
            try:
                apply(out, path, read_json(path), steps_per_epoch)
            except FileProblem as e:
                out.problems.append({"file": path, "offset": None, "reason": str(e)})
        if out.last_checkpoint is None:
            metas = [os.path.join(folder, META)]
            if rank is not None:
                metas.append(os.path.join(folder, "checkpoint", "rank_%s" % rank.group(1), META))
            for path in metas:
                if not os.path.lexists(path):
                    continue
                try:
                    out.last_checkpoint = dict(last_checkpoint(read_json(path), steps_per_epoch), file=path)
                except FileProblem as e:
                    out.problems.append({"file": path, "offset": None, "reason": str(e)})
                break
    return out


def _apply_abnormal(out, path, value, _):
    out.abnormal = abnormal_norms(value)
    out.abnormal_file = path


def _apply_health(out, path, value, steps_per_epoch):
    out.checkpoints = health_records(value, steps_per_epoch)
    out.health_file = path
