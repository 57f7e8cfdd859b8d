// Unit tests of run grouping, the store's group series and the report's route answers (node --test test/).
import assert from "node:assert/strict";
import { test } from "node:test";

import { NO_MATCH, NO_VALUE, aggregateSeries, groupRuns, regexKey } from "../src/base/grouping.js";
import { answer } from "../src/api/report.js";
import { SeriesStore } from "../src/api/store.js";
import { compileFilter } from "../src/views/runSelector.js";

test("a regex groups runs by its first capture, else the whole match; numbers sort numerically", () => {
  assert.equal(regexKey(/lr([0-9.]+)/, "run_lr0.01_seed1"), "0.01");
  assert.equal(regexKey(/seed\d/, "run_lr0.01_seed1"), "seed1");
  assert.equal(regexKey(/x(a)?(b)/, "xb"), "b");
  assert.equal(regexKey(/nope/, "run"), null);
  const runs = ["lr10_s1", "lr2_s1", "lr10_s2", "lr2_s2", "other"];
  const groups = groupRuns(runs, { by: "regex", regex: /lr(\d+)/ });
  assert.deepEqual(groups.map((g) => g.label), ["2", "10", NO_MATCH]);
  assert.deepEqual(groups[1].runs, ["lr10_s1", "lr10_s2"]);
  assert.equal(groups[2].id, `[group] ${NO_MATCH} (1 run)`);
});

test("a hyperparameter groups runs by its value; runs without it last", () => {
  const hparams = { a: { lr: 0.1, bs: 32 }, b: { lr: 0.01 }, c: { lr: 0.1 }, d: {} };
  const groups = groupRuns(["a", "b", "c", "d"], { by: "hparam", name: "lr", hparams });
  assert.deepEqual(groups.map((g) => [g.label, g.runs]), [["lr=0.01", ["b"]], ["lr=0.1", ["a", "c"]], [NO_VALUE, ["d"]]]);
});

test("a group's series: mean of its runs with min / max, interpolated where steps differ, NaN counted", () => {
  const a = { tier: "core", display_name: "loss", points: [[0, 100, 1], [10, 110, 3], [20, 120, NaN]] };
  const b = { points: [[0, 200, 3], [5, 205, 5]] };
  const g = aggregateSeries("g", "core/loss", [a, b, null]);
  assert.deepEqual(g.points.map((p) => p[0]), [0, 5, 10, 20]);
  assert.deepEqual(g.points.map((p) => p[2]).slice(0, 3), [2, 3.5, 3]); // step 5: a interpolated to 2, b 5
  assert.deepEqual(g.interval[0], { step: 0, min: 1, mean: 2, max: 3, count: 2, nonfinite: 0 });
  assert.equal(g.interval[1].min, 2);
  assert.equal(g.interval[1].max, 5);
  assert.equal(g.interval[2].count, 1); // b ends at step 5: no extrapolation
  assert.ok(Number.isNaN(g.points[3][2]));
  assert.equal(g.interval[3].nonfinite, 1);
  assert.equal(g.points[0][1], 150); // mean wall time
  assert.equal(g.tier, "core");
  assert.equal(g.members, 2);
  const thin = aggregateSeries("g", "t", [{ points: Array.from({ length: 5000 }, (_, i) => [i, i, i]) }], 100);
  assert.equal(thin.points.length, 100);
  assert.equal(thin.points[99][0], 4999);
});

test("the store answers a group from its runs' series, fetched in one batch", async () => {
  const calls = [];
  const store = new SeriesStore({
    batchFetcher: async (runs, tags) => {
      calls.push(runs.length * tags.length);
      return {
        series: runs.filter((r) => r !== "c").flatMap((run) => tags.map((tag) => ({ run, tag, points: [[1, 0, run === "a" ? 1 : 3]] }))),
        missing: [],
      };
    },
    fetcher: async () => assert.fail("single fetch not expected"),
  });
  store.setGroups([{ id: "G", runs: ["a", "b", "c"] }]);
  const g = await store.get("G", "loss");
  assert.deepEqual(g.points, [[1, 0, 2]]);
  assert.deepEqual(calls, [3]);
  assert.ok(store.has("a", "loss"));
  store.retain(() => false); // groups are kept by setGroups, not by the run list
  assert.ok(store.has("G", "loss"));
  store.setGroups([{ id: "G", runs: ["a"] }]); // other runs: computed again
  assert.equal(store.has("G", "loss"), false);
  await assert.rejects(() => (store.setGroups([{ id: "H", runs: ["c"] }]), store.get("H", "loss")), /no run of H/);
});

test("plain-text search matches literally", () => {
  assert.equal(compileFilter("(", false).valid, true);
  assert.ok(compileFilter("a(1)", false).regex.test("run_A(1)"));
  assert.equal(compileFilter("a.c", false).regex.test("abc"), false);
});

test("a report answers the routes from its inlined data", () => {
  const s = (run, tag) => ({ run, tag, points: [[1, 0, 1]] });
  const data = {
    routes: { runs: { runs: ["a", "__proto__"] }, health: { runs: [{ run: "a" }, { run: "b" }] }, landscapes: { runs: { a: [{ tag: "l" }] } } },
    scalars: { a: { "core/loss": s("a", "core/loss") } },
    layers: { a: { "debug/update_ratio": { run: "a" } } },
    landscape: { a: { l: { last: { step: 9 }, 3: { step: 3 } } } },
  };
  assert.deepEqual(answer(data, "runs").body, { runs: ["a", "__proto__"] });
  const batch = answer(data, "scalars_batch?run=a&run=b&tag=core%2Floss&max_points=2000").body;
  assert.deepEqual(batch.series, [s("a", "core/loss")]);
  assert.deepEqual(batch.missing, [["b", "core/loss"]]);
  assert.equal(answer(data, "layers?run=a&tag=debug%2Fupdate_ratio&max_steps=5000").status, 200);
  assert.equal(answer(data, "layers?run=a&tag=debug%2Fupdate_ratio&layer=x").status, 404);
  assert.equal(answer(data, "landscape?run=a&tag=l").body.step, 9);
  assert.equal(answer(data, "landscape?run=a&tag=l&step=3").body.step, 3);
  assert.deepEqual(answer(data, "landscapes?run=b").body, { runs: {} });
  assert.deepEqual(answer(data, "health?run=b").body.runs, [{ run: "b" }]);
  assert.equal(answer(data, "scalars?run=__proto__&tag=x").status, 404);
  const missing = answer(data, "media");
  assert.equal(missing.status, 404);
  assert.match(missing.body.error.message, /not part of this report/);
});
