// The samples x axis: step -> samples seen, from the samples route (mindformers' "<tag> vs samples" twins). One
// request per run, kept for a few seconds; between two recorded pairs the count is interpolated linearly, past the
// last one extrapolated with the last pair's samples per step.

import { getJson } from "./client.js";

const TTL_MS = 5000;
const cache = new Map(); // run -> {at, promise}

/** A function step -> samples (NaN where nothing is known) from pairs [[step, samples], ...] sorted by step. */
export function samplesFunction(points) {
  const steps = points.map((p) => Number(p[0]));
  const samples = points.map((p) => Number(p[1]));
  const n = steps.length;
  if (!n) return () => NaN;
  return (step) => {
    if (!Number.isFinite(step)) return NaN;
    let lo = 0;
    let hi = n - 1;
    if (step <= steps[0]) return steps[0] > 0 ? (samples[0] * step) / steps[0] : samples[0];
    if (step >= steps[hi]) return steps[hi] > 0 ? (samples[hi] * step) / steps[hi] : samples[hi];
    while (hi - lo > 1) {
      const mid = (lo + hi) >> 1;
      if (steps[mid] <= step) lo = mid;
      else hi = mid;
    }
    const f = (step - steps[lo]) / (steps[hi] - steps[lo]);
    return samples[lo] + f * (samples[hi] - samples[lo]);
  };
}

/** The step -> samples function of a run, or null when it has no "<tag> vs samples" series. */
export function samplesOfRun(run) {
  const now = Date.now();
  const hit = cache.get(run);
  if (hit && now - hit.at < TTL_MS) return hit.promise;
  const promise = getJson("samples", { run })
    .then((body) => samplesFunction(Array.isArray(body.points) ? body.points : []))
    .catch(() => null);
  cache.set(run, { at: now, promise });
  return promise;
}
