// The Compare section's pure functions: verdict text, order rows, layer table, the mapping sent back.
import { test } from "node:test";
import assert from "node:assert/strict";
import { layerRows, mappingFile, mappingFromEdits, orderRows, verdictText, curveSeries } from "../src/views/sections/compare/compareModel.js";

const result = {
  verdict: "part",
  first: { quantity: "update_ratio", step: 3, layers: ["fc1.bias", "fc2.bias", "fc3.bias", "ln.bias", "x.bias"] },
  order: [{ quantity: "update_ratio", step: 3, layers: ["fc1.bias"], difference: 0.0123, tolerance: 0.001 }],
  layer_table: [
    { layer: "fc.weight", run_layers: ["fc.weight"], quantities: { update_ratio: { first_step: null, max_difference: 1e-5 } } },
    { layer: "fc.bias", run_layers: ["fc.beta"], quantities: { update_ratio: { first_step: 3, max_difference: "Infinity" } } },
  ],
  alignment: { first_step: 1, last_step: 100 },
};

test("the verdict says where the runs part first", () => {
  assert.equal(verdictText(result), "Part at step 3: update ratio parts first (fc1.bias, fc2.bias, fc3.bias, ln.bias +1).");
  assert.equal(verdictText({ verdict: "match", alignment: { first_step: 1, last_step: 200 } }),
    "Match: every common quantity stays within its tolerance (steps 1–200).");
});

test("order rows and the layer table, parted layers first", () => {
  assert.deepEqual(orderRows(result)[0], { step: 3, quantity: "update_ratio", label: "Update ratio", layers: "fc1.bias", difference: "0.0123", tolerance: "0.001" });
  const rows = layerRows(result);
  assert.deepEqual(rows.map((r) => r.layer), ["fc.bias", "fc.weight"]);
  assert.equal(rows[0].runLayers, "fc.beta");
  assert.equal(rows[0].cells.update_ratio.step, 3);
  assert.equal(rows[0].cells.update_ratio.max, "Infinity");
  assert.equal(rows[0].cells.layer_grad_norm, null);
});

test("edits become the mapping the route reads", () => {
  assert.equal(mappingFromEdits({ pairs: {}, removed: [] }), null);
  const edits = { pairs: { "head.kernel": ["head.weight"], x: [] }, removed: ["a.b[0]"] };
  assert.deepEqual(mappingFromEdits(edits), { pairs: { "head.kernel": ["head.weight"] }, ignore: ["a.b[0]"] });
  assert.deepEqual(mappingFile(edits), { pairs: { "head.kernel": ["head.weight"] }, ignore: ["^a\\.b\\[0\\]$"] });
});

test("a curve becomes the values and the difference charts' series", () => {
  const s = curveSeries({ column: "loss", steps: [1, 2], run: [1, 2], reference: [1, "NaN"], difference: [0, "Infinity"], tolerance: [1e-4, 1e-4] },
    { run: "a", reference: "b" }, { run: "#111", reference: "#222", tolerance: "#333" });
  assert.deepEqual(s.values[1].data.points, [[1, 0, 1], [2, 0, NaN]]);
  assert.deepEqual(s.difference.map((x) => x.run), ["relative difference", "tolerance"]);
  assert.equal(s.difference[0].data.points[1][2], Infinity);
});
