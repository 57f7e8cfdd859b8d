// Dashboard settings, kept in localStorage so a reload of the page keeps them. Bad stored values fall back to the
// defaults (the page must never fail to open because of a stale setting).

const KEY = "tb-plugin-mindspore.settings.v1";

export const X_AXES = ["step", "relative", "wall", "samples"];

export const DEFAULTS = Object.freeze({
  xAxis: "step",
  logY: false,
  smoothing: 0.6,
  showInterval: true,
  showSuperseded: false,
  runFilter: "",
  autoRefresh: true,
  collapsed: { core: false, diagnostic: false, debug: false, other: false },
  deselectedRuns: [],
});

function sanitize(raw) {
  const s = { ...DEFAULTS, collapsed: { ...DEFAULTS.collapsed } };
  if (!raw || typeof raw !== "object") return s;
  if (X_AXES.includes(raw.xAxis)) s.xAxis = raw.xAxis;
  if (typeof raw.logY === "boolean") s.logY = raw.logY;
  if (typeof raw.smoothing === "number" && raw.smoothing >= 0 && raw.smoothing <= 0.999) s.smoothing = raw.smoothing;
  if (typeof raw.showInterval === "boolean") s.showInterval = raw.showInterval;
  if (typeof raw.showSuperseded === "boolean") s.showSuperseded = raw.showSuperseded;
  if (typeof raw.runFilter === "string") s.runFilter = raw.runFilter;
  if (typeof raw.autoRefresh === "boolean") s.autoRefresh = raw.autoRefresh;
  if (raw.collapsed && typeof raw.collapsed === "object") {
    for (const [k, v] of Object.entries(raw.collapsed)) if (typeof v === "boolean") s.collapsed[k] = v;
  }
  if (Array.isArray(raw.deselectedRuns)) s.deselectedRuns = raw.deselectedRuns.filter((r) => typeof r === "string");
  return s;
}

function storage() {
  try {
    return globalThis.localStorage || null;
  } catch (e) {
    return null; // storage may be blocked in a sandboxed frame
  }
}

export function loadSettings() {
  const store = storage();
  if (!store) return sanitize(null);
  try {
    return sanitize(JSON.parse(store.getItem(KEY) || "null"));
  } catch (e) {
    return sanitize(null);
  }
}

export function saveSettings(settings) {
  const store = storage();
  if (!store) return;
  try {
    store.setItem(KEY, JSON.stringify(settings));
  } catch (e) {
    /* quota or privacy mode: settings just do not persist */
  }
}
