// The one client of the plugin's JSON routes.
//
// Every URL is relative: the page's <base href> points at the plugin's data route, so "runs" resolves to
// data/plugin/mindspore/runs, also under --path_prefix. Non-finite numbers arrive as the strings
// "NaN", "Infinity" and "-Infinity" and are decoded back into numbers here, once.

export class ApiError extends Error {
  constructor(message, { status = 0, code = 0, route = "" } = {}) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.route = route;
  }
}

const NON_FINITE = { NaN: NaN, Infinity: Infinity, "-Infinity": -Infinity };

/** A number from the wire: numbers as they are, "NaN" / "Infinity" / "-Infinity" decoded, anything else NaN. */
export function decodeNumber(v) {
  if (typeof v === "number") return v;
  if (v === null || v === undefined) return NaN;
  if (typeof v === "string" && Object.prototype.hasOwnProperty.call(NON_FINITE, v)) return NON_FINITE[v];
  const n = Number(v);
  return Number.isNaN(n) ? NaN : n;
}

/** Rows of numbers (points or interval rows) with every cell decoded. */
export function decodeRows(rows) {
  if (!Array.isArray(rows)) return [];
  return rows.map((row) => (Array.isArray(row) ? row.map(decodeNumber) : []));
}

/** JSON text to a value; tolerates bare NaN / Infinity tokens that some encoders emit outside strings. */
export function parseJson(text) {
  try {
    return JSON.parse(text);
  } catch (first) {
    const patched = text.replace(/(?<=[[,:]\s*)(-?Infinity|NaN)(?=\s*[\],}])/g, '"$1"');
    if (patched === text) throw first;
    return JSON.parse(patched);
  }
}

export function buildUrl(route, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value !== undefined && value !== null) query.set(key, String(value));
  }
  const qs = query.toString();
  return qs ? `${route}?${qs}` : route;
}

/** GETs a route (relative URL) and returns its decoded JSON; throws ApiError with the server's message. */
export async function getJson(route, params, { signal, fetchImpl } = {}) {
  const url = buildUrl(route, params);
  const doFetch = fetchImpl || globalThis.fetch.bind(globalThis);
  let response;
  try {
    response = await doFetch(url, { credentials: "same-origin", headers: { Accept: "application/json" }, signal });
  } catch (e) {
    if (e && e.name === "AbortError") throw e;
    throw new ApiError(`Could not reach the TensorBoard server (${route}): ${e && e.message ? e.message : e}`, {
      route,
    });
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? parseJson(text) : null;
  } catch (e) {
    body = null;
  }
  if (!response.ok) {
    const err = body && body.error ? body.error : null;
    const message = err && err.message ? String(err.message) : `HTTP ${response.status} from ${route}`;
    throw new ApiError(message, { status: response.status, code: (err && err.code) || response.status, route });
  }
  if (body === null) throw new ApiError(`The server sent no JSON for ${route}`, { status: response.status, route });
  return body;
}

export function fetchRuns(opts) {
  return getJson("runs", null, opts).then((body) => (Array.isArray(body.runs) ? body.runs.map(String) : []));
}

export function fetchStatus(opts) {
  return getJson("status", null, opts);
}

/** The page's part of the data contract (tier titles, tag order, expected series, axes, thresholds). */
export function fetchContract(opts) {
  return getJson("contract", null, opts);
}

export function fetchTags(run, opts) {
  return getJson("tags", run === undefined ? null : { run }, opts).then(normalizeTags);
}

export const DEFAULT_MAX_POINTS = 2000;
// The most points the scalars route sends in one answer (its max_points limit).
export const MAX_POINTS_LIMIT = 100000;

/**
 * One series. view: {xMin, xMax, width} asks for a zoom window (steps xMin..xMax on width pixel columns: every
 * column's first, last, lowest and highest point and first NaN/Inf, computed by the server over every point).
 */
