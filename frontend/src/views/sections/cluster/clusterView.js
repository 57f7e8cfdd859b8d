// The "Cluster" section: the ranks of a multi-rank run as rows of a heatmap (ranks x steps, grouped by node), one
// metric at a time (step time, data wait, local gradient norm, local loss, host / device memory), from the
// `clusters` / `cluster` routes. A rank that stopped writing shows as a row that ends (and is marked); hovering
// shows rank, node, step and value; a click on a row adds that rank's curve below (full precision). Shown only when
// the logdir holds a cluster; refreshed with the dashboard. Rank and node names only ever reach the page as text.

import css from "./cluster.css?inline";
import { fetchCluster, fetchClusterRank, fetchClusters } from "../../../api/cluster.js";
import { makeScale, lutCss } from "../../../chart/colorScale.js";
import { formatStep, formatValue } from "../../../chart/format.js";
import { HeatmapCanvas } from "../../../chart/heatmap.js";
import { LineChart } from "../../../chart/lineChart.js";
import { el, clear } from "../../../base/dom.js";
import { sectionShell } from "../../sectionShell.js";

const SETTINGS_KEY = "tb-mindspore.cluster.v1";
const MAX_HEIGHT = 640;
const MAX_STEPS = 1000;
const MAX_CURVES = 8;
const CURVE_COLORS = ["#1a73e8", "#d93025", "#188038", "#e37400", "#9334e6", "#00838f", "#c5221f", "#5f6368"];
const LABELED_ROWS = 128; // above this many ranks only the nodes are labelled (hover names the rank)

export function injectClusterStyles() {
  if (document.getElementById("ms-cluster-styles")) return;
  const style = document.createElement("style");
  style.id = "ms-cluster-styles";
  style.textContent = css;
  document.head.appendChild(style);
}

/** Rows of the heatmap: a blank row before each node's ranks (its label), then one row per rank. */
export function layoutRows(data) {
  const out = [];
  let node = null;
  data.ranks.forEach((r, i) => {
    if (r.node !== node) {
      node = r.node;
      out.push({ kind: "node", node, index: -1 });
    }
    out.push({ kind: "rank", node, index: i, rank: r.rank });
  });
  return out;
}

/** Ranks whose rows end before the newest step any rank wrote (stopped: hung or dead). */
export function stoppedRanks(data) {
  if (data.lastStep === null) return [];
  return data.ranks.filter((r) => r.lastStep !== null && r.lastStep < data.lastStep).map((r) => r.rank);
}

