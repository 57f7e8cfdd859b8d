"""The health route's cache: answers kept per run while its data is unchanged, recomputed for the run that got new
data, clock rules re-run on every request, concurrent requests sharing one computation; and the direct reads of
the Python loader's points giving what TensorBoard's data provider gives. Real event files, real TensorBoard."""

import inspect
import math
import threading
import time

import numpy as np
import pytest
from tensorboard import context as tb_context
from tensorboard.backend.event_processing import data_provider, plugin_event_multiplexer
from tensorboard.compat.proto import tensor_pb2, tensor_shape_pb2, types_pb2

from tb_harness import App
from tb_plugin_mindspore import health, loader
from tb_plugin_mindspore.answers import health as health_cache
from tb_plugin_mindspore.health import engine, rules, sources
from tb_plugin_mindspore.sources import points, series_cache
from tb_plugin_mindspore.sources.logdir import Sources, load_provider
from tb_plugin_mindspore.writing.writer import SummaryWriter

T0 = 1_700_000_000.0
STEPS = 300


def write_run(folder, steps=range(1, STEPS + 1), nan_at=None, info=None):
    with SummaryWriter(folder, flush_secs=0.2) as w:
        if info is not None:
            w.run_info(info)
        for s in steps:
            loss = math.nan if s == nan_at else 2.0 / math.sqrt(s)
            w.scalar("core/loss", loss, s, wall_time=T0 + s)
            w.scalar("core/learning_rate", 1e-3, s, wall_time=T0 + s)
            w.scalar("core/grad_norm", 1.0 + 0.01 * (s % 7), s, wall_time=T0 + s)
            w.interval("core/loss", 0.9 * loss, loss, 1.1 * loss, 10, 1 if s == nan_at else 0, s, wall_time=T0 + s)
            if s % 10 == 0:
                w.layers("debug/update_ratio", ["a.weight", "b.weight"], [1e-3, 2e-3], s, wall_time=T0 + s)


@pytest.fixture(scope="module")
def logdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("health_cache")
    write_run(root / "clean", info={"epochs": 1, "steps_per_epoch": STEPS})
    write_run(root / "broken", nan_at=123)
    return root


def plugin_of(app):
    return next(p for p in app.wsgi._plugins if p.plugin_name == "mindspore")


def rule_set(report):
    return {r["run"]: sorted((f["rule"], f["tag"], tuple(f["steps"])) for f in r["findings"]) for r in report["runs"]}


@pytest.mark.parametrize("load_fast", ["false", "true"])
def test_route_is_cached_and_recomputes_only_the_run_that_changed(tmp_path, load_fast):
    root = tmp_path / "logs"
    for run in ("clean", "other"):
        write_run(root / run)
    app = App(root, load_fast=load_fast)
    try:
        app.wait_for_last_step("other", "core/loss", STEPS)
        app.wait_for_last_step("clean", "core/loss", STEPS)
        cache = plugin_of(app)._health
        first = app.plugin("/health")
        assert cache.computed == {"clean": 1, "other": 1}
        # A run is judged once more when its series move to the door that holds every point (the plugin's store
        # catching up after TensorBoard's sample answered first); then it is answered from the cache.
        deadline = time.time() + 60
        while True:   # each answer is shared for TOKEN_TTL_SECS: ask again after it, twice, to see it settle
            seen = dict(cache.computed)
            time.sleep(series_cache.TOKEN_TTL_SECS + 0.2)
            first = app.plugin("/health")
            if dict(cache.computed) == seen:
                time.sleep(series_cache.TOKEN_TTL_SECS + 0.2)
                app.plugin("/health", run="clean")
                first = app.plugin("/health")
                if dict(cache.computed) == seen:
                    break
            assert time.time() < deadline, cache.computed
        assert all(n <= 2 for n in seen.values()), seen
        assert rule_set(first) == rule_set(health.check_logdir(str(root)))   # what the uncached check says
        for _ in range(3):
            assert app.plugin("/health") == first
            assert app.plugin("/health", run="clean")["runs"] == [r for r in first["runs"] if r["run"] == "clean"]
        assert dict(cache.computed) == seen      # answered from the cache
        # new data in one run (a NaN): that run alone is read again, and the answer shows it
        write_run(root / "other", steps=range(STEPS + 1, STEPS + 21), nan_at=STEPS + 5)
        app.wait_for_last_step("other", "core/loss", STEPS + 20)
        deadline = time.time() + 30
        while True:
            body = app.plugin("/health", run="other")
            if any(f["rule"] == "nonfinite" for f in body["runs"][0]["findings"]):
                break
            assert time.time() < deadline, body
            time.sleep(0.3)
        app.plugin("/health")
        assert cache.computed["clean"] == seen["clean"] and cache.computed["other"] > seen["other"]
    finally:
        app.close()


def test_clock_rules_run_on_every_request_on_the_kept_series(logdir):
    now = [T0 + STEPS + 10.0]
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(logdir))
    cache = health_cache.HealthCache(provider, clock=lambda: now[0], multiplexer=mux)
    ctx = tb_context.RequestContext()

    def clock_findings():
        report = cache.report(ctx, "")
        return {r["run"]: [f["rule"] for f in r["findings"] if f["rule"] in engine.CLOCK_RULES]
                for r in report["runs"]}

    assert clock_findings() == {"broken": [], "clean": []}
    now[0] += 600.0   # ten minutes of silence: "broken" (length unknown) looks stalled; "clean" finished (300/300)
    assert clock_findings() == {"broken": ["run_stalled"], "clean": []}
    assert cache.computed == {"broken": 1, "clean": 1}      # not read again: only the clock moved


