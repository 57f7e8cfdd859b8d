// One chart card of the dashboard: title, the line chart of every visible run that has the tag, per-series
// CSV / JSON download, notes (downsampled, non-finite values). Data is fetched by the dashboard's store; the card
// only asks for it when it is first scrolled into view.

import { LineChart, SMOOTH_MIN_POINTS } from "../../../chart/lineChart.js";
import { markersFor, markersIfKnown } from "../../../api/markers.js";
import { samplesOfRun } from "../../../api/samples.js";
import { LOG_SPREAD, runSpread } from "../../../chart/series.js";
import { downloadName, saveText, seriesToCsv, seriesToJson } from "../../../chart/download.js";
import { fetchScalars, pointsForWidth } from "../../../api/client.js";
import { axisOf, isPointSeries, referenceOf } from "../../../base/contract.js";
import { el, clear } from "../../../base/dom.js";

export class ChartCard {
  /**
   * @param {{tag: string, displayName: string, tier: string, store: object, contract: object}} options
   */
  constructor({ tag, displayName, tier, store, contract }) {
    this.tag = tag;
    this.tier = tier;
    this.store = store;
    this.yAxis = axisOf(contract, tag);
    this.reference = referenceOf(contract, tag); // e.g. the stability line on a sharpness chart
    this.pointsOnly = isPointSeries(contract, tag); // one-off values (compile time): points, not a trend
    this.active = false;
    this.generation = 0;
    this.lastRuns = [];
    this.zoomWindow = null; // {min, max} steps of the zoomed window, fetched at full resolution
    this.windowGeneration = 0;
    this.shown = []; // the runs last drawn with their whole-series data
    this.linearChosen = false; // the user asked for a linear axis where runs far apart switched it to log

    this.chartHost = el("div", {
      class: "ms-chart",
      "data-testid": "chart",
      "data-tag": tag,
      "data-tier": tier,
      "data-run-count": "0",
      "data-state": "idle",
    });
    this.status = el("div", { class: "ms-chart-status", "data-testid": "chart-status" });
    this.notes = el("div", { class: "ms-chart-notes", "data-testid": "chart-notes" });
    this.menu = el("div", { class: "ms-menu", role: "menu", hidden: true, "data-testid": "download-menu" });
    this.menuButton = el("button", {
      type: "button",
      class: "ms-icon-button",
      title: "Download data",
      "aria-label": "Download data",
      "aria-haspopup": "menu",
      "data-testid": "download-button",
      text: "⤓",
      on: { click: (ev) => this.toggleMenu(ev) },
    });
    const resetButton = el("button", {
      type: "button",
      class: "ms-text-button",
      title: "Show the whole x range again (or double-click the chart)",
      "aria-label": "Reset zoom",
      "data-testid": "reset-zoom",
      text: "reset zoom",
      on: { click: () => this.chart && this.chart.resetZoom() },
    });
    this.titleEl = el("div", { class: "ms-card-title", "data-testid": "chart-title", text: displayName, title: tag });
    this.subtitleEl = el("div", { class: "ms-card-subtitle", "data-testid": "chart-subtitle", text: tag });
    this.element = el(
      "div",
      { class: "ms-card", "data-testid": "chart-card", "data-tag": tag },
      el(
        "div",
        { class: "ms-card-header" },
        el("div", { class: "ms-card-titles" }, this.titleEl, this.subtitleEl),
        el("div", { class: "ms-card-actions" }, resetButton, el("div", { class: "ms-menu-wrap" }, this.menuButton, this.menu)),
      ),
      this.chartHost,
      this.status,
      this.notes,
    );
    this.chart = null;
    this.onDocClick = (ev) => {
      if (!this.menu.hidden && !this.menu.parentNode.contains(ev.target)) this.menu.hidden = true;
    };
    document.addEventListener("click", this.onDocClick);
  }

  setDisplayName(name) {
    this.titleEl.textContent = name;
  }

  /** The runs' own tags drawn in this chart (ours, and another library's tag of the same quantity). */
  setSources(tags) {
    const shown = [this.tag, ...tags.filter((t) => t !== this.tag)];
    this.subtitleEl.textContent = tags.includes(this.tag) ? shown.join(" · ") : tags.join(" · ");
    this.element.dataset.sources = tags.join(",");
  }

