// The table route: a layer x head (max_attention_logit) or layer x expert (expert_load) table at one step, folded by
// the server from mindformers' add_scalars key folders.

import { decodeNumber, getJson } from "./client.js";

/** A table answer with its numbers decoded: values[row][col] is a number (NaN / ±Infinity kept) or null (missing). */
export function normalizeTable(body) {
  const rows = Array.isArray(body.rows) ? body.rows.map(String) : [];
  const columns = Array.isArray(body.columns) ? body.columns.map(String) : [];
  const values = (Array.isArray(body.values) ? body.values : []).map((row) =>
    (Array.isArray(row) ? row : []).map((v) => (v === null || v === undefined ? null : decodeNumber(v))),
  );
  return {
    run: String(body.run),
    tag: String(body.tag),
    displayName: String(body.display_name || body.tag),
    column: String(body.column || "column"),
    rows,
    columns,
    steps: Array.isArray(body.steps) ? body.steps.map(Number) : [],
    step: Number(body.step),
    values,
    summary: body.summary || {},
  };
}

export function fetchTable(run, tag, step = null, opts) {
  const params = { run, tag };
  if (step !== null && step !== undefined) params.step = step;
  return getJson("table", params, opts).then(normalizeTable);
}
