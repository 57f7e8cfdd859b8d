// Pure helpers of the loss-landscape views (no DOM): value transform (linear / log), isoline levels, marching
// squares, the colour map, nice ticks, and interpolation of the grid at a point.

/** Finite min / max of a Float64Array (or array); {min: NaN, max: NaN} when there is no finite value. */
export function finiteRange(values) {
  let min = Infinity;
  let max = -Infinity;
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    if (Number.isFinite(v)) {
      if (v < min) min = v;
      if (v > max) max = v;
    }
  }
  return min <= max ? { min, max } : { min: NaN, max: NaN };
}

/**
 * The value transform of the colour / height scale.
 * Linear: identity. Log: log10(z) when every finite loss is > 0, else log10(z - min + eps) with eps a thousandth
 * of the range (a loss that reaches exactly 0 at the minimum, e.g. a noiseless regression), so the scale stays
 * defined; `label` says which one it is.
 * @returns {{f: (z: number) => number, label: string, offset: number}}
 */
export function makeTransform(range, log) {
  if (!log) return { f: (z) => z, label: "loss", offset: 0, log: false };
  if (range.min > 0) return { f: (z) => (z > 0 ? Math.log10(z) : NaN), label: "log10(loss)", offset: 0, log: true };
  const span = Number.isFinite(range.max - range.min) && range.max > range.min ? range.max - range.min : 1;
  const eps = span * 1e-3;
  const offset = -range.min + eps;
  return {
    f: (z) => (z + offset > 0 ? Math.log10(z + offset) : NaN),
    label: `log10(loss + ${formatNumber(offset)})`,
    offset,
    log: true,
  };
}

/** The transformed grid: Float64Array of the same length, NaN where the loss is missing. */
export function transformValues(values, transform) {
  const out = new Float64Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i];
    out[i] = Number.isFinite(v) ? transform.f(v) : NaN;
  }
  return out;
}

/** Round-number step near (max - min) / count: 1, 2, 2.5 or 5 times a power of ten. */
export function niceStep(min, max, count) {
  const span = max - min;
  if (!(span > 0) || !Number.isFinite(span)) return 0;
  const raw = span / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  const mult = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10;
  return mult * mag;
}

/** Nice tick values inside [min, max] (about `count` of them). */
export function ticks(min, max, count = 5) {
  const step = niceStep(min, max, count);
  if (!step) return Number.isFinite(min) ? [min] : [];
  const out = [];
  const first = Math.ceil(min / step - 1e-9) * step;
  for (let v = first; v <= max + step * 1e-9; v += step) out.push(Math.abs(v) < step * 1e-9 ? 0 : v);
  return out;
}

/** Isoline levels strictly inside (min, max): nice values, about `count` of them. */
export function contourLevels(min, max, count = 12) {
  if (!(max > min)) return [];
  return ticks(min, max, count).filter((v) => v > min && v < max);
}

/**
 * Marching squares over a row-major grid (values[j * nx + i] at column i, row j) at one level.
 * Cells with a missing corner are skipped; saddles are resolved by the mean of the four corners.
 * @returns {number[]} flat segment list [x1, y1, x2, y2, ...] in fractional grid indices (i, j)
 */
export function isolineSegments(values, nx, ny, level) {
  const out = [];
  let i = 0;
  let j = 0;
  let v0 = 0;
  let v1 = 0;
  let v2 = 0;
  let v3 = 0;
  // Edge crossing points: e0 bottom (v0-v1), e1 right (v1-v2), e2 top (v3-v2), e3 left (v0-v3).
  const push = (edge) => {
    if (edge === 0) out.push(i + (level - v0) / (v1 - v0), j);
    else if (edge === 1) out.push(i + 1, j + (level - v1) / (v2 - v1));
    else if (edge === 2) out.push(i + (level - v3) / (v2 - v3), j + 1);
    else out.push(i, j + (level - v0) / (v3 - v0));
  };
  const seg = (a, b) => {
    push(a);
    push(b);
  };
  for (j = 0; j + 1 < ny; j++) {
    for (i = 0; i + 1 < nx; i++) {
      v0 = values[j * nx + i];
      v1 = values[j * nx + i + 1];
      v2 = values[(j + 1) * nx + i + 1];
      v3 = values[(j + 1) * nx + i];
      if (!(Number.isFinite(v0) && Number.isFinite(v1) && Number.isFinite(v2) && Number.isFinite(v3))) continue;
      const c = (v0 > level ? 1 : 0) | (v1 > level ? 2 : 0) | (v2 > level ? 4 : 0) | (v3 > level ? 8 : 0);
      if (c === 0 || c === 15) continue;
      const centreAbove = (v0 + v1 + v2 + v3) / 4 > level;
      switch (c) {
        case 1: case 14: seg(3, 0); break;
        case 2: case 13: seg(0, 1); break;
        case 3: case 12: seg(3, 1); break;
        case 4: case 11: seg(1, 2); break;
        case 6: case 9: seg(0, 2); break;
        case 7: case 8: seg(3, 2); break;
        case 5: // v0 and v2 above
          if (centreAbove) { seg(0, 1); seg(2, 3); } else { seg(3, 0); seg(1, 2); }
          break;
        case 10: // v1 and v3 above
          if (centreAbove) { seg(3, 0); seg(1, 2); } else { seg(0, 1); seg(2, 3); }
          break;
        default: break;
      }
    }
  }
  return out;
}