  /**
   * Draws the chart for these runs. Fetches what is missing (or everything when refresh is set).
   * @param {{run: string, color: string}[]} runs
   * @param {object} opts  chart options (xAxis, logY, smoothing, showInterval)
   * @param {{refresh?: boolean}} how
   */
  async update(runs, opts, { refresh = false } = {}) {
    this.lastRuns = runs;
    this.lastOpts = opts;
    if (!this.active) return;
    const generation = ++this.generation;
    this.chartHost.dataset.runCount = String(runs.length);
    if (!runs.length) {
      this.showStatus("No selected run has this tag.");
      this.drawRuns([], opts);
      this.chartHost.dataset.state = "empty";
      return;
    }
    const pending = runs.some((r) => !this.store.has(r.run, this.tag));
    if (pending && !this.chart) {
      this.chartHost.dataset.state = "loading";
      this.showStatus("Loading…");
    }
    const results = await Promise.all(
      runs.map((r) =>
        this.store
          .get(r.run, this.tag, { refresh })
          .then((data) => this.withReference(r, data, refresh))
          .catch((error) => ({ ...r, error })),
      ),
    );
    if (generation !== this.generation) return; // a newer draw started meanwhile
    const ok = results.filter((r) => r.data);
    const failed = results.filter((r) => r.error);
    this.shown = ok;
    if (this.zoomWindow && opts.xAxis === "step" && this.chart) this.loadWindow();
    else {
      this.zoomWindow = null;
      this.drawRuns(ok, opts);
    }
    if (failed.length && !ok.length) {
      this.chartHost.dataset.state = "error";
      this.showStatus(`Could not load ${this.tag}: ${failed[0].error.message}`, true);
    } else {
      this.chartHost.dataset.state = "drawn";
      this.showStatus(failed.length ? `Could not load ${failed.map((f) => f.run).join(", ")}: ${failed[0].error.message}` : "", failed.length > 0);
    }
  }

  /** The run's data plus its reference series when the contract names one and the run has it. */
  async withReference(r, data, refresh) {
    // Steps other writers marked: drawn with the series when known, else added once they come (never waited for).
    // A run group is no run of the server: it has neither markers nor a samples axis of its own.
    const group = this.store.isGroup(r.run);
    const markers = group ? [] : markersIfKnown(r.run, this.tag);
    if (markers === null) {
      markersFor(r.run, this.tag).then((m) => {
        if (m.length && this.active) this.update(this.lastRuns, this.lastOpts);
      });
    } else if (markers.length) data = { ...data, markers };
    if (this.lastOpts && this.lastOpts.xAxis === "samples" && !group) {
      const samplesOf = await samplesOfRun(r.run);
      data = { ...data, samplesOf };
    }
    if (!this.reference) return { ...r, data };
    const reference = await this.store.get(r.run, this.reference.tag, { refresh }).catch(() => null);
    return { ...r, data, reference, referenceLabel: this.reference.label };
  }

  drawRuns(runs, opts) {
    if (!this.chart) {
      this.chart = new LineChart(this.chartHost, { height: 220, yAxis: this.yAxis, onZoom: (range) => this.onZoom(range), points: this.pointsOnly });
      if (this.highlighted) this.chart.setHighlight(this.highlighted.steps, this.highlighted.run);
    }
    // Runs whose values lie more than LOG_SPREAD times apart: a log axis, unless the user chose linear here.
    const spread = opts.logY ? null : runSpread(runs.map((r) => r.data));
    this.spread = spread !== null && spread > LOG_SPREAD ? spread : null;
    const autoLog = this.spread !== null && !this.linearChosen;
    const drawn = this.chart.update(
      runs.map((r) => ({ run: r.run, color: r.color, data: r.data, reference: r.reference, referenceLabel: r.referenceLabel })),
      autoLog ? { ...opts, logY: true } : opts,
    );
    this.chartHost.dataset.scale = opts.logY ? "log" : autoLog ? "log-auto" : "linear";
    this.chartHost.dataset.spread = this.spread ? String(Math.round(this.spread)) : "";
    this.chartHost.dataset.references = String(drawn.references || 0);
    this.chartHost.dataset.runCount = String(drawn.runs);
    this.chartHost.dataset.points = String(drawn.points);
    this.chartHost.dataset.nonfinite = String(drawn.nonfinite);
    this.renderNotes(runs, drawn);
    this.renderMenu(runs);
  }

