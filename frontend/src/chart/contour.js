// 2-D views of a loss landscape on a canvas: heatmap + isolines (contour) with the training path, its start and
// end, the centre and the grid minimum, axes and a colour bar; and the 1-D profile of an interpolation or of a
// sharpness profile (one line per direction and the dashed quadratic model of the top eigenvalue).
// Everything is drawn with the canvas 2-D API; text comes only from numbers and the labels the route sends.

import { themeColor } from "../base/theme.js";
import {
  axisValue,
  bilinear,
  colormap,
  contourLevels,
  finiteRange,
  formatNumber,
  fractionalIndex,
  isolineSegments,
  makeTransform,
  sharpnessNote,
  ticks,
  transformValues,
} from "./landscapeMath.js";

const FONT = '11px Roboto, "Helvetica Neue", Arial, sans-serif';
const AXIS = "#616161";
const START = "#00c853";
const END = "#ff1744";

function setupCanvas(canvas, width, height) {
  const dpr = (typeof window !== "undefined" && window.devicePixelRatio) || 1;
  canvas.width = Math.max(1, Math.round(width * dpr));
  canvas.height = Math.max(1, Math.round(height * dpr));
  canvas.style.width = width + "px";
  canvas.style.height = height + "px";
  const ctx = canvas.getContext("2d");
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  return ctx;
}

/** Shared scale of one landscape: transform, transformed values, their range. */
export function landscapeScale(ls, log) {
  const range = finiteRange(ls.z);
  const transform = makeTransform(range, log);
  const t = transformValues(ls.z, transform);
  const tr = finiteRange(t);
  return { range, transform, t, tmin: tr.min, tmax: tr.max };
}

function unit(scale, v) {
  const span = scale.tmax - scale.tmin;
  return span > 0 ? (v - scale.tmin) / span : 0.5;
}

function drawColorBar(ctx, scale, x, y, w, h) {
  for (let k = 0; k < h; k++) {
    const [r, g, b] = colormap(1 - k / Math.max(1, h - 1));
    ctx.fillStyle = `rgb(${r},${g},${b})`;
    ctx.fillRect(x, y + k, w, 1);
  }
  ctx.strokeStyle = "#bdbdbd";
  ctx.lineWidth = 1;
  ctx.strokeRect(x + 0.5, y + 0.5, w - 1, h - 1);
  ctx.fillStyle = themeColor("--ms-muted", AXIS);
  ctx.font = FONT;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  if (!(scale.tmax > scale.tmin)) {
    ctx.fillText(formatNumber(scale.tmin), x + w + 4, y + h / 2);
    return;
  }
  for (const v of ticks(scale.tmin, scale.tmax, 5)) {
    const py = y + h - unit(scale, v) * h;
    ctx.fillRect(x + w, Math.round(py), 3, 1);
    ctx.fillText(formatNumber(v), x + w + 5, py);
  }
  ctx.save();
  ctx.translate(x + w + 46, y + h / 2);
  ctx.rotate(-Math.PI / 2);
  ctx.textAlign = "center";
  ctx.fillText(scale.transform.label, 0, 0);
  ctx.restore();
}

function drawAxes(ctx, box, xr, yr, labels, vertical = true) {
  ctx.strokeStyle = "#9e9e9e";
  ctx.lineWidth = 1;
  ctx.strokeRect(box.x + 0.5, box.y + 0.5, box.w - 1, box.h - 1);
  ctx.fillStyle = themeColor("--ms-muted", AXIS);
  ctx.font = FONT;
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const v of ticks(xr[0], xr[1], Math.max(2, Math.round(box.w / 70)))) {
    const px = box.x + ((v - xr[0]) / (xr[1] - xr[0] || 1)) * box.w;
    ctx.fillRect(Math.round(px), box.y + box.h, 1, 4);
    ctx.fillText(formatNumber(v), px, box.y + box.h + 6);
  }
  if (labels[0]) ctx.fillText(labels[0], box.x + box.w / 2, box.y + box.h + 21);
  if (!vertical) return;
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const v of ticks(yr[0], yr[1], Math.max(2, Math.round(box.h / 50)))) {
    const py = box.y + box.h - ((v - yr[0]) / (yr[1] - yr[0] || 1)) * box.h;
    ctx.fillRect(box.x - 4, Math.round(py), 4, 1);
    ctx.fillText(formatNumber(v), box.x - 6, py);
  }
  if (labels[1]) {
    ctx.save();
    ctx.translate(12, box.y + box.h / 2);
    ctx.rotate(-Math.PI / 2);
    ctx.textAlign = "center";
    ctx.fillText(labels[1], 0, 0);
    ctx.restore();
  }
}

