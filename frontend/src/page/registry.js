// The view protocol and the registry of the dashboard's views.
//
// Every view of one tag in a tier section is an object with
//   element, tag, tier
//   activate()                  first time on screen: start fetching
//   update(runs, opts, {refresh}) the visible runs that have the tag ([{run, color}]) and the chart options
//   setDisplayName(name)
//   highlight(steps, run)       shade a health finding's step range [first, last] (null clears)
//   destroy()
// The registry says, per kind of series in the tags listing, which view draws it, where in a section it goes
// ("panels" above the grid, or the grid) and in which order, in the order the kinds are laid out.

import { comparePanels, compareTags } from "../base/contract.js";
import { ChartCard } from "../views/sections/scalars/chartCard.js";
import { HistogramCard } from "../views/sections/distributions/histogramCard.js";
import { LayerPanel } from "../views/sections/layers/layerPanel.js";
import { TablePanel } from "../views/sections/layers/tablePanel.js";

const byName = () => (a, b) => (a < b ? -1 : a > b ? 1 : 0);

export const VIEW_KINDS = [
  { kind: "layers", slot: "panels", order: (contract) => (a, b) => comparePanels(contract, a, b), create: (o) => new LayerPanel(o) },
  { kind: "table", slot: "panels", order: byName, create: (o) => new TablePanel(o) },
  { kind: "scalar", slot: "grid", order: (contract) => (a, b) => compareTags(contract, a, b), create: (o) => new ChartCard(o) },
  { kind: "histogram", slot: "grid", order: byName, create: (o) => new HistogramCard(o) },
];

/** The view kind of an entry of the tags listing; null for the members of a per-parameter family (local_norm/<p>),
 * which are rows of the family's heatmap instead. */
export function viewKindOf(entry) {
  if (entry.kind === "layers" || entry.kind === "histogram" || entry.kind === "table") return entry.kind;
  if (!entry.kind || entry.kind === "scalar") return entry.family ? null : "scalar";
  return null;
}

/** The key of a view in the dashboard's one map of views. */
export function viewKey(kind, tag) {
  return `${kind}\u0000${tag}`;
}

const KIND_NAMES = { layers: ["heatmap", "heatmaps"], scalar: ["chart", "charts"], histogram: ["distribution", "distributions"] };

/** "2 heatmaps · 8 charts · 5 distributions": the views of a section by kind, in the registry's order. */
export function kindsText(infos) {
  const parts = [];
  for (const { kind } of VIEW_KINDS) {
    const n = infos.filter((i) => i.kind === kind).length;
    const [one, many] = KIND_NAMES[kind] || [kind, kind];
    if (n) parts.push(`${n} ${n === 1 ? one : many}`);
  }
  return parts.join(" · ");
}
