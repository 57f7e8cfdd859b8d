"""The MindSpore TensorBoard plugin: HTTP routes only, each a thin call into ``reading/``.

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

from . import metadata
from .health import cache as health_cache
from .health import cli as health_cli
from .reading import batch, downsample, encode, histograms, layers, logdir_spec, logdir_status, ms_provider
from .reading import page_contract, provider, run_fold
from .reading import event_series, scalar_answer, series_cache

logger = logging.getLogger(__name__)

STATIC_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "static")
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
    window = None if x_min is None and x_max is None and width is None else scalar_answer.Window(x_min, x_max, width)
    superseded = request.args.get("superseded", "")
    if superseded not in ("", "0", "1", "true", "false"):
        raise errors.InvalidArgumentError("query parameter 'superseded' must be 0 or 1, got %r" % superseded)
    return max_points, window, superseded in ("1", "true")


class MindSporePlugin(base_plugin.TBPlugin):
    plugin_name = metadata.PLUGIN_NAME

    def __init__(self, context):
        flags = getattr(context, "flags", None)
        # --logdir DIR, or --logdir_spec name1:DIR1,...: every reader below names runs as TensorBoard does.
        self._roots = logdir_spec.Roots.from_flags(flags, getattr(context, "logdir", "") or "")
        self._logdir = self._roots.logdir or ""
        reload_interval = getattr(flags, "reload_interval", 5.0)
        # MindSpore's own *_MS files under the logdir are served next to the event files, through one provider.
        # mindformers' training logs in run folders or named with --mindspore_mindformers_log (reading/log_source.py)
        from .reading import log_source

        logs = log_source.LogSource(self._roots, log_source.parse_flag(getattr(flags, "mindspore_mindformers_log",
                                                                               None)))
        merged, self._ms = ms_provider.with_ms_files(
            context.data_provider, self._logdir, reload_interval=reload_interval, roots=self._roots, logs=logs
        )
        # One run per training: rotated part folders and add_scalars key folders folded into their run.
        self._data_provider, self._multiplexer = run_fold.folded(merged, getattr(context, "multiplexer", None),
                                                                 self._roots)
        self._folders = run_fold.RunFolders(self._roots, self._data_provider)
        self._view = provider.DataView(self._data_provider, multiplexer=self._multiplexer)
        self._cache = series_cache.ResponseCache()
        # Every point of the runs the tab shows, read by the plugin itself (TensorBoard keeps a sample of each).
        self._events = event_series.for_logdir(self._logdir, interval=reload_interval, roots=self._roots,
                                               folder_of=self._folders.folders)
        self._batch = batch.ScalarsBatch(self._data_provider, self._cache, self._multiplexer,
                                         events=self._events, ms=self._ms_logdir())
        self._layers = layers.LayerReader(self._data_provider, self._cache)
        self._histograms = histograms.HistogramReader(self._data_provider, self._cache)
        self._status = logdir_status.for_roots(self._roots, self._logdir)
        # The status route's warnings walk every reader; under load one collection serves every caller for a second.
        self._warnings = series_cache.TtlMemo()
        # Health answers are kept per run while its data is unchanged; concurrent requests share one computation.
        # The same configuration gives the page its thresholds (the contract route): TensorBoard's
        # --mindspore_health_set RULE.PARAM=VALUE flags (loader.py; validated there), as `check --set` takes them.
        self._health_config = health_cli.config_from_settings(
            getattr(getattr(context, "flags", None), "mindspore_health_set", None) or [])
        self._health = health_cache.HealthCache(self._data_provider,
                                                logdir=self._folders if self._roots else None,
                                                config=self._health_config,
                                                multiplexer=self._multiplexer)

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
        from .reading import problems

        ctx, eid = self._ctx(request)
        try:
            tags = self._view.tags(ctx, eid)
        except Exception as e:
            if not _data_server_failed(e):
                raise
            body = self._status.describe(0, False)
            body.update(reason="data_server_failed", message=self._data_server_message())
            tags = None
        else:
            has_scalars = any(entries for tiers in tags.values() for entries in tiers.values())
            body = self._status.describe(len(tags), has_scalars)
        # Everything left out, with its file and byte offset where there is one, so nothing is silently missing:
        # damaged *_MS records, unreadable files, records that break TensorBoard's loaders, malformed series.
        provider_ok = tags is not None
        body["warnings"] = self._warnings.get((eid, provider_ok),
                                              lambda: problems.collect(self, ctx, eid, provider_ok=provider_ok))
        return body

    def _data_server_message(self):
        from .reading import problems

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

    # -- layer x head / expert tables (reading/tables.py) ---------------------------------------------------------------
    @json_route
    def _serve_table(self, request):
        if getattr(self, "_tables", None) is None:
            from .reading import tables

            self._tables = tables.TableReader(self._data_provider, self._cache)
        ctx, eid = self._ctx(request)
        run, tag = _required(request, "run"), _required(request, "tag")
        return self._tables.table(ctx, eid, run, tag, _int_arg(request, "step", None, -(2 ** 63), 2 ** 63 - 1))

    @json_route
    def _serve_samples(self, request):
        """The samples x axis of a run (reading/samples_axis.py)."""
        if getattr(self, "_samples", None) is None:
            from .reading import samples_axis

            self._samples = samples_axis.SamplesAxis(self._data_provider, self._cache)
        ctx, eid = self._ctx(request)
        return self._samples.answer(ctx, eid, _required(request, "run"))

    @json_route
    def _serve_markers(self, request):
        """Steps other writers marked (mindformers' abnormal global norms and checkpoints: reading/markers.py)."""
        if getattr(self, "_markers", None) is None:
            from .reading import markers

            self._markers = markers.MarkerReader(self._folders if self._roots else None, self._cache)
        run = _required(request, "run")
        ctx, eid = self._ctx(request)
        if run not in self._view.runs(ctx, eid):
            raise errors.NotFoundError("no run named %r" % run)
        return self._markers.answer(run)

    # -- the model graph (reading/graphs.py) --------------------------------------------------------------------------
    def _graph_reader(self):
        if getattr(self, "_graphs", None) is None:
            from .reading import graphs

            self._graphs = graphs.GraphReader(self._data_provider, self._cache, self._ms_logdir())
        return self._graphs

    @json_route
    def _serve_graphs(self, request):
        ctx, eid = self._ctx(request)
        return self._graph_reader().listing(ctx, eid)

    @json_route
    def _serve_graph(self, request):
        ctx, eid = self._ctx(request)
        return self._graph_reader().graph(ctx, eid, _required(request, "run"))

    # -- many ranks as one cluster (reading/cluster.py) ---------------------------------------------------------------
    def _cluster_reader(self):
        if getattr(self, "_clusters", None) is None:
            from .reading import cluster

            self._clusters = cluster.ClusterReader(self._logdir, self._cache, roots=self._roots)
        return self._clusters

    @json_route
    def _serve_clusters(self, request):
        return self._cluster_reader().listing()

    @json_route
    def _serve_cluster(self, request):
        from .reading import cluster

        run, metric = _required(request, "run"), _required(request, "metric")
        if request.args.get("rank") is not None:
            rank = _int_arg(request, "rank", 0, 0, 2 ** 31 - 1)
            return self._cluster_reader().rank(run, metric, rank)
        max_steps = _int_arg(request, "max_steps", cluster.DEFAULT_MAX_STEPS, 1, cluster.MAX_STEPS_LIMIT)
        return self._cluster_reader().matrix(run, metric, max_steps)

    # -- loss landscapes (reading/landscapes.py) -------------------------------------------------------------------
    def _landscape_reader(self):
        if getattr(self, "_landscapes", None) is None:
            from .reading import landscapes

            self._landscapes = landscapes.LandscapeReader(self._data_provider)
        return self._landscapes

    @json_route
    def _serve_landscapes(self, request):
        ctx, eid = self._ctx(request)
        return self._landscape_reader().listing(ctx, eid, request.args.get("run") or None)

    @json_route
    def _serve_landscape(self, request):
        ctx, eid = self._ctx(request)
        step = request.args.get("step")
        step = None if step in (None, "") else _int_arg(request, "step", None, -(2 ** 63), 2 ** 63 - 1)
        run, tag = _required(request, "run"), _required(request, "tag")
        return self._landscape_reader().landscape(ctx, eid, run, tag, step)

    # -- run information and hyperparameters (reading/run_info.py) ---------------------------------------------------
    def _ms_logdir(self):
        return self._ms.ms if self._ms is not None else None

    def _run_info_reader(self):
        if getattr(self, "_run_infos", None) is None:
            from .reading import run_info

            self._run_infos = run_info.RunInfoReader(self._data_provider, self._ms_logdir())
        return self._run_infos

    @json_route
    def _serve_run_info(self, request):
        ctx, eid = self._ctx(request)
        run = request.args.get("run")
        if run is None:
            return self._run_info_reader().all(ctx, eid)
        return self._run_info_reader().one(ctx, eid, _required(request, "run"))

    # -- images and tensors (reading/media.py) -------------------------------------------------------------------
    def _media_reader(self):
        if getattr(self, "_media", None) is None:
            from .reading import media

            self._media = media.MediaReader(self._data_provider, self._ms_logdir())
        return self._media

    @json_route
    def _serve_media(self, request):
        ctx, eid = self._ctx(request)
        return self._media_reader().listing(ctx, eid, request.args.get("run") or None)

    @json_route
    def _serve_images(self, request):
        ctx, eid = self._ctx(request)
        run, tag = _required(request, "run"), _required(request, "tag")
        return self._media_reader().images(ctx, eid, run, tag)

    @wrappers.Request.application
    def _serve_image(self, request):
        """The image's bytes as they were written, with their mime type; errors as JSON like every route."""
        try:
            ctx, eid = self._ctx(request)
            run, tag = _required(request, "run"), _required(request, "tag")
            step = _int_arg(request, "step", None, -(2 ** 63), 2 ** 63 - 1)
            if step is None:
                raise errors.InvalidArgumentError("missing query parameter 'step'")
            body, mime = self._media_reader().image(ctx, eid, run, tag, step)
        except errors.PublicError as e:
            return _respond_error(request, e.http_code, str(e))
        except Exception as e:
            return _unexpected(self, request, e)
        return http_util.Respond(request, body, mime)

    @json_route
    def _serve_tensors(self, request):
        from .reading import media

        ctx, eid = self._ctx(request)
        run, tag = _required(request, "run"), _required(request, "tag")
        max_values = _int_arg(request, "max_values", media.DEFAULT_MAX_VALUES, 1, media.MAX_VALUES_LIMIT)
        max_steps = _int_arg(request, "max_steps", media.DEFAULT_MAX_STEPS, 1, media.MAX_STEPS_LIMIT)
        return self._media_reader().tensors(ctx, eid, run, tag, max_values=max_values, max_steps=max_steps)
