// The "Loss landscape" section: every landscape of a run (ours and MindSpore SummaryLandscape's) as a contour /
// heatmap with the training path and a rotatable 3-D surface; a landscape selector and a step slider per run; a
// second run side by side. Shown only when some run has a landscape; refreshed with the dashboard.

import landscapeCss from "./landscape.css?inline";
import { el, clear } from "../../../base/dom.js";
import { ContourChart, ProfileChart } from "../../../chart/contour.js";
import { Surface3D } from "../../../chart/surface3d.js";
import { fetchLandscape, fetchLandscapes } from "../../../api/landscape.js";
import { describe, drawnMarkers, groupByTag } from "./landscapeModel.js";

const SETTINGS_KEY = "tb-mindspore.landscape.v1";
const DEFAULTS = { heatmap: true, isolines: true, log: false, surface: true, runA: null, runB: "", collapsed: false };
const VIEW_HEIGHT = 340;

function loadSettings() {
  try {
    const raw = JSON.parse(localStorage.getItem(SETTINGS_KEY) || "{}");
    return { ...DEFAULTS, ...(raw && typeof raw === "object" ? raw : {}) };
  } catch (e) {
    return { ...DEFAULTS };
  }
}

function saveSettings(s) {
  try {
    localStorage.setItem(SETTINGS_KEY, JSON.stringify(s));
  } catch (e) {
    /* storage may be unavailable; settings then last for the page only */
  }
}

function injectStyles() {
  if (document.getElementById("ms-landscape-styles")) return;
  const style = document.createElement("style");
  style.id = "ms-landscape-styles";
  style.textContent = landscapeCss;
  document.head.appendChild(style);
}

class LandscapePanel {
  constructor(section, run) {
    this.section = section;
    this.run = run;
    this.groups = [];
    this.tag = null;
    this.index = -1; // index into the tag's entries
    this.current = null;
    this.token = 0;
    this.runEl = el("div", { class: "ms-ls-run", "data-testid": "landscape-run", text: run });
    this.select = el("select", {
      class: "ms-select",
      "data-testid": "landscape-select",
      "aria-label": "Landscape",
      on: { change: () => this.choose(this.select.value, null) },
    });
    this.slider = el("input", {
      type: "range",
      class: "ms-ls-slider",
      min: "0",
      max: "0",
      step: "1",
      value: "0",
      "data-testid": "landscape-step-slider",
      "aria-label": "Step",
      on: { input: () => this.choose(this.tag, Number(this.slider.value)) },
    });
    this.stepEl = el("span", { class: "ms-muted", "data-testid": "landscape-step" });
    this.info = el("div", { class: "ms-ls-info", "data-testid": "landscape-info" });
    this.warning = el("div", { class: "ms-ls-warning", "data-testid": "landscape-warning", hidden: true });
    this.error = el("div", { class: "ms-ls-error", "data-testid": "landscape-error", hidden: true });
    this.contourStage = el("div", { class: "ms-ls-stage", "data-testid": "landscape-contour" });
    this.surfaceStage = el("div", { class: "ms-ls-stage", "data-testid": "landscape-surface" });
    this.profileStage = el("div", { class: "ms-ls-stage", "data-testid": "landscape-profile" });
    this.contourView = el("div", { class: "ms-ls-view" }, el("div", { class: "ms-ls-view-title", text: "Contour and heatmap" }), this.contourStage);
    this.surfaceView = el("div", { class: "ms-ls-view" }, el("div", { class: "ms-ls-view-title", text: "3-D surface (drag to rotate, wheel to zoom, double click to reset)" }), this.surfaceStage);
    this.profileTitle = el("div", { class: "ms-ls-view-title", "data-testid": "landscape-profile-title", text: "Loss along the line" });
    this.profileView = el("div", { class: "ms-ls-view" }, this.profileTitle, this.profileStage);
    this.views = el("div", { class: "ms-ls-views" }, this.contourView, this.surfaceView, this.profileView);
    const legend = el("div", { class: "ms-ls-legend", "data-testid": "landscape-legend" });
    this.legend = legend;
    this.element = el(
      "div",
      { class: "ms-card ms-ls-panel", "data-testid": "landscape-panel", "data-run": run, "data-state": "loading" },
      el("div", { class: "ms-ls-head" }, this.runEl, this.select, this.slider, this.stepEl),
      this.info,
      this.warning,
      this.error,
      this.views,
      legend,
    );
    this.contour = new ContourChart(this.contourStage);
    this.profile = new ProfileChart(this.profileStage);
    this.surface = new Surface3D(this.surfaceStage, { onViewChange: (v) => section.syncView(this, v) });
  }

