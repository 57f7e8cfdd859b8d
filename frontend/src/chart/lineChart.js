// One line chart (uPlot) with several runs: raw line, smoothed line, optional min/max band, markers for non-finite
// steps, axis titles with units, a tooltip with run / value / step / time and the interval's min / mean / max /
// count, drag to zoom (double click resets). Smoothing never hides the record: a series of fewer than
// SMOOTH_MIN_POINTS points keeps its raw line bold and draws the smoothed one faint (an EMA over a few points lags
// and flattens: on a sparse chart it read 5.5x the recorded value and moved a warm-up peak); a dense series is drawn
// as TensorBoard does (smoothed bold, raw faint).
// update() keeps the zoom when only the data changed (live refresh); a change of runs or axes rebuilds the plot and
// puts the zoomed x range back when the axis kind is the same. A user zoom (drag) and its reset (double click or
// resetZoom) are reported to onZoom, so the card can fetch the window at full resolution. A resumed run's restarts
// are marked with a dashed vertical line; its superseded segments are drawn dashed when opts.showSuperseded is set.

import uPlot from "uplot";
import { withAlpha } from "../base/colors.js";
import { el, clear } from "../base/dom.js";
import { displayRunName } from "../base/runNames.js";
import { formatDuration, formatStep, formatValue, formatWallTime, X_AXIS_LABELS } from "./format.js";
import { axisTitle } from "../base/contract.js";
import { themeColor } from "../base/theme.js";
import { nearestIndex, prepareSeries } from "./series.js";

const FONT = '11px Roboto, "Helvetica Neue", Arial, sans-serif';
/** Axis colors of the current theme (CSS custom properties of the page). */
export function axisStyle() {
  return {
    stroke: themeColor("--ms-muted", "#616161"),
    font: FONT,
    labelFont: FONT,
    grid: { stroke: themeColor("--ms-grid", "#eeeeee"), width: 1 },
    ticks: { stroke: themeColor("--ms-border", "#e0e0e0"), width: 1 },
  };
}
export const SMOOTH_MIN_POINTS = 100;
/** Whether a series' smoothed line is the bold one (smoothing on and enough points). */
export function smoothedIsBold(prep, smoothing) {
  return smoothing > 0 && prep.finiteCount >= SMOOTH_MIN_POINTS;
}
export const X_UNITS = { step: "step", relative: "time since the first point", wall: "wall time", samples: "samples seen" };
const NONFINITE_COLOR = "#d93025";
const RESTART_COLOR = "rgba(95, 99, 104, 0.9)";
const HIGHLIGHT_FILL = "rgba(249, 171, 0, 0.22)";
const HIGHLIGHT_STROKE = "rgba(227, 116, 0, 0.85)";

// Tick spacings: whole steps on a step axis, round durations on a relative-time axis.
const STEP_INCRS = [];
for (let p = 1; p <= 1e12; p *= 10) STEP_INCRS.push(p, 2 * p, 5 * p);
const DURATION_INCRS = [
  0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600,
  7200, 10800, 21600, 43200, 86400, 172800, 604800, 1209600, 2592000, 7776000, 31536000,
];

/** An x range with 3 % room on each side (at least one unit), for charts of points. */
function padRange(u, min, max) {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [min, max];
  const pad = Math.max((max - min) * 0.03, max === min ? 1 : 0);
  return [min - pad, max + pad];
}

export class LineChart {
  /**
   * @param {HTMLElement} host  element the chart fills (its width is followed)
   * @param {{height?: number, yAxis?: {label: string, unit: string}}} options  yAxis: the title of the y axis
   */
  constructor(host, { height = 220, yAxis = null, onZoom = null, points = false } = {}) {
    this.host = host;
    this.pointsOnly = points; // one-off values: a marker per value, no line between them and no smoothing
    this.onZoom = onZoom; // ({min, max}) after a user zoom, null after its reset
    this.pendingZoom = false;
    this.height = height;
    this.yAxis = yAxis;
    this.plot = null;
    this.key = null;
    this.entries = [];
    this.opts = null;
    this.zoomed = false;
    this.xRange = null;
    this.tooltip = el("div", { class: "ms-tooltip", role: "tooltip", "data-testid": "chart-tooltip", hidden: true });
    this.canvasHost = el("div", { class: "ms-plot" });
    host.append(this.canvasHost, this.tooltip);
    this.resizeObserver = typeof ResizeObserver !== "undefined" ? new ResizeObserver(() => this.resize()) : null;
    if (this.resizeObserver) this.resizeObserver.observe(host);
  }

