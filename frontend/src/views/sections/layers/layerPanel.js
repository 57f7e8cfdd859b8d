// The per-layer heatmap of one layers series (update ratio, per-layer gradient norm, weight norm, a mindformers
// family such as local_norm/*): layers as rows, grouped by module path and collapsible, steps as columns; a second
// run side by side; sort by name or mean; search; hover for layer / step / value; a click opens the line chart of
// that layer (or group). Layer names only ever reach the page as text.

import { fetchLayer, fetchLayers } from "../../../api/client.js";
import { SPECIAL_COLORS, makeScale } from "../../../chart/colorScale.js";
import { axisOf, ratioMarks } from "../../../base/contract.js";
import { formatStep, formatValue } from "../../../chart/format.js";
import { HeatmapCanvas } from "../../../chart/heatmap.js";
import { aggregateRow, buildTree, columnRange, layerStats, stepTicks, treeDepth, uniformValue, visibleRows } from "../../../chart/layerTree.js";
import { LineChart } from "../../../chart/lineChart.js";
import { el, clear } from "../../../base/dom.js";
import { displayRunName } from "../../../base/runNames.js";

const LABEL_WIDTH = 260;
const MAX_HEIGHT = 640;
/** Text and hover title of each layer mark; the update-ratio thresholds are the health rules' (the contract's). */
function markText(raw) {
  return {
    slow: { text: "slow", title: `Not learning: mean update ratio below ${formatValue(raw.slow)}` },
    frozen: { text: "frozen", title: "Weight unchanged: every recorded update ratio is 0" },
    fast: { text: "fast", title: `Too fast: mean update ratio above ${formatValue(raw.fast)}` },
    nonfinite: { text: "NaN", title: "Has NaN or infinite values" },
  };
}

function scaleNote(raw) {
  return {
    ratio: `Color: log10(‖Δw‖ / ‖w‖), centred at ${formatValue(raw.healthy)} (blue: slower, red: faster).`,
    log: "Color: log10 of the value.",
    linear: "Color: the value.",
  };
}

function rowHeightFor(n) {
  return Math.max(3, Math.min(16, Math.floor(MAX_HEIGHT / Math.max(1, n))));
}

