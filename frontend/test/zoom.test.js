// Zoom windows and resumed runs on the page's side: the scalars answer's restart / superseded fields, the points a
// window of N pixel columns asks for, and superseded segments placed on their run's time origin.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MAX_POINTS_LIMIT, batchUrl, normalizeScalars, pointsForWidth } from "../src/api/client.js";
import { prepareSeries } from "../src/chart/series.js";

test("a scalars answer keeps its restarts, superseded points and window", () => {
  const body = {
    run: "r",
    tag: "core/loss",
    total_points: 5,
    points: [[1, 10, 1], [2, 11, "NaN"]],
    interval: null,
    restarts: [{ step: 17, superseded_points: 8, source: "events.out.tfevents.2" }, { step: "x" }],
    superseded: [{ source: "a", points: [[17, 5, "Infinity"]] }],
    window: { x_min: 1, x_max: 2, width: 400, points_inside: 2 },
  };
  const got = normalizeScalars(body);
  assert.deepEqual(got.restarts, [{ step: 17, superseded_points: 8 }]);
  assert.deepEqual(got.superseded, [{ points: [[17, 5, Infinity]] }]);
  assert.equal(got.window.width, 400);
  assert.ok(Number.isNaN(got.points[1][2]));
  // An older server's answer: no such fields.
  const old = normalizeScalars({ run: "r", tag: "t", points: [] });
  assert.deepEqual([old.restarts, old.superseded, old.window], [[], [], null]);
});

test("a window of N columns asks for 5 points a column, within the route's limit", () => {
  assert.equal(pointsForWidth(800), 4002);
  assert.equal(pointsForWidth(0.4), 10);
  assert.equal(pointsForWidth(1e9), MAX_POINTS_LIMIT);
  assert.match(batchUrl(["a"], ["core/loss"]), /superseded=1/);
});

test("superseded segments share their run's time origin on a relative axis", () => {
  const run = prepareSeries({ points: [[1, 100, 1], [2, 101, 1]] }, { xAxis: "relative", smoothing: 0 });
  const part = prepareSeries({ points: [[2, 150, 3]] }, { xAxis: "relative", smoothing: 0 }, run.wall0);
  assert.deepEqual(run.xs, [0, 1]);
  assert.deepEqual(part.xs, [50]);
});
