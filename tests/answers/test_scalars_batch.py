"""The ``scalars_batch`` route: many series in one answer, identical (up to float32 precision) to the ``scalars``
route, through TensorBoard's own app with both loaders; plus the freshness cache under it."""

import math
import os

import pytest

from dashboard_data import wait_until
from tb_harness import App
from tb_plugin_mindspore.answers import encode
from tb_plugin_mindspore.sources import series_cache

TAGS = ["core/loss", "core/grad_norm", "diagnostic/eval_loss"]
STEPS = 3000


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path_factory.mktemp("batch") / "logs"
    for r, run in enumerate(("a", "b", '<b>"x"</b>')):
        with SummaryWriter(os.path.join(str(root), run), max_queue=STEPS * 8) as w:
            for step in range(1, STEPS + 1):
                loss = 2.0 / math.sqrt(step) + r
                if step == 1500:
                    loss = 1000.0          # a single-step spike
                if r == 1 and step == 2000:
                    loss = math.nan
                w.scalar("core/loss", loss, step, wall_time=1.7e9 + step * 0.25)
                w.scalar("core/grad_norm", 1.0 + 0.001 * step, step, wall_time=1.7e9 + step * 0.25)
                if step % 5 == 0:
                    w.interval("core/loss", loss - 0.1, loss, loss + 0.1, 5, 0, step, wall_time=1.7e9 + step * 0.25)
                if r == 0 and step % 100 == 0:
                    w.scalar("diagnostic/eval_loss", 0.5, step, wall_time=1.7e9 + step * 0.25)
    return root


@pytest.fixture(scope="module", params=["false", "true"], ids=["python", "fast"])
def app(request, logdir):
    a = App(logdir, load_fast=request.param)
    a.wait_for_runs(["a", "b"])
    def loaded(run):
        # Every point and the whole interval series: under load a reload can land between the two.
        body = a.plugin("/scalars", run=run, tag="core/loss", max_points=10)
        return body["total_points"] == STEPS and body["interval"] is not None and body["interval"][-1][0] == STEPS

    for run in ("a", "b"):
        wait_until(lambda: loaded(run))
    yield a
    a.close()


def same_number(x, y):
    if isinstance(x, str) or isinstance(y, str):
        return x == y
    return math.isclose(x, y, rel_tol=1e-6, abs_tol=1e-9)


@pytest.mark.slow
def test_batch_equals_single_routes(app):
    body = app.plugin("/scalars_batch", run=["a", "b", "nope"], tag=TAGS)
    got = {(s["run"], s["tag"]): s for s in body["series"]}
    assert list(got) == [("a", "core/loss"), ("a", "core/grad_norm"), ("a", "diagnostic/eval_loss"),
                         ("b", "core/loss"), ("b", "core/grad_norm")]
    assert body["missing"] == [["b", "diagnostic/eval_loss"], ["nope", "core/loss"], ["nope", "core/grad_norm"],
                               ["nope", "diagnostic/eval_loss"]]
    for (run, tag), series in got.items():
        single = app.plugin("/scalars", run=run, tag=tag)
        for key in ("run", "tag", "tier", "display_name", "total_points", "downsampled"):
            assert series[key] == single[key], key
        assert len(series["points"]) == len(single["points"])
        for p, q in zip(series["points"], single["points"]):
            assert p[0] == q[0] and abs(p[1] - q[1]) <= 0.0005 and same_number(p[2], q[2])
        if single["interval"] is None:
            assert series["interval"] is None
        else:
            assert len(series["interval"]) == len(single["interval"])
            for p, q in zip(series["interval"], single["interval"]):
                assert all(same_number(x, y) for x, y in zip(p, q))


def test_downsampled_batch_keeps_spike_and_nan(app):
    body = app.plugin("/scalars_batch", run=["a", "b"], tag=["core/loss"], max_points=100)
    a, b = body["series"]
    assert a["downsampled"] and len(a["points"]) <= 100 and a["total_points"] == STEPS
    assert [1500, 1000.0] in [[p[0], p[2]] for p in a["points"]]
    assert [2000, "NaN"] in [[p[0], p[2]] for p in b["points"]]


def test_hostile_run_name_round_trips(app):
    body = app.plugin("/scalars_batch", run='<b>"x"</b>', tag="core/loss")
    assert body["series"][0]["run"] == '<b>"x"</b>' and body["missing"] == []


def test_errors(app):
    app.plugin("/scalars_batch", expect=400, tag="core/loss")
    app.plugin("/scalars_batch", expect=400, run="a")
    app.plugin("/scalars_batch", expect=400, run="a", tag="core/loss", max_points="5")
    too_many = ["t%d" % i for i in range(600)]
    app.plugin("/scalars_batch", expect=400, run="a", tag=too_many)
    assert app.plugin("/scalars_batch", run="zz", tag="core/loss") == {"series": [], "missing": [["zz", "core/loss"]]}


def test_a_batch_answer_is_kept_from_its_second_request(app):
    """A page refreshing its charts asks the same batch again: kept from then on. A one-off combination of runs is
    answered from the series' own kept texts and not kept whole (under many clients picking runs at random, such
    answers filled the cache: the server's memory grew 25 MB in a minute)."""
    (plugin,) = [p for p in app.wsgi._plugins if type(p).__name__ == "MindSporePlugin"]
    kept = plugin._batch._answers
    before = len(kept._items)
    first = app.plugin("/scalars_batch", run=["b", "a"], tag=["core/grad_norm"], max_points=77)
    assert len(kept._items) == before
    second = app.plugin("/scalars_batch", run=["b", "a"], tag=["core/grad_norm"], max_points=77)
    assert second == first and len(kept._items) == before + 1
    hits = kept.hits
    assert app.plugin("/scalars_batch", run=["b", "a"], tag=["core/grad_norm"], max_points=77) == first
    assert kept.hits == hits + 1


def test_response_cache_keys_on_token():
    cache = encode.ResponseCache(max_bytes=10)
    cache.put("k", 1, "abcd")
    assert cache.get("k", 1) == "abcd" and cache.get("k", 2) is None
    cache.put("j", 1, "efghijk")
    assert cache.get("k", 1) is None and cache.get("j", 1) == "efghijk"   # least recently used went first
    cache.put("big", 1, "x" * 11)
    assert cache.get("big", 1) is None


def test_ttl_memo():
    now = [0.0]
    memo = series_cache.TtlMemo(ttl=1.0, clock=lambda: now[0])
    calls = []
    assert memo.get("k", lambda: calls.append(1) or "v1") == "v1"
    assert memo.get("k", lambda: calls.append(1) or "v2") == "v1"
    now[0] = 1.5
    assert memo.get("k", lambda: calls.append(1) or "v3") == "v3" and len(calls) == 2