  /**
   * @param {{run: string, color: string, data: object}[]} runs  decoded scalars responses, one per visible run
   * @param {{xAxis: string, logY: boolean, smoothing: number, showInterval: boolean}} opts
   * @returns {{points: number, runs: number, nonfinite: number}}  what is drawn
   */
  update(runs, opts) {
    if (this.pointsOnly) opts = { ...opts, smoothing: 0 };
    this.opts = { ...opts };
    const smoothOn = opts.smoothing > 0;
    this.entries = runs.map((r) => ({
      run: r.run,
      color: r.color,
      prep: prepareSeries(r.data, opts),
      // A reference line from another series of the run (e.g. the stability line), drawn raw and dashed.
      ref: r.reference && r.reference.points && r.reference.points.length ? prepareSeries(r.reference, { ...opts, smoothing: 0 }) : null,
      refLabel: r.referenceLabel || "reference",
      restarts: Array.isArray(r.data.restarts) ? r.data.restarts : [],
      markers: Array.isArray(r.data.markers) ? r.data.markers : [],
      parts: opts.showSuperseded && Array.isArray(r.data.superseded) ? r.data.superseded.filter((p) => p.points && p.points.length) : [],
    }));
    // Superseded segments: raw, on the same time origin as the run's own line.
    for (const e of this.entries) e.parts = e.parts.map((p) => prepareSeries(p, { ...opts, smoothing: 0 }, e.prep.wall0));
    const withBand = (e) => opts.showInterval && e.prep.band !== null;
    for (const e of this.entries) e.smoothBold = smoothedIsBold(e.prep, opts.smoothing);
    const key = JSON.stringify([
      this.entries.map((e) => [e.run, e.color, withBand(e), e.smoothBold, Boolean(e.ref), e.parts.length]),
      opts.xAxis,
      opts.logY,
      smoothOn,
      Boolean(opts.dark),
    ]);

    // uPlot wants one shared x array: its own join aligns the runs' tables (missing x values become gaps).
    const tables = [];
    for (const e of this.entries) {
      tables.push(smoothOn ? [e.prep.xs, e.prep.raw, e.prep.smoothed] : [e.prep.xs, e.prep.raw]);
      if (withBand(e)) tables.push([e.prep.band.xs, e.prep.band.hi, e.prep.band.lo]);
      if (e.ref) tables.push([e.ref.xs, e.ref.raw]);
      for (const part of e.parts) tables.push([part.xs, part.raw]);
    }
    const data = tables.length ? uPlot.join(tables) : [[]];

    const sameAxisKind = this.opts && this.key && JSON.parse(this.key)[1] === opts.xAxis;
    if (this.plot && key === this.key) {
      this.plot.setData(data, !this.zoomed);
    } else {
      const keepRange = this.zoomed && sameAxisKind && this.xRange ? this.xRange : null;
      this.build(data, opts, smoothOn, withBand);
      this.key = key;
      if (keepRange) {
        this.plot.setScale("x", keepRange);
        this.zoomed = true;
      } else {
        this.zoomed = false;
      }
    }
    this.host.dataset.zoomed = String(this.zoomed);
    let points = 0;
    let nonfinite = 0;
    for (const e of this.entries) {
      points += e.prep.finiteCount;
      nonfinite += e.prep.nonfiniteXs.length;
    }
    const faint = smoothOn ? this.entries.filter((e) => !e.smoothBold).length : 0;
    this.host.dataset.smoothing = !smoothOn ? "off" : faint === this.entries.length ? "raw-bold" : faint ? "mixed" : "smoothed-bold";
    this.host.dataset.drawnAs = this.pointsOnly ? "points" : "lines";
    const references = this.entries.filter((e) => e.ref).length;
    const restarts = this.entries.reduce((n, e) => n + e.restarts.length, 0);
    const superseded = this.entries.reduce((n, e) => n + e.parts.length, 0);
    this.host.dataset.restarts = String(restarts);
    this.host.dataset.superseded = String(superseded);
    return { points, runs: this.entries.length, nonfinite, sparseSmoothed: faint, references, restarts, superseded };
  }

