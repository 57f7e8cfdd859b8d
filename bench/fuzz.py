"""Coverage-guided fuzzing of every record reader and JSON side-file parser, and the torn-write matrix at scale.

    python bench/fuzz.py [--targets all|NAME,...] [--runs 10000000] [--max-seconds S] [--engine atheris|hypothesis]
                         [--rss-mb 1024] [--keep DIR] [--torn SAMPLES]

Each target is run in its own process by atheris (libFuzzer's coverage-guided mutation of Python code; installed
with ``pip install atheris``, wheels for CPython 3.11 on x86-64 Linux) for ``--runs`` executions or
``--max-seconds``, whichever comes first, from a seed corpus of real records (``--engine hypothesis`` instead runs
Hypothesis' random binary inputs, not coverage-guided: the fallback where atheris does not install). An *escape* is
an exception leaving the reader (what a hostile file could make reach TensorBoard or a command) or a broken
invariant (a record returned that was not written); the process stops at the first one and prints the input.
Memory: libFuzzer's ``-rss_limit_mb`` (a target over it is a failure) and the peak resident size is reported.
``--keep DIR`` keeps each target's corpus in ``DIR/<target>/corpus`` and a ledger of the runs (``DIR/ledger.jsonl``):
the next run goes on from the corpus the last one grew, and ``--runs`` counts over all of them (``--max-seconds`` a
sitting), so 10^7 executions per target can be reached in several sittings.

Targets (each the code a reader runs on bytes from a file):

* ``records``: the record reader of event and ``*_MS`` files (``io/records.scan``), reading the input in up to three
  growing pieces as a file being written; every record returned must be one written there (its length, payload
  and payload checksum; the length's own checksum is not required: a payload that matches its checksum at that
  length is intact), each once, in order.
* ``events``: event records decoded as the reader of ``check`` / ``report`` does (``EventLogdir._add``: protobuf,
  TensorBoard's migrations, data classes).
* ``ms_events``: ``*_MS`` records decoded as ``MsLogdir`` does (``_decode``: templates, value by value), then every
  histogram, tensor, image and landscape decoded as the accessors do.
* ``lineage``: MindSpore lineage records (``*_lineage`` files) merged as ``MsLogdir`` does.
* ``rank_file``: a per-rank statistics file (header, records, impossible records).
* ``json``: the JSON side files and contents: plugin content, run information, health events, run end markers,
  landscape records, per-layer vectors, interval rows, the conversion state of ``convert``.

``--torn SAMPLES`` runs the torn-write matrix of ``tests/reliability/test_torn_writes.py`` on 10,000-record files
instead: every byte of the last three records and SAMPLES sampled cuts per file kind.

Prints a table, then, as the last line, one JSON object with every figure.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

# libFuzzer's limit on one input, in seconds of wall time (-timeout).
TIMEOUT_SECONDS = 10
TARGETS = ("records", "events", "ms_events", "lineage", "rank_file", "json")


# -- the targets ----------------------------------------------------------------------------------------------------
class _Problems:
    """What a reader's file object collects (``problem``), bounded."""

    def __init__(self):
        self.path = "fuzz"
        self.count = 0

    def problem(self, offset, reason):
        self.count += 1


def _pieces(data, n):
    """Splits fuzz input into up to ``n`` byte strings with one-byte length prefixes (the rest is the last one)."""
    out, i = [], 0
    while i < len(data) and len(out) < n - 1:
        k = data[i]
        out.append(data[i + 1:i + 1 + k])
        i += 1 + k
    out.append(data[i:])
    return out


def make_target(name):
    """``(target(data: bytes), seeds: [bytes])``."""
    return globals()["_target_" + name]()


