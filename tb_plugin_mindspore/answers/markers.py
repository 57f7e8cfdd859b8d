"""The ``markers`` route: steps of a run that other writers marked, for the charts' step axis.

From mindformers' files beside the run (``mindformers_files.py``): each step of ``abnormal_global_norm.json``
(``kind`` "abnormal_global_norm", drawn on the gradient-norm charts only: ``tags``) with mindformers' values, and each
checkpoint of ``health_ckpts.json`` (``kind`` "checkpoint", ``healthy`` true / false; the checkpoint of ``meta.json``
when it is not listed there), on every chart of the run. Read again when a file changes (its size and mtime).
"""

import os

from ..contract import vocabulary
from ..sources import mindformers_files
from . import encode

GRAD_NORM_TAGS = vocabulary.ALIASES["grad_norm"]


def _stamp(folder):
    out = []
    for base in mindformers_files.candidates(folder):
        for name in (mindformers_files.ABNORMAL, mindformers_files.HEALTH, mindformers_files.META,
                     os.path.join("checkpoint", os.path.basename(folder), mindformers_files.META)):
            try:
                st = os.stat(os.path.join(base, name))
                out.append((base, name, st.st_size, st.st_mtime_ns))
            except OSError:
                continue
    return tuple(out)


def markers_of(files):
    """``[{"step", "kind", "label", ...}]`` of a :class:`~.mindformers_files.MindformersFiles`, by step."""
    out = []
    for step, norms in sorted(files.abnormal.items()):
        out.append({"step": int(step), "kind": "abnormal_global_norm", "tags": list(GRAD_NORM_TAGS),
                    "values": norms, "label": "mindformers: global norm %s at or above its spike threshold"
                                              % ", ".join("%.4g" % v for v in norms)})
    listed = set()
    for c in files.checkpoints:
        if c["step"] is None:
            continue
        listed.add(c["ckpt"])
        out.append({"step": int(c["step"]), "kind": "checkpoint", "healthy": bool(c["healthy"]), "ckpt": c["ckpt"],
                    "tags": None, "label": "%s checkpoint %s" % ("healthy" if c["healthy"] else "unhealthy",
                                                                 c["ckpt"])})
    last = files.last_checkpoint
    if last and last.get("step") is not None and last.get("ckpt") not in listed:
        out.append({"step": int(last["step"]), "kind": "checkpoint", "healthy": None, "ckpt": last.get("ckpt"),
                    "tags": None, "label": "last checkpoint %s (meta.json)" % last.get("ckpt")})
    return sorted(out, key=lambda m: (m["step"], m["kind"]))


class MarkerReader:
    """``folders``: a ``run_fold.RunFolders`` (where a run lives on disk)."""

    def __init__(self, folders, cache):
        self._folders = folders
        self._cache = cache

    def answer(self, run):
        folder = self._folders.folder(run) if self._folders is not None else None
        if not folder or "://" in folder:
            return {"run": run, "markers": []}
        token = _stamp(folder)
        key = ("markers", run)
        text = self._cache.get(key, token)
        if text is not None:
            return text
        body = {"run": run, "markers": markers_of(mindformers_files.read_run(folder)) if token else []}
        return self._cache.put(key, token, encode.dumps(body))
