// From a scalars response to what a line chart draws: x values for the chosen axis, raw and smoothed y, the
// interval band, non-finite markers. Pure functions (unit tested without a browser).

import { emaSmooth } from "./smoothing.js";

/**
 * @param {{points: number[][], interval: object[]|null}} data  decoded scalars response (named interval rows)
 * @param {{xAxis: "step"|"relative"|"wall", smoothing: number, logY: boolean}} opts
 * @param {number|null} wallStart  wall time of x = 0 on a relative axis (default: the series' first point)
 * @returns {{xs, raw, smoothed, steps, walls, values, nonfiniteXs, finiteCount, band, intervals}}
 *   intervals: Map step -> interval row ({min, mean, max, count, nonfinite}) of the steps that have one.
 *   raw / smoothed hold null where nothing can be drawn (non-finite, or <= 0 on a log axis).
 */
export function prepareSeries(data, opts, wallStart = null) {
  const points = (data.points || []).filter((p) => Number.isFinite(p[0]));
  const xAxis = opts.xAxis || "step";
  // wallStart: the time origin of a relative axis when this is a part of another series (a superseded segment).
  const wall0 = wallStart !== null ? wallStart : points.length ? firstFinite(points.map((p) => p[1])) : 0;
  // samples: mindformers' samples seen at a step (data.samplesOf, from the run's "<tag> vs samples" twin).
  const samplesOf = typeof data.samplesOf === "function" ? data.samplesOf : () => NaN;
  const xOf = (step, wall) =>
    xAxis === "step" ? step : xAxis === "relative" ? wall - wall0 : xAxis === "samples" ? samplesOf(step) : wall;

  const rows = points.map((p) => ({ x: xOf(p[0], p[1]), step: p[0], wall: p[1], value: p[2] }));
  rows.sort((a, b) => a.x - b.x || a.step - b.step);
  const xs = [];
  const steps = [];
  const walls = [];
  const values = [];
  for (const r of rows) {
    if (!Number.isFinite(r.x)) continue;
    if (xs.length && xs[xs.length - 1] === r.x) {
      // Two points at one x (a restarted run writing the same step again): the later one wins.
      steps[steps.length - 1] = r.step;
      walls[walls.length - 1] = r.wall;
      values[values.length - 1] = r.value;
      continue;
    }
    xs.push(r.x);
    steps.push(r.step);
    walls.push(r.wall);
    values.push(r.value);
  }

  const smoothedValues = emaSmooth(values, opts.smoothing || 0);
  const drawable = (v) => (Number.isFinite(v) && (!opts.logY || v > 0) ? v : null);
  const raw = values.map(drawable);
  const smoothed = smoothedValues.map(drawable);
  const nonfiniteXs = [];
  let finiteCount = 0;
  for (let i = 0; i < values.length; i++) {
    if (Number.isFinite(values[i])) finiteCount += 1;
    else nonfiniteXs.push(xs[i]);
  }

  let band = null;
  const intervals = new Map();
  if (Array.isArray(data.interval) && data.interval.length) {
    const wallOfStep = new Map();
    for (let i = 0; i < steps.length; i++) wallOfStep.set(steps[i], walls[i]);
    const bandRows = [];
    for (const row of data.interval) {
      const { step, min: lo, max: hi } = row;
      if (!Number.isFinite(step)) continue;
      intervals.set(step, row);
      let x;
      if (xAxis === "step") x = step;
      else if (wallOfStep.has(step)) x = xOf(step, wallOfStep.get(step));
      else continue;
      bandRows.push({ x, lo: drawable(lo), hi: drawable(hi) });
    }
    bandRows.sort((a, b) => a.x - b.x);
    if (bandRows.length) {
      band = { xs: bandRows.map((r) => r.x), lo: bandRows.map((r) => r.lo), hi: bandRows.map((r) => r.hi) };
    }
  }

  return { xs, raw, smoothed, steps, walls, values, smoothedValues, nonfiniteXs, finiteCount, band, intervals, wall0 };
}

function firstFinite(arr) {
  for (const v of arr) if (Number.isFinite(v)) return v;
  return 0;
}

/** Index in ascending xs of the value nearest to x (-1 if xs is empty). */
export function nearestIndex(xs, x) {
  const n = xs.length;
  if (!n) return -1;
  let lo = 0;
  let hi = n - 1;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xs[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  if (lo > 0 && Math.abs(xs[lo - 1] - x) <= Math.abs(xs[lo] - x)) return lo - 1;
  return lo;
}

// Overlaid runs whose typical values are this many times apart draw on a log axis (the smaller would lie flat on 0).
export const LOG_SPREAD = 100;

/**
 * How far apart overlaid series lie: the largest run median of the finite values over the smallest (e.g. 1000 for
 * learning rates 1e-3 and 1). null when fewer than two runs have finite values, or when some finite value is <= 0
 * (a log axis cannot draw it).
 * @param {{points: number[][]}[]} datas  decoded scalars responses
 */
export function runSpread(datas) {
  const medians = [];
  for (const d of datas) {
    const values = [];
    for (const p of (d && d.points) || []) if (Number.isFinite(p[2])) values.push(p[2]);
    if (!values.length) continue;
    if (values.some((v) => v <= 0)) return null;
    values.sort((a, b) => a - b);
    medians.push(values[values.length >> 1]);
  }
  if (medians.length < 2) return null;
  return Math.max(...medians) / Math.min(...medians);
}
