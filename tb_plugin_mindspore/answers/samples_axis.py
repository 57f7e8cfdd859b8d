"""The samples x axis of a run (the ``samples`` route): step -> samples seen, from mindformers' twins.

mindformers writes each core value twice, ``<tag>`` at the step and ``<tag> vs samples`` (tensorboardX:
``<tag>_vs_samples``) at the number of samples seen (step x global batch size, which may change during training).
Rather than drawing each value twice, the tab offers samples as an x axis: the pairs (step, samples) come from one
tag and its twin, written by the same call one after the other, so their points pair in write order (by wall time
when their counts differ). The answer keeps at most ``MAX_PAIRS`` pairs (evenly spread, the last kept); the page
interpolates between them.
"""

import numpy as np
from tensorboard import errors
from tensorboard.data import provider as tb_provider

from ..contract import mindformers
from ..sources import series_cache
from . import encode

SCALARS_PLUGIN = "scalars"
MAX_PAIRS = 4000
_READ_ALL = 10 ** 9
PREFERRED = ("loss", "learning-rate", "grad-norm")


def pair(main_steps, main_walls, twin_steps, twin_walls):
    """``(steps, samples)`` int64 arrays: each point of a tag with the point of its twin written with it."""
    main_steps, twin_steps = np.asarray(main_steps, np.int64), np.asarray(twin_steps, np.int64)
    if not main_steps.size or not twin_steps.size:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    if main_steps.size == twin_steps.size:
        steps, samples = main_steps, twin_steps
    else:   # nearest twin point in wall time
        order = np.argsort(twin_walls, kind="stable")
        tw = np.asarray(twin_walls, np.float64)[order]
        at = np.clip(np.searchsorted(tw, main_walls), 1, max(1, tw.size - 1))
        left = np.abs(np.asarray(main_walls) - tw[at - 1]) <= np.abs(np.asarray(main_walls) - tw[np.minimum(at, tw.size - 1)])
        pick = np.where(left, at - 1, np.minimum(at, tw.size - 1))
        steps, samples = main_steps, twin_steps[order][pick]
    keep = np.r_[True, np.diff(steps) != 0]     # one pair per step (the first)
    steps, samples = steps[keep], samples[keep]
    order = np.argsort(steps, kind="stable")
    return steps[order], samples[order]


class SamplesAxis:
    def __init__(self, data_provider, cache):
        self._provider = data_provider
        self._cache = cache
        self._listings = series_cache.listings_for(data_provider)

    def answer(self, ctx, eid, run):
        """JSON text of ``{"run", "tag", "twin", "points": [[step, samples], ...], "total"}``; 404 when the run has
        no twin."""
        tags = self._listings.run_last_scalars(ctx, eid, run)
        if not tags:
            raise errors.NotFoundError("no run named %r" % run)
        twins = {}
        for tag in tags:
            main = mindformers.twin_of(tag)
            if main is not None and main in tags:
                twins[main] = tag
        if not twins:
            raise errors.NotFoundError("run %r has no '<tag> vs samples' series (the samples axis needs one)" % run)
        main = next((t for t in PREFERRED if t in twins), sorted(twins)[0])
        twin = twins[main]
        token = tuple((t, tags[t].step, tags[t].wall_time) for t in (main, twin))
        key = ("samples", run)
        body = self._cache.get(key, token)
        if body is not None:
            return body
        data = self._provider.read_scalars(
            ctx, experiment_id=eid, plugin_name=SCALARS_PLUGIN, downsample=_READ_ALL,
            run_tag_filter=tb_provider.RunTagFilter(runs=[run], tags=[main, twin])).get(run, {})
        cols = {}
        for t in (main, twin):
            points = sorted(data.get(t) or [], key=lambda p: p.wall_time)
            cols[t] = (np.array([p.step for p in points], np.int64), np.array([p.wall_time for p in points]))
        steps, samples = pair(cols[main][0], cols[main][1], cols[twin][0], cols[twin][1])
        total = int(steps.size)
        if steps.size > MAX_PAIRS:
            idx = np.unique(np.r_[np.linspace(0, steps.size - 1, MAX_PAIRS).round().astype(np.int64), steps.size - 1])
            steps, samples = steps[idx], samples[idx]
        body = {"run": run, "tag": main, "twin": twin, "total": total,
                "points": [[int(a), int(b)] for a, b in zip(steps.tolist(), samples.tolist())]}
        return self._cache.put(key, token, encode.dumps(body))
