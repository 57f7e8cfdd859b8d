"""``tb-mindspore doctor``: each environment check, its level, and the exit status."""

import argparse
import json
import os
import re
import socket
import stat
import sys

import pytest

from tb_plugin_mindspore.commands import doctor


def _parser():
    parser = argparse.ArgumentParser(prog="tb-mindspore")
    sub = parser.add_subparsers(dest="command")
    sub.required = True
    doctor.add_doctor_parser(sub)
    return parser


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _by_name(checks):
    return {c["check"]: c for c in checks}


def _event_file(folder, size=2000):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "events.out.tfevents.1700000000.host.1.1"
    path.write_bytes(b"x" * size)
    return path


# -- versions ------------------------------------------------------------------------------------------------------
def test_versions_of_this_environment_are_fine():
    checks = _by_name(doctor.check_versions())
    for name in ("python", "tensorboard", "numpy", "protobuf"):
        assert checks[name]["status"] == "ok", checks[name]
    assert checks["tensorboard"]["message"].startswith("TensorBoard 2.")


def _fake_versions(monkeypatch, **versions):
    real = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda dist: versions[dist] if dist in versions else real(dist))


def test_numpy_2_with_mindspore_is_a_known_bad_combination(monkeypatch):
    _fake_versions(monkeypatch, numpy="2.1.3", mindspore="2.10.0")
    c = _by_name(doctor.check_versions())["numpy"]
    assert c["status"] == "fail" and "known bad combination" in c["message"] and 'numpy<2' in c["message"]


def test_numpy_2_without_mindspore_is_fine(monkeypatch):
    _fake_versions(monkeypatch, numpy="2.1.3", mindspore=None)
    checks = _by_name(doctor.check_versions())
    assert checks["numpy"]["status"] == "ok"
    assert checks["mindspore"]["status"] == "warn" and "viewing logs works" in checks["mindspore"]["message"]


@pytest.mark.parametrize("dist,version,needle", [
    ("tensorboard", "2.8.0", "too old"),
    ("tensorboard", None, "not installed"),
    ("protobuf", "3.11.0", "too old"),
])
def test_old_or_missing_packages_fail(monkeypatch, dist, version, needle):
    _fake_versions(monkeypatch, **{dist: version})
    c = _by_name(doctor.check_versions())[dist]
    assert c["status"] == "fail" and needle in c["message"]


def test_version_parsing():
    assert doctor._version_tuple("2.21.0") == (2, 21, 0)
    assert doctor._version_tuple("2.3.0rc1") == (2, 3, 0)
    assert doctor._version_tuple("2.0.0.dev20240101") == (2, 0, 0)


# -- the tensorboard command -------------------------------------------------------------------------------------------
def _script(folder, interpreter):
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "tensorboard"
    path.write_text("#!%s\nimport sys\n" % interpreter)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_tensorboard_from_another_environment_fails(tmp_path):
    other = _script(tmp_path / "conda" / "bin", "/opt/conda/bin/python3")
    c = doctor.check_tensorboard_command(path_env=str(other.parent))
    assert c["status"] == "fail" and str(other) in c["message"] and "not from this environment" in c["message"]
    assert "/opt/conda/bin/python3" in c["message"]


def test_tensorboard_of_this_environment_is_ok(tmp_path):
    own = os.path.join(os.path.dirname(sys.executable), "tensorboard")
    if os.path.exists(own):
        c = doctor.check_tensorboard_command(path_env=os.path.dirname(sys.executable))
        assert c["status"] == "ok", c
    # A wrapper elsewhere whose shebang runs this interpreter belongs to this environment too.
    wrapper = _script(tmp_path / "bin", sys.executable)
    c = doctor.check_tensorboard_command(path_env=str(wrapper.parent))
    assert c["status"] == "ok", c


def test_no_tensorboard_on_path_warns(tmp_path):
    c = doctor.check_tensorboard_command(path_env=str(tmp_path))
    assert c["status"] == "warn" and "No `tensorboard` command on PATH" in c["message"]


# -- plugin registration -------------------------------------------------------------------------------------------
def test_entry_point_is_registered_and_loads():
    c = doctor.check_entry_point()
    assert c["status"] == "ok" and "tb_plugin_mindspore.loader:MindSporeLoader" in c["message"]


def test_missing_entry_point_fails(monkeypatch):
    from importlib import metadata as importlib_metadata

    class NoEntryPoints:
        def select(self, group):
            return []

    monkeypatch.setattr(importlib_metadata, "entry_points", lambda: NoEntryPoints())
    c = doctor.check_entry_point()
    assert c["status"] == "fail" and "not registered" in c["message"]


