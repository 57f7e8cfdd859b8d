// Run selector: regex filter (case-insensitive, like TensorBoard's), select all / none, one checkbox per run with
// its color. Emits onChange() after any change; the owner reads visibleRuns().

import { el, clear } from "../dom.js";

export function compileFilter(text) {
  if (!text) return { regex: null, valid: true };
  try {
    return { regex: new RegExp(text, "i"), valid: true };
  } catch (e) {
    return { regex: null, valid: false };
  }
}

export class RunSelector {
  /**
   * @param {{deselected: Set<string>, filter: string, onChange: () => void}} options
   */
  constructor({ deselected, filter, onChange }) {
    this.runs = [];
    this.colors = new Map();
    this.deselected = deselected; // runs the user unchecked (new runs start checked)
    this.filterText = filter || "";
    this.onChange = onChange;
    this.checkboxes = new Map();

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
    this.filterError = el("div", { class: "ms-filter-error", text: "Invalid regular expression", hidden: true });
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
    this.list = el("ul", { class: "ms-run-list", "data-testid": "run-list" });
    this.element = el(
      "div",
      { class: "ms-panel ms-runs", "data-testid": "run-selector" },
      el("div", { class: "ms-panel-title" }, el("span", { text: "Runs" }), this.countLabel),
      this.filterInput,
      this.filterError,
      el("div", { class: "ms-run-actions" }, allButton, el("span", { class: "ms-muted", text: "·" }), noneButton),
      this.list,
    );
    this.applyFilterState();
  }

  setRuns(runs, colors) {
    this.runs = [...runs];
    this.colors = colors;
    clear(this.list);
    this.checkboxes.clear();
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
            this.onChange();
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
          el("span", { class: "ms-run-name", "data-testid": "run-name", text: run, title: run }),
        ),
      );
      this.list.append(item);
    }
    if (!this.runs.length) this.list.append(el("li", { class: "ms-muted ms-run-empty", text: "No runs" }));
    this.applyFilterState();
  }

  setFilter(text) {
    this.filterText = text;
    this.applyFilterState();
    this.onChange();
  }

  applyFilterState() {
    const { regex, valid } = compileFilter(this.filterText);
    this.filterInput.classList.toggle("ms-invalid", !valid);
    this.filterError.hidden = valid;
    let shown = 0;
    for (const item of this.list.querySelectorAll("li[data-run]")) {
      const match = !regex || regex.test(item.dataset.run);
      item.hidden = !match;
      if (match) shown += 1;
    }
    this.countLabel.textContent = this.runs.length
      ? shown === this.runs.length
        ? String(this.runs.length)
        : `${shown} / ${this.runs.length}`
      : "";
  }

  matchesFilter(run) {
    const { regex } = compileFilter(this.filterText);
    return !regex || regex.test(run);
  }

  /** Runs checked and matching the filter, in list order. */
  visibleRuns() {
    return this.runs.filter((r) => !this.deselected.has(r) && this.matchesFilter(r));
  }

  setAll(checked) {
    for (const run of this.runs) {
      if (!this.matchesFilter(run)) continue;
      if (checked) this.deselected.delete(run);
      else this.deselected.add(run);
      const box = this.checkboxes.get(run);
      if (box) box.checked = checked;
    }
    this.onChange();
  }
}
