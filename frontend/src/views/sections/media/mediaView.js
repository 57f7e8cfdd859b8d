// The "Images and tensors" section: MindSpore's ImageSummary / SummaryRecord images (the bytes as written) and
// TensorSummary tensors (statistics and values), per run and tag, each with a step slider. A run selector picks the
// run. Shown only when some run has images or tensors; refreshed with the dashboard.

import { el, clear } from "../../../base/dom.js";
import { fetchImages, fetchMedia, fetchTensors, imageUrl } from "../../../api/runData.js";
import { formatValue, tensorLayout, tensorStatsText } from "../../runDataModel.js";
import { injectRunDataStyles, sectionShell } from "../../sectionShell.js";

const SETTINGS_KEY = "tb-mindspore.media.v1";
const RUN_KEY = "tb-mindspore.media.run.v1";
const MIN_IMAGE_PX = 160; // small images are scaled up (pixelated) to at least this width
const MAX_IMAGE_PX = 520;

function loadRun() {
  try {
    return localStorage.getItem(RUN_KEY) || "";
  } catch (e) {
    return "";
  }
}

function saveRun(run) {
  try {
    localStorage.setItem(RUN_KEY, run);
  } catch (e) {
    /* storage may be unavailable */
  }
}

/** A slider over the steps of a tag; calls onChange(index). Follows the last step until moved elsewhere. */
class StepSlider {
  constructor(testid, onChange) {
    this.count = 0;
    this.index = -1;
    this.follow = true;
    this.input = el("input", {
      type: "range",
      class: "ms-rd-slider",
      min: "0",
      max: "0",
      step: "1",
      value: "0",
      "data-testid": testid,
      "aria-label": "Step",
      on: {
        input: () => {
          this.index = Number(this.input.value);
          this.follow = this.index === this.count - 1;
          onChange(this.index);
        },
      },
    });
    this.label = el("span", { class: "ms-muted ms-rd-step", "data-testid": `${testid}-label` });
    this.element = el("div", { class: "ms-rd-slider-row" }, this.input, this.label);
  }

  /** Sets the number of steps; returns the index to show. */
  setCount(n) {
    this.count = n;
    if (this.follow || this.index < 0 || this.index >= n) this.index = n - 1;
    this.input.max = String(Math.max(0, n - 1));
    this.input.value = String(Math.max(0, this.index));
    this.input.disabled = n < 2;
    return this.index;
  }

  setLabel(step) {
    this.label.textContent = `step ${step}` + (this.count > 1 ? ` (${this.index + 1} of ${this.count})` : "");
  }
}

class ImageCard {
  constructor(run, entry) {
    this.run = run;
    this.tag = entry.tag;
    this.signature = "";
    this.steps = [];
    this.slider = new StepSlider("media-image-slider", (i) => this.show(i));
    this.img = el("img", { class: "ms-rd-image", "data-testid": "media-image", alt: `${entry.display_name}`, "data-state": "empty" });
    this.img.addEventListener("load", () => {
      this.img.dataset.state = "loaded";
      this.img.dataset.naturalWidth = String(this.img.naturalWidth);
      this.img.dataset.naturalHeight = String(this.img.naturalHeight);
      const scale = Math.max(1, Math.min(Math.floor(MIN_IMAGE_PX / Math.max(1, this.img.naturalWidth)) || 1, 64));
      this.img.style.width = `${Math.min(MAX_IMAGE_PX, this.img.naturalWidth * scale)}px`;
    });
    this.img.addEventListener("error", () => {
      this.img.dataset.state = "error";
      this.status.textContent = "The image could not be loaded.";
    });
    this.info = el("div", { class: "ms-card-subtitle", "data-testid": "media-image-info" });
    this.status = el("div", { class: "ms-chart-status" });
    this.note = el("div", { class: "ms-muted ms-rd-note", "data-testid": "media-image-note" });
    this.element = el(
      "div",
      { class: "ms-card ms-rd-media-card", "data-testid": "media-image-card", "data-run": run, "data-tag": entry.tag, "data-state": "loading" },
      el(
        "div",
        { class: "ms-card-header" },
        el("div", { class: "ms-card-titles" }, el("div", { class: "ms-card-title", text: entry.display_name, title: entry.tag }), this.info),
      ),
      this.slider.element,
      el("div", { class: "ms-rd-image-box" }, this.img),
      this.note,
      this.status,
    );
  }

