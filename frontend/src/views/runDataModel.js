// Pure helpers of the "Run info" and "Images and tensors" sections: what a value looks like as text, which facts of
// the run information and of MindSpore's lineage are shown, how a tensor's values are laid out in a table.

import { decodeNumber } from "../api/client.js";

/** A hyperparameter or fact as text: numbers with up to 7 significant digits (float32 noise gone), JSON for objects. */
export function formatValue(v) {
  if (v === null || v === undefined) return "–";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") return formatNumber(v);
  if (typeof v === "string") {
    if (v === "NaN" || v === "Infinity" || v === "-Infinity") return formatNumber(decodeNumber(v));
    return v;
  }
  try {
    return JSON.stringify(v);
  } catch (e) {
    return String(v);
  }
}

/** A number with up to 7 significant digits; NaN / ±Inf by name; integers in full. */
export function formatNumber(v) {
  if (Number.isNaN(v)) return "NaN";
  if (v === Infinity) return "+Inf";
  if (v === -Infinity) return "-Inf";
  if (Number.isInteger(v) && Math.abs(v) < 1e15) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a >= 1e15 || a < 1e-4)) return v.toExponential(6).replace(/\.?0+e/, "e");
  return String(Number(v.toPrecision(7)));
}

const SOURCE_NAMES = {
  run_info: "run info",
  lineage: "MindSpore lineage",
  hparams: "HParams summary",
  mindformers_config: "mindformers config",
  hf_training_args: "Hugging Face TrainingArguments",
};

/** [{name, value, text, source, given, from}] of the merged hyperparameters (canonical names), sorted by name;
 * given: the names it was recorded as, from: "run info as lr" (where it came from, and under which name when that
 * is not the canonical one). */
export function hparamRows(info) {
  const hp = (info && info.hparams) || {};
  const src = (info && info.hparamSources) || {};
  const names = (info && info.hparamNames) || {};
  return Object.keys(hp)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    .map((name) => {
      const source = src[name] ? String(src[name]) : "";
      const given = Array.isArray(names[name]) ? names[name].map(String) : [];
      const other = given.filter((g) => g !== name);
      const from = (SOURCE_NAMES[source] || source) + (other.length ? ` as ${given.join(", ")}` : "");
      return { name, value: hp[name], text: formatValue(hp[name]), source, given, from };
    });
}

const LINEAGE_FACTS = [
  ["network", "Network"],
  ["loss_function", "Loss function"],
  ["optimizer", "Optimizer"],
  ["learning_rate", "Learning rate"],
  ["epoch", "Epochs"],
  ["batch_size", "Batch size"],
  ["train_dataset_size", "Train dataset size"],
  ["train_dataset_path", "Train dataset"],
  ["valid_dataset_size", "Validation dataset size"],
  ["valid_dataset_path", "Validation dataset"],
  ["device_num", "Devices"],
  ["parallel_mode", "Parallel mode"],
  ["loss", "Final loss"],
  ["model_size", "Model size (bytes)"],
  ["model_path", "Model"],
];

/**
 * What MindSpore's lineage says about a run: {facts: [[label, text]], metrics: [[name, text]], user: [[key, text]],
 * dataset: "Batch ← GeneratorDataset" or ""}; null without lineage.
 */
export function lineageSummary(lineage) {
  if (!lineage || typeof lineage !== "object") return null;
  const hp = lineage.hparams || {};
  const facts = [];
  for (const [key, label] of LINEAGE_FACTS) if (hp[key] !== undefined) facts.push([label, formatValue(hp[key])]);
  const metrics = Object.keys(hp)
    .filter((k) => k.startsWith("metric/") || k === "metric")
    .sort()
    .map((k) => [k === "metric" ? k : k.slice(7), formatValue(hp[k])]);
  const userData = lineage.user && typeof lineage.user === "object" ? lineage.user : {};
  const user = Object.keys(userData)
    .sort()
    .map((k) => [k, formatValue(userData[k])]);
  return { facts, metrics, user, dataset: datasetChain(lineage.dataset_graph) };
}

function opNames(list, limit = 6) {
  const names = (Array.isArray(list) ? list : []).map((op) => String((op && op.name) || "?"));
  return names.length > limit ? names.slice(0, limit).concat(`+${names.length - limit}`) : names;
}

function samplerText(sampler) {
  if (!sampler || typeof sampler !== "object") return "";
  const params = sampler.params && typeof sampler.params === "object" ? sampler.params : {};
  const shown = ["num_samples", "num_shards", "shard_id", "replacement"].filter((k) => params[k] !== undefined);
  const args = shown.map((k) => `${k}=${formatValue(params[k])}`).join(", ");
  return `${sampler.name || "sampler"}${args ? `(${args})` : ""}`;
}

/** The dataset pipeline as one line, outermost operation first, with a Map's operations and a source's sampler
 * ("Batch ← Map(TypeCast) ← Map(Decode, Rescale) ← ImageFolderDataset [RandomSampler(num_samples=8)]"). */