export class LayerPanel {
  /**
   * @param {{tag: string, displayName: string, tier: string, contract: object}} options
   */
  constructor({ tag, displayName, tier, contract }) {
    this.tag = tag;
    this.tier = tier;
    this.marks = ratioMarks(contract);
    this.yAxis = axisOf(contract, tag);
    this.markText = markText(this.marks.raw);
    this.scaleNote = scaleNote(this.marks.raw);
    this.active = false;
    this.runs = []; // [{run, color}] visible runs that have this series
    this.primary = null;
    this.compare = "";
    this.sort = "name";
    this.depth = Infinity;
    this.toggled = new Map();
    this.search = "";
    this.data = new Map(); // run -> prepared data
    this.pending = new Map(); // run -> promise
    this.generation = 0;
    this.chartOpts = { xAxis: "step", smoothing: 0, logY: false, showInterval: false };
    this.detail = null; // {row}
    this.heatmaps = [];

    this.runSelect = el("select", { class: "ms-select", "data-testid": "heatmap-run", title: "Run", on: { change: () => this.onControl("run") } });
    this.compareSelect = el("select", { class: "ms-select", "data-testid": "heatmap-compare", title: "Compare with a second run", on: { change: () => this.onControl("compare") } });
    this.sortSelect = el(
      "select",
      { class: "ms-select", "data-testid": "heatmap-sort", title: "Order of the layers", on: { change: () => this.onControl("sort") } },
      el("option", { value: "name", text: "Sort: by name" }),
      el("option", { value: "mean-desc", text: "Sort: mean, high first" }),
      el("option", { value: "mean-asc", text: "Sort: mean, low first" }),
    );
    this.depthSelect = el("select", { class: "ms-select", "data-testid": "heatmap-depth", title: "Expand module groups to this depth", on: { change: () => this.onControl("depth") } });
    this.searchInput = el("input", {
      type: "search",
      class: "ms-input ms-heatmap-search",
      placeholder: "Search layers",
      "aria-label": "Search layers by name",
      "data-testid": "heatmap-search",
      on: { input: () => this.onControl("search") },
    });
    this.titleEl = el("div", { class: "ms-card-title", "data-testid": "heatmap-title", text: displayName, title: tag });
    this.legend = el("div", { class: "ms-heatmap-legend", "data-testid": "heatmap-legend" });
    this.notes = el("div", { class: "ms-chart-notes", "data-testid": "heatmap-notes" });
    this.status = el("div", { class: "ms-chart-status", "data-testid": "heatmap-status", text: "Loading…" });
    this.labels = el("div", { class: "ms-heatmap-labels", "data-testid": "heatmap-labels", style: { width: `${LABEL_WIDTH}px` } });
    this.maps = el("div", { class: "ms-heatmap-maps" });
    this.grid = el("div", { class: "ms-heatmap-grid" }, this.labels, this.maps);
    this.flatLine = el("div", { class: "ms-heatmap-flat", "data-testid": "heatmap-flat", hidden: true });
    this.tooltip = el("div", { class: "ms-tooltip ms-heatmap-tooltip", role: "tooltip", "data-testid": "heatmap-tooltip", hidden: true });
    this.detailHost = el("div", { class: "ms-layer-detail", "data-testid": "layer-detail", hidden: true });
    this.element = el(
      "div",
      { class: "ms-card ms-heatmap-card", "data-testid": "heatmap-panel", "data-tag": tag, "data-tier": tier, "data-state": "idle" },
      el(
        "div",
        { class: "ms-card-header" },
        el("div", { class: "ms-card-titles" }, this.titleEl, el("div", { class: "ms-card-subtitle", text: `${tag} · per layer` })),
      ),
      el("div", { class: "ms-heatmap-controls" }, this.runSelect, this.compareSelect, this.sortSelect, this.depthSelect, this.searchInput),
      this.legend,
      this.status,
      this.flatLine,
      el("div", { class: "ms-heatmap-body" }, this.grid, this.tooltip),
      this.notes,
      this.detailHost,
    );
    this.resizeObserver =
      typeof ResizeObserver !== "undefined"
        ? new ResizeObserver(() => {
            if (this.active && this.rowsModel && Math.abs(this.maps.clientWidth - (this.lastWidth || 0)) > 2) this.render();
          })
        : null;
    if (this.resizeObserver) this.resizeObserver.observe(this.element);
  }

  setDisplayName(name) {
    this.titleEl.textContent = name;
  }

  /** The view protocol's update: the visible runs that have this series and the dashboard's chart options. */
  update(runs, chartOpts, how) {
    this.setRuns(runs, chartOpts, how);
  }

  /** The visible runs that have this series, and the dashboard's chart options (for the line chart). */
  setRuns(runs, chartOpts, { refresh = false } = {}) {
    const key = JSON.stringify(runs.map((r) => [r.run, r.color]));
    const optsChanged = chartOpts && JSON.stringify(chartOpts) !== JSON.stringify(this.chartOpts);
    // A layer's line chart is drawn on steps when the dashboard shows samples (a layer has no samples twin).
    if (chartOpts) this.chartOpts = chartOpts.xAxis === "samples" ? { ...chartOpts, xAxis: "step" } : chartOpts;
    if (key === this.runsKey && !refresh) {
      // Only the chart options changed: the heatmap stays, the open line chart follows them.
      if (optsChanged && this.detail && this.active) this.openDetail(this.detail.row, { keep: true });
      return;
    }
    this.runsKey = key;
    this.runs = runs;
    const names = runs.map((r) => r.run);
    if (!names.includes(this.primary)) this.primary = names[0] || null;
    if (this.compare && (!names.includes(this.compare) || this.compare === this.primary)) this.compare = "";
    this.fillRunSelects();
    if (this.active) this.reload({ refresh });
  }

