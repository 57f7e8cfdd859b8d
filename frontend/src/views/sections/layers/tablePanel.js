// A layer x head (mindformers' max_attention_logit) or layer x expert (expert_load) table at one step: rows are
// layers, columns heads or experts, a step slider moves through the recorded steps (the newest by default). Hover
// names the cell and its value. Names only ever reach the page as text.

import { SPECIAL_COLORS, makeScale } from "../../../chart/colorScale.js";
import { formatStep, formatValue } from "../../../chart/format.js";
import { HeatmapCanvas } from "../../../chart/heatmap.js";
import { el, clear } from "../../../base/dom.js";
import { fetchTable } from "../../../api/table.js";

const LABEL_WIDTH = 260;
const MAX_HEIGHT = 520;

function rowHeightFor(n) {
  return Math.max(4, Math.min(18, Math.floor(MAX_HEIGHT / Math.max(1, n))));
}

export class TablePanel {
  /** @param {{tag: string, displayName: string, tier: string}} options */
  constructor({ tag, displayName, tier }) {
    this.tag = tag;
    this.tier = tier;
    this.active = false;
    this.runs = [];
    this.run = null;
    this.step = null; // null: the newest step
    this.data = null;
    this.generation = 0;
    this.runSelect = el("select", { class: "ms-select", "data-testid": "table-run", title: "Run", on: { change: () => this.pick(this.runSelect.value, null) } });
    this.slider = el("input", {
      type: "range",
      class: "ms-table-slider",
      min: "0",
      max: "0",
      value: "0",
      "aria-label": "Step",
      "data-testid": "table-step-slider",
      on: { change: () => this.onSlider() },
    });
    this.stepLabel = el("span", { class: "ms-muted", "data-testid": "table-step" });
    this.titleEl = el("div", { class: "ms-card-title", "data-testid": "table-title", text: displayName, title: tag });
    this.status = el("div", { class: "ms-chart-status", "data-testid": "table-status", text: "Loading…" });
    this.labels = el("div", { class: "ms-heatmap-labels", "data-testid": "table-labels", style: { width: `${LABEL_WIDTH}px` } });
    this.maps = el("div", { class: "ms-heatmap-maps" });
    this.axis = el("div", { class: "ms-table-axis", "data-testid": "table-axis" });
    this.legend = el("div", { class: "ms-heatmap-legend", "data-testid": "table-legend" });
    this.tooltip = el("div", { class: "ms-tooltip ms-heatmap-tooltip", role: "tooltip", "data-testid": "table-tooltip", hidden: true });
    this.heatmap = new HeatmapCanvas(this.maps);
    this.heatmap.canvas.addEventListener("mousemove", (e) => this.onHover(e));
    this.heatmap.canvas.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
    this.element = el(
      "div",
      { class: "ms-card ms-heatmap-card ms-table-card", "data-testid": "table-panel", "data-tag": tag, "data-tier": tier, "data-state": "idle" },
      el("div", { class: "ms-card-header" }, el("div", { class: "ms-card-titles" }, this.titleEl, el("div", { class: "ms-card-subtitle", "data-testid": "table-subtitle", text: `${tag} · per layer` }))),
      el("div", { class: "ms-heatmap-controls" }, this.runSelect, this.slider, this.stepLabel),
      this.legend,
      this.status,
      el("div", { class: "ms-heatmap-body" }, el("div", { class: "ms-heatmap-grid" }, this.labels, el("div", {}, this.maps, this.axis)), this.tooltip),
    );
  }

  setDisplayName(name) {
    this.titleEl.textContent = name;
  }

  activate() {
    if (this.active) return;
    this.active = true;
    this.load();
  }

  update(runs, _opts, { refresh = false } = {}) {
    const names = runs.map((r) => r.run);
    const changed = JSON.stringify(names) !== JSON.stringify(this.runs.map((r) => r.run));
    this.runs = runs;
    if (!names.includes(this.run)) this.run = names[0] || null;
    if (changed) {
      clear(this.runSelect);
      for (const r of names) this.runSelect.append(el("option", { value: r, text: r }));
      this.runSelect.value = this.run || "";
    }
    if (this.active && (changed || refresh)) this.load();
  }

  highlight() {}

  pick(run, step) {
    this.run = run;
    this.step = step;
    this.load();
  }

  onSlider() {
    const d = this.data;
    if (!d || !d.steps.length) return;
    const i = Number(this.slider.value);
    this.step = i >= d.steps.length - 1 ? null : d.steps[i];
    this.load();
  }