export function datasetChain(graph, limit = 12) {
  const names = [];
  let node = graph;
  while (node && typeof node === "object" && names.length < limit) {
    if (node.op_type) {
      const ops = opNames(node.operations);
      const sampler = samplerText(node.sampler);
      names.push(String(node.op_type) + (ops.length ? `(${ops.join(", ")})` : "") + (sampler ? ` [${sampler}]` : ""));
    }
    const children = Array.isArray(node.children) ? node.children : [];
    if (children.length > 1) {
      names.push(`(${children.length} inputs)`);
      break;
    }
    node = children[0];
  }
  return names.join(" ← ");
}

/** The basics of our run information (TrainMonitor's _meta/run_info): [[label, text]]; [] without it. */
export function runInfoBasics(info) {
  if (!info || typeof info !== "object") return [];
  const rows = [];
  const add = (label, value) => {
    if (value !== undefined && value !== null && value !== "") rows.push([label, formatValue(value)]);
  };
  add("Written by", info.source === "mindspore" ? "MindSpore (converted by tb-mindspore convert)" : undefined);
  add("MindSpore", info.mindspore_version);
  add("Mode", info.mode);
  add("collect_freq", info.collect_freq);
  if (info.rank !== undefined && info.rank !== null) {
    add("Rank", info.rank_size ? `${info.rank} of ${info.rank_size}` : info.rank);
  }
  add("Batch size", info.batch_size);
  add("Epochs", info.epochs);
  add("Steps per epoch", info.steps_per_epoch);
  if (info.dataset_sink_mode !== undefined) add("Sink mode", info.dataset_sink_mode ? `on (sink_size ${formatValue(info.sink_size)})` : "off");
  add("Optimizer", info.optimizer);
  add("Train cell", info.train_cell);
  add("Plugin", info.plugin_version);
  return rows;
}

/** Row-major multi-index of flat position i in a tensor of ``shape``: "[1, 2]". */
export function multiIndex(i, shape) {
  if (!shape.length) return "[]";
  const idx = new Array(shape.length);
  let rest = i;
  for (let d = shape.length - 1; d >= 0; d--) {
    const n = Math.max(1, shape[d]);
    idx[d] = rest % n;
    rest = Math.floor(rest / n);
  }
  return `[${idx.join(", ")}]`;
}

/**
 * How a tensor's values are tabled: a grid for a complete 1-D or 2-D tensor of at most ``maxCols`` columns
 * ({kind: "grid", cols, rows: [[value]]}), else a list of (index, value) pairs ({kind: "list", rows: [[index, value]]}).
 * Values stay as sent (numbers, "NaN", "Infinity", ...).
 */
export function tensorLayout(shape, values, truncated, maxCols = 16) {
  const dims = Array.isArray(shape) ? shape : [];
  const vals = Array.isArray(values) ? values : [];
  if (!truncated && dims.length <= 2 && vals.length > 0) {
    const cols = dims.length === 2 ? dims[1] : dims.length === 1 ? dims[0] : 1;
    if (cols > 0 && cols <= maxCols && vals.length % cols === 0) {
      const rows = [];
      for (let r = 0; r < vals.length / cols; r++) rows.push(vals.slice(r * cols, (r + 1) * cols));
      return { kind: "grid", cols, rows };
    }
  }
  return { kind: "list", cols: 1, rows: vals.map((v, i) => [multiIndex(i, dims), v]) };
}

/** One line of a tensor step's statistics. */
export function tensorStatsText(s) {
  const parts = [`shape [${(s.shape || []).join(", ")}]`, s.dtype, `${s.size} values`];
  if (s.min !== null && s.min !== undefined) {
    parts.push(`min ${formatValue(s.min)}`, `max ${formatValue(s.max)}`, `mean ${formatValue(s.mean)}`);
  }
  const bad = [];
  if (s.nan) bad.push(`${s.nan} NaN`);
  if (s.pos_inf) bad.push(`${s.pos_inf} +Inf`);
  if (s.neg_inf) bad.push(`${s.neg_inf} -Inf`);
  if (bad.length) parts.push(bad.join(", "));
  return parts.filter(Boolean).join(" · ");
}

/** The run's MindSpore files when there is something to say (several summary files, a superseded range):
 * [{file, created, steps, superseded}] with text fields, else []. */
export function msFileRows(files) {
  const list = Array.isArray(files) ? files : [];
  const summaries = list.filter((f) => f.kind === "summary");
  if (summaries.length < 2 && !list.some((f) => Array.isArray(f.superseded) && f.superseded.length)) return [];
  const base = (path) => String(path).split("/").pop();
  return list.map((f) => {
    const lost = (Array.isArray(f.superseded) ? f.superseded : []).map(
      (e) =>
        `steps ${e.from_step}–${e.to_step} replaced by ${base(e.by)} (${e.points} point${e.points === 1 ? "" : "s"}: ${(e.tags || []).join(", ")})`,
    );
    return {
      file: String(f.file),
      name: base(f.file),
      kind: String(f.kind || ""),
      created: typeof f.created === "number" ? new Date(f.created * 1000).toISOString().replace("T", " ").slice(0, 19) : "",
      steps: Array.isArray(f.steps) ? `${f.steps[0]}–${f.steps[1]}` : f.kind === "lineage" ? "lineage" : "no steps",
      superseded: lost.join("; "),
    };
  });
}
