"""Makes real MindSpore summary files for the reader tests (run in a subprocess: ``python ms_make_fixtures.py OUT``).

Writes one run folder per producer under OUT and ``OUT/expected.json`` with the values that were fed in (the ground
truth the tests compare against), ``OUT/reference.json``: every summary and lineage file decoded with MindSpore's
own generated protobuf classes, and ``OUT/descriptors.json``: MindSpore's message layouts, so the tests can check
our message definitions field by field without importing MindSpore themselves.

Runs:
  collector/   SummaryCollector in Model.train (loss/auto, <param>/auto histograms, graph, lineage file)
  record/      SummaryRecord.add_value with every value type, in PyNative mode
  scalars/     SummaryRecord with scalars only (40 steps, one step with an extra tag)
  ops/         summary ops (ScalarSummary, HistogramSummary, TensorSummary, ImageSummary) in GRAPH_MODE
  landscape/   SummaryCollector(collect_landscape=...) + SummaryLandscape
The "layouts" set (``python ms_make_fixtures.py OUT rerun,resume,kinds,edge,evalonly,pipeline``), the layouts that
read wrong once:
  rerun/       one script run twice into the same folder (two _MS files, steps 1-10 both times)
  resume/      a run resumed from step 5 (file 1: steps 1-10, file 2: steps 6-15)
  kinds/       summary ops giving one name several kinds (ImageSummary + TensorSummary 'x', Scalar + Histogram 'y')
  edge/        histograms of an all-ones tensor and of tensors with NaN / +-Inf values
  evalonly/    SummaryCollector in Model.eval: a lineage file only
  pipeline/    SummaryCollector on an ImageFolderDataset pipeline with a sampler and map operations
Everything is tiny: a few parameters, a few steps (about 3 s in all on two cores). ``python ms_make_fixtures.py OUT
live GO_FILE`` instead writes OUT/live/ in two phases (steps 1-3, then 4-6 once GO_FILE exists) for the tailing test.
"""

import glob
import json
import os
import sys
import time

import numpy as np


def _net(nn, in_dim=4, out_dim=3):
    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.fc = nn.Dense(in_dim, out_dim)

        def construct(self, x):
            return self.fc(x)

    return Net()


def _dataset(ds, n=16, batch=4, seed=0):
    rng = np.random.RandomState(seed)
    x = rng.randn(n, 4).astype(np.float32)
    y = rng.randint(0, 3, size=n).astype(np.int32)
    return ds.NumpySlicesDataset({"x": x, "y": y}, shuffle=False).batch(batch)


def make_collector(out, expected):
    import mindspore as ms
    from mindspore import nn
    import mindspore.dataset as ds
    from mindspore.train import Model, Callback, SummaryCollector

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(1)
    run = os.path.join(out, "collector")
    net = _net(nn)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    opt = nn.Momentum(net.trainable_params(), 0.05, 0.9)
    model = Model(net, loss_fn, opt)
    seen = {"loss": [], "params": {}}

    class Watch(Callback):
        def on_train_step_end(self, run_context):
            cb = run_context.original_args()
            step = int(cb.cur_step_num)
            seen["loss"].append([step, float(np.asarray(cb.net_outputs.asnumpy()).reshape(-1)[0])])
            for p in net.trainable_params():
                seen["params"].setdefault(p.name, []).append([step, p.asnumpy().astype(np.float64).ravel().tolist()])

    custom = {"note": "fixture", "seed": 7}
    collector = SummaryCollector(
        run, collect_freq=1,
        collect_specified_data={"collect_input_data": False, "histogram_regular": ".*"},
        custom_lineage_data=custom,
        keep_default_action=True,
    )
    dataset = _dataset(ds)
    model.train(2, dataset, callbacks=[collector, Watch()], dataset_sink_mode=False)
    expected["collector"] = seen
    # What SummaryCollector was given, for its lineage file.
    seen["lineage"] = {"learning_rate": 0.05, "epoch": 2, "batch_size": dataset.get_batch_size(),
                       "optimizer": type(opt).__name__, "loss_function": type(loss_fn).__name__,
                       "network": type(net).__name__, "custom": custom,
                       "samples": dataset.get_dataset_size() * dataset.get_batch_size()}


