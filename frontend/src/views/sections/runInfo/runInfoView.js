// The "Run info" section: per run, the hyperparameters (TrainMonitor's hparams, MindSpore lineage, HParams
// summaries, mindformers' and Hugging Face's configurations), what MindSpore's lineage says (network, loss, optimizer, dataset, user-defined data) and the basics of
// our run information (MindSpore version, mode, collect_freq, rank). Shown only when a run has some; refreshed with
// the dashboard.

import { el, clear } from "../../../base/dom.js";
import { fetchRunInfos } from "../../../api/runData.js";
import { hparamRows, lineageSummary, msFileRows, runInfoBasics } from "../../runDataModel.js";
import { MAX_CHART_RUNS } from "../../runSelector.js";
import { injectRunDataStyles, sectionShell } from "../../sectionShell.js";

const SETTINGS_KEY = "tb-mindspore.runinfo.v1";
const SOURCE_LABELS = {
  run_info: "tb-mindspore run info",
  hparams: "HParams summary",
  lineage_file: "MindSpore lineage file",
  converted_lineage: "MindSpore lineage (converted)",
  mindformers_config: "mindformers config",
  hf_training_args: "Hugging Face TrainingArguments",
};

function factTable(rows, testid) {
  return el(
    "table",
    { class: "ms-rd-facts", "data-testid": testid },
    el(
      "tbody",
      {},
      rows.map(([label, text]) => el("tr", { "data-key": label }, el("th", { text: label }), el("td", { text }))),
    ),
  );
}

function filesTable(rows) {
  return el(
    "table",
    { class: "ms-rd-hparams", "data-testid": "runinfo-files" },
    el("thead", {}, el("tr", {}, el("th", { text: "file (creation order)" }), el("th", { text: "created" }), el("th", { text: "steps" }), el("th", { text: "superseded" }))),
    el(
      "tbody",
      {},
      rows.map((r) =>
        el(
          "tr",
          { "data-testid": "runinfo-file", "data-file": r.file },
          el("td", { class: "ms-rd-name", text: r.name, title: r.file }),
          el("td", { class: "ms-muted", text: r.created }),
          el("td", { text: r.steps }),
          el("td", { "data-testid": "runinfo-file-superseded", text: r.superseded || "—" }),
        ),
      ),
    ),
  );
}

function runCard(run, info, unlisted) {
  const rows = hparamRows(info);
  const sources = el(
    "div",
    { class: "ms-rd-sources" },
    info.sources.map((s) => el("span", { class: "ms-rd-badge", "data-source": s, text: SOURCE_LABELS[s] || s })),
  );
  const parts = [
    el("div", { class: "ms-card-header" }, el("div", { class: "ms-card-titles" }, el("div", { class: "ms-card-title", "data-testid": "runinfo-run-name", text: run, title: run }))),
    sources,
  ];
  if (unlisted) {
    parts.push(el("div", { class: "ms-muted", "data-testid": "runinfo-unlisted", text: "No series to draw (an evaluation-only or lineage-only run), so it is not in the run list; shown here always." }));
  }
  if (rows.length) {
    parts.push(el("div", { class: "ms-rd-subhead", text: "Hyperparameters" }));
    parts.push(
      el(
        "table",
        { class: "ms-rd-hparams", "data-testid": "runinfo-hparams" },
        el("thead", {}, el("tr", {}, el("th", { text: "name" }), el("th", { text: "value" }), el("th", { text: "from" }))),
        el(
          "tbody",
          {},
          rows.map((r) =>
            el(
              "tr",
              { "data-testid": "runinfo-hparam", "data-name": r.name, "data-value": JSON.stringify(r.value), "data-source": r.source },
              el("td", { class: "ms-rd-name", text: r.name }),
              el("td", { class: "ms-rd-value", text: r.text }),
              el("td", { class: "ms-muted", "data-testid": "runinfo-hparam-from", text: r.from, title: r.given.length ? `recorded as ${r.given.join(", ")}` : "" }),
            ),
          ),
        ),
      ),
    );
  }
  const lineage = lineageSummary(info.lineage);
  if (lineage) {
    parts.push(el("div", { class: "ms-rd-subhead", text: "MindSpore lineage" }));
    const facts = lineage.facts.slice();
    if (lineage.dataset) facts.push(["Dataset pipeline", lineage.dataset]);
    if (facts.length) parts.push(factTable(facts, "runinfo-lineage"));
    if (lineage.metrics.length) {
      parts.push(el("div", { class: "ms-rd-minor", text: "Evaluation metrics" }));
      parts.push(factTable(lineage.metrics, "runinfo-metrics"));
    }
    if (lineage.user.length) {
      parts.push(el("div", { class: "ms-rd-minor", text: "User-defined lineage (custom_lineage_data)" }));
      parts.push(factTable(lineage.user, "runinfo-user"));
    }
  }
  const files = msFileRows(info.msFiles);
  if (files.length) {
    parts.push(el("div", { class: "ms-rd-subhead", text: "MindSpore files (a later file supersedes earlier ones from its first step)" }));
    parts.push(filesTable(files));
  }
  const basics = runInfoBasics(info.runInfo);
  if (basics.length) {
    parts.push(el("div", { class: "ms-rd-subhead", text: "Run" }));
    parts.push(factTable(basics, "runinfo-basics"));
  }
  if (info.runInfo || info.lineage) {
    const raw = { run_info: info.runInfo, lineage: info.lineage };
    parts.push(
      el(
        "details",
        { class: "ms-rd-raw" },
        el("summary", { text: "Everything recorded (JSON)" }),
        el("pre", { "data-testid": "runinfo-json", text: JSON.stringify(raw, null, 2) }),
      ),
    );
  }
  return el("div", { class: "ms-card ms-rd-card", "data-testid": "runinfo-card", "data-run": run, "data-unlisted": String(Boolean(unlisted)), "data-sources": info.sources.join(" ") }, parts);
}

