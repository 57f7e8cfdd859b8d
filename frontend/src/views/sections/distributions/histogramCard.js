// One distribution card: the quantile bands over time of a histogram series (weights, activations) for every visible
// run that has it. Fetched when first scrolled into view, like the chart cards.

import { fetchHistograms } from "../../../api/client.js";
import { BandsChart } from "../../../chart/bandsChart.js";
import { el } from "../../../base/dom.js";

export class HistogramCard {
  constructor({ tag, displayName, tier }) {
    this.tag = tag;
    this.tier = tier;
    this.active = false;
    this.generation = 0;
    this.runs = [];
    this.opts = { xAxis: "step" };
    this.cache = new Map(); // run -> data
    this.chartHost = el("div", { class: "ms-chart", "data-testid": "histogram-chart", "data-tag": tag, "data-tier": tier, "data-state": "idle" });
    this.status = el("div", { class: "ms-chart-status", "data-testid": "chart-status" });
    this.notes = el("div", { class: "ms-chart-notes" });
    this.titleEl = el("div", { class: "ms-card-title", text: displayName, title: tag });
    this.element = el(
      "div",
      { class: "ms-card", "data-testid": "histogram-card", "data-tag": tag },
      el(
        "div",
        { class: "ms-card-header" },
        el("div", { class: "ms-card-titles" }, this.titleEl, el("div", { class: "ms-card-subtitle", text: `${tag} · distribution` })),
      ),
      this.chartHost,
      this.status,
      this.notes,
    );
    this.chart = null;
  }

  setDisplayName(name) {
    this.titleEl.textContent = name;
  }

  activate() {
    if (this.active) return;
    this.active = true;
    this.update(this.runs, this.opts);
  }

  /** Shades a health finding's step range: the range as attributes and a marked card (null clears). */
  highlight(steps, run = null) {
    if (steps) {
      this.element.dataset.highlight = `${steps[0]}-${steps[1]}`;
      this.element.dataset.highlightRun = run || "";
    } else {
      delete this.element.dataset.highlight;
      delete this.element.dataset.highlightRun;
    }
    this.element.classList.toggle("ms-highlighted", Boolean(steps));
  }

  async update(runs, opts, { refresh = false } = {}) {
    this.runs = runs;
    this.opts = opts;
    if (!this.active) return;
    const generation = ++this.generation;
    if (!runs.length) {
      this.chartHost.dataset.state = "empty";
      this.showStatus("No selected run has this histogram.");
      return;
    }
    if (!this.chart) {
      this.chartHost.dataset.state = "loading";
      this.showStatus("Loading…");
    }
    const results = await Promise.all(
      runs.map(async (r) => {
        try {
          let data = this.cache.get(r.run);
          if (!data || refresh) {
            data = await fetchHistograms(r.run, this.tag);
            this.cache.set(r.run, data);
          }
          return { ...r, data };
        } catch (error) {
          return { ...r, error };
        }
      }),
    );
    if (generation !== this.generation) return;
    const ok = results.filter((r) => r.data);
    const failed = results.filter((r) => r.error);
    if (!this.chart) this.chart = new BandsChart(this.chartHost, { height: 220 });
    const drawn = this.chart.update(ok, opts);
    this.chartHost.dataset.steps = String(drawn.steps);
    this.chartHost.dataset.runCount = String(drawn.runs);
    this.chartHost.dataset.state = ok.length ? "drawn" : "error";
    this.showStatus(failed.length ? `Could not load ${failed.map((f) => f.run).join(", ")}: ${failed[0].error.message}` : "", failed.length > 0);
    this.notes.textContent = "";
    const sampled = ok.filter((r) => r.data.downsampled);
    if (sampled.length) {
      const d = sampled[0].data;
      const why = d.report_budget ? `: this report keeps at most ${d.report_budget} steps a distribution chart (its size budget)` : "";
      this.notes.append(
        el("span", {
          class: "ms-note",
          "data-testid": "hist-downsampled",
          title: "Evenly spaced steps, the first and the last included",
          text: `${d.rows.length} of ${d.total_steps} steps, evenly spaced${why}`,
        }),
      );
    }
    const nonfinite = nonfiniteNote(ok);
    if (nonfinite) this.notes.append(el("span", { class: "ms-note ms-error", "data-testid": "hist-nonfinite", text: nonfinite }));
    this.notes.append(el("span", { class: "ms-note", title: "Bands: min-max, ±1.5σ, ±1σ, ±0.5σ quantiles of a normal distribution; line: median", text: "bands: quantiles · line: median" }));
  }

  showStatus(text, isError = false) {
    this.status.textContent = text;
    this.status.hidden = !text;
    this.status.classList.toggle("ms-error", isError);
  }

  destroy() {
    if (this.chart) this.chart.destroy();
    this.element.remove();
  }
}

/** "NaN/Inf values (not in the bands): run: 3 steps, at step 3 135 NaN, 0 +Inf, 0 −Inf": MindSpore's non-finite
 * counts, which the bands (drawn from the finite values) cannot show; "" when there are none. */
export function nonfiniteNote(results) {
  const parts = [];
  for (const r of results) {
    const rows = (r.data && Array.isArray(r.data.nonfinite) && r.data.nonfinite) || [];
    const steps = Number((r.data && r.data.nonfinite_steps) || rows.length);
    if (!steps || !rows.length) continue;
    const [step, nan, pos, neg] = rows[rows.length - 1];
    parts.push(`${r.run}: ${steps} step${steps === 1 ? "" : "s"}, at step ${step} ${nan} NaN, ${pos} +Inf, ${neg} −Inf`);
  }
  return parts.length ? `NaN/Inf values (not in the bands): ${parts.join("; ")}` : "";
}