  setEntries(entries) {
    this.groups = groupByTag(entries);
    const tags = this.groups.map((g) => g.tag);
    clear(this.select);
    for (const g of this.groups) {
      const steps = g.entries.length;
      const label = `${g.title} · ${g.tag}${steps > 1 ? ` (${steps} steps)` : ""}`;
      this.select.append(el("option", { value: g.tag, text: label }));
    }
    const tag = tags.includes(this.tag) ? this.tag : tags[0] || null;
    const group = this.groups.find((g) => g.tag === tag);
    let index = this.index;
    if (group) {
      const wasLast = this.tag !== tag || this.index < 0 || this.index >= group.entries.length - 1 || this.followLast;
      if (wasLast) index = group.entries.length - 1;
    }
    this.choose(tag, index, { keepIfSame: true });
  }

  choose(tag, index, { keepIfSame = false } = {}) {
    const group = this.groups.find((g) => g.tag === tag);
    if (!group) {
      this.element.dataset.state = "empty";
      return;
    }
    if (index === null || index === undefined || index < 0 || index >= group.entries.length) index = group.entries.length - 1;
    this.followLast = index === group.entries.length - 1;
    const entry = group.entries[index];
    this.select.value = tag;
    this.slider.max = String(group.entries.length - 1);
    this.slider.value = String(index);
    this.slider.disabled = group.entries.length < 2;
    this.stepEl.textContent = `step ${entry.step}` + (group.entries.length > 1 ? ` (${index + 1} of ${group.entries.length})` : "");
    const same = this.current && this.current.tag === tag && this.current.step === entry.step && this.currentWall === entry.wall_time;
    this.tag = tag;
    this.index = index;
    if (same && keepIfSame) return;
    this.load(this.run, tag, entry);
  }

  async load(run, tag, entry) {
    const token = ++this.token;
    this.element.dataset.state = "loading";
    this.element.dataset.tag = tag;
    this.element.dataset.step = String(entry.step);
    try {
      const ls = await this.section.get(run, tag, entry);
      if (token !== this.token) return;
      this.current = ls;
      this.currentWall = entry.wall_time;
      this.error.hidden = true;
      this.draw();
    } catch (e) {
      if (token !== this.token) return;
      this.error.textContent = `Could not load the landscape: ${e && e.message ? e.message : e}`;
      this.error.hidden = false;
      this.element.dataset.state = "error";
    }
  }

  draw() {
    const ls = this.current;
    if (!ls) return;
    const opts = this.section.options();
    const one = ls.dims === 1;
    this.contourView.hidden = one;
    this.surfaceView.hidden = one || !opts.surface;
    this.profileView.hidden = !one;
    this.profileTitle.textContent = ls.method === "profile" ? "Loss along the top Hessian eigenvector and a random direction (sharpness as a curve)" : "Loss along the line";
    const columns = one || !opts.surface ? 1 : this.section.columns() > 1 ? 1 : 2;
    this.views.style.setProperty("--ms-ls-views", String(columns));
    const width = Math.max(280, Math.floor((this.views.clientWidth || this.element.clientWidth || 700) / columns) - (columns > 1 ? 6 : 0));
    this.info.textContent = describe(ls);
    const m = ls.metadata || {};
    if (!ls.complete) {
      const rows = m.rows_done !== undefined ? `${m.rows_done} of ${m.rows || ls.ny} rows` : `${ls.nx * ls.ny - ls.missing} of ${ls.nx * ls.ny} points`;
      this.warning.textContent = `Incomplete: stopped after ${rows}; the missing part is hatched.`;
      this.warning.hidden = false;
    } else this.warning.hidden = true;
    if (one) {
      this.profile.draw(ls, opts, width, VIEW_HEIGHT - 60);
    } else {
      this.contour.draw(ls, opts, width, VIEW_HEIGHT);
      if (opts.surface) this.surface.draw(ls, opts, width, VIEW_HEIGHT);
    }
    this.renderLegend(ls);
    const d = this.element.dataset;
    d.state = "drawn";
    d.method = ls.method;
    d.source = ls.source;
    d.dims = String(ls.dims);
    d.tag = ls.tag;
    d.step = String(ls.step);
  }