class ClusterSection {
  constructor() {
    const shell = sectionShell({
      testid: "cluster-section",
      title: "Cluster",
      subtitle: "ranks x steps, grouped by node",
      settingsKey: SETTINGS_KEY,
      extraClass: "ms-cluster-section",
    });
    this.element = shell.element;
    this.body = shell.body;
    this.count = shell.count;
    this.clusters = [];
    this.run = "";
    this.metric = "step_time_ms";
    this.data = null;
    this.curves = []; // ranks shown as curves
    this.generation = 0;
    this.runSelect = el("select", { class: "ms-select", "data-testid": "cluster-run", title: "Cluster", on: { change: () => this.pick(this.runSelect.value, this.metric) } });
    this.metricSelect = el("select", { class: "ms-select", "data-testid": "cluster-metric", title: "Metric", on: { change: () => this.pick(this.run, this.metricSelect.value) } });
    this.clearButton = el("button", { type: "button", class: "ms-button", "data-testid": "cluster-clear-curves", text: "Clear curves", hidden: true, on: { click: () => this.clearCurves() } });
    this.status = el("div", { class: "ms-chart-status", "data-testid": "cluster-status", text: "Loading…" });
    this.legend = el("div", { class: "ms-cluster-legend", "data-testid": "cluster-legend" });
    this.notes = el("div", { class: "ms-chart-notes", "data-testid": "cluster-notes" });
    this.labels = el("div", { class: "ms-cluster-labels", "data-testid": "cluster-labels" });
    this.maps = el("div", { class: "ms-cluster-map" });
    this.heatmap = new HeatmapCanvas(this.maps);
    this.tooltip = el("div", { class: "ms-tooltip ms-cluster-tooltip", role: "tooltip", "data-testid": "cluster-tooltip", hidden: true });
    this.chartHost = el("div", { class: "ms-cluster-chart", "data-testid": "cluster-chart", hidden: true });
    this.card = el(
      "div",
      { class: "ms-card ms-cluster-card", "data-testid": "cluster-panel", "data-state": "idle" },
      el("div", { class: "ms-heatmap-controls" }, this.runSelect, this.metricSelect, this.clearButton),
      this.legend,
      this.status,
      el("div", { class: "ms-cluster-body" }, el("div", { class: "ms-cluster-grid" }, this.labels, this.maps), this.tooltip),
      this.notes,
      this.chartHost,
    );
    this.body.appendChild(this.card);
    this.maps.addEventListener("mousemove", (ev) => this.hover(ev));
    this.maps.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
    this.maps.addEventListener("click", (ev) => this.click(ev));
    this.resizeObserver =
      typeof ResizeObserver !== "undefined"
        ? new ResizeObserver(() => {
            if (this.data && Math.abs(this.maps.clientWidth - (this.lastWidth || 0)) > 2) this.draw();
          })
        : null;
    if (this.resizeObserver) this.resizeObserver.observe(this.card);
  }

  async refresh() {
    let body;
    try {
      body = await fetchClusters();
    } catch (e) {
      this.element.hidden = true;
      return;
    }
    this.clusters = Array.isArray(body.clusters) ? body.clusters : [];
    this.element.hidden = this.clusters.length === 0;
    this.element.dataset.state = this.clusters.length ? "ready" : "empty";
    this.count.textContent = this.clusters.length ? String(this.clusters.length) : "";
    if (!this.clusters.length) return;
    clear(this.runSelect);
    for (const c of this.clusters) {
      const label = `${c.run} · ${c.ranks} rank${c.ranks === 1 ? "" : "s"}${c.nodes > 1 ? ` on ${c.nodes} nodes` : ""}`;
      this.runSelect.appendChild(el("option", { value: c.run, text: label }));
    }
    const names = this.clusters.map((c) => c.run);
    const run = names.includes(this.run) ? this.run : names[0];
    await this.pick(run, this.metric, { refresh: true });
  }

  metricsOf(run) {
    const c = this.clusters.find((x) => x.run === run);
    return c && Array.isArray(c.metrics) ? c.metrics : [];
  }

  async pick(run, metric, { refresh = false } = {}) {
    const metrics = this.metricsOf(run);
    if (!metrics.includes(metric)) metric = metrics[0] || "step_time_ms";
    if (run !== this.run) this.curves = [];
    this.run = run;
    this.metric = metric;
    this.runSelect.value = run;
    clear(this.metricSelect);
    for (const m of metrics) this.metricSelect.appendChild(el("option", { value: m, text: METRIC_LABELS[m] || m }));
    this.metricSelect.value = metric;
    const gen = ++this.generation;
    this.card.dataset.state = "loading";
    if (!refresh || !this.data) this.status.textContent = "Loading…";
    this.status.hidden = false;
    const t0 = performance.now();
    let data;
    try {
      data = await fetchCluster(run, metric, MAX_STEPS);
    } catch (e) {
      if (gen !== this.generation) return;
      this.card.dataset.state = "error";
      this.status.textContent = `Could not load the cluster: ${e.message}`;
      return;
    }
    if (gen !== this.generation) return;
    this.data = data;
    this.draw();
    this.card.dataset.loadMs = String(Math.round(performance.now() - t0));
    await this.drawCurves();
  }

