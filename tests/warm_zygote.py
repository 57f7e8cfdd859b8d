"""The warm Python behind ``warm.py``: imports MindSpore, TensorBoard and this project once, then forks a child per
command it is sent over a Unix socket and runs the command in it as ``python`` would (``-c``, ``-m`` or a script,
with the sender's stdin, stdout, stderr, working folder, environment and ignored signals), ending as Python ends
(non-daemon threads joined, atexit handlers) without tearing the loaded modules down. It reports each child's pid
and, once reaped, its exit code and CPU time; it ends when its stdin closes (the test process that started it has
gone).

Run: python warm_zygote.py SOCKET_PATH    (prints "ready" once it listens)
"""

import atexit
import gc
import io
import json
import os
import runpy
import select
import signal
import socket
import struct
import sys
import tempfile
import threading
import types

import numpy

HEADER = struct.Struct("!Q")
STARTED_PYTHONPATH = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]


def preload():
    """What the suite's children import first: about 3 s of CPU each child no longer spends. Returns the
    environment variables the imports set (importing MindSpore sets one), which each child gets as if it had
    imported them itself."""
    before = dict(os.environ)
    import mindspore  # noqa: F401
    import mindspore.dataset  # noqa: F401
    from mindspore import nn, ops  # noqa: F401
    from mindspore.train import Model  # noqa: F401
    from tensorboard import default, main, program  # noqa: F401

    default.get_plugins()
    import tb_mindspore_callbacks
    import tb_plugin_mindspore.cli  # noqa: F401

    tb_mindspore_callbacks.TrainMonitor, tb_mindspore_callbacks.LoopMonitor  # noqa: B018 (lazy names loaded)
    return {k: v for k, v in os.environ.items() if before.get(k) != v}


def read_request(conn):
    """One request: the header and the first bytes come with the three descriptors, the rest follows."""
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 16, 3)
    if not data:
        return None, fds
    while len(data) < HEADER.size:
        data += conn.recv(1 << 16)
    (size,) = HEADER.unpack_from(data)
    body = data[HEADER.size:]
    while len(body) < size:
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise EOFError("request cut short")
        body += chunk
    return json.loads(body.decode()), fds