  build(data, opts, smoothOn, withBand) {
    if (this.plot) this.plot.destroy();
    clear(this.canvasHost);
    const series = [{ label: X_AXIS_LABELS[opts.xAxis] || "x" }];
    const bands = [];
    for (const e of this.entries) {
      const rawFaint = smoothOn && e.smoothBold;
      series.push(
        this.pointsOnly
          ? { label: e.run, stroke: e.color, fill: e.color, width: 1, paths: () => null, points: { show: true, size: 8, space: 0, fill: e.color, stroke: e.color } }
          : {
              label: e.run,
              stroke: rawFaint ? withAlpha(e.color, 0.28) : e.color,
              width: rawFaint ? 1 : 1.5,
              spanGaps: true,
              points: { show: false },
            },
      );
      if (smoothOn) {
        series.push(
          e.smoothBold
            ? { label: e.run, stroke: e.color, width: 1.75, spanGaps: true, points: { show: false } }
            : { label: e.run, stroke: withAlpha(e.color, 0.45), width: 1, dash: [4, 3], spanGaps: true, points: { show: false } },
        );
      }
      if (withBand(e)) {
        const hi = series.length;
        const common = { stroke: "transparent", width: 0, spanGaps: true, points: { show: false } };
        series.push({ label: e.run + " max", ...common }, { label: e.run + " min", ...common });
        bands.push({ series: [hi, hi + 1], fill: withAlpha(e.color, 0.14) });
      }
      if (e.ref) {
        series.push({ label: `${e.run} ${e.refLabel}`, stroke: withAlpha(e.color, 0.8), width: 1.25, dash: [8, 4], spanGaps: true, points: { show: false } });
      }
      for (let i = 0; i < e.parts.length; i++) {
        series.push({ label: `${e.run} superseded`, stroke: withAlpha(e.color, 0.5), width: 1, dash: [3, 3], spanGaps: true, points: { show: false } });
      }
    }
    const xValues =
      opts.xAxis === "step" || opts.xAxis === "samples"
        ? (u, splits) => splits.map((v) => (v === null ? "" : formatStep(v)))
        : opts.xAxis === "relative"
          ? (u, splits) => splits.map((v) => (v === null ? "" : formatDuration(v)))
          : undefined;
    const AXIS = axisStyle();
    const yTitle = this.yAxis ? axisTitle(this.yAxis) : "";
    this.host.dataset.xTitle = X_UNITS[opts.xAxis] || "x";
    this.host.dataset.yTitle = yTitle;
    const options = {
      width: Math.max(this.host.clientWidth, 200),
      height: this.height,
      legend: { show: false },
      padding: [12, 12, 0, 0],
      scales: {
        // Points at the very ends of the x range would be cut in half by the plot's edge: leave them room.
        x: this.pointsOnly ? { time: opts.xAxis === "wall", range: padRange } : { time: opts.xAxis === "wall" },
        y: opts.logY ? { distr: 3, log: 10 } : {},
      },
      axes: [
        {
          ...AXIS,
          label: X_UNITS[opts.xAxis] || "x",
          labelSize: 18,
          labelGap: 0,
          ...(xValues ? { values: xValues } : {}),
          ...(opts.xAxis === "step" ? { incrs: STEP_INCRS } : opts.xAxis === "relative" ? { incrs: DURATION_INCRS } : {}),
        },
        {
          ...AXIS,
          size: 60,
          ...(yTitle ? { label: yTitle, labelSize: 16, labelGap: 0 } : {}),
          values: (u, splits) => splits.map((v) => (v === null ? "" : formatValue(v))),
        },
      ],
      cursor: {
        drag: { x: true, y: false, setScale: true },
        points: { show: false },
        focus: { prox: 24 },
      },
      series,
      bands,
      hooks: {
        setCursor: [(u) => this.showTooltip(u)],
        setScale: [
          (u, scale) => {
            const { min, max } = u.scales[scale];
            if (scale === "x") this.xRange = { min, max };
            if (scale === "x" && this.pendingZoom) {
              this.pendingZoom = false;
              if (this.onZoom) setTimeout(() => this.onZoom({ min, max }), 0);
            }
            // Exposed for tests and for anyone inspecting the page.
            this.host.dataset[scale + "Min"] = String(min);
            this.host.dataset[scale + "Max"] = String(max);
            this.host.dataset.zoomed = String(this.zoomed);
          },
        ],
        setSelect: [
          (u) => {
            if (u.select.width > 0) {
              this.zoomed = true;
              this.pendingZoom = true;
              this.host.dataset.zoomed = "true";
            }
          },
        ],
        draw: [(u) => this.drawNonFinite(u), (u) => this.drawRestarts(u), (u) => this.drawMarkers(u), (u) => this.drawHighlight(u)],
      },
    };
    this.plot = new uPlot(options, data, this.canvasHost);
    this.plot.over.addEventListener("dblclick", () => {
      const was = this.zoomed;
      this.zoomed = false;
      this.host.dataset.zoomed = "false";
      if (was && this.onZoom) setTimeout(() => this.onZoom(null), 0);
    });
    this.host.dataset.series = String(series.length - 1);
    this.plot.over.addEventListener("mouseleave", () => {
      this.tooltip.hidden = true;
    });
  }

