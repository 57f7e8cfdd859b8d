// The "Compare" section: a run against its reference (a MindSpore port against the PyTorch original), from the
// `compare` route. Pick two runs (and optionally a noise pair: the reference trained again); the section says
// whether they match or where they part first (quantity, step, layers), the likely class with its evidence and
// what to do, every quantity that parts in order, each scalar quantity's two curves with their relative difference
// against its tolerance, the first parted layers' curves, a table of every mapped layer, and the layer mapping
// (built-in renames, unmapped layers), which the user can edit (pair an unmapped run layer, remove a pair) and save
// as a mapping file for `tb-mindspore compare --mapping`. Layer and run names only ever reach the page as text.

import css from "./compare.css?inline";
import { fetchRuns } from "../../../api/client.js";
import { fetchCompare } from "../../../api/compare.js";
import { LineChart } from "../../../chart/lineChart.js";
import { el, clear } from "../../../base/dom.js";
import { sectionShell } from "../../sectionShell.js";
import {
  LAYER_QUANTITIES,
  curveSeries,
  layerRows,
  mappingFile,
  mappingFromEdits,
  orderRows,
  quantityLabel,
  verdictText,
} from "./compareModel.js";

const SETTINGS_KEY = "tb-mindspore.compare.v1";
const PICK_KEY = "tb-mindspore.compare.pick.v1";
const COLORS = { run: "#1a73e8", reference: "#e37400", tolerance: "#5f6368" };
const CURVE_ORDER = ["learning_rate", "loss", "grad_norm", "weight_norm", "eval_loss"];

function injectStyles() {
  if (document.getElementById("ms-compare-styles")) return;
  const style = document.createElement("style");
  style.id = "ms-compare-styles";
  style.textContent = css;
  document.head.appendChild(style);
}

function loadPick() {
  try {
    return JSON.parse(window.localStorage.getItem(PICK_KEY) || "{}") || {};
  } catch (e) {
    return {};
  }
}

function savePick(pick) {
  try {
    window.localStorage.setItem(PICK_KEY, JSON.stringify(pick));
  } catch (e) {
    /* private mode: nothing kept */
  }
}

class CompareSection {
  constructor() {
    const shell = sectionShell({
      testid: "compare-section",
      title: "Compare",
      subtitle: "a run against its reference: where they part first, and why",
      settingsKey: SETTINGS_KEY,
      extraClass: "ms-compare-section",
    });
    this.element = shell.element;
    this.body = shell.body;
    this.count = shell.count;
    this.runs = [];
    this.pick = loadPick();
    this.edits = { pairs: {}, removed: [] };
    this.result = null;
    this.charts = [];
    this.generation = 0;
    const select = (testid, title) => el("select", { class: "ms-select", "data-testid": testid, title });
    this.runSelect = select("compare-run", "Run (e.g. the MindSpore port)");
    this.refSelect = select("compare-reference", "Reference (e.g. the PyTorch original)");
    this.noiseSelect = select("compare-noise", "Noise pair: the reference trained again (optional)");
    this.button = el("button", { type: "button", class: "ms-button", "data-testid": "compare-go", text: "Compare", on: { click: () => this.compare() } });
    this.status = el("div", { class: "ms-chart-status", "data-testid": "compare-status", text: "Pick a run and its reference." });
    this.output = el("div", { class: "ms-compare-output", "data-testid": "compare-output", hidden: true });
    this.card = el(
      "div",
      { class: "ms-card ms-compare-card", "data-testid": "compare-panel", "data-state": "idle" },
      el(
        "div",
        { class: "ms-compare-controls" },
        el("label", {}, "Run ", this.runSelect),
        el("label", {}, "against reference ", this.refSelect),
        el("label", {}, "noise pair ", this.noiseSelect),
        this.button,
      ),
      this.status,
      this.output,
    );
    this.body.appendChild(this.card);
  }

