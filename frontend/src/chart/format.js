// Number and time formatting shared by the charts and their tooltips.

export function formatValue(v) {
  if (v === null || v === undefined) return "–";
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  const a = Math.abs(v);
  if (a === 0) return "0";
  if (a >= 1e6 || a < 1e-3) return v.toExponential(3).replace(/\.?0+e/, "e");
  if (a >= 1000) return v.toFixed(1).replace(/\.0$/, "");
  return Number(v.toPrecision(4)).toString();
}

export function formatStep(v) {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  if (a >= 1e9) return trim(v / 1e9) + "G";
  if (a >= 1e6) return trim(v / 1e6) + "M";
  if (a >= 1e4) return trim(v / 1e3) + "k";
  return String(Math.round(v));
}

function trim(x) {
  return Number(x.toFixed(2)).toString();
}

/** Seconds as a short duration: "850ms", "42s", "3m 20s", "2h 05m", "3d 4h". */
export function formatDuration(seconds) {
  if (!Number.isFinite(seconds)) return String(seconds);
  const sign = seconds < 0 ? "-" : "";
  let s = Math.abs(seconds);
  if (s < 1) return sign + Math.round(s * 1000) + "ms";
  if (s < 60) return sign + trim(s) + "s";
  s = Math.round(s);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  if (d > 0) return `${sign}${d}d ${h}h`;
  if (h > 0) return `${sign}${h}h ${String(m).padStart(2, "0")}m`;
  return `${sign}${m}m ${String(sec).padStart(2, "0")}s`;
}

export function formatWallTime(seconds) {
  if (!Number.isFinite(seconds)) return String(seconds);
  const d = new Date(seconds * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  return (
    `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`
  );
}

export const X_AXIS_LABELS = { step: "Step", relative: "Relative time", wall: "Wall time", samples: "Samples" };
