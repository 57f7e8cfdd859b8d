"""Remote logdirs: bytes and requests fetched per poll, and time per poll, from an S3-protocol store.

A real S3-protocol server (moto's server mode) on 127.0.0.1 holds one run with a TensorBoard event file and one
MindSpore ``*_MS`` file, each growing by ``--step-records`` records between polls (the writer's re-upload of the live
part, sent straight to the server). Readers talk to the server through a counting proxy, so every byte and request
a reader causes is counted the same way:

* ``stock_tb``: TensorBoard's own loader as ``tensorboard --logdir s3://...`` runs it (``EventMultiplexer``
  ``Reload`` through ``tensorboard.compat.tensorflow_stub`` gfile's boto3 S3 reader): the event file.
* ``ms_reader``: this plugin's ``*_MS`` reader (``reading.ms_logdir.MsLogdir.reload`` through ``reading/fs.py``).
* ``headers``: this plugin's record-header scan of the event files (``status`` route, ``event_headers``).

The first poll reads everything; the table reports the later polls (median), new bytes per file per poll, and the
poll where nothing changed. Usage: ``python bench/remote.py [--polls 10] [--records 20000] [--step-records 500]``.
Prints a table and, as the last line, one JSON object.
"""

import argparse
import http.client
import http.server
import json
import logging
import os
import socket
import socketserver
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CountingProxy:
    """An HTTP proxy in front of the S3 server that counts requests, response body bytes (``bytes``: what readers
    fetch) and request body bytes (``sent``: what writers upload)."""

    def __init__(self, upstream_port):
        self.requests = 0
        self.bytes = 0
        self.sent = 0
        lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def _forward(self):
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                conn = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
                conn.request(self.command, self.path, body=body, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                with lock:
                    proxy.requests += 1
                    proxy.bytes += len(data)
                    proxy.sent += len(body or b"")
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data) if self.command != "HEAD" else
                                                       resp.getheader("Content-Length") or 0))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(data)
                conn.close()

            do_GET = do_PUT = do_POST = do_HEAD = do_DELETE = _forward

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

        self.port = _free_port()
        self.server = Server(("127.0.0.1", self.port), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def take(self):
        out = (self.requests, self.bytes)
        self.requests = self.bytes = self.sent = 0
        return out


def _event_records(start, n):
    from tensorboard.compat.proto import event_pb2, summary_pb2

    from tb_plugin_mindspore.io import records

    out = []
    for step in range(start, start + n):
        values = [summary_pb2.Summary.Value(tag="core/loss", simple_value=1.0 / step),
                  summary_pb2.Summary.Value(tag="core/grad_norm", simple_value=0.5)]
        event = event_pb2.Event(wall_time=1.7e9 + step, step=step, summary=summary_pb2.Summary(value=values))
        out.append(records.frame(event.SerializeToString()))
    return b"".join(out)


def _ms_records(start, n):
    from tb_plugin_mindspore.io import records
    from tb_plugin_mindspore.io import ms_proto

    out = []
    for step in range(start, start + n):
        event = ms_proto.Event(wall_time=1.7e9 + step, step=step)
        for tag, value in ((b"loss", 1.0 / step), (b"lr", 0.01)):
            v = event.summary.value.add()
            v.tag = tag
            v.scalar_value = value
        out.append(records.frame(event.SerializeToString()))
    return b"".join(out)


def _header_event():
    from tensorboard.compat.proto import event_pb2

    from tb_plugin_mindspore.io import records

    return records.frame(event_pb2.Event(wall_time=1.7e9, file_version="brain.Event:2").SerializeToString())


def bench_writers(proxy, flushes, per_flush):
    """Uploads of one run written to s3:// with a flush every ``per_flush`` scalars: TensorBoard's own
    ``EventFileWriter`` (its S3 file cannot append: each flush writes the whole file again) against this plugin's
    ``SummaryWriter`` (local staging, parts). Returns ``{name: {"sent", "requests", "file_bytes", "ms"}}``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    from tb_plugin_mindspore import metadata
    from tb_plugin_mindspore.writing.writer import SummaryWriter

    out = {}
    for name in ("stock_tb_writer", "summary_writer"):
        proxy.take()
        start = time.perf_counter()
        if name == "stock_tb_writer":
            w = EventFileWriter("s3://bench/write/stock", flush_secs=10 ** 6)
            for i in range(flushes):
                for step in range(i * per_flush, (i + 1) * per_flush):
                    value = summary_pb2.Summary.Value(tag=metadata.LOSS, simple_value=1.0 / (step + 1))
                    w.add_event(event_pb2.Event(step=step, wall_time=1.7e9 + step,
                                                summary=summary_pb2.Summary(value=[value])))
                w.flush()
            w.close()
        else:
            w = SummaryWriter("s3://bench/write/ours", upload_secs=10 ** 6)
            for i in range(flushes):
                for step in range(i * per_flush, (i + 1) * per_flush):
                    w.scalar(metadata.LOSS, 1.0 / (step + 1), step, wall_time=1.7e9 + step)
                w.flush()
            w.close()
        elapsed = time.perf_counter() - start
        requests, sent = proxy.requests, proxy.sent
        prefix = "write/stock/" if name == "stock_tb_writer" else "write/ours/"
        out[name] = {"sent": sent, "requests": requests, "ms": round(elapsed * 1000, 1)}
        out[name]["file_bytes"] = _stored_bytes(prefix)
    return out


_stored_bytes = None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--polls", type=int, default=10)
    ap.add_argument("--records", type=int, default=20000, help="records in each file before the first poll")
    ap.add_argument("--step-records", type=int, default=500, help="records added to each file between polls")
    ap.add_argument("--write-flushes", type=int, default=200, help="flushes of the writers compared")
    ap.add_argument("--per-flush", type=int, default=50, help="scalars written between two flushes")
    args = ap.parse_args(argv)

    import boto3
    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.WARNING)     # the server logs every request otherwise

    moto_port = _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=moto_port, verbose=False)
    server.start()
    proxy = CountingProxy(moto_port)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                       "AWS_DEFAULT_REGION": "us-east-1", "S3_ENDPOINT": "http://127.0.0.1:%d" % proxy.port})
    direct = boto3.client("s3", endpoint_url="http://127.0.0.1:%d" % moto_port, region_name="us-east-1")
    direct.create_bucket(Bucket="bench")
    ev_key, ms_key = "logs/run/events.out.tfevents.1.bench", "logs/run/x.out.events.summary.1.0.bench_MS"
    ev_data = _header_event() + _event_records(1, args.records)
    ms_data = _ms_records(1, args.records)
    next_step = args.records + 1

    from tensorboard.backend.event_processing import plugin_event_multiplexer

    from tb_plugin_mindspore.io import event_headers, fs
    from tb_plugin_mindspore.sources.ms_logdir import MsLogdir

    url = "s3://bench/logs"
    mux = plugin_event_multiplexer.EventMultiplexer(tensor_size_guidance={"scalars": 1000})
    mux.AddRunsFromDirectory(url)
    ms = MsLogdir(url)
    scanner = event_headers.HeaderScanner(url, budget_s=60)

    def poll_all():
        row = {}
        for name, fn in (("stock_tb", lambda: (mux.AddRunsFromDirectory(url), mux.Reload())),   # TB's reload
                         ("ms_reader", lambda: [None for _ in iter(lambda: ms.reload(64 << 20).pending, False)]),
                         ("headers", lambda: scanner.findings([url + "/run/" + ev_key.rsplit("/", 1)[1]]))):
            proxy.take()
            time.sleep(fs.LISTING_SECS)          # no listing kept from the previous reader
            start = time.perf_counter()
            fn()
            elapsed = time.perf_counter() - start
            requests, nbytes = proxy.take()
            row[name] = {"requests": requests, "bytes": nbytes, "ms": round(elapsed * 1000, 1)}
        return row

    rows = []
    for i in range(args.polls + 2):
        if i <= args.polls:
            if i > 0:
                ev_data += _event_records(next_step, args.step_records)
                ms_data += _ms_records(next_step, args.step_records)
                next_step += args.step_records
            direct.put_object(Bucket="bench", Key=ev_key, Body=ev_data)
            direct.put_object(Bucket="bench", Key=ms_key, Body=ms_data)
        rows.append(poll_all())
    global _stored_bytes
    _stored_bytes = lambda prefix: sum(o["Size"] for o in direct.list_objects_v2(  # noqa: E731
        Bucket="bench", Prefix=prefix).get("Contents", []))
    writers = bench_writers(proxy, args.write_flushes, args.per_flush)
    server.stop()

    steady = rows[1:args.polls + 1]
    idle = rows[-1]
    ms_new = len(_ms_records(next_step, args.step_records))
    ev_new = len(_event_records(next_step, args.step_records))
    summary = {"first_poll": rows[0], "idle_poll": idle, "records": args.records, "step_records": args.step_records,
               "event_file_bytes": len(ev_data), "ms_file_bytes": len(ms_data), "new_event_bytes": ev_new,
               "new_ms_bytes": ms_new, "polls": args.polls}
    print("S3-protocol server (moto) via a counting proxy; %d polls, each after %d new records per file "
          "(%d new bytes in the event file, %d in the *_MS file); files at the end: %d / %d bytes"
          % (args.polls, args.step_records, ev_new, ms_new, len(ev_data), len(ms_data)))
    print("%-10s %12s %12s %14s %12s %14s %12s" % ("reader", "first bytes", "first ms", "bytes/poll", "req/poll",
                                                  "ms/poll", "idle bytes"))
    for name in ("stock_tb", "ms_reader", "headers"):
        med = {k: statistics.median(r[name][k] for r in steady) for k in ("bytes", "requests", "ms")}
        summary[name] = dict(med, first_bytes=rows[0][name]["bytes"], first_ms=rows[0][name]["ms"],
                             idle_bytes=idle[name]["bytes"], idle_requests=idle[name]["requests"])
        print("%-10s %12d %12.1f %14d %12d %14.1f %12d" % (name, rows[0][name]["bytes"], rows[0][name]["ms"],
                                                         med["bytes"], med["requests"], med["ms"],
                                                         idle[name]["bytes"]))
    summary["writers"] = writers
    print("\nWriting one run to s3://: %d flushes of %d scalars each" % (args.write_flushes, args.per_flush))
    print("%-16s %14s %14s %12s %12s %10s" % ("writer", "run bytes", "bytes sent", "sent/run", "requests", "ms"))
    for name, row in writers.items():
        print("%-16s %14d %14d %12.1f %12d %10.1f" % (name, row["file_bytes"], row["sent"],
                                                      row["sent"] / max(row["file_bytes"], 1), row["requests"],
                                                      row["ms"]))
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
