// CSV and JSON export of one series (one run, one tag). Non-finite values are written as NaN / Infinity /
// -Infinity (strings in JSON, the same convention as the plugin's routes).

function encodeNumber(v) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "Infinity";
  if (v === -Infinity) return "-Infinity";
  return v;
}

function csvField(text) {
  const s = String(text);
  return /[",\n\r]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

export function seriesToCsv(data) {
  const lines = ["step,wall_time,value"];
  for (const [step, wall, value] of data.points) {
    lines.push([encodeNumber(step), encodeNumber(wall), encodeNumber(value)].map(csvField).join(","));
  }
  return lines.join("\n") + "\n";
}

export function seriesToJson(data) {
  const body = {
    run: data.run,
    tag: data.tag,
    total_points: data.total_points,
    downsampled: data.downsampled,
    points: data.points.map(([step, wall, value]) => ({
      step: encodeNumber(step),
      wall_time: encodeNumber(wall),
      value: encodeNumber(value),
    })),
  };
  if (data.interval) {
    body.interval = data.interval.map(({ step, min, mean, max, count, nonfinite }) => ({
      step: encodeNumber(step),
      min: encodeNumber(min),
      mean: encodeNumber(mean),
      max: encodeNumber(max),
      count: encodeNumber(count),
      nonfinite: encodeNumber(nonfinite),
    }));
  }
  return JSON.stringify(body, null, 1) + "\n";
}

export function downloadName(run, tag, ext) {
  const clean = (s) => String(s).replace(/[^A-Za-z0-9._-]+/g, "_").replace(/^_+|_+$/g, "") || "series";
  return `${clean(run)}__${clean(tag)}.${ext}`;
}

/** Saves text as a file through a same-document blob URL (no request leaves the page). */
export function saveText(filename, text, mime) {
  const blob = new Blob([text], { type: mime });
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.style.display = "none";
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