function marker(ctx, kind, px, py, color) {
  ctx.save();
  ctx.lineWidth = 2;
  ctx.strokeStyle = "#fff";
  ctx.fillStyle = color;
  ctx.beginPath();
  if (kind === "circle") ctx.arc(px, py, 6, 0, Math.PI * 2);
  else if (kind === "square") ctx.rect(px - 6, py - 6, 12, 12);
  else if (kind === "diamond") {
    ctx.moveTo(px, py - 6);
    ctx.lineTo(px + 6, py);
    ctx.lineTo(px, py + 6);
    ctx.lineTo(px - 6, py);
    ctx.closePath();
  }
  ctx.fill();
  ctx.stroke();
  ctx.restore();
}

function cross(ctx, px, py) {
  ctx.save();
  ctx.lineWidth = 3;
  ctx.strokeStyle = "#fff";
  for (const [w, c] of [[4, "#fff"], [2, "#212121"]]) {
    ctx.lineWidth = w;
    ctx.strokeStyle = c;
    ctx.beginPath();
    ctx.moveTo(px - 6, py - 6);
    ctx.lineTo(px + 6, py + 6);
    ctx.moveTo(px + 6, py - 6);
    ctx.lineTo(px - 6, py + 6);
    ctx.stroke();
  }
  ctx.restore();
}

/**
 * Heatmap + isolines of a 2-D landscape. The container gets data-state="drawn", data-isolines (segments drawn),
 * data-levels, data-path-points, data-heatmap, data-log, and data-path-start / data-path-end ("x,y" in CSS px).
 */
export class ContourChart {
  constructor(container) {
    this.container = container;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "ms-ls-canvas";
    this.canvas.setAttribute("data-testid", "landscape-contour-canvas");
    this.tooltip = document.createElement("div");
    this.tooltip.className = "ms-ls-tooltip";
    this.tooltip.setAttribute("data-testid", "landscape-tooltip");
    this.tooltip.hidden = true;
    container.append(this.canvas, this.tooltip);
    this.canvas.addEventListener("mousemove", (e) => this.hover(e));
    this.canvas.addEventListener("mouseleave", () => (this.tooltip.hidden = true));
    this.ls = null;
  }

