"""Real TensorBoard for tests: a WSGI app built by TensorBoard's own program (either loader), and a real
``tensorboard`` subprocess on a free port."""

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

from werkzeug import test as werkzeug_test

import warm

PREFIX = "/data/plugin/mindspore"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """TensorBoard's WSGI app over ``logdir`` with all installed plugins (ours through its entry point)."""

    def __init__(self, logdir, load_fast="false", path_prefix="", extra_argv=(), logdir_spec=None):
        from tensorboard import default, program
        from tensorboard.backend import application

        self.path_prefix = path_prefix
        tb = program.TensorBoard(plugins=default.get_plugins())
        where = ["--logdir_spec", logdir_spec] if logdir_spec is not None else ["--logdir", str(logdir)]
        argv = ["tensorboard"] + where + ["--load_fast", load_fast, "--reload_interval", "1"]
        if path_prefix:
            argv += ["--path_prefix", path_prefix]
        tb.configure(argv=argv + list(extra_argv))
        self.flags = tb.flags
        provider, multiplexer = tb._make_data_provider()
        self._tb = tb
        self.wsgi = application.TensorBoardWSGIApp(
            tb.flags, tb.plugin_loaders, provider, tb.assets_zip_provider, multiplexer
        )
        self.client = werkzeug_test.Client(self.wsgi)

    def get(self, route, **query):
        resp = self.client.get(self.path_prefix + route, query_string=query)
        return resp

    def json(self, route, expect=200, **query):
        resp = self.get(route, **query)
        assert resp.status_code == expect, (route, query, resp.status_code, resp.get_data(as_text=True)[:500])
        assert resp.headers["Content-Type"].startswith("application/json"), resp.headers["Content-Type"]
        return json.loads(resp.get_data(as_text=True))

    def plugin(self, route, expect=200, **query):
        return self.json(PREFIX + route, expect=expect, **query)

    def wait_for_runs(self, runs, timeout=90):
        deadline = time.time() + timeout
        got = None
        while time.time() < deadline:
            got = self.plugin("/runs")["runs"]
            if set(runs) <= set(got):
                return got
            time.sleep(0.25)
        raise AssertionError("runs %r never appeared (last: %r)" % (runs, got))

    def wait_for_last_step(self, run, tag, step, timeout=240):
        """Waits until the loader has read ``run``/``tag`` up to ``step`` (loading is asynchronous)."""
        deadline = time.time() + timeout
        last = None
        while time.time() < deadline:
            resp = self.get(PREFIX + "/scalars", run=run, tag=tag, max_points=10)
            if resp.status_code == 200:
                points = json.loads(resp.get_data(as_text=True))["points"]
                last = points[-1][0] if points else None
                if last is not None and last >= step:
                    return
            time.sleep(0.25)
        raise AssertionError("%s/%s never reached step %d (last: %r)" % (run, tag, step, last))

    def close(self):
        """Stops everything the app started: the plugins' background readers, TensorBoard's reload thread (it ends
        after its current pass once its interval reads 0, TensorBoard's "load once") and its data server (which
        TensorBoard starts with --die-after-stdin and keeps no handle of, but its stdin). A test
        process runs hundreds of these apps; left running, each reloaded its logdir every second until the end."""
        for plugin in getattr(self.wsgi, "_plugins", ()):
            if callable(getattr(plugin, "close", None)):
                plugin.close()
        ingester = getattr(self._tb, "_ingester", None)
        if hasattr(ingester, "_reload_interval"):
            ingester._path_to_run = {}
            ingester._reload_interval = 0
        stdin = getattr(ingester, "_stdin_handle", None)
        if stdin is not None:       # the data server runs with --die-after-stdin: closing its stdin ends it
            try:
                stdin.close()
            except OSError:
                pass


def tensorboard_bin():
    return os.path.join(os.path.dirname(sys.executable), "tensorboard")


@contextlib.contextmanager
def tensorboard_process(logdir, *extra, port=None, timeout=90, path_prefix="", logdir_spec=None):
    """A real ``tensorboard`` subprocess; yields its base URL once it answers. With ``logdir_spec`` it is started
    with ``--logdir_spec`` instead (``logdir`` then only says where its log file goes, beside it)."""
    port = port or free_port()
    where = ["--logdir_spec", logdir_spec] if logdir_spec is not None else ["--logdir", str(logdir)]
    cmd = [tensorboard_bin()] + where + ["--port", str(port), "--host", "127.0.0.1",
           "--reload_interval", "1"] + (["--path_prefix", path_prefix] if path_prefix else []) + list(extra)
    log = open(os.path.join(str(logdir), os.pardir, "tensorboard-%d.log" % port), "wb")
    proc = warm.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    base = "http://127.0.0.1:%d%s" % (port, path_prefix)
    try:
        deadline = time.time() + timeout
        while True:
            if proc.poll() is not None:
                raise AssertionError("tensorboard exited with %s; see %s" % (proc.returncode, log.name))
            try:
                with urllib.request.urlopen(base + "/data/plugins_listing", timeout=2) as r:
                    if r.status == 200:
                        break
            except (urllib.error.URLError, ConnectionError, OSError):
                pass
            if time.time() > deadline:
                raise AssertionError("tensorboard did not answer within %ds" % timeout)
            time.sleep(0.3)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def fetch_json(url, expect=200):
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            code, body, ctype = r.status, r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        code, body, ctype = e.code, e.read(), e.headers.get("Content-Type", "")
    assert expect is None or code == expect, (url, code, body[:300])
    assert ctype.startswith("application/json"), ctype
    return json.loads(body)
