"""The built wheel, installed in a fresh virtual environment without MindSpore, gives a working tab."""

import os
import shutil
import subprocess
import sys
import time
import urllib.request
import zipfile

import pytest

from tb_harness import fetch_json, free_port

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def source_copy(dest):
    """The checkout's tracked files (what a clone holds), its installed frontend dependencies linked in. The wheel is
    built there, not in the checkout: building it builds the frontend, which first empties the tree's
    ``tb_plugin_mindspore/static/``, and the tests running beside this one read the checkout's bundle (a report
    made in that moment failed with "the frontend bundle is not built")."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(os.path.join(REPO, name), target)
    os.symlink(os.path.join(REPO, "frontend", "node_modules"), os.path.join(dest, "frontend", "node_modules"))
    return dest


@pytest.mark.slow
def test_wheel_in_fresh_venv(tmp_path, recorded_logdir):
    dist = tmp_path / "dist"
    source = source_copy(str(tmp_path / "source"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), source],
                   check=True, timeout=600)
    (wheel,) = dist.glob("tb_plugin_mindspore-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "tb_plugin_mindspore/static/index.js" in names
    assert "tb_plugin_mindspore/static/report.js" in names   # the page of `tb-mindspore report`
    assert any(n.startswith("tb_mindspore_callbacks/") for n in names)
    assert not any(n.startswith(("callbacks/", "tests/", "frontend/")) for n in names)

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    py = str(venv / "bin" / "python")
    # --no-compile: nothing here depends on the dependencies' bytecode (Python compiles what it imports); byte-compiling
    # all of them was about a tenth of this test's CPU time.
    subprocess.run([py, "-m", "pip", "install", "-q", "--no-compile", str(wheel)], check=True, timeout=900)
    # Viewing needs no MindSpore.
    assert subprocess.run([py, "-c", "import mindspore"], capture_output=True).returncode != 0

    demo = subprocess.run([str(venv / "bin" / "tb-mindspore"), "demo", "--no-serve"], capture_output=True, text=True)
    assert demo.returncode == 2 and "tb-plugin-mindspore[mindspore]" in demo.stderr
    assert len(demo.stderr.strip().splitlines()) == 1

    port = free_port()
    proc = subprocess.Popen([str(venv / "bin" / "tensorboard"), "--logdir", str(recorded_logdir), "--port", str(port),
                             "--host", "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = "http://127.0.0.1:%d" % port
        deadline = time.time() + 90
        while True:
            try:
                listing = fetch_json(base + "/data/plugins_listing")
                break
            except Exception:
                if time.time() > deadline or proc.poll() is not None:
                    raise
                time.sleep(0.5)
        assert listing["mindspore"]["tab_name"] == "MindSpore"
        with urllib.request.urlopen(base + "/data/plugin/mindspore/index.js") as r:
            served = r.read()
        assert served == zipfile.ZipFile(wheel).read("tb_plugin_mindspore/static/index.js")
        assert fetch_json(base + "/data/plugin/mindspore/runs")["runs"] == ["run_a", "run_b"]
    finally:
        proc.terminate()
        proc.wait(10)
