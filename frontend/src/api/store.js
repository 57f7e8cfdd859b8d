// Cache of scalar series, keyed by (run, tag). Requests made within one turn of the event loop are merged into
// batch requests (the scalars_batch route: one request for many runs x tags), with a limit on requests in flight
// (the TensorBoard server is often on the training machine; a page with 30 charts must not fire 60 requests).

import {
  ApiError,
  DEFAULT_MAX_POINTS,
  MAX_BATCH_PAIRS,
  MAX_BATCH_URL,
  MAX_POINTS_LIMIT,
  fetchScalars,
  fetchScalarsBatch,
} from "./client.js";
import { aggregateSeries } from "../base/grouping.js";

/**
 * Groups (run, tag) pairs into batch requests whose runs x tags cross product is exactly the pairs asked for:
 * runs that ask for the same set of tags share a request; long lists are cut so that no request has more than
 * maxPairs pairs or a query string longer than maxUrl characters.
 * @param {[string, string][]} pairs
 * @returns {{runs: string[], tags: string[]}[]}
 */
export function planBatches(pairs, { maxPairs = MAX_BATCH_PAIRS, maxUrl = MAX_BATCH_URL } = {}) {
  const tagsByRun = new Map();
  for (const [run, tag] of pairs) {
    if (!tagsByRun.has(run)) tagsByRun.set(run, new Set());
    tagsByRun.get(run).add(tag);
  }
  const groups = new Map(); // tag-set key -> {runs, tags}
  for (const [run, tagSet] of tagsByRun) {
    const tags = [...tagSet].sort();
    const key = JSON.stringify(tags);
    if (!groups.has(key)) groups.set(key, { runs: [], tags });
    groups.get(key).runs.push(run);
  }
  const cost = (s) => encodeURIComponent(s).length + 5; // "&run=" / "&tag="
  const out = [];
  for (const { runs, tags } of groups.values()) {
    // Cut runs first (each chunk of runs takes every tag), then tags.
    let runChunks = [[]];
    let used = 0;
    for (const run of runs) {
      const last = runChunks[runChunks.length - 1];
      if (last.length && (used + cost(run) > maxUrl / 2 || (last.length + 1) * Math.min(tags.length, maxPairs) > maxPairs)) {
        runChunks.push([]);
        used = 0;
      }
      runChunks[runChunks.length - 1].push(run);
      used += cost(run);
    }
    for (const chunkRuns of runChunks) {
      const runCost = chunkRuns.reduce((s, r) => s + cost(r), 0);
      const perTagPairs = chunkRuns.length;
      let tagChunk = [];
      let tagCost = 0;
      for (const tag of tags) {
        if (tagChunk.length && ((tagChunk.length + 1) * perTagPairs > maxPairs || runCost + tagCost + cost(tag) > maxUrl)) {
          out.push({ runs: chunkRuns, tags: tagChunk });
          tagChunk = [];
          tagCost = 0;
        }
        tagChunk.push(tag);
        tagCost += cost(tag);
      }
      if (tagChunk.length) out.push({ runs: chunkRuns, tags: tagChunk });
    }
  }
  return out;
}

export class SeriesStore {
  /**
   * @param {{maxConcurrent?: number, maxPoints?: number, fetcher?: Function, batchFetcher?: Function|null}} options
   *   fetcher(run, tag, maxPoints) reads one series; batchFetcher(runs, tags, maxPoints) many (null: no batching).
   */
  constructor({
    maxConcurrent = 4,
    maxPoints = DEFAULT_MAX_POINTS,
    fetcher = fetchScalars,
    batchFetcher = fetchScalarsBatch,
  } = {}) {
    this.maxConcurrent = maxConcurrent;
    this.maxPoints = maxPoints;
    this.fetcher = fetcher;
    this.batchFetcher = batchFetcher;
    this.cache = new Map(); // key -> {data, promise}
    this.queue = [];
    this.running = 0;
    this.pending = []; // [{run, tag, resolve, reject}] waiting for the next batch
    this.flushTimer = null;
    this.requests = 0; // requests sent (for tests and the page's data attributes)
    this.idleWaiters = []; // resolved once nothing is pending, queued or in flight
    this.groups = new Map(); // group id -> its runs: get(id, tag) answers their mean with a min / max band
  }

  /** Run groups drawn as one series each ([{id, runs}]); replaces the previous ones. */
  setGroups(groups) {
    const next = new Map(groups.map((g) => [g.id, g.runs]));
    for (const [id, runs] of this.groups) {
      const now = next.get(id);
      if (!now || now.length !== runs.length || now.some((r, i) => r !== runs[i])) this.forgetGroup(id);
    }
    this.groups = next;
  }

  /** Whether `id` names a run group (its series is its runs' aggregate, not a run of the server). */
  isGroup(id) {
    return this.groups.has(id);
  }

  forgetGroup(id) {
    for (const key of [...this.cache.keys()]) if (JSON.parse(key)[0] === id) this.cache.delete(key);
  }

  /** A group's series: its runs' series (the ones that have the tag) aggregated. */
  async groupSeries(id, tag, refresh) {
    const runs = this.groups.get(id) || [];
    const members = await Promise.all(runs.map((r) => this.get(r, tag, { refresh }).catch(() => null)));
    if (!members.some(Boolean)) {
      throw new ApiError(`no run of ${id} has the tag "${tag}"`, { status: 404, code: 404, route: "scalars_batch" });
    }
    return aggregateSeries(id, tag, members, this.maxPoints);
  }

