// The client of the `compare` route: a run against its reference (README "Check a port from PyTorch").

import { getJson } from "./client.js";

/** The comparison of `run` against `reference`; `noise` (a run) and `mapping` (the Compare section's edits, an
 * object: {pairs, ignore}) optional. */
export function fetchCompare({ run, reference, noise = "", mapping = null }, opts) {
  const params = { run, reference };
  if (noise) params.noise = noise;
  if (mapping) params.mapping = JSON.stringify(mapping);
  return getJson("compare", params, opts);
}