  /** The legend lists only the markers this landscape's views draw. */
  renderLegend(ls) {
    const shown = drawnMarkers(ls);
    clear(this.legend);
    for (const key of shown) {
      const m = LEGEND[key];
      this.legend.append(el("span", { "data-testid": "landscape-legend-item", "data-marker": key }, el("span", { class: "ms-ls-key", style: m.style, text: m.glyph || "" }), m.text));
    }
    this.legend.dataset.markers = shown.join(",");
    this.legend.hidden = !shown.length;
  }
}

const LEGEND = {
  start: { text: "start of the path", style: { background: "#00c853", borderRadius: "50%" } },
  end: { text: "end of the path", style: { background: "#ff1744" } },
  minimum: { text: "lowest loss on the grid", style: { background: "#ffd600", transform: "rotate(45deg)" } },
  centre: { text: "current parameters (centre)", glyph: "✕", style: { background: "none", border: "none", width: "auto", height: "auto", fontWeight: "bold" } },
};

export class LandscapeSection {
  constructor() {
    injectStyles();
    this.settings = loadSettings();
    this.listing = {};
    this.cache = new Map();
    this.panels = [];
    this.count = el("span", { class: "ms-section-count", "data-testid": "landscape-count" });
    this.toggle = el(
      "button",
      {
        type: "button",
        class: "ms-section-toggle",
        "aria-expanded": String(!this.settings.collapsed),
        "data-testid": "landscape-toggle",
        on: { click: () => this.setCollapsed(!this.settings.collapsed) },
      },
      el("span", { class: "ms-chevron", "aria-hidden": "true" }),
      el("span", { class: "ms-section-title", text: "Loss landscape" }),
      this.count,
      el("span", { class: "ms-section-subtitle", text: "Is the run in a sharp or a flat region, and how did the optimizer travel?" }),
    );
    this.runA = el("select", { class: "ms-select", "data-testid": "landscape-run-a", "aria-label": "Run", on: { change: () => this.onRuns() } });
    this.runB = el("select", { class: "ms-select", "data-testid": "landscape-run-b", "aria-label": "Compare with run", on: { change: () => this.onRuns() } });
    const check = (key, label) =>
      el(
        "label",
        { class: "ms-check" },
        el("input", {
          type: "checkbox",
          checked: Boolean(this.settings[key]),
          "data-testid": `landscape-opt-${key}`,
          on: {
            change: (e) => {
              this.settings[key] = e.target.checked;
              saveSettings(this.settings);
              this.redraw();
            },
          },
        }),
        el("span", { text: label }),
      );
    this.toolbar = el(
      "div",
      { class: "ms-ls-toolbar" },
      el("label", { class: "ms-ls-field" }, el("span", { text: "Run" }), this.runA),
      el("label", { class: "ms-ls-field" }, el("span", { text: "Side by side with" }), this.runB),
      check("heatmap", "Heatmap"),
      check("isolines", "Isolines"),
      check("log", "Log scale"),
      check("surface", "3-D surface"),
    );
    this.columnsEl = el("div", { class: "ms-ls-columns", "data-testid": "landscape-columns" });
    this.body = el("div", { class: "ms-section-body", hidden: this.settings.collapsed }, this.toolbar, this.columnsEl);
    this.element = el(
      "section",
      { class: "ms-section ms-ls-section", "data-testid": "landscape-section", "data-state": "loading", hidden: true },
      el("h2", { class: "ms-section-header" }, this.toggle),
      this.body,
    );
    if (typeof ResizeObserver !== "undefined") {
      let last = 0;
      this.resizer = new ResizeObserver(() => {
        const w = this.columnsEl.clientWidth;
        if (Math.abs(w - last) < 8) return;
        last = w;
        clearTimeout(this.resizeTimer);
        this.resizeTimer = setTimeout(() => this.redraw(), 120);
      });
      this.resizer.observe(this.columnsEl);
    }
  }

