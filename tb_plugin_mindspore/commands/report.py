"""``tb-mindspore report LOGDIR_OR_RUN --out report.html``: one self-contained HTML file to share a training's health.

The data is what the tab's routes answer, gathered by calling the plugin's own route handlers in this process (over
TensorBoard's loader and the plugin's ``*_MS`` reader, as ``tb-mindspore check`` loads a logdir), so the report shows
exactly what the tab would. The page is the tab's own code (``frontend/src/report.js``, built by npm into
``static/report.js``): its dashboard, Health panel, heatmaps, loss landscapes and run information, drawing the data
inlined in the file instead of asking a server. Nothing is fetched when the file is opened: the script, the styles
and the data are inlined, and the page's Content-Security-Policy forbids any connection.
"""

import argparse
import contextlib
import datetime
import json
import os
import shutil
import sys
import tempfile

from .. import __version__
from ..sources import logdir_status, safe_view

PROG = "tb-mindspore report"
ROUTE_PREFIX = "/data/plugin/mindspore"
BUNDLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static", "report.js")
# At most this many tags per scalars_batch call (the route accepts 500).
_TAGS_PER_CALL = 400
# Nothing may be loaded or sent from the report: inline script and styles only, images from data: / blob: URLs.
CSP = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
       "connect-src 'none'; base-uri 'none'; form-action 'none'")


class ReportError(Exception):
    """Bad input, with a one-line reason."""


# -- what to read -------------------------------------------------------------------------------------------------
def _has_data_files(folder):
    try:
        return any(logdir_status.is_data_file(e.name) for e in os.scandir(folder) if not e.is_dir())
    except OSError:
        return False


def is_run_folder(path):
    """A folder that holds event / summary files itself and no sub-folder that does: one run."""
    if not _has_data_files(path):
        return False
    for root, dirs, _ in os.walk(path):
        for d in dirs:
            if _has_data_files(os.path.join(root, d)):
                return False
    return True


@contextlib.contextmanager
def logdir_view(path):
    """The logdir to load for ``path``: the folder itself, or for a run folder a temporary logdir holding one run
    named after the folder (links to its files; nothing is copied or changed)."""
    if not is_run_folder(path):
        yield path
        return
    tmp = tempfile.mkdtemp(prefix="tb-mindspore-report-")
    try:
        run = os.path.join(tmp, os.path.basename(os.path.normpath(path)) or "run")
        os.mkdir(run)
        for entry in os.scandir(path):
            if not entry.is_dir():
                os.symlink(os.path.abspath(entry.path), os.path.join(run, entry.name))
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check_input(path, out):
    """Absolute input path; raises :class:`ReportError` for a missing input or an output that cannot be written."""
    if not path:
        raise ReportError("missing LOGDIR_OR_RUN (a folder of runs, or one run folder)")
    full = os.path.abspath(os.path.expanduser(path))
    if not os.path.exists(full):
        hint = "" if os.path.isabs(os.path.expanduser(path)) else " (relative to the current folder %s)" % os.getcwd()
        raise ReportError("no such folder: %s%s" % (full, hint))
    if not os.path.isdir(full):
        raise ReportError("not a folder: %s" % full)
    out_dir = os.path.dirname(os.path.abspath(out)) or "."
    if os.path.isdir(os.path.abspath(out)):
        raise ReportError("--out is a folder: %s (give a file name, e.g. report.html)" % os.path.abspath(out))
    if not os.path.isdir(out_dir):
        raise ReportError("the folder of --out does not exist: %s" % out_dir)
    if not os.access(out_dir, os.W_OK):
        raise ReportError("cannot write into %s" % out_dir)
    return full