  async load() {
    if (!this.run) {
      this.status.textContent = "No run selected.";
      return;
    }
    const gen = ++this.generation;
    this.element.dataset.state = "loading";
    try {
      const d = await fetchTable(this.run, this.tag, this.step);
      if (gen !== this.generation) return;
      this.data = d;
      this.render();
      this.element.dataset.state = "ready";
    } catch (e) {
      if (gen !== this.generation) return;
      this.element.dataset.state = "error";
      this.status.textContent = `Could not load the table: ${e && e.message ? e.message : e}`;
    }
  }

  render() {
    const d = this.data;
    this.titleEl.textContent = d.displayName;
    this.slider.max = String(Math.max(0, d.steps.length - 1));
    this.slider.value = String(Math.max(0, d.steps.indexOf(d.step)));
    this.stepLabel.textContent = `step ${formatStep(d.step)} (${d.steps.length} recorded)`;
    this.status.textContent = `${d.rows.length} layers x ${d.columns.length} ${d.column}s`;
    const rows = d.values.map((row) => {
      const values = new Float32Array(row.length);
      const missing = new Uint8Array(row.length);
      row.forEach((v, i) => {
        if (v === null) missing[i] = 1;
        else values[i] = v;
      });
      return { values, missing };
    });
    const finite = rows.map((r) => r.values.filter((v, i) => !r.missing[i] && Number.isFinite(v)));
    const allPositive = finite.every((a) => a.every((v) => v > 0));
    this.scale = makeScale(allPositive ? "log" : "linear", finite);
    this.rowHeight = rowHeightFor(rows.length);
    const width = Math.max(120, this.maps.clientWidth || 600);
    this.heatmap.draw({ rows, cols: d.columns.length, rowHeight: this.rowHeight, width, scale: this.scale });
    clear(this.labels);
    for (const name of d.rows) {
      this.labels.append(el("div", { class: "ms-heatmap-label", "data-testid": "table-row", style: { height: `${this.rowHeight}px`, lineHeight: `${this.rowHeight}px` }, title: name }, el("span", { class: "ms-heatmap-label-text", text: name })));
    }
    clear(this.axis);
    this.axis.append(el("div", { class: "ms-axis-title", text: `${d.column} (${d.columns.length})` }));
    this.renderLegend();
  }

  renderLegend() {
    clear(this.legend);
    const scale = this.scale;
    const bar = document.createElement("canvas");
    bar.width = 256;
    bar.height = 1;
    bar.className = "ms-heatmap-legend-bar";
    const img = new ImageData(256, 1);
    const px = new Uint32Array(img.data.buffer);
    for (let i = 0; i < 256; i++) px[i] = scale.lut[i];
    bar.getContext("2d").putImageData(img, 0, 0);
    const ticks = el("div", { class: "ms-heatmap-legend-ticks" });
    for (const t of scale.ticks) {
      ticks.append(el("span", { class: "ms-heatmap-tick", style: { left: `${((t.value - scale.lo) / (scale.hi - scale.lo)) * 100}%` }, text: t.label }));
    }
    const swatch = (key, text) => el("span", { class: "ms-heatmap-special" }, el("span", { class: "ms-swatch", style: { background: SPECIAL_COLORS[key] } }), text);
    this.legend.append(
      el("div", { class: "ms-heatmap-legend-scale" }, bar, ticks),
      el("div", { class: "ms-heatmap-legend-specials" }, swatch("nonfinite", "NaN / Inf"), el("span", { class: "ms-heatmap-special" }, el("span", { class: "ms-swatch ms-swatch-missing" }), "not recorded")),
    );
  }

  onHover(e) {
    const d = this.data;
    if (!d) return;
    const rect = this.heatmap.canvas.getBoundingClientRect();
    const hit = this.heatmap.hit(e.clientX - rect.left, e.clientY - rect.top);
    if (!hit) {
      this.tooltip.hidden = true;
      return;
    }
    const v = d.values[hit.row][hit.col];
    this.tooltip.textContent = `${d.rows[hit.row]} · ${d.columns[hit.col]} · step ${formatStep(d.step)}: ${v === null ? "not recorded" : formatValue(v)}`;
    this.tooltip.hidden = false;
    this.tooltip.style.left = `${e.clientX - rect.left + LABEL_WIDTH + 12}px`;
    this.tooltip.style.top = `${e.clientY - rect.top + 8}px`;
  }

  destroy() {
    this.generation++;
  }
}
