// Pure pieces of what users' own files add to the tab: the samples x axis (step -> samples seen), the graph view's
// scope tree and shapes, the table answer, markers by chart.
import assert from "node:assert/strict";
import test from "node:test";

import { prepareSeries } from "../src/chart/series.js";
import { samplesFunction } from "../src/api/samples.js";
import { normalizeTable } from "../src/api/table.js";
import { buildScopeTree, shapeText } from "../src/views/sections/graph/graphModel.js";

test("samples seen at a step: interpolated between pairs, extrapolated at the same rate past them", () => {
  const f = samplesFunction([[10, 80], [20, 160], [30, 400]]); // the batch grew from 8 to 24 after step 20
  assert.equal(f(10), 80);
  assert.equal(f(15), 120);
  assert.equal(f(25), 280);
  assert.equal(f(40), (400 * 40) / 30);
  assert.equal(f(5), 40);
  assert.ok(Number.isNaN(samplesFunction([])(5)));
});

test("a series on the samples axis: x is samples seen, a run without them draws nothing", () => {
  const data = { points: [[1, 100, 2.0], [2, 101, 1.5]], interval: null, samplesOf: (s) => s * 64 };
  assert.deepEqual(prepareSeries(data, { xAxis: "samples", smoothing: 0 }).xs, [64, 128]);
  assert.deepEqual(prepareSeries({ ...data, samplesOf: null }, { xAxis: "samples", smoothing: 0 }).xs, []);
});

test("graph view: scopes nest by path, parameters together, shapes as dtype[dims]", () => {
  const nodes = [
    { id: 0, name: "fc1.weight", op: "Parameter", scope: "", kind: "parameter" },
    { id: 1, name: "Default/net/fc1-Dense/MatMul-op0", op: "MatMul", scope: "Default/net/fc1-Dense", kind: "op" },
    { id: 2, name: "Default/net/act-ReLU/ReLU-op0", op: "ReLU", scope: "Default/net/act-ReLU", kind: "op" },
  ];
  const root = buildScopeTree(nodes);
  assert.equal(root.count, 3);
  assert.deepEqual([...root.children.keys()].sort(), ["Default", "Parameters"]);
  const net = root.children.get("Default").children.get("net");
  assert.equal(net.count, 2);
  assert.deepEqual(net.children.get("fc1-Dense").nodes.map((n) => n.op), ["MatMul"]);
  assert.equal(shapeText("float32", [4, 8]), "float32[4, 8]");
  assert.equal(shapeText("tuple(float32, int32)", [[4], []]), "tuple(float32, int32) ([4], [])");
  assert.equal(shapeText("", null), "");
});

test("a table answer: NaN kept, missing cells null", () => {
  const t = normalizeTable({ run: "r", tag: "max_attention_logit/*", rows: ["l0"], columns: ["head 0", "head 1"], steps: [5], step: 5, values: [["NaN", null]], column: "head" });
  assert.ok(Number.isNaN(t.values[0][0]));
  assert.equal(t.values[0][1], null);
  assert.equal(t.column, "head");
});
