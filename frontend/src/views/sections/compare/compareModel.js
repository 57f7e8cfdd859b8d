// What the Compare section shows, from a `compare` answer, as pure functions (unit tested without a browser): the
// verdict line, the order of partings, the chart series of a curve, the layer table and the mapping edits sent back
// to the route (`mapping=` JSON: {"pairs": {run layer: [reference layers]}, "ignore": [regex]}).

export const QUANTITY_LABELS = {
  learning_rate: "Learning rate",
  loss: "Loss",
  grad_norm: "Global gradient norm",
  layer_grad_norm: "Layer gradient norm",
  update_ratio: "Update ratio",
  weight_norm: "Global weight norm",
  layer_weight_norm: "Layer weight norm",
  eval_loss: "Eval loss",
};

export const LAYER_QUANTITIES = ["layer_grad_norm", "update_ratio", "layer_weight_norm"];

export function quantityLabel(q) {
  return QUANTITY_LABELS[q] || String(q);
}

function num(v) {
  if (v === "NaN") return NaN;
  if (v === "Infinity") return Infinity;
  if (v === "-Infinity") return -Infinity;
  return typeof v === "number" ? v : Number(v);
}

export function formatNumber(v) {
  const x = num(v);
  if (!Number.isFinite(x)) return String(v);
  if (x === 0) return "0";
  const a = Math.abs(x);
  return a >= 1e-3 && a < 1e4 ? String(Number(x.toPrecision(3))) : x.toExponential(2);
}

function layerList(layers, limit = 4) {
  if (!Array.isArray(layers) || !layers.length) return "";
  const more = layers.length > limit ? ` +${layers.length - limit}` : "";
  return ` (${layers.slice(0, limit).join(", ")}${more})`;
}

/** The verdict in one line, e.g. "Part at step 3: update ratio parts first (fc1.bias, fc2.bias)". */
export function verdictText(result) {
  if (!result) return "";
  if (result.verdict === "match") {
    const a = result.alignment || {};
    return `Match: every common quantity stays within its tolerance (steps ${a.first_step}–${a.last_step}).`;
  }
  if (result.verdict !== "part" || !result.first) return "Nothing to compare.";
  const f = result.first;
  return `Part at step ${f.step}: ${quantityLabel(f.quantity).toLowerCase()} parts first${layerList(f.layers)}.`;
}

/** Rows of the order table: [{step, quantity, label, layers, difference, tolerance}]. */
export function orderRows(result) {
  return ((result && result.order) || []).map((e) => ({
    step: e.step,
    quantity: e.quantity,
    label: quantityLabel(e.quantity),
    layers: layerList(e.layers, 3).replace(/^ \(|\)$/g, ""),
    difference: formatNumber(e.difference),
    tolerance: formatNumber(e.tolerance),
  }));
}

/** A curve of the answer as LineChart inputs: the two runs' values, and the relative difference with its
 * tolerance. */
export function curveSeries(curve, names, colors) {
  const steps = curve.steps || [];
  const points = (values) => steps.map((s, i) => [s, 0, num(values[i])]);
  const wrap = (run, color, values) => ({
    run,
    color,
    data: { run, tag: curve.column, total_points: steps.length, downsampled: false, points: points(values), interval: null },
  });
  return {
    values: [wrap(names.run, colors.run, curve.run), wrap(names.reference, colors.reference, curve.reference)],
    difference: [wrap("relative difference", colors.run, curve.difference), wrap("tolerance", colors.tolerance, curve.tolerance)],
  };
}

/** The layer table: one row per mapped layer, its first parting step per layer quantity ("" when it matches),
 * parted layers first (earliest step first). */
export function layerRows(result) {
  const rows = ((result && result.layer_table) || []).map((r) => {
    const cells = {};
    let first = null;
    for (const q of LAYER_QUANTITIES) {
      const v = r.quantities && r.quantities[q];
      const step = v && v.first_step !== null && v.first_step !== undefined ? Number(v.first_step) : null;
      cells[q] = v ? { step, max: formatNumber(v.max_difference) } : null;
      if (step !== null && (first === null || step < first)) first = step;
    }
    return { layer: r.layer, runLayers: (r.run_layers || []).join(" + "), cells, first };
  });
  rows.sort((a, b) => (a.first === null) - (b.first === null) || (a.first || 0) - (b.first || 0));
  return rows;
}

/** The mapping JSON for the route from the user's edits: pairs chosen for unmapped run layers, and the run layers
 * of removed pairs left out (exact names: the route takes no regular expressions). */
export function mappingFromEdits(edits) {
  const pairs = {};
  for (const [run, refs] of Object.entries((edits && edits.pairs) || {})) {
    const list = (Array.isArray(refs) ? refs : [refs]).filter((r) => typeof r === "string" && r);
    if (list.length) pairs[run] = list;
  }
  const ignore = ((edits && edits.removed) || []).map(String);
  const out = {};
  if (Object.keys(pairs).length) out.pairs = pairs;
  if (ignore.length) out.ignore = ignore;
  return Object.keys(out).length ? out : null;
}

/** The same edits as a mapping file for `tb-mindspore compare --mapping` (whose ignore entries are regular
 * expressions: the names escaped). */
export function mappingFile(edits) {
  const m = mappingFromEdits(edits) || { pairs: {} };
  if (m.ignore) m.ignore = m.ignore.map((name) => `^${escapeRegex(name)}$`);
  return m;
}

export function escapeRegex(text) {
  return String(text).replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
