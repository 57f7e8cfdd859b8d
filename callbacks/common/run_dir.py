"""Run folders named ``<YYYYmmdd-HHMMSS>_<experiment>_<key hparams>``."""

import json
import logging
import os
import re
import time

__all__ = ["make_run_dir", "run_dir_name", "read_run_hparams", "RUN_HPARAMS_FILE"]

# make_run_dir's hyperparameters, kept in the run folder for TrainMonitor / LoopMonitor (run info, HParams tab).
RUN_HPARAMS_FILE = "tb_mindspore_hparams.json"
logger = logging.getLogger("tb_mindspore_callbacks")

_UNSAFE = re.compile(r"[^A-Za-z0-9.\-]+")


def _safe(text):
    """Only letters, digits, '.', '-' survive; every other run of characters becomes one '-'."""
    return _UNSAFE.sub("-", str(text)).strip("-")


def _format_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "%g" % value
    return str(value)


def run_dir_name(experiment="exp", hparams=None, when=None):
    """The folder name for a run, e.g. ``20250101-120000_demo_lr0.001_bs32``.

    ``hparams`` is a mapping whose items are written as ``<key><value>`` joined by ``_``, in the given order.
    Unsafe characters (spaces, slashes, ``=`` ...) are replaced by ``-``.
    """
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(when))
    parts = [stamp, _safe(experiment) or "exp"]
    for key, value in (hparams or {}).items():
        item = _safe(key) + _safe(_format_value(value))
        if item:
            parts.append(item)
    return "_".join(parts)


def make_run_dir(root="./summary_log", experiment="exp", hparams=None):
    """Creates and returns ``<root>/<YYYYmmdd-HHMMSS>_<experiment>_<k1v1_k2v2>``.

    If that folder already exists (two runs started in the same second), ``-2``, ``-3``, ... is appended.
    ``hparams`` are also written to ``tb_mindspore_hparams.json`` in the folder: ``TrainMonitor`` and
    ``LoopMonitor`` writing into it record them (run info, TensorBoard's HParams tab) without ``hparams=``.
    """
    if hparams is not None and not hasattr(hparams, "items"):
        raise ValueError("hparams must be a dict or None, got %r" % (hparams,))
    base = os.path.join(str(root), run_dir_name(experiment, hparams))
    path = base
    n = 1
    while True:
        try:
            os.makedirs(path)
            break
        except FileExistsError:
            n += 1
            path = "%s-%d" % (base, n)
    if hparams:
        body = {"experiment": str(experiment), "hparams": {str(k): _json_value(v) for k, v in hparams.items()}}
        with open(os.path.join(path, RUN_HPARAMS_FILE), "w", encoding="utf-8") as f:
            json.dump(body, f, indent=1)
    return path


def _json_value(value):
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if hasattr(value, "item") and getattr(value, "size", 2) == 1:     # numpy scalars
        return value.item()
    return str(value)


def read_run_hparams(run_dir):
    """The hyperparameters ``make_run_dir`` recorded in ``run_dir`` (a dict), or None; never raises."""
    path = os.path.join(str(run_dir), RUN_HPARAMS_FILE)
    try:
        with open(path, encoding="utf-8") as f:
            body = json.load(f)
        hparams = body.get("hparams") if isinstance(body, dict) else None
        if not isinstance(hparams, dict):
            raise ValueError("no 'hparams' object")
        return hparams or None
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as e:
        logger.warning("tb-mindspore: ignoring %s: %s", path, e)
        return None
