// Cache of scalar series, keyed by (run, tag), with a limit on requests in flight (the TensorBoard server is often
// on the training machine; a page with 30 charts must not fire 60 requests at once).

import { DEFAULT_MAX_POINTS, MAX_POINTS_LIMIT, fetchScalars } from "./api.js";

export class SeriesStore {
  constructor({ maxConcurrent = 4, maxPoints = DEFAULT_MAX_POINTS, fetcher = fetchScalars } = {}) {
    this.maxConcurrent = maxConcurrent;
    this.maxPoints = maxPoints;
    this.fetcher = fetcher;
    this.cache = new Map(); // key -> {data, promise}
    this.queue = [];
    this.running = 0;
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
    const promise = this.schedule(() => this.fetcher(run, tag, this.maxPoints)).then(
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
      if (!isWanted(run, tag)) this.cache.delete(key);
    }
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
      Promise.resolve()
        .then(task)
        .then(resolve, reject)
        .finally(() => {
          this.running -= 1;
          this.pump();
        });
    }
  }
}