  fillRunSelects() {
    clear(this.runSelect);
    for (const r of this.runs) this.runSelect.append(el("option", { value: r.run, text: displayRunName(r.run), title: r.run }));
    if (this.primary !== null) this.runSelect.value = this.primary;
    clear(this.compareSelect).append(el("option", { value: "", text: "Compare: none" }));
    for (const r of this.runs) {
      if (r.run !== this.primary) this.compareSelect.append(el("option", { value: r.run, text: `Compare: ${displayRunName(r.run)}`, title: r.run }));
    }
    this.compareSelect.value = this.compare;
    this.compareSelect.disabled = this.runs.length < 2;
  }

  activate() {
    if (this.active) return;
    this.active = true;
    this.reload();
  }

  resize() {
    if (this.active) this.render();
  }

  refresh() {
    if (!this.active) return;
    this.reload({ refresh: true });
  }

  onControl(what) {
    if (what === "run") {
      this.primary = this.runSelect.value;
      if (this.compare === this.primary) this.compare = "";
      this.fillRunSelects();
      this.reload();
      return;
    }
    if (what === "compare") {
      this.compare = this.compareSelect.value;
      this.reload();
      return;
    }
    if (what === "sort") this.sort = this.sortSelect.value;
    if (what === "depth") {
      const v = this.depthSelect.value;
      this.depth = v === "all" ? Infinity : Number(v);
      this.toggled.clear();
    }
    if (what === "search") this.search = this.searchInput.value;
    this.layoutRows();
    this.render();
  }

  shownRuns() {
    const out = [];
    for (const r of this.runs) if (r.run === this.primary) out.push(r);
    if (this.compare) for (const r of this.runs) if (r.run === this.compare) out.push(r);
    return out;
  }

  load(run, refresh) {
    if (this.pending.has(run)) return this.pending.get(run);
    if (this.data.has(run) && !refresh) return Promise.resolve(this.data.get(run));
    const t0 = performance.now();
    const p = fetchLayers(run, this.tag)
      .then((d) => {
        const t1 = performance.now();
        const prepared = this.prepare(d);
        // Timings of the last load (fetch + decode, then statistics), for anyone inspecting the page.
        this.element.dataset.loadMs = (t1 - t0).toFixed(1);
        this.element.dataset.prepareMs = (performance.now() - t1).toFixed(1);
        this.data.set(run, prepared);
        return prepared;
      })
      .finally(() => this.pending.delete(run));
    this.pending.set(run, p);
    return p;
  }

  prepare(d) {
    const index = new Map();
    d.layers.forEach((name, i) => index.set(name, i));
    d.index = index;
    d.stats = layerStats(d.values, d.missing, d.rows, d.cols, d.scale, this.marks);
    d.aggregates = new Map();
    return d;
  }

  async reload({ refresh = false } = {}) {
    const generation = ++this.generation;
    const shown = this.shownRuns();
    if (!shown.length) {
      this.element.dataset.state = "empty";
      this.showStatus("No selected run has this series.");
      clear(this.maps);
      clear(this.labels);
      return;
    }
    if (!shown.every((r) => this.data.has(r.run))) {
      this.element.dataset.state = "loading";
      this.showStatus("Loading…");
    }
    const results = await Promise.all(shown.map((r) => this.load(r.run, refresh).then((d) => ({ ...r, d }), (error) => ({ ...r, error }))));
    if (generation !== this.generation) return;
    const failed = results.filter((r) => r.error);
    this.shown = results.filter((r) => r.d);
    if (!this.shown.length) {
      this.element.dataset.state = "error";
      this.showStatus(`Could not load ${this.tag}: ${failed[0].error.message}`, true);
      return;
    }
    this.showStatus(failed.length ? `Could not load ${failed.map((f) => f.run).join(", ")}: ${failed[0].error.message}` : "", failed.length > 0);
    this.buildModel();
    this.layoutRows();
    this.render();
    if (this.detail) this.openDetail(this.detail.row, { keep: true });
  }