export function fetchScalars(run, tag, maxPoints = DEFAULT_MAX_POINTS, opts, view = null) {
  const params = { run, tag, max_points: maxPoints, superseded: 1 };
  if (view) {
    params.x_min = Number.isFinite(view.xMin) ? Math.floor(view.xMin) : undefined;
    params.x_max = Number.isFinite(view.xMax) ? Math.ceil(view.xMax) : undefined;
    params.width = Number.isFinite(view.width) ? Math.max(1, Math.round(view.width)) : undefined;
  }
  return getJson("scalars", params, opts).then(normalizeScalars);
}

/** The max_points that lets a window of `width` pixel columns come back whole (5 points a column, plus 2). */
export function pointsForWidth(width) {
  return Math.min(MAX_POINTS_LIMIT, Math.max(10, 5 * Math.round(width) + 2));
}

/** {tiers, runs: {run: {tier: [{tag, display_name, kind, interval, family, layers, source, same_as}]}}}, every field
 * present. */
export function normalizeTags(body) {
  const tiers = Array.isArray(body && body.tiers) ? body.tiers.map(String) : [];
  const runs = {};
  const rawRuns = (body && body.runs) || {};
  for (const run of Object.keys(rawRuns)) {
    const byTier = {};
    for (const tier of tiers) {
      const list = Array.isArray(rawRuns[run][tier]) ? rawRuns[run][tier] : [];
      byTier[tier] = list.map((t) => ({
        tag: String(t.tag),
        display_name: t.display_name ? String(t.display_name) : String(t.tag),
        kind: t.kind ? String(t.kind) : "scalar",
        interval: Boolean(t.interval),
        // per-parameter scalar families (local_norm/<param>): the family's layers tag, e.g. "local_norm/*"
        family: t.family ? String(t.family) : null,
        // kind "layers": number of layers and where they come from ("vector" or "family")
        layers: Number.isFinite(t.layers) ? t.layers : null,
        source: t.source ? String(t.source) : null,
        // mindformers: the tag's "<tag> vs samples" twin (a samples x axis), the loss it is a part of, per-rank values
        samples_tag: t.samples_tag ? String(t.samples_tag) : null,
        part_of: t.part_of ? String(t.part_of) : null,
        per_rank: Boolean(t.per_rank),
        // another library's tag of one of our quantities (train/loss): our tag, whose chart draws it
        same_as: t.same_as ? String(t.same_as) : null,
      }));
    }
    runs[run] = byTier;
  }
  return { tiers, runs };
}

/** The interval statistics of a scalar by name: one {step, min, mean, max, count, nonfinite} per recorded point
 * (the rows of the route, in the order of the plugin's INTERVAL_FIELDS after the step). */
export function decodeInterval(rows) {
  return decodeRows(rows).map(([step, min, mean, max, count, nonfinite]) => ({ step, min, mean, max, count, nonfinite }));
}

/** Scalars response with numbers decoded: points [[step, wall_time, value]], named interval rows or null. */
export function normalizeScalars(body) {
  return {
    run: String(body.run),
    tag: String(body.tag),
    tier: body.tier ? String(body.tier) : "other",
    display_name: body.display_name ? String(body.display_name) : String(body.tag),
    total_points: Number(body.total_points) || 0,
    downsampled: Boolean(body.downsampled),
    points: decodeRows(body.points),
    interval: body.interval ? decodeInterval(body.interval) : null,
    // Where the run went back to an earlier step (a resume from a checkpoint), and the points that hid.
    restarts: Array.isArray(body.restarts)
      ? body.restarts.map((r) => ({ step: decodeNumber(r.step), superseded_points: Number(r.superseded_points) || 0 })).filter((r) => Number.isFinite(r.step))
      : [],
    superseded: Array.isArray(body.superseded) ? body.superseded.map((p) => ({ points: decodeRows(p.points) })) : [],
    window: body.window && typeof body.window === "object" ? { ...body.window } : null,
  };
}

