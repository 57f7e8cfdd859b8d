// Client of the run information and media routes ("run_info", "media", "images", "image", "tensors"); relative URLs
// like every route.

import { buildUrl, getJson } from "./client.js";

function obj(v) {
  return v && typeof v === "object" && !Array.isArray(v) ? v : null;
}

/** One run_info answer with every field present. */
export function normalizeRunInfo(body) {
  return {
    run: String(body && body.run !== undefined ? body.run : ""),
    sources: Array.isArray(body && body.sources) ? body.sources.map(String) : [],
    runInfo: obj(body && body.run_info),
    hparams: obj(body && body.hparams) || {},
    hparamSources: obj(body && body.hparam_sources) || {},
    hparamNames: obj(body && body.hparam_names) || {}, // canonical name -> the names it was recorded as
    lineage: obj(body && body.lineage),
    msFiles: Array.isArray(body && body.ms_files) ? body.ms_files.filter((f) => f && typeof f === "object") : [],
  };
}

/** {run: normalized run_info answer} of every run that has run information, hyperparameters or lineage. */
export function fetchRunInfos(opts) {
  return getJson("run_info", null, opts).then((body) => {
    const out = {};
    const runs = obj(body && body.runs) || {};
    for (const run of Object.keys(runs)) out[run] = normalizeRunInfo({ ...runs[run], run });
    return out;
  });
}

function entries(list) {
  return (Array.isArray(list) ? list : []).map((e) => ({
    tag: String(e.tag),
    display_name: e.display_name ? String(e.display_name) : String(e.tag),
    count: Number(e.count) || 0,
    max_step: Number(e.max_step) || 0,
    source: e.source ? String(e.source) : "",
  }));
}

/** {run: {images: [entry], tensors: [entry]}}; entry {tag, display_name, count, max_step, source}. */
export function normalizeMedia(body) {
  const out = {};
  const runs = obj(body && body.runs) || {};
  for (const run of Object.keys(runs)) out[run] = { images: entries(runs[run].images), tensors: entries(runs[run].tensors) };
  return out;
}

export function fetchMedia(opts) {
  return getJson("media", null, opts).then(normalizeMedia);
}

/** {run, tag, totalSteps, steps: [{step, wall_time, width, height, mime, bytes}]}; totalSteps is more than the
 * steps listed when a report kept only some of them (its size budget). */
export function fetchImages(run, tag, opts) {
  return getJson("images", { run, tag }, opts).then((body) => ({
    run: String(body.run),
    tag: String(body.tag),
    totalSteps: Number(body.report_total_steps) || (Array.isArray(body.steps) ? body.steps.length : 0),
    steps: (Array.isArray(body.steps) ? body.steps : []).map((s) => ({
      step: Number(s.step),
      wall_time: Number(s.wall_time) || 0,
      width: Number(s.width) || 0,
      height: Number(s.height) || 0,
      mime: s.mime ? String(s.mime) : "",
      bytes: Number(s.bytes) || 0,
    })),
  }));
}

let imageSource = null;

/** Where images come from instead of the image route (the report: data URLs inlined in the file); null resets. */
export function setImageSource(fn) {
  imageSource = typeof fn === "function" ? fn : null;
}

/** The relative URL of one image (the bytes as written), or the report's data URL of it. */
export function imageUrl(run, tag, step) {
  const inlined = imageSource ? imageSource(run, tag, step) : null;
  return inlined || buildUrl("image", { run, tag, step });
}

export const DEFAULT_MAX_VALUES = 256;

/**
 * {run, tag, source, total_steps, downsampled, max_values, steps: [{step, shape, dtype, size, min, max, mean, nan,
 * pos_inf, neg_inf, values, truncated}]}. Values stay as sent ("NaN" / "Infinity" strings included); the view
 * decodes what it computes with.
 */
export function fetchTensors(run, tag, maxValues = DEFAULT_MAX_VALUES, opts) {
  return getJson("tensors", { run, tag, max_values: maxValues }, opts).then((body) => ({
    run: String(body.run),
    tag: String(body.tag),
    source: body.source ? String(body.source) : "",
    total_steps: Number(body.total_steps) || 0,
    downsampled: Boolean(body.downsampled),
    max_values: Number(body.max_values) || 0,
    steps: (Array.isArray(body.steps) ? body.steps : []).map((s) => ({
      step: Number(s.step),
      wall_time: Number(s.wall_time) || 0,
      shape: Array.isArray(s.shape) ? s.shape.map(Number) : [],
      dtype: s.dtype ? String(s.dtype) : "",
      size: Number(s.size) || 0,
      min: s.min,
      max: s.max,
      mean: s.mean,
      nan: Number(s.nan) || 0,
      pos_inf: Number(s.pos_inf) || 0,
      neg_inf: Number(s.neg_inf) || 0,
      values: Array.isArray(s.values) ? s.values : [],
      truncated: Boolean(s.truncated),
    })),
  }));
}