def make_record(out, expected):
    import mindspore as ms
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.PYNATIVE_MODE)
    run = os.path.join(out, "record")
    rng = np.random.RandomState(3)
    exp = {"scalar": [], "tensor": [], "histogram": [], "image": []}
    with SummaryRecord(run, num_process=1) as rec:
        for step in range(1, 6):
            s = float(np.float32(1.0 / step))
            t = rng.randn(2, 3).astype(np.float32)
            h = rng.randn(50).astype(np.float32)
            if step == 3:
                h[0] = np.nan
                h[1] = np.inf
                h[2] = -np.inf
            img = (rng.rand(1, 3, 4, 5)).astype(np.float32)  # NCHW in [0, 1]
            rec.add_value("scalar", "train/lr", Tensor(np.float32(s)))
            rec.add_value("scalar", "acc", Tensor(np.float32(0.5 + step / 100)))
            rec.add_value("tensor", "weights_t", Tensor(t))
            rec.add_value("histogram", "dist", Tensor(h))
            rec.add_value("image", "pic", Tensor(img))
            rec.record(step)
            exp["scalar"].append(["train/lr", step, s])
            exp["scalar"].append(["acc", step, float(np.float32(0.5 + step / 100))])
            exp["tensor"].append(["weights_t", step, [2, 3], t.astype(np.float64).ravel().tolist()])
            exp["histogram"].append(["dist", step, h.astype(np.float64).tolist()])
            exp["image"].append(["pic", step, 4, 5, 3])
    expected["record"] = exp
    # Scalars only, the same tags every step: the layout the reader's vectorized path takes.
    scalars = []
    with SummaryRecord(os.path.join(out, "scalars"), num_process=1) as rec:
        for step in range(1, 41):
            for tag, value in (("loss", 2.0 / step), ("lr", 0.1 * 0.95 ** step), ("grad_norm", 1.0 + step % 7)):
                rec.add_value("scalar", tag, Tensor(np.float32(value)))
                scalars.append([tag, step, float(np.float32(value))])
            if step == 20:
                rec.add_value("scalar", "extra_metric_only_once", Tensor(np.float32(7.0)))
                scalars.append(["extra_metric_only_once", step, 7.0])
            rec.record(step)
    expected["scalars"] = scalars


def make_ops(out, expected):
    import mindspore as ms
    from mindspore import nn, ops, Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.GRAPH_MODE)
    run = os.path.join(out, "ops")

    class OpsNet(nn.Cell):
        def __init__(self):
            super().__init__()
            self.scalar = ops.ScalarSummary()
            self.hist = ops.HistogramSummary()
            self.tensor = ops.TensorSummary()
            self.image = ops.ImageSummary()

        def construct(self, x, img):
            s = x.sum()
            self.scalar("xsum", s)
            self.hist("xhist", x)
            self.tensor("xtensor", x)
            self.image("ximage", img)
            return s

    net = OpsNet()
    exp = []
    rng = np.random.RandomState(5)
    with SummaryRecord(run, network=net, num_process=1) as rec:
        for step in range(1, 4):
            x = rng.randn(3, 4).astype(np.float32)
            img = rng.rand(1, 1, 6, 7).astype(np.float32)
            s = net(Tensor(x), Tensor(img))
            rec.record(step)
            exp.append([step, float(s.asnumpy()), x.astype(np.float64).ravel().tolist()])
    expected["ops"] = exp