  async refresh() {
    let runs;
    try {
      runs = await fetchRuns();
    } catch (e) {
      return;
    }
    this.element.hidden = runs.length < 2;
    this.element.dataset.state = runs.length < 2 ? "empty" : "ready";
    if (JSON.stringify(runs) === JSON.stringify(this.runs)) return;
    this.runs = runs;
    const fill = (sel, value, withNone) => {
      clear(sel);
      if (withNone) sel.appendChild(el("option", { value: "", text: "none (first steps)" }));
      for (const r of runs) sel.appendChild(el("option", { value: r, text: r }));
      if (value && runs.includes(value)) sel.value = value;
    };
    fill(this.runSelect, this.pick.run, false);
    fill(this.refSelect, this.pick.reference || runs.find((r) => r !== this.runSelect.value), false);
    fill(this.noiseSelect, this.pick.noise || "", true);
  }

  async compare() {
    const run = this.runSelect.value;
    const reference = this.refSelect.value;
    const noise = this.noiseSelect.value;
    if (!run || !reference) return;
    if (run !== this.pick.run || reference !== this.pick.reference) this.edits = { pairs: {}, removed: [] };
    this.pick = { run, reference, noise };
    savePick(this.pick);
    const mapping = mappingFromEdits(this.edits);
    const gen = ++this.generation;
    this.card.dataset.state = "loading";
    this.status.hidden = false;
    this.status.textContent = "Comparing…";
    let result;
    try {
      result = await fetchCompare({ run, reference, noise, mapping });
    } catch (e) {
      if (gen !== this.generation) return;
      this.card.dataset.state = "error";
      this.status.textContent = `Could not compare: ${e.message}`;
      this.output.hidden = true;
      return;
    }
    if (gen !== this.generation) return;
    this.result = result;
    this.status.hidden = true;
    this.draw(result);
    this.card.dataset.state = "ready";
    this.card.dataset.verdict = result.verdict;
    this.card.dataset.firstStep = result.first ? String(result.first.step) : "";
    this.card.dataset.firstQuantity = result.first ? result.first.quantity : "";
    this.card.dataset.likely = result.likely ? result.likely.class : "";
    this.count.textContent = result.verdict === "part" ? "part" : result.verdict === "match" ? "match" : "";
  }

  draw(result) {
    for (const c of this.charts) c.destroy();
    this.charts = [];
    clear(this.output);
    this.output.hidden = false;
    const verdict = el("div", { class: `ms-compare-verdict ms-compare-${result.verdict}`, "data-testid": "compare-verdict", text: verdictText(result) });
    this.output.appendChild(verdict);
    if (result.likely) this.output.appendChild(this.likelyBox(result.likely));
    if (result.order && result.order.length) this.output.appendChild(this.orderTable(result));
    this.output.appendChild(this.curves(result));
    if (result.layer_curves && result.layer_curves.length) this.output.appendChild(this.layerCurves(result));
    if (result.layer_table && result.layer_table.length) this.output.appendChild(this.layerTable(result));
    this.output.appendChild(this.mappingPanel(result));
  }

  likelyBox(likely) {
    const side = likely.side ? ` (in the ${likely.side})` : "";
    return el(
      "div",
      { class: "ms-compare-likely", "data-testid": "compare-likely", "data-class": likely.class, "data-family": likely.family },
      el("div", { class: "ms-compare-likely-title" }, el("span", { text: `Likely: ${likely.title}${side}` }), el("span", { class: "ms-compare-confidence", text: `${likely.confidence} confidence` })),
      el("ul", { class: "ms-compare-evidence", "data-testid": "compare-evidence" }, (likely.evidence || []).map((e) => el("li", { text: e }))),
      el("div", { class: "ms-compare-advice", "data-testid": "compare-advice", text: likely.advice }),
    );
  }

  orderTable(result) {
    const rows = orderRows(result);
    return el(
      "table",
      { class: "ms-compare-table", "data-testid": "compare-order" },
      el("caption", { text: "In order: where each quantity leaves its tolerance" }),
      el("thead", {}, el("tr", {}, ["step", "quantity", "first layers", "difference", "tolerance"].map((h) => el("th", { text: h })))),
      el(
        "tbody",
        {},
        rows.map((r) =>
          el(
            "tr",
            { "data-testid": "compare-order-row", "data-quantity": r.quantity, "data-step": String(r.step) },
            el("td", { text: String(r.step) }),
            el("td", { text: r.label }),
            el("td", { class: "ms-compare-layers", text: r.layers }),
            el("td", { text: r.difference }),
            el("td", { text: r.tolerance }),
          ),
        ),
      ),
    );
  }

