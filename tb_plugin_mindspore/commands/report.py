"""``tb-mindspore report LOGDIR_OR_RUN --out report.html``: one self-contained HTML file to share a training's health.

The data is what the tab's routes answer, gathered by calling the plugin's own route handlers in this process (over
the plugin's own readers of event files and ``*_MS`` files, as ``tb-mindspore check`` loads a logdir), so the report
shows exactly what the tab would, and its warnings name every record and file left out. The page is the tab's own
code (``frontend/src/report.js``, built by npm into ``static/report.js``): its dashboard (every chart, heatmap and
distribution), Health panel, loss landscapes, run information, images and tensors and the Cluster section, drawing
the data inlined in the file instead of asking a server; where a size budget (below) keeps fewer steps than the tab
shows, the view says so. Nothing is fetched when the file is opened: the script, the styles
and the data are inlined, and the page's Content-Security-Policy forbids any connection.
"""

import argparse
import base64
import contextlib
import datetime
import json
import os
import shutil
import sys
import tempfile

from .. import __version__, metadata
from ..sources import logdir_status

PROG = "tb-mindspore report"
ROUTE_PREFIX = "/data/plugin/mindspore"
BUNDLE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static", "report.js")
# At most this many tags per scalars_batch call (the route accepts 500).
_TAGS_PER_CALL = 400
# What the tab's views ask for (frontend: api/client.js DEFAULT_MAX_POINTS, api/runData.js DEFAULT_MAX_VALUES,
# sections/cluster/clusterView.js MAX_STEPS; the histograms route's default, answers/histograms.py
# DEFAULT_MAX_STEPS, for the distributions), so the report holds what the tab draws.
TAB_MAX_POINTS = 2000
TAB_TENSOR_VALUES = 256
TAB_CLUSTER_STEPS = 1000
TAB_HISTOGRAM_STEPS = 1000
# Size budgets of one report. Distribution charts: every histogram step up to the tab's own limit (1,000 steps a
# chart) while all the charts together stay within HISTOGRAM_ROWS_BUDGET rows (a row is about 120 bytes of JSON);
# beyond that evenly spaced steps, at least MIN_HISTOGRAM_STEPS a chart, and the chart says so. Images: every step
# while the image bytes stay within IMAGE_BYTES_BUDGET, else evenly spaced steps (said on the card). Cluster: the
# heatmap of every metric, and the curves of the first RANK_CURVES ranks of each cluster while all those curves
# hold fewer than RANK_CURVE_POINTS_BUDGET points (about 40 bytes each); the other ranks' curves answer "not part of
# this report" when clicked.
HISTOGRAM_ROWS_BUDGET = 60000
MIN_HISTOGRAM_STEPS = 50
IMAGE_BYTES_BUDGET = 8000000
RANK_CURVES = 16
RANK_CURVE_POINTS_BUDGET = 200000
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
    named after the folder (links to its files and rank files; nothing is copied or changed)."""
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
            elif entry.name == metadata.CLUSTER_DIR:     # the rank files (a real folder: walks do not follow links)
                os.mkdir(os.path.join(run, entry.name))
                for rank_file in os.scandir(entry.path):
                    os.symlink(os.path.abspath(rank_file.path), os.path.join(run, entry.name, rank_file.name))
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

        data_provider = load_provider(logdir)   # the plugin's own record reader: every file read once
        flags = argparse.Namespace(reload_interval=0)   # the *_MS files are read here, not in a thread
        self.plugin = MindSporePlugin(base_plugin.TBContext(data_provider=data_provider, logdir=logdir, flags=flags))
        ms = self.plugin.sources.ms
        if ms is not None:
            for _ in range(100000):                     # 16 MB per round: read everything there is
                if not ms.reload().pending:
                    break
        self.apps = self.plugin.get_plugin_apps()

    def close(self):
        self.plugin.close()

    def get(self, route, params=()):
        """``(status, body)`` of ``route`` (e.g. ``"runs"``) with query ``params`` (pairs)."""
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        environ = EnvironBuilder(path="%s/%s" % (ROUTE_PREFIX, route), query_string=list(params)).get_environ()
        app_iter, status, _ = run_wsgi_app(self.apps["/" + route], environ, buffered=True)
        body = b"".join(app_iter)
        return int(status.split()[0]), json.loads(body.decode("utf-8")) if body else None

    def get_bytes(self, route, params=()):
        """``(status, body bytes, mime type)`` of a route that answers bytes (``image``)."""
        from werkzeug.test import EnvironBuilder, run_wsgi_app

        environ = EnvironBuilder(path="%s/%s" % (ROUTE_PREFIX, route), query_string=list(params)).get_environ()
        app_iter, status, headers = run_wsgi_app(self.apps["/" + route], environ, buffered=True)
        mime = dict(headers).get("Content-Type", "application/octet-stream").split(";")[0]
        return int(status.split()[0]), b"".join(app_iter), mime

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


def _thin(items, limit):
    """At most ``limit`` items, evenly spaced, the first and the last kept."""
    if len(items) <= limit:
        return list(items)
    if limit <= 1:
        return list(items[-1:])
    picks = sorted({round(i * (len(items) - 1) / (limit - 1)) for i in range(limit)})
    return [items[i] for i in picks]


def histogram_steps(series, budget=None):
    """Steps kept per distribution chart when ``series`` charts share ``budget`` rows (default
    ``HISTOGRAM_ROWS_BUDGET``): the tab's own limit (``TAB_HISTOGRAM_STEPS``) unless the budget is smaller, never
    below ``MIN_HISTOGRAM_STEPS``."""
    budget = HISTOGRAM_ROWS_BUDGET if budget is None else budget
    if series <= 0:
        return TAB_HISTOGRAM_STEPS
    return max(MIN_HISTOGRAM_STEPS, min(TAB_HISTOGRAM_STEPS, budget // series))


class Gatherer:
    """Collects every route answer the tab's views ask for, for the runs of one logdir, within the size budgets."""

    def __init__(self, calls, routes):
        self.calls = calls
        self.routes = routes
        self.data = {"routes": routes, "scalars": {}, "layers": {}, "histograms": {}, "landscape": {},
                     "images": {}, "image_bytes": {}, "tensors": {}, "cluster": {}, "cluster_ranks": {},
                     "left_out": [], "budgets": {}, "table": {}, "graph": {}, "markers": {}, "samples": {}}
        self.curve_points = 0      # points of the ranks' curves kept so far (RANK_CURVE_POINTS_BUDGET)

    def keep(self, where, keys, route, params, run=None, tag=None):
        """Stores the answer of ``route`` under ``data[where][k0][k1]...``; a series that cannot be read leaves only
        itself out (and says so)."""
        code, body = self.calls.get(route, params)
        if code != 200:
            self.data["left_out"].append({"run": run, "tag": tag,
                                          "reason": (body or {}).get("error", {}).get("message")})
            return None
        shelf = self.data[where]
        for k in keys[:-1]:
            shelf = shelf.setdefault(k, {})
        shelf[keys[-1]] = body
        return body

    def scalars(self, run):
        names = sorted(set(_entries(self.routes["tags"], run, "scalar")))
        for lo in range(0, len(names), _TAGS_PER_CALL):
            chunk = names[lo:lo + _TAGS_PER_CALL]
            # The tab's own request: as many points, and the steps a restart superseded.
            params = [("run", run)] + [("tag", t) for t in chunk] + [
                ("max_points", str(TAB_MAX_POINTS)), ("superseded", "1")]
            body = self.calls.must("scalars_batch", params)
            for series in body["series"]:
                self.data["scalars"].setdefault(run, {})[series["tag"]] = series

    def others(self, run):
        """What other writers give a run: mindformers' layer x head / expert tables (at their last step), the steps
        marked (abnormal global norms, checkpoints) and the samples x axis."""
        for tag in _entries(self.routes["tags"], run, "table"):
            self.keep("table", (run, tag), "table", [("run", run), ("tag", tag)], run, tag)
        for route in ("markers", "samples"):
            code, body = self.calls.get(route, [("run", run)])
            if code == 200:
                self.data[route][run] = body

    def graphs(self):
        """The model graph of every run that recorded one."""
        for entry in self.routes["graphs"]["runs"]:
            self.keep("graph", (entry["run"], "graph"), "graph", [("run", entry["run"])], entry["run"], "graph")

    def histograms(self, runs):
        pairs = [(run, tag) for run in runs for tag in _entries(self.routes["tags"], run, "histogram")]
        steps = histogram_steps(len(pairs))
        self.data["budgets"]["histogram_steps"] = steps
        for run, tag in pairs:
            body = self.keep("histograms", (run, tag), "histograms",
                             [("run", run), ("tag", tag), ("max_steps", str(steps))], run, tag)
            if body is not None and body.get("downsampled"):
                body["report_budget"] = steps

    def media(self):
        listing = self.calls.must("media")
        self.routes["media"] = listing
        images = [(run, e["tag"]) for run, entry in sorted(listing["runs"].items()) for e in entry["images"]]
        left = IMAGE_BYTES_BUDGET
        for i, (run, tag) in enumerate(images):
            body = self.keep("images", (run, tag), "images", [("run", run), ("tag", tag)], run, tag)
            if body is None:
                continue
            share = left // (len(images) - i)    # what is left, shared by the image series still to come
            steps = body["steps"]
            size = sum(s["bytes"] for s in steps) or 1
            if size > share:
                keep = max(1, int(len(steps) * share / size))
                body["report_total_steps"] = len(steps)
                body["steps"] = steps = _thin(steps, keep)
            for s in steps:
                code, raw, mime = self.calls.get_bytes("image", [("run", run), ("tag", tag), ("step", str(s["step"]))])
                if code != 200:
                    continue
                left -= len(raw)
                self.data["image_bytes"].setdefault(run, {}).setdefault(tag, {})[str(s["step"])] = (
                    "data:%s;base64,%s" % (mime, base64.b64encode(raw).decode("ascii")))
        for run, entry in sorted(listing["runs"].items()):
            for e in entry["tensors"]:
                self.keep("tensors", (run, e["tag"]), "tensors",
                          [("run", run), ("tag", e["tag"]), ("max_values", str(TAB_TENSOR_VALUES))], run, e["tag"])

    def clusters(self):
        listing = self.calls.must("clusters")
        self.routes["clusters"] = listing
        for c in listing["clusters"]:
            run = c["run"]
            for metric in c["metrics"]:
                self.keep("cluster", (run, metric), "cluster",
                          [("run", run), ("metric", metric), ("max_steps", str(TAB_CLUSTER_STEPS))], run, metric)
            matrix = self.data["cluster"].get(run, {})
            ranks = next(iter(matrix.values()), {}).get("ranks", []) if matrix else []
            kept = 0
            for r in ranks[:RANK_CURVES]:
                if self.curve_points >= RANK_CURVE_POINTS_BUDGET:
                    break
                for metric in c["metrics"]:
                    body = self.keep("cluster_ranks", (run, metric, str(r["rank"])), "cluster",
                                     [("run", run), ("metric", metric), ("rank", str(r["rank"]))], run, metric)
                    self.curve_points += len((body or {}).get("points") or ())
                kept += 1
            if kept < len(ranks):
                self.data["budgets"].setdefault("rank_curves", {})[run] = kept

    def landscapes(self):
        for run, listing in self.routes["landscapes"]["runs"].items():
            for entry in listing:
                params = [("run", run), ("tag", entry["tag"])]
                code, body = self.calls.get("landscape", params + [("step", str(entry["step"]))])
                if code == 200:
                    shelf = self.data["landscape"].setdefault(run, {}).setdefault(entry["tag"], {})
                    shelf[str(entry["step"])] = shelf["last"] = body   # the listing is in step order: the last wins