  async update(entry) {
    const signature = `${entry.count}:${entry.max_step}`;
    if (signature === this.signature) return;
    this.signature = signature;
    try {
      const body = await fetchImages(this.run, this.tag);
      this.steps = body.steps;
      this.element.dataset.steps = String(this.steps.length);
      this.element.dataset.totalSteps = String(body.totalSteps);
      this.note.textContent =
        body.totalSteps > this.steps.length ? `${this.steps.length} of ${body.totalSteps} steps, evenly spaced (the report's size budget)` : "";
      this.show(this.slider.setCount(this.steps.length));
    } catch (e) {
      this.signature = "";
      this.element.dataset.state = "error";
      this.status.textContent = `Could not load the image list: ${e && e.message ? e.message : e}`;
    }
  }

  show(index) {
    const s = this.steps[index];
    if (!s) return;
    this.slider.setLabel(s.step);
    this.info.textContent = `${s.width} × ${s.height} px · ${s.mime || "unknown type"} · ${s.bytes} bytes`;
    const d = this.element.dataset;
    d.step = String(s.step);
    d.width = String(s.width);
    d.height = String(s.height);
    d.state = "ready";
    this.status.textContent = "";
    const url = imageUrl(this.run, this.tag, s.step);
    this.img.dataset.step = String(s.step);
    if (this.img.getAttribute("src") === url && this.img.complete && this.img.naturalWidth) return; // no new load event
    this.img.dataset.state = "loading";
    this.img.src = url;
  }
}

class TensorCard {
  constructor(run, entry) {
    this.run = run;
    this.tag = entry.tag;
    this.signature = "";
    this.data = null;
    this.slider = new StepSlider("media-tensor-slider", (i) => this.show(i));
    this.stats = el("div", { class: "ms-rd-stats", "data-testid": "media-tensor-stats" });
    this.note = el("div", { class: "ms-muted ms-rd-note", "data-testid": "media-tensor-note" });
    this.tableBox = el("div", { class: "ms-rd-table-box" });
    this.status = el("div", { class: "ms-chart-status" });
    this.element = el(
      "div",
      { class: "ms-card ms-rd-media-card", "data-testid": "media-tensor-card", "data-run": run, "data-tag": entry.tag, "data-state": "loading" },
      el(
        "div",
        { class: "ms-card-header" },
        el(
          "div",
          { class: "ms-card-titles" },
          el("div", { class: "ms-card-title", text: entry.display_name, title: entry.tag }),
          el("div", { class: "ms-card-subtitle", text: entry.source === "mindspore" ? "MindSpore summary file" : "event file" }),
        ),
      ),
      this.slider.element,
      this.stats,
      this.tableBox,
      this.note,
      this.status,
    );
  }

  async update(entry) {
    const signature = `${entry.count}:${entry.max_step}`;
    if (signature === this.signature) return;
    this.signature = signature;
    try {
      this.data = await fetchTensors(this.run, this.tag);
      this.element.dataset.steps = String(this.data.steps.length);
      this.show(this.slider.setCount(this.data.steps.length));
    } catch (e) {
      this.signature = "";
      this.element.dataset.state = "error";
      this.status.textContent = `Could not load the tensor: ${e && e.message ? e.message : e}`;
    }
  }

  show(index) {
    const s = this.data && this.data.steps[index];
    if (!s) return;
    this.slider.setLabel(s.step);
    this.stats.textContent = tensorStatsText(s);
    const layout = tensorLayout(s.shape, s.values, s.truncated);
    const cell = (v) => el("td", { class: "ms-rd-num", "data-testid": "tensor-value", "data-value": String(v), text: formatValue(v) });
    let table;
    if (layout.kind === "grid") {
      table = el("table", { class: "ms-rd-tensor", "data-testid": "media-tensor-table", "data-layout": "grid" }, el("tbody", {}, layout.rows.map((row) => el("tr", {}, row.map(cell)))));
    } else {
      table = el(
        "table",
        { class: "ms-rd-tensor", "data-testid": "media-tensor-table", "data-layout": "list" },
        el("tbody", {}, layout.rows.map(([index, v]) => el("tr", {}, el("th", { class: "ms-muted", text: index }), cell(v)))),
      );
    }
    clear(this.tableBox).append(table);
    const shown = s.values.length;
    this.note.textContent = s.truncated
      ? `First ${shown} of ${s.size} values (row-major); the statistics cover all of them.`
      : this.data.downsampled
        ? `${this.data.steps.length} of ${this.data.total_steps} steps shown.`
        : "";
    const d = this.element.dataset;
    d.step = String(s.step);
    d.shape = s.shape.join("x");
    d.values = String(shown);
    d.truncated = String(s.truncated);
    d.state = "drawn";
  }
}

