"""The MindSpore TensorBoard plugin: HTTP routes only, each a thin call into ``answers/``.

Every JSON route answers JSON, errors included: ``{"error": {"code": int, "message": str}}`` with 400 for a
malformed query, 404 for an unknown run or tag, 500 (logged) for anything unexpected. No route opens a file whose
path comes from a request; static files are served from a fixed listing of the package's ``static/`` folder. The
``image`` route answers an image's bytes (from memory, as read from a summary file), its errors JSON like the rest.
"""

import logging
import mimetypes
import os

from tensorboard import errors, plugin_util
from tensorboard.backend import http_util
from tensorboard.plugins import base_plugin
from werkzeug import wrappers

from .. import metadata
from ..answers import cluster, downsample, encode, histograms, landscapes, layers, media, page_contract, problems
from ..answers import compare, graphs, markers, run_info, samples_axis, scalars, tables
from ..answers import health as health_cache
from ..answers import runs as provider
from ..health import settings as health_settings
from ..sources import logdir_status, reload_watch, series_cache
from ..sources.logdir import Sources

logger = logging.getLogger(__name__)

STATIC_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "static")
DEFAULT_MAX_POINTS = 2000
MAX_POINTS_LIMIT = 100000
_JSON = "application/json"


def _respond_error(request, code, message):
    return http_util.Respond(request, {"error": {"code": code, "message": message}}, _JSON, code=code)


def _data_server_failed(error):
    """Whether ``error`` is TensorBoard's fast-loader data server gone (a gRPC error from its provider)."""
    return any(c.__module__.split(".")[0] == "grpc" for c in type(error).__mro__)


def _unexpected(plugin, request, error):
    """The JSON answer for an exception that is not a PublicError: 503 naming the cause when TensorBoard's data
    server is gone (see ``problems.data_server_message``), else a logged 500."""
    if _data_server_failed(error):
        logger.warning("mindspore plugin: %s: TensorBoard's data server failed: %s", request.path,
                       type(error).__name__)
        return _respond_error(request, 503, plugin._data_server_message())
    logger.exception("mindspore plugin: %s failed", request.path)
    return _respond_error(request, 500, "internal error in the MindSpore plugin: %s" % type(error).__name__)


def json_route(handler):
    """Turns ``handler(self, request) -> dict`` into a WSGI app that always answers JSON."""

    @wrappers.Request.application
    def app(self, request):
        try:
            body = handler(self, request)
            if isinstance(body, encode.Gzipped):   # compressed once, sent as is (unpacked for clients without gzip)
                return http_util.Respond(request, body.data, _JSON, content_encoding="gzip")
            return http_util.Respond(request, body, _JSON)
        except errors.PublicError as e:
            return _respond_error(request, e.http_code, str(e))
        except Exception as e:  # never a traceback page; the server keeps running
            return _unexpected(self, request, e)

    return app


def _required(request, name):
    value = request.args.get(name)
    if value is None or value == "":
        raise errors.InvalidArgumentError("missing query parameter %r" % name)
    return value


def _int_arg(request, name, default, low, high):
    raw = request.args.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise errors.InvalidArgumentError("query parameter %r must be an integer, got %r" % (name, raw))
    if not low <= value <= high:
        raise errors.InvalidArgumentError("query parameter %r must be in [%d, %d], got %d" % (name, low, high, value))
    return value