def gather(logdir, source=None):
    """Everything the report page asks for: ``{"meta", "routes": {route: answer}, "scalars": {run: {tag: answer}},
    "layers", "histograms", "tensors": {run: {tag: answer}}, "images": {run: {tag: answer}}, "image_bytes": {run:
    {tag: {step: data URL}}}, "cluster": {run: {metric: answer}}, "cluster_ranks": {run: {metric: {rank: answer}}},
    "landscape": {run: {tag: {"last" | step: answer}}}, "budgets", "left_out"}``."""
    calls = RouteCaller(logdir)
    try:
        return _gather(calls, source or logdir)
    finally:
        calls.close()


def _gather(calls, source):
    routes = {name: calls.must(name) for name in ("runs", "status", "tags", "contract", "health", "run_info",
                                                  "landscapes", "graphs")}
    runs = routes["runs"]["runs"]
    if not runs:
        raise ReportError("no training runs under %s (no TensorBoard event files or MindSpore summary files with "
                          "data)" % source)
    status = routes["status"]
    status["logdir"] = status["logdir_abs"] = source
    g = Gatherer(calls, routes)
    for run in runs:
        g.scalars(run)
        for tag in _entries(routes["tags"], run, "layers"):
            g.keep("layers", (run, tag), "layers", [("run", run), ("tag", tag)], run, tag)
        g.others(run)
    g.graphs()
    g.histograms(runs)
    g.media()
    g.clusters()
    g.landscapes()

    data = g.data
    data["meta"] = {"source": source, "runs": len(runs), "version": __version__,
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
        help="write one self-contained HTML file with everything the tab shows for the runs",
        description="Writes one HTML file that opens from disk with no network and no server, holding everything "
                    "the MindSpore tab shows for the runs: each run's health findings, every chart, per-layer "
                    "heatmap and distribution, loss landscapes, run information, images and tensors and the "
                    "Cluster section, drawn by the tab's own code from data inlined in the file (within size "
                    "budgets; a view that keeps fewer steps than the tab says so). LOGDIR_OR_RUN is a folder of "
                    "runs (as given to tensorboard --logdir) or one run folder.",
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