  showStatus(text, isError = false) {
    this.status.textContent = text;
    this.status.hidden = !text;
    this.status.classList.toggle("ms-error", isError);
  }

  /** Union of the shown runs' layers (primary's order first), the module tree, scale, per-layer statistics. */
  buildModel() {
    const names = [];
    const seen = new Set();
    for (const s of this.shown) {
      for (const name of s.d.layers) {
        if (!seen.has(name)) {
          seen.add(name);
          names.push(name);
        }
      }
    }
    this.names = names;
    this.tree = buildTree(names);
    const primary = this.shown[0].d;
    this.scaleKind = primary.scale;
    this.scale = makeScale(this.scaleKind, this.shown.map((s) => s.d.values), { center: this.marks.center });
    // Sorting statistics: the primary run's, else the compared run's.
    this.stats = names.map((name) => {
      for (const s of this.shown) {
        const i = s.d.index.get(name);
        if (i !== undefined) return s.d.stats[i];
      }
      return null;
    });
    const depth = treeDepth(this.tree);
    const current = this.depthSelect.value || "all";
    clear(this.depthSelect).append(el("option", { value: "all", text: "Groups: all expanded" }));
    for (let d = 0; d <= Math.min(depth, 6); d++) {
      this.depthSelect.append(el("option", { value: String(d), text: d === 0 ? "Groups: all collapsed" : `Groups: expand ${d} level${d > 1 ? "s" : ""}` }));
    }
    this.depthSelect.value = [...this.depthSelect.options].some((o) => o.value === current) ? current : "all";
    this.depthSelect.disabled = depth === 0;
    this.renderLegend();
    this.renderNotes();
  }

  layoutRows() {
    if (!this.tree) return;
    this.rowsModel = visibleRows(this.tree, {
      depth: this.depth,
      toggled: this.toggled,
      sort: this.sort,
      search: this.search,
      stats: this.stats,
      names: this.names,
    });
  }

  /** Values of one visible row in one run's matrix (a layer's row, or the aggregate of a group's layers). */
  rowData(d, row) {
    if (row.kind === "layer") {
      const i = d.index.get(this.names[row.layer]);
      if (i === undefined) return null;
      return { values: d.values.subarray(i * d.cols, (i + 1) * d.cols), missing: d.missing.subarray(i * d.cols, (i + 1) * d.cols), index: i };
    }
    let agg = d.aggregates.get(row.id);
    if (!agg) {
      const members = row.members.map((m) => d.index.get(this.names[m])).filter((i) => i !== undefined);
      if (!members.length) return null;
      agg = aggregateRow(d.values, d.missing, d.cols, members, d.scale);
      agg.count = members.length;
      d.aggregates.set(row.id, agg);
    }
    return agg;
  }

  /** "Every recorded value of run is 0 (16 layers × 24 steps): nothing varies." when every shown run's matrix holds
   * one value (a heatmap of it would be one solid block), else null. */
  flatText() {
    const flats = this.shown.map((s) => ({ s, f: uniformValue(s.d.values, s.d.missing) }));
    if (!flats.every(({ f }) => f && f.cells > 0)) return null;
    const v = flats[0].f.value;
    if (!flats.every(({ f }) => f.value === v || (Number.isNaN(f.value) && Number.isNaN(v)))) return null;
    const what = flats.map(({ s }) => `${s.run} (${s.d.rows} layer${s.d.rows === 1 ? "" : "s"} × ${s.d.cols} step${s.d.cols === 1 ? "" : "s"})`).join(" and ");
    return `Every recorded value of ${what} is ${formatValue(v)}: nothing varies, so no heatmap is drawn.`;
  }

