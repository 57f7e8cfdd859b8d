// Steps other writers marked for a run (the markers route): mindformers' abnormal global norms (on the
// gradient-norm charts) and its healthy / unhealthy checkpoints (on every chart's step axis). One request per run,
// kept for a few seconds.

import { getJson } from "./client.js";

const TTL_MS = 5000;
const cache = new Map(); // run -> {at, promise}

/** The markers of a run that belong on the chart of `tag`: [{step, kind, label, healthy}]. */
export function markersFor(run, tag) {
  const now = Date.now();
  let hit = cache.get(run);
  if (!hit || now - hit.at >= TTL_MS) {
    hit = { at: now, promise: getJson("markers", { run }).then((b) => (Array.isArray(b.markers) ? b.markers : [])).catch(() => []) };
    cache.set(run, hit);
  }
  return hit.promise.then((markers) => markers.filter((m) => !Array.isArray(m.tags) || m.tags.includes(tag)));
}
