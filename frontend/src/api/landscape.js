// Client of the landscape routes ("landscapes" listing, "landscape" data); relative URLs like every route.

import { decodeNumber, getJson } from "./client.js";

function numbers(list) {
  return Array.isArray(list) ? Float64Array.from(list, decodeNumber) : new Float64Array(0);
}

/** {run: [{tag, step, wall_time, source, method, dims, grid, complete, title}]} */
export function normalizeListing(body) {
  const out = {};
  const runs = (body && body.runs) || {};
  for (const run of Object.keys(runs)) {
    const list = Array.isArray(runs[run]) ? runs[run] : [];
    out[run] = list.map((e) => ({
      tag: String(e.tag),
      step: Number(e.step) || 0,
      wall_time: Number(e.wall_time) || 0,
      source: e.source ? String(e.source) : "",
      method: e.method ? String(e.method) : "unknown",
      dims: Number(e.dims) === 1 ? 1 : 2,
      grid: Array.isArray(e.grid) ? e.grid.map(Number) : [0, 0],
      complete: e.complete !== false,
      title: e.title ? String(e.title) : String(e.tag),
    }));
  }
  return out;
}

/** A landscape answer with numbers decoded: x (nx), y (ny), z (ny * nx, row-major, NaN where missing). */
export function normalizeLandscape(body) {
  const x = numbers(body.x);
  const y = numbers(body.y);
  const nx = x.length;
  const ny = Math.max(1, y.length);
  const z = new Float64Array(nx * ny).fill(NaN);
  const rows = Array.isArray(body.z) ? body.z : [];
  for (let j = 0; j < Math.min(ny, rows.length); j++) {
    const row = Array.isArray(rows[j]) ? rows[j] : [];
    for (let i = 0; i < Math.min(nx, row.length); i++) z[j * nx + i] = decodeNumber(row[i]);
  }
  const path = body.path
    ? {
        x: numbers(body.path.x),
        y: numbers(body.path.y),
        z: numbers(body.path.z),
        steps: Array.isArray(body.path.steps) ? body.path.steps.map(Number) : [],
      }
    : null;
  const c = body.center;
  return {
    run: String(body.run),
    tag: String(body.tag),
    step: Number(body.step) || 0,
    steps: Array.isArray(body.steps) ? body.steps.map(Number) : [],
    source: body.source ? String(body.source) : "",
    method: body.method ? String(body.method) : "unknown",
    title: body.title ? String(body.title) : String(body.tag),
    dims: Number(body.dims) === 1 || ny === 1 ? 1 : 2,
    complete: body.complete !== false,
    x,
    y: y.length ? y : Float64Array.of(0),
    z,
    nx,
    ny,
    path,
    center: c && c.x !== undefined ? { x: decodeNumber(c.x), y: decodeNumber(c.y), z: decodeNumber(c.z) } : null,
    unit: body.unit ? String(body.unit) : "step",
    axisLabels: Array.isArray(body.axis_labels) ? body.axis_labels.map(String) : ["", ""],
    explainedVarianceRatio: Array.isArray(body.explained_variance_ratio)
      ? body.explained_variance_ratio.map(decodeNumber)
      : null,
    metadata: body.metadata && typeof body.metadata === "object" ? body.metadata : {},
    missing: Number(body.missing) || 0,
  };
}

export function fetchLandscapes(run, opts) {
  return getJson("landscapes", run ? { run } : null, opts).then(normalizeListing);
}

export function fetchLandscape(run, tag, step, opts) {
  return getJson("landscape", { run, tag, step }, opts).then(normalizeLandscape);
}