def test_every_rule_that_reads_the_clock_is_a_clock_rule():
    reads_clock = {r.id for r in rules.RULES if ".now" in inspect.getsource(r.fn)}
    assert reads_clock <= engine.CLOCK_RULES
    assert engine.CLOCK_RULES <= {r.id for r in rules.RULES}


def test_concurrent_requests_share_one_computation(logdir):
    mux = plugin_event_multiplexer.EventMultiplexer()
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(logdir))
    cache = health_cache.HealthCache(provider)
    ctx = tb_context.RequestContext()
    barrier = threading.Barrier(8)
    answers = []

    def ask(run):
        barrier.wait()
        answers.append(cache.report(ctx, "", runs=None if run == "all" else [run]))

    threads = [threading.Thread(target=ask, args=(run,)) for run in ["all", "clean", "broken", "all"] * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(answers) == 8
    assert cache.computed == {"broken": 1, "clean": 1}      # each run computed once, whoever asked first
    full = [a for a in answers if len(a["runs"]) == 2]
    assert all(a == full[0] for a in full)


def test_single_flight_shares_results_and_errors():
    flights = series_cache.SingleFlight()
    started, release = threading.Event(), threading.Event()
    calls = []

    def slow():
        calls.append(1)
        started.set()
        release.wait(10)
        return "answer"

    results = []
    owner = threading.Thread(target=lambda: results.append(flights.do("k", slow)))
    owner.start()
    started.wait(10)
    waiters = [threading.Thread(target=lambda: results.append(flights.do("k", slow))) for _ in range(3)]
    for t in waiters:
        t.start()
    while flights.shared < 3:
        threading.Event().wait(0.01)
    release.set()
    for t in [owner] + waiters:
        t.join(10)
    assert results == ["answer"] * 4 and len(calls) == 1 and len(flights) == 0

    def boom():
        raise RuntimeError("broken provider")

    with pytest.raises(RuntimeError, match="broken provider"):
        flights.do("k", boom)
    assert flights.do("k", lambda: 5) == 5    # a failure is not remembered


def test_constructor_arguments_are_checked(logdir):
    provider = load_provider(str(logdir))
    with pytest.raises(ValueError, match="max_bytes must be positive, got 0"):
        health_cache.HealthCache(provider, max_bytes=0)
    with pytest.raises(ValueError, match="max_parallel must be at least 1, got 0"):
        health_cache.HealthCache(provider, max_parallel=0)
    with pytest.raises(engine.ConfigError, match="unknown health rule 'nope'"):
        health_cache.HealthCache(provider, config={"nope": {}})


def test_direct_reads_match_the_data_provider(logdir):
    mux = plugin_event_multiplexer.EventMultiplexer(tensor_size_guidance=dict(loader.SAMPLE_LIMITS))
    mux.AddRunsFromDirectory(str(logdir))
    mux.Reload()
    provider = data_provider.MultiplexerDataProvider(mux, str(logdir))
    ctx = tb_context.RequestContext()
    listing = sources.ProviderListing(Sources(provider).bind(ctx, ""))
    slow = sources.read_runs(Sources(provider).bind(ctx, ""), listing, listing.runs(), now=T0)
    fast = sources.read_runs(Sources(provider, multiplexer=mux).bind(ctx, ""), listing, listing.runs(), now=T0)
    assert [r.run for r in slow] == [r.run for r in fast] == ["broken", "clean"]
    for a, b in zip(slow, fast):
        assert a.info == b.info and a.other_tags == b.other_tags
        for group in ("scalars", "intervals", "layers"):
            ga, gb = getattr(a, group), getattr(b, group)
            assert set(ga) == set(gb) and ga
            for tag in ga:
                for field, value in vars(ga[tag]).items():
                    if isinstance(value, np.ndarray):
                        np.testing.assert_array_equal(value, vars(gb[tag])[field])
        assert [f.to_json() for f in engine.check_run(a)] == [f.to_json() for f in engine.check_run(b)]


def _proto(dtype, dims, **fields):
    shape = tensor_shape_pb2.TensorShapeProto(dim=[tensor_shape_pb2.TensorShapeProto.Dim(size=d) for d in dims])
    return tensor_pb2.TensorProto(dtype=dtype, tensor_shape=shape, **fields)


def test_tensor_proto_encodings():
    assert points.scalar_value(_proto(types_pb2.DT_FLOAT, [], float_val=[1.5])) == 1.5
    assert points.scalar_value(_proto(types_pb2.DT_DOUBLE, [], double_val=[0.1])) == 0.1
    assert points.scalar_value(_proto(types_pb2.DT_DOUBLE, [], tensor_content=np.float64(2.5).tobytes())) == 2.5
    np.testing.assert_array_equal(points.tensor_values(_proto(types_pb2.DT_FLOAT, [3], float_val=[7.0])), [7, 7, 7])
    np.testing.assert_array_equal(points.tensor_values(
        _proto(types_pb2.DT_FLOAT, [2], tensor_content=np.array([1, np.nan], np.float32).tobytes())), [1, np.nan])
    assert points.tensor_values(_proto(types_pb2.DT_STRING, [], string_val=[b"{}"])) is None
    assert points.tensor_values(_proto(types_pb2.DT_FLOAT, [4], tensor_content=b"\0" * 12)) is None   # truncated
    assert points.scalar_value(_proto(types_pb2.DT_HALF, [], half_val=[15360])) is None                # left to TB