// Viridis (matplotlib's perceptually uniform map), 9 stops, linearly interpolated.
const VIRIDIS = [
  [68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37],
];

/** Colour of t in [0, 1] as [r, g, b] (0-255); t outside is clamped, NaN gives light grey. */
export function colormap(t) {
  if (!Number.isFinite(t)) return [224, 224, 224];
  const x = Math.min(1, Math.max(0, t)) * (VIRIDIS.length - 1);
  const k = Math.min(VIRIDIS.length - 2, Math.floor(x));
  const f = x - k;
  const a = VIRIDIS[k];
  const b = VIRIDIS[k + 1];
  return [Math.round(a[0] + (b[0] - a[0]) * f), Math.round(a[1] + (b[1] - a[1]) * f), Math.round(a[2] + (b[2] - a[2]) * f)];
}

/** Position of `value` on the axis `axis` (increasing array) as a fractional index; clamped to the ends. */
export function fractionalIndex(axis, value) {
  const n = axis.length;
  if (n <= 1) return 0;
  if (value <= axis[0]) return 0;
  if (value >= axis[n - 1]) return n - 1;
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (axis[mid] <= value) lo = mid;
    else hi = mid;
  }
  return lo + (value - axis[lo]) / (axis[hi] - axis[lo]);
}

/** Axis value at a fractional index. */
export function axisValue(axis, index) {
  const n = axis.length;
  if (n === 0) return NaN;
  if (n === 1) return axis[0];
  const k = Math.min(n - 2, Math.max(0, Math.floor(index)));
  return axis[k] + (index - k) * (axis[k + 1] - axis[k]);
}

/** Bilinear value of the grid at fractional indices (fi, fj); NaN if a neighbouring cell corner is missing. */
export function bilinear(values, nx, ny, fi, fj) {
  const i = Math.min(nx - 2, Math.max(0, Math.floor(fi)));
  const j = Math.min(Math.max(0, ny - 2), Math.max(0, Math.floor(fj)));
  if (nx < 2) return values[0];
  const tx = Math.min(1, Math.max(0, fi - i));
  if (ny < 2) return values[i] + (values[i + 1] - values[i]) * tx;
  const ty = Math.min(1, Math.max(0, fj - j));
  const v00 = values[j * nx + i];
  const v10 = values[j * nx + i + 1];
  const v01 = values[(j + 1) * nx + i];
  const v11 = values[(j + 1) * nx + i + 1];
  return v00 * (1 - tx) * (1 - ty) + v10 * tx * (1 - ty) + v01 * (1 - tx) * ty + v11 * tx * ty;
}

/** Short number text for axes and tooltips. */
export function formatNumber(v) {
  if (!Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : v > 0 ? "∞" : "-∞";
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1e5 || a < 1e-3) return v.toExponential(2);
  if (a >= 100) return v.toFixed(1);
  if (a >= 1) return v.toPrecision(4).replace(/\.?0+$/, "");
  return v.toPrecision(3).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
}

/** "top eigenvalue 12.3 · stability line 2/lr = 40 (0.31 of it)" from a sharpness profile's metadata. */
export function sharpnessNote(meta) {
  const m = meta || {};
  const s = Number(m.sharpness);
  if (!Number.isFinite(s)) return "top eigenvalue";
  let text = `top eigenvalue ${formatNumber(s)}`;
  const line = m.threshold === null || m.threshold === undefined ? NaN : Number(m.threshold);
  if (Number.isFinite(line) && line > 0) {
    const form = m.optimizer === "adam" ? "38/lr (preconditioned)" : m.optimizer === "momentum" ? "(2+2β)/lr" : "2/lr";
    text += ` · stability line ${form} = ${formatNumber(line)}`;
    if (m.optimizer !== "adam") text += ` (${formatNumber(s / line)} of it)`;
  }
  return text;
}