  render() {
    if (!this.rowsModel || !this.shown) return;
    const flat = this.flatText();
    this.legend.hidden = Boolean(flat);
    this.element.dataset.flat = String(Boolean(flat));
    this.flatLine.textContent = flat || "";
    this.flatLine.hidden = !flat;
    this.grid.hidden = Boolean(flat);
    if (flat) {
      clear(this.maps);
      clear(this.labels);
      this.heatmaps = [];
      Object.assign(this.element.dataset, { state: "drawn", rows: "0", runs: String(this.shown.length) });
      return;
    }
    const t0 = performance.now();
    const rows = this.rowsModel;
    const rowH = rowHeightFor(rows.length);
    this.rowH = rowH;
    this.renderLabels(rows, rowH);
    clear(this.maps);
    this.heatmaps = [];
    const total = Math.max(200, this.maps.clientWidth || this.element.clientWidth - LABEL_WIDTH - 40);
    this.lastWidth = this.maps.clientWidth;
    const gap = 12;
    const width = Math.floor((total - gap * (this.shown.length - 1)) / this.shown.length);
    let drawMs = 0;
    for (const s of this.shown) {
      const host = el("div", {
        class: "ms-heatmap",
        "data-testid": "heatmap",
        "data-run": s.run,
        "data-state": "drawing",
        style: { width: `${width}px` },
      });
      const title = el("div", { class: "ms-heatmap-run" }, el("span", { class: "ms-swatch", style: { background: s.color } }), el("span", { text: displayRunName(s.run), title: s.run }));
      const canvasHost = el("div", { class: "ms-heatmap-canvas-host" });
      const axis = el("div", { class: "ms-heatmap-axis", "data-testid": "heatmap-axis" });
      host.append(title, canvasHost, axis);
      this.maps.append(host);
      const hm = new HeatmapCanvas(canvasHost);
      const rowData = rows.map((row) => this.rowData(s.d, row));
      const ms = hm.draw({ rows: rowData, cols: s.d.cols, rowHeight: rowH, width, scale: this.scale });
      drawMs += ms;
      this.renderAxis(axis, s.d, width);
      Object.assign(host.dataset, {
        rows: String(rows.length),
        cols: String(s.d.cols),
        rowHeight: String(rowH),
        width: String(width),
        drawMs: ms.toFixed(1),
        state: "drawn",
      });
      const entry = { run: s.run, color: s.color, d: s.d, hm, rowData, host, canvasHost, width };
      this.drawBand(entry);
      hm.canvas.addEventListener("mousemove", (ev) => this.onHover(entry, ev));
      hm.canvas.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
      hm.canvas.addEventListener("click", (ev) => {
        const hit = this.hitOf(entry, ev);
        if (hit) this.openDetail(rows[hit.row]);
      });
      this.heatmaps.push(entry);
    }
    Object.assign(this.element.dataset, {
      state: "drawn",
      rows: String(rows.length),
      runs: String(this.shown.length),
      drawMs: drawMs.toFixed(1),
      renderMs: (performance.now() - t0).toFixed(1),
    });
  }

  /** Shades the step range ``steps`` ([from, to]) on the heatmap of ``run`` (every run's when null); null clears. */
  highlight(steps, run = null) {
    this.highlighted = steps ? { steps, run } : null;
    if (steps) {
      this.element.dataset.highlight = `${steps[0]}-${steps[1]}`;
      this.element.dataset.highlightRun = run || "";
    } else {
      delete this.element.dataset.highlight;
      delete this.element.dataset.highlightRun;
    }
    this.element.classList.toggle("ms-highlighted", Boolean(steps));
    if (steps && run && run !== this.primary && run !== this.compare && this.runs.some((r) => r.run === run)) {
      // The finding's run is not on screen: show it (the band is drawn with the new maps).
      this.primary = run;
      this.fillRunSelects();
      if (this.active) this.reload();
      return;
    }
    for (const entry of this.heatmaps || []) this.drawBand(entry);
  }

