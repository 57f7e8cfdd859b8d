// Debiased exponential moving average, the same as TensorBoard's Scalars tab: the running average starts at 0 and
// is divided by (1 - w^n) so the first points are not pulled towards zero. Non-finite values pass through unsmoothed
// and do not enter the average; a constant series is returned as it is (no floating point drift).

export function emaSmooth(values, weight) {
  const n = values.length;
  const out = new Array(n);
  const w = Math.min(Math.max(Number(weight) || 0, 0), 0.999);
  if (n === 0) return out;
  let constant = true;
  for (let i = 1; i < n; i++) {
    if (values[i] !== values[0] && !(Number.isNaN(values[i]) && Number.isNaN(values[0]))) {
      constant = false;
      break;
    }
  }
  if (w === 0 || constant) {
    for (let i = 0; i < n; i++) out[i] = values[i];
    return out;
  }
  let last = 0;
  let count = 0;
  for (let i = 0; i < n; i++) {
    const v = values[i];
    if (!Number.isFinite(v)) {
      out[i] = v;
      continue;
    }
    last = last * w + (1 - w) * v;
    count += 1;
    out[i] = last / (1 - Math.pow(w, count));
  }
  return out;
}
