"""Benchmark: the data routes of the MindSpore tab against TensorBoard's own scalars route, on the same data, in the
same ``tensorboard`` process, over HTTP with gzip (what a browser gets).

    python bench/dashboard_routes.py [--path DIR] [--loaders auto,false] [--family] [--no-browser]

Data (made once, kept under ``--path``):

* ``big``: one run of 100,000 steps x 30 scalar tags (5 ``core/*``, 25 ``diagnostic/*``), with interval statistics
  for 3 of them (``interval/core/loss``, ``.../grad_norm``, ``.../step_time_ms``) at every step;
* ``layers``: one run with a ``debug/update_ratio`` vector of 200 layers at each of 5,000 steps;
* with ``--family``: ``family``, 200 mindformers-style scalar tags ``local_norm/<param>`` x 5,000 steps.

Figures, per loader (``--load_fast=auto`` is what users get; ``false`` is TensorBoard's Python loader):

* dashboard data, ours: ``tags`` + one ``scalars_batch`` of the 30 tags (2,000 points each, spikes kept), i.e.
  what the tab fetches for its first render: cold (first request after loading), warm (the same requests again
  at once) and revalidated (again after the 1 s freshness memo expired: the provider is asked whether the series
  changed, the stored answers are reused);
* dashboard data, TensorBoard's Scalars plugin on the same run: ``/data/plugin/scalars/tags`` + 30 x
  ``/data/plugin/scalars/scalars`` (every point of each tag: TensorBoard sends no spike-preserving downsample);
* heatmap: ``layers`` for 200 x 5,000: milliseconds (cold, warm, revalidated) and bytes on the wire (gzip) and raw;
* with a browser: ``bench/render_speed.py``'s first render of 20 charts and 200 x 5,000 heatmap draw.

TensorBoard is started with ``--samples_per_plugin scalars=1000000`` so that both routes see all 100,000 points
whatever the defaults (the plugin's own default keeps every point too). Issue targets: dashboard data <= 150 ms warm; heatmap <= 300 ms and <= 2 MB gzip.
Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import gzip
import json
import math
import os
import statistics
import sys
import tempfile
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

from tb_harness import tensorboard_process  # noqa: E402

STEPS = 100_000
TAGS = ["core/loss", "core/learning_rate", "core/grad_norm", "core/step_time_ms", "core/throughput"] + [
    "diagnostic/metric_%02d" % i for i in range(25)
]
INTERVAL_TAGS = ["core/loss", "core/grad_norm", "core/step_time_ms"]
LAYERS = 200
LAYER_STEPS = 5000
PREFIX = "/data/plugin/mindspore"


# -- data ---------------------------------------------------------------------------------------------------------
def write_big(folder):
    """100k steps x 30 scalars (one event per step), 3 interval tensors per step; with TensorBoard's writer."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tb_plugin_mindspore.writing import summary

    os.makedirs(folder, exist_ok=True)
    w = EventFileWriter(folder, max_queue_size=10000, flush_secs=120)
    rng = np.random.default_rng(0)
    noise = rng.normal(0, 0.05, size=(STEPS, len(TAGS)))
    spikes = set(rng.integers(1, STEPS, size=20).tolist())
    for s in range(1, STEPS + 1):
        row = noise[s - 1]
        values = []
        for k, tag in enumerate(TAGS):
            v = 2.0 / math.sqrt(s) + 0.1 * k + row[k]
            if tag == "core/loss" and s in spikes:
                v *= 1000.0   # single-step spikes the downsampling must keep
            values.append(summary_pb2.Summary.Value(tag=tag, simple_value=float(v)))
        for tag in INTERVAL_TAGS:
            values.append(summary.interval(tag, 0.9, 1.0, 1.1, 1, 0))
        w.add_event(event_pb2.Event(wall_time=1.7e9 + 0.1 * s, step=s, summary=summary_pb2.Summary(value=values)))
    w.close()


def write_family(folder):
    """200 scalar tags local_norm/<param> x 5,000 steps (one event per step)."""
    import numpy as np
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from render_speed import layer_names

    os.makedirs(folder, exist_ok=True)
    w = EventFileWriter(folder, max_queue_size=10000, flush_secs=120)
    names = layer_names(LAYERS)
    rng = np.random.default_rng(1)
    for s in range(1, LAYER_STEPS + 1):
        v = np.exp(rng.normal(0, 0.2, LAYERS)) * (1 + np.arange(LAYERS) * 0.01)
        w.add_event(event_pb2.Event(wall_time=1.7e9 + s, step=s, summary=summary_pb2.Summary(value=[
            summary_pb2.Summary.Value(tag="local_norm/" + n, simple_value=float(x)) for n, x in zip(names, v)])))
    w.close()


