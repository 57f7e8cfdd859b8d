"""Child Pythons started warm: ``warm.run`` and ``warm.Popen`` take what ``subprocess.run`` / ``subprocess.Popen``
take, and where the command is this environment's Python (``-c``, ``-m``, a script) or one of its console scripts
(``tensorboard``, ``tb-mindspore``), the child is forked from a Python that imported MindSpore, TensorBoard and this
project once (``warm_zygote.py``) instead of importing them again: about 2.5 s of CPU less per child, with hundreds
of children a run. It is still a process of its own, with its own pid, pipes, exit code and
signals, exiting the way Python exits.

The environment variables read when Python starts or a library loads (``MS_*``, ``GLOG_*``, ``PYTHON*``, thread
and allocator settings) are the warm Python's own: there is one warm Python per set of them (``PYTHONPATH`` is
applied in the child). Anything else runs as a plain subprocess: other programs or Pythons, Python options other
than ``-u``, settings a fresh start would need (``preexec_fn``, ``pass_fds``, users, groups, ``umask``). So does
every command of a test that checks what a fresh start imports (it calls ``subprocess``), and every command where
``TB_MINDSPORE_TEST_COLD=1`` (to tell whether a failure is the warm start's).
"""

import atexit
import json
import os
import select
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.path.dirname(sys.executable)
CONSOLE_SCRIPTS = ("tensorboard", "tb-mindspore")
# Environment variables read when a library loads or Python starts: a child that changes one starts cold.
COLD_PREFIXES = ("MS_", "GLOG_", "PYTHON", "PROTOCOL_BUFFERS", "OMP_", "OPENBLAS", "MKL_", "KMP_", "LD_", "MALLOC",
                 "CUDA", "ASCEND", "HCCL", "DEVICE_", "RANK_TABLE")
# Read when TensorBoard's modules load (its S3 file system takes the endpoint then) and set by tests: a child
# whose value differs from this process's at its start starts cold.
FRESH_PREFIXES = ("S3_", "AWS_")
_START_ENV = dict(os.environ)
HEADER = struct.Struct("!Q")
_zygotes = {}
_children_cpu = 0.0
_asked = {}
_lock = threading.Lock()


class _Zygote:
    def __init__(self, env):
        self.folder = tempfile.mkdtemp(prefix="warm-")
        self.path = os.path.join(self.folder, "s")
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "warm_zygote.py"), self.path],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=self.folder)
        line = self.proc.stdout.readline()
        if line.strip() != b"ready":
            raise RuntimeError("the warm Python did not start (exit %s)" % self.proc.wait())
        atexit.register(self.close)

    def alive(self):
        return self.proc.poll() is None

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        try:
            os.unlink(self.path)
            os.rmdir(self.folder)
        except OSError:
            pass


def _cold_settings(env):
    return tuple(sorted((k, v) for k, v in env.items() if k.startswith(COLD_PREFIXES) and k != "PYTHONPATH"))


def _zygote_for(env):
    """The warm Python started with the same import-time settings as ``env`` (one per set of them: the suite's
    children use a few, GLOG_v=3 mostly), or None: the first child of each set starts cold, as starting a warm Python
    costs about what it saves a child."""
    key = _cold_settings(env)
    with _lock:
        zygote = _zygotes.get(key)
        _asked[key] = _asked.get(key, 0) + 1
        if zygote is None and _asked[key] < 2:
            return None
        if zygote is None or not zygote.alive():
            base = {k: v for k, v in os.environ.items() if not k.startswith(COLD_PREFIXES) or k == "PYTHONPATH"}
            zygote = _zygotes[key] = _Zygote(dict(base, **dict(key)))
        return zygote


def _command(args):
    """(kind, target, args, unbuffered) for a command the warm Python can run, else None."""
    if isinstance(args, (str, bytes)) or not args:
        return None
    args = [os.fspath(a) for a in args]
    if any(not isinstance(a, str) for a in args):
        return None
    exe = args[0]
    if os.path.dirname(exe) == BIN and os.path.basename(exe) in CONSOLE_SCRIPTS:
        return "script", exe, args[1:], False
    if exe != sys.executable:
        return None
    rest, unbuffered = args[1:], False
    while rest and rest[0] == "-u":
        rest, unbuffered = rest[1:], True
    if not rest:
        return None
    if rest[0] in ("-c", "-m") and len(rest) > 1:
        return rest[0][1], rest[1], rest[2:], unbuffered
    if rest[0].startswith("-"):
        return None
    return "script", rest[0], rest[1:], unbuffered


def _ignored(signum):
    try:
        return signal.getsignal(signum) == signal.SIG_IGN
    except (ValueError, OSError):
        return False


_UNSUPPORTED = ("executable", "preexec_fn", "pass_fds", "user", "group", "extra_groups", "umask", "startupinfo",
                "creationflags", "process_group")


