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

export function fetchTags(run, opts) {
  return getJson("tags", run === undefined ? null : { run }, opts).then(normalizeTags);
}

export const DEFAULT_MAX_POINTS = 2000;
// The most points the scalars route sends in one answer (its max_points limit).
export const MAX_POINTS_LIMIT = 100000;

export function fetchScalars(run, tag, maxPoints = DEFAULT_MAX_POINTS, opts) {
  return getJson("scalars", { run, tag, max_points: maxPoints }, opts).then(normalizeScalars);
}

const DEFAULT_TIERS = ["core", "diagnostic", "debug", "other"];

/** {tiers, runs: {run: {tier: [{tag, display_name, kind, interval}]}}} with every field present. */
export function normalizeTags(body) {
  const tiers = Array.isArray(body && body.tiers) && body.tiers.length ? body.tiers.map(String) : DEFAULT_TIERS;
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
      }));
    }
    runs[run] = byTier;
  }
  return { tiers, runs };
}

/** Scalars response with numbers decoded: points [[step, wall_time, value]], interval rows or null. */
export function normalizeScalars(body) {
  return {
    run: String(body.run),
    tag: String(body.tag),
    tier: body.tier ? String(body.tier) : "other",
    display_name: body.display_name ? String(body.display_name) : String(body.tag),
    total_points: Number(body.total_points) || 0,
    downsampled: Boolean(body.downsampled),
    points: decodeRows(body.points),
    interval: body.interval ? decodeRows(body.interval) : null,
  };
}
