// The page's one event channel: the dashboard says when it refreshed and which runs are checked; the sections
// mounted beside it (landscapes, run info, images and tensors) listen here instead of watching the DOM.
//
// Events: "refresh" (after every refresh, {count, source}), "visible-runs" (the checked runs, string[]),
// "theme" ({dark}) when TensorBoard's theme changes.

export class EventChannel {
  constructor() {
    this.listeners = new Map(); // type -> Set of functions
  }

  /** Calls fn(detail) on every event of this type; returns the function that stops it. */
  on(type, fn) {
    if (!this.listeners.has(type)) this.listeners.set(type, new Set());
    this.listeners.get(type).add(fn);
    return () => this.listeners.get(type).delete(fn);
  }

  /** Tells every listener; one that throws is reported on the console and the others still run. */
  emit(type, detail) {
    for (const fn of [...(this.listeners.get(type) || [])]) {
      try {
        fn(detail);
      } catch (e) {
        console.warn(`listener of "${type}" failed:`, e);
      }
    }
  }
}