def _target_records():
    from tb_plugin_mindspore.io import records as framing

    def target(data):
        if len(data) < 2:
            return
        cuts = sorted({len(data) * data[0] // 255, len(data) * data[1] // 255})
        buf = data[2:]
        offset, resyncing, seen = 0, False, []
        for cut in cuts + [len(buf)]:
            cut = max(offset, min(cut, len(buf)))
            res = framing.scan(buf[offset:cut], offset, resyncing)
            if not 0 <= res.consumed <= cut - offset:
                raise AssertionError("consumed %d of %d" % (res.consumed, cut - offset))
            for off, payload in zip(res.offsets, res.payloads):
                # Written there: its length, then (after the length's checksum, which the payload's makes
                # redundant) the payload and the payload's checksum.
                written = framing.frame(payload)
                if buf[off:off + 8] != written[:8] or buf[off + 12:off + len(written)] != written[12:]:
                    raise AssertionError("record at %d was not written there" % off)
                seen.append(off)
            offset += res.consumed
            resyncing = res.resyncing
        if seen != sorted(set(seen)):
            raise AssertionError("records repeated or out of order: %r" % seen)

    from tensorboard.compat.proto import event_pb2

    good = framing.frame(event_pb2.Event(step=3, wall_time=1.0).SerializeToString())
    return target, [b"\x80\xc0" + good * 3, b"\x10\x90" + good + b"\x00" * 40 + good, b"\x00\xff" + good[:-3]]


def _target_events():
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writing import summary
    from tb_plugin_mindspore.sources import event_logdir

    reader = event_logdir.EventLogdir(None)
    state = {"run": event_logdir._Run("fuzz"), "n": 0}
    mf = _Problems()

    def target(data):
        state["n"] += 1
        if state["n"] % 500 == 0:
            state["run"] = event_logdir._Run("fuzz")       # bounded memory: a fresh run now and then
        payloads = _pieces(data, 4)
        reader._add(state["run"], "f", mf, payloads, list(range(len(payloads))))

    def ev(step, *values):
        return event_pb2.Event(step=step, wall_time=1.7e9, summary=summary_pb2.Summary(value=list(values))
                               ).SerializeToString()

    seeds = [ev(1, summary.scalar(metadata.LOSS, 1.0)),
             ev(2, summary.interval(metadata.LOSS, 1, 2, 3, 4, 0), summary.layers("debug/x", ["a", "b"], [1, 2])),
             ev(0, summary.run_info({"collect_freq": 1})), ev(3, summary_pb2.Summary.Value(tag="x", simple_value=2)),
             event_pb2.Event(step=0, graph_def=b"\x0a\x01a").SerializeToString()]
    return target, [bytes([len(seeds[0])]) + seeds[0] + seeds[1]] + seeds


def _target_ms_events():
    from tb_plugin_mindspore.io import ms_proto
    from tb_plugin_mindspore.sources import ms_files
    from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

    mf = _Problems()
    state = {"templates": {}, "n": 0}

    def target(data):
        state["n"] += 1
        if state["n"] % 500 == 0:
            state["templates"] = {}
        payloads = _pieces(data, 4)
        stage = MsLogdir._decode(mf, payloads, list(range(len(payloads))), state["templates"])
        for kind, items in stage.series.items():        # what the accessors decode, as they catch it
            for _, _, _, payload in items:      # (raw tag, step, wall, payload) once the stage is finished
                try:
                    if kind == "histograms":
                        value = ms_proto.SummaryValue.FromString(payload)
                        ms_files.histogram_buckets(value.histogram)
                        ms_files.histogram_stats(value.histogram)
                    elif kind == "tensors":
                        ms_files.tensor_array(ms_proto.SummaryValue.FromString(payload).tensor)
                except Exception:
                    pass

    def ev(step, **value):
        e = ms_proto.Event(step=step, wall_time=1.7e9)
        v = e.summary.value.add()
        for k, x in value.items():
            if k == "tensor":
                v.tensor.dims.extend([2])
                v.tensor.data_type = 11
                v.tensor.float_data.extend([1.0, 2.0])
            elif k == "histogram":
                b = v.histogram.buckets.add()
                b.left, b.width, b.count = 0.0, 1.0, 3
            else:
                setattr(v, k, x)
        return e.SerializeToString()

    seeds = [ev(1, tag=b"loss/auto", scalar_value=1.5), ev(2, tag=b"w", tensor=True),
             ev(3, tag=b"h", histogram=True), ms_proto.Event(version=b"MindSpore.Event:1").SerializeToString()]
    return target, [bytes([len(seeds[0])]) + seeds[0] + seeds[0]] + seeds


def _target_lineage():
    from tb_plugin_mindspore.io import ms_proto
    from tb_plugin_mindspore.sources import ms_lineage

    def target(data):
        lineage = {}
        for payload in _pieces(data, 3):
            try:
                event = ms_proto.LineageEvent.FromString(payload)
            except Exception:       # the reader skips and reports a record that does not decode
                continue
            try:
                ms_lineage.lineage_update(lineage, event)
            except Exception:       # ... and one it cannot merge (MsLogdir._merge_lineage)
                continue
        json.dumps(lineage, default=str)

    e = ms_proto.LineageEvent(wall_time=1.0)
    e.train_lineage.hyper_parameters.learning_rate = 0.1
    e.train_lineage.hyper_parameters.optimizer = "Momentum"
    return target, [e.SerializeToString()]


def _target_rank_file():
    import numpy as np

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.contract import rank_file

    def target(data):
        try:
            header, start = rank_file.parse_header(data)
        except ValueError:          # RankFileError, a refused header JSON: the reader shows it as refused
            return
        if header is None:
            return
        dtype = rank_file.record_dtype(header["fields"])
        records, _ = rank_file.parse_records(data, dtype, start)
        kept, counts = rank_file.check_records(records)
        if kept.size + sum(counts.values()) != records.size:
            raise AssertionError("records lost: %d + %r != %d" % (kept.size, counts, records.size))
        if kept.size and (np.any(kept["step"] < 0) or not np.all(np.isfinite(kept["wall_time"]))):
            raise AssertionError("an impossible record was kept")

    head = rank_file.header_bytes({"rank": 0, "rank_size": 1, "host": "h", "pid": 1, "start_time": 1.0,
                                   "collect_freq": 1})
    rec = np.zeros(3, dtype=rank_file.record_dtype(metadata.RANK_FIELDS))
    rec["step"], rec["wall_time"] = [1, 2, 3], [1.7e9, 1.7e9 + 1, 1.7e9 + 2]
    return target, [head + rec.tobytes(), head + bytes(100), head[:30]]


def _target_json():
    import numpy as np

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.commands import convert
    from tb_plugin_mindspore.contract import health_event, interval, layers, run_end, run_info
    from tb_plugin_mindspore.landscape import format as landscape_format

    def as_string_tensor(raw):
        return np.array([raw], dtype=object)

    def target(data):
        which, raw = (data[0] % 8, data[1:]) if data else (0, b"")
        try:
            if which == 0:
                metadata.parse_content(raw)
            elif which == 1:
                run_info.decode(as_string_tensor(raw))
            elif which == 2:
                health_event.decode(as_string_tensor(raw))
            elif which == 3:
                run_end.decode(as_string_tensor(raw))
            elif which == 4:
                record = metadata.loads_json(raw, "the landscape")
                if isinstance(record, dict):
                    landscape_format.normalize_record(record)
            elif which == 5:
                content = metadata.parse_content(raw)
                layers.names(content)
                layers.decode(content, np.frombuffer(raw[:len(raw) // 4 * 4], dtype=np.float32))
            elif which == 6:
                values = np.frombuffer(raw[:len(raw) // 8 * 8], dtype=np.float64)
                interval.table(np.arange(len(values) // 5, dtype=np.int64), [values[i * 5:i * 5 + 5]
                                                                            for i in range(len(values) // 5)])
            else:
                convert._check_state(metadata.loads_json(raw, "the conversion state"))
        except (ValueError, TypeError):   # what the readers catch: ContentError and refused shapes
            pass

    seeds = [b"\x00" + json.dumps({"version": 1, "kind": "layers", "layers": ["a", "b"]}).encode(),
             b"\x01" + json.dumps({"collect_freq": 1, "hparams": {"lr": 0.1}}).encode(),
             b"\x02" + json.dumps(metadata.health_event("nonfinite", "error", 3)).encode(),
             b"\x03" + json.dumps(metadata.run_end("finished", 3, 1.0)).encode(),
             b"\x04" + json.dumps({"landscape": {"x": [0, 1], "y": [0, 1], "z": [[1, 2], [3, 4]]}}).encode(),
             b"\x07" + json.dumps({"version": 2, "files": {"a_MS": {"offset": 3}}}).encode()]
    return target, seeds


# -- engines --------------------------------------------------------------------------------------------------------
def run_atheris_child(name, runs, max_seconds, rss_mb, corpus):
    """In the child process: atheris over target ``name``."""
    import atheris

    with atheris.instrument_imports(include=["tb_plugin_mindspore"]):
        target, _ = make_target(name)

    def entry(data):
        target(bytes(data))

    argv = [sys.argv[0], "-runs=%d" % runs, "-max_total_time=%d" % max_seconds, "-rss_limit_mb=%d" % rss_mb,
            "-max_len=4096", "-print_final_stats=1", "-timeout=%d" % TIMEOUT_SECONDS,
            "-artifact_prefix=%s/" % os.path.dirname(corpus.rstrip("/")), corpus]
    atheris.Setup(argv, entry)
    atheris.Fuzz()


def fuzz_atheris(name, runs, max_seconds, rss_mb, keep=None):
    """One atheris run of target ``name``; with ``keep`` (a folder) its corpus is ``keep/<name>/corpus``, kept and
    grown from one run to the next, so that several runs are one longer fuzzing of the target."""
    if keep:
        work = os.path.join(keep, name)
        os.makedirs(os.path.join(work, "corpus"), exist_ok=True)
    else:
        work = tempfile.mkdtemp(prefix="tbms-fuzz-%s-" % name)    # the corpus, and the input of an escape if any
    corpus = os.path.join(work, "corpus")
    os.makedirs(corpus, exist_ok=True)
    _, seeds = make_target(name)
    for i, seed in enumerate(seeds):
        with open(os.path.join(corpus, "seed%d" % i), "wb") as f:
            f.write(seed)
    t0 = time.time()
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", name, "--runs", str(runs),
                           "--max-seconds", str(max_seconds), "--rss-mb", str(rss_mb), "--corpus", corpus],
                          capture_output=True, text=True)
    wall = time.time() - t0
    text = proc.stderr
    done = re.findall(r"Done (\d+) runs in (\d+) second", text)
    execs = int(done[-1][0]) if done else max([int(x) for x in re.findall(
        r"stat::number_of_executed_units:\s+(\d+)", text)] or [0])
    peak = re.findall(r"stat::peak_rss_mb:\s+(\d+)", text)
    cov = re.findall(r"cov: (\d+)", text)
    escaped = proc.returncode != 0
    unreproduced = escaped and _timeout_not_reproduced(name, text)
    if unreproduced:
        escaped = False
    if not escaped and not keep:
        shutil.rmtree(work, ignore_errors=True)
    return {"target": name, "engine": "atheris", "executions": execs, "seconds": round(wall, 1),
            "exec_per_s": round(execs / wall) if wall else None, "escapes": int(escaped),
            "timeouts_not_reproduced": int(bool(unreproduced)), "note": unreproduced or "",
            "peak_rss_mb": int(peak[-1]) if peak else None, "coverage_edges": int(cov[-1]) if cov else None,
            "detail": (text[-3000:] + "\n(input and corpus kept in %s)" % work) if escaped else (unreproduced or "")}


def _timeout_not_reproduced(name, text):
    """When libFuzzer ended the run on a timeout (an input over ``-timeout`` seconds of wall time), the input run
    again here: a reader that really hangs is an escape, but a machine that was paused or busy (libFuzzer's clock is
    the wall clock) is not. Returns what was found when the input ran through in time without an exception, else
    None."""
    if "libFuzzer: timeout" not in text:
        return None
    written = re.findall(r"Test unit written to (\S+)", text)
    if not written or not os.path.exists(written[-1]):
        return None
    with open(written[-1], "rb") as f:
        data = f.read()
    target, _ = make_target(name)
    start = time.perf_counter()
    try:
        target(data)
    except Exception:
        return None
    took = time.perf_counter() - start
    if took >= TIMEOUT_SECONDS / 10.0:
        return None
    return ("libFuzzer's timeout not reproduced: %s (%d bytes) runs through in %.1f ms, no exception (its clock is "
            "the wall clock: the process was paused or the machine busy)" % (written[-1], len(data), took * 1000))


def fuzz_hypothesis(name, runs, max_seconds, rss_mb):
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    target, seeds = make_target(name)
    count = {"n": 0}
    deadline = time.time() + max_seconds

    @settings(max_examples=runs, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.one_of(st.binary(max_size=4096), st.sampled_from(seeds).flatmap(
        lambda s: st.binary(max_size=64).map(lambda tail: s[:len(tail) * 7 % (len(s) + 1)] + tail))))
    def run(data):
        if time.time() > deadline:
            return
        count["n"] += 1
        target(data)

    t0 = time.time()
    escaped, detail = 0, ""
    try:
        run()
    except Exception as e:   # the first escape ends the run; Hypothesis has shrunk it
        escaped, detail = 1, "%s: %s" % (type(e).__name__, e)
    wall = time.time() - t0
    return {"target": name, "engine": "hypothesis", "executions": count["n"], "seconds": round(wall, 1),
            "exec_per_s": round(count["n"] / wall) if wall else None, "escapes": escaped,
            "peak_rss_mb": _peak_rss_mb(), "coverage_edges": None, "detail": detail}


def _peak_rss_mb():
    """This process's own peak resident memory. Not ``ru_maxrss``: Linux carries it over ``exec``, so a process
    started by a large parent (a pytest worker of 1 GB) reports the parent's peak as its own."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def torn(samples):
    sys.path.insert(0, os.path.join(ROOT, "tests", "reliability"))
    sys.path.insert(0, os.path.join(ROOT, "tests", "cluster"))
    import pathlib

    import test_torn_writes

    rows = []
    for kind in sorted(test_torn_writes.KINDS):
        with tempfile.TemporaryDirectory() as tmp:
            t0 = time.time()
            cuts = test_torn_writes.torn_matrix(pathlib.Path(tmp), kind, last_records=3, samples=samples, seed=7)
            rows.append({"kind": kind, "records": test_torn_writes.RECORDS, "cuts": cuts, "exceptions": 0,
                         "seconds": round(time.time() - t0, 1)})
            print("%-20s %6d cuts, every complete record recovered, 0 exceptions (%.0f s)"
                  % (kind, cuts, rows[-1]["seconds"]), flush=True)
    print(json.dumps({"bench": "torn_writes", "rows": rows}))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--targets", default="all")
    p.add_argument("--runs", type=int, default=10 ** 7)
    p.add_argument("--max-seconds", type=int, default=3600)
    p.add_argument("--engine", choices=("auto", "atheris", "hypothesis"), default="auto")
    p.add_argument("--rss-mb", type=int, default=1024)
    p.add_argument("--torn", type=int, default=None, metavar="SAMPLES")
    p.add_argument("--keep", default=None, metavar="DIR",
                   help="keep each target's corpus and a ledger of runs in DIR: --runs then counts over every run "
                        "kept there (a long fuzzing done in several sittings)")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--corpus", default=None, help=argparse.SUPPRESS)
    args, _ = p.parse_known_args()
    if args.child:
        run_atheris_child(args.child, args.runs, args.max_seconds, args.rss_mb, args.corpus)
        return
    if args.torn is not None:
        torn(args.torn)
        return
    engine = args.engine
    if engine == "auto":
        try:
            import atheris  # noqa: F401

            engine = "atheris"
        except ImportError:
            engine = "hypothesis"
    names = TARGETS if args.targets == "all" else [t for t in args.targets.split(",") if t]
    if args.keep and engine != "atheris":
        p.error("--keep needs atheris (pip install atheris)")
    rows = []
    for name in names:
        runs = args.runs
        if args.keep:       # what the target still lacks of --runs over every run kept in the ledger
            runs -= ledger_total(args.keep, name)["executions"]
            if runs <= 0:
                continue
        if engine == "atheris":
            row = fuzz_atheris(name, runs, args.max_seconds, args.rss_mb, keep=args.keep)
        else:
            row = fuzz_hypothesis(name, runs, args.max_seconds, args.rss_mb)
        rows.append(row)
        print("%-10s %-10s %12d executions %8.0f s %8s exec/s  escapes %d  peak RSS %s MB  edges %s" % (
            name, row["engine"], row["executions"], row["seconds"], row["exec_per_s"], row["escapes"],
            row["peak_rss_mb"], row["coverage_edges"]), flush=True)
        if row["escapes"]:
            print(row["detail"], file=sys.stderr)
        elif row.get("note"):
            print(row["note"], file=sys.stderr)
        if args.keep:
            ledger_add(args.keep, row)
    out = {"bench": "fuzz", "load": round(os.getloadavg()[0], 1),
           "rows": [{k: v for k, v in r.items() if k != "detail"} for r in rows]}
    if args.keep:
        out["kept"] = {name: ledger_total(args.keep, name) for name in names}
        for name, total in out["kept"].items():
            print("%-10s in all (%d runs kept in %s): %d executions, %.0f s, %d escapes" % (
                name, total["runs"], args.keep, total["executions"], total["seconds"], total["escapes"]))
    print(json.dumps(out))
    sys.exit(1 if any(r["escapes"] for r in rows) else 0)


# -- a fuzzing kept over several runs --------------------------------------------------------------------------------
LEDGER = "ledger.jsonl"


def ledger_add(keep, row):
    """Appends one run's row (``keep/ledger.jsonl``, one JSON object a line, with the time it ended)."""
    path = os.path.join(keep, LEDGER)
    cut = False
    if os.path.exists(path) and os.path.getsize(path):
        with open(path, "rb") as f:
            f.seek(-1, os.SEEK_END)
            cut = f.read(1) != b"\n"         # a line a crash cut: the row starts on a line of its own
    with open(path, "a") as f:
        f.write(("\n" if cut else "") + json.dumps(dict({k: v for k, v in row.items() if k != "detail"}, ended=time.time())) + "\n")


def ledger_total(keep, name):
    """``{"runs", "executions", "seconds", "escapes"}`` of target ``name`` over the runs in the ledger."""
    total = {"runs": 0, "executions": 0, "seconds": 0.0, "escapes": 0}
    path = os.path.join(keep, LEDGER)
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                try:
                    row = json.loads(line)
                except ValueError:      # a line cut by a crash
                    continue
                if row.get("target") == name:
                    total["runs"] += 1
                    total["executions"] += int(row.get("executions") or 0)
                    total["seconds"] += float(row.get("seconds") or 0)
                    total["escapes"] += int(row.get("escapes") or 0)
    return total


if __name__ == "__main__":
    main()
