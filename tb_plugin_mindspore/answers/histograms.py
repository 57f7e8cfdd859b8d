"""Distributions over time (the ``histograms`` route): quantile bands per step of a histogram series.

Reads histograms in TensorBoard's format (plugin ``histograms``: a k x 3 tensor of ``[left, right, count]``
buckets per step): ours (``summary.histogram``, e.g. ``debug/activation/<layer>``), the stock histogram
summaries of any other writer, and MindSpore's converted ``<param>/auto`` histograms. Each step becomes the values
at the quantiles of TensorBoard's Distributions tab (0, 6.68, 15.87, 30.85, 50, 69.15, 84.13, 93.32, 100 %: minimum,
+-1.5, +-1, +-0.5 standard deviations of a normal distribution, median, maximum), interpolated linearly inside a
bucket. A step whose histogram is empty has count 0 and NaN quantiles.

NaN and infinite values have no place in TensorBoard's format; for MindSpore ``*_MS`` histograms (which count them)
the answer adds ``nonfinite``: ``[[step, nan, pos_inf, neg_inf], ...]`` for the shown steps that have any, and
``nonfinite_steps``, how many of all the steps have any. MindSpore's buckets are cut to the tensor's exact minimum
and maximum when read (``ms_logdir.exact_buckets``), so a constant tensor's quantiles are its value.
"""

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from .. import metadata
from ..contract import vocabulary
from . import encode
from ..sources import series_cache

HISTOGRAMS_PLUGIN = "histograms"
_READ_ALL = 10 ** 9
QUANTILES = (0.0, 0.0668, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9332, 1.0)
DEFAULT_MAX_STEPS = 1000
MAX_STEPS_LIMIT = 10000


def list_histograms(listings, ctx, eid, runs=None):
    """{run: [tag]} of the histogram series (sorted); ``listings`` is ``series_cache.listings_for(provider)``."""
    listing = series_cache.only(listings.tensors(ctx, eid, HISTOGRAMS_PLUGIN), runs)
    return {run: sorted(tags) for run, tags in listing.items()}


def histogram_entry(tag):
    tier = vocabulary.tier_of(tag)
    if tier == metadata.OTHER and tag.endswith("/auto"):
        tier = metadata.DIAGNOSTIC   # SummaryCollector's <param>/auto histograms: weight distributions
    return tier, {"tag": tag, "display_name": metadata.display_name(tag), "kind": "histogram"}


def quantiles(buckets, qs=QUANTILES):
    """Values at the quantiles ``qs`` of a k x 3 ``[left, right, count]`` histogram (NaN for an empty one)."""
    b = np.asarray(buckets, dtype=np.float64).reshape(-1, 3)
    counts = np.where(np.isfinite(b[:, 2]) & (b[:, 2] > 0), b[:, 2], 0.0)
    total = counts.sum()
    out = np.full(len(qs), np.nan)
    if b.shape[0] == 0 or total <= 0:
        return out, 0.0
    left, right = b[:, 0], b[:, 1]
    nonzero = np.nonzero(counts)[0]
    cum = np.cumsum(counts)
    for j, q in enumerate(qs):
        if q <= 0:
            out[j] = left[nonzero[0]]
            continue
        if q >= 1:
            out[j] = right[nonzero[-1]]
            continue
        target = q * total
        i = int(np.searchsorted(cum, target, side="left"))
        i = min(i, b.shape[0] - 1)
        before = cum[i] - counts[i]
        frac = (target - before) / counts[i] if counts[i] > 0 else 0.0
        out[j] = left[i] + (right[i] - left[i]) * min(max(frac, 0.0), 1.0)
    return out, float(total)


def nonfinite_counts(stats, finite_count=None):
    """``(nan, pos_inf, neg_inf)`` of MindSpore histogram statistics, or None when they do not belong to buckets
    holding ``finite_count`` values (e.g. an event file's series of the same name)."""
    try:
        nan, pos, neg = int(stats["nan_count"]), int(stats["pos_inf_count"]), int(stats["neg_inf_count"])
        total = int(stats["count"])
    except (KeyError, TypeError, ValueError):
        return None
    if finite_count is not None and total and abs(total - nan - pos - neg - finite_count) > 0.5:
        return None
    return nan, pos, neg


class HistogramReader:
    def __init__(self, data_provider, cache):
        self._provider = data_provider
        self._cache = cache
        self._listings = series_cache.listings_for(data_provider)

    def bands(self, ctx, eid, run, tag, max_steps=DEFAULT_MAX_STEPS):
        """JSON text of the ``histograms`` route (see the README)."""
        listing = self._listings.tensors(ctx, eid, HISTOGRAMS_PLUGIN)
        series = listing.get(run, {}).get(tag)
        if series is None:
            runs = set(listing) | set(self._listings.last_scalars(ctx, eid))
            runs |= set(self._listings.tensors(ctx, eid, metadata.PLUGIN_NAME))
            if run not in runs:
                raise errors.NotFoundError("no run named %r" % run)
            raise errors.NotFoundError("run %r has no histogram %r" % (run, tag))
        token = (series.max_step, series.max_wall_time)
        key = ("histograms", run, tag, max_steps)
        text = self._cache.get(key, token)
        if text is not None:
            return text
        data = self._provider.read_tensors(
            ctx, experiment_id=eid, plugin_name=HISTOGRAMS_PLUGIN, downsample=_READ_ALL,
            run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=[tag]),
        ).get(run, {}).get(tag) or []
        by_step = {}
        for d in sorted(data, key=lambda d: (d.step, d.wall_time)):
            by_step[d.step] = d
        steps = sorted(by_step)
        total = len(steps)
        if total > max_steps:
            # evenly spaced steps, the first and the last included
            picks = np.unique(np.round(np.linspace(0, total - 1, max_steps)).astype(int))
            steps = [steps[i] for i in picks.tolist()]
        rows = []
        counts = {}
        for s in steps:
            d = by_step[s]
            qs, count = quantiles(d.numpy)
            counts[s] = count
            rows.append([int(s), encode.json_float(d.wall_time), count] + encode.json_numbers(qs))
        nonfinite, nonfinite_steps = self._nonfinite(run, tag, by_step, counts)
        body = {
            "run": run,
            "tag": tag,
            "tier": vocabulary.tier_of(tag),
            "display_name": metadata.display_name(tag),
            "quantiles": list(QUANTILES),
            "total_steps": total,
            "downsampled": len(steps) < total,
            "rows": rows,
            "nonfinite": nonfinite,
            "nonfinite_steps": nonfinite_steps,
        }
        return self._cache.put(key, token, encode.dumps(body))

    def _nonfinite(self, run, tag, by_step, counts):
        """``([[step, nan, pos_inf, neg_inf]] for the shown steps, steps with any)`` from ``_MS`` statistics."""
        lookup = getattr(self._provider, "histogram_stats", None)
        stats = lookup(run, tag) if lookup is not None else None
        if not stats:
            return [], 0
        shown, total = [], 0
        for step in by_step:
            if step not in stats:
                continue
            finite = counts.get(step)
            if finite is None:
                finite = float(np.sum(np.asarray(by_step[step].numpy, dtype=np.float64).reshape(-1, 3)[:, 2]))
            numbers = nonfinite_counts(stats[step], finite)
            if numbers is None or not any(numbers):
                continue
            total += 1
            if step in counts:
                shown.append([int(step)] + list(numbers))
        return sorted(shown), total