def _scalar_view(request):
    """``(max_points, window, with_superseded)`` of a scalars request: ``x_min`` / ``x_max`` (steps) and ``width``
    (pixel columns) pick a zoom window, ``superseded=1`` adds the points a restart superseded."""
    max_points = _int_arg(request, "max_points", DEFAULT_MAX_POINTS, downsample.MIN_POINTS, MAX_POINTS_LIMIT)
    x_min = _int_arg(request, "x_min", None, -(2 ** 63), 2 ** 63 - 1)
    x_max = _int_arg(request, "x_max", None, -(2 ** 63), 2 ** 63 - 1)
    if x_min is not None and x_max is not None and x_max < x_min:
        raise errors.InvalidArgumentError("query parameter 'x_max' must be >= 'x_min', got %d < %d" % (x_max, x_min))
    width = _int_arg(request, "width", None, 1, MAX_POINTS_LIMIT)
    window = None if x_min is None and x_max is None and width is None else scalars.Window(x_min, x_max, width)
    superseded = request.args.get("superseded", "")
    if superseded not in ("", "0", "1", "true", "false"):
        raise errors.InvalidArgumentError("query parameter 'superseded' must be 0 or 1, got %r" % superseded)
    return max_points, window, superseded in ("1", "true")


def _reload_watch(context, logdir, interval):
    """A started :class:`~..sources.reload_watch.ReloadWatch` over TensorBoard's Python loader, or None (fast loader,
    no reloading asked for)."""
    multiplexer = getattr(context, "multiplexer", None)
    flags = getattr(context, "flags", None)
    if multiplexer is None or flags is None:
        return None
    try:
        interval = float(interval)
    except (TypeError, ValueError):
        return None
    expect = getattr(flags, "reload_task", "auto") in ("auto", "thread") and interval > 0
    return reload_watch.ReloadWatch(multiplexer, {logdir: None} if logdir else {}, interval=interval,
                                    expect_thread=expect).start()