  /** The user zoomed (range in x values) or reset the zoom (null). */
  onZoom(range) {
    // Only a downsampled series has more to show inside the window than the chart already holds.
    const more = this.shown.some((r) => r.data && r.data.downsampled);
    if (range && more && this.lastOpts && this.lastOpts.xAxis === "step" && Number.isFinite(range.min) && Number.isFinite(range.max)) {
      this.zoomWindow = { min: range.min, max: range.max };
      this.loadWindow();
      return;
    }
    const was = this.zoomWindow;
    this.zoomWindow = null;
    delete this.chartHost.dataset.window;
    delete this.chartHost.dataset.windowPoints;
    if (was) this.drawRuns(this.shown, this.lastOpts);
  }

  /** Fetches the zoomed window of every shown run at the chart's resolution and draws it (zoom kept). */
  async loadWindow() {
    const range = this.zoomWindow;
    const generation = ++this.windowGeneration;
    const plot = this.chart && this.chart.plot;
    const width = plot ? plot.bbox.width / devicePixelRatio : this.chartHost.clientWidth;
    const view = { xMin: range.min, xMax: range.max, width };
    this.chartHost.dataset.windowState = "loading";
    const runs = await Promise.all(
      this.shown.map((r) =>
        this.store
          .schedule(() => fetchScalars(r.run, this.store.actualTag(r.run, this.tag), pointsForWidth(width), undefined, view))
          .then((data) => ({ ...r, data }))
          .catch(() => r),
      ),
    );
    if (generation !== this.windowGeneration || this.zoomWindow !== range) return;
    this.drawRuns(runs, this.lastOpts);
    this.chartHost.dataset.window = `${Math.floor(range.min)}-${Math.ceil(range.max)}`;
    this.chartHost.dataset.windowPoints = String(runs.reduce((n, r) => n + r.data.points.length, 0));
    this.chartHost.dataset.windowState = "drawn";
  }

  renderNotes(runs, drawn) {
    clear(this.notes);
    const noSamples = this.lastOpts && this.lastOpts.xAxis === "samples" ? runs.filter((r) => !r.data.samplesOf) : [];
    if (noSamples.length) {
      this.notes.append(
        el("span", {
          class: "ms-note",
          "data-testid": "no-samples-note",
          title: "The samples axis comes from mindformers' '<tag> vs samples' series (samples seen at each step).",
          text: `no sample counts for ${noSamples.map((r) => r.run).join(", ")}: not drawn on the samples axis`,
        }),
      );
    }
    if (this.pointsOnly) {
      this.notes.append(
        el("span", {
          class: "ms-note",
          "data-testid": "points-note",
          title: "Each point is one value measured once at its step (e.g. a graph compiled there): no line joins them, since they are not a trend over training.",
          text: "one-off values: one point each, not a trend",
        }),
      );
    }
    const downsampled = runs.filter((r) => r.data.downsampled);
    if (downsampled.length) {
      const total = downsampled.reduce((s, r) => s + r.data.total_points, 0);
      const shown = downsampled.reduce((s, r) => s + r.data.points.length, 0);
      this.notes.append(
        el("span", {
          class: "ms-note",
          title: "Each bucket keeps its minimum and maximum, so single-step spikes stay visible.",
          text: `${shown.toLocaleString()} of ${total.toLocaleString()} points (min/max kept)`,
        }),
      );
    }
    if (this.spread) {
      const times = `${Math.round(this.spread).toLocaleString("en-US")}x`;
      const chosen = this.linearChosen;
      this.notes.append(
        el(
          "span",
          {
            class: "ms-note",
            "data-testid": "log-scale-note",
            title: "The typical values (medians) of the runs drawn here differ by more than 100x: on a linear axis the smaller ones lie flat on zero.",
          },
          chosen ? `linear scale: the runs differ by ${times} ` : `log scale: the runs differ by ${times} `,
          el("button", {
            type: "button",
            class: "ms-link-button",
            "data-testid": "log-scale-toggle",
            text: chosen ? "use log scale" : "use linear scale",
            on: {
              click: () => {
                this.linearChosen = !chosen;
                this.drawRuns(this.shown, this.lastOpts);
              },
            },
          }),
        ),
      );
    }
    if (drawn.sparseSmoothed) {
      this.notes.append(
        el("span", {
          class: "ms-note",
          "data-testid": "sparse-smoothing-note",
          title: `Fewer than ${SMOOTH_MIN_POINTS} recorded points: the recorded values stay bold and the smoothed line is dashed, since an average over few points lags and flattens.`,
          text: "sparse: raw line bold, smoothed dashed",
        }),
      );
    }
    if (drawn.restarts) {
      const steps = [...new Set(runs.flatMap((r) => (r.data.restarts || []).map((x) => x.step)))].sort((a, b) => a - b);
      this.notes.append(
        el("span", {
          class: "ms-note",
          "data-testid": "restart-note",
          title: "The run went back to an earlier step (a resume from a checkpoint): the line is its final timeline, the dashed vertical line marks the restart. Settings > Superseded segments draws the replaced steps.",
          text: `resumed at step ${steps.join(", ")}${drawn.superseded ? " (superseded steps dashed)" : ""}`,
        }),
      );
    }
    if (drawn.nonfinite) {
      this.notes.append(
        el("span", {
          class: "ms-note ms-note-bad",
          "data-testid": "nonfinite-note",
          title: "Steps whose value is NaN or ±Inf are marked with a red triangle at the top of the chart.",
          text: `${drawn.nonfinite} non-finite value${drawn.nonfinite === 1 ? "" : "s"} (NaN/Inf)`,
        }),
      );
    }
  }