// Longest query string sent in one batch request (servers accept far more; this keeps logs readable).
export const MAX_BATCH_URL = 6000;
// At most this many (run, tag) pairs per batch (the server accepts 2000).
export const MAX_BATCH_PAIRS = 400;

/**
 * Several scalar series in one request: every (run, tag) pair of runs x tags.
 * @returns {Promise<{series: object[], missing: [string, string][]}>}  series as normalizeScalars returns them
 */
export function fetchScalarsBatch(runs, tags, maxPoints = DEFAULT_MAX_POINTS, opts) {
  return getJson(batchUrl(runs, tags, maxPoints), null, opts).then((body) => ({
    series: Array.isArray(body.series) ? body.series.map(normalizeScalars) : [],
    missing: Array.isArray(body.missing) ? body.missing.map((m) => [String(m[0]), String(m[1])]) : [],
  }));
}

export function batchUrl(runs, tags, maxPoints = DEFAULT_MAX_POINTS) {
  const query = new URLSearchParams();
  for (const run of runs) query.append("run", String(run));
  for (const tag of tags) query.append("tag", String(tag));
  query.set("max_points", String(maxPoints));
  query.set("superseded", "1"); // the chart hides them unless the setting shows them
  return "scalars_batch?" + query.toString();
}

/** Bit pattern of a cell without a recorded value in a "bf16-planes" block (a NaN that no float rounds to). */
export const MISSING_BITS = 0x7fff;

/** The bytes of a base64 text (a "bf16-planes" block). */
export function base64ToBytes(text) {
  const bin = atob(text);
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/**
 * Decodes a "bf16-planes" block: n high bytes then n low bytes of bfloat16 values (float32 bits hi<<24 | lo<<16).
 * @returns {{values: Float32Array, missing: Uint8Array}}  missing[i] = 1 where no value was recorded
 */
export function decodeBf16Planes(bytes, n) {
  const bits = new Uint32Array(n);
  const missing = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const hi = bytes[i];
    const lo = bytes[n + i];
    if (hi === 0x7f && lo === 0xff) missing[i] = 1;
    bits[i] = ((hi << 24) | (lo << 16)) >>> 0;
  }
  return { values: new Float32Array(bits.buffer), missing };
}

/** A layers answer with its matrix decoded: values[row * cols + col] (rows = layers, cols = steps). */
export function normalizeLayers(body) {
  const shape = Array.isArray(body.shape) ? body.shape : [0, 0];
  const rows = Number(shape[0]) || 0;
  const cols = Number(shape[1]) || 0;
  let decoded = { values: new Float32Array(rows * cols).fill(NaN), missing: new Uint8Array(rows * cols).fill(1) };
  if (body.encoding === "bf16-planes" && typeof body.values === "string" && rows * cols > 0) {
    decoded = decodeBf16Planes(base64ToBytes(body.values), rows * cols);
  }
  const summary = body.summary || {};
  return {
    run: String(body.run),
    tag: String(body.tag),
    tier: body.tier ? String(body.tier) : "other",
    display_name: body.display_name ? String(body.display_name) : String(body.tag),
    source: body.source ? String(body.source) : "vector",
    scale: ["ratio", "log", "linear"].includes(body.scale) ? body.scale : "log",
    layers: Array.isArray(body.layers) ? body.layers.map(String) : [],
    members: Array.isArray(body.members) ? body.members.map(String) : null,
    steps: Array.isArray(body.steps) ? body.steps.map(decodeNumber) : [],
    wall_times: Array.isArray(body.wall_times) ? body.wall_times.map(decodeNumber) : [],
    total_steps: Number(body.total_steps) || 0,
    downsampled: Boolean(body.downsampled),
    rows,
    cols,
    values: decoded.values,
    missing: decoded.missing,
    summary: {
      finite_min: decodeNumber(summary.finite_min),
      finite_max: decodeNumber(summary.finite_max),
      nonfinite: Number(summary.nonfinite) || 0,
      missing: Number(summary.missing) || 0,
    },
  };
}

