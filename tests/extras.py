"""The optional environments built by ``scripts/extras.sh`` (mindformers, MindNLP, PyTorch): where each one is, and
how a test runs a script of this repository in it.

Each environment holds only the third-party libraries; this repository's packages reach it through a folder of
links on ``PYTHONPATH`` (``tb_plugin_mindspore`` and ``tb_mindspore_callbacks`` -> ``callbacks/``), so one cached
environment serves every checkout. A test whose environment is missing skips with the command that builds it.
"""

import atexit
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
RECIPES = REPO / "scripts" / "envs"


def envs_root():
    return Path(os.environ.get("TB_MINDSPORE_ENVS") or Path.home() / ".cache" / "tb-plugin-mindspore" / "envs")


def env_dir(name):
    """The folder of environment ``name`` for the recipe as it is now (``scripts/extras.sh`` names it alike)."""
    recipe = RECIPES / ("%s.sh" % name)
    digest = hashlib.sha256(recipe.read_bytes()).hexdigest()[:12]
    return envs_root() / ("%s-%s" % (name, digest))


def env_python(name):
    """The environment's interpreter, or None when it has not been built."""
    d = env_dir(name)
    return d / "bin" / "python" if (d / ".ready").exists() else None


def require_env(name):
    """The environment's interpreter; skips the test with the command that builds it when it is missing."""
    py = env_python(name)
    if py is None:
        pytest.skip("the %s environment is not built: bash scripts/extras.sh %s" % (name, name))
    return py


_SHIM = None


def repo_shim():
    """A folder with this checkout's packages under their import names, for PYTHONPATH."""
    global _SHIM
    if _SHIM is None:
        d = Path(tempfile.mkdtemp(prefix="tbms-shim-"))
        atexit.register(shutil.rmtree, d, True)  # the test process's own: no folder left per worker and run
        (d / "tb_plugin_mindspore").symlink_to(REPO / "tb_plugin_mindspore")
        (d / "tb_mindspore_callbacks").symlink_to(REPO / "callbacks")
        _SHIM = d
    return _SHIM


def run_in_env(name, args, timeout=600, env=None, cwd=None):
    """Runs ``python ARGS`` in environment ``name`` with this checkout importable; returns the CompletedProcess."""
    py = require_env(name)
    extra = [str(repo_shim()), str(REPO / "tests")]
    environ = dict(os.environ, **(env or {}))
    environ["PYTHONPATH"] = os.pathsep.join(extra + [p for p in [environ.get("PYTHONPATH")] if p])
    environ.setdefault("GLOG_v", "3")
    environ.pop("VIRTUAL_ENV", None)
    return subprocess.run([str(py)] + [str(a) for a in args], capture_output=True, text=True, timeout=timeout,
                          env=environ, cwd=cwd)


if __name__ == "__main__":
    for n in sorted(p.stem for p in RECIPES.glob("*.sh")):
        print(n, env_python(n) or "not built (bash scripts/extras.sh %s)" % n, file=sys.stdout)
