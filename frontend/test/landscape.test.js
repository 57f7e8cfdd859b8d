// Unit tests of the landscape view's pure modules (node --test test/).
import assert from "node:assert/strict";
import { test } from "node:test";

import {
  bilinear,
  colormap,
  contourLevels,
  finiteRange,
  fractionalIndex,
  isolineSegments,
  makeTransform,
  ticks,
  transformValues,
} from "../src/chart/landscapeMath.js";
import { buildGeometry, lookAt, multiply, perspective, project } from "../src/chart/surface3d.js";
import { normalizeLandscape, normalizeListing } from "../src/api/landscape.js";
import { describe, groupByTag } from "../src/views/sections/landscape/landscapeModel.js";

function bowl(n) {
  // z = x^2 + y^2 on [-1, 1]^2, row-major (rows = y).
  const xs = Array.from({ length: n }, (_, i) => -1 + (2 * i) / (n - 1));
  const z = new Float64Array(n * n);
  for (let j = 0; j < n; j++) for (let i = 0; i < n; i++) z[j * n + i] = xs[i] ** 2 + xs[j] ** 2;
  return { xs, z };
}

test("isolines of a bowl are closed circles at the right radius", () => {
  const n = 41;
  const { xs, z } = bowl(n);
  const level = 0.3; // a circle of radius sqrt(0.3) through no grid point
  const segs = isolineSegments(z, n, n, level);
  assert.ok(segs.length / 4 > 20);
  for (let s = 0; s < segs.length; s += 2) {
    const x = -1 + (2 * segs[s]) / (n - 1);
    const y = -1 + (2 * segs[s + 1]) / (n - 1);
    assert.ok(Math.abs(Math.hypot(x, y) - Math.sqrt(level)) < 0.02, `point (${x}, ${y}) off the circle`);
  }
  // Every endpoint is shared by exactly two segments: the line is closed.
  const key = (a, b) => `${a.toFixed(6)},${b.toFixed(6)}`;
  const count = new Map();
  for (let s = 0; s < segs.length; s += 2) count.set(key(segs[s], segs[s + 1]), (count.get(key(segs[s], segs[s + 1])) || 0) + 1);
  assert.ok([...count.values()].every((c) => c === 2));
  assert.equal(xs.length, n);
});

test("isolines skip cells with a missing corner and resolve saddles", () => {
  const z = Float64Array.from([0, 1, NaN, 0, 1, 1]);
  assert.equal(isolineSegments(z, 3, 2, 0.5).length, 4); // only the left cell
  const saddle = Float64Array.from([1, 0, 0, 1]); // v0 and v2 above (2 x 2 grid, v2 = (1, 1) is index 3)
  const segs = isolineSegments(saddle, 2, 2, 0.5);
  assert.equal(segs.length, 8);
});

test("levels, ticks, ranges and transforms", () => {
  const tk = ticks(0, 1, 5);
  assert.equal(tk.length, 6);
  tk.forEach((v, i) => assert.ok(Math.abs(v - i * 0.2) < 1e-12));
  const levels = contourLevels(0.03, 0.79, 12);
  assert.ok(levels.length >= 6 && levels.every((v) => v > 0.03 && v < 0.79));
  const r = finiteRange([NaN, 2, -1, Infinity, 5]);
  assert.deepEqual(r, { min: -1, max: 5 });
  const lin = makeTransform({ min: 1, max: 10 }, false);
  assert.equal(lin.f(3), 3);
  const log = makeTransform({ min: 1, max: 100 }, true);
  assert.equal(log.f(100), 2);
  assert.equal(log.label, "log10(loss)");
  const shifted = makeTransform({ min: 0, max: 10 }, true);
  assert.ok(Number.isFinite(shifted.f(0)) && shifted.label.startsWith("log10(loss + "));
  const t = transformValues(Float64Array.from([1, NaN, 10]), log);
  assert.deepEqual([...t].map((v) => (Number.isNaN(v) ? "nan" : v)), [0, "nan", 1]);
});

test("colour map ends and interpolation", () => {
  assert.deepEqual(colormap(0), [68, 1, 84]);
  assert.deepEqual(colormap(1), [253, 231, 37]);
  assert.deepEqual(colormap(2), [253, 231, 37]);
  assert.deepEqual(colormap(NaN), [224, 224, 224]);
});

test("bilinear lookup and fractional indices", () => {
  const z = Float64Array.from([0, 1, 2, 3]);
  assert.equal(bilinear(z, 2, 2, 0.5, 0.5), 1.5);
  assert.equal(fractionalIndex([-1, 0, 1], 0.5), 1.5);
  assert.equal(fractionalIndex([-1, 0, 1], 5), 2);
  assert.equal(bilinear(Float64Array.from([2, 4]), 2, 1, 0.5, 0), 3);
});

