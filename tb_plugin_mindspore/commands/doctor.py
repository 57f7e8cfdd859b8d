"""``tb-mindspore doctor [LOGDIR]``: is this environment able to record and show MindSpore training?

Checks, each ``ok``, ``warn`` or ``fail`` with what to do:

* versions of Python, MindSpore, TensorBoard, numpy and protobuf, and known bad combinations (numpy 2 with
  MindSpore: ``mindspore.dataset.NumpySlicesDataset`` fails; TensorBoard's protobuf messages must import);
* whether the ``tensorboard`` command on PATH belongs to this Python environment (a ``tensorboard`` from another
  environment, e.g. conda's base, never loads this plugin);
* whether the plugin's ``tensorboard_plugins`` entry point is registered and loads;
* with LOGDIR: that it exists (and, when relative, which folder it is resolved from), holds TensorBoard event files,
  or only MindSpore ``*_MS`` files (which stock TensorBoard cannot read);
* whether the TensorBoard port (6006 by default) is free.

Exit status: 1 when a check fails, else 0; 2 with a one-line reason on bad arguments. Imports nothing heavy:
versions come from package metadata, not from importing MindSpore.
"""

import json
import os
import shutil
import socket
import sys
from ..sources import logdir_status, reload_watch
from ..io import fs

PROG = "tb-mindspore"
OK, WARN, FAIL = "ok", "warn", "fail"
ENTRY_POINT_GROUP = "tensorboard_plugins"
ENTRY_POINT_NAME = "mindspore"
ENTRY_POINT_VALUE = "tb_plugin_mindspore.loader:MindSporeLoader"
MIN_TENSORBOARD = (2, 14)      # what setup.py requires
MIN_PROTOBUF = (3, 20)
_EMPTY_EVENT_FILE_BYTES = 128  # an event file holding only its file_version record


def add_doctor_parser(subparsers):
    """Registers ``doctor`` on an ``argparse`` subparsers object; the handler is ``args.func(args) -> exit code``."""
    p = subparsers.add_parser(
        "doctor",
        help="check the environment: versions, the tensorboard command, plugin registration, the logdir, the port",
        description="Checks that this environment can record MindSpore training and show it in TensorBoard's "
                    "MindSpore tab: package versions and known bad combinations, whether the `tensorboard` on "
                    "PATH belongs to this Python environment, whether the plugin is registered, whether LOGDIR "
                    "exists and holds event files, and whether the port is free.",
        epilog="Exit status: 1 when a check fails, 0 otherwise.",
    )
    p.add_argument("logdir", nargs="?", metavar="LOGDIR", help="the folder you pass to tensorboard --logdir")
    p.add_argument("--port", type=_port, default=6006, help="TensorBoard port to check (default: %(default)s)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: text)")
    p.set_defaults(func=run_doctor)
    return p


def _port(text):
    import argparse

    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a TCP port (1-65535), got %r" % text)
    if not 1 <= value <= 65535:
        raise argparse.ArgumentTypeError("must be a TCP port (1-65535), got %r" % text)
    return value


# -- helpers ------------------------------------------------------------------------------------------------------
def _version(dist):
    from importlib import metadata as importlib_metadata

    try:
        return importlib_metadata.version(dist)
    except importlib_metadata.PackageNotFoundError:
        return None


def _version_tuple(text):
    parts = []
    for piece in str(text).split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def _check(name, status, message):
    return {"check": name, "status": status, "message": message}


def _same_path(a, b):
    return os.path.normcase(os.path.abspath(a)) == os.path.normcase(os.path.abspath(b))


def _shebang_interpreter(path):
    try:
        with open(path, "rb") as f:
            first = f.readline(4096)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", errors="replace").strip().split()
    if not words:
        return None
    if os.path.basename(words[0]) == "env" and len(words) > 1:
        return shutil.which(words[-1]) or words[-1]
    return words[0]


def port_in_use(port, host="127.0.0.1"):
    with socket.socket() as s:
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


