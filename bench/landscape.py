"""Benchmark: wall time of a loss landscape of the demo transformer, ours against MindSpore's SummaryLandscape.

    python bench/landscape.py [--grids 21,41] [--ms-grids 21] [--samples 256] [--batch 32] [--train-steps 30]

The model is the demo's 2-layer transformer classifier (``nn.TransformerEncoderLayer``, hidden 128, seq 64,
0.4M parameters, GRAPH_MODE), trained for a few epochs of ``--train-steps`` steps each under MindSpore's
``SummaryCollector(collect_landscape=...)`` (which saves the checkpoints and metadata that ``SummaryLandscape``
needs). Then, around the same final parameters and on the same ``--samples`` evaluation samples (batches of
``--batch``):

* **ours**: ``tb_mindspore_callbacks.compute_landscape`` with random filter-normalized directions (the evaluation
  subset is taken once into memory, the loss graph compiled once in eval mode, parameters written in place);
* **SummaryLandscape**: ``SummaryLandscape.gen_landscapes_with_multi_process`` with
  ``create_landscape={"train": False, "result": True}`` (its random-direction landscape; per-tensor normalization,
  loss in train mode, a fresh network from ``callback_fn``, ``load_param_into_net`` and a dataset pass per point).

Each figure is the wall time (and this process's CPU time) of producing one landscape from trained parameters,
compilation included. ``--ms-grids`` may be empty to skip SummaryLandscape; ``--ms-grids 21,41`` adds its 41 x 41
(about half an hour more on two shared cores). The machine is shared: figures vary with other load (the load average is
printed with the results).

Do not edit the package's source files while this runs: MindSpore reads a cell's source when it compiles it.

Prints a table, then, as the last line, one JSON object.
"""

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


def _ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


def _eval_dataset(tokens, labels, batch):
    import mindspore.dataset as ds

    return ds.NumpySlicesDataset({"tokens": tokens, "label": labels}, shuffle=False).batch(batch, drop_remainder=True)


def train_with_collector(workdir, train_steps, grid, samples):
    """3 epochs of ``train_steps`` steps under SummaryCollector(collect_landscape); returns (net, summary dir)."""
    from mindspore import nn
    from mindspore.train import Model, SummaryCollector

    from tb_mindspore_callbacks.demo import DEMO_CONFIG, build_model, synthetic_dataset

    net = build_model(seed=0)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    optimizer = nn.AdamWeightDecay(net.trainable_params(), learning_rate=DEMO_CONFIG["lr"], weight_decay=0.01)
    model = Model(net, loss_fn, optimizer)
    summary_dir = os.path.join(workdir, "summary")
    spec = {"landscape_size": grid, "unit": "epoch", "create_landscape": {"train": False, "result": True},
            "num_samples": samples, "intervals": [[1, 2, 3]]}
    collector = SummaryCollector(summary_dir, collect_freq=train_steps,
                                 collect_specified_data={"collect_landscape": spec, "collect_input_data": False})
    model.train(3, synthetic_dataset(train_steps), callbacks=[collector], dataset_sink_mode=False)
    return net, loss_fn, summary_dir


def ours(net, loss_fn, tokens, labels, grid, batch):
    from mindspore import nn

    from tb_mindspore_callbacks import compute_landscape

    lines = []
    t0, c0 = time.perf_counter(), time.process_time()
    result = compute_landscape(nn.WithLossCell(net, loss_fn), (tokens, labels), grid=grid, num_samples=len(tokens),
                               eval_batch_size=batch, log=lines.append, progress=False)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall_s": wall, "cpu_s": cpu, "points": grid * grid, "s_per_point": wall / (grid * grid),
            "estimate": lines[0] if lines else "", "center_loss": result.center_loss,
            "z_min": float(result.z.min()), "z_max": float(result.z.max())}


