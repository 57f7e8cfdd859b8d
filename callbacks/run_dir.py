"""Run folders named ``<YYYYmmdd-HHMMSS>_<experiment>_<key hparams>``."""

import os
import re
import time

__all__ = ["make_run_dir", "run_dir_name"]

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
    """
    base = os.path.join(str(root), run_dir_name(experiment, hparams))
    path = base
    n = 1
    while True:
        try:
            os.makedirs(path)
            return path
        except FileExistsError:
            n += 1
            path = "%s-%d" % (base, n)