class MindSporePlugin(base_plugin.TBPlugin):
    plugin_name = metadata.PLUGIN_NAME

    def __init__(self, context):
        reload_interval = getattr(getattr(context, "flags", None), "reload_interval", 5.0)
        # One door for every point: TensorBoard's provider merged with the *_MS files and mindformers' logs under
        # the logdir (or every entry of --logdir_spec, runs named as TensorBoard names them), one run per training,
        # and every point of the runs the tab shows, read by the plugin itself (TensorBoard keeps a sample of each).
        self._sources = Sources.for_tensorboard(context, reload_interval=reload_interval)
        self._logdir = self._sources.logdir or ""
        self._data_provider = self._sources.provider
        self._view = provider.DataView(self._data_provider, multiplexer=self._sources.multiplexer)
        self._cache = encode.ResponseCache()
        self._batch = scalars.ScalarsBatch(self._sources, self._cache)
        self._layers = layers.LayerReader(self._data_provider, self._cache)
        self._histograms = histograms.HistogramReader(self._data_provider, self._cache)
        self._status = logdir_status.for_roots(self._sources.roots, self._logdir)
        self._clusters = cluster.ClusterReader(self._logdir, self._cache, roots=self._sources.roots)
        self._compares = compare.CompareReader()
        self._landscapes = landscapes.LandscapeReader(self._data_provider)
        self._run_infos = run_info.RunInfoReader(self._data_provider, self._sources.ms)
        self._media = media.MediaReader(self._data_provider, self._sources.ms)
        self._tables = tables.TableReader(self._data_provider, self._cache)
        self._samples = samples_axis.SamplesAxis(self._data_provider, self._cache)
        self._markers = markers.MarkerReader(self._sources.folders, self._cache)
        self._graphs = graphs.GraphReader(self._data_provider, self._cache, self._sources.ms)
        # The status route's warnings walk every reader; under load one collection serves every caller for a second,
        # and one that took seconds (thousands of folders) is kept longer and answered while the next is made.
        self._warnings = series_cache.TtlMemo(adaptive=True)
        # Health answers are kept per run while its data is unchanged; concurrent requests share one computation.
        # The same configuration gives the page its thresholds (the contract route): TensorBoard's
        # --mindspore_health_set RULE.PARAM=VALUE flags (loader.py; validated there), as `check --set` takes them.
        self._health_config = health_settings.config_from_settings(
            getattr(getattr(context, "flags", None), "mindspore_health_set", None) or [])
        # TensorBoard's Python loader reloads in one thread that the first exception ends for good (a store outage,
        # an undecodable record): watched, and replaced by the plugin's own reload loop once it is gone.
        self._reload_watch = _reload_watch(context, self._logdir, reload_interval)
        self._health = health_cache.HealthCache(self._sources, config=self._health_config)

    @property
    def sources(self):
        """The one door for data this plugin reads through (``sources.logdir.Sources``)."""
        return self._sources

    def close(self):
        """Stops the plugin's background readers and the reload watch (TensorBoard never calls it: it is for
        programs that embed the plugin in a WSGI app and tear it down, as the tests do)."""
        self._sources.close()
        self._health.close()
        if self._reload_watch is not None:
            self._reload_watch.stop()

    def get_plugin_apps(self):
        return {
            "/index.js": self._serve_index_js,
            "/static/*": self._serve_static,
            "/runs": self._serve_runs,
            "/status": self._serve_status,
            "/tags": self._serve_tags,
            "/contract": self._serve_contract,
            "/scalars": self._serve_scalars,
            "/health": self._serve_health,
            "/scalars_batch": self._serve_scalars_batch,
            "/layers": self._serve_layers,
            "/histograms": self._serve_histograms,
            "/landscapes": self._serve_landscapes, "/landscape": self._serve_landscape,
            "/run_info": self._serve_run_info,
            "/media": self._serve_media, "/images": self._serve_images, "/image": self._serve_image,
            "/tensors": self._serve_tensors,
            "/clusters": self._serve_clusters, "/cluster": self._serve_cluster,
            "/compare": self._serve_compare,
            "/table": self._serve_table, "/samples": self._serve_samples,
            "/graphs": self._serve_graphs, "/graph": self._serve_graph, "/markers": self._serve_markers,
        }

    def is_active(self):
        # The tab always shows: with no data it explains why (no event files, only _MS files, relative path, ...).
        return True

    def data_plugin_names(self):
        return (metadata.PLUGIN_NAME, provider.SCALARS_PLUGIN)

    def frontend_metadata(self):
        return base_plugin.FrontendMetadata(es_module_path="/index.js", tab_name=metadata.TAB_NAME)

    # -- static ------------------------------------------------------------------------------------------------
    @wrappers.Request.application
    def _serve_index_js(self, request):
        return self._static_file(request, "index.js")

    @wrappers.Request.application
    def _serve_static(self, request):
        name = request.path.rsplit("/static/", 1)[-1]
        return self._static_file(request, name)

    def _static_file(self, request, name):
        try:
            available = set(os.listdir(STATIC_DIR))
        except OSError:
            available = set()
        if name not in available:
            message = "no static file %r" % name
            if name == "index.js":
                message = "the MindSpore tab's frontend is not built (run `npm ci && npm run build` in frontend/)"
            return _respond_error(request, 404, message)
        with open(os.path.join(STATIC_DIR, name), "rb") as f:
            body = f.read()
        mimetype = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if name.endswith((".js", ".mjs")):
            mimetype = "text/javascript"
        return http_util.Respond(request, body, mimetype)

    # -- data ----------------------------------------------------------------------------------------------------
    @staticmethod
    def _ctx(request):
        return plugin_util.context(request.environ), plugin_util.experiment_id(request.environ)

    @json_route
    def _serve_runs(self, request):
        ctx, eid = self._ctx(request)
        return self._view.runs_answer(ctx, eid)

    @json_route
    def _serve_status(self, request):
        ctx, eid = self._ctx(request)
        try:
            runs, has_scalars = self._view.tags_summary(ctx, eid)
        except Exception as e:
            if not _data_server_failed(e):
                raise
            body = self._status.describe(0, False)
            body.update(reason="data_server_failed", message=self._data_server_message())
            provider_ok = False
        else:
            body = self._status.describe(runs, has_scalars)
            provider_ok = True
        # Everything left out, with its file and byte offset where there is one, so nothing is silently missing:
        # damaged *_MS records, unreadable files, records that break TensorBoard's loaders, malformed series.
        body["warnings"] = self._warnings.get((eid, provider_ok), lambda: problems.collect(
            self._sources.bind(ctx, eid), self._status, self._landscapes, self._run_infos, provider_ok=provider_ok,
            clusters=self._clusters, reloading=self._reload_watch))
        if self._reload_watch is not None:
            body["reloading"] = self._reload_watch.state()
        return body

    def _data_server_message(self):
        return problems.data_server_message(self._status.file_warnings())

    @json_route
    def _serve_tags(self, request):
        ctx, eid = self._ctx(request)
        return self._view.tags_answer(ctx, eid, request.args.get("run"))

    @json_route
    def _serve_contract(self, request):
        """Tier titles, expected series, axis units and health thresholds: the page's part of the contract."""
        return page_contract.build(self._health_config)

    @json_route
    def _serve_scalars(self, request):
        ctx, eid = self._ctx(request)
        run = _required(request, "run")
        tag = _required(request, "tag")
        return self._batch.one(ctx, eid, run, tag, *_scalar_view(request))

    @json_route
    def _serve_scalars_batch(self, request):
        ctx, eid = self._ctx(request)
        runs = [r for r in request.args.getlist("run") if r]
        tags = [t for t in request.args.getlist("tag") if t]
        return self._batch.read(ctx, eid, runs, tags, *_scalar_view(request))

    @json_route
    def _serve_layers(self, request):
        ctx, eid = self._ctx(request)
        run = _required(request, "run")
        tag = _required(request, "tag")
        layer = request.args.get("layer")
        if layer is not None:
            return self._layers.layer(ctx, eid, run, tag, layer)
        max_steps = _int_arg(request, "max_steps", layers.DEFAULT_MAX_STEPS, 1, layers.MAX_STEPS_LIMIT)
        return self._layers.matrix(ctx, eid, run, tag, max_steps)

    @json_route
    def _serve_histograms(self, request):
        ctx, eid = self._ctx(request)
        run = _required(request, "run")
        tag = _required(request, "tag")
        max_steps = _int_arg(request, "max_steps", histograms.DEFAULT_MAX_STEPS, 1, histograms.MAX_STEPS_LIMIT)
        return self._histograms.bands(ctx, eid, run, tag, max_steps)

    @json_route
    def _serve_health(self, request):
        ctx, eid = self._ctx(request)
        run = request.args.get("run")
        runs = [run] if run else None
        if run and run not in self._view.runs(ctx, eid):
            raise errors.NotFoundError("no run named %r" % run)
        return self._health.report_json(ctx, eid, runs=runs)

    # -- layer x head / expert tables (answers/tables.py) ---------------------------------------------------------------
    @json_route
    def _serve_table(self, request):
        ctx, eid = self._ctx(request)
        run, tag = _required(request, "run"), _required(request, "tag")
        return self._tables.table(ctx, eid, run, tag, _int_arg(request, "step", None, -(2 ** 63), 2 ** 63 - 1))

    @json_route
    def _serve_samples(self, request):
        """The samples x axis of a run (answers/samples_axis.py)."""
        ctx, eid = self._ctx(request)
        return self._samples.answer(ctx, eid, _required(request, "run"))

    @json_route
    def _serve_markers(self, request):
        """Steps other writers marked (mindformers' abnormal global norms and checkpoints: answers/markers.py)."""
        run = _required(request, "run")
        ctx, eid = self._ctx(request)
        if run not in self._view.runs(ctx, eid):
            raise errors.NotFoundError("no run named %r" % run)
        return self._markers.answer(run)

    # -- the model graph (answers/graphs.py) --------------------------------------------------------------------------
    @json_route
    def _serve_graphs(self, request):
        ctx, eid = self._ctx(request)
        return self._graphs.listing(ctx, eid)

    @json_route
    def _serve_graph(self, request):
        ctx, eid = self._ctx(request)
        return self._graphs.graph(ctx, eid, _required(request, "run"))

    # -- many ranks as one cluster (answers/cluster.py) ---------------------------------------------------------------
    @json_route
    def _serve_clusters(self, request):
        return self._clusters.listing()

    @json_route
    def _serve_cluster(self, request):
        run, metric = _required(request, "run"), _required(request, "metric")
        if request.args.get("rank") is not None:
            rank = _int_arg(request, "rank", 0, 0, 2 ** 31 - 1)
            return self._clusters.rank(run, metric, rank)
        max_steps = _int_arg(request, "max_steps", cluster.DEFAULT_MAX_STEPS, 1, cluster.MAX_STEPS_LIMIT)
        return self._clusters.matrix(run, metric, max_steps)

    # -- port check: a run against its reference (answers/compare.py) ---------------------------------------------
    @json_route
    def _serve_compare(self, request):
        ctx, eid = self._ctx(request)
        run, reference = _required(request, "run"), _required(request, "reference")
        offset = _int_arg(request, "offset", None, -1000000, 1000000)
        max_points = _int_arg(request, "max_points", compare.DEFAULT_MAX_POINTS, 10, MAX_POINTS_LIMIT)
        return self._compares.answer(self._sources.bind(ctx, eid), run, reference,
                                     noise=request.args.get("noise") or None,
                                     mapping_text=request.args.get("mapping") or None, offset=offset,
                                     max_points=max_points)

    # -- loss landscapes (answers/landscapes.py) -------------------------------------------------------------------
    @json_route
    def _serve_landscapes(self, request):
        ctx, eid = self._ctx(request)
        return self._landscapes.listing(ctx, eid, request.args.get("run") or None)

    @json_route
    def _serve_landscape(self, request):
        ctx, eid = self._ctx(request)
        step = request.args.get("step")
        step = None if step in (None, "") else _int_arg(request, "step", None, -(2 ** 63), 2 ** 63 - 1)
        run, tag = _required(request, "run"), _required(request, "tag")
        return self._landscapes.landscape(ctx, eid, run, tag, step)

    # -- run information and hyperparameters (answers/run_info.py) ---------------------------------------------------
    @json_route
    def _serve_run_info(self, request):
        ctx, eid = self._ctx(request)
        run = request.args.get("run")
        if run is None:
            return self._run_infos.all(ctx, eid)
        return self._run_infos.one(ctx, eid, _required(request, "run"))

    # -- images and tensors (answers/media.py) -------------------------------------------------------------------
    @json_route
    def _serve_media(self, request):
        ctx, eid = self._ctx(request)
        return self._media.listing(ctx, eid, request.args.get("run") or None)

    @json_route
    def _serve_images(self, request):
        ctx, eid = self._ctx(request)
        run, tag = _required(request, "run"), _required(request, "tag")
        return self._media.images(ctx, eid, run, tag)

    @wrappers.Request.application
    def _serve_image(self, request):
        """The image's bytes as they were written, with their mime type; errors as JSON like every route."""
        try:
            ctx, eid = self._ctx(request)
            run, tag = _required(request, "run"), _required(request, "tag")
            step = _int_arg(request, "step", None, -(2 ** 63), 2 ** 63 - 1)
            if step is None:
                raise errors.InvalidArgumentError("missing query parameter 'step'")
            body, mime = self._media.image(ctx, eid, run, tag, step)
        except errors.PublicError as e:
            return _respond_error(request, e.http_code, str(e))
        except Exception as e:
            return _unexpected(self, request, e)
        return http_util.Respond(request, body, mime)

    @json_route
    def _serve_tensors(self, request):
        ctx, eid = self._ctx(request)
        run, tag = _required(request, "run"), _required(request, "tag")
        max_values = _int_arg(request, "max_values", media.DEFAULT_MAX_VALUES, 1, media.MAX_VALUES_LIMIT)
        max_steps = _int_arg(request, "max_steps", media.DEFAULT_MAX_STEPS, 1, media.MAX_STEPS_LIMIT)
        return self._media.tensors(ctx, eid, run, tag, max_values=max_values, max_steps=max_steps)
