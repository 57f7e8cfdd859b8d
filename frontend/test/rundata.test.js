// Unit tests of the pure modules of the "Run info" and "Images and tensors" sections (node --test test/).
import assert from "node:assert/strict";
import { test } from "node:test";

import { normalizeMedia, normalizeRunInfo } from "../src/api/runData.js";
import {
  datasetChain,
  formatNumber,
  formatValue,
  hparamRows,
  lineageSummary,
  msFileRows,
  multiIndex,
  runInfoBasics,
  tensorLayout,
  tensorStatsText,
} from "../src/views/runDataModel.js";
import { nonfiniteNote } from "../src/views/sections/distributions/histogramCard.js";
import { normalizeHistograms } from "../src/api/client.js";

test("values as text: float32 noise gone, integers whole, non-finite by name, objects as JSON", () => {
  assert.equal(formatValue(0.05000000074505806), "0.05");
  assert.equal(formatValue(16), "16");
  assert.equal(formatValue(12345678901), "12345678901");
  assert.equal(formatValue(1.5e-7), "1.5e-7");
  assert.equal(formatValue(true), "true");
  assert.equal(formatValue(null), "–");
  assert.equal(formatValue("NaN"), "NaN");
  assert.equal(formatValue("-Infinity"), "-Inf");
  assert.equal(formatValue("Momentum"), "Momentum");
  assert.equal(formatValue({ a: [1, 2] }), '{"a":[1,2]}');
  assert.equal(formatNumber(Infinity), "+Inf");
  assert.equal(formatNumber(-2.5), "-2.5");
});

test("hyperparameter rows are sorted by name and keep their source", () => {
  const info = normalizeRunInfo({
    run: "r",
    sources: ["run_info", "hparams"],
    hparams: { learning_rate: 0.05, batch_size: 4, "<b>x</b>": "<i>y</i>" },
    hparam_sources: { learning_rate: "run_info", batch_size: "lineage" },
    hparam_names: { learning_rate: ["lr", "learning_rate"], batch_size: ["batch_size"] },
  });
  const rows = hparamRows(info);
  assert.deepEqual(rows.map((r) => r.name), ["<b>x</b>", "batch_size", "learning_rate"]);
  assert.deepEqual(rows[2], { name: "learning_rate", value: 0.05, text: "0.05", source: "run_info", given: ["lr", "learning_rate"], from: "run info as lr, learning_rate" });
  assert.equal(rows[1].from, "MindSpore lineage"); // recorded under its canonical name: no "as"
  assert.equal(rows[0].text, "<i>y</i>"); // shown as text by the view, never parsed
  assert.equal(rows[0].source, "");
  assert.deepEqual(normalizeRunInfo(null), { run: "", sources: [], runInfo: null, hparams: {}, hparamSources: {}, hparamNames: {}, lineage: null, msFiles: [] });
  const mf = hparamRows(normalizeRunInfo({
    run: "rank_0",
    sources: ["mindformers_config"],
    hparams: { learning_rate: 0.0001 },
    hparam_sources: { learning_rate: "mindformers_config" },
    hparam_names: { learning_rate: ["lr_schedule.learning_rate"] },
  }));
  assert.equal(mf[0].from, "mindformers config as lr_schedule.learning_rate");
});

test("the lineage summary names network, loss, optimizer, dataset and user data", () => {
  const summary = lineageSummary({
    hparams: {
      network: "Net",
      loss_function: "SoftmaxCrossEntropyWithLogits",
      optimizer: "Momentum",
      learning_rate: 0.05000000074505806,
      epoch: 2,
      batch_size: 4,
      train_dataset_size: 16,
      "metric/accuracy": 0.75,
      note: "fixture",
    },
    user: { seed: 7, note: "fixture" },
    dataset_graph: { op_type: "Batch", children: [{ op_type: "Shuffle", children: [{ op_type: "GeneratorDataset", children: [] }] }] },
  });
  assert.deepEqual(summary.facts.slice(0, 4), [
    ["Network", "Net"],
    ["Loss function", "SoftmaxCrossEntropyWithLogits"],
    ["Optimizer", "Momentum"],
    ["Learning rate", "0.05"],
  ]);
  assert.deepEqual(summary.facts.slice(4), [["Epochs", "2"], ["Batch size", "4"], ["Train dataset size", "16"]]);
  assert.deepEqual(summary.metrics, [["accuracy", "0.75"]]);
  assert.deepEqual(summary.user, [["note", "fixture"], ["seed", "7"]]);
  assert.equal(summary.dataset, "Batch ← Shuffle ← GeneratorDataset");
  assert.equal(lineageSummary(null), null);
  assert.equal(datasetChain({ op_type: "Zip", children: [{ op_type: "A" }, { op_type: "B" }] }), "Zip ← (2 inputs)");
});

test("run info basics: version, mode, collect_freq, rank of rank_size, sink mode", () => {
  const rows = runInfoBasics({
    mindspore_version: "2.10.0",
    mode: "GRAPH_MODE",
    collect_freq: 4,
    rank: 1,
    rank_size: 2,
    dataset_sink_mode: false,
    batch_size: 32,
  });
  assert.deepEqual(rows, [
    ["MindSpore", "2.10.0"],
    ["Mode", "GRAPH_MODE"],
    ["collect_freq", "4"],
    ["Rank", "1 of 2"],
    ["Batch size", "32"],
    ["Sink mode", "off"],
  ]);
  assert.deepEqual(runInfoBasics({ source: "mindspore" }), [["Written by", "MindSpore (converted by tb-mindspore convert)"]]);
  assert.deepEqual(runInfoBasics(null), []);
});

