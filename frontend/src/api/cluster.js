// Client of the cluster routes ("clusters" listing, "cluster" matrix of one metric, one rank's curve); relative
// URLs like every route.

import { base64ToBytes, decodeBf16Planes, decodeNumber, decodeRows, getJson } from "./client.js";

/** The clusters under the logdir: {clusters: [...]} as the route answers it. */
export function fetchClusters() {
  return getJson("clusters", {});
}

/** One metric of a cluster, its matrix decoded (see normalizeCluster). */
export async function fetchCluster(run, metric, maxSteps) {
  return normalizeCluster(await getJson("cluster", { run, metric, max_steps: maxSteps }));
}

/** One rank's curve of a metric: [[step, wall_time, value], ...] decoded. */
export async function fetchClusterRank(run, metric, rank) {
  const body = await getJson("cluster", { run, metric, rank });
  return decodeRows(body.points || []);
}

/** A cluster answer with its matrix decoded (rows = ranks in node order, cols = steps). */
export function normalizeCluster(body) {
  const shape = Array.isArray(body.shape) ? body.shape : [0, 0];
  const rows = Number(shape[0]) || 0;
  const cols = Number(shape[1]) || 0;
  let decoded = { values: new Float32Array(rows * cols).fill(NaN), missing: new Uint8Array(rows * cols).fill(1) };
  if (body.encoding === "bf16-planes" && typeof body.values === "string" && rows * cols > 0) {
    decoded = decodeBf16Planes(base64ToBytes(body.values), rows * cols);
  }
  const ranks = Array.isArray(body.ranks) ? body.ranks : [];
  return {
    run: String(body.run),
    metric: String(body.metric),
    title: String(body.display_name || body.metric),
    unit: body.unit ? String(body.unit) : "",
    scale: ["log", "linear"].includes(body.scale) ? body.scale : "linear",
    ranks: ranks.map((r) => ({
      rank: Number(r.rank),
      node: r.node ? String(r.node) : "",
      lastStep: r.last_step === null || r.last_step === undefined ? null : Number(r.last_step),
      refused: r.refused ? String(r.refused) : "",
    })),
    lastStep: body.last_step === null || body.last_step === undefined ? null : Number(body.last_step),
    steps: Array.isArray(body.steps) ? body.steps.map(decodeNumber) : [],
    totalSteps: Number(body.total_steps) || 0,
    downsampled: Boolean(body.downsampled),
    rows,
    cols,
    values: decoded.values,
    missing: decoded.missing,
  };
}
