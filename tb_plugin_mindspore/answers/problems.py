"""The ``status`` route's ``warnings``: everything the readers left out, and why, in one list.

Each warning is ``{"run", "file", "offset", "reason"}`` (``file`` relative to the logdir, ``offset`` a byte offset;
both ``None`` where the data came through TensorBoard's loader, which does not say), plus ``"tag"`` and ``"step"``
for a left-out record of one series. Sources, each isolated (one that fails is logged and the others still count):

* TensorBoard's own reloading stopped, replaced, or failing now (``reload_watch.ReloadWatch.warnings``);
* damaged records and unreadable files among MindSpore's ``*_MS`` files, and among the event files when the
  plugin's own event reader is the provider (``report``) (``Sources.warnings``);
* per-rank statistics files refused (and why), their records left out, rows let go (``ClusterReader.problems``);
* files no reader may open (FIFOs, sockets, symbolic link loops) and event files whose record framing breaks
  TensorBoard's loaders (``LogdirStatus.file_warnings``);
* our plugin's series whose content is unreadable (bad JSON, hostile nesting, a newer format);
* malformed landscape records and run information records (``LandscapeReader.problems``,
  ``RunInfoReader.problems``);
* health events and run end markers that cannot be read (``health.sources.json_problems``).
"""

import logging

from .. import metadata
from ..health import sources as health_sources
from ..sources import mindformers_files

logger = logging.getLogger(__name__)

MAX_WARNINGS = 200
_FIELDS = ("run", "file", "offset", "reason")


def _normalized(w):
    out = {k: w.get(k) for k in _FIELDS}
    for extra in ("tag", "step"):
        if w.get(extra) is not None:
            out[extra] = w[extra]
    return out


def content_problems(sources):
    """Our plugin's series whose plugin content cannot be read (they are left out of every listing); ``sources``: a
    ``sources.logdir.Sources`` bound to the request."""
    out = []
    for run, tags in sorted(sources.tensor_listing().items()):
        for tag, series in sorted(tags.items()):
            try:
                metadata.parse_content(series.plugin_content)
            except metadata.ContentError as e:
                out.append({"run": run, "file": None, "offset": None, "tag": tag,
                            "reason": "series %s left out: %s" % (tag, e)})
    return out


def mindformers_problems(sources):
    """mindformers' JSON files beside the runs left out (too large, malformed): ``sources/mindformers_files.py``;
    ``sources`` is bound to the request and knows the runs' folders (``Sources.folders``)."""
    by_file = {}
    for run in sources.runs():
        folder = sources.folders.folder(run)
        if folder is None:
            continue
        for p in mindformers_files.problems_under([folder]):
            by_file.setdefault(p["file"], dict(p, run=run))
    return list(by_file.values())


def collect(sources, status, landscapes, run_infos, provider_ok=True, clusters=None, reloading=None):
    """Every warning for the ``status`` route, at most ``MAX_WARNINGS``: from ``sources`` (a ``Sources`` bound to
    the request), ``status`` (``logdir_status.LogdirStatus``), ``landscapes`` (``landscapes.LandscapeReader``),
    ``run_infos`` (``run_info.RunInfoReader``), ``clusters`` (``cluster.ClusterReader``) and ``reloading`` (the
    ``reload_watch.ReloadWatch`` of TensorBoard's Python loader, None under the fast one); ``provider_ok`` False
    when TensorBoard's data server is gone (only what the plugin reads itself is asked then)."""
    ctx, eid = sources.ctx, sources.experiment_id
    found_in = [("TensorBoard's reloading", reloading.warnings)] if reloading is not None else []
    found_in += [("summary and event files", sources.warnings), ("files under the logdir", status.file_warnings)]
    if clusters is not None:
        found_in.append(("rank files", clusters.problems))
    if sources.folders is not None:
        found_in.append(("mindformers files", lambda: mindformers_problems(sources)))
    if provider_ok:
        found_in.append(("plugin content", lambda: content_problems(sources)))
        found_in.append(("landscapes", lambda: landscapes.problems(ctx, eid)))
        found_in.append(("run information", lambda: run_infos.problems(ctx, eid)))
        found_in.append(("health events", lambda: health_sources.json_problems(sources)))
    out, seen = [], set()
    for name, source in found_in:
        try:
            found = source()
        except Exception:  # one source failing must not hide the others
            logger.exception("mindspore plugin: collecting warnings about %s failed", name)
            continue
        for w in found:
            w = _normalized(w)
            key = tuple(str(w.get(k)) for k in _FIELDS + ("tag", "step"))
            if key in seen:
                continue
            seen.add(key)
            if len(out) >= MAX_WARNINGS:
                out.append({"run": None, "file": None, "offset": None,
                            "reason": "more warnings not listed (first %d shown)" % MAX_WARNINGS})
                return out
            out.append(w)
    return out


def data_server_message(file_warnings):
    """What to tell the user when TensorBoard's fast-loader data server is gone, naming the file that broke it when
    the record headers show one."""
    culprits = [w for w in file_warnings if w.get("offset") is not None and "loaders" in w.get("reason", "")]
    text = ("TensorBoard's data server (its fast loader, --load_fast) stopped answering, so no run can be read "
            "until TensorBoard is restarted.")
    if culprits:
        w = culprits[0]
        more = " (and %d more files)" % (len(culprits) - 1) if len(culprits) > 1 else ""
        text += " Cause: %s at byte %d: %s%s. Move that file out of the logdir and restart TensorBoard, or start " \
                "it with --load_fast=false." % (w["file"], w["offset"], w["reason"], more)
    else:
        text += " No event file with a broken record header was found; see TensorBoard's log, and try " \
                "--load_fast=false."
    return text