test("route answers are decoded: NaN strings, 1-D landscapes, path", () => {
  const ls = normalizeLandscape({
    run: "r", tag: "t", step: 3, steps: [1, 3], x: [-1, 0, 1], y: [-1, 1], z: [[1, "NaN", 2], [3, 4, 5]],
    path: { x: [-1, 0], y: [-1, 0], z: [5, "NaN"], steps: [0, 3] }, center: { x: 0, y: 0, z: 4 },
    method: "pca", source: "tb_mindspore_callbacks", dims: 2, complete: false, axis_labels: ["PC1", "PC2"],
  });
  assert.equal(ls.nx, 3);
  assert.equal(ls.ny, 2);
  assert.ok(Number.isNaN(ls.z[1]));
  assert.equal(ls.z[5], 5);
  assert.ok(Number.isNaN(ls.path.z[1]));
  assert.equal(ls.complete, false);
  const one = normalizeLandscape({ run: "r", tag: "i", x: [0, 0.5, 1], y: [0], z: [[3, 2, 1]] });
  assert.equal(one.dims, 1);
  const listing = normalizeListing({ runs: { a: [{ tag: "t", step: "4", grid: [3, 3], dims: 2 }] } });
  assert.equal(listing.a[0].step, 4);
  assert.equal(listing.a[0].complete, true);
});

test("listing groups by tag, ours first, steps in order", () => {
  const g = groupByTag([
    { tag: "landscape_[3]", step: 0, wall_time: 1, method: "random", source: "mindspore", title: "m" },
    { tag: "landscape/random", step: 8, wall_time: 2, method: "random", source: "tb_mindspore_callbacks", title: "r" },
    { tag: "landscape/random", step: 4, wall_time: 1, method: "random", source: "tb_mindspore_callbacks", title: "r" },
    { tag: "landscape/pca", step: 4, wall_time: 1, method: "pca", source: "tb_mindspore_callbacks", title: "p" },
  ]);
  assert.deepEqual(g.map((x) => x.tag), ["landscape/pca", "landscape/random", "landscape_[3]"]);
  assert.deepEqual(g[1].entries.map((e) => e.step), [4, 8]);
  const text = describe({
    source: "tb_mindspore_callbacks", dims: 2, nx: 21, ny: 21, method: "pca", explainedVarianceRatio: [0.9, 0.05],
    metadata: { num_samples: 256 }, center: { z: 0.5 },
  });
  assert.ok(text.includes("21 × 21") && text.includes("256 samples") && text.includes("90.0 %"));
});

test("3-D geometry: triangles only for complete cells, path on the surface, projection", () => {
  const n = 5;
  const { z } = bowl(n);
  z[0] = NaN;
  const xs = Float64Array.from({ length: n }, (_, i) => -1 + (2 * i) / (n - 1));
  const ls = { nx: n, ny: n, x: xs, y: xs, z, path: { x: Float64Array.of(-1, 0), y: Float64Array.of(-1, 0), z: Float64Array.of(NaN, 0) } };
  const range = finiteRange(z);
  const transform = makeTransform(range, false);
  const t = transformValues(z, transform);
  const scale = { range, transform, t, tmin: finiteRange(t).min, tmax: finiteRange(t).max };
  const g = buildGeometry(ls, scale);
  assert.equal(g.triangles, 2 * ((n - 1) * (n - 1) - 1));
  assert.equal(g.path.length, 2);
  assert.ok(Math.abs(g.path[1][2] - 0.012) < 1e-9); // the centre (loss 0 = minimum) at height 0, lifted a little
  const m = multiply(perspective(0.7, 1, 0.1, 50), lookAt([0, -3, 1], [0, 0, 0], [0, 0, 1]));
  const [x, y] = project(m, [0, 0, 0]);
  assert.ok(Math.abs(x) < 1e-6 && Math.abs(y) < 1e-6);
});

test("sharpness note names the stability line of the optimizer", async () => {
  const { sharpnessNote } = await import("../src/chart/landscapeMath.js");
  assert.equal(sharpnessNote({ sharpness: 10, threshold: 40, optimizer: "sgd" }), "top eigenvalue 10 · stability line 2/lr = 40 (0.25 of it)");
  assert.match(sharpnessNote({ sharpness: 10, threshold: 38000, optimizer: "adam" }), /38\/lr \(preconditioned\)/);
  assert.equal(sharpnessNote({ sharpness: 3, threshold: null }), "top eigenvalue 3");
  assert.equal(sharpnessNote({}), "top eigenvalue");
});
