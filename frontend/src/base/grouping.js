// Run groups (pure: no DOM): runs grouped by a regex capture of their name or by a hyperparameter's value, and a
// group's series as the mean of its runs with their min / max as the band (TensorBoard's interval band format, so a
// chart draws a group like one run with its interval statistics).

export const GROUP_PREFIX = "[group] ";
export const NO_MATCH = "(no match)";
export const NO_VALUE = "(no value)";

/** The group key of a run name under a regex: the first capture group, else the whole match; null: no match. */
export function regexKey(regex, run) {
  const m = regex.exec(run);
  if (!m) return null;
  for (let i = 1; i < m.length; i++) if (m[i] !== undefined) return m[i];
  return m[0];
}

function hparamText(value) {
  if (value === undefined || value === null) return null;
  return typeof value === "object" ? JSON.stringify(value) : String(value);
}

const collator = new Intl.Collator(undefined, { numeric: true });

/** Numbers in numeric order ("0.01" before "0.1" before "1e3"), before other keys in natural order. */
export function compareKeys(a, b) {
  const x = a.trim() === "" ? NaN : Number(a);
  const y = b.trim() === "" ? NaN : Number(b);
  if (Number.isFinite(x) && Number.isFinite(y)) return x - y || collator.compare(a, b);
  if (Number.isFinite(x) !== Number.isFinite(y)) return Number.isFinite(x) ? -1 : 1;
  return collator.compare(a, b);
}

/**
 * Groups runs. spec: {by: "regex", regex: RegExp} or {by: "hparam", name, hparams: {run: {name: value}}}.
 * @returns {{id: string, label: string, runs: string[]}[]} sorted by label (numbers in numeric order), the runs
 *   without a key last under "(no match)" / "(no value)"; id is the name a chart shows for the group.
 */
export function groupRuns(runs, spec) {
  const byKey = new Map();
  let rest = null;
  for (const run of runs) {
    let key = null;
    if (spec.by === "regex" && spec.regex) key = regexKey(spec.regex, run);
    else if (spec.by === "hparam") key = hparamText(((spec.hparams || {})[run] || {})[spec.name]);
    if (key === null) {
      rest = rest || [];
      rest.push(run);
      continue;
    }
    if (!byKey.has(key)) byKey.set(key, []);
    byKey.get(key).push(run);
  }
  const out = [...byKey.keys()]
    .sort(compareKeys)
    .map((key) => ({ label: spec.by === "hparam" ? `${spec.name}=${key}` : key, runs: byKey.get(key) }));
  if (rest) out.push({ label: spec.by === "hparam" ? NO_VALUE : NO_MATCH, runs: rest });
  return out.map((g) => ({ ...g, id: `${GROUP_PREFIX}${g.label} (${g.runs.length} run${g.runs.length === 1 ? "" : "s"})` }));
}

/** Linear interpolation of points [[step, wall, value]] (sorted by step) at `step`; null outside their range. */
function valueAt(points, step, cursor) {
  while (cursor.i < points.length - 1 && points[cursor.i + 1][0] <= step) cursor.i += 1;
  const a = points[cursor.i];
  if (!a || step < points[0][0] || step > points[points.length - 1][0]) return null;
  if (a[0] === step) return [a[1], a[2]];
  const b = points[cursor.i + 1];
  if (!b) return null;
  const t = (step - a[0]) / (b[0] - a[0]);
  const v = Number.isFinite(a[2]) && Number.isFinite(b[2]) ? a[2] + t * (b[2] - a[2]) : NaN;
  return [a[1] + t * (b[1] - a[1]), v];
}

/** At most `max` steps of a sorted list, evenly spaced, the first and the last kept. */
function thin(steps, max) {
  if (steps.length <= max) return steps;
  const out = [];
  for (let k = 0; k < max; k++) out.push(steps[Math.round((k * (steps.length - 1)) / (max - 1))]);
  return [...new Set(out)];
}

/**
 * The series of a group: at every step of its runs (at most maxPoints), the mean over the runs that cover that step
 * (linear interpolation between a run's points, no extrapolation), with {min, mean, max, count, nonfinite} as the
 * interval row: count = runs with a finite value there, nonfinite = runs with NaN / Inf there.
 * @param {{points: number[][]}[]} members  answers of the scalars route (decoded)
 */
export function aggregateSeries(id, tag, members, maxPoints = 2000) {
  const usable = members.filter((m) => m && Array.isArray(m.points) && m.points.length);
  const stepSet = new Set();
  for (const m of usable) for (const p of m.points) stepSet.add(p[0]);
  const steps = thin([...stepSet].sort((a, b) => a - b), maxPoints);
  const sorted = usable.map((m) => [...m.points].sort((a, b) => a[0] - b[0]));
  const cursors = sorted.map(() => ({ i: 0 }));
  const points = [];
  const interval = [];
  for (const step of steps) {
    let sum = 0;
    let count = 0;
    let nonfinite = 0;
    let wall = 0;
    let walls = 0;
    let min = Infinity;
    let max = -Infinity;
    for (let k = 0; k < sorted.length; k++) {
      const at = valueAt(sorted[k], step, cursors[k]);
      if (!at) continue;
      wall += at[0];
      walls += 1;
      if (!Number.isFinite(at[1])) {
        nonfinite += 1;
        continue;
      }
      sum += at[1];
      count += 1;
      if (at[1] < min) min = at[1];
      if (at[1] > max) max = at[1];
    }
    if (!walls) continue;
    const mean = count ? sum / count : NaN;
    points.push([step, wall / walls, mean]);
    interval.push({ step, min: count ? min : NaN, mean, max: count ? max : NaN, count, nonfinite });
  }
  const first = usable[0] || {};
  return {
    run: id,
    tag,
    tier: first.tier || "other",
    display_name: first.display_name || tag,
    total_points: points.length,
    downsampled: false,
    points,
    interval,
    members: usable.length,
  };
}
