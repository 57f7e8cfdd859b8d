// Unit tests of the pure modules (no browser): node --test test/
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeNumber, decodeRows, normalizeScalars, parseJson, buildUrl } from "../src/api.js";
import { RunColors, PALETTE, withAlpha } from "../src/colors.js";
import { emaSmooth } from "../src/chart/smoothing.js";
import { joinTables, nearestIndex, prepareSeries } from "../src/chart/series.js";
import { seriesToCsv, seriesToJson, downloadName } from "../src/chart/download.js";
import { formatValue, formatDuration, formatStep } from "../src/chart/format.js";
import { compileFilter } from "../src/views/runSelector.js";

test("non-finite numbers are decoded from their wire strings", () => {
  assert.ok(Number.isNaN(decodeNumber("NaN")));
  assert.equal(decodeNumber("Infinity"), Infinity);
  assert.equal(decodeNumber("-Infinity"), -Infinity);
  assert.equal(decodeNumber(1.5), 1.5);
  assert.deepEqual(decodeRows([[1, 2, "Infinity"]]), [[1, 2, Infinity]]);
  const body = normalizeScalars({ run: "r", tag: "t", points: [[1, 10.0, "NaN"]], interval: null, total_points: 1 });
  assert.ok(Number.isNaN(body.points[0][2]));
  assert.equal(body.interval, null);
});

test("bare NaN tokens are tolerated, strings are left alone", () => {
  assert.deepEqual(parseJson('{"a": [1, "NaN"]}'), { a: [1, "NaN"] });
  const v = parseJson('{"a": [1, NaN, -Infinity], "b": "NaN and Infinity"}');
  assert.deepEqual(v, { a: [1, "NaN", "-Infinity"], b: "NaN and Infinity" });
});

test("URLs stay relative and parameters are encoded", () => {
  assert.equal(buildUrl("scalars", { run: "a b/<c>", tag: "core/loss", x: undefined }), "scalars?run=a+b%2F%3Cc%3E&tag=core%2Floss");
  assert.equal(buildUrl("runs"), "runs");
});

test("debiased EMA matches TensorBoard's formula", () => {
  const w = 0.6;
  const values = [1, 2, 3, NaN, 4];
  const out = emaSmooth(values, w);
  let last = 0;
  let n = 0;
  const expected = values.map((v) => {
    if (!Number.isFinite(v)) return v;
    last = last * w + (1 - w) * v;
    n += 1;
    return last / (1 - Math.pow(w, n));
  });
  assert.equal(out[0], 1); // debiasing: the first point is the first value
  for (let i = 0; i < values.length; i++) {
    if (Number.isNaN(expected[i])) assert.ok(Number.isNaN(out[i]));
    else assert.ok(Math.abs(out[i] - expected[i]) < 1e-12);
  }
  assert.deepEqual(emaSmooth([5, 5, 5], 0.9), [5, 5, 5]);
  assert.deepEqual(emaSmooth([1, 2], 0), [1, 2]);
});

test("series: x by axis, non-finite markers, log axis drops values <= 0", () => {
  const data = { points: [[10, 100.0, 1], [20, 102.0, "NaN"], [30, 105.0, -1]], interval: [[10, 0.5, 1, 2, 10, 0]] };
  const step = prepareSeries(normalizeScalars({ run: "r", tag: "t", ...data }), { xAxis: "step", smoothing: 0 });
  assert.deepEqual(step.xs, [10, 20, 30]);
  assert.deepEqual(step.raw, [1, null, -1]);
  assert.deepEqual(step.nonfiniteXs, [20]);
  assert.equal(step.finiteCount, 2);
  assert.deepEqual(step.band, { xs: [10], lo: [0.5], hi: [2] });
  const rel = prepareSeries(normalizeScalars({ run: "r", tag: "t", ...data }), { xAxis: "relative", smoothing: 0, logY: true });
  assert.deepEqual(rel.xs, [0, 2, 5]);
  assert.deepEqual(rel.raw, [1, null, null]);
  assert.deepEqual(rel.band.xs, [0]);
});

test("joinTables aligns series on the union of x", () => {
  const j = joinTables([{ xs: [1, 3], cols: [[10, 30]] }, { xs: [2, 3], cols: [[20, 31], [0, 1]] }]);
  assert.deepEqual(j.x, [1, 2, 3]);
  assert.deepEqual(j.cols, [[10, null, 30], [null, 20, 31], [null, 0, 1]]);
  assert.equal(nearestIndex([1, 5, 10], 6), 1);
  assert.equal(nearestIndex([1, 5, 10], 100), 2);
  assert.equal(nearestIndex([], 1), -1);
});

test("run colors are stable and distinct", () => {
  const a = new RunColors().update(["b", "a", "c"]);
  const b = new RunColors().update(["c", "a", "b"]);
  assert.deepEqual([...a.entries()].sort(), [...b.entries()].sort());
  assert.equal(new Set(a.values()).size, 3);
  const many = new RunColors().update(Array.from({ length: PALETTE.length }, (_, i) => "run" + i));
  assert.equal(new Set(many.values()).size, PALETTE.length);
  const colors = new RunColors();
  colors.update(["x", "y"]);
  const x = colors.color("x");
  colors.update(["x", "y", "z", "w"]);
  assert.equal(colors.color("x"), x); // a run keeps its color when others appear
  assert.equal(withAlpha("#ff0000", 0.5), "rgba(255, 0, 0, 0.5)");
});

test("CSV and JSON exports keep every point and non-finite values", () => {
  const data = { run: "r", tag: "core/loss", total_points: 2, downsampled: false, points: [[1, 10.5, 0.25], [2, 11, NaN]], interval: null };
  assert.equal(seriesToCsv(data), "step,wall_time,value\n1,10.5,0.25\n2,11,NaN\n");
  const json = JSON.parse(seriesToJson(data));
  assert.deepEqual(json.points[1], { step: 2, wall_time: 11, value: "NaN" });
  assert.equal(downloadName("<run>", "core/loss", "csv"), "run__core_loss.csv");
});

test("formatting", () => {
  assert.equal(formatValue(NaN), "NaN");
  assert.equal(formatValue(0.123456), "0.1235");
  assert.equal(formatValue(1e-5), "1e-5");
  assert.equal(formatStep(25000), "25k");
  assert.equal(formatDuration(90), "1m 30s");
  assert.equal(formatDuration(7322), "2h 02m");
});

test("run filter is a case-insensitive regex; invalid ones are reported", () => {
  assert.ok(compileFilter("RUN_a").regex.test("run_a"));
  assert.equal(compileFilter("(").valid, false);
  assert.equal(compileFilter("").regex, null);
});
