"""Hostile query parameters on every route of the tab, through TensorBoard's real WSGI app with both loaders:
every answer is 200, 400 or 404 with a JSON body (the image route: the image's bytes), never a 500."""

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import hostile
from tb_harness import PREFIX, App

from tb_plugin_mindspore.writing import summary
from tb_plugin_mindspore.landscape import landscape_record

HOSTILE_RUN = "<img src=x onerror=alert(1)>"
# route -> its query parameters (those that take several values are repeated in the fuzz as well)
ROUTES = {
    "/runs": (), "/status": (), "/tags": ("run",), "/scalars": ("run", "tag", "max_points"),
    "/scalars_batch": ("run", "tag", "max_points"), "/layers": ("run", "tag", "max_steps", "layer"),
    "/histograms": ("run", "tag", "max_steps"), "/health": ("run",), "/landscapes": ("run",),
    "/landscape": ("run", "tag", "step"), "/run_info": ("run",), "/media": ("run",), "/images": ("run", "tag"),
    "/image": ("run", "tag", "step"), "/tensors": ("run", "tag", "max_values", "max_steps"),
    "/compare": ("run", "reference", "noise", "mapping", "offset", "max_points"),
}
VALID = {
    "run": ["ev", "ms", HOSTILE_RUN], "tag": ["core/loss", "debug/update_ratio", "landscape/random", "loss/auto",
                                                "x", "x_hist", "weights/fc"],
    "max_points": ["10", "2000"], "max_steps": ["1", "50"], "max_values": ["1", "100"], "step": ["1", "3", "5"],
    "layer": ["a.weight"], "reference": [HOSTILE_RUN, "ms"], "noise": ["ms"], "offset": ["0", "1"],
    "mapping": ['{"pairs": {"a.weight": "b.weight"}}', '{"ignore": ["a.weight"]}'],
}
HOSTILE = ["", " ", "\x00", "ev\x00", "../../../../etc/passwd", "/etc/passwd", "..", ".", "%2e%2e%2f",
           "<script>window.__pwned=1</script>", "\u202e\u00e9\U0001f4a5", "a" * 20000, "-1", "0", "1e309", "NaN",
           "inf", "9" * 40, "-9223372036854775809", "9223372036854775808", "0x10", " 5", "5 ", "1.5", "[]", "{}",
           "null", "true", "ev/../ms", "core/loss\n", "*", "%s%n"]
STATIC = ["/index.js", "/static/index.js", "/static/../plugin.py", "/static/%2e%2e/plugin.py", "/static/",
          "/static/" + "a" * 5000, "/static/\x00", "/nope"]


@pytest.fixture(scope="module")
def fuzz_logdir(tmp_path_factory):
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    root = tmp_path_factory.mktemp("fuzz") / "logs"
    for run in ("ev", HOSTILE_RUN):
        with SummaryWriter(str(root / run), flush_secs=0.5) as w:
            w.run_info({"hparams": {"lr": 0.1, "<b>k</b>": "<i>v</i>"}})
            for step in range(1, 11):
                w.scalar("core/loss", 1.0 / step if step != 5 else float("nan"), step)
                w.interval("core/loss", 0.1, 0.5, 1.0, 3, 0, step)
                w.layers("debug/update_ratio", ["a.weight", "b.weight"], [1e-3, 1e-2], step)
                w.value(summary.histogram("weights/fc", np.arange(10.0) * step), step)
            x = np.linspace(-1, 1, 3)
            w.value(summary.landscape("landscape/random", landscape_record(x, x, np.add.outer(x, x), "random")), 5)
            w.value(summary.tensor("x", np.arange(6.0).reshape(2, 3)), 3)
    hostile.write_ms(str(root / "ms" / hostile.MS_NAME),
                     [hostile.ms_scalar_event(s, 1.0 / s) for s in range(1, 6)]
                     + [hostile.ms_media_event(s) for s in (1, 3)] + [hostile.ms_landscape_event(3, 3, 9)],
                     tail=b"\x13" * 30)
    return root