  draw(ls, opts, width, height) {
    this.ls = ls;
    this.opts = opts;
    const ctx = setupCanvas(this.canvas, width, height);
    const box = { x: 58, y: 10, w: Math.max(40, width - 58 - 96), h: Math.max(40, height - 10 - 44) };
    this.box = box;
    const scale = landscapeScale(ls, opts.log);
    this.scale = scale;
    const xr = [ls.x[0], ls.x[ls.nx - 1]];
    const yr = [ls.y[0], ls.y[ls.ny - 1]];
    this.xr = xr;
    this.yr = yr;
    const toPx = (X, Y) => [box.x + ((X - xr[0]) / (xr[1] - xr[0] || 1)) * box.w, box.y + box.h - ((Y - yr[0]) / (yr[1] - yr[0] || 1)) * box.h];
    const idxPx = (fi, fj) => toPx(axisValue(ls.x, fi), axisValue(ls.y, fj));

    // Missing cells show a hatch: the background behind transparent pixels.
    ctx.fillStyle = "#eeeeee";
    ctx.fillRect(box.x, box.y, box.w, box.h);
    ctx.strokeStyle = "#e0e0e0";
    ctx.lineWidth = 1;
    ctx.save();
    ctx.beginPath();
    ctx.rect(box.x, box.y, box.w, box.h);
    ctx.clip();
    for (let k = -box.h; k < box.w; k += 8) {
      ctx.beginPath();
      ctx.moveTo(box.x + k, box.y + box.h);
      ctx.lineTo(box.x + k + box.h, box.y);
      ctx.stroke();
    }
    if (opts.heatmap) {
      // One colour per device pixel, bilinear between the grid points (canvas upscaling of a tiny image is
      // blocky); a pixel in a cell with a missing corner takes the nearest known corner, or stays hatched.
      const dpr = this.canvas.width / width;
      const pw = Math.max(1, Math.round(box.w * dpr));
      const ph = Math.max(1, Math.round(box.h * dpr));
      const img = ctx.createImageData(pw, ph);
      const span = scale.tmax - scale.tmin;
      const lut = new Uint8ClampedArray(256 * 3);
      for (let k = 0; k < 256; k++) lut.set(colormap(k / 255), k * 3);
      const { nx, ny } = ls;
      const t = scale.t;
      for (let py = 0; py < ph; py++) {
        const fj = ny > 1 ? (1 - (py + 0.5) / ph) * (ny - 1) : 0;
        const j = Math.min(Math.max(0, ny - 2), Math.floor(fj));
        const ty = ny > 1 ? fj - j : 0;
        for (let px = 0; px < pw; px++) {
          const fi = ((px + 0.5) / pw) * (nx - 1);
          const i = Math.min(nx - 2, Math.floor(fi));
          const tx = fi - i;
          const a = t[j * nx + i];
          const b = t[j * nx + i + 1];
          const c = ny > 1 ? t[(j + 1) * nx + i] : a;
          const d = ny > 1 ? t[(j + 1) * nx + i + 1] : b;
          let v;
          if (Number.isFinite(a) && Number.isFinite(b) && Number.isFinite(c) && Number.isFinite(d)) {
            v = (a * (1 - tx) + b * tx) * (1 - ty) + (c * (1 - tx) + d * tx) * ty;
          } else {
            v = tx < 0.5 ? (ty < 0.5 ? a : c) : ty < 0.5 ? b : d;
            if (!Number.isFinite(v)) continue; // transparent: the hatch shows
          }
          const k = Math.max(0, Math.min(255, Math.round(span > 0 ? ((v - scale.tmin) / span) * 255 : 128))) * 3;
          const o = (py * pw + px) * 4;
          img.data[o] = lut[k];
          img.data[o + 1] = lut[k + 1];
          img.data[o + 2] = lut[k + 2];
          img.data[o + 3] = 255;
        }
      }
      const tmp = document.createElement("canvas");
      tmp.width = pw;
      tmp.height = ph;
      tmp.getContext("2d").putImageData(img, 0, 0);
      ctx.drawImage(tmp, box.x, box.y, box.w, box.h);
    }
    // Isolines.
    const levels = contourLevels(scale.tmin, scale.tmax, opts.levels || 12);
    let segments = 0;
    if (opts.isolines) {
      for (const level of levels) {
        const segs = isolineSegments(scale.t, ls.nx, ls.ny, level);
        if (!segs.length) continue;
        segments += segs.length / 4;
        const [r, g, b] = colormap(unit(scale, level));
        ctx.strokeStyle = opts.heatmap ? "rgba(255,255,255,0.75)" : `rgb(${r},${g},${b})`;
        ctx.lineWidth = opts.heatmap ? 1 : 1.5;
        ctx.beginPath();
        for (let s = 0; s < segs.length; s += 4) {
          const [x1, y1] = idxPx(segs[s], segs[s + 1]);
          const [x2, y2] = idxPx(segs[s + 2], segs[s + 3]);
          ctx.moveTo(x1, y1);
          ctx.lineTo(x2, y2);
        }
        ctx.stroke();
      }
    }
    ctx.restore(); // markers may sit on the plot's edge: draw them unclipped
    // Grid minimum.
    let minK = -1;
    for (let k = 0; k < ls.z.length; k++) if (Number.isFinite(ls.z[k]) && (minK < 0 || ls.z[k] < ls.z[minK])) minK = k;
    if (minK >= 0) {
      const [mx, my] = toPx(ls.x[minK % ls.nx], ls.y[Math.floor(minK / ls.nx)]);
      marker(ctx, "diamond", mx, my, "#ffd600");
      this.container.dataset.minimum = `${mx.toFixed(1)},${my.toFixed(1)}`;
    }
    // Training path, start and end.
    const path = ls.path;
    let pathPoints = 0;
    if (path && path.x.length) {
      const pts = [];
      for (let k = 0; k < path.x.length; k++) if (Number.isFinite(path.x[k]) && Number.isFinite(path.y[k])) pts.push(toPx(path.x[k], path.y[k]));
      pathPoints = pts.length;
      for (const [w, c] of [[4, "rgba(255,255,255,0.9)"], [2, "#212121"]]) {
        ctx.lineWidth = w;
        ctx.strokeStyle = c;
        ctx.beginPath();
        pts.forEach(([px, py], k) => (k ? ctx.lineTo(px, py) : ctx.moveTo(px, py)));
        ctx.stroke();
      }
      ctx.fillStyle = "#212121";
      for (const [px, py] of pts) {
        ctx.beginPath();
        ctx.arc(px, py, 2.5, 0, Math.PI * 2);
        ctx.fill();
      }
      if (pts.length) {
        marker(ctx, "circle", pts[0][0], pts[0][1], START);
        marker(ctx, "square", pts[pts.length - 1][0], pts[pts.length - 1][1], END);
        this.container.dataset.pathStart = `${pts[0][0].toFixed(1)},${pts[0][1].toFixed(1)}`;
        this.container.dataset.pathEnd = `${pts[pts.length - 1][0].toFixed(1)},${pts[pts.length - 1][1].toFixed(1)}`;
      }
    } else {
      delete this.container.dataset.pathStart;
      delete this.container.dataset.pathEnd;
    }
    if (ls.center && Number.isFinite(ls.center.x) && Number.isFinite(ls.center.y)) {
      const [cx, cy] = toPx(ls.center.x, ls.center.y);
      if (!path) cross(ctx, cx, cy);
      this.container.dataset.center = `${cx.toFixed(1)},${cy.toFixed(1)}`;
    }
    drawAxes(ctx, box, xr, yr, ls.axisLabels);
    drawColorBar(ctx, scale, box.x + box.w + 14, box.y, 14, box.h);
    const d = this.container.dataset;
    d.state = "drawn";
    d.isolines = String(segments);
    d.levels = String(levels.length);
    d.pathPoints = String(pathPoints);
    d.heatmap = opts.heatmap ? "on" : "off";
    d.log = opts.log ? "on" : "off";
    d.zMin = String(scale.range.min);
    d.zMax = String(scale.range.max);
    d.width = String(width);
    d.height = String(height);
  }