def make_data(path, family):
    from render_speed import write_layer_run

    made = {}
    for name, fn in (("big", write_big), ("layers", None), ("family", write_family)):
        folder = os.path.join(path, name)
        if name == "family" and not family:
            continue
        if os.path.isdir(folder) and os.listdir(folder):
            continue
        t0 = time.time()
        if name == "layers":
            write_layer_run(path, LAYERS, LAYER_STEPS, run="layers")
        else:
            fn(folder)
        made[name] = round(time.time() - t0, 1)
    return made


# -- HTTP ---------------------------------------------------------------------------------------------------------
def get(base, route, query=None):
    """(milliseconds, bytes on the wire, decoded JSON) of one GET with gzip accepted."""
    url = base + route
    if query:
        url += "?" + urllib.parse.urlencode(query, doseq=True)
    req = urllib.request.Request(url, headers={"Accept-Encoding": "gzip"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        body = r.read()
        encoding = r.headers.get("Content-Encoding")
    ms = (time.perf_counter() - t0) * 1000
    raw = gzip.decompress(body) if encoding == "gzip" else body
    return ms, len(body), raw


def ours_dashboard(base):
    t_tags, b_tags, _ = get(base, PREFIX + "/tags")
    t_batch, b_batch, raw = get(base, PREFIX + "/scalars_batch", {"run": "big", "tag": TAGS, "max_points": 2000})
    body = json.loads(raw)
    assert len(body["series"]) == len(TAGS) and all(s["total_points"] == STEPS for s in body["series"]), "incomplete"
    return t_tags + t_batch, b_tags + b_batch, len(raw)


def tb_dashboard(base):
    t, b, _ = get(base, "/data/plugin/scalars/tags")
    raw_total = 0
    for tag in TAGS:
        ms, n, raw = get(base, "/data/plugin/scalars/scalars", {"run": "big", "tag": tag})
        t += ms
        b += n
        raw_total += len(raw)
        if tag == TAGS[0]:
            assert len(json.loads(raw)) == STEPS, "TensorBoard's scalars route does not serve every point"
    return t, b, raw_total


def heatmap(base, run="layers", tag="debug/update_ratio"):
    ms, n, raw = get(base, PREFIX + "/layers", {"run": run, "tag": tag})
    body = json.loads(raw)
    assert body["shape"] == [LAYERS, LAYER_STEPS], body["shape"]
    return ms, n, len(raw)


def wait_loaded(base, family, timeout=1800):
    deadline = time.time() + timeout
    t0 = time.time()
    while True:
        try:
            _, _, raw = get(base, PREFIX + "/scalars", {"run": "big", "tag": TAGS[-1], "max_points": 10})
            big = json.loads(raw)["total_points"] == STEPS
            _, _, raw = get(base, PREFIX + "/layers", {"run": "layers", "tag": "debug/update_ratio", "max_steps": 10})
            lay = json.loads(raw)["total_steps"] == LAYER_STEPS
            fam = True
            if family:
                _, _, raw = get(base, PREFIX + "/layers", {"run": "family", "tag": "local_norm/*", "max_steps": 10})
                body = json.loads(raw)
                fam = body["total_steps"] == LAYER_STEPS and body["shape"][0] == LAYERS
            if big and lay and fam:
                return time.time() - t0
        except (urllib.error.HTTPError, urllib.error.URLError, KeyError, ValueError):
            pass
        if time.time() > deadline:
            raise AssertionError("TensorBoard did not load the data within %d s" % timeout)
        time.sleep(2)


def measure(path, loader, family, reps=5):
    out = {"loader": loader}
    with tensorboard_process(path, "--load_fast", loader, "--samples_per_plugin", "scalars=1000000",
                             timeout=300) as base:
        out["load_s"] = round(wait_loaded(base, family), 1)
        time.sleep(1.2)   # the freshness memo of the loading polls expires
        cold = ours_dashboard(base)
        out["ours_cold_ms"] = round(cold[0], 1)
        out["ours_bytes_gzip"] = cold[1]
        out["ours_bytes_raw"] = cold[2]
        out["ours_warm_ms"] = [round(ours_dashboard(base)[0], 1) for _ in range(reps)]
        reval = []
        for _ in range(3):
            time.sleep(1.1)
            reval.append(round(ours_dashboard(base)[0], 1))
        out["ours_revalidated_ms"] = reval
        tb = [tb_dashboard(base) for _ in range(3)]
        out["tb_warm_ms"] = [round(t[0], 1) for t in tb]
        out["tb_bytes_gzip"] = tb[0][1]
        out["tb_bytes_raw"] = tb[0][2]
        time.sleep(1.1)
        h = heatmap(base)
        out["heatmap_cold_ms"] = round(h[0], 1)
        out["heatmap_bytes_gzip"] = h[1]
        out["heatmap_bytes_raw"] = h[2]
        out["heatmap_warm_ms"] = [round(heatmap(base)[0], 1) for _ in range(reps)]
        reval = []
        for _ in range(3):
            time.sleep(1.1)
            reval.append(round(heatmap(base)[0], 1))
        out["heatmap_revalidated_ms"] = reval
        if family:
            time.sleep(1.1)
            f = heatmap(base, "family", "local_norm/*")
            out["family_cold_ms"] = round(f[0], 1)
            out["family_bytes_gzip"] = f[1]
            out["family_warm_ms"] = [round(heatmap(base, "family", "local_norm/*")[0], 1) for _ in range(reps)]
    return out


def print_table(results, browser):
    med = statistics.median
    rows = []
    for r in results:
        L = "[%s] " % ("load_fast=" + r["loader"])
        rows.append((L + "TensorBoard loaded the logdir (s)", "%.1f" % r["load_s"], ""))
        rows.append((L + "dashboard data, ours, cold (ms)", "%.1f" % r["ours_cold_ms"], ""))
        rows.append((L + "dashboard data, ours, warm (ms)", "median %.1f" % med(r["ours_warm_ms"]), "<= 150"))
        rows.append((L + "dashboard data, ours, revalidated (ms)", "median %.1f" % med(r["ours_revalidated_ms"]), "<= 150"))
        rows.append((L + "dashboard data, TensorBoard scalars, warm (ms)", "median %.1f" % med(r["tb_warm_ms"]), ""))
        rows.append((L + "dashboard bytes gzip: ours / TensorBoard", "%d / %d" % (r["ours_bytes_gzip"], r["tb_bytes_gzip"]), ""))
        rows.append((L + "heatmap 200x5000, cold (ms)", "%.1f" % r["heatmap_cold_ms"], "<= 300"))
        rows.append((L + "heatmap 200x5000, warm (ms)", "median %.1f" % med(r["heatmap_warm_ms"]), "<= 300"))
        rows.append((L + "heatmap 200x5000, revalidated (ms)", "median %.1f" % med(r["heatmap_revalidated_ms"]), "<= 300"))
        rows.append((L + "heatmap 200x5000, bytes gzip / raw", "%d / %d" % (r["heatmap_bytes_gzip"], r["heatmap_bytes_raw"]), "<= 2000000"))
        if "family_cold_ms" in r:
            rows.append((L + "family heatmap local_norm/* 200x5000, cold / warm (ms)", "%.1f / %.1f" % (
                r["family_cold_ms"], med(r["family_warm_ms"])), ""))
            rows.append((L + "family heatmap bytes gzip", "%d" % r["family_bytes_gzip"], ""))
    if browser:
        if "charts" in browser:
            c = browser["charts"]
            rows.append(("first render, 20 charts in headless Chromium (s)", "min %.3f median %.3f" % (
                min(c["first_render_s"]), med(c["first_render_s"])), "<= 1.5"))
        if "heatmap" in browser:
            h = browser["heatmap"]
            rows.append(("heatmap 200x5000 canvas draw in Chromium (ms)", "median %.1f max %.1f" % (
                med(h["redraw_ms"]), max(h["redraw_ms"])), "<= 1000"))
    width = max(len(r[0]) for r in rows)
    print("%-*s  %-26s %s" % (width, "figure", "measured", "target"))
    for r in rows:
        print("%-*s  %-26s %s" % (width, r[0], r[1], r[2]))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default=os.path.join(tempfile.gettempdir(), "tb-mindspore-bench", "dashboard"),
                        help="folder for the generated event files (kept and reused)")
    parser.add_argument("--loaders", default="auto,false", help="values of --load_fast to measure, comma-separated")
    parser.add_argument("--family", action="store_true", help="also a 200-tag local_norm/* family (1M scalars)")
    parser.add_argument("--no-browser", action="store_true", help="skip the headless Chromium figures")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    made = make_data(args.path, args.family)
    results = [measure(args.path, loader, args.family, args.reps) for loader in args.loaders.split(",")]
    browser = None
    if not args.no_browser:
        import render_speed

        browser = render_speed.run(os.path.join(os.path.dirname(args.path), "render"), ["charts", "heatmap"], 3)
    print_table(results, browser)
    print(json.dumps({"generated_s": made, "routes": results, "browser": browser}))


if __name__ == "__main__":
    main()