export class MediaSection {
  constructor() {
    injectRunDataStyles();
    const shell = sectionShell({
      testid: "media-section",
      title: "Images and tensors",
      subtitle: "ImageSummary images and TensorSummary tensors, step by step",
      settingsKey: SETTINGS_KEY,
      extraClass: "ms-rd-section",
    });
    Object.assign(this, shell);
    this.runSelect = el("select", { class: "ms-select", "data-testid": "media-run", "aria-label": "Run", on: { change: () => this.onRun() } });
    this.toolbar = el("div", { class: "ms-rd-toolbar" }, el("label", { class: "ms-ls-field" }, el("span", { text: "Run" }), this.runSelect));
    this.grid = el("div", { class: "ms-rd-media-grid", "data-testid": "media-grid" });
    this.body.append(this.toolbar, this.grid);
    this.listing = {};
    this.run = loadRun();
    this.cards = new Map(); // "image\0tag" / "tensor\0tag" -> card, for the shown run
    this.shownRun = null;
  }

  async refresh() {
    let listing;
    try {
      listing = await fetchMedia();
    } catch (e) {
      this.element.dataset.error = e && e.message ? e.message : String(e);
      return;
    }
    this.listing = listing;
    const runs = Object.keys(listing).sort();
    const total = runs.reduce((n, r) => n + listing[r].images.length + listing[r].tensors.length, 0);
    this.count.textContent = String(total);
    this.element.hidden = runs.length === 0;
    this.element.dataset.state = runs.length ? "ready" : "empty";
    this.element.dataset.runs = String(runs.length);
    if (!runs.length) return;
    const run = runs.includes(this.run) ? this.run : runs[0];
    clear(this.runSelect);
    for (const r of runs) this.runSelect.append(el("option", { value: r, text: r }));
    this.runSelect.value = run;
    this.show(run);
  }

  onRun() {
    this.run = this.runSelect.value;
    saveRun(this.run);
    this.show(this.run);
  }

  show(run) {
    this.run = run;
    this.element.dataset.run = run;
    if (this.shownRun !== run) {
      this.cards.clear();
      clear(this.grid);
      this.shownRun = run;
    }
    const entry = this.listing[run] || { images: [], tensors: [] };
    const wanted = [
      ...entry.images.map((e) => ["image", e, ImageCard]),
      ...entry.tensors.map((e) => ["tensor", e, TensorCard]),
    ];
    const keys = new Set(wanted.map(([kind, e]) => `${kind}\0${e.tag}`));
    for (const [key, card] of this.cards) {
      if (!keys.has(key)) {
        card.element.remove();
        this.cards.delete(key);
      }
    }
    // Images first, then tensors, each by tag (appending an element that is already there only moves it).
    for (const [kind, e, Card] of wanted) {
      const key = `${kind}\0${e.tag}`;
      let card = this.cards.get(key);
      if (!card) {
        card = new Card(run, e);
        this.cards.set(key, card);
      }
      this.grid.append(card.element);
      card.update(e);
    }
  }
}

/** Adds the section at the end of the dashboard's main column; refreshed when the dashboard refreshes. */
export function mountMedia(dashboard) {
  const section = new MediaSection();
  const host = (dashboard && dashboard.main) || document.body;
  host.appendChild(section.element);
  // first read once the charts on screen have their series (the dashboard's first listing)
  if (dashboard && dashboard.firstChartsShown) dashboard.firstChartsShown.then(() => section.refresh());
  else section.refresh();
  if (dashboard) dashboard.events.on("refresh", () => section.refresh());
  return section;
}