  hover(e) {
    const ls = this.ls;
    if (!ls || !this.box) return;
    const rect = this.canvas.getBoundingClientRect();
    const px = e.clientX - rect.left;
    const py = e.clientY - rect.top;
    const b = this.box;
    if (px < b.x || px > b.x + b.w || py < b.y || py > b.y + b.h) {
      this.tooltip.hidden = true;
      return;
    }
    const X = this.xr[0] + ((px - b.x) / b.w) * (this.xr[1] - this.xr[0]);
    const Y = this.yr[0] + ((b.y + b.h - py) / b.h) * (this.yr[1] - this.yr[0]);
    const v = bilinear(ls.z, ls.nx, ls.ny, fractionalIndex(ls.x, X), fractionalIndex(ls.y, Y));
    this.tooltip.textContent = `(${formatNumber(X)}, ${formatNumber(Y)})  loss ${formatNumber(v)}`;
    this.tooltip.style.left = Math.min(px + 12, b.x + b.w - 120) + "px";
    this.tooltip.style.top = py + 12 + "px";
    this.tooltip.hidden = false;
  }
}

/**
 * The 1-D profile of an interpolation: loss against alpha, theta_a (alpha = 0) and theta_b (alpha = 1) marked.
 * The container gets data-state="drawn", data-points, data-path-start / data-path-end.
 */
const PROFILE_COLORS = ["#c62828", "#1565c0", "#2e7d32", "#6a1b9a"];

/** The dashed second-order model loss0 + slope t + curvature t^2 / 2 of a sharpness profile; returns whether drawn. */
function drawQuadratic(ctx, ls, scale, toPx, yr) {
  const q = ls.metadata && ls.metadata.quadratic;
  if (!q || !Number.isFinite(Number(q.loss0)) || !Number.isFinite(Number(q.curvature))) return false;
  const slope = Number.isFinite(Number(q.slope)) ? Number(q.slope) : 0;
  ctx.save();
  ctx.strokeStyle = PROFILE_COLORS[0];
  ctx.globalAlpha = 0.6;
  ctx.setLineDash([5, 4]);
  ctx.lineWidth = 1.5;
  ctx.beginPath();
  let pen = false;
  const n = 64;
  for (let k = 0; k <= n; k++) {
    const X = ls.x[0] + ((ls.x[ls.nx - 1] - ls.x[0]) * k) / n;
    const t = scale.transform.f(Number(q.loss0) + slope * X + 0.5 * Number(q.curvature) * X * X);
    if (!Number.isFinite(t) || t > yr[1] || t < yr[0]) {
      pen = false;
      continue;
    }
    const [px, py] = toPx(X, t);
    if (pen) ctx.lineTo(px, py);
    else ctx.moveTo(px, py);
    pen = true;
  }
  ctx.stroke();
  ctx.restore();
  return true;
}