export class RunInfoSection {
  /** ``visibleRuns()``: the runs checked in the dashboard's run selector (all runs when null); ``listedRuns()``:
   * the runs the selector lists (runs it does not list, e.g. evaluation-only runs with no series, are always shown,
   * since there is no checkbox for them). */
  constructor(visibleRuns = null, listedRuns = null) {
    this.visibleRuns = visibleRuns;
    this.listedRuns = listedRuns;
    this.infos = {};
    injectRunDataStyles();
    const shell = sectionShell({
      testid: "runinfo-section",
      title: "Run info",
      subtitle: "Hyperparameters, MindSpore lineage and how each run was recorded",
      settingsKey: SETTINGS_KEY,
      extraClass: "ms-rd-section",
    });
    Object.assign(this, shell);
    this.grid = el("div", { class: "ms-rd-grid", "data-testid": "runinfo-grid" });
    this.body.append(this.grid);
    this.signature = "";
  }

  async refresh() {
    let infos;
    try {
      infos = await fetchRunInfos();
    } catch (e) {
      // A failed request: keep what is shown.
      this.element.dataset.error = e && e.message ? e.message : String(e);
      return;
    }
    this.infos = infos;
    this.render();
  }

  /** Cards for the runs that have run info and are checked in the run selector. */
  render() {
    const infos = this.infos;
    const visible = this.visibleRuns ? new Set(this.visibleRuns()) : null;
    const listed = this.listedRuns ? new Set(this.listedRuns()) : null;
    const all = Object.keys(infos).sort();
    const unlisted = (r) => Boolean(listed) && !listed.has(r);
    const runs = visible ? all.filter((r) => visible.has(r) || unlisted(r)) : all;
    this.count.textContent = runs.length === all.length ? String(runs.length) : `${runs.length} of ${all.length}`;
    this.element.hidden = all.length === 0;
    this.element.dataset.state = all.length ? "ready" : "empty";
    this.element.dataset.runs = String(runs.length);
    const signature = JSON.stringify(runs.map((r) => [r, unlisted(r), infos[r]]));
    if (signature === this.signature) return;
    this.signature = signature;
    // Thousands of runs: cards for the first ones only (filter the run list to see others).
    const shown = runs.slice(0, MAX_CHART_RUNS);
    clear(this.grid).append(...shown.map((r) => runCard(r, infos[r], unlisted(r))));
    if (runs.length > shown.length) {
      const more = runs.length - shown.length;
      this.grid.append(el("div", { class: "ms-muted", "data-testid": "runinfo-more", text: `${more} more runs: filter the run list to see their run info.` }));
    }
    if (all.some((r) => !unlisted(r) && !runs.includes(r)) && !runs.some((r) => !unlisted(r))) {
      this.grid.append(el("div", { class: "ms-muted", "data-testid": "runinfo-none-checked", text: "The runs with run info are unchecked in the run list." }));
    }
  }
}

/** Adds the section at the end of the dashboard's main column; refreshed when the dashboard refreshes. */
export function mountRunInfo(dashboard) {
  const selector = dashboard && dashboard.runSelector;
  const section = new RunInfoSection(selector ? () => selector.visibleRuns() : null, selector ? () => selector.runs || [] : null);
  const host = (dashboard && dashboard.main) || document.body;
  host.appendChild(section.element);
  // first read once the charts on screen have their series (the dashboard's first listing)
  if (dashboard && dashboard.firstChartsShown) dashboard.firstChartsShown.then(() => section.refresh());
  else section.refresh();
  if (dashboard) {
    dashboard.events.on("visible-runs", () => section.render());
    dashboard.events.on("refresh", () => section.refresh());
  }
  return section;
}