def make_landscape(out, expected):
    import mindspore as ms
    from mindspore import nn
    import mindspore.dataset as ds
    from mindspore.train import Model, Loss, SummaryCollector, SummaryLandscape

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(2)
    run = os.path.join(out, "landscape")
    net = _net(nn)
    loss_fn = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
    model = Model(net, loss_fn, nn.Momentum(net.trainable_params(), 0.05, 0.9))
    spec = {"landscape_size": 3, "unit": "epoch", "create_landscape": {"train": True, "result": True},
            "num_samples": 8, "intervals": [[1, 2, 3]]}
    collector = SummaryCollector(run, collect_freq=1, collect_specified_data={"collect_landscape": spec,
                                                                             "collect_input_data": False})
    model.train(3, _dataset(ds, n=8), callbacks=[collector], dataset_sink_mode=False)

    def callback_fn():
        n = _net(nn)
        lf = nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean")
        metrics = {"Loss": Loss()}
        return Model(n, lf, metrics=metrics), n, _dataset(ds, n=8), metrics

    # MindSpore names a summary file by the second it was opened in: a second SummaryRecord on the same folder
    # within the same second would truncate the collector's file.
    time.sleep(1.1)
    SummaryLandscape(run).gen_landscapes_with_multi_process(callback_fn, collect_landscape=spec, device_ids=[0])
    expected["landscape"] = {"size": 3}


def _scalar_run(rec_cls, Tensor, path, steps, loss, with_hist=True, extra=None):
    """One SummaryRecord session: ``loss(step)`` as scalar ``loss`` and a histogram ``w`` per step."""
    exp = {"loss": [], "w": [], "extra": []}
    with rec_cls(path, num_process=1) as rec:
        for step in steps:
            value = float(np.float32(loss(step)))
            rec.add_value("scalar", "loss", Tensor(np.float32(value)))
            exp["loss"].append([step, value])
            if with_hist:
                w = np.full(6, value, dtype=np.float32) + np.arange(6, dtype=np.float32)
                rec.add_value("histogram", "w", Tensor(w))
                exp["w"].append([step, float(w.min()), float(w.max())])
            if extra:
                rec.add_value("scalar", extra, Tensor(np.float32(step)))
                exp["extra"].append([step, float(step)])
            rec.record(step)
    return exp


def make_rerun(out, expected):
    """The same script run twice into one folder: the second run (steps 1-10 again) replaces the first."""
    import mindspore as ms
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.PYNATIVE_MODE)
    run = os.path.join(out, "rerun")
    first = _scalar_run(SummaryRecord, Tensor, run, range(1, 11), lambda s: 10.0 + s)
    time.sleep(1.1)  # MindSpore names files by the second: a new second, a new file
    second = _scalar_run(SummaryRecord, Tensor, run, range(1, 11), lambda s: 1.0 / s)
    expected["rerun"] = {"first": first, "second": second}


def make_resume(out, expected):
    """A run resumed from a checkpoint at step 5: the second file starts at step 6; ``only_first`` is a tag the
    resumed run no longer writes (kept whole)."""
    import mindspore as ms
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.PYNATIVE_MODE)
    run = os.path.join(out, "resume")
    first = _scalar_run(SummaryRecord, Tensor, run, range(1, 11), lambda s: 5.0 - 0.1 * s, extra="only_first")
    time.sleep(1.1)
    second = _scalar_run(SummaryRecord, Tensor, run, range(6, 16), lambda s: 2.0 - 0.1 * s)
    expected["resume"] = {"first": first, "second": second}