# -- the data: the plugin's own route answers -----------------------------------------------------------------------
class RouteCaller:
    """Calls the plugin's route handlers in process, as TensorBoard would for a request; answers decoded JSON."""

    def __init__(self, logdir):
        # lazy: start-up cost (`tb-mindspore --help` and the other commands do not load TensorBoard's plugin machinery)
        from tensorboard.plugins import base_plugin

        from ..server.plugin import MindSporePlugin
        from ..sources.logdir import load_provider

        with safe_view.safe_view(logdir) as view:
            data_provider = load_provider(view)
        flags = argparse.Namespace(reload_interval=0)   # the *_MS files are read here, not in a thread
        self.plugin = MindSporePlugin(base_plugin.TBContext(data_provider=data_provider, logdir=logdir, flags=flags))
        ms = getattr(self.plugin, "_ms", None)
        if ms is not None:
            for _ in range(100000):                     # a few MB per round: read everything there is
                if not ms.ms.reload().pending:
                    break
        self.apps = self.plugin.get_plugin_apps()

    def get(self, route, params=()):
        """``(status, body)`` of ``route`` (e.g. ``"runs"``) with query ``params`` (pairs)."""
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        environ = EnvironBuilder(path="%s/%s" % (ROUTE_PREFIX, route), query_string=list(params)).get_environ()
        app_iter, status, _ = run_wsgi_app(self.apps["/" + route], environ, buffered=True)
        body = b"".join(app_iter)
        return int(status.split()[0]), json.loads(body.decode("utf-8")) if body else None

    def must(self, route, params=()):
        status, body = self.get(route, params)
        if status != 200:
            message = (body or {}).get("error", {}).get("message", "HTTP %d" % status)
            raise ReportError("reading %s failed: %s" % (route, message))
        return body


def _entries(tags_body, run, kind):
    for entries in tags_body["runs"].get(run, {}).values():
        for e in entries:
            if e.get("kind", "scalar") == kind and not (kind == "scalar" and e.get("family")):
                yield e["tag"]


def gather(logdir, source=None):
    """Everything the report page asks for: ``{"meta", "routes": {route: answer}, "scalars": {run: {tag: answer}},
    "layers", "histograms": {run: {tag: answer}}, "landscape": {run: {tag: {"last" | step: answer}}}}``."""
    calls = RouteCaller(logdir)
    routes = {name: calls.must(name) for name in ("runs", "status", "tags", "contract", "health", "run_info",
                                                  "landscapes", "graphs")}
    runs, tags = routes["runs"]["runs"], routes["tags"]
    if not runs:
        raise ReportError("no training runs under %s (no TensorBoard event files or MindSpore summary files with "
                          "data)" % (source or logdir))
    status = routes["status"]
    status["logdir"] = status["logdir_abs"] = source or logdir
    data = {"routes": routes, "scalars": {}, "layers": {}, "histograms": {}, "landscape": {}, "left_out": [],
            "table": {}, "graph": {}, "markers": {}, "samples": {}}

    def keep(where, run, tag, params_route, params):
        code, body = calls.get(params_route, params)
        if code == 200:
            data[where].setdefault(run, {})[tag] = body
        else:   # one series that cannot be read leaves only itself out
            data["left_out"].append({"run": run, "tag": tag, "reason": (body or {}).get("error", {}).get("message")})

    for run in runs:
        names = sorted(set(_entries(tags, run, "scalar")))
        for lo in range(0, len(names), _TAGS_PER_CALL):
            chunk = names[lo:lo + _TAGS_PER_CALL]
            body = calls.must("scalars_batch", [("run", run)] + [("tag", t) for t in chunk])
            for series in body["series"]:
                data["scalars"].setdefault(run, {})[series["tag"]] = series
        for tag in _entries(tags, run, "layers"):
            keep("layers", run, tag, "layers", [("run", run), ("tag", tag)])
        for tag in _entries(tags, run, "histogram"):
            keep("histograms", run, tag, "histograms", [("run", run), ("tag", tag)])
        for tag in _entries(tags, run, "table"):   # mindformers' layer x head / expert tables, at their last step
            keep("table", run, tag, "table", [("run", run), ("tag", tag)])
        for route in ("markers", "samples"):         # steps other writers marked; the samples x axis
            code, body = calls.get(route, [("run", run)])
            if code == 200:
                data[route][run] = body
    for entry in routes["graphs"]["runs"]:
        keep("graph", entry["run"], "graph", "graph", [("run", entry["run"])])
    for run, listing in routes["landscapes"]["runs"].items():
        for entry in listing:
            params = [("run", run), ("tag", entry["tag"])]
            code, body = calls.get("landscape", params + [("step", str(entry["step"]))])
            if code == 200:
                shelf = data["landscape"].setdefault(run, {}).setdefault(entry["tag"], {})
                shelf[str(entry["step"])] = shelf["last"] = body   # the listing is in step order: the last wins
    data["meta"] = {"source": source or logdir, "runs": len(runs), "version": __version__,
                    "generated": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    return data


# -- the file -----------------------------------------------------------------------------------------------------
def _escape_text(text):
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def render_html(data, bundle, title):
    """The report page: the data as inline JSON, the bundle as an inline script (neither can end its element)."""
    payload = json.dumps(data, separators=(",", ":"), allow_nan=False).replace("<", "\\u003c")
    script = bundle.replace("</script", "<\\/script").replace("<!--", "<\\!--")
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"%s\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            "<title>%s</title>\n</head><body>\n"
            "<script type=\"application/json\" id=\"ms-report-data\">%s</script>\n"
            "<script>%s</script>\n</body></html>\n" % (CSP, _escape_text(title), payload, script))


