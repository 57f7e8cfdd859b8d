"""Benchmark: our ``_MS`` reader against TensorBoard's own Python loader on the same data.

    python bench/ms_reader.py [--path DIR] [--mb 200] [--scalars 1000000] [--tb-mb N]

1. Makes (once; cached under ``--path``) two files with a real MindSpore ``SummaryRecord`` (in a subprocess):
   * ``mixed/``: a SummaryCollector-like file of at least ``--mb`` MB: each step 32 scalars and 16 parameter
     histograms (1000 values each, MindSpore's 90 buckets);
   * ``scalars/``: ``--scalars`` scalar values, 100 per step (for records/s on small records and memory).
   and their equivalents in TensorBoard's format, made with ``tb-mindspore convert``.
2. Measures, in this process (which never imports MindSpore):
   * ``ms_framing``: our record framing + both CRC32C checks alone (``RecordFile.read_payloads``);
   * ``ms_reader``: ``MsLogdir.reload`` to the end: framing, CRCs, protobuf decoding, storage (what the plugin does);
   * ``tb_loader``: TensorBoard's ``EventFileLoader`` iterating every event of the equivalent tfevents file;
   * ``tb_accumulator``: TensorBoard's ``EventAccumulator.Reload`` keeping everything (size_guidance 0);
   * memory held per million scalar points by ``MsLogdir`` and by ``EventAccumulator`` (tracemalloc).
   ``--tb-mb`` limits TensorBoard's measurements to the first N MB of each file (they are slow); rates stay per MB.
   Our reader runs ``--repeat`` times (best kept: the machine may be shared); TensorBoard's once.

Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import gc
import glob
import json
import os
import subprocess
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))


# -- generation (runs in a subprocess that imports MindSpore) -----------------------------------------------------
def generate(kind, folder, target_mb, scalars):
    import numpy as np
    import mindspore as ms
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.RandomState(0)
    os.makedirs(folder, exist_ok=True)
    with SummaryRecord(folder, num_process=2) as rec:
        path = None
        step = 0
        if kind == "mixed":
            weights = [Tensor(rng.randn(1000).astype(np.float32)) for _ in range(16)]
            while True:
                step += 1
                for i in range(32):
                    rec.add_value("scalar", "metric_%02d/auto" % i, Tensor(np.float32(np.sin(step / 50.0) + i)))
                for j, w in enumerate(weights):
                    rec.add_value("histogram", "layer%02d.weight/auto" % j, w)
                rec.record(step)
                if step % 500 == 0:
                    rec.flush()
                    path = path or glob.glob(os.path.join(folder, "*_MS"))[0]
                    if os.path.getsize(path) >= target_mb * 1e6:
                        break
        else:
            per_step = 100
            for step in range(1, scalars // per_step + 1):
                for i in range(per_step):
                    rec.add_value("scalar", "metric_%03d" % i, Tensor(np.float32(step * 0.001 + i)))
                rec.record(step)


def ensure_data(root, target_mb, scalars):
    """The two _MS files and their converted tfevents twins, made if missing."""
    made = {}
    for kind in ("mixed", "scalars"):
        folder = os.path.join(root, "ms", kind)
        done = os.path.join(root, "%s.done" % kind)
        spec = {"mb": target_mb} if kind == "mixed" else {"scalars": scalars}
        if not (os.path.exists(done) and json.load(open(done)) == spec):
            if os.path.isdir(folder):
                for p in glob.glob(os.path.join(folder, "*")):
                    os.chmod(p, 0o600)
                    os.remove(p)
            t0 = time.time()
            print("making the %s file with a real SummaryRecord (once) ..." % kind, file=sys.stderr, flush=True)
            env = dict(os.environ, GLOG_v="3")
            subprocess.check_call([sys.executable, os.path.abspath(__file__), "--generate", kind, folder,
                                   str(target_mb), str(scalars)], env=env, stdout=subprocess.DEVNULL)
            print("  %.0f s" % (time.time() - t0), file=sys.stderr, flush=True)
            tb_folder = os.path.join(root, "tb", kind)
            if os.path.isdir(tb_folder):
                for p in glob.glob(os.path.join(tb_folder, "*")) + glob.glob(os.path.join(tb_folder, ".*")):
                    os.remove(p)
            with open(done, "w") as f:
                json.dump(spec, f)
        ms_file = glob.glob(os.path.join(folder, "*_MS"))[0]
        tb_folder = os.path.join(root, "tb", kind)
        if not glob.glob(os.path.join(tb_folder, "*tfevents*")):
            from tb_plugin_mindspore.commands import convert

            convert.convert(folder, out=tb_folder, progress=False)
        tb_file = glob.glob(os.path.join(tb_folder, "*tfevents*_MS"))[0]
        made[kind] = (ms_file, tb_file)
    return made


# -- measurements -------------------------------------------------------------------------------------------------
def count_values(logdir, run="."):
    tags = logdir.tags(run)
    scalars = sum(len(logdir.scalar_arrays(run, t)[0]) for t in tags["scalars"])
    return scalars


def bench_framing(path):
    from tb_plugin_mindspore.io.records import RecordFile

    mf = RecordFile(path)
    t0 = time.perf_counter()
    records = 0
    while True:
        payloads, _, nread = mf.read_payloads(16 << 20)
        if not nread:
            break
        records += len(payloads)
    dt = time.perf_counter() - t0
    return {"seconds": dt, "bytes": mf.offset, "records": records}


def bench_ours(path):
    from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

    folder = os.path.dirname(path)
    gc.collect()
    t0 = time.perf_counter()
    logdir = MsLogdir(folder)
    while logdir.reload(max_bytes=16 << 20).pending:
        pass
    dt = time.perf_counter() - t0
    stats = logdir.stats(".")
    tags = logdir.tags(".")
    histograms = sum(t.seen for data in logdir._file_data(".") for t in data.series["histograms"].values())
    return {"seconds": dt, "bytes": stats["bytes_read"], "records": stats["records"],
            "scalars": count_values(logdir), "histograms": histograms, "tags": sum(map(len, tags.values()))}


def best_of(n, fn, *args):
    runs = [fn(*args) for _ in range(max(1, n))]
    return min(runs, key=lambda r: r["seconds"])


def _limited_copy(path, limit_mb, scratch):
    """The first ``limit_mb`` MB of a tfevents file, cut at a record boundary (None: the whole file)."""
    if not limit_mb or os.path.getsize(path) <= limit_mb * 1e6:
        return path
    import struct

    limit = int(limit_mb * 1e6)
    with open(path, "rb") as f:
        data = f.read(limit + (1 << 20))
    off = 0
    while True:
        (n,) = struct.unpack_from("<Q", data, off)
        if off + 16 + n > limit:
            break
        off += 16 + n
    os.makedirs(scratch, exist_ok=True)
    out = os.path.join(scratch, os.path.basename(path))
    with open(out, "wb") as f:
        f.write(data[:off])
    return out


def bench_tb_loader(path):
    from tensorboard.backend.event_processing import event_file_loader

    t0 = time.perf_counter()
    records = 0
    for _ in event_file_loader.EventFileLoader(path).Load():
        records += 1
    dt = time.perf_counter() - t0
    return {"seconds": dt, "bytes": os.path.getsize(path), "records": records}


def bench_tb_accumulator(path):
    from tensorboard.backend.event_processing import event_accumulator as ea

    guidance = {ea.SCALARS: 0, ea.HISTOGRAMS: 0, ea.IMAGES: 0, ea.TENSORS: 0, ea.COMPRESSED_HISTOGRAMS: 0}
    t0 = time.perf_counter()
    acc = ea.EventAccumulator(path, size_guidance=guidance)
    acc.Reload()
    dt = time.perf_counter() - t0
    scalars = sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])
    return {"seconds": dt, "bytes": os.path.getsize(path), "scalars": scalars}


def memory_ours(path):
    from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    logdir = MsLogdir(os.path.dirname(path))
    while logdir.reload().pending:
        pass
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    return {"bytes": held, "scalars": count_values(logdir)}


def memory_tb(path):
    from tensorboard.backend.event_processing import event_accumulator as ea

    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    acc = ea.EventAccumulator(path, size_guidance={ea.SCALARS: 0})
    acc.Reload()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    scalars = sum(len(acc.Scalars(t)) for t in acc.Tags()["scalars"])
    return {"bytes": held, "scalars": scalars}


def rate(r):
    return {"mb_per_s": r["bytes"] / 1e6 / r["seconds"], "records_per_s": r.get("records", 0) / r["seconds"],
            "scalars_per_s": r.get("scalars", 0) / r["seconds"], "mb": r["bytes"] / 1e6, "seconds": r["seconds"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--path", default="/tmp/tb_mindspore_bench", help="cache folder for the generated files")
    parser.add_argument("--mb", type=float, default=200, help="size of the mixed _MS file (default 200)")
    parser.add_argument("--scalars", type=int, default=1_000_000, help="values in the scalar file (default 1M)")
    parser.add_argument("--tb-mb", type=float, default=0, help="limit TensorBoard's runs to the first N MB")
    parser.add_argument("--repeat", type=int, default=3, help="runs of our reader; the best is kept (default 3)")
    parser.add_argument("--generate", nargs=4, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.generate:
        kind, folder, mb, scalars = args.generate
        generate(kind, folder, float(mb), int(scalars))
        return

    files = ensure_data(args.path, args.mb, args.scalars)
    results = {"files": {}, "memory": {}}
    for kind, (ms_file, tb_file) in files.items():
        entry = results["files"][kind] = {"ms_file_mb": os.path.getsize(ms_file) / 1e6,
                                          "tb_file_mb": os.path.getsize(tb_file) / 1e6}
        print("%s: measuring our reader on %.0f MB ..." % (kind, entry["ms_file_mb"]), file=sys.stderr, flush=True)
        entry["ms_framing"] = rate(best_of(args.repeat, bench_framing, ms_file))
        ours = best_of(args.repeat, bench_ours, ms_file)
        entry["ms_reader"] = rate(ours)
        entry["values"] = {"scalars": ours["scalars"], "histograms": ours["histograms"], "records": ours["records"]}
        tb_input = _limited_copy(tb_file, args.tb_mb, os.path.join(args.path, "cut", kind))
        print("%s: measuring TensorBoard on %.0f MB ..." % (kind, os.path.getsize(tb_input) / 1e6),
              file=sys.stderr, flush=True)
        entry["tb_loader"] = rate(bench_tb_loader(tb_input))
        entry["tb_accumulator"] = rate(bench_tb_accumulator(tb_input))
        entry["speedup_vs_tb_loader"] = entry["ms_reader"]["records_per_s"] / entry["tb_loader"]["records_per_s"]
        entry["speedup_vs_tb_accumulator_mb"] = (
            (ours["bytes"] / ours["seconds"]) / (entry["tb_accumulator"]["mb"] * 1e6 / entry["tb_accumulator"]
                                                  ["seconds"]))
    ms_file, tb_file = files["scalars"]
    print("measuring memory ...", file=sys.stderr, flush=True)
    mine, theirs = memory_ours(ms_file), memory_tb(tb_file)
    results["memory"] = {
        "ms_reader_mb_per_million_scalars": mine["bytes"] / mine["scalars"] * 1e6 / 1e6,
        "tb_accumulator_mb_per_million_scalars": theirs["bytes"] / theirs["scalars"] * 1e6 / 1e6,
        "scalars": mine["scalars"],
    }

    print()
    print("%-8s %-15s %9s %9s %12s %14s" % ("file", "reader", "MB", "MB/s", "records/s", "scalars/s"))
    for kind, entry in results["files"].items():
        for name in ("ms_framing", "ms_reader", "tb_loader", "tb_accumulator"):
            r = entry[name]
            print("%-8s %-15s %9.1f %9.1f %12.0f %14s" % (
                kind, name, r["mb"], r["mb_per_s"], r["records_per_s"],
                "%.0f" % r["scalars_per_s"] if r["scalars_per_s"] else "-"))
        print("%-8s values: %d scalars, %d histograms in %d records; ours %.1fx TensorBoard's loader (records/s)"
              % (kind, entry["values"]["scalars"], entry["values"]["histograms"], entry["values"]["records"],
                 entry["speedup_vs_tb_loader"]))
    m = results["memory"]
    print("memory per million scalar points: ours %.1f MB, EventAccumulator %.1f MB"
          % (m["ms_reader_mb_per_million_scalars"], m["tb_accumulator_mb_per_million_scalars"]))
    results["python"] = sys.version.split()[0]
    print(json.dumps(results, sort_keys=True))


if __name__ == "__main__":
    main()
