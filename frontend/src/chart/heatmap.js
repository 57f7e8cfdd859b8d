// Canvas heatmap: rows x columns of values drawn through a color scale (colorScale.js). The image is built at one
// pixel per cell column (or per screen pixel when there are more columns than pixels: a pixel then shows the mean
// of its columns on the scale, or a non-finite value if one of them is) and stretched to the canvas without
// smoothing, so 200 x 5,000 cells draw in a few tens of milliseconds.
//
// Rows are given as {values: Float32Array(cols), missing: Uint8Array(cols) | null}; a null row draws blank (the
// layer is not in this run). hit(x, y) maps a position (CSS pixels in the canvas) to {row, col}.

import { SPECIAL } from "./colorScale.js";

export class HeatmapCanvas {
  /**
   * @param {HTMLElement} host  element the canvas goes into (its width is followed by the owner calling draw())
   */
  constructor(host) {
    this.host = host;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "ms-heatmap-canvas";
    this.host.append(this.canvas);
    this.rows = [];
    this.cols = 0;
    this.rowHeight = 6;
    this.width = 0;
    this.scale = null;
    this.offscreen = document.createElement("canvas");
  }

  /**
   * @param {{rows: ({values: Float32Array, missing: Uint8Array|null}|null)[], cols: number, rowHeight: number,
   *          width: number, scale: object}} data
   * @returns {number} milliseconds the drawing took
   */
  draw({ rows, cols, rowHeight, width, scale }) {
    const t0 = performance.now();
    this.rows = rows;
    this.cols = cols;
    this.rowHeight = rowHeight;
    this.scale = scale;
    this.width = Math.max(1, Math.floor(width));
    const dpr = (typeof devicePixelRatio === "number" && devicePixelRatio) || 1;
    const height = Math.max(1, rows.length * rowHeight);
    this.canvas.style.width = `${this.width}px`;
    this.canvas.style.height = `${height}px`;
    this.canvas.width = Math.round(this.width * dpr);
    this.canvas.height = Math.round(height * dpr);
    const ctx = this.canvas.getContext("2d");
    ctx.clearRect(0, 0, this.canvas.width, this.canvas.height);
    if (!rows.length || !cols) return performance.now() - t0;

    const imgCols = Math.min(cols, this.canvas.width);
    const image = new ImageData(imgCols, rows.length);
    const pixels = new Uint32Array(image.data.buffer);
    const lut = scale.lut;
    const per = cols / imgCols;
    const isLog = scale.isLog;
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r];
      const base = r * imgCols;
      if (!row) {
        for (let x = 0; x < imgCols; x++) pixels[base + x] = lut[SPECIAL.missing];
        continue;
      }
      const { values, missing } = row;
      if (imgCols === cols) {
        for (let c = 0; c < cols; c++) {
          pixels[base + c] = lut[missing && missing[c] ? SPECIAL.missing : scale.index(values[c])];
        }
        continue;
      }
      for (let x = 0; x < imgCols; x++) {
        const c0 = Math.floor(x * per);
        const c1 = Math.max(c0 + 1, Math.floor((x + 1) * per));
        let s = 0;
        let n = 0;
        let zeros = 0;
        let special = -1;
        for (let c = c0; c < c1; c++) {
          if (missing && missing[c]) continue;
          const v = values[c];
          if (!(v - v === 0)) {
            special = SPECIAL.nonfinite;
            break;
          }
          if (isLog) {
            if (v > 0) {
              s += Math.log10(v);
              n += 1;
            } else zeros += 1;
          } else {
            s += v;
            n += 1;
          }
        }
        let idx;
        if (special >= 0) idx = special;
        else if (n) idx = scale.indexOfTransformed(s / n);
        else idx = zeros ? SPECIAL.zero : SPECIAL.missing;
        pixels[base + x] = lut[idx];
      }
    }
    this.offscreen.width = imgCols;
    this.offscreen.height = rows.length;
    this.offscreen.getContext("2d").putImageData(image, 0, 0);
    ctx.imageSmoothingEnabled = false;
    ctx.drawImage(this.offscreen, 0, 0, imgCols, rows.length, 0, 0, this.canvas.width, this.canvas.height);
    return performance.now() - t0;
  }

  /** {row, col} under a position in CSS pixels relative to the canvas, or null outside. */
  hit(x, y) {
    if (x < 0 || y < 0 || x >= this.width || !this.cols) return null;
    const row = Math.floor(y / this.rowHeight);
    if (row >= this.rows.length) return null;
    const col = Math.min(this.cols - 1, Math.floor((x / this.width) * this.cols));
    return { row, col };
  }
}
