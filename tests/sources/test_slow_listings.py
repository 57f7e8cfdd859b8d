"""Slow listings (thousands of runs: mindformers' add_scalars key folders) are answered while the next one is made:
``series_cache.TtlMemo(adaptive=True)`` and the run fold (``run_fold``) give the last listing during its
recomputation in the background, within ``STALE_MAX_SECS``; a cheap listing is recomputed in the request as before,
and new runs still show up after one listing."""

import threading
import time

from tb_plugin_mindspore.sources import run_fold, series_cache
from tb_plugin_mindspore.writing.writer import SummaryWriter


def _wait(predicate, timeout=30.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_an_expired_slow_listing_is_answered_while_the_next_is_made():
    now = [0.0]
    memo = series_cache.TtlMemo(ttl=1.0, clock=lambda: now[0], adaptive=True)
    release = threading.Event()

    def slow(value):
        def compute():
            now[0] += 2.0          # the listing took 2 s: kept 8 s, then answered stale up to STALE_MAX_SECS
            return value
        return compute

    assert memo.get("k", slow("v1")) == "v1"
    now[0] += 7.0
    assert memo.get("k", slow("never")) == "v1"                   # still fresh (4x its cost)
    now[0] += 2.0

    def blocked():
        release.wait(10)
        return "v2"

    assert memo.get("k", blocked) == "v1"                        # expired: the old one, and "v2" in the background
    assert memo.get("k", blocked) == "v1" and memo.stale_answers == 2   # one recomputation, not two
    release.set()
    assert _wait(lambda: memo.peek("k") == "v2")
    assert memo.get("k", slow("never")) == "v2"
    now[0] += series_cache.STALE_MAX_SECS + 1                    # too old to answer: computed in the request
    assert memo.get("k", lambda: "v3") == "v3"


def test_a_cheap_or_failing_listing_is_computed_in_the_request():
    now = [0.0]
    memo = series_cache.TtlMemo(ttl=1.0, clock=lambda: now[0], adaptive=True)
    assert memo.get("k", lambda: "v1") == "v1"
    now[0] += 1.5
    assert memo.get("k", lambda: "v2") == "v2" and memo.stale_answers == 0

    def slow_then_fail():
        now[0] += 1.0
        return "v3"

    now[0] += 1.5
    assert memo.get("k", slow_then_fail) == "v3"
    now[0] += 5.0

    def boom():
        raise OSError("data server gone")

    assert memo.get("k", boom) == "v3"                           # the failure stays in the background thread
    assert _wait(lambda: not memo._refreshing)
    assert memo.get("k", lambda: "v4") == "v3"                   # and the next request tries again
    assert _wait(lambda: memo.peek("k") == "v4")


def test_the_run_fold_of_a_slow_logdir_follows_new_folders_in_the_background(tmp_path, monkeypatch):
    from tensorboard import context as tb_context
    from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer

    def key_folder(head):
        with SummaryWriter(str(tmp_path / "rank_0" / "max_attention_logit" / "l0" / ("head_%d" % head)),
                           flush_secs=0.05) as w:
            w.scalar("max_attention_logit/l0", 1.0 + head, step=1)

    with SummaryWriter(str(tmp_path / "rank_0"), flush_secs=0.05) as w:
        w.scalar("loss", 1.0, step=1)
    key_folder(0)
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    folded = run_fold.FoldedProvider(data_provider.MultiplexerDataProvider(mux, str(tmp_path)))
    ctx = tb_context.RequestContext()
    assert [r.run_name for r in folded.list_runs(ctx, experiment_id="")] == ["rank_0"]
    # As if listing the logdir took long: an expired fold is answered while the next is made.
    monkeypatch.setattr(series_cache, "STALE_MIN_COST_SECS", 0.0)
    monkeypatch.setattr(run_fold, "FOLD_TTL_SECS", 0.0)
    key_folder(1)
    mux.AddRunsFromDirectory(str(tmp_path))
    mux.Reload()
    new_folder = "rank_0/max_attention_logit/l0/head_1"
    assert new_folder not in folded.fold(ctx, "").owner          # answered at once, the new fold on its way

    def heads():
        tags = folded.list_scalars(ctx, experiment_id="", plugin_name="scalars").get("rank_0", {})
        return sorted(t for t in tags if t.startswith("max_attention_logit/"))

    assert _wait(lambda: heads() == ["max_attention_logit/l0/head_0", "max_attention_logit/l0/head_1"])
    assert folded.fold(ctx, "").owner[new_folder] == "rank_0"
    assert [r.run_name for r in folded.list_runs(ctx, experiment_id="")] == ["rank_0"]