def summary_landscape(summary_dir, tokens, labels, grid, batch, samples):
    from mindspore import nn
    from mindspore.train import Loss, Model, SummaryLandscape

    from tb_mindspore_callbacks.demo import build_model

    def callback_fn():
        network = build_model(seed=0)
        metrics = {"Loss": Loss()}
        model = Model(network, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics=metrics)
        return model, network, _eval_dataset(tokens, labels, batch), metrics

    spec = {"landscape_size": grid, "create_landscape": {"train": False, "result": True}, "num_samples": samples,
            "intervals": [[1, 2, 3]]}
    out_dir = tempfile.mkdtemp(prefix="ms_landscape_out_")
    t0, c0 = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(io.StringIO()):   # it prints one line per point
        SummaryLandscape(summary_dir).gen_landscapes_with_multi_process(callback_fn, collect_landscape=spec,
                                                                        device_ids=[0], output=out_dir)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    shutil.rmtree(out_dir, ignore_errors=True)
    return {"wall_s": wall, "cpu_s": cpu, "points": grid * grid, "s_per_point": wall / (grid * grid)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grids", default="21,41", help="grid sizes for ours (comma-separated)")
    parser.add_argument("--ms-grids", default="21", help="grid sizes for SummaryLandscape ('' to skip)")
    parser.add_argument("--samples", type=int, default=256)
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--train-steps", type=int, default=30, help="steps per epoch of the short training")
    args = parser.parse_args(argv)

    os.environ.setdefault("GLOG_v", "3")
    import mindspore as ms

    from tb_mindspore_callbacks.demo import synthetic_arrays

    ms.set_context(mode=ms.GRAPH_MODE)
    grids, ms_grids = _ints(args.grids), _ints(args.ms_grids)
    tokens, labels = synthetic_arrays(args.samples, seed=1)
    workdir = tempfile.mkdtemp(prefix="bench_landscape_")
    load_before = os.getloadavg()[0]
    try:
        t0 = time.perf_counter()
        net, loss_fn, summary_dir = train_with_collector(workdir, args.train_steps, max(ms_grids or [3]),
                                                         args.samples)
        train_s = time.perf_counter() - t0
        results = {"ours": {}, "summary_landscape": {}}
        for g in grids:
            results["ours"][str(g)] = ours(net, loss_fn, tokens, labels, g, args.batch)
            print("ours %dx%d: %.1f s" % (g, g, results["ours"][str(g)]["wall_s"]), file=sys.stderr)
        for g in ms_grids:
            results["summary_landscape"][str(g)] = summary_landscape(summary_dir, tokens, labels, g, args.batch,
                                                                     args.samples)
            print("SummaryLandscape %dx%d: %.1f s" % (g, g, results["summary_landscape"][str(g)]["wall_s"]),
                  file=sys.stderr)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    load_after = os.getloadavg()[0]

    print("Loss landscape of the demo transformer (0.4M parameters), %d evaluation samples in batches of %d, "
          "GRAPH_MODE, CPU" % (args.samples, args.batch))
    print("load average %.1f before, %.1f after (2 cores)" % (load_before, load_after))
    print()
    print("| grid    | ours wall | ours / point | ours CPU | SummaryLandscape wall | SL / point | SL CPU | "
          "speed-up (wall) | speed-up (CPU) |")
    print("|---------|----------:|-------------:|---------:|----------------------:|-----------:|-------:|"
          "----------------:|---------------:|")
    speedups, cpu_speedups = {}, {}
    for g in sorted(set(grids) | set(ms_grids)):
        o = results["ours"].get(str(g))
        m = results["summary_landscape"].get(str(g))
        ratio = m["wall_s"] / o["wall_s"] if o and m else None
        cpu_ratio = m["cpu_s"] / o["cpu_s"] if o and m else None
        if ratio:
            speedups[str(g)] = ratio
            cpu_speedups[str(g)] = cpu_ratio
        print("| %-7s | %9s | %12s | %8s | %21s | %10s | %6s | %15s | %14s |" % (
            "%dx%d" % (g, g),
            "%.1f s" % o["wall_s"] if o else "-", "%.0f ms" % (1000 * o["s_per_point"]) if o else "-",
            "%.0f s" % o["cpu_s"] if o else "-",
            "%.1f s" % m["wall_s"] if m else "not run", "%.0f ms" % (1000 * m["s_per_point"]) if m else "-",
            "%.0f s" % m["cpu_s"] if m else "-",
            "%.2fx" % ratio if ratio else "-", "%.2fx" % cpu_ratio if cpu_ratio else "-"))
    print()
    for g, o in results["ours"].items():
        print("ours %sx%s printed before starting: %s" % (g, g, o["estimate"]))
    print(json.dumps({"samples": args.samples, "batch": args.batch, "train_s": train_s, "load_before": load_before,
                      "load_after": load_after, "speedup": speedups, "cpu_speedup": cpu_speedups, **results},
                     sort_keys=True))


if __name__ == "__main__":
    main()