export const DEFAULT_MAX_STEPS = 5000;

export function fetchLayers(run, tag, maxSteps = DEFAULT_MAX_STEPS, opts) {
  return getJson("layers", { run, tag, max_steps: maxSteps }, opts).then(normalizeLayers);
}

/** One layer at full precision, in the shape of a scalars answer (points [[step, wall_time, value]]). */
export function fetchLayer(run, tag, layer, opts) {
  return getJson("layers", { run, tag, layer }, opts).then((body) => ({
    run: String(body.run),
    tag: String(body.tag),
    layer: String(body.layer),
    total_points: Array.isArray(body.points) ? body.points.length : 0,
    downsampled: false,
    points: decodeRows(body.points),
    interval: null,
  }));
}

/** Histogram quantile bands: rows [[step, wall_time, count, q0..q8]] with numbers decoded. */
export function normalizeHistograms(body) {
  return {
    run: String(body.run),
    tag: String(body.tag),
    tier: body.tier ? String(body.tier) : "other",
    display_name: body.display_name ? String(body.display_name) : String(body.tag),
    quantiles: Array.isArray(body.quantiles) ? body.quantiles.map(decodeNumber) : [],
    total_steps: Number(body.total_steps) || 0,
    downsampled: Boolean(body.downsampled),
    rows: decodeRows(body.rows),
    // MindSpore histograms' NaN / +Inf / -Inf counts: [[step, nan, pos_inf, neg_inf]] for the shown steps.
    nonfinite: Array.isArray(body.nonfinite) ? body.nonfinite.filter(Array.isArray).map((r) => r.map((v) => Number(v) || 0)) : [],
    nonfinite_steps: Number(body.nonfinite_steps) || 0,
    // A report that kept fewer steps than the tab would (its size budget): the most steps a chart keeps there.
    report_budget: Number(body.report_budget) || 0,
  };
}

export function fetchHistograms(run, tag, opts) {
  return getJson("histograms", { run, tag }, opts).then(normalizeHistograms);
}

const LEVELS = ["info", "warn", "error"];
const STATUSES = ["ok", "warn", "error"];

/** One finding with every field present; `followOns` (the findings nested under it) one level deep. */
function normalizeFinding(f, nested) {
  const steps = Array.isArray(f.steps) ? f.steps.map(decodeNumber) : [];
  const first = Number.isFinite(steps[0]) ? steps[0] : null;
  const last = Number.isFinite(steps[1]) ? steps[1] : first;
  return {
    rule: String(f.rule || ""),
    level: LEVELS.includes(f.level) ? f.level : "info",
    message: String(f.message || ""),
    tag: f.tag ? String(f.tag) : "",
    steps: first === null ? null : [first, last],
    layers: Array.isArray(f.layers) ? f.layers.map(String) : [],
    source: f.source ? String(f.source) : "",
    action: f.action ? String(f.action) : "",
    followOns: !nested && Array.isArray(f.follow_ons) ? f.follow_ons.map((g) => normalizeFinding(g, true)) : [],
  };
}

/** A health answer with every field present: {runs: [{run, status, findings: [{rule, level, message, tag, steps,
 * layers, source, action, followOns}]}]}. */
export function normalizeHealth(body) {
  const runs = Array.isArray(body && body.runs) ? body.runs : [];
  return {
    runs: runs.map((r) => ({
      run: String(r.run),
      status: STATUSES.includes(r.status) ? r.status : "ok",
      findings: (Array.isArray(r.findings) ? r.findings : []).map((f) => normalizeFinding(f, false)),
    })),
  };
}

/** The health check of the loaded runs (all of them, or one run). */
export function fetchHealth(run, opts) {
  return getJson("health", run === undefined ? null : { run }, opts).then(normalizeHealth);
}
