// Color scales of the per-layer heatmaps. A scale maps a value to one of 256 colors, or to a special color:
// non-finite (NaN / ±Inf), zero on a log scale (for an update ratio: the weight did not change), or missing (no value
// recorded: transparent). Colors are packed RGBA in a Uint32Array for ImageData (little-endian byte order).
//
// * "ratio": update ratio ||Δw|| / ||w||, log10 on a diverging scale centred at the healthy value the server's
//   contract names (1e-3, the usual rule of thumb), two decades each way (blue: slower, red: faster); beyond that
//   the end colors.
// * "log": positive values (norms), log10 on a sequential scale over the data's range (robust percentiles).
// * "linear": values of any sign, sequential over the data's range.

// Decades each side of the centre that the diverging ratio scale spans.
export const RATIO_HALF_SPAN = 2;

export const SPECIAL = { nonfinite: 256, zero: 257, missing: 258 };
export const SPECIAL_COLORS = { nonfinite: "#ff00ff", zero: "#9e9e9e", missing: "rgba(0,0,0,0)" };

// ColorBrewer RdBu, reversed (blue = low, red = high).
const DIVERGING = ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d", "#b2182b", "#67001f"];
// viridis
const SEQUENTIAL = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"];

function hexToRgb(hex) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  return m ? [parseInt(m[1], 16), parseInt(m[2], 16), parseInt(m[3], 16)] : [0, 0, 0];
}

function pack(r, g, b, a = 255) {
  return ((a << 24) | (b << 16) | (g << 8) | r) >>> 0; // little-endian RGBA in memory
}

/** 256 colors interpolated between the stops, plus the special colors, as packed RGBA. */
export function buildLut(stops) {
  const rgb = stops.map(hexToRgb);
  const lut = new Uint32Array(259);
  for (let i = 0; i < 256; i++) {
    const t = (i / 255) * (rgb.length - 1);
    const k = Math.min(rgb.length - 2, Math.floor(t));
    const f = t - k;
    const c = [0, 1, 2].map((j) => Math.round(rgb[k][j] + (rgb[k + 1][j] - rgb[k][j]) * f));
    lut[i] = pack(c[0], c[1], c[2]);
  }
  lut[SPECIAL.nonfinite] = pack(255, 0, 255);
  lut[SPECIAL.zero] = pack(158, 158, 158);
  lut[SPECIAL.missing] = pack(0, 0, 0, 0);
  return lut;
}

/** CSS color of a LUT entry. */
export function lutCss(lut, i) {
  const v = lut[i];
  return `rgba(${v & 255}, ${(v >>> 8) & 255}, ${(v >>> 16) & 255}, ${((v >>> 24) & 255) / 255})`;
}

function quantile(sorted, q) {
  if (!sorted.length) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

/** Robust [lo, hi] of the finite values (1st and 99th percentile of a sample), after transform. */
export function robustRange(arrays, transform, { sample = 20000 } = {}) {
  let total = 0;
  for (const a of arrays) total += a.length;
  const stride = Math.max(1, Math.floor(total / sample));
  const picked = [];
  let k = 0;
  for (const a of arrays) {
    for (let i = 0; i < a.length; i++, k++) {
      if (k % stride) continue;
      const t = transform(a[i]);
      if (Number.isFinite(t)) picked.push(t);
    }
  }
  picked.sort((x, y) => x - y);
  let lo = quantile(picked, 0.01);
  let hi = quantile(picked, 0.99);
  if (!Number.isFinite(lo) || !Number.isFinite(hi)) return [0, 1];
  if (hi - lo < 1e-9) {
    lo -= 0.5;
    hi += 0.5;
  }
  return [lo, hi];
}

const log10Pos = (v) => (v > 0 ? Math.log10(v) : NaN);
const identity = (v) => v;

/**
 * @param {"ratio"|"log"|"linear"} kind
 * @param {Float32Array[]} arrays  the values the scale must cover (for "log" and "linear")
 * @param {{center?: number}} options  log10 of the healthy update ratio (the "ratio" scale's centre)
 * @returns {{kind, lo, hi, center, lut, index(v): number, transform(v): number, ticks: {value, label}[]}}
 */
export function makeScale(kind, arrays = [], { center: ratioCenter = -3 } = {}) {
  const isLog = kind === "ratio" || kind === "log";
  const transform = isLog ? log10Pos : identity;
  let lo;
  let hi;
  let center = null;
  if (kind === "ratio") {
    center = ratioCenter;
    [lo, hi] = [center - RATIO_HALF_SPAN, center + RATIO_HALF_SPAN];
  } else {
    [lo, hi] = robustRange(arrays, transform);
  }
  const lut = buildLut(kind === "ratio" ? DIVERGING : SEQUENTIAL);
  const span = hi - lo;
  /** Color index of a raw value (0..255 or a SPECIAL index). */
  const index = (v) => {
    if (Number.isNaN(v) || v === Infinity || v === -Infinity) return SPECIAL.nonfinite;
    if (isLog && v <= 0) return SPECIAL.zero;
    return indexOfTransformed(isLog ? Math.log10(v) : v);
  };
  const indexOfTransformed = (t) => {
    const i = Math.round(((t - lo) / span) * 255);
    return i < 0 ? 0 : i > 255 ? 255 : i;
  };
  const ticks = [];
  if (isLog && Math.floor(hi) - Math.ceil(lo) >= 1) {
    for (let e = Math.ceil(lo); e <= Math.floor(hi); e++) ticks.push({ value: e, label: `1e${e}` });
  } else if (isLog) {
    for (let i = 0; i <= 4; i++) {
      const t = lo + (span * i) / 4;
      ticks.push({ value: t, label: Number(Math.pow(10, t).toPrecision(3)).toString() });
    }
  } else {
    for (let i = 0; i <= 4; i++) {
      const v = lo + (span * i) / 4;
      ticks.push({ value: v, label: Number(v.toPrecision(3)).toString() });
    }
  }
  return { kind, lo, hi, center, lut, index, indexOfTransformed, transform, isLog, ticks };
}