# -- the logdir ------------------------------------------------------------------------------------------------------
def test_missing_absolute_logdir_fails(tmp_path):
    (c,) = doctor.check_logdir(str(tmp_path / "nope"))
    assert c["status"] == "fail" and "does not exist" in c["message"]


def test_relative_logdir_is_resolved_from_the_working_directory(tmp_path):
    _event_file(tmp_path / "summary_log" / "run1")
    checks = doctor.check_logdir("summary_log", cwd=str(tmp_path))
    rel, there = checks
    assert rel["status"] == "ok" and str(tmp_path / "summary_log") in rel["message"] and "relative" in rel["message"]
    assert there["status"] == "ok" and "1 TensorBoard event file" in there["message"]
    elsewhere = tmp_path / "other"
    elsewhere.mkdir()
    checks = doctor.check_logdir("summary_log", cwd=str(elsewhere))
    assert [c["status"] for c in checks] == ["fail", "fail"]
    assert str(elsewhere) in checks[1]["message"] and "another folder" in checks[1]["message"]


def test_logdir_with_only_ms_files_warns(tmp_path):
    run = tmp_path / "collector"
    run.mkdir()
    (run / "events.out.events.summary.1700000000.0.host_MS").write_bytes(b"x" * 100)
    (run / "events.out.events.summary.1700000000.0.host_lineage").write_bytes(b"x" * 100)
    (c,) = doctor.check_logdir(str(tmp_path))
    assert c["status"] == "warn" and "only MindSpore summary files" in c["message"] and "convert" in c["message"]


def test_logdir_waiting_for_first_flush_and_empty(tmp_path):
    _event_file(tmp_path / "run", size=40)
    (c,) = doctor.check_logdir(str(tmp_path))
    assert c["status"] == "warn" and "no data yet" in c["message"]
    empty = tmp_path / "empty"
    empty.mkdir()
    (c,) = doctor.check_logdir(str(empty))
    assert c["status"] == "warn" and "no event files" in c["message"]


# -- the port --------------------------------------------------------------------------------------------------------
def test_port_taken_and_free():
    port = _free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
        s.listen(1)
        c = doctor.check_port(port)
        assert c["status"] == "warn" and "in use" in c["message"] and "--port %d" % (port + 1) in c["message"]
    assert doctor.check_port(_free_port())["status"] == "ok"


# -- the command -----------------------------------------------------------------------------------------------------
def test_doctor_command_exit_status_and_json(tmp_path, capsys):
    _event_file(tmp_path / "run")
    args = _parser().parse_args(["doctor", str(tmp_path), "--port", str(_free_port()), "--format", "json"])
    code = args.func(args)
    body = json.loads(capsys.readouterr().out)
    names = [c["check"] for c in body["checks"]]
    for name in ("python", "mindspore", "tensorboard", "numpy", "protobuf", "tensorboard command",
                 "plugin registered", "logdir", "port"):
        assert name in names
    failed = [c for c in body["checks"] if c["status"] == "fail"]
    assert body["ok"] == (not failed) and code == (1 if failed else 0)


def test_doctor_fails_on_missing_logdir(tmp_path, capsys):
    args = _parser().parse_args(["doctor", str(tmp_path / "missing"), "--port", str(_free_port())])
    assert args.func(args) == 1
    out = capsys.readouterr().out
    assert "[FAIL] logdir: " in out
    assert re.match(r"\d+ check\(s\): [1-9]\d* failed", out.strip().splitlines()[-1])


def test_doctor_rejects_a_bad_port():
    with pytest.raises(SystemExit) as e:
        _parser().parse_args(["doctor", "--port", "70000"])
    assert e.value.code == 2


def test_logdir_with_mindinsight_named_files(tmp_path):
    """Names MindInsight accepted (``*.summary.<time>``, ``out.events.summary.*_lineage``) count as MindSpore files."""
    run = tmp_path / "job"
    run.mkdir()
    (run / "train.summary.1600000000").write_bytes(b"x" * 100)
    (run / "out.events.summary.1600000000_lineage").write_bytes(b"x" * 100)
    (c,) = doctor.check_logdir(str(tmp_path))
    assert c["status"] == "warn" and "only MindSpore summary files (2 " in c["message"]
    assert "TrainMonitor" not in c["message"]