  chartPair(curve, title, names, testid) {
    const { values, difference } = curveSeries(curve, names, COLORS);
    const host = el("div", { class: "ms-compare-chart", "data-testid": testid, "data-column": curve.column, "data-first-step": curve.first_step === null ? "" : String(curve.first_step) });
    const head = el("div", { class: "ms-card-title", text: title + (curve.first_step !== null && curve.first_step !== undefined ? ` · parts at step ${curve.first_step}` : " · within tolerance") });
    const valuesHost = el("div", { class: "ms-compare-plot" });
    const diffHost = el("div", { class: "ms-compare-plot" });
    host.append(head, valuesHost, el("div", { class: "ms-compare-sub", text: "relative difference (log) and its tolerance" }), diffHost);
    // Drawn once the host is in the page (uPlot reads its width).
    requestAnimationFrame(() => {
      const a = new LineChart(valuesHost, { height: 150, yAxis: { label: title, unit: "" } });
      a.update(values, { xAxis: "step", smoothing: 0, logY: false, showInterval: false });
      const b = new LineChart(diffHost, { height: 110, yAxis: { label: "relative difference", unit: "" } });
      b.update(difference, { xAxis: "step", smoothing: 0, logY: true, showInterval: false });
      this.charts.push(a, b);
    });
    return host;
  }

  curves(result) {
    const names = { run: `${result.run} (run)`, reference: `${result.reference} (reference)` };
    const grid = el("div", { class: "ms-compare-grid", "data-testid": "compare-curves" });
    // The quantities that part first come first, then the others in the order of a training step.
    const parted = (result.order || []).map((e) => e.quantity).filter((q) => CURVE_ORDER.includes(q));
    for (const q of [...new Set([...parted, ...CURVE_ORDER])]) {
      const curve = result.curves && result.curves[q];
      if (curve) grid.appendChild(this.chartPair(curve, quantityLabel(q), names, "compare-curve"));
    }
    return grid;
  }

  layerCurves(result) {
    const names = { run: `${result.run} (run)`, reference: `${result.reference} (reference)` };
    const grid = el("div", { class: "ms-compare-grid", "data-testid": "compare-layer-curves" });
    for (const curve of result.layer_curves) {
      grid.appendChild(this.chartPair(curve, `${quantityLabel(curve.quantity)}: ${curve.column}`, names, "compare-layer-curve"));
    }
    return el("div", {}, el("h3", { class: "ms-compare-h", text: "The first layers to part" }), grid);
  }

  layerTable(result) {
    const rows = layerRows(result);
    return el(
      "details",
      { class: "ms-compare-details", "data-testid": "compare-layers", open: rows.some((r) => r.first !== null) },
      el("summary", { text: `Layers (${rows.length} mapped, ${rows.filter((r) => r.first !== null).length} part)` }),
      el(
        "table",
        { class: "ms-compare-table" },
        el("thead", {}, el("tr", {}, el("th", { text: "layer (reference)" }), el("th", { text: "run layer" }), LAYER_QUANTITIES.map((q) => el("th", { text: quantityLabel(q) })))),
        el(
          "tbody",
          {},
          rows.map((r) =>
            el(
              "tr",
              { "data-testid": "compare-layer-row", "data-layer": r.layer, class: r.first !== null ? "ms-compare-parted" : "" },
              el("td", { class: "ms-compare-layers", text: r.layer }),
              el("td", { class: "ms-compare-layers ms-muted", text: r.runLayers === r.layer ? "same" : r.runLayers }),
              LAYER_QUANTITIES.map((q) => {
                const c = r.cells[q];
                return el("td", { text: !c ? "–" : c.step !== null ? `step ${c.step}` : `ok (${c.max})`, title: c ? `largest difference ${c.max}` : "not recorded by both" });
              }),
            ),
          ),
        ),
      ),
    );
  }