  draw() {
    const data = this.data;
    if (!data) return;
    const t0 = performance.now();
    const rows = layoutRows(data);
    this.rows = rows;
    const n = rows.length;
    const rowHeight = Math.max(1, Math.min(14, Math.floor(MAX_HEIGHT / Math.max(1, n))));
    this.rowHeight = rowHeight;
    const arrays = [];
    const heatRows = rows.map((r) => {
      if (r.kind !== "rank") return null;
      const values = data.values.subarray(r.index * data.cols, (r.index + 1) * data.cols);
      const missing = data.missing.subarray(r.index * data.cols, (r.index + 1) * data.cols);
      arrays.push(values);
      return { values, missing };
    });
    const scale = makeScale(data.scale, arrays);
    this.scale = scale;
    const width = Math.max(120, this.maps.clientWidth || 600);
    this.lastWidth = width;
    this.heatmap.draw({ rows: heatRows, cols: data.cols, rowHeight, width, scale });
    this.drawLabels(rows, rowHeight, data);
    this.drawLegend(scale, data);
    const stopped = stoppedRanks(data);
    const notes = [];
    if (data.downsampled) notes.push(`${data.totalSteps} recorded steps merged into ${data.cols} columns (each the mean of its steps).`);
    if (stopped.length) notes.push(`Stopped writing before step ${formatStep(data.lastStep)}: rank${stopped.length > 1 ? "s" : ""} ${stopped.slice(0, 12).join(", ")}${stopped.length > 12 ? ", …" : ""}.`);
    notes.push("Click a rank to add its curve.");
    this.notes.textContent = notes.join(" ");
    this.status.hidden = true;
    this.card.dataset.state = "ready";
    this.card.dataset.ranks = String(data.rows);
    this.card.dataset.cols = String(data.cols);
    this.card.dataset.stopped = stopped.join(",");
    this.card.dataset.renderMs = String(Math.round(performance.now() - t0));
  }

  drawLabels(rows, rowHeight, data) {
    clear(this.labels);
    this.labels.style.height = `${rows.length * rowHeight}px`;
    const labelRanks = data.rows <= LABELED_ROWS && rowHeight >= 8;
    const stopped = new Set(stoppedRanks(data));
    rows.forEach((r, i) => {
      const top = `${i * rowHeight}px`;
      if (r.kind === "node") {
        this.labels.appendChild(el("div", { class: "ms-cluster-node", "data-testid": "cluster-node", style: { top }, text: r.node ? `node ${r.node}` : "node ?", title: r.node }));
      } else if (labelRanks) {
        const refused = (data.ranks[r.index] || {}).refused;
        const mark = refused
          ? el("span", { class: "ms-cluster-mark", "data-testid": "cluster-refused", text: "refused", title: `This rank's file was not read: ${refused}` })
          : stopped.has(r.rank) ? el("span", { class: "ms-cluster-mark", text: "stopped", title: "This rank stopped writing while others went on" }) : null;
        this.labels.appendChild(el("div", { class: "ms-cluster-rank", "data-testid": "cluster-rank", "data-rank": String(r.rank), style: { top, height: `${rowHeight}px` } }, `rank ${r.rank}`, mark));
      }
    });
  }

  drawLegend(scale, data) {
    clear(this.legend);
    const bar = el("div", { class: "ms-cluster-legend-bar" });
    const stops = [];
    for (let i = 0; i <= 8; i++) stops.push(lutCss(scale.lut, Math.round((i / 8) * 255)));
    bar.style.background = `linear-gradient(to right, ${stops.join(", ")})`;
    const lo = scale.isLog ? Math.pow(10, scale.lo) : scale.lo;
    const hi = scale.isLog ? Math.pow(10, scale.hi) : scale.hi;
    const unit = data.unit ? ` ${data.unit}` : "";
    this.legend.append(
      el("span", { text: `${data.title}${scale.isLog ? " (log scale)" : ""}: ${formatValue(lo)}${unit}` }),
      bar,
      el("span", { text: `${formatValue(hi)}${unit}` }),
    );
  }