  renderMenu(runs) {
    clear(this.menu);
    this.menuButton.disabled = !runs.length;
    for (const r of runs) {
      const row = el(
        "div",
        { class: "ms-menu-row", "data-run": r.run },
        el("span", { class: "ms-swatch", style: { background: r.color } }),
        el("span", { class: "ms-menu-run", text: r.run, title: r.run }),
        el("button", {
          type: "button",
          class: "ms-link-button",
          "data-testid": "download-csv",
          "data-run": r.run,
          text: "CSV",
          on: { click: () => this.download(r.run, "csv") },
        }),
        el("button", {
          type: "button",
          class: "ms-link-button",
          "data-testid": "download-json",
          "data-run": r.run,
          text: "JSON",
          on: { click: () => this.download(r.run, "json") },
        }),
      );
      this.menu.append(row);
    }
  }

  toggleMenu(ev) {
    ev.stopPropagation();
    this.menu.hidden = !this.menu.hidden;
  }

  async download(run, format) {
    this.menu.hidden = true;
    let data;
    try {
      data = await this.store.getFull(run, this.tag);
    } catch (e) {
      this.showStatus(`Download failed: ${e.message}`, true);
      return;
    }
    if (format === "csv") saveText(downloadName(run, this.tag, "csv"), seriesToCsv(data), "text/csv");
    else saveText(downloadName(run, this.tag, "json"), seriesToJson(data), "application/json");
  }

  /** Shades the step range [first, last] of a health finding (null clears it); kept across redraws. */
  highlight(steps, run = null) {
    this.highlighted = steps ? { steps, run } : null;
    if (steps) {
      this.chartHost.dataset.highlight = `${steps[0]}-${steps[1]}`;
      this.chartHost.dataset.highlightRun = run || "";
    } else {
      delete this.chartHost.dataset.highlight;
      delete this.chartHost.dataset.highlightRun;
    }
    this.element.classList.toggle("ms-highlighted", Boolean(steps));
    if (this.chart) this.chart.setHighlight(steps, run);
  }

  showStatus(text, isError = false) {
    this.status.textContent = text;
    this.status.hidden = !text;
    this.status.classList.toggle("ms-error", isError);
  }

  /** First time in view: start fetching. */
  activate() {
    if (this.active) return;
    this.active = true;
    this.update(this.lastRuns, this.lastOpts);
  }

  resize() {
    if (this.chart) this.chart.resize();
  }

  destroy() {
    document.removeEventListener("click", this.onDocClick);
    if (this.chart) this.chart.destroy();
    this.element.remove();
  }
}