class _WarmPopen(subprocess.Popen):
    """A subprocess.Popen whose child is forked by the warm Python: its pid, pipes, poll, wait, signals and
    communicate behave as Popen's; the exit code comes from the warm Python, which reaps the child."""

    def __init__(self, args, warm, **kwargs):
        self._warm = warm
        self._conn = None
        self._pending = b""
        super().__init__(args, **kwargs)

    def _execute_child(self, args, executable, preexec_fn, close_fds, pass_fds, cwd, env, startupinfo,
                       creationflags, shell, p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite,
                       restore_signals, gid, gids, uid, umask, start_new_session, *rest):
        kind, target, rest_args, unbuffered, zygote, child_env = self._warm
        request = {"kind": kind, "target": target, "args": rest_args, "unbuffered": unbuffered,
                   "cwd": os.path.abspath(os.fspath(cwd)) if cwd is not None else os.getcwd(),
                   "env": child_env, "new_session": bool(start_new_session),
                   # what a program started from here inherits: the signals this process ignores
                   "ignored": [int(n) for n in signal.valid_signals() if _ignored(n)]}
        fds = [p2cread if p2cread != -1 else 0, c2pwrite if c2pwrite != -1 else 1,
               errwrite if errwrite != -1 else 2]
        body = json.dumps(request).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(zygote.path)
            message = HEADER.pack(len(body)) + body
            socket.send_fds(conn, [message[:1 << 15]], fds)
            conn.sendall(message[1 << 15:])
            reply = self._line(conn, None)
        except BaseException:
            conn.close()
            self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)
            raise
        self.pid = reply["pid"]
        self._conn = conn
        self._child_created = True
        self._close_pipe_fds(p2cread, p2cwrite, c2pread, c2pwrite, errread, errwrite)

    def _line(self, conn, timeout):
        while b"\n" not in self._pending:
            if timeout is not None and not select.select([conn], [], [], timeout)[0]:
                return None
            chunk = conn.recv(1 << 10)
            if not chunk:
                raise OSError("the warm Python went away")
            self._pending += chunk
        line, self._pending = self._pending.split(b"\n", 1)
        return json.loads(line)

    def _collect(self, timeout):
        if self.returncode is None and self._conn is not None:
            reply = self._line(self._conn, timeout)
            if reply is not None:
                global _children_cpu
                _children_cpu += reply.get("cpu", 0.0)
                self.returncode = reply["rc"]
                self._conn.close()
                self._conn = None
        return self.returncode

    def _internal_poll(self, _deadstate=None, **_kwargs):
        try:
            return self._collect(0)
        except OSError:
            if _deadstate is not None:
                self.returncode = _deadstate
            return self.returncode

    def _wait(self, timeout):
        if self.returncode is not None:
            return self.returncode
        if self._collect(timeout) is None:
            raise subprocess.TimeoutExpired(self.args, timeout)
        return self.returncode


def children_cpu():
    """CPU seconds of the warm children waited for so far: they are not this process's children, so
    ``RUSAGE_CHILDREN`` leaves them out."""
    return _children_cpu


def Popen(args, **kwargs):
    """subprocess.Popen(args, **kwargs), forked warm where it can be (see the module's docstring)."""
    command = _command(args)
    if command is None or os.environ.get("TB_MINDSPORE_TEST_COLD") == "1" or kwargs.get("shell") \
            or any(kwargs.get(k) for k in _UNSUPPORTED) or kwargs.get("close_fds") is False:
        return subprocess.Popen(args, **kwargs)
    child_env = dict(os.environ if kwargs.get("env") is None else kwargs["env"])
    fresh = any(child_env.get(k) != _START_ENV.get(k) for k in set(child_env) | set(_START_ENV)
                if k.startswith(FRESH_PREFIXES))
    zygote = None if fresh else _zygote_for(child_env)
    if zygote is None:
        return subprocess.Popen(args, **kwargs)
    return _WarmPopen(args, command + (zygote, child_env), **kwargs)


def run(args, *, input=None, capture_output=False, timeout=None, check=False, **kwargs):
    """subprocess.run with the child started by ``Popen`` above."""
    if input is not None:
        kwargs["stdin"] = subprocess.PIPE
    if capture_output:
        kwargs["stdout"] = kwargs["stderr"] = subprocess.PIPE
    with Popen(args, **kwargs) as process:
        try:
            stdout, stderr = process.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            process.kill()
            exc.stdout, exc.stderr = process.communicate()
            raise
        except BaseException:
            process.kill()
            raise
        retcode = process.poll()
        if check and retcode:
            raise subprocess.CalledProcessError(retcode, process.args, output=stdout, stderr=stderr)
    return subprocess.CompletedProcess(process.args, retcode, stdout, stderr)