  drawNonFinite(u) {
    const ctx = u.ctx;
    const { left, top, width } = u.bbox;
    const size = 5 * devicePixelRatio;
    ctx.save();
    for (const e of this.entries) {
      if (!e.prep.nonfiniteXs.length) continue;
      ctx.fillStyle = NONFINITE_COLOR;
      ctx.strokeStyle = e.color;
      ctx.lineWidth = devicePixelRatio;
      for (const x of e.prep.nonfiniteXs) {
        const px = u.valToPos(x, "x", true);
        if (!(px >= left && px <= left + width)) continue;
        ctx.beginPath();
        ctx.moveTo(px - size, top);
        ctx.lineTo(px + size, top);
        ctx.lineTo(px, top + size * 1.6);
        ctx.closePath();
        ctx.fill();
        ctx.stroke();
      }
    }
    ctx.restore();
  }

  /** A dashed grey vertical line at each restart step of a resumed run (where its steps went back). */
  drawRestarts(u) {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const seen = [];
    ctx.save();
    ctx.lineWidth = 1.5 * devicePixelRatio;
    ctx.setLineDash([5 * devicePixelRatio, 3 * devicePixelRatio]);
    for (const e of this.entries) {
      for (const r of e.restarts) {
        const x = this.stepToX(r.step, e.run);
        if (x === null) continue;
        const px = u.valToPos(x, "x", true);
        if (!(px >= left && px <= left + width)) continue;
        ctx.strokeStyle = RESTART_COLOR;
        ctx.beginPath();
        ctx.moveTo(Math.round(px) + 0.5, top);
        ctx.lineTo(Math.round(px) + 0.5, top + height);
        ctx.stroke();
        seen.push(`${e.run}@${r.step}:${Math.round(px / devicePixelRatio)}`);
      }
    }
    ctx.restore();
    this.host.dataset.restartMarks = seen.join(",");
  }

  /** Steps other writers marked (markers route): mindformers' abnormal global norm, a red line; its checkpoints,
   * a triangle on the step axis (green: healthy, orange: unhealthy, grey: health unknown). */
  drawMarkers(u) {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const seen = [];
    const size = 5 * devicePixelRatio;
    ctx.save();
    for (const e of this.entries) {
      for (const m of e.markers) {
        const x = this.stepToX(m.step, e.run);
        if (x === null) continue;
        const px = u.valToPos(x, "x", true);
        if (!(px >= left && px <= left + width)) continue;
        if (m.kind === "abnormal_global_norm") {
          ctx.strokeStyle = "#d93025";
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.setLineDash([]);
          ctx.beginPath();
          ctx.moveTo(Math.round(px) + 0.5, top);
          ctx.lineTo(Math.round(px) + 0.5, top + height);
          ctx.stroke();
        } else {
          ctx.fillStyle = m.healthy === true ? "#188038" : m.healthy === false ? "#e37400" : "#9e9e9e";
          ctx.beginPath();
          ctx.moveTo(px, top + height - size * 1.6);
          ctx.lineTo(px - size, top + height);
          ctx.lineTo(px + size, top + height);
          ctx.closePath();
          ctx.fill();
        }
        seen.push(`${e.run}@${m.step}:${m.kind}${m.kind === "checkpoint" ? (m.healthy === true ? "+" : m.healthy === false ? "-" : "?") : ""}`);
      }
    }
    ctx.restore();
    this.host.dataset.markers = seen.join(",");
  }

  /** Shades the steps [first, last] (of one run's x mapping when the axis is not the step), or clears with null. */
  setHighlight(steps, run = null) {
    this.highlight = steps ? { steps, run } : null;
    if (!steps) delete this.host.dataset.highlightPx;
    if (this.plot) this.plot.redraw(false);
  }

  /** The x value of a step on the current axis (the step itself on a step axis). */
  stepToX(step, run) {
    if (!this.opts || this.opts.xAxis === "step") return step;
    const e = this.entries.find((x) => x.run === run) || this.entries[0];
    if (!e || !e.prep.steps.length) return null;
    const i = nearestIndex(e.prep.steps, step);
    return e.prep.xs[i];
  }