test("tensor layout: a grid for small complete 1-D / 2-D tensors, an indexed list otherwise", () => {
  const grid = tensorLayout([2, 3], [1, "NaN", 3, 4, 5, 6], false);
  assert.equal(grid.kind, "grid");
  assert.deepEqual(grid.rows, [[1, "NaN", 3], [4, 5, 6]]);
  assert.deepEqual(tensorLayout([3], [1, 2, 3], false).rows, [[1, 2, 3]]);
  assert.deepEqual(tensorLayout([], [7], false).rows, [[7]]);
  const list = tensorLayout([2, 3, 4], [0, 1, 2, 3, 4], true);
  assert.equal(list.kind, "list");
  assert.deepEqual(list.rows[4], ["[0, 1, 0]", 4]);
  assert.equal(tensorLayout([2, 3], [1, 2, 3, 4], true).kind, "list"); // truncated: no grid
  assert.equal(tensorLayout([1, 40], new Array(40).fill(0), false).kind, "list"); // too wide
  assert.equal(multiIndex(23, [2, 3, 4]), "[1, 2, 3]");
  assert.equal(multiIndex(0, []), "[]");
});

test("tensor statistics line and media listing normalization", () => {
  const text = tensorStatsText({ shape: [2, 3], dtype: "float32", size: 6, min: -2.5, max: 4, mean: 0.8333333333, nan: 1, pos_inf: 1, neg_inf: 0 });
  assert.equal(text, "shape [2, 3] · float32 · 6 values · min -2.5 · max 4 · mean 0.8333333 · 1 NaN, 1 +Inf");
  assert.equal(tensorStatsText({ shape: [0], dtype: "float32", size: 0, min: null }), "shape [0] · float32 · 0 values");
  const media = normalizeMedia({ runs: { r: { images: [{ tag: "pic", count: "5", max_step: 5 }] } } });
  assert.deepEqual(media, { r: { images: [{ tag: "pic", display_name: "pic", count: 5, max_step: 5, source: "" }], tensors: [] } });
});

test("dataset pipeline: a Map's operations and a source's sampler", () => {
  const graph = {
    op_type: "Batch",
    children: [
      {
        op_type: "Map",
        operations: [{ name: "Decode", params: {} }, { name: "Rescale", params: { rescale: 0.0039 } }],
        children: [{ op_type: "ImageFolderDataset", sampler: { name: "RandomSampler", params: { num_samples: 8, replacement: false } } }],
      },
    ],
  };
  assert.equal(datasetChain(graph), "Batch ← Map(Decode, Rescale) ← ImageFolderDataset [RandomSampler(num_samples=8, replacement=false)]");
  assert.equal(datasetChain({ op_type: "Map", operations: Array.from({ length: 8 }, (_, i) => ({ name: `op${i}` })) }), "Map(op0, op1, op2, op3, op4, op5, +2)");
});

test("MindSpore files: listed only for several files or a superseded range", () => {
  assert.deepEqual(msFileRows([{ file: "r/a_MS", kind: "summary", steps: [1, 5], superseded: [] }]), []);
  assert.deepEqual(msFileRows(undefined), []);
  const rows = msFileRows([
    { file: "r/events.summary.100.0.h_MS", kind: "summary", created: 100, steps: [1, 10], superseded: [{ by: "r/events.summary.200.0.h_MS", from_step: 6, to_step: 10, points: 10, tags: ["loss", "w"] }] },
    { file: "r/events.summary.200.0.h_MS", kind: "summary", created: 200, steps: [6, 15], superseded: [] },
    { file: "r/events.summary.200.0.h_lineage", kind: "lineage", created: 200, steps: null, superseded: [] },
  ]);
  assert.equal(rows.length, 3);
  assert.equal(rows[0].superseded, "steps 6–10 replaced by events.summary.200.0.h_MS (10 points: loss, w)");
  assert.equal(rows[0].created, "1970-01-01 00:01:40");
  assert.equal(rows[1].steps, "6–15");
  assert.equal(rows[2].steps, "lineage");
});

test("run info answers keep the MindSpore file list", () => {
  const info = normalizeRunInfo({ run: "r", ms_files: [{ file: "r/x_MS", kind: "summary" }, null, 3] });
  assert.deepEqual(info.msFiles, [{ file: "r/x_MS", kind: "summary" }]);
  assert.deepEqual(normalizeRunInfo({ run: "r" }).msFiles, []);
});

test("histogram NaN/Inf note from MindSpore's counts", () => {
  assert.equal(nonfiniteNote([{ run: "a", data: { nonfinite: [], nonfinite_steps: 0 } }]), "");
  assert.equal(
    nonfiniteNote([{ run: "a", data: { nonfinite: [[1, 135, 0, 0], [3, 135, 2, 1]], nonfinite_steps: 3 } }]),
    "NaN/Inf values (not in the bands): a: 3 steps, at step 3 135 NaN, 2 +Inf, 1 −Inf",
  );
});

test("histogram answers keep MindSpore's NaN/Inf counts", () => {
  const body = { run: "a", tag: "w", rows: [], nonfinite: [[3, 135, 0, 0], "x"], nonfinite_steps: 3 };
  const data = normalizeHistograms(body);
  assert.deepEqual(data.nonfinite, [[3, 135, 0, 0]]);
  assert.equal(data.nonfinite_steps, 3);
  assert.deepEqual(normalizeHistograms({ run: "a", tag: "w", rows: [] }).nonfinite, []);
  assert.match(nonfiniteNote([{ run: "a", data }]), /a: 3 steps, at step 3 135 NaN/);
});