  mappingPanel(result) {
    const m = result.mapping || { pairs: [], unmapped_run: [], unmapped_reference: [], shape_mismatches: [] };
    const renamed = m.pairs.filter((p) => p.rule !== "same name");
    const pairRow = (p) =>
      el(
        "tr",
        { "data-testid": "compare-pair", "data-run": p.run.join(" + "), "data-rule": p.rule },
        el("td", { class: "ms-compare-layers", text: p.run.join(" + ") }),
        el("td", { class: "ms-compare-layers", text: p.reference.join(" + ") }),
        el("td", { text: p.rule }),
        el("td", { class: "ms-muted", text: (p.notes || []).join("; ") }),
        el("td", {}, el("button", { type: "button", class: "ms-button ms-compare-small", "data-testid": "compare-unpair", text: "remove", title: "Leave this pair out of the comparison", on: { click: () => this.unpair(p) } })),
      );
    const refOptions = m.unmapped_reference || [];
    const unmappedRow = (name) => {
      const sel = el("select", { class: "ms-select", "data-testid": "compare-pair-select", "data-run": name }, el("option", { value: "", text: "— pick a reference layer —" }), refOptions.map((r) => el("option", { value: r, text: r })));
      sel.addEventListener("change", () => {
        if (sel.value) this.edits.pairs[name] = [sel.value];
        else delete this.edits.pairs[name];
      });
      return el("tr", { "data-testid": "compare-unmapped-run", "data-run": name }, el("td", { class: "ms-compare-layers", text: name }), el("td", {}, sel));
    };
    const edited = Object.keys(this.edits.pairs).length + this.edits.removed.length;
    return el(
      "details",
      { class: "ms-compare-details", "data-testid": "compare-mapping", open: Boolean((m.unmapped_run || []).length || (m.shape_mismatches || []).length || edited) },
      el("summary", { text: `Layer mapping: ${m.pairs.length} pairs (${renamed.length} renamed), ${(m.unmapped_run || []).length} run and ${(m.unmapped_reference || []).length} reference layers unmapped` }),
      el(
        "table",
        { class: "ms-compare-table", "data-testid": "compare-pairs" },
        el("thead", {}, el("tr", {}, ["run layer", "reference layer", "rule", "notes", ""].map((h) => el("th", { text: h })))),
        el("tbody", {}, m.pairs.map(pairRow)),
      ),
      (m.unmapped_run || []).length
        ? el("table", { class: "ms-compare-table", "data-testid": "compare-unmapped" }, el("caption", { text: "Run layers with no reference layer (not compared): pair them" }), el("tbody", {}, m.unmapped_run.map(unmappedRow)))
        : null,
      (m.unmapped_reference || []).length ? el("div", { class: "ms-muted", "data-testid": "compare-unmapped-reference", text: `Reference layers with no run layer: ${m.unmapped_reference.join(", ")}` }) : null,
      (m.shape_mismatches || []).length ? el("ul", { class: "ms-compare-evidence", "data-testid": "compare-shape-mismatches" }, m.shape_mismatches.map((s) => el("li", { text: `${s.run.join(" + ")} / ${s.reference.join(" + ")}: ${s.note}` }))) : null,
      el(
        "div",
        { class: "ms-compare-controls" },
        el("button", { type: "button", class: "ms-button", "data-testid": "compare-apply", text: "Apply mapping", on: { click: () => this.compare() } }),
        el("button", { type: "button", class: "ms-button", "data-testid": "compare-save-mapping", text: "Save as mapping file", on: { click: () => this.saveMapping() } }),
        el("span", { class: "ms-muted", text: "tb-mindspore compare RUN REFERENCE --mapping FILE reads it" }),
      ),
    );
  }

  unpair(pair) {
    for (const name of pair.run) if (!this.edits.removed.includes(name)) this.edits.removed.push(name);
    this.compare();
  }

  saveMapping() {
    const mapping = mappingFile(this.edits);
    const blob = new Blob([JSON.stringify(mapping, null, 1) + "\n"], { type: "application/json" });
    const a = el("a", { href: URL.createObjectURL(blob), download: "port_mapping.json", "data-testid": "compare-mapping-link" });
    document.body.appendChild(a);
    a.click();
    a.remove();
  }
}

/** Mounts the Compare section into the dashboard (shown when the logdir holds two runs or more). */
export function mountCompare(dashboard) {
  injectStyles();
  const section = new CompareSection();
  const host = (dashboard && dashboard.main) || document.body;
  host.appendChild(section.element);
  // first read once the charts on screen have their series (the dashboard's first listing)
  if (dashboard && dashboard.firstChartsShown) dashboard.firstChartsShown.then(() => section.refresh());
  else section.refresh();
  if (dashboard) dashboard.events.on("refresh", () => section.refresh());
  return section;
}