def make_kinds(out, expected):
    """Summary ops that give one name several kinds, as MindSpore's own summary tests do."""
    import mindspore as ms
    from mindspore import nn, ops, Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.GRAPH_MODE)

    class KindsNet(nn.Cell):
        def __init__(self):
            super().__init__()
            self.image = ops.ImageSummary()
            self.tensor = ops.TensorSummary()
            self.scalar = ops.ScalarSummary()
            self.hist = ops.HistogramSummary()

        def construct(self, img, x):
            self.image("x", img)
            self.tensor("x", x)
            s = x.sum()
            self.scalar("y", s)
            self.hist("y", x)
            return s

    net = KindsNet()
    rng = np.random.RandomState(11)
    exp = []
    with SummaryRecord(os.path.join(out, "kinds"), network=net, num_process=1) as rec:
        for step in range(1, 4):
            img = rng.rand(1, 3, 4, 5).astype(np.float32)
            x = rng.randn(2, 3).astype(np.float32)
            s = net(Tensor(img), Tensor(x))
            rec.record(step)
            exp.append([step, float(s.asnumpy()), x.astype(np.float64).ravel().tolist()])
    expected["kinds"] = exp


def make_edge(out, expected):
    """Histograms MindSpore bins oddly: a constant tensor, and tensors with NaN and infinite values."""
    import mindspore as ms
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.RandomState(13)
    exp = {}
    with SummaryRecord(os.path.join(out, "edge"), num_process=1) as rec:
        for step in range(1, 4):
            ones = np.ones(216, dtype=np.float32)
            nanw = rng.randn(216).astype(np.float32)
            nanw[:135] = np.nan
            infw = rng.randn(20).astype(np.float32)
            infw[:3] = np.inf
            infw[3:5] = -np.inf
            for tag, values in (("ones", ones), ("nanw", nanw), ("infw", infw)):
                rec.add_value("histogram", tag, Tensor(values))
                finite = values[np.isfinite(values)].astype(np.float64)
                exp.setdefault(tag, []).append({
                    "step": step, "count": int(values.size), "nan": int(np.isnan(values).sum()),
                    "pos_inf": int(np.isposinf(values).sum()), "neg_inf": int(np.isneginf(values).sum()),
                    "min": float(finite.min()), "max": float(finite.max()),
                    "quantiles": np.quantile(finite, [0, 0.5, 1]).tolist()})
            rec.record(step)
    expected["edge"] = exp


def make_evalonly(out, expected):
    """SummaryCollector given to Model.eval only: MindSpore writes a lineage file and no _MS file."""
    import mindspore as ms
    from mindspore import nn
    import mindspore.dataset as ds
    from mindspore.train import Model, SummaryCollector, Accuracy

    ms.set_context(mode=ms.PYNATIVE_MODE)
    ms.set_seed(3)
    net = _net(nn)
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"), metrics={"acc": Accuracy()})
    result = model.eval(_dataset(ds), callbacks=[SummaryCollector(os.path.join(out, "evalonly"))],
                        dataset_sink_mode=False)
    expected["evalonly"] = {"acc": float(result["acc"]), "valid_dataset_size": 16}


def make_pipeline(out, expected):
    """SummaryCollector on an image pipeline with a sampler and map operations (the lineage's dataset graph)."""
    import mindspore as ms
    from mindspore import nn
    import mindspore.dataset as ds
    import mindspore.dataset.transforms as transforms
    import mindspore.dataset.vision as vision
    from mindspore.train import Model, SummaryCollector
    from PIL import Image

    ms.set_context(mode=ms.PYNATIVE_MODE)
    images = os.path.join(out, "_images")
    rng = np.random.RandomState(17)
    for cls in ("a", "b"):
        os.makedirs(os.path.join(images, cls), exist_ok=True)
        for i in range(4):
            Image.fromarray((rng.rand(2, 2, 3) * 255).astype(np.uint8)).save(os.path.join(images, cls, "%d.png" % i))

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.flat = nn.Flatten()
            self.fc = nn.Dense(12, 2)

        def construct(self, x):
            return self.fc(self.flat(x))

    data = ds.ImageFolderDataset(images, sampler=ds.RandomSampler(num_samples=8))
    data = data.map(operations=[vision.Decode(), vision.Rescale(1.0 / 255, 0.0), vision.HWC2CHW()],
                    input_columns=["image"])
    data = data.map(operations=[transforms.TypeCast(ms.int32)], input_columns=["label"]).batch(4)
    net = Net()
    model = Model(net, nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction="mean"),
                  nn.Momentum(net.trainable_params(), 0.05, 0.9))
    model.train(1, data, callbacks=[SummaryCollector(os.path.join(out, "pipeline"), collect_freq=1)],
                dataset_sink_mode=False)
    expected["pipeline"] = {"sampler": "RandomSampler", "num_samples": 8,
                            "operations": ["Decode", "Rescale", "TypeCast"]}