  static key(run, tag) {
    return JSON.stringify([run, tag]);
  }

  has(run, tag) {
    const entry = this.cache.get(SeriesStore.key(run, tag));
    return Boolean(entry && entry.data);
  }

  peek(run, tag) {
    const entry = this.cache.get(SeriesStore.key(run, tag));
    return entry ? entry.data : undefined;
  }

  /** The series (downsampled by the server to maxPoints); refresh fetches again but serves the old copy meanwhile. */
  get(run, tag, { refresh = false } = {}) {
    const key = SeriesStore.key(run, tag);
    let entry = this.cache.get(key);
    if (entry && entry.promise) return entry.promise;
    if (entry && entry.data && !refresh) return Promise.resolve(entry.data);
    if (!entry) {
      entry = { data: null, promise: null };
      this.cache.set(key, entry);
    }
    const promise = this.request(run, tag, refresh).then(
      (data) => {
        entry.data = data;
        entry.promise = null;
        return data;
      },
      (error) => {
        entry.promise = null;
        if (entry.data && refresh) return entry.data; // keep showing the last good copy
        throw error;
      },
    );
    entry.promise = promise;
    return promise;
  }

  /** Every recorded point (for downloads): asks again without downsampling when the cached copy is downsampled. */
  async getFull(run, tag) {
    const data = await this.get(run, tag);
    if (!data.downsampled) return data;
    const wanted = Math.min(Math.max(data.total_points, this.maxPoints), MAX_POINTS_LIMIT);
    return this.schedule(() => this.fetcher(run, tag, wanted));
  }

  /** Forgets series of runs or tags that no longer exist. */
  retain(isWanted) {
    for (const key of [...this.cache.keys()]) {
      const [run, tag] = JSON.parse(key);
      if (!this.groups.has(run) && !isWanted(run, tag)) this.cache.delete(key);
    }
  }

  /**
   * Another library's tag of the same quantity, per run: {run: {ourTag: theirTag}} (e.g. a Hugging Face Trainer
   * run's train/loss for core/loss). The cache keeps our tag; the request asks for the run's own.
   * @param {Map<string, Map<string, string>>} aliases
   */
  setAliases(aliases) {
    this.aliases = aliases || new Map();
  }

  actualTag(run, tag) {
    const own = this.aliases && this.aliases.get(run);
    return (own && own.get(tag)) || tag;
  }

  request(run, tag, refresh = false) {
    if (this.groups.has(run)) return this.groupSeries(run, tag, refresh);
    tag = this.actualTag(run, tag);
    if (!this.batchFetcher) return this.schedule(() => this.fetcher(run, tag, this.maxPoints));
    return new Promise((resolve, reject) => {
      this.pending.push({ run, tag, resolve, reject });
      if (this.flushTimer === null) this.flushTimer = setTimeout(() => this.flush(), 0);
    });
  }

  flush() {
    this.flushTimer = null;
    const pending = this.pending;
    this.pending = [];
    if (!pending.length) return;
    const waiting = new Map(); // key -> [{resolve, reject}]
    for (const p of pending) {
      const key = SeriesStore.key(p.run, p.tag);
      if (!waiting.has(key)) waiting.set(key, []);
      waiting.get(key).push(p);
    }
    const pairs = [...waiting.keys()].map((k) => JSON.parse(k));
    for (const { runs, tags } of planBatches(pairs)) {
      this.schedule(() => this.batchFetcher(runs, tags, this.maxPoints)).then(
        (answer) => {
          const got = new Map();
          for (const s of answer.series) got.set(SeriesStore.key(s.run, s.tag), s);
          for (const run of runs) {
            for (const tag of tags) {
              const key = SeriesStore.key(run, tag);
              const data = got.get(key);
              for (const p of waiting.get(key) || []) {
                if (data) p.resolve(data);
                else p.reject(new ApiError(`run "${run}" has no scalar tag "${tag}"`, { status: 404, code: 404, route: "scalars_batch" }));
              }
            }
          }
        },
        (error) => {
          for (const run of runs) {
            for (const tag of tags) for (const p of waiting.get(SeriesStore.key(run, tag)) || []) p.reject(error);
          }
        },
      );
    }
  }

  /** Resolves once no request is pending, queued or in flight (at once when none is). */
  idle() {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  isIdle() {
    return this.running === 0 && !this.queue.length && !this.pending.length && this.flushTimer === null;
  }

  notifyIdle() {
    if (!this.idleWaiters.length || !this.isIdle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }

  schedule(task) {
    return new Promise((resolve, reject) => {
      this.queue.push({ task, resolve, reject });
      this.pump();
    });
  }

  pump() {
    while (this.running < this.maxConcurrent && this.queue.length) {
      const { task, resolve, reject } = this.queue.shift();
      this.running += 1;
      this.requests += 1;
      Promise.resolve()
        .then(task)
        .then(resolve, reject)
        .finally(() => {
          this.running -= 1;
          this.pump();
          // A tick later: the answer's handlers may ask for more (a group's members, a retry).
          setTimeout(() => this.notifyIdle(), 0);
        });
    }
  }
}
