// The page's helpers over the server's contract (fixtures/contract.json is what the contract route answers; a Python
// test keeps it equal to the server's answer).
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { stepTicks } from "../src/chart/layerTree.js";
import { smoothedIsBold, SMOOTH_MIN_POINTS } from "../src/chart/lineChart.js";
import { axisOf, axisTitle, compareTags, partialHint, ratioMarks, tierInfo } from "../src/base/contract.js";
import { EventChannel } from "../src/base/events.js";
import { VIEW_KINDS, viewKindOf } from "../src/page/registry.js";

const contract = JSON.parse(readFileSync(new URL("./fixtures/contract.json", import.meta.url), "utf8"));

test("partial tiers name the TrainMonitor option that records what is missing", () => {
  assert.equal(partialHint(contract, "debug", ["debug/update_ratio", "debug/data_wait_ms"]), 'Not recorded in these runs: per-layer gradient norm, activation histograms, largest attention logit. Add them with TrainMonitor(debug=["layer_grad_norm", "activations", "attention_logits"]).');
  assert.equal(partialHint(contract, "debug", []), null);
  assert.equal(partialHint(contract, "diagnostic", ["diagnostic/layer_weight_norm", "diagnostic/eval/accuracy"]), null);
  assert.match(partialHint(contract, "diagnostic", ["diagnostic/layer_weight_norm"]), /eval=Eval\(dataset/);
  assert.equal(partialHint(contract, "core", ["core/loss"]), null);
});

test("tiers, tag order and axes come from the contract", () => {
  assert.equal(tierInfo(contract, "core").title, "Core");
  assert.equal(tierInfo(contract, "other").emptyNote, null);
  assert.deepEqual(tierInfo(contract, "custom"), { title: "custom", subtitle: "", emptyNote: null });
  const tags = ["zz", "core/throughput", "core/learning_rate/group1", "core/loss", "core/learning_rate"];
  assert.deepEqual(tags.sort((a, b) => compareTags(contract, a, b)), ["core/loss", "core/learning_rate", "core/learning_rate/group1", "core/throughput", "zz"]);
  assert.equal(axisTitle(axisOf(contract, "core/throughput")), "throughput (samples/s)");
  assert.equal(axisTitle(axisOf(contract, "core/step_time_ms")), "step time (ms)");
  assert.equal(axisTitle(axisOf(contract, "core/loss")), "loss");
  assert.equal(axisTitle(axisOf(contract, "timing/fetch_ms")), "fetch (ms)");
  assert.equal(axisTitle(axisOf(contract, "loss/auto")), "loss");
  assert.equal(axisTitle(axisOf(contract, "eval/top_1")), "top 1");
});

test("update-ratio marks are the health rules' thresholds", () => {
  const m = ratioMarks(contract);
  assert.equal(m.slow, Math.log10(contract.update_ratio.slow));
  assert.equal(m.fast, -1);
  assert.equal(m.center, -3);
  const moved = ratioMarks({ ...contract, update_ratio: { ...contract.update_ratio, fast: 0.5 } });
  assert.ok(Math.abs(moved.fast - Math.log10(0.5)) < 1e-12);
});

test("one event channel: listeners hear every emit until they stop, one that throws does not stop the others", () => {
  const ch = new EventChannel();
  const heard = [];
  const warn = console.warn;
  console.warn = () => {};
  const stop = ch.on("refresh", (d) => heard.push(["a", d.count]));
  ch.on("refresh", () => {
    throw new Error("boom");
  });
  ch.on("refresh", (d) => heard.push(["b", d.count]));
  ch.emit("refresh", { count: 1 });
  stop();
  ch.emit("refresh", { count: 2 });
  ch.emit("visible-runs", ["x"]);
  console.warn = warn;
  assert.deepEqual(heard, [["a", 1], ["b", 1], ["b", 2]]);
});

test("the view registry: kinds in layout order, family members are rows of their heatmap", () => {
  assert.deepEqual(VIEW_KINDS.map((k) => [k.kind, k.slot]), [["layers", "panels"], ["table", "panels"], ["scalar", "grid"], ["histogram", "grid"]]);
  assert.equal(viewKindOf({ kind: "table" }), "table");
  assert.equal(viewKindOf({ kind: "scalar", family: null }), "scalar");
  assert.equal(viewKindOf({ kind: "scalar", family: "local_norm/*" }), null);
  assert.equal(viewKindOf({ kind: "layers" }), "layers");
  assert.equal(viewKindOf({ kind: "image" }), null);
});

test("smoothing is drawn bold only over dense series", () => {
  assert.equal(smoothedIsBold({ finiteCount: SMOOTH_MIN_POINTS }, 0.6), true);
  assert.equal(smoothedIsBold({ finiteCount: 80 }, 0.6), false);
  assert.equal(smoothedIsBold({ finiteCount: 5000 }, 0), false);
});

test("heatmap step ticks: round steps, first and last labelled and aligned inward, none crowded", () => {
  const steps = Array.from({ length: 50 }, (_, i) => 10 * (i + 1)); // 10..500
  const ticks = stepTicks(steps, 500);
  assert.equal(ticks[0].step, 10);
  assert.equal(ticks[0].align, "start");
  assert.equal(ticks[ticks.length - 1].step, 500);
  assert.equal(ticks[ticks.length - 1].align, "end");
  const inner = ticks.slice(1, -1).map((t) => t.step);
  assert.ok(inner.length >= 3, JSON.stringify(inner));
  assert.ok(inner.every((s) => s % 100 === 0 || s % 50 === 0), JSON.stringify(inner));
  for (let i = 1; i < ticks.length; i++) assert.ok(ticks[i].x - ticks[i - 1].x >= 55, JSON.stringify(ticks));
  assert.deepEqual(stepTicks([7], 300).map((t) => t.step), [7]);
  assert.deepEqual(stepTicks([], 300), []);
});
