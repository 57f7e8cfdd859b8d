// Run selector: a filter (a case-insensitive regex like TensorBoard's, or plain text with the ".*" toggle off),
// select all / none, one checkbox per run with its color, and grouping: runs grouped by a regex capture of their
// name or by a hyperparameter, each group drawn on the line charts as the mean of its runs with a min / max band.
// Made for thousands of runs: the list is built once per run list, the filter is compiled once per change, and the
// charts draw at most MAX_CHART_RUNS runs (a note says so; filter or group to see the rest).
// Emits onChange() after any change; the owner reads visibleRuns() and chartRuns().

import { RUN_SELECTOR_CSS as selectorCss } from "./runSelectorStyles.js";
import { PALETTE } from "../base/colors.js";
import { el, clear } from "../base/dom.js";
import { groupRuns } from "../base/grouping.js";
import { compileSafe } from "../base/safeRegex.js";
import { fetchRunInfos } from "../api/runData.js";
import { nameParts, setRunNames } from "../base/runNames.js";

// A line chart with more runs than this is unreadable (and slow to fetch): the charts draw the first ones.
export const MAX_CHART_RUNS = 100;

function escapeRegex(text) {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

/** {regex, valid, error}: the filter as a case-insensitive regex (plain text is matched literally when regex is
 * false), matched in time linear in a run name's length whatever the pattern (safeRegex.js: a pattern such as
 * ^(a+)+$ froze the page with JavaScript's backtracking RegExp); error: why a pattern cannot be used. */
export function compileFilter(text, regex = true) {
  if (!text) return { regex: null, valid: true, error: "" };
  const { regex: compiled, error } = compileSafe(regex ? text : escapeRegex(text), { ignoreCase: true });
  return compiled ? { regex: compiled, valid: true, error: "" } : { regex: null, valid: false, error: `Not used: ${error}` };
}

function injectStyles() {
  if (typeof document === "undefined" || document.getElementById("ms-run-selector-styles")) return;
  const style = document.createElement("style");
  style.id = "ms-run-selector-styles";
  style.textContent = selectorCss;
  document.head.appendChild(style);
}

export class RunSelector {
  /**
   * @param {{deselected: Set<string>, filter: string, onChange: () => void, store?: object}} options
   *   store: the dashboard's SeriesStore, told which runs each group holds
   */
  constructor({ deselected, filter, onChange, store = null }) {
    injectStyles();
    this.runs = [];
    this.colors = new Map();
    this.deselected = deselected; // runs the user unchecked (new runs start checked)
    this.filterText = filter || "";
    this.regexMode = true;
    this.onChange = onChange;
    this.store = store;
    this.checkboxes = new Map();
    this.items = new Map(); // run -> li
    this.grouping = { by: "none", pattern: "", hparam: "" };
    this.hparams = null; // {run: {name: value}} once read (for grouping by a hyperparameter)
    this.groups = null; // [{id, label, runs, color}] over every run, or null
    this.visibleCache = null;

    this.filterInput = el("input", {
      type: "search",
      class: "ms-input",
      placeholder: "Filter runs (regex)",
      "aria-label": "Filter runs by regular expression",
      "data-testid": "run-filter",
      value: this.filterText,
      spellcheck: "false",
      on: { input: () => this.setFilter(this.filterInput.value) },
    });
    this.regexToggle = el("button", {
      type: "button",
      class: "ms-regex-toggle",
      "data-testid": "run-filter-regex",
      "aria-pressed": "true",
      title: "Regular expression (off: match the text as typed)",
      text: ".*",
      on: { click: () => this.setRegexMode(!this.regexMode) },
    });
    this.filterError = el("div", { class: "ms-filter-error", "data-testid": "run-filter-error", text: "", hidden: true });
    this.countLabel = el("span", { class: "ms-muted", "data-testid": "run-count" });
    const allButton = el("button", {
      type: "button",
      class: "ms-link-button",
      "data-testid": "runs-all",
      text: "All",
      on: { click: () => this.setAll(true) },
    });
    const noneButton = el("button", {
      type: "button",
      class: "ms-link-button",
      "data-testid": "runs-none",
      text: "None",
      on: { click: () => this.setAll(false) },
    });
    this.buildGroupControls();
    this.capNote = el("div", { class: "ms-muted ms-run-cap", "data-testid": "run-cap-note", hidden: true });
    this.prefixNote = el("div", { class: "ms-muted ms-run-prefix", "data-testid": "run-prefix", hidden: true });
    this.list = el("ul", { class: "ms-run-list", "data-testid": "run-list" });
    this.element = el(
      "div",
      { class: "ms-panel ms-runs", "data-testid": "run-selector" },
      el("div", { class: "ms-panel-title" }, el("span", { text: "Runs" }), this.countLabel),
      el("div", { class: "ms-filter-row" }, this.filterInput, this.regexToggle),
      this.filterError,
      this.groupRow,
      el("div", { class: "ms-run-actions" }, allButton, el("span", { class: "ms-muted", text: "·" }), noneButton),
      this.capNote,
      this.prefixNote,
      this.list,
    );
    this.applyFilterState();
  }

  buildGroupControls() {
    this.groupBy = el(
      "select",
      {
        class: "ms-select",
        "data-testid": "run-group-by",
        "aria-label": "Group runs",
        on: { change: () => this.setGrouping({ by: this.groupBy.value }) },
      },
      el("option", { value: "none", text: "No grouping" }),
      el("option", { value: "regex", text: "Group by name (regex)" }),
      el("option", { value: "hparam", text: "Group by hyperparameter" }),
    );
    this.groupPattern = el("input", {
      type: "text",
      class: "ms-input",
      placeholder: "e.g. lr([0-9.e-]+): group = 1st capture",
      "aria-label": "Regex whose first capture group names a run's group",
      "data-testid": "run-group-regex",
      spellcheck: "false",
      hidden: true,
      on: { input: () => this.setGrouping({ pattern: this.groupPattern.value }) },
    });
    this.groupHparam = el("select", {
      class: "ms-select",
      "data-testid": "run-group-hparam",
      "aria-label": "Hyperparameter to group by",
      hidden: true,
      on: { change: () => this.setGrouping({ hparam: this.groupHparam.value }) },
    });
    this.groupNote = el("div", { class: "ms-muted ms-group-note", "data-testid": "run-group-note", hidden: true });
    this.groupRow = el("div", { class: "ms-group-row" }, this.groupBy, this.groupPattern, this.groupHparam, this.groupNote);
  }

  setRuns(runs, colors) {
    this.runs = [...runs];
    this.colors = colors;
    this.checkboxes.clear();
    this.items.clear();
    // Names without the prefix every run shares (said once above the list); the whole name on hover.
    const short = setRunNames(this.runs);
    this.prefixNote.hidden = !short.prefix;
    this.prefixNote.textContent = short.prefix ? `Every run starts with ${short.prefix}` : "";
    this.prefixNote.title = short.prefix ? `Left out of the names below; hover a run for its whole name` : "";
    this.prefixNote.dataset.prefix = short.prefix;
    for (const run of this.runs) {
      const box = el("input", {
        type: "checkbox",
        "data-testid": "run-checkbox",
        "data-run": run,
        checked: !this.deselected.has(run),
        on: {
          change: () => {
            if (box.checked) this.deselected.delete(run);
            else this.deselected.add(run);
            this.changed();
          },
        },
      });
      this.checkboxes.set(run, box);
      const item = el(
        "li",
        { class: "ms-run-item", "data-testid": "run-item", "data-run": run },
        el(
          "label",
          { title: run },
          box,
          el("span", { class: "ms-swatch", style: { background: colors.get(run) || "#999" } }),
          // Text nodes split after separators, with a line break opportunity between them (never HTML).
          el("span", { class: "ms-run-name", "data-testid": "run-name", title: run }, nameParts(short.names.get(run)).flatMap((p, i) => (i ? [el("wbr"), p] : [p]))),
        ),
      );
      this.items.set(run, item);
    }
    if (this.grouping.by === "hparam") this.hparams = null; // new runs: read their hyperparameters again
    this.regroup();
  }

  /** Lays the list out: the runs in order, or under one header per group. */
  renderList() {
    const fragment = document.createDocumentFragment();
    if (this.groups) {
      for (const g of this.groups) {
        fragment.append(
          el(
            "li",
            { class: "ms-run-group", "data-testid": "run-group", "data-group": g.label, "data-count": String(g.runs.length) },
            el("span", { class: "ms-swatch ms-group-swatch", style: { background: g.color } }),
            el("span", { class: "ms-run-name", text: g.label, title: g.label }),
            el("span", { class: "ms-muted", text: String(g.runs.length) }),
          ),
        );
        for (const run of g.runs) fragment.append(this.items.get(run));
      }
    } else {
      for (const run of this.runs) fragment.append(this.items.get(run));
    }
    clear(this.list).append(fragment);
    if (!this.runs.length) this.list.append(el("li", { class: "ms-muted ms-run-empty", text: "No runs" }));
    this.applyFilterState();
  }

  setFilter(text) {
    this.filterText = text;
    this.applyFilterState();
    this.changed();
  }

  setRegexMode(on) {
    this.regexMode = on;
    this.regexToggle.setAttribute("aria-pressed", String(on));
    this.filterInput.placeholder = on ? "Filter runs (regex)" : "Search runs";
    this.applyFilterState();
    this.changed();
  }

  applyFilterState() {
    const { regex, valid, error } = compileFilter(this.filterText, this.regexMode);
    this.filter = regex;
    this.visibleCache = null;
    this.filterInput.classList.toggle("ms-invalid", !valid);
    this.filterError.textContent = error;
    this.filterError.hidden = valid;
    let shown = 0;
    for (const [run, item] of this.items) {
      const match = !regex || regex.test(run);
      item.hidden = !match;
      if (match) shown += 1;
    }
    for (const header of this.list.querySelectorAll("li[data-group]")) {
      let next = header.nextElementSibling;
      let any = false;
      while (next && next.dataset.run !== undefined) {
        any = any || !next.hidden;
        next = next.nextElementSibling;
      }
      header.hidden = !any;
    }
    this.countLabel.textContent = this.runs.length
      ? shown === this.runs.length
        ? String(this.runs.length)
        : `${shown} / ${this.runs.length}`
      : "";
    this.updateCapNote();
  }

  matchesFilter(run) {
    return !this.filter || this.filter.test(run);
  }

  /** Runs checked and matching the filter, in list order. */
  visibleRuns() {
    if (!this.visibleCache) this.visibleCache = this.runs.filter((r) => !this.deselected.has(r) && this.matchesFilter(r));
    return this.visibleCache;
  }

  setAll(checked) {
    for (const run of this.runs) {
      if (!this.matchesFilter(run)) continue;
      if (checked) this.deselected.delete(run);
      else this.deselected.add(run);
      const box = this.checkboxes.get(run);
      if (box) box.checked = checked;
    }
    this.changed();
  }

  changed() {
    this.visibleCache = null;
    this.updateCapNote();
    this.onChange();
  }

  // -- grouping -----------------------------------------------------------------------------------------------------
  setGrouping(change) {
    this.grouping = { ...this.grouping, ...change };
    const by = this.grouping.by;
    this.groupBy.value = by;
    this.groupPattern.hidden = by !== "regex";
    this.groupHparam.hidden = by !== "hparam";
    if (by === "hparam" && !this.hparams) {
      this.loadHparams();
      return;
    }
    this.regroup();
    this.changed();
  }

  async loadHparams() {
    this.showGroupNote("Reading hyperparameters…");
    try {
      const infos = await fetchRunInfos();
      this.hparams = {};
      for (const [run, info] of Object.entries(infos)) this.hparams[run] = info.hparams || {};
    } catch (e) {
      this.hparams = {};
      this.showGroupNote(`Could not read hyperparameters: ${(e && e.message) || e}`);
      return;
    }
    this.fillHparamChoices();
    this.regroup();
    this.changed();
  }

  fillHparamChoices() {
    const counts = new Map();
    for (const hp of Object.values(this.hparams || {})) for (const name of Object.keys(hp)) counts.set(name, (counts.get(name) || 0) + 1);
    const names = [...counts.keys()].sort();
    clear(this.groupHparam);
    for (const name of names) this.groupHparam.append(el("option", { value: name, text: `${name} (${counts.get(name)} runs)` }));
    if (!names.includes(this.grouping.hparam)) this.grouping.hparam = names[0] || "";
    this.groupHparam.value = this.grouping.hparam;
  }

  showGroupNote(text) {
    this.groupNote.textContent = text || "";
    this.groupNote.hidden = !text;
  }

  /** Recomputes the groups of every run (colors by group order) and lays the list out again. */
  regroup() {
    const { by, pattern, hparam } = this.grouping;
    let spec = null;
    let note = "";
    if (by === "regex" && pattern) {
      const { regex, valid, error } = compileFilter(pattern, true);
      if (valid) spec = { by, regex };
      else note = error;
    } else if (by === "hparam" && this.hparams) {
      if (hparam) spec = { by, name: hparam, hparams: this.hparams };
      else note = "No run has hyperparameters";
    }
    this.chartGroupsCache = null;
    this.groups = spec ? groupRuns(this.runs, spec).map((g, i) => ({ ...g, color: PALETTE[i % PALETTE.length] })) : null;
    this.showGroupNote(note);
    this.element.dataset.groups = this.groups ? String(this.groups.length) : "0";
    this.renderList();
  }

  /** The groups with some visible run, each named by its label and how many of its runs are shown (the name the
   * charts show); the store is told which runs each holds. Computed once per change of the visible runs. */
  chartGroups() {
    const visibleRuns = this.visibleRuns();
    if (this.chartGroupsCache && this.chartGroupsCache.visibleRuns === visibleRuns) return this.chartGroupsCache.groups;
    const visible = new Set(visibleRuns);
    const groups = [];
    for (const g of this.groups || []) {
      const runs = g.runs.filter((r) => visible.has(r));
      if (runs.length) groups.push({ id: `${g.label} (${runs.length} run${runs.length === 1 ? "" : "s"})`, label: g.label, color: g.color, runs });
    }
    if (this.store) this.store.setGroups(groups);
    this.chartGroupsCache = { visibleRuns, groups };
    return groups;
  }

  /**
   * What a chart draws for `runs` (the visible runs that have its series): with grouping on and `grouped` set (line
   * charts), one entry per group holding some of them, drawn as the group's mean and min / max; otherwise the runs,
   * at most MAX_CHART_RUNS. @returns {{run: string, color: string}[]}
   */
  chartRuns(runs, grouped, colors) {
    if (grouped && this.groups) {
      const has = new Set(runs);
      return this.chartGroups()
        .filter((g) => g.runs.some((r) => has.has(r)))
        .map((g) => ({ run: g.id, color: g.color }));
    }
    return runs.slice(0, MAX_CHART_RUNS).map((r) => ({ run: r, color: colors.color(r) }));
  }

  updateCapNote() {
    const n = this.visibleRuns().length;
    const capped = !this.groups && n > MAX_CHART_RUNS;
    this.capNote.hidden = !capped;
    this.capNote.textContent = capped
      ? `The charts draw the first ${MAX_CHART_RUNS} of the ${n} selected runs: filter or group them to see the rest.`
      : "";
    this.element.dataset.capped = String(capped);
  }
}
