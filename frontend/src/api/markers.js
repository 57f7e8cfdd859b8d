// Steps other writers marked for a run (the markers route): mindformers' abnormal global norms (on the
// gradient-norm charts) and its healthy / unhealthy checkpoints (on every chart's step axis). One request per run,
// kept for a few seconds.

import { getJson } from "./client.js";

const TTL_MS = 5000;
const cache = new Map(); // run -> {at, promise, markers (once answered)}

function entry(run) {
  const now = Date.now();
  let hit = cache.get(run);
  if (!hit || now - hit.at >= TTL_MS) {
    const fresh = { at: now, markers: null };
    fresh.promise = getJson("markers", { run })
      .then((b) => (Array.isArray(b.markers) ? b.markers : []))
      .catch(() => [])
      .then((markers) => (fresh.markers = markers));
    cache.set(run, fresh);
    hit = fresh;
  }
  return hit;
}

const forTag = (markers, tag) => markers.filter((m) => !Array.isArray(m.tags) || m.tags.includes(tag));

/** The markers of a run that belong on the chart of `tag`: [{step, kind, label, healthy}]. */
export function markersFor(run, tag) {
  return entry(run).promise.then((markers) => forTag(markers, tag));
}

/** The markers of `run` for `tag` when its answer is here already, else null (and the request is on its way): a
 * chart draws its series at once and adds the markers when they come. */
export function markersIfKnown(run, tag) {
  const hit = entry(run);
  return hit.markers === null ? null : forTag(hit.markers, tag);
}
