// The page's part of the data contract, as the server sends it (route `contract`, built from the plugin's
// metadata and the health rules' thresholds): tier titles, the order of our tags, the series a tier usually has,
// axis labels and units, the update-ratio marks. Pure helpers over it (unit tested without a browser).

/** A tier's title, subtitle and "nothing recorded" note ({title: id} for a tier the contract does not name). */
export function tierInfo(contract, tier) {
  const t = contract.tiers.find((x) => x.id === tier);
  return t ? { title: t.title, subtitle: t.subtitle, emptyNote: t.empty_note } : { title: tier, subtitle: "", emptyNote: null };
}

function tagRank(contract, tag) {
  const order = contract.tag_order;
  for (let i = 0; i < order.length; i++) {
    if (tag === order[i] || tag.startsWith(order[i] + "/")) return i;
  }
  return order.length;
}

/** Sort order of chart cards: the contract's tag order first, then by name. */
export function compareTags(contract, a, b) {
  return tagRank(contract, a) - tagRank(contract, b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** Order of the per-layer heatmaps of a section: the contract's first ones (the update ratio leads), then the
 * others by name, then its last ones (the flight recorder's dumps). */
export function comparePanels(contract, a, b) {
  const order = contract.panel_order || { first: [], last: [] };
  const rank = (tag) => {
    const i = order.first.indexOf(tag);
    if (i >= 0) return i;
    const j = order.last.indexOf(tag);
    return j >= 0 ? order.first.length + 1 + j : order.first.length;
  };
  return rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

/** Whether a tag holds one-off values (compile time): drawn as points, never as a smoothed trend. */
export function isPointSeries(contract, tag) {
  return Array.isArray(contract.point_tags) && contract.point_tags.includes(tag);
}

function present(e, tags) {
  return tags.some((t) => e.tags.includes(t) || e.prefixes.some((p) => t.startsWith(p)));
}

/** The "not recorded" hint of a tier from the tags it has (null when nothing or everything is missing). */
export function partialHint(contract, tier, tags) {
  const expected = contract.expected[tier];
  if (!expected) return null;
  const missing = expected.filter((e) => !present(e, tags));
  if (!missing.length || missing.length === expected.length) return null;
  const labels = missing.map((m) => m.label).join(", ");
  if (missing.every((m) => m.item)) {
    const items = missing.map((m) => `"${m.item}"`).join(", ");
    return `Not recorded in these runs: ${labels}. Add them with TrainMonitor(debug=[${items}]).`;
  }
  return `Not recorded in these runs: ${labels}. Add them with TrainMonitor(${missing.map((m) => m.option).join(", ")}).`;
}

/** The reference line drawn on a tag's chart from another series of the same run ({tag, label}), or null. */
export function referenceOf(contract, tag) {
  const ref = contract.references && contract.references[tag];
  return ref ? { tag: ref.tag, label: ref.label } : null;
}

/** What a tag's y axis shows: {label, unit} (the unit "" when the quantity has none). */
export function axisOf(contract, tag) {
  const known = contract.axes[tag];
  if (known) return { label: known.label, unit: known.unit };
  const base = tag.replace(/\/auto$/, "").replace(/\[:\w+\]$/, "");
  const parts = base.split("/");
  let label = parts[parts.length - 1] || tag;
  let unit = "";
  for (const { suffix, unit: u } of contract.unit_suffixes) {
    if (label.endsWith(suffix) && label.length > suffix.length) {
      label = label.slice(0, -suffix.length);
      unit = u;
      break;
    }
  }
  return { label: label.replace(/_/g, " "), unit };
}

/** The axis title: "step time (ms)", or the label alone when there is no unit. */
export function axisTitle(axis) {
  return axis.unit ? `${axis.label} (${axis.unit})` : axis.label;
}

/** The update-ratio marks on the log10 scale of the heatmap: {center, slow, fast}. */
export function ratioMarks(contract) {
  const r = contract.update_ratio;
  return { center: Math.log10(r.healthy), slow: Math.log10(r.slow), fast: Math.log10(r.fast), raw: r };
}
