"""Real MindSpore 2.10 summary files for the reader and converter tests, made once per test session.

MindSpore runs in a subprocess (``ms_make_fixtures.py``), so that the reader under test is shown to work in a process
that never imported MindSpore, and MindSpore's global context stays out of the other tests. The session
fixtures of ``tests/conftest.py`` take them from here (the files are made only once in a run, shared by its
pytest-xdist workers).
"""

import json
import os
import shutil
import sys

from once import made_once
import warm

HERE = os.path.dirname(os.path.abspath(__file__))
_made = {}


def run_fixture_script(*args, timeout=600):
    env = dict(os.environ, GLOG_v="3", OMP_NUM_THREADS="1")
    return warm.run([sys.executable, os.path.join(HERE, "ms_make_fixtures.py"), *map(str, args)],
                    env=env, capture_output=True, text=True, timeout=timeout)


class MsFixtures:
    """``root``: the logdir (runs collector/, record/, ops/, landscape/); ``expected``: values fed in;
    ``reference``: {relative file: [[offset, normalized event], ...]} decoded by MindSpore; ``descriptors``:
    MindSpore's message layouts."""

    def __init__(self, root):
        self.root = str(root)
        with open(os.path.join(self.root, "expected.json")) as f:
            self.expected = json.load(f)
        with open(os.path.join(self.root, "reference.json")) as f:
            self.reference = json.load(f)
        with open(os.path.join(self.root, "descriptors.json")) as f:
            self.descriptors = json.load(f)

    def files(self, run, suffix="_MS"):
        return sorted(p for p in self.reference if p.startswith(run + "/") and p.endswith(suffix))

    def path(self, rel):
        return os.path.join(self.root, rel)

    def copy_run(self, run, dest):
        """A writable copy of one run folder (the originals are mode 0400, as MindSpore leaves them)."""
        dest = os.path.join(str(dest), run)
        shutil.copytree(os.path.join(self.root, run), dest, ignore=shutil.ignore_patterns("ckpt_dir"))
        for name in os.listdir(dest):
            os.chmod(os.path.join(dest, name), 0o644)
        return dest


def _make(root, *sets):
    proc = run_fixture_script(root, *sets)
    if proc.returncode != 0:
        raise RuntimeError("making MindSpore fixtures %s failed:\n%s\n%s"
                           % (",".join(sets) or "", proc.stdout[-3000:], proc.stderr[-5000:]))


def ms_fixtures(tmp_path_factory):
    """The session's MsFixtures (made on first use)."""
    if "fixtures" not in _made:
        _made["fixtures"] = MsFixtures(made_once(tmp_path_factory, "ms_summaries", _make))
    return _made["fixtures"]


LAYOUTS = ("rerun", "resume", "kinds", "edge", "evalonly", "pipeline")


def ms_layouts(tmp_path_factory):
    """MsFixtures of the "layouts" set (re-runs, resumes, one name with several kinds, odd histograms, eval-only
    and pipeline lineage; see ``ms_make_fixtures``), made on first use."""
    if "layouts" not in _made:
        _made["layouts"] = MsFixtures(made_once(tmp_path_factory, "ms_layouts",
                                                lambda root: _make(root, ",".join(LAYOUTS))))
    return _made["layouts"]


def ms_logdir(fixtures):
    """An MsLogdir over the fixtures, fully loaded (shared: only read from it)."""
    if "logdir" not in _made:
        from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

        logdir = MsLogdir(fixtures.root)
        for _ in range(100):
            if not logdir.reload().pending:
                break
        _made["logdir"] = logdir
    return _made["logdir"]
