// Distribution over time (uPlot): for each run, nested quantile bands of a histogram series per step (min-max,
// ±1.5σ, ±1σ, ±0.5σ of a normal distribution: TensorBoard's Distributions) and the median as a line; a tooltip with
// run, step, median, ±1σ and min/max.

import uPlot from "uplot";
import { withAlpha } from "../base/colors.js";
import { el, clear } from "../base/dom.js";
import { displayRunName } from "../base/runNames.js";
import { formatDuration, formatStep, formatValue, formatWallTime } from "./format.js";
import { axisStyle, X_UNITS } from "./lineChart.js";
import { nearestIndex } from "./series.js";

// Quantile column pairs (indices into q0..q8) of the bands, outermost first, and their opacity.
const BANDS = [
  [0, 8, 0.1],
  [1, 7, 0.16],
  [2, 6, 0.24],
  [3, 5, 0.34],
];

/**
 * x values and quantile columns of one run.
 * @param {{rows: number[][]}} data  decoded histograms answer: rows [step, wall, count, q0..q8]
 */
export function prepareBands(data, xAxis = "step") {
  const rows = (data.rows || []).filter((r) => Number.isFinite(r[0]));
  const wall0 = rows.length ? rows[0][1] : 0;
  const xOf = (r) => (xAxis === "step" || xAxis === "samples" ? r[0] : xAxis === "relative" ? r[1] - wall0 : r[1]);
  const sorted = rows.map((r) => ({ x: xOf(r), r })).filter((e) => Number.isFinite(e.x)).sort((a, b) => a.x - b.x);
  const xs = [];
  const qs = Array.from({ length: 9 }, () => []);
  const steps = [];
  const walls = [];
  const counts = [];
  for (const { x, r } of sorted) {
    if (xs.length && xs[xs.length - 1] === x) continue;
    xs.push(x);
    steps.push(r[0]);
    walls.push(r[1]);
    counts.push(r[2]);
    for (let k = 0; k < 9; k++) {
      const v = r[3 + k];
      qs[k].push(Number.isFinite(v) ? v : null);
    }
  }
  return { xs, qs, steps, walls, counts };
}

export class BandsChart {
  constructor(host, { height = 220 } = {}) {
    this.host = host;
    this.height = height;
    this.plot = null;
    this.entries = [];
    this.tooltip = el("div", { class: "ms-tooltip", role: "tooltip", "data-testid": "bands-tooltip", hidden: true });
    this.canvasHost = el("div", { class: "ms-plot" });
    host.append(this.canvasHost, this.tooltip);
    this.resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => this.resize()) : null;
    if (this.resizeObserver) this.resizeObserver.observe(host);
  }

  /**
   * @param {{run: string, color: string, data: object}[]} runs  decoded histograms answers
   * @param {{xAxis: string}} opts
   * @returns {{steps: number, runs: number}}
   */
  update(runs, opts) {
    this.opts = { ...opts };
    this.entries = runs.map((r) => ({ run: r.run, color: r.color, prep: prepareBands(r.data, opts.xAxis) }));
    const tables = this.entries.map((e) => [e.prep.xs, ...e.prep.qs]);
    const data = tables.length ? uPlot.join(tables) : [[]];
    const series = [{ label: "x" }];
    const bands = [];
    this.entries.forEach((e, i) => {
      const base = 1 + i * 9;
      for (let k = 0; k < 9; k++) {
        const median = k === 4;
        series.push({
          label: `${e.run} q${k}`,
          stroke: median ? e.color : "transparent",
          width: median ? 1.75 : 0,
          spanGaps: true,
          points: { show: false },
        });
      }
      for (const [lo, hi, alpha] of BANDS) bands.push({ series: [base + hi, base + lo], fill: withAlpha(e.color, alpha) });
    });
    if (this.plot) this.plot.destroy();
    clear(this.canvasHost);
    const xValues =
      opts.xAxis === "step"
        ? (u, splits) => splits.map((v) => (v === null ? "" : formatStep(v)))
        : opts.xAxis === "relative"
          ? (u, splits) => splits.map((v) => (v === null ? "" : formatDuration(v)))
          : undefined;
    this.plot = new uPlot(
      {
        width: Math.max(this.host.clientWidth, 200),
        height: this.height,
        legend: { show: false },
        padding: [12, 12, 0, 0],
        scales: { x: { time: opts.xAxis === "wall" } },
        axes: [
          { ...axisStyle(), label: X_UNITS[opts.xAxis] || "x", labelSize: 18, labelGap: 0, ...(xValues ? { values: xValues } : {}) },
          { ...axisStyle(), size: 60, label: "value", labelSize: 16, labelGap: 0, values: (u, splits) => splits.map((v) => (v === null ? "" : formatValue(v))) },
        ],
        cursor: { drag: { x: true, y: false, setScale: true }, points: { show: false } },
        series,
        bands,
        hooks: { setCursor: [(u) => this.showTooltip(u)] },
      },
      data,
      this.canvasHost,
    );
    this.plot.over.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
    let steps = 0;
    for (const e of this.entries) steps += e.prep.xs.length;
    return { steps, runs: this.entries.length };
  }

  showTooltip(u) {
    const left = u.cursor.left;
    if (left === undefined || left === null || left < 0 || !this.entries.length) {
      this.tooltip.hidden = true;
      return;
    }
    const x = u.posToVal(left, "x");
    const table = el("table", { class: "ms-tooltip-table" });
    table.append(el("tr", null, el("th", null, ""), el("th", { text: "Run" }), el("th", { text: "Step" }), el("th", { text: "Median" }), el("th", { text: "±1σ" }), el("th", { text: "Min … max" })));
    let any = false;
    for (const e of this.entries) {
      const i = nearestIndex(e.prep.xs, x);
      if (i < 0) continue;
      any = true;
      const q = (k) => e.prep.qs[k][i];
      const tr = el("tr", { "data-run": e.run, "data-step": String(e.prep.steps[i]), "data-median": String(q(4)) });
      tr.append(
        el("td", null, el("span", { class: "ms-swatch", style: { background: e.color } })),
        el("td", { class: "ms-tooltip-run", text: displayRunName(e.run), title: e.run }),
        el("td", { class: "ms-num", text: this.opts.xAxis === "wall" ? formatWallTime(e.prep.walls[i]) : String(e.prep.steps[i]) }),
        el("td", { class: "ms-num", text: formatValue(q(4)) }),
        el("td", { class: "ms-num", text: `${formatValue(q(2))} … ${formatValue(q(6))}` }),
        el("td", { class: "ms-num", text: `${formatValue(q(0))} … ${formatValue(q(8))}` }),
      );
      table.append(tr);
    }
    if (!any) {
      this.tooltip.hidden = true;
      return;
    }
    clear(this.tooltip).append(table);
    this.tooltip.hidden = false;
    const tw = this.tooltip.offsetWidth;
    let tx = u.over.offsetLeft + left + 14;
    if (tx + tw > this.host.clientWidth) tx = Math.max(0, u.over.offsetLeft + left - tw - 14);
    this.tooltip.style.left = `${tx}px`;
    this.tooltip.style.top = `${u.over.offsetTop + Math.max(0, (u.cursor.top || 0) - 10)}px`;
  }

  resize() {
    if (!this.plot) return;
    const width = Math.max(this.host.clientWidth, 200);
    if (Math.abs(width - this.plot.width) > 1) this.plot.setSize({ width, height: this.height });
  }

  destroy() {
    if (this.resizeObserver) this.resizeObserver.disconnect();
    if (this.plot) this.plot.destroy();
    this.plot = null;
    clear(this.host);
  }
}
