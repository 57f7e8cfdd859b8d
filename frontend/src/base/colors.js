// Stable run colors: a run's color depends on its name only (a hash picks a preferred palette slot) and on the
// other runs present, so the same logdir always shows the same colors, and a run keeps its color as long as it is
// in the list. Collisions move a run to the next free slot, in sorted name order.

export const PALETTE = [
  "#1f77b4", // blue
  "#ff7f0e", // orange
  "#2ca02c", // green
  "#d62728", // red
  "#9467bd", // purple
  "#8c564b", // brown
  "#e377c2", // pink
  "#17becf", // cyan
  "#bcbd22", // olive
  "#7f7f7f", // grey
  "#3949ab", // indigo
  "#00897b", // teal
];

export function hashString(text) {
  // FNV-1a, 32 bit.
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}

export class RunColors {
  constructor(palette = PALETTE) {
    this.palette = palette;
    this.assigned = new Map();
  }

  /** Updates the assignment for the runs now present and returns a Map run -> color. */
  update(runs) {
    const present = new Set(runs);
    for (const run of [...this.assigned.keys()]) if (!present.has(run)) this.assigned.delete(run);
    const used = new Map(); // slot -> count
    for (const slot of this.assigned.values()) used.set(slot, (used.get(slot) || 0) + 1);
    const n = this.palette.length;
    for (const run of [...runs].sort()) {
      if (this.assigned.has(run)) continue;
      const start = hashString(run) % n;
      // Least-used slot, starting from the preferred one, so colors repeat only when there are more runs than colors.
      let best = start;
      let bestCount = Infinity;
      for (let k = 0; k < n; k++) {
        const slot = (start + k) % n;
        const count = used.get(slot) || 0;
        if (count < bestCount) {
          best = slot;
          bestCount = count;
          if (count === 0) break;
        }
      }
      this.assigned.set(run, best);
      used.set(best, (used.get(best) || 0) + 1);
    }
    return this.map();
  }

  color(run) {
    const slot = this.assigned.get(run);
    return slot === undefined ? this.palette[hashString(run) % this.palette.length] : this.palette[slot];
  }

  map() {
    const out = new Map();
    for (const run of this.assigned.keys()) out.set(run, this.color(run));
    return out;
  }
}

/** "#rrggbb" + alpha in [0, 1] -> "rgba(r, g, b, a)". */
export function withAlpha(hex, alpha) {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) return hex;
  return `rgba(${parseInt(m[1], 16)}, ${parseInt(m[2], 16)}, ${parseInt(m[3], 16)}, ${alpha})`;
}