# -- checks -------------------------------------------------------------------------------------------------------
def check_versions():
    out = [_check("python", OK, "Python %s at %s" % (sys.version.split()[0], sys.executable))]
    tb, ms, np_, pb = (_version(d) for d in ("tensorboard", "mindspore", "numpy", "protobuf"))
    if tb is None:
        out.append(_check("tensorboard", FAIL, "TensorBoard is not installed in this environment: "
                                               "pip install tensorboard"))
    elif _version_tuple(tb) < MIN_TENSORBOARD:
        needed = ".".join(map(str, MIN_TENSORBOARD))
        out.append(_check("tensorboard", FAIL, "TensorBoard %s is too old (the plugin needs >= %s): "
                                               "pip install -U tensorboard" % (tb, needed)))
    else:
        out.append(_check("tensorboard", OK, "TensorBoard %s" % tb))
    if ms is None:
        out.append(_check("mindspore", WARN, "MindSpore is not installed here: viewing logs works, recording needs "
                                             "it (pip install \"tb-plugin-mindspore[mindspore]\")"))
    else:
        out.append(_check("mindspore", OK, "MindSpore %s" % ms))
    if np_ is None:
        out.append(_check("numpy", FAIL, "numpy is not installed: pip install \"numpy<2\""))
    elif ms is not None and _version_tuple(np_) >= (2,):
        out.append(_check("numpy", FAIL, "numpy %s with MindSpore %s is a known bad combination: "
                                         "mindspore.dataset (e.g. NumpySlicesDataset) fails under numpy 2. "
                                         "pip install \"numpy<2\"" % (np_, ms)))
    else:
        out.append(_check("numpy", OK, "numpy %s" % np_))
    if pb is None:
        out.append(_check("protobuf", FAIL, "protobuf is not installed: pip install protobuf"))
    elif _version_tuple(pb) < MIN_PROTOBUF:
        out.append(_check("protobuf", FAIL, "protobuf %s is too old (needs >= %s): pip install -U protobuf"
                          % (pb, ".".join(map(str, MIN_PROTOBUF)))))
    else:
        problem = None
        if tb is not None:
            try:
                from tensorboard.compat.proto import event_pb2  # noqa: F401
            except Exception as e:  # a protobuf that TensorBoard's generated code rejects
                problem = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
        if problem:
            out.append(_check("protobuf", FAIL, "protobuf %s does not work with TensorBoard %s (%s): install the "
                                                "protobuf version TensorBoard asks for (pip install -U tensorboard)"
                              % (pb, tb, problem)))
        else:
            out.append(_check("protobuf", OK, "protobuf %s" % pb))
    return out


def check_tensorboard_command(path_env=None):
    found = shutil.which("tensorboard", path=path_env)
    here = os.path.dirname(sys.executable)
    if found is None:
        own = os.path.join(here, "tensorboard")
        hint = (" It is installed at %s: activate this environment or call it by that path." % own
                if os.path.exists(own) else " Install TensorBoard in this environment (pip install tensorboard).")
        return _check("tensorboard command", WARN, "No `tensorboard` command on PATH." + hint)
    interpreter = _shebang_interpreter(found)
    belongs = _same_path(os.path.dirname(found), here) or (
        interpreter is not None and (_same_path(interpreter, sys.executable)
                                     or _same_path(os.path.dirname(interpreter), here)))
    if belongs:
        return _check("tensorboard command", OK, "`tensorboard` on PATH is %s, from this environment" % found)
    other = (" (it runs %s)" % interpreter) if interpreter else ""
    return _check("tensorboard command", FAIL,
                  "The `tensorboard` on PATH is %s%s, not from this environment (%s): it will not load this "
                  "plugin. Activate this environment first, or run %s -m tensorboard.main --logdir ..."
                  % (found, other, sys.prefix, sys.executable))


def check_entry_point():
    from importlib import metadata as importlib_metadata

    try:
        eps = importlib_metadata.entry_points()
        group = eps.select(group=ENTRY_POINT_GROUP) if hasattr(eps, "select") else eps.get(ENTRY_POINT_GROUP, [])
    except Exception as e:
        return _check("plugin registered", FAIL, "could not read entry points: %s" % e)
    ours = [ep for ep in group if ep.name == ENTRY_POINT_NAME]
    if not ours:
        return _check("plugin registered", FAIL,
                      "The MindSpore plugin is not registered with TensorBoard in this environment (no "
                      "`%s` entry point named %r): pip install tb-plugin-mindspore here."
                      % (ENTRY_POINT_GROUP, ENTRY_POINT_NAME))
    ep = ours[0]
    try:
        ep.load()
    except Exception as e:
        return _check("plugin registered", FAIL, "The plugin entry point %s does not load (%s: %s); reinstall "
                                                 "tb-plugin-mindspore" % (ep.value, type(e).__name__, e))
    return _check("plugin registered", OK, "TensorBoard plugin entry point %s = %s" % (ep.name, ep.value))


def _scan_logdir(path):
    counts = {"event_files": 0, "event_bytes": 0, "ms_files": 0}
    for root, dirs, names in fs.walk(path):
        dirs.sort()
        for name in names:
            if logdir_status.is_ms_summary_file(name):
                counts["ms_files"] += 1
            elif "tfevents" in name:
                counts["event_files"] += 1
                try:
                    counts["event_bytes"] = max(counts["event_bytes"], fs.getsize(fs.join(root, name)))
                except OSError:
                    pass
    return counts