def read_bundle():
    try:
        with open(BUNDLE, encoding="utf-8") as f:
            return f.read()
    except OSError:
        raise ReportError("the report's frontend bundle is not built (run `npm ci && npm run build` in frontend/)")


def write_report(path, out="report.html", title=None):
    """Writes the report of ``path`` (a logdir or one run folder) to ``out``; returns ``(runs, bytes)``."""
    full = check_input(path, out)
    bundle = read_bundle()
    with logdir_view(full) as logdir:
        data = gather(logdir, source=full)
    title = title or "MindSpore training report: %s" % os.path.basename(os.path.normpath(full))
    data["meta"]["title"] = title
    html = render_html(data, bundle, title)
    out = os.path.abspath(out)
    tmp = out + ".tmp-%d" % os.getpid()
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(html)
        os.replace(tmp, out)
    except OSError as e:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise ReportError("cannot write %s: %s" % (out, e.strerror or e))
    return data["meta"]["runs"], len(html.encode("utf-8"))


# -- the subcommand -----------------------------------------------------------------------------------------------
def add_report_parser(subparsers):
    """Registers ``report``; ``args.func(args)`` returns the exit status (0 written, 2 bad input)."""
    p = subparsers.add_parser(
        "report",
        help="write one self-contained HTML file with the runs' health findings, charts and per-layer heatmaps",
        description="Writes one HTML file that opens from disk with no network and no server: each run's health "
                    "findings, the core and diagnostic charts, the per-layer heatmaps, loss landscapes and run "
                    "information, drawn by the MindSpore tab's own code from data inlined in the file. "
                    "LOGDIR_OR_RUN is a folder of runs (as given to tensorboard --logdir) or one run folder.",
        epilog="Exit status: 0 when the report was written, 2 on bad input (with a one-line reason).",
    )
    p.add_argument("path", nargs="?", metavar="LOGDIR_OR_RUN", help="folder of runs, or one run folder")
    p.add_argument("--out", default="report.html", metavar="FILE", help="the HTML file to write (default: %(default)s)")
    p.add_argument("--title", default=None, help="the page title (default: the folder's name)")
    p.set_defaults(func=run_report)
    return p


def run_report(args):
    try:
        runs, size = write_report(args.path, out=args.out, title=args.title)
    except ReportError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    print("%s: wrote %s (%d run%s, %.1f MB)" % (PROG, os.path.abspath(args.out), runs, "" if runs == 1 else "s",
                                                size / 1e6))
    return 0