@pytest.fixture(scope="module", params=["false", "true"])
def app(request, fuzz_logdir):
    a = App(fuzz_logdir, load_fast=request.param)
    a.wait_for_runs(["ev", "ms", HOSTILE_RUN])
    yield a
    a.close()


def _check(app, route, query):
    resp = app.client.get(PREFIX + route, query_string=query)
    code = resp.status_code
    assert code in (200, 400, 404), (route, query, code, resp.get_data(as_text=True)[:300])
    if route == "/image" and code == 200:
        assert resp.headers["Content-Type"].startswith("image/")
        return code
    if route.startswith(("/static", "/index.js")) and code == 200:
        return code
    assert resp.headers["Content-Type"].startswith("application/json"), (route, query)
    body = json.loads(resp.get_data(as_text=True))
    if code != 200:
        assert body["error"]["code"] == code and body["error"]["message"], (route, query)
    return code


def _bases(app):
    """route -> a query that answers 200 (so that changing one parameter tests that parameter)."""
    media = app.plugin("/media", run="ms")["runs"]["ms"]
    image, tensor = media["images"][0]["tag"], media["tensors"][0]["tag"]
    bases = {
        "/runs": {}, "/status": {}, "/tags": {"run": "ev"}, "/scalars": {"run": "ev", "tag": "core/loss"},
        "/scalars_batch": {"run": ["ev", "ms"], "tag": ["core/loss", "loss/auto"], "max_points": "100"},
        "/layers": {"run": "ev", "tag": "debug/update_ratio", "max_steps": "5"},
        "/histograms": {"run": "ev", "tag": "weights/fc", "max_steps": "5"}, "/health": {"run": "ev"},
        "/landscapes": {"run": "ev"}, "/landscape": {"run": "ev", "tag": "landscape/random", "step": "5"},
        "/run_info": {"run": "ev"}, "/media": {"run": "ms"}, "/images": {"run": "ms", "tag": image},
        "/image": {"run": "ms", "tag": image, "step": "3"},
        "/tensors": {"run": "ms", "tag": tensor, "max_values": "4", "max_steps": "2"},
        "/compare": {"run": "ev", "reference": HOSTILE_RUN, "max_points": "10"},
    }
    for route, query in bases.items():
        assert _check(app, route, query) == 200, (route, query)
    layer = dict(bases["/layers"], layer="a.weight")
    assert _check(app, "/layers", layer) == 200
    return bases, layer


def _queries(base, params):
    """The base query, then each parameter alone set to each hostile value, missing, and repeated."""
    yield dict(base)
    for p in params:
        for value in HOSTILE:
            yield dict(base, **{p: value})
        yield {k: v for k, v in base.items() if k != p}
        yield dict(base, **{p: [VALID[p][0], HOSTILE[2], VALID[p][-1]]})
    yield dict(base, junk="<x>", **{"run\x00": "ev"})


@pytest.mark.slow
def test_every_route_with_hostile_parameters(app):
    bases, layer = _bases(app)
    codes = {}
    for route, params in ROUTES.items():
        for base in (bases[route], layer) if route == "/layers" else (bases[route],):
            for query in _queries(base, params):
                code = _check(app, route, query)
                codes[code] = codes.get(code, 0) + 1
    for path in STATIC:
        code = app.client.get(PREFIX + path).status_code
        assert code in (200, 400, 404), (path, code)
    assert codes[200] > 50 and codes.get(400, 0) > 50 and codes.get(404, 0) > 50, codes
    # The server still answers normally afterwards.
    assert set(app.plugin("/runs")["runs"]) == {"ev", "ms", HOSTILE_RUN}


_TEXT = st.one_of(st.sampled_from(sorted({v for vs in VALID.values() for v in vs}) + HOSTILE),
                  st.text(max_size=40), st.integers(-2 ** 70, 2 ** 70).map(str))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(route=st.sampled_from(sorted(ROUTES)), values=st.dictionaries(
    st.sampled_from(["run", "tag", "max_points", "max_steps", "max_values", "step", "layer", "reference", "noise",
                     "mapping", "offset"]), _TEXT, max_size=4))
@pytest.mark.slow
def test_random_parameters(app, route, values):
    _check(app, route, values)
