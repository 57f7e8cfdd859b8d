// Pure helpers of the landscape view: grouping the listing by tag, the one-line description of a landscape.

import { formatNumber } from "../../../chart/landscapeMath.js";

/** Landscapes of one run grouped by tag: [{tag, title, method, source, dims, entries: [entry by step]}]. */
export function groupByTag(entries) {
  const groups = new Map();
  for (const e of entries || []) {
    let g = groups.get(e.tag);
    if (!g) {
      g = { tag: e.tag, title: e.title, method: e.method, source: e.source, dims: e.dims, entries: [] };
      groups.set(e.tag, g);
    }
    g.entries.push(e);
  }
  for (const g of groups.values()) g.entries.sort((a, b) => a.step - b.step || a.wall_time - b.wall_time);
  const order = { pca: 0, random: 1, interpolation: 2 };
  return [...groups.values()].sort(
    (a, b) => (a.source === b.source ? 0 : a.source === "mindspore" ? 1 : -1) || (order[a.method] ?? 9) - (order[b.method] ?? 9) || (a.tag < b.tag ? -1 : a.tag > b.tag ? 1 : 0),
  );
}

/** One line describing a landscape (method, source, grid, samples, explained variance, ...). */
export function describe(ls) {
  const m = ls.metadata || {};
  const parts = [];
  parts.push(ls.source === "mindspore" ? "MindSpore SummaryLandscape" : "tb-mindspore");
  parts.push(ls.dims === 1 ? `${ls.nx} points` : `${ls.nx} × ${ls.ny} grid`);
  if (m.num_samples) parts.push(`${m.num_samples} samples`);
  if (ls.method === "random") {
    if (m.normalization) parts.push(`${m.normalization}-normalized`);
    if (m.bias_bn) parts.push(`biases/BN ${m.bias_bn === "ignore" ? "not perturbed" : "included"}`);
    if (m.seed !== undefined) parts.push(`seed ${m.seed}`);
  }
  if (ls.explainedVarianceRatio && ls.explainedVarianceRatio.length >= 2) {
    const [a, b] = ls.explainedVarianceRatio;
    parts.push(`explained variance ${(100 * a).toFixed(1)} % + ${(100 * b).toFixed(1)} %`);
  }
  if (ls.method === "interpolation" && m.endpoints) parts.push(`from ${m.endpoints.a} to ${m.endpoints.b}`);
  if (ls.center && Number.isFinite(ls.center.z)) parts.push(`centre loss ${formatNumber(ls.center.z)}`);
  if (m.seconds_per_point) parts.push(`${formatNumber(m.seconds_per_point * 1000)} ms per point`);
  return parts.join(" · ");
}

/** The markers a landscape's views draw, in legend order: "start" / "end" of the training path, the grid's
 * "minimum" (2-D), the "centre" cross (2-D, shown when there is no path). Only these are listed in the legend. */
export function drawnMarkers(ls) {
  const finite = (v) => Number.isFinite(v);
  const path = ls.path;
  const out = [];
  if (ls.dims === 1) {
    if (path && path.x.length >= 2 && finite(path.z[0])) out.push("start");
    if (path && path.x.length >= 2 && finite(path.z[path.z.length - 1])) out.push("end");
    return out;
  }
  const hasPath = Boolean(path && path.x.some((x, k) => finite(x) && finite(path.y[k])));
  if (hasPath) out.push("start", "end");
  if (ls.z && Array.prototype.some.call(ls.z, finite)) out.push("minimum");
  if (!path && ls.center && finite(ls.center.x) && finite(ls.center.y)) out.push("centre");
  return out;
}