def check_logdir(logdir, cwd=None):
    if fs.is_remote(logdir):
        return _check_remote_logdir(logdir)
    cwd = cwd or os.getcwd()
    expanded = os.path.expanduser(logdir)
    path = os.path.abspath(os.path.join(cwd, expanded))
    out = []
    relative = not os.path.isabs(expanded)
    if relative:
        exists = os.path.exists(path)
        out.append(_check("logdir path", OK if exists else FAIL,
                          "%r is relative: it means %s from the current folder %s, and TensorBoard resolves it from "
                          "the folder it is started in. %s" % (
                              logdir, path, cwd, "Start TensorBoard from here or pass the absolute path." if exists
                              else "Nothing is there: training probably ran in another folder; pass the absolute "
                                   "path of its logdir.")))
    if not os.path.exists(path):
        out.append(_check("logdir", FAIL, "The logdir %s does not exist.%s" % (
            path, " Check the folder training writes to (TrainMonitor's logdir / SummaryCollector's summary_dir)"
                  "." if not relative else " Is training started from another folder than this one (%s)?" % cwd)))
        return out
    if not os.path.isdir(path):
        out.append(_check("logdir", FAIL, "%s is not a folder." % path))
        return out
    counts = _scan_logdir(path)
    if counts["event_files"]:
        if counts["event_bytes"] <= _EMPTY_EVENT_FILE_BYTES:
            out.append(_check("logdir", WARN, "%s holds %d event file(s) but no data yet: training writes every "
                                              "few seconds; wait and reload." % (path, counts["event_files"])))
        else:
            extra = (" (and %d MindSpore *_MS file(s))" % counts["ms_files"]) if counts["ms_files"] else ""
            out.append(_check("logdir", OK, "%s holds %d TensorBoard event file(s)%s"
                              % (path, counts["event_files"], extra)))
    elif counts["ms_files"]:
        out.append(_check("logdir", WARN,
                          "%s holds only MindSpore summary files (%d *_MS / *_lineage), written by SummaryCollector / "
                          "SummaryRecord: the MindSpore tab shows them as they are, stock TensorBoard's tabs show "
                          "nothing for them. Run `tb-mindspore convert %s` for TensorBoard's own tabs."
                          % (path, counts["ms_files"], logdir)))
    else:
        out.append(_check("logdir", WARN, "%s holds no event files yet. Record a run with "
                                          "tb_mindspore_callbacks.TrainMonitor (or run `tb-mindspore demo`)." % path))
    return out


def _check_remote_logdir(url):
    """A remote logdir (``s3://``, ``gs://``...): reachable, a folder, what it holds, not a bucket's root."""
    try:
        fs.filesystem(url)
        found = fs.isdir(url)
    except Exception as e:  # a missing driver, bad credentials, no endpoint
        return [_check("logdir", FAIL, "Cannot read %s (%s: %s). For s3:// install tb-plugin-mindspore[remote] and "
                                       "set S3_ENDPOINT for an S3-compatible store." % (url, type(e).__name__, e))]
    if not found:
        return [_check("logdir", FAIL, "Nothing is stored under %s: check the bucket, the prefix and S3_ENDPOINT."
                       % url)]
    counts = _scan_logdir(url)
    out = []
    if reload_watch.is_bucket_root(url):
        out.append(_check("bucket root", WARN,
                          "%s is a bucket's root: TensorBoard's own S3 reader cannot list it (alone it shows no run "
                          "at all); the MindSpore plugin lists it and loads the run folders inside, but event files "
                          "lying in the root itself are never read. Use a folder inside the bucket, e.g. "
                          "--logdir %s/logs." % (url, url.rstrip("/"))))
    if counts["event_files"] or counts["ms_files"]:
        return out + [_check("logdir", OK, "%s holds %d TensorBoard event file(s) and %d MindSpore *_MS file(s)"
                             % (url, counts["event_files"], counts["ms_files"]))]
    return out + [_check("logdir", WARN, "%s holds no event files yet." % url)]


def check_port(port):
    if port_in_use(port):
        return _check("port", WARN, "Port %d is in use (another TensorBoard still running?): stop it or start "
                                    "TensorBoard with --port %d." % (port, port + 1))
    return _check("port", OK, "Port %d is free" % port)


def run_checks(logdir=None, port=6006):
    checks = check_versions()
    checks.append(check_tensorboard_command())
    checks.append(check_entry_point())
    if logdir is not None:
        checks.extend(check_logdir(logdir))
    checks.append(check_port(port))
    return checks


_MARK = {OK: "[ ok ]", WARN: "[warn]", FAIL: "[FAIL]"}


def run_doctor(args):
    checks = run_checks(args.logdir, args.port)
    failed = [c for c in checks if c["status"] == FAIL]
    if args.format == "json":
        print(json.dumps({"checks": checks, "ok": not failed}, indent=2))
    else:
        for c in checks:
            print("%s %s: %s" % (_MARK[c["status"]], c["check"], c["message"]))
        warned = sum(1 for c in checks if c["status"] == WARN)
        print("%d check(s): %d failed, %d warning(s)" % (len(checks), len(failed), warned))
    return 1 if failed else 0


def main(argv=None):
    """Standalone entry (``python -m tb_plugin_mindspore.commands.doctor doctor ...``)."""
    import argparse

    parser = argparse.ArgumentParser(prog=PROG)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    add_doctor_parser(sub)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
