// Unit tests of the pure modules (no browser): node --test test/
import assert from "node:assert/strict";
import { test } from "node:test";

import { decodeNumber, decodeRows, normalizeScalars, parseJson, buildUrl } from "../src/api/client.js";
import { RunColors, PALETTE, withAlpha } from "../src/base/colors.js";
import { emaSmooth } from "../src/chart/smoothing.js";
import { nearestIndex, prepareSeries } from "../src/chart/series.js";
import uPlot from "uplot";
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

test("uPlot.join aligns the runs' tables on the union of x as the charts pass them", () => {
  const j = uPlot.join([[[1, 3], [10, null]], [[2, 3], [20, 31], [0, 1]]]);
  assert.deepEqual(j[0], [1, 2, 3]);
  // a recorded gap (null, e.g. NaN) stays null; an x another run lacks is undefined (spanned)
  assert.deepEqual(j.slice(1), [[10, undefined, null], [undefined, 20, 31], [undefined, 0, 1]]);
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

// ---- dashboard (issue 4): batching, layer matrices, heatmap model ----
import { batchUrl, decodeBf16Planes, normalizeLayers, normalizeTags } from "../src/api/client.js";
import { SeriesStore, planBatches } from "../src/api/store.js";
import { SPECIAL, makeScale } from "../src/chart/colorScale.js";
import { aggregateRow, buildTree, compareNames, layerStats, treeDepth, visibleRows } from "../src/chart/layerTree.js";
import { prepareBands } from "../src/chart/bandsChart.js";


function bf16Block(values, missingIdx = []) {
  // float32 -> bfloat16 (truncation is enough for these exact values), planes, base64
  const f = new Float32Array(values);
  const u = new Uint32Array(f.buffer);
  const n = f.length;
  const bytes = new Uint8Array(2 * n);
  for (let i = 0; i < n; i++) {
    let bits = u[i] >>> 16;
    if (missingIdx.includes(i)) bits = 0x7fff;
    bytes[i] = bits >>> 8;
    bytes[n + i] = bits & 0xff;
  }
  return Buffer.from(bytes).toString("base64");
}

test("bf16 planes decode to float32 with NaN, Inf, zero and missing cells", () => {
  const vals = [1, -2, 0.5, NaN, Infinity, -Infinity, 0, 3];
  const body = { run: "r", tag: "t", shape: [2, 4], encoding: "bf16-planes", values: bf16Block(vals, [7]), layers: ["a", "<b>"], steps: [1, 2, 3, 4], scale: "ratio" };
  const d = normalizeLayers(body);
  assert.equal(d.rows, 2);
  assert.equal(d.cols, 4);
  assert.deepEqual([...d.values.slice(0, 3)], [1, -2, 0.5]);
  assert.ok(Number.isNaN(d.values[3]));
  assert.equal(d.values[4], Infinity);
  assert.equal(d.values[5], -Infinity);
  assert.equal(d.values[6], 0);
  assert.deepEqual([...d.missing], [0, 0, 0, 0, 0, 0, 0, 1]);
  assert.deepEqual(d.layers, ["a", "<b>"]);
  const raw = decodeBf16Planes(new Uint8Array([0x3f, 0x80]), 1); // 0x3f80 = 1.0
  assert.equal(raw.values[0], 1);
});

test("tags keep the layer and family fields", () => {
  const t = normalizeTags({ tiers: ["debug"], runs: { r: { debug: [{ tag: "local_norm/*", kind: "layers", layers: 3, source: "family" }, { tag: "local_norm/a", kind: "scalar", family: "local_norm/*" }] } } });
  assert.equal(t.runs.r.debug[0].layers, 3);
  assert.equal(t.runs.r.debug[0].source, "family");
  assert.equal(t.runs.r.debug[1].family, "local_norm/*");
});

test("batches cover exactly the pairs asked for and respect the limits", () => {
  const pairs = [["a", "t1"], ["a", "t2"], ["b", "t1"], ["b", "t2"], ["c", "t3"]];
  const plan = planBatches(pairs);
  assert.equal(plan.length, 2);
  const covered = new Set();
  for (const { runs, tags } of plan) for (const r of runs) for (const t of tags) covered.add(`${r}|${t}`);
  assert.deepEqual([...covered].sort(), pairs.map(([r, t]) => `${r}|${t}`).sort());
  const many = [];
  for (let i = 0; i < 30; i++) for (const r of ["a", "b"]) many.push([r, `diagnostic/metric_${i}`]);
  const small = planBatches(many, { maxPairs: 20 });
  for (const { runs, tags } of small) assert.ok(runs.length * tags.length <= 20);
  assert.equal(small.reduce((s, b) => s + b.runs.length * b.tags.length, 0), 60);
  const long = planBatches([["r", "x".repeat(3000)], ["r", "y".repeat(3000)]], { maxUrl: 4000 });
  assert.equal(long.length, 2);
  assert.ok(batchUrl(["a"], ["t/1"]).startsWith("scalars_batch?run=a&tag=t%2F1"));
});

test("the store merges the requests of one turn into one batch", async () => {
  const calls = [];
  const store = new SeriesStore({
    batchFetcher: async (runs, tags) => {
      calls.push([runs, tags]);
      return { series: runs.flatMap((run) => tags.filter((t) => t !== "missing").map((tag) => ({ run, tag, points: [[1, 0, 1]] }))), missing: [] };
    },
    fetcher: async () => assert.fail("single fetch not expected"),
  });
  const got = await Promise.allSettled([store.get("a", "t1"), store.get("b", "t1"), store.get("a", "t2"), store.get("b", "t2"), store.get("a", "t1"), store.get("b", "missing")]);
  assert.equal(calls.length, 2); // {a,b} x {t1,t2} and b x {missing}
  assert.equal(got[0].value.tag, "t1");
  assert.equal(got[5].status, "rejected");
  assert.equal(got[5].reason.status, 404);
  assert.ok(store.has("b", "t2"));
  await store.get("a", "t1");
  assert.equal(calls.length, 2); // cached
});

test("another library's tag of our quantity is fetched for our chart's tag, per run (one loss chart)", async () => {
  const asked = [];
  const store = new SeriesStore({
    batchFetcher: async (runs, tags) => {
      asked.push(...runs.flatMap((run) => tags.map((tag) => `${run}:${tag}`)));
      return { series: runs.flatMap((run) => tags.map((tag) => ({ run, tag, points: [[1, 0, 1]] }))), missing: [] };
    },
    fetcher: async () => assert.fail("single fetch not expected"),
  });
  store.setAliases(new Map([["hf", new Map([["core/loss", "train/loss"]])]]));
  const [ours, theirs] = await Promise.all([store.get("ms", "core/loss"), store.get("hf", "core/loss")]);
  assert.deepEqual(asked.sort(), ["hf:train/loss", "ms:core/loss"]);
  assert.equal(ours.tag, "core/loss");
  assert.equal(theirs.tag, "train/loss");
  assert.ok(store.has("hf", "core/loss")); // cached under our chart's tag
});

test("a failed batch request fails every series it asked for, and the next get asks again", async () => {
  let calls = 0;
  const store = new SeriesStore({
    batchFetcher: async (runs, tags) => {
      calls += 1;
      if (calls === 1) throw new Error("server down");
      return { series: runs.flatMap((run) => tags.map((tag) => ({ run, tag, points: [] }))), missing: [] };
    },
    fetcher: async () => assert.fail("single fetch not expected"),
  });
  const got = await Promise.allSettled([store.get("a", "t"), store.get("b", "t")]);
  assert.deepEqual(got.map((g) => g.status), ["rejected", "rejected"]);
  assert.equal(got[0].reason.message, "server down");
  assert.equal((await store.get("a", "t")).run, "a");
  assert.equal(calls, 2);
});

test("ratio color scale: diverging around 1e-3 with special colors", () => {
  const s = makeScale("ratio");
  assert.equal(s.index(1e-3), 128);
  assert.equal(s.index(1e-5), 0);
  assert.equal(s.index(1e-9), 0);
  assert.equal(s.index(0.1), 255);
  assert.equal(s.index(0), SPECIAL.zero);
  assert.equal(s.index(NaN), SPECIAL.nonfinite);
  assert.equal(s.index(Infinity), SPECIAL.nonfinite);
  const lin = makeScale("linear", [new Float32Array([-1, 0, 1, NaN])]);
  assert.ok(lin.index(-1) < lin.index(1));
  assert.equal(lin.index(-1e9), 0);
  const log = makeScale("log", [new Float32Array([10, 11, 12])]);
  assert.ok(log.ticks.length >= 2);
});

test("module-path tree: groups, compression, natural order, depth", () => {
  const names = ["encoder.layers.10.w", "encoder.layers.2.w", "encoder.layers.2.b", "head.weight", "<img src=x>"];
  const tree = buildTree(names);
  assert.equal(treeDepth(tree), 2);
  const rows = visibleRows(tree, { names });
  assert.deepEqual(rows.map((r) => [r.kind, r.label, r.depth]), [
    ["layer", "<img src=x>", 0],
    ["group", "encoder.layers", 0],
    ["group", "2", 1],
    ["layer", "b", 2],
    ["layer", "w", 2],
    ["layer", "10.w", 1],
    ["layer", "head.weight", 0],
  ]);
  // encoder.layers.10 has one child: merged into a layer row "10.w"
  assert.equal(rows[5].label, "10.w");
  assert.equal(rows[5].fullName, "encoder.layers.10.w");
  const collapsed = visibleRows(tree, { names, depth: 0 });
  assert.deepEqual(collapsed.map((r) => r.label), ["<img src=x>", "encoder.layers", "head.weight"]);
  assert.deepEqual(collapsed[1].members.sort(), [0, 1, 2]);
  const toggled = visibleRows(tree, { names, depth: 0, toggled: new Map([["G:encoder.layers", true]]) });
  assert.equal(toggled.length, 5);
  const found = visibleRows(tree, { names, search: "LAYERS.2" });
  assert.deepEqual(found.map((r) => r.fullName), ["encoder.layers.2.b", "encoder.layers.2.w"]);
  assert.ok(compareNames("layers.2", "layers.10") < 0);
});

test("layer statistics, marks and sorting by mean", () => {
  // 4 layers x 3 steps: healthy, slow, fast, frozen
  const v = new Float32Array([1e-3, 1e-3, 1e-3, 1e-6, 1e-6, 1e-6, 0.5, 0.5, 0.5, 0, 0, 0]);
  const stats = layerStats(v, null, 4, 3, "ratio", { slow: -4, fast: -1 });
  assert.deepEqual(stats.map((s) => s.mark), [null, "slow", "fast", "frozen"]);
  assert.ok(Math.abs(stats[0].mean - 1e-3) < 1e-9);
  const names = ["a", "b", "c", "d"];
  const tree = buildTree(names);
  assert.deepEqual(visibleRows(tree, { names, stats, sort: "mean-desc" }).map((r) => r.label), ["c", "a", "b", "d"]);
  assert.deepEqual(visibleRows(tree, { names, stats, sort: "mean-asc" }).map((r) => r.label), ["d", "b", "a", "c"]);
  const withNan = layerStats(new Float32Array([1e-3, NaN]), null, 1, 2, "ratio", { slow: -4, fast: -1 });
  assert.deepEqual(layerStats(v, null, 4, 3, "ratio", { slow: -7, fast: 0 }).map((s) => s.mark), [null, null, null, "frozen"]);
  assert.equal(withNan[0].mark, "nonfinite");
});

test("group rows: geometric mean, NaN wins, missing where no member has a value", () => {
  const v = new Float32Array([1e-2, 1, NaN, 1e-4, 1, 5]);
  const missing = new Uint8Array([0, 1, 0, 0, 1, 0]);
  const agg = aggregateRow(v, missing, 3, [0, 1], "log");
  assert.ok(Math.abs(agg.values[0] - 1e-3) < 1e-9);
  assert.equal(agg.missing[1], 1);
  assert.ok(Number.isNaN(agg.values[2]) && agg.missing[2] === 0);
});

test("distribution bands from histogram rows", () => {
  const prep = prepareBands({ rows: [[2, 20, 10, 0, 1, 2, 3, 4, 5, 6, 7, 8], [1, 10, 10, -1, 0, 1, 2, 3, 4, 5, 6, NaN]] }, "step");
  assert.deepEqual(prep.xs, [1, 2]);
  assert.equal(prep.qs[4][1], 4);
  assert.equal(prep.qs[8][0], null);
});



// ---- heatmap step band (a health finding on a per-layer tag) ----
import { columnRange } from "../src/chart/layerTree.js";

test("columnRange maps a step range onto heatmap columns", () => {
  const steps = [10, 20, 30, 40, 50];
  assert.deepEqual(columnRange(steps, 20, 40), [1, 3]);
  assert.deepEqual(columnRange(steps, 14, 14), [1, 1]); // between two points: the column that holds it
  assert.deepEqual(columnRange(steps, 31, 45), [3, 4]);
  assert.deepEqual(columnRange(steps, 1, 5), [0, 0]);
  assert.deepEqual(columnRange(steps, 45, 1000), [4, 4]);
  assert.deepEqual(columnRange(steps, 10, 50), [0, 4]);
  assert.equal(columnRange(steps, 51, 60), null); // after the last column
  assert.equal(columnRange(steps, 40, 20), null);
  assert.equal(columnRange([], 1, 2), null);
});
