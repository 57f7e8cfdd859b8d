// Unit tests of what makes the views say what they hold and the names readable (node --test test/): shortened run
// names, the order of the heatmaps, one-off series, the spread that calls for a log axis, flat matrices, the kinds
// a section counts, and the report's answers for the media and cluster routes.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { comparePanels, isPointSeries } from "../src/base/contract.js";
import { uniformValue } from "../src/chart/layerTree.js";
import { LOG_SPREAD, runSpread } from "../src/chart/series.js";
import { answer, imageDataUrl } from "../src/api/report.js";
import { displayRunName, nameParts, setRunNames, shortRunNames } from "../src/base/runNames.js";
import { kindsText } from "../src/page/registry.js";

const contract = JSON.parse(readFileSync(new URL("./fixtures/contract.json", import.meta.url), "utf8"));

test("run names drop the prefix every run shares, at a separator, never the part that differs", () => {
  const demo = ["20261206-050034_demo_lr0.001_bs32_h64_steps600", "20261206-050202_demo-lr-too-high_lr1_bs32_h64_steps300"];
  assert.deepEqual([...shortRunNames(demo).names.values()], ["050034_demo_lr0.001_bs32_h64_steps600", "050202_demo-lr-too-high_lr1_bs32_h64_steps300"]);
  assert.equal(shortRunNames(demo).prefix, "20261206-");
  // Nothing shared: names as they are; one run: as it is.
  assert.equal(shortRunNames([...demo, "mindspore_summary_collector"]).prefix, "");
  assert.equal(shortRunNames(["only/run"]).prefix, "");
  // Cut at a separator (never inside "0.001" / "0.01"), and every name keeps something.
  assert.deepEqual([...shortRunNames(["sweep/lr_0.001/seed_3", "sweep/lr_0.01/seed_1"]).names.values()], ["0.001/seed_3", "0.01/seed_1"]);
  assert.deepEqual([...shortRunNames(["experiment/a", "experiment/a/eval"]).names.values()], ["a", "a/eval"]);
  assert.equal(shortRunNames(["run_a", "run_b"]).prefix, ""); // too short to be worth hiding
  assert.deepEqual(nameParts("050034_demo_lr0.001_bs32"), ["050034_", "demo_", "lr0.001_", "bs32"]);
  assert.equal(nameParts("a/b-c d").join(""), "a/b-c d");
  setRunNames(["experiment/run1", "experiment/run2"]);
  assert.equal(displayRunName("experiment/run2"), "run2");
  assert.equal(displayRunName("elsewhere"), "elsewhere");
});

test("the update-ratio heatmap leads its section and the flight recorder's come last", () => {
  const tags = ["debug/flight/layer_nonfinite", "debug/flight/layer_grad_norm", "debug/layer_grad_norm", "debug/update_ratio", "local_norm/*"];
  assert.deepEqual(tags.sort((a, b) => comparePanels(contract, a, b)), [
    "debug/update_ratio",
    "debug/layer_grad_norm",
    "local_norm/*",
    "debug/flight/layer_grad_norm",
    "debug/flight/layer_nonfinite",
  ]);
  assert.ok(isPointSeries(contract, "core/compile_ms"));
  assert.ok(!isPointSeries(contract, "core/loss"));
});

test("runs more than 100x apart call for a log axis; values <= 0 never do", () => {
  const series = (...values) => ({ points: values.map((v, i) => [i, i, v]) });
  assert.equal(runSpread([series(1e-3, 2e-3, 1e-3), series(1, 0.5, 1)]), 1000);
  assert.ok(runSpread([series(1e-3), series(1)]) > LOG_SPREAD);
  assert.ok(runSpread([series(1, 2), series(3, 4)]) < LOG_SPREAD);
  assert.equal(runSpread([series(0, 1), series(100, 200)]), null);
  assert.equal(runSpread([series(NaN, 1e-3), series(Infinity, 1)]), 1000); // non-finite values are left out
  assert.equal(runSpread([series(1)]), null);
});

test("a matrix with one value everywhere is flat; any difference is not", () => {
  assert.deepEqual(uniformValue(new Float32Array([0, 0, 0, 5]), new Uint8Array([0, 0, 0, 1])), { value: 0, cells: 3 });
  assert.equal(uniformValue(new Float32Array([0, 1]), new Uint8Array([0, 0])), null);
  assert.deepEqual(uniformValue(new Float32Array([1, 2]), new Uint8Array([1, 1])), { value: null, cells: 0 });
  assert.ok(Number.isNaN(uniformValue(new Float32Array([NaN, NaN]), null).value));
});

test("a section counts its views by kind: distributions are never charts of scalars", () => {
  const infos = [{ kind: "histogram" }, { kind: "scalar" }, { kind: "layers" }, { kind: "histogram" }];
  assert.equal(kindsText(infos), "1 heatmap · 1 chart · 2 distributions");
  assert.equal(kindsText([{ kind: "histogram" }]), "1 distribution");
});

test("a report answers the media and cluster routes, and inlines its images as data URLs", () => {
  const data = {
    routes: { media: { runs: { r: { images: [{ tag: "pic" }], tensors: [{ tag: "t" }] } } }, clusters: { clusters: [{ run: "r" }] } },
    images: { r: { pic: { run: "r", tag: "pic", steps: [{ step: 3 }], report_total_steps: 9 } } },
    tensors: { r: { t: { run: "r", tag: "t", steps: [] } } },
    image_bytes: { r: { pic: { 3: "data:image/png;base64,AAAA" } } },
    cluster: { r: { step_time_ms: { run: "r", metric: "step_time_ms" } } },
    cluster_ranks: { r: { step_time_ms: { 0: { rank: 0, points: [] } } } },
  };
  assert.deepEqual(answer(data, "media").body, data.routes.media);
  assert.deepEqual(answer(data, "clusters").body, data.routes.clusters);
  assert.equal(answer(data, "images?run=r&tag=pic").body.report_total_steps, 9);
  assert.equal(answer(data, "tensors?run=r&tag=t&max_values=256").status, 200);
  assert.equal(answer(data, "cluster?run=r&metric=step_time_ms&max_steps=1000").body.metric, "step_time_ms");
  assert.equal(answer(data, "cluster?run=r&metric=step_time_ms&rank=0").body.rank, 0);
  assert.equal(answer(data, "cluster?run=r&metric=step_time_ms&rank=7").status, 404);
  assert.equal(imageDataUrl(data, "r", "pic", 3), "data:image/png;base64,AAAA");
  assert.equal(imageDataUrl(data, "r", "pic", 4), null);
  assert.equal(imageDataUrl({ image_bytes: { r: { pic: { 3: "javascript:alert(1)" } } } }, "r", "pic", 3), null);
});