def serve(path):
    """Parent side: never returns. In a forked child it returns (request, descriptors) to run."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    conns = []
    by_pid = {}
    while True:
        readable, _, _ = select.select([0, listener] + conns, [], [], 0.02)
        for r in readable:
            if r == 0:
                if not os.read(0, 1 << 10):
                    os._exit(0)
            elif r is listener:
                conns.append(listener.accept()[0])
            else:
                conns.remove(r)
                try:
                    request, fds = read_request(r)
                except (OSError, EOFError, ValueError):
                    r.close()
                    continue
                if request is None:
                    r.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    listener.close()
                    for c in conns + list(by_pid.values()):
                        c.close()
                    r.close()
                    return request, fds
                for fd in fds:
                    os.close(fd)
                r.sendall(b'{"pid": %d}\n' % pid)
                by_pid[pid] = r
        while by_pid:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = by_pid.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(b'{"rc": %d, "cpu": %.3f}\n' % (os.waitstatus_to_exitcode(status),
                                                                  usage.ru_utime + usage.ru_stime))
                except OSError:
                    pass
                conn.close()


def stdio(fd, writing, unbuffered, line_buffering):
    raw = io.FileIO(fd, "w" if writing else "r", closefd=False)
    if not writing:
        return io.TextIOWrapper(io.BufferedReader(raw), encoding="utf-8")
    buffered = raw if unbuffered else io.BufferedWriter(raw)
    return io.TextIOWrapper(buffered, encoding="utf-8", errors="backslashreplace" if fd == 2 else "strict",
                            line_buffering=line_buffering or unbuffered, write_through=unbuffered)


def signals(ignored):
    """What a program started by the sender finds: the signals the sender ignores stay ignored, every other
    disposition back to its default; then what Python sets at start-up (SIGINT raises KeyboardInterrupt unless
    ignored, SIGPIPE and SIGXFSZ ignored)."""
    for signum in signal.valid_signals():
        if signum in (signal.SIGKILL, signal.SIGSTOP):
            continue
        if signum in ignored or signum in (signal.SIGPIPE, signal.SIGXFSZ):
            how = signal.SIG_IGN
        elif signum == signal.SIGINT:
            how = signal.default_int_handler
        else:
            how = signal.SIG_DFL
        try:
            signal.signal(signum, how)
        except (OSError, ValueError):
            pass


def become(request, fds, imported_env):
    """Child side: takes over the descriptors, folder, environment and arguments of the command."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    if request.get("new_session"):
        os.setsid()
    signals(set(request["ignored"]))
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ.update(imported_env)
    started = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if started != STARTED_PYTHONPATH:      # as Python would have put them: after the script's folder
        sys.path[1:1 + len(STARTED_PYTHONPATH)] = [os.path.abspath(p) for p in started]
    tempfile.tempdir = None
    numpy.random.seed()      # a fresh process draws a fresh seed; a forked one would repeat the parent's
    unbuffered = request["unbuffered"] or bool(os.environ.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = stdio(0, False, False, False)
    sys.stdout = sys.__stdout__ = stdio(1, True, unbuffered, os.isatty(1))
    sys.stderr = sys.__stderr__ = stdio(2, True, unbuffered, True)


def run(request):
    """Runs the command in a fresh __main__ module, setting sys.argv and sys.path[0] the way ``python -c`` / ``-m`` /
    a script path does."""
    kind, target, args = request["kind"], request["target"], request["args"]
    main = types.ModuleType("__main__")
    main.__builtins__ = __builtins__
    sys.modules["__main__"] = main
    if kind == "m":
        sys.argv = [target] + args
        sys.path[0] = os.getcwd()
        sys.modules.pop(target, None)   # loaded by the warm Python: ``python -m`` finds it not imported yet
        runpy._run_module_as_main(target, alter_argv=True)
        return
    if kind == "c":
        sys.argv = ["-c"] + args
        sys.path[0] = ""
        code = compile(target, "<string>", "exec")
    else:
        sys.argv = [target] + args
        sys.path[0] = os.path.dirname(os.path.realpath(target))
        with open(target, "rb") as f:
            code = compile(f.read(), target, "exec")
        main.__file__ = target
        main.__cached__ = None
    exec(code, main.__dict__)


def exit_code(error):
    """The exit code Python gives an uncaught SystemExit or exception (printing what it prints)."""
    if error is None:
        return 0
    if isinstance(error, SystemExit):
        if error.code is None:
            return 0
        if isinstance(error.code, int):
            return error.code
        print(error.code, file=sys.stderr)
        return 1
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename == __file__:   # as if run by python itself
        tb = tb.tb_next
    sys.excepthook(type(error), error.with_traceback(tb), tb)
    return "interrupted" if isinstance(error, KeyboardInterrupt) else 1   # Python then ends itself by SIGINT


def finish(error):
    """Python's exit in the order it runs (non-daemon threads joined, atexit handlers, the script's own objects
    finalised, output flushed) but without tearing down the modules the warm Python had loaded: finalising them
    touched every page the child shared with its parent, 0.7 s of CPU a child."""
    code = exit_code(error)
    del error
    try:
        threading._shutdown()
    except BaseException:       # Python too reports and goes on
        pass
    atexit._run_exitfuncs()
    main = sys.modules.get("__main__")
    if main is not None:
        main.__dict__.clear()
    sys.last_traceback = sys.last_value = sys.last_type = None
    gc.collect()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code == "interrupted":
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code & 0xFF if isinstance(code, int) else 1)


if __name__ == "__main__":
    _imported_env = preload()
    gc.freeze()     # what the parent loaded is never collected: a child's collections skip it
    _request, _fds = serve(sys.argv[1])
    become(_request, _fds, _imported_env)
    del _fds
    try:
        run(_request)
    except BaseException as _e:
        finish(_e)
    finish(None)