  drawBand(entry) {
    const old = entry.canvasHost.querySelector(".ms-heatmap-band");
    if (old) old.remove();
    delete entry.host.dataset.highlightCols;
    const h = this.highlighted;
    if (!h || (h.run && h.run !== entry.run)) return;
    const cols = columnRange(entry.d.steps, h.steps[0], h.steps[1]);
    if (!cols) {
      entry.host.dataset.highlightCols = "outside";
      return;
    }
    const n = entry.d.cols;
    const left = (cols[0] / n) * entry.width;
    const width = Math.max(2, ((cols[1] - cols[0] + 1) / n) * entry.width);
    entry.host.dataset.highlightCols = `${cols[0]}-${cols[1]}`;
    entry.canvasHost.append(el("div", {
      class: "ms-heatmap-band",
      "data-testid": "heatmap-band",
      title: `steps ${formatStep(h.steps[0])}\u2013${formatStep(h.steps[1])}`,
      style: { left: `${left}px`, width: `${width}px` },
    }));
  }

  renderLabels(rows, rowH) {
    clear(this.labels);
    // Leave room for the run title line above the maps.
    this.labels.append(el("div", { class: "ms-heatmap-run ms-heatmap-labels-head", "data-testid": "heatmap-y-title", text: `layer (${rows.length} row${rows.length === 1 ? "" : "s"})` }));
    const showText = rowH >= 9;
    const list = el("div", { class: "ms-heatmap-label-list", style: { height: `${rows.length * rowH}px` } });
    rows.forEach((row, i) => {
      const stat = row.kind === "layer" ? this.stats[row.layer] : null;
      const mark = stat ? stat.mark : null;
      const label = el("div", {
        class: `ms-heatmap-label ms-heatmap-${row.kind}${showText ? "" : " ms-heatmap-label-tiny"}`,
        "data-testid": "heatmap-row",
        "data-row": String(i),
        "data-kind": row.kind,
        "data-layer": row.fullName,
        "data-mark": mark || "",
        title: row.kind === "group" ? `${row.fullName} (${row.members.length} layers)` : row.fullName,
        style: { height: `${rowH}px`, lineHeight: `${rowH}px`, paddingLeft: `${4 + row.depth * 10}px`, fontSize: showText ? "" : "0px" },
        on: { click: () => this.onLabelClick(row) },
      });
      if (row.kind === "group") {
        label.append(el("span", { class: "ms-heatmap-chevron", "aria-hidden": "true", text: row.expanded ? "▾" : "▸" }));
        label.setAttribute("aria-expanded", String(row.expanded));
      }
      label.append(el("span", { class: "ms-heatmap-label-text", text: row.label }));
      if (row.kind === "group") label.append(el("span", { class: "ms-muted ms-heatmap-count", text: ` ${row.members.length}` }));
      if (mark && showText) {
        label.append(el("span", { class: `ms-mark ms-mark-${mark}`, "data-testid": "heatmap-mark", text: this.markText[mark].text, title: this.markText[mark].title }));
      } else if (mark) {
        label.classList.add(`ms-heatmap-label-marked-${mark}`);
      }
      list.append(label);
    });
    this.labels.append(list);
  }