function drawLineLegend(ctx, box, labels, quadratic, meta) {
  const items = labels.map((text, j) => [text, PROFILE_COLORS[j % PROFILE_COLORS.length], false]);
  if (quadratic) items.push([`quadratic model: ${sharpnessNote(meta)}`, PROFILE_COLORS[0], true]);
  ctx.save();
  ctx.font = FONT;
  ctx.textAlign = "left";
  ctx.textBaseline = "middle";
  items.forEach(([text, color, dashed], k) => {
    const y = box.y + 10 + k * 15;
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.setLineDash(dashed ? [5, 4] : []);
    ctx.beginPath();
    ctx.moveTo(box.x + 8, y);
    ctx.lineTo(box.x + 26, y);
    ctx.stroke();
    ctx.fillStyle = themeColor("--ms-muted", AXIS);
    ctx.fillText(text, box.x + 30, y);
  });
  ctx.restore();
}

export class ProfileChart {
  constructor(container) {
    this.container = container;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "ms-ls-canvas";
    this.canvas.setAttribute("data-testid", "landscape-profile-canvas");
    container.append(this.canvas);
  }

  draw(ls, opts, width, height) {
    const ctx = setupCanvas(this.canvas, width, height);
    const box = { x: 58, y: 12, w: Math.max(40, width - 58 - 20), h: Math.max(40, height - 12 - 44) };
    const scale = landscapeScale(ls, opts.log);
    const xr = [ls.x[0], ls.x[ls.nx - 1]];
    const pad = (scale.tmax - scale.tmin) * 0.05 || 0.5;
    const yr = [scale.tmin - pad, scale.tmax + pad];
    const toPx = (X, T) => [box.x + ((X - xr[0]) / (xr[1] - xr[0] || 1)) * box.w, box.y + box.h - ((T - yr[0]) / (yr[1] - yr[0])) * box.h];
    drawAxes(ctx, box, xr, yr, [ls.axisLabels[0] || "alpha", scale.transform.label]);
    // One line per row of z: an interpolation has one; a sharpness profile one per direction (eigenvector first).
    const labels = Array.isArray(ls.metadata && ls.metadata.lines) ? ls.metadata.lines.map(String) : [];
    const rows = labels.length ? Math.min(ls.ny, labels.length) : 1;
    let points = 0;
    for (let j = 0; j < rows; j++) {
      ctx.strokeStyle = PROFILE_COLORS[j % PROFILE_COLORS.length];
      ctx.lineWidth = 2;
      ctx.beginPath();
      let pen = false;
      for (let i = 0; i < ls.nx; i++) {
        const t = scale.t[j * ls.nx + i];
        if (!Number.isFinite(t)) {
          pen = false;
          continue;
        }
        const [px, py] = toPx(ls.x[i], t);
        if (pen) ctx.lineTo(px, py);
        else ctx.moveTo(px, py);
        pen = true;
        points++;
      }
      ctx.stroke();
    }
    const quad = drawQuadratic(ctx, ls, scale, toPx, yr);
    if (labels.length) drawLineLegend(ctx, box, labels.slice(0, rows), quad, ls.metadata);
    const d = this.container.dataset;
    d.lines = String(rows);
    d.quadratic = quad ? "on" : "off";
    if (quad) d.note = sharpnessNote(ls.metadata);
    const path = ls.path;
    if (path && path.x.length >= 2) {
      const ends = [[path.x[0], path.z[0], START, "circle"], [path.x[path.x.length - 1], path.z[path.z.length - 1], END, "square"]];
      ends.forEach(([X, Z, color, kind], k) => {
        const t = Number.isFinite(Z) ? scale.transform.f(Z) : NaN;
        if (!Number.isFinite(t)) return;
        const [px, py] = toPx(X, t);
        marker(ctx, kind, px, py, color);
        d[k === 0 ? "pathStart" : "pathEnd"] = `${px.toFixed(1)},${py.toFixed(1)}`;
      });
    }
    d.state = "drawn";
    d.points = String(points);
    d.log = opts.log ? "on" : "off";
    d.pathPoints = String(path ? path.x.length : 0);
  }
}