def reference(out):
    """Every file decoded with MindSpore's generated classes (the cross-check for our definitions), normalized."""
    import struct

    from mindspore.train import lineage_pb2, summary_pb2

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import ms_normalize

    ref = {}
    paths = sorted(glob.glob(os.path.join(out, "**", "*.out.events.summary.*"), recursive=True))
    for path in paths:
        cls = lineage_pb2.LineageEvent if path.endswith("_lineage") else summary_pb2.Event
        with open(path, "rb") as f:
            buf = f.read()
        events, off = [], 0
        while off + 12 <= len(buf):
            (n,) = struct.unpack("<Q", buf[off:off + 8])
            ev = cls()
            ev.ParseFromString(buf[off + 12:off + 12 + n])
            events.append([off, ms_normalize.event(ev)])
            off += 12 + n + 4
        ref[os.path.relpath(path, out)] = events
    return ref


def _repeated(field):
    if hasattr(field, "is_repeated"):
        return bool(field.is_repeated)
    return field.label == field.LABEL_REPEATED


def descriptors():
    """MindSpore's message layouts: {message name without package: {field: [number, type, repeated, type_name]}}."""
    from mindspore.train import anf_ir_pb2, lineage_pb2, summary_pb2

    layouts = {}

    def walk(desc, prefix):
        name = prefix + desc.name
        layouts[name] = {
            f.name: [f.number, f.type, _repeated(f), f.message_type.full_name if f.message_type else None]
            for f in desc.fields
        }
        for nested in desc.nested_types:
            walk(nested, name + ".")

    for module in (anf_ir_pb2, summary_pb2, lineage_pb2):
        for desc in module.DESCRIPTOR.message_types_by_name.values():
            walk(desc, "")
    return layouts


def live(out, go_file):
    """Writes steps 1-3 with a real SummaryRecord, flushes, waits for ``go_file``, then writes steps 4-6."""
    import mindspore as ms
    from mindspore import Tensor
    from mindspore.train import SummaryRecord

    ms.set_context(mode=ms.PYNATIVE_MODE)
    run = os.path.join(out, "live")
    with SummaryRecord(run, num_process=1) as rec:
        for step in range(1, 7):
            rec.add_value("scalar", "live/loss", Tensor(np.float32(10.0 / step)))
            rec.record(step)
            if step == 3:
                rec.flush()
                with open(os.path.join(out, "phase1"), "w") as f:
                    f.write("ok")
                deadline = time.time() + 120
                while not os.path.exists(go_file) and time.time() < deadline:
                    time.sleep(0.05)


def main():
    out = sys.argv[1]
    which = sys.argv[2].split(",") if len(sys.argv) > 2 else ["collector", "record", "ops", "landscape"]
    os.makedirs(out, exist_ok=True)
    if which == ["live"]:
        live(out, sys.argv[3])
        return
    expected, timing = {}, {}
    for name in which:
        t0 = time.time()
        globals()["make_" + name](out, expected)
        timing[name] = time.time() - t0
    expected["timing"] = timing
    with open(os.path.join(out, "expected.json"), "w") as f:
        json.dump(expected, f)
    with open(os.path.join(out, "reference.json"), "w") as f:
        json.dump(reference(out), f)
    with open(os.path.join(out, "descriptors.json"), "w") as f:
        json.dump(descriptors(), f)


if __name__ == "__main__":
    main()