  drawHighlight(u) {
    if (!this.highlight) return;
    const [first, last] = this.highlight.steps;
    const x0 = this.stepToX(first, this.highlight.run);
    const x1 = this.stepToX(last, this.highlight.run);
    if (x0 === null || x1 === null) return;
    const { left, top, width, height } = u.bbox;
    const minWidth = 6 * devicePixelRatio;
    let p0 = u.valToPos(x0, "x", true);
    let p1 = u.valToPos(x1, "x", true);
    if (p1 - p0 < minWidth) {
      const mid = (p0 + p1) / 2;
      p0 = mid - minWidth / 2;
      p1 = mid + minWidth / 2;
    }
    p0 = Math.max(p0, left);
    p1 = Math.min(p1, left + width);
    if (!(p1 > p0)) {
      this.host.dataset.highlightPx = "outside";
      return;
    }
    const ctx = u.ctx;
    ctx.save();
    ctx.fillStyle = HIGHLIGHT_FILL;
    ctx.fillRect(p0, top, p1 - p0, height);
    ctx.strokeStyle = HIGHLIGHT_STROKE;
    ctx.lineWidth = devicePixelRatio;
    ctx.strokeRect(p0, top, p1 - p0, height);
    ctx.restore();
    this.host.dataset.highlightPx = `${Math.round(p0 / devicePixelRatio)}-${Math.round(p1 / devicePixelRatio)}`;
  }

  showTooltip(u) {
    const left = u.cursor.left;
    if (left === undefined || left === null || left < 0 || !this.entries.length) {
      this.tooltip.hidden = true;
      return;
    }
    const x = u.posToVal(left, "x");
    const opts = this.opts;
    const smoothOn = opts.smoothing > 0;
    const rows = [];
    for (const e of this.entries) {
      const i = nearestIndex(e.prep.xs, x);
      if (i < 0) continue;
      rows.push({ e, i });
    }
    if (!rows.length) {
      this.tooltip.hidden = true;
      return;
    }
    clear(this.tooltip);
    const table = el("table", { class: "ms-tooltip-table" });
    const head = el("tr", null, el("th", null, ""), el("th", { text: "Run" }));
    if (smoothOn) head.append(el("th", { text: "Smoothed" }));
    head.append(el("th", { text: "Value" }), el("th", { text: "Step" }), el("th", { text: "Time" }));
    const withInterval = rows.some(({ e }) => e.prep.intervals.size > 0);
    if (withInterval) {
      head.append(el("th", { text: "Interval min / mean / max", title: "Every step since the previous recorded point" }), el("th", { text: "Steps" }));
    }
    table.append(head);
    for (const { e, i } of rows) {
      const tr = el("tr", { "data-run": e.run });
      tr.append(
        el("td", null, el("span", { class: "ms-swatch", style: { background: e.color } })),
        el("td", { class: "ms-tooltip-run", text: displayRunName(e.run), title: e.run }),
      );
      if (smoothOn) tr.append(el("td", { class: "ms-num", text: formatValue(e.prep.smoothedValues[i]) }));
      const rel = e.prep.walls[i] - e.prep.walls[0];
      tr.append(
        el("td", { class: "ms-num", text: formatValue(e.prep.values[i]) }),
        el("td", { class: "ms-num", text: String(e.prep.steps[i]) }),
        el("td", {
          class: "ms-num",
          text: opts.xAxis === "relative" ? formatDuration(rel) : formatWallTime(e.prep.walls[i]),
        }),
      );
      if (withInterval) {
        const iv = e.prep.intervals.get(e.prep.steps[i]);
        const bad = iv && iv.nonfinite > 0 ? ` · ${iv.nonfinite} NaN/Inf` : "";
        tr.append(
          el("td", { class: "ms-num", "data-testid": "tooltip-interval", text: iv ? `${formatValue(iv.min)} / ${formatValue(iv.mean)} / ${formatValue(iv.max)}${bad}` : "–" }),
          el("td", { class: "ms-num", "data-testid": "tooltip-count", text: iv ? String(iv.count) : "–" }),
        );
      }
      table.append(tr);
    }
    this.tooltip.append(table);
    this.tooltip.hidden = false;
    // Place it beside the cursor, inside the chart.
    const plotLeft = u.over.offsetLeft;
    const plotTop = u.over.offsetTop;
    const tw = this.tooltip.offsetWidth;
    const hostWidth = this.host.clientWidth;
    let tx = plotLeft + left + 14;
    if (tx + tw > hostWidth) tx = Math.max(0, plotLeft + left - tw - 14);
    this.tooltip.style.left = `${tx}px`;
    this.tooltip.style.top = `${plotTop + Math.max(0, (u.cursor.top || 0) - 10)}px`;
  }

  resetZoom() {
    const was = this.zoomed;
    this.zoomed = false;
    this.host.dataset.zoomed = "false";
    if (this.plot) this.plot.setData(this.plot.data, true);
    if (was && this.onZoom) this.onZoom(null);
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