  renderAxis(axis, d, width) {
    clear(axis);
    if (!d.cols) return;
    const ticks = stepTicks(d.steps, width);
    for (const t of ticks) {
      axis.append(el("span", { class: `ms-heatmap-tick ms-tick-${t.align}`, "data-testid": "heatmap-tick", "data-step": String(t.step), style: { left: `${t.x}px` }, text: formatStep(t.step) }));
    }
    axis.append(el("div", { class: "ms-axis-title", "data-testid": "heatmap-x-title", text: "step" }));
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
      const pos = ((t.value - scale.lo) / (scale.hi - scale.lo)) * 100;
      ticks.append(el("span", { class: "ms-heatmap-tick", style: { left: `${pos}%` }, text: t.label }));
    }
    const specials = el("div", { class: "ms-heatmap-legend-specials" });
    const swatch = (key, text) => el("span", { class: "ms-heatmap-special" }, el("span", { class: "ms-swatch", style: { background: SPECIAL_COLORS[key] } }), text);
    specials.append(swatch("nonfinite", "NaN / Inf"));
    if (scale.isLog) specials.append(swatch("zero", this.scaleKind === "ratio" ? "0 (weight unchanged)" : "0"));
    specials.append(el("span", { class: "ms-heatmap-special" }, el("span", { class: "ms-swatch ms-swatch-missing" }), "not recorded"));
    this.legend.append(
      el("div", { class: "ms-heatmap-legend-scale" }, bar, ticks),
      specials,
      el("div", { class: "ms-muted ms-heatmap-legend-note", text: this.scaleNote[this.scaleKind] || "" }),
    );
    this.legend.dataset.scale = this.scaleKind;
    this.legend.dataset.lo = String(scale.lo);
    this.legend.dataset.hi = String(scale.hi);
  }

  renderNotes() {
    clear(this.notes);
    const primary = this.shown[0];
    const counts = { slow: 0, frozen: 0, fast: 0, nonfinite: 0 };
    for (const s of primary.d.stats) if (s.mark) counts[s.mark] += 1;
    const add = (text, title, bad, testid) =>
      this.notes.append(el("span", { class: `ms-note${bad ? " ms-note-bad" : ""}`, title, text, "data-testid": testid }));
    if (this.scaleKind === "ratio") {
      const slow = counts.slow + counts.frozen;
      if (slow) add(`${slow} layer${slow === 1 ? "" : "s"} not learning in ${primary.run}`, `Mean update ratio below ${formatValue(this.marks.raw.slow)}, or weight unchanged`, true, "note-slow");
      if (counts.fast) add(`${counts.fast} layer${counts.fast === 1 ? "" : "s"} too fast in ${primary.run}`, `Mean update ratio above ${formatValue(this.marks.raw.fast)}`, true, "note-fast");
    }
    if (counts.nonfinite || primary.d.summary.nonfinite) add(`${primary.d.summary.nonfinite} NaN/Inf value${primary.d.summary.nonfinite === 1 ? "" : "s"}`, "Cells with NaN or infinite values are magenta", true, "note-nonfinite");
    for (const s of this.shown) {
      if (s.d.downsampled) add(`${s.run}: ${s.d.cols.toLocaleString()} of ${s.d.total_steps.toLocaleString()} steps (merged)`, "Consecutive steps are merged: mean of the finite values, or the first NaN/Inf", false, "note-downsampled");
    }
  }

  hitOf(entry, ev) {
    const rect = entry.hm.canvas.getBoundingClientRect();
    return entry.hm.hit(ev.clientX - rect.left, ev.clientY - rect.top);
  }

  onHover(entry, ev) {
    const hit = this.hitOf(entry, ev);
    if (!hit) {
      this.tooltip.hidden = true;
      return;
    }
    const row = this.rowsModel[hit.row];
    const data = entry.rowData[hit.row];
    const step = entry.d.steps[hit.col];
    let value = NaN;
    let missing = true;
    if (data) {
      missing = Boolean(data.missing && data.missing[hit.col]);
      value = data.values[hit.col];
    }
    clear(this.tooltip);
    const lines = [
      ["Run", entry.run],
      [row.kind === "group" ? "Group" : "Layer", row.fullName],
      ["Step", String(step)],
      ["Value", !data ? "not in this run" : missing ? "not recorded" : formatValue(value)],
    ];
    if (row.kind === "group" && data) lines.push(["", `geometric mean of ${data.count} layers`]);
    if (entry.d.downsampled) lines.push(["", `steps merged up to ${step}`]);
    const table = el("table", { class: "ms-tooltip-table" });
    for (const [k, v] of lines) table.append(el("tr", null, el("th", { text: k }), el("td", { class: k === "Value" || k === "Step" ? "ms-num" : "", text: v })));
    this.tooltip.append(table);
    Object.assign(this.tooltip.dataset, {
      run: entry.run,
      layer: row.fullName,
      kind: row.kind,
      step: String(step),
      value: !data || missing ? "" : String(value),
      row: String(hit.row),
      col: String(hit.col),
    });
    this.tooltip.hidden = false;
    const body = this.tooltip.parentNode.getBoundingClientRect();
    const tw = this.tooltip.offsetWidth;
    let x = ev.clientX - body.left + 14;
    if (x + tw > body.width) x = Math.max(0, ev.clientX - body.left - tw - 14);
    this.tooltip.style.left = `${x}px`;
    this.tooltip.style.top = `${ev.clientY - body.top + 12}px`;
  }

  onLabelClick(row) {
    if (row.kind === "group") {
      this.toggled.set(row.id, !row.expanded);
      this.layoutRows();
      this.render();
      return;
    }
    this.openDetail(row);
  }

  /** The line chart of one layer (full precision from the server) or group (its aggregate) for the shown runs. */
  async openDetail(row, { keep = false } = {}) {
    this.detail = { row };
    const generation = (this.detailGeneration = (this.detailGeneration || 0) + 1);
    if (!keep || !this.detailChart) {
      clear(this.detailHost);
      const close = el("button", { type: "button", class: "ms-icon-button", title: "Close", "aria-label": "Close", "data-testid": "layer-detail-close", text: "✕", on: { click: () => this.closeDetail() } });
      this.detailTitle = el("div", { class: "ms-card-title", "data-testid": "layer-detail-title" });
      this.detailChartHost = el("div", { class: "ms-chart", "data-testid": "layer-detail-chart", "data-state": "loading" });
      this.detailHost.append(el("div", { class: "ms-card-header" }, el("div", { class: "ms-card-titles" }, this.detailTitle), close), this.detailChartHost);
      if (this.detailChart) this.detailChart.destroy();
      this.detailChart = null;
    }
    this.detailTitle.textContent = row.kind === "group" ? `${row.fullName} (geometric mean of ${row.members.length} layers)` : row.fullName;
    this.detailHost.dataset.layer = row.fullName;
    this.detailHost.hidden = false;
    const series = await Promise.all(
      (this.shown || []).map(async (s) => {
        if (row.kind === "layer") {
          if (!s.d.index.has(this.names[row.layer])) return null;
          try {
            return { run: s.run, color: s.color, data: await fetchLayer(s.run, this.tag, this.names[row.layer]) };
          } catch (e) {
            /* fall back to the heatmap's values */
          }
        }
        const data = this.rowData(s.d, row);
        if (!data) return null;
        const points = [];
        for (let c = 0; c < s.d.cols; c++) if (!(data.missing && data.missing[c])) points.push([s.d.steps[c], s.d.wall_times[c], data.values[c]]);
        return { run: s.run, color: s.color, data: { points, interval: null, total_points: points.length, downsampled: false } };
      }),
    );
    if (generation !== this.detailGeneration) return;
    if (!this.detailChart) this.detailChart = new LineChart(this.detailChartHost, { height: 200, yAxis: this.yAxis });
    const opts = { ...this.chartOpts, showInterval: false, logY: this.scaleKind !== "linear" };
    const drawn = this.detailChart.update(series.filter(Boolean), opts);
    Object.assign(this.detailChartHost.dataset, { state: "drawn", points: String(drawn.points), layer: row.fullName });
  }

  closeDetail() {
    this.detail = null;
    this.detailHost.hidden = true;
    if (this.detailChart) this.detailChart.destroy();
    this.detailChart = null;
    clear(this.detailHost);
  }

  destroy() {
    if (this.resizeObserver) this.resizeObserver.disconnect();
    if (this.detailChart) this.detailChart.destroy();
    this.element.remove();
  }
}
