import assert from "node:assert/strict";
import { test } from "node:test";

import { normalizeHealth } from "../src/api/client.js";
import { heatmapWindow, LAYER_TAGS, layersLabel, layerTarget } from "../src/views/sections/health/healthPanel.js";

test("normalizeHealth keeps layers, source, action and one level of follow-ons", () => {
  const h = normalizeHealth({
    runs: [
      {
        run: "a",
        status: "error",
        findings: [
          {
            rule: "nonfinite", level: "error", message: "NaN", tag: "core/loss", steps: [14, 48],
            layers: ["2.weight"], source: "offline+live", action: "stopped",
            follow_ons: [
              { rule: "layer_too_fast", level: "warn", message: "m", tag: "debug/update_ratio", steps: [16, 48],
                caused_by: { rule: "nonfinite", tag: "core/loss", step: 14 }, follow_ons: [{ rule: "deeper" }] },
            ],
          },
          { rule: "old", level: "warn", message: "m", tag: "t", steps: [1, 2] },
        ],
      },
    ],
  });
  const [cause, old] = h.runs[0].findings;
  assert.deepEqual(cause.layers, ["2.weight"]);
  assert.equal(cause.source, "offline+live");
  assert.equal(cause.action, "stopped");
  assert.equal(cause.followOns.length, 1);
  assert.deepEqual(cause.followOns[0].steps, [16, 48]);
  assert.deepEqual(cause.followOns[0].followOns, []); // one level deep
  assert.deepEqual(old.layers, []);
  assert.deepEqual(old.followOns, []);
});

test("a finding with layers and steps links to the heatmap window around it", () => {
  assert.deepEqual(heatmapWindow([40, 42]), [30, 50]);
  assert.deepEqual(heatmapWindow([5, 45]), [0, 15]);
  assert.equal(heatmapWindow(null), null);
  const t = layerTarget({ tag: "core/loss", steps: [40, 42], layers: ["1.weight"] });
  assert.equal(t.tag, LAYER_TAGS[0]);
  assert.deepEqual(t.fallbackTags, LAYER_TAGS.slice(1));
  assert.deepEqual(t.steps, [30, 50]);
  assert.equal(layerTarget({ tag: "debug/layer_grad_norm", steps: [3, 3], layers: ["a"] }), null); // already there
  assert.equal(layerTarget({ tag: "core/loss", steps: [1, 2], layers: [] }), null);
  assert.equal(layerTarget({ tag: "core/loss", steps: null, layers: ["a"] }), null);
  assert.equal(layersLabel(["a"]), "layer a");
  assert.equal(layersLabel(["a", "b", "c", "d", "e"]), "layers a, b, c and 2 more");
});