  options() {
    return { heatmap: this.settings.heatmap, isolines: this.settings.isolines, log: this.settings.log, surface: this.settings.surface };
  }

  columns() {
    return this.panels.length;
  }

  setCollapsed(collapsed) {
    this.settings.collapsed = collapsed;
    saveSettings(this.settings);
    this.toggle.setAttribute("aria-expanded", String(!collapsed));
    this.body.hidden = collapsed;
    if (!collapsed) this.redraw();
  }

  /** Landscape data, cached per (run, tag, step, wall time): a recorded landscape never changes. */
  get(run, tag, entry) {
    const key = JSON.stringify([run, tag, entry.step, entry.wall_time]);
    let p = this.cache.get(key);
    if (!p) {
      p = fetchLandscape(run, tag, entry.step);
      p.catch(() => this.cache.delete(key));
      this.cache.set(key, p);
      while (this.cache.size > 64) this.cache.delete(this.cache.keys().next().value);
    }
    return p;
  }

  async refresh() {
    let listing;
    try {
      listing = await fetchLandscapes();
    } catch (e) {
      // A failed request: keep what is shown.
      this.element.dataset.error = e && e.message ? e.message : String(e);
      return;
    }
    this.listing = listing;
    const runs = Object.keys(listing).sort();
    const total = runs.reduce((n, r) => n + listing[r].length, 0);
    this.count.textContent = String(total);
    this.element.hidden = runs.length === 0;
    this.element.dataset.state = runs.length ? "ready" : "empty";
    this.element.dataset.runs = String(runs.length);
    if (!runs.length) return;
    const a = runs.includes(this.settings.runA) ? this.settings.runA : runs[0];
    const b = runs.includes(this.settings.runB) && this.settings.runB !== a ? this.settings.runB : "";
    const fill = (select, value, withNone) => {
      clear(select);
      if (withNone) select.append(el("option", { value: "", text: "(none)" }));
      for (const r of runs) select.append(el("option", { value: r, text: r }));
      select.value = value;
    };
    fill(this.runA, a, false);
    fill(this.runB, b, true);
    this.runB.disabled = runs.length < 2;
    this.layout(a, b);
  }

  onRuns() {
    const a = this.runA.value;
    const b = this.runB.value === a ? "" : this.runB.value;
    this.runB.value = b;
    this.settings.runA = a;
    this.settings.runB = b;
    saveSettings(this.settings);
    this.layout(a, b);
  }

  layout(a, b) {
    const wanted = [a, b].filter(Boolean);
    const same = wanted.length === this.panels.length && wanted.every((r, i) => this.panels[i].run === r);
    if (!same) {
      const old = new Map(this.panels.map((p) => [p.run, p]));
      this.panels = wanted.map((r) => old.get(r) || new LandscapePanel(this, r));
      clear(this.columnsEl).append(...this.panels.map((p) => p.element));
      this.columnsEl.style.setProperty("--ms-ls-cols", String(this.panels.length));
      this.element.dataset.columns = String(this.panels.length);
      for (const p of this.panels) if (p.current) p.draw();
    }
    for (const p of this.panels) p.setEntries(this.listing[p.run] || []);
  }

  redraw() {
    for (const p of this.panels) p.draw();
  }

  /** Side-by-side 3-D views turn together. */
  syncView(from, view) {
    for (const p of this.panels) if (p !== from && p.current) p.surface.setView(view, { silent: true });
  }
}

/**
 * Adds the section at the end of the dashboard's main column and refreshes it whenever the dashboard refreshes
 * (the "refresh" event of its channel). Returns the section.
 */
export function mountLandscapes(dashboard) {
  const section = new LandscapeSection();
  const host = (dashboard && dashboard.main) || document.body;
  host.appendChild(section.element);
  // first read once the charts on screen have their series (the dashboard's first listing)
  if (dashboard && dashboard.firstChartsShown) dashboard.firstChartsShown.then(() => section.refresh());
  else section.refresh();
  if (dashboard) {
    dashboard.events.on("refresh", () => section.refresh());
    dashboard.events.on("theme", () => section.redraw());
  }
  return section;
}