  cellAt(ev) {
    const rect = this.heatmap.canvas.getBoundingClientRect();
    const hit = this.heatmap.hit(ev.clientX - rect.left, ev.clientY - rect.top);
    if (!hit || !this.rows || !this.data) return null;
    const row = this.rows[hit.row];
    if (!row || row.kind !== "rank") return null;
    return { row, col: hit.col };
  }

  hover(ev) {
    const cell = this.cellAt(ev);
    if (!cell) {
      this.tooltip.hidden = true;
      return;
    }
    const d = this.data;
    const i = cell.row.index * d.cols + cell.col;
    const refused = (d.ranks[cell.row.index] || {}).refused;
    const value = refused ? `file refused: ${refused}` : d.missing[i] ? "no row (rank silent)" : `${formatValue(d.values[i])}${d.unit ? ` ${d.unit}` : ""}`;
    clear(this.tooltip);
    this.tooltip.append(
      el("div", { text: `rank ${cell.row.rank}${cell.row.node ? ` · node ${cell.row.node}` : ""}` }),
      el("div", { text: `step ${formatStep(d.steps[cell.col])}: ${value}` }),
    );
    const host = this.tooltip.parentElement.getBoundingClientRect();
    this.tooltip.style.left = `${ev.clientX - host.left + 12}px`;
    this.tooltip.style.top = `${ev.clientY - host.top + 12}px`;
    this.tooltip.hidden = false;
  }

  click(ev) {
    const cell = this.cellAt(ev);
    if (!cell) return;
    const rank = cell.row.rank;
    if (!this.curves.includes(rank)) {
      this.curves.push(rank);
      if (this.curves.length > MAX_CURVES) this.curves.shift();
    }
    this.drawCurves();
  }

  clearCurves() {
    this.curves = [];
    this.drawCurves();
  }

  async drawCurves() {
    this.clearButton.hidden = this.curves.length === 0;
    if (!this.curves.length) {
      this.chartHost.hidden = true;
      if (this.chart) {
        this.chart.destroy();
        this.chart = null;
      }
      return;
    }
    const { run, metric } = this;
    const series = await Promise.all(
      this.curves.map((rank, i) =>
        fetchClusterRank(run, metric, rank)
          .then((points) => ({
            run: `rank ${rank}`,
            color: CURVE_COLORS[i % CURVE_COLORS.length],
            data: { run: `rank ${rank}`, tag: metric, total_points: points.length, downsampled: false, points, interval: null },
          }))
          .catch(() => null),
      ),
    );
    if (run !== this.run || metric !== this.metric) return;
    this.chartHost.hidden = false;
    if (!this.chart) {
      const unit = this.data ? this.data.unit : "";
      this.chart = new LineChart(this.chartHost, { height: 200, yAxis: { label: METRIC_LABELS[metric] || metric, unit } });
    }
    this.chart.update(series.filter(Boolean), { xAxis: "step", smoothing: 0, logY: false, showInterval: false });
    this.chartHost.dataset.ranks = this.curves.join(",");
  }
}

const METRIC_LABELS = {
  step_time_ms: "Step time",
  data_wait_ms: "Data wait",
  grad_norm: "Local gradient norm",
  loss: "Local loss",
  host_memory_mb: "Host memory (RSS)",
  device_memory_mb: "Device memory",
  local_grad_norm: "Device-local gradient norm",
  local_loss: "Device-local loss",
};

/** Mounts the Cluster section into the dashboard (hidden until the logdir holds a cluster). */
export function mountCluster(dashboard) {
  injectClusterStyles();
  const section = new ClusterSection();
  const host = (dashboard && dashboard.main) || document.body;
  host.appendChild(section.element);
  // first read once the charts on screen have their series (the dashboard's first listing)
  if (dashboard && dashboard.firstChartsShown) dashboard.firstChartsShown.then(() => section.refresh());
  else section.refresh();
  if (dashboard) dashboard.events.on("refresh", () => section.refresh());
  return section;
}
