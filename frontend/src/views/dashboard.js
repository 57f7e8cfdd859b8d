// The dashboard view: header, settings and run selector on the left, the tier sections (Core, Diagnostic, Debug,
// Other) with one chart card per tag on the right, or the empty state when there is nothing to draw.
// refresh() re-reads status, runs and tags and updates cards in place (zoom, selection and scroll survive).

import { fetchHealth, fetchRuns, fetchStatus, fetchTags } from "../api.js";
import { RunColors } from "../colors.js";
import { el, clear } from "../dom.js";
import { connectToHost } from "../host.js";
import { loadSettings, saveSettings } from "../settings.js";
import { SeriesStore } from "../store.js";
import { ChartCard } from "./chartCard.js";
import { renderEmptyState } from "./emptyState.js";
import { HealthPanel } from "./healthPanel.js";
import { HistogramCard } from "./histogramCard.js";
import { LayerPanel } from "./layerPanel.js";
import { RunSelector } from "./runSelector.js";
import { SettingsPanel } from "./settingsPanel.js";
import { WarningsBanner } from "./warningsBanner.js";

const TIER_INFO = {
  core: { title: "Core", subtitle: "Is training progressing? Loss, learning rate, gradient norm, speed." },
  diagnostic: { title: "Diagnostic", subtitle: "Is it healthy? Evaluation, weight norms, loss scale." },
  debug: { title: "Debug", subtitle: "Where does it go wrong? Per-layer and timing detail." },
  other: { title: "Other", subtitle: "Scalars outside the tier scheme." },
};

// Core charts first in the order people read them; everything else by tag name.
const CORE_ORDER = [
  "core/loss",
  "core/learning_rate",
  "core/grad_norm",
  "core/loss_scale",
  "core/overflow_steps",
  "core/step_time_ms",
  "core/throughput",
];

function tagRank(tag) {
  for (let i = 0; i < CORE_ORDER.length; i++) {
    if (tag === CORE_ORDER[i] || tag.startsWith(CORE_ORDER[i] + "/")) return i;
  }
  return CORE_ORDER.length;
}

export function compareTags(a, b) {
  return tagRank(a) - tagRank(b) || (a < b ? -1 : a > b ? 1 : 0);
}

// What fills a tier, for the note shown when a tier has no series in the runs (and which TrainMonitor option
// records it).
const EMPTY_TIER_NOTES = {
  core: "No core series in these runs. The plugin's training callback, TrainMonitor, records loss, learning rate, gradient norm, step time and throughput here.",
  diagnostic:
    "No diagnostic series in these runs. TrainMonitor records per-layer weight norms by default (weight_norms=True, at each epoch end or every diagnostic_freq steps), and the evaluation loss and metrics when it is given eval_dataset= (and eval_metrics=[...]).",
  debug:
    'No debug series in these runs. The debug tier is off by default: TrainMonitor(debug="all") records per-layer update ratios, per-layer gradient norms (with MonitoredTrainCell), activation histograms and data wait time every debug_freq steps (default 100); or pick items, e.g. debug=["update_ratio"].',
};

// Series of our callbacks a tier usually has; when some are absent, the tier says how to record them.
const EXPECTED = {
  diagnostic: [
    { label: "per-layer weight norms", test: (t) => t === "diagnostic/layer_weight_norm", option: "weight_norms=True" },
    { label: "evaluation", test: (t) => t === "diagnostic/eval_loss" || t.startsWith("diagnostic/eval/"), option: "eval_dataset=..." },
  ],
  debug: [
    { label: "update ratio", test: (t) => t === "debug/update_ratio", item: "update_ratio" },
    { label: "per-layer gradient norm", test: (t) => t === "debug/layer_grad_norm", item: "layer_grad_norm" },
    { label: "activation histograms", test: (t) => t.startsWith("debug/activation/"), item: "activations" },
    { label: "data wait time", test: (t) => t === "debug/data_wait_ms", item: "data_wait" },
  ],
};

/** The "not recorded" hint of a tier from the tags it has (null when nothing is missing). */
export function partialHint(tier, tags) {
  const expected = EXPECTED[tier];
  if (!expected) return null;
  const missing = expected.filter((e) => !tags.some((t) => e.test(t)));
  if (!missing.length || missing.length === expected.length) return null;
  const labels = missing.map((m) => m.label).join(", ");
  if (tier === "debug") {
    const items = missing.map((m) => `"${m.item}"`).join(", ");
    return `Not recorded in these runs: ${labels}. Add them with TrainMonitor(debug=[${items}]).`;
  }
  return `Not recorded in these runs: ${labels}. Add them with TrainMonitor(${missing.map((m) => m.option).join(", ")}).`;
}

const REFRESH_MS = 30000;
const EMPTY_REFRESH_MS = 5000;

export class Dashboard {
  constructor(root) {
    this.root = root;
    this.settings = loadSettings();
    this.colors = new RunColors();
    this.store = new SeriesStore();
    this.runs = [];
    this.tagIndex = new Map(); // tag -> {tier, displayName, runs: Set}
    this.layerIndex = new Map(); // layers tag -> {tier, displayName, runs: Set}
    this.histIndex = new Map(); // histogram tag -> {tier, displayName, runs: Set}
    this.panels = new Map(); // layers tag -> LayerPanel
    this.histCards = new Map(); // histogram tag -> HistogramCard
    this.ours = false; // some run has our core/* tags (then partial tiers say how to record the rest)
    this.tiers = ["core", "diagnostic", "debug", "other"];
    this.sections = new Map(); // tier -> {element, grid, count, cards: Map}
    this.cards = new Map(); // tag -> ChartCard
    this.refreshing = null;
    this.refreshAgain = false;
    this.lastRefresh = 0;
    this.timer = null;
    this.redrawQueued = false;
    this.buildLayout();
  }

  buildLayout() {
    this.logdirEl = el("code", { class: "ms-logdir", "data-testid": "logdir" });
    this.updatedEl = el("span", { class: "ms-muted", "data-testid": "last-updated" });
    this.autoRefresh = el("input", {
      type: "checkbox",
      "data-testid": "auto-refresh",
      checked: this.settings.autoRefresh,
      on: {
        change: () => {
          this.settings.autoRefresh = this.autoRefresh.checked;
          this.persist();
          this.scheduleTimer();
        },
      },
    });
    const refreshButton = el("button", {
      type: "button",
      class: "ms-button",
      "data-testid": "refresh",
      title: "Reload data",
      text: "Refresh",
      on: { click: () => this.refresh() },
    });
    const header = el(
      "header",
      { class: "ms-header", "data-testid": "header" },
      el(
        "div",
        { class: "ms-brand" },
        el("span", { class: "ms-brand-mark", "aria-hidden": "true" }),
        el("h1", { class: "ms-title", text: "MindSpore" }),
        el("span", { class: "ms-subtitle", text: "training dashboard" }),
      ),
      el("div", { class: "ms-header-meta" }, this.logdirEl),
      el(
        "div",
        { class: "ms-header-actions" },
        this.updatedEl,
        el("label", { class: "ms-check", title: "Reload every 30 s and whenever TensorBoard reloads" }, this.autoRefresh, el("span", { text: "Auto-refresh" })),
        refreshButton,
      ),
    );

    this.settingsPanel = new SettingsPanel({ settings: this.settings, onChange: (what) => this.onSettingsChange(what) });
    this.deselected = new Set(this.settings.deselectedRuns);
    this.runSelector = new RunSelector({
      deselected: this.deselected,
      filter: this.settings.runFilter,
      onChange: () => {
        this.settings.runFilter = this.runSelector.filterText;
        this.settings.deselectedRuns = [...this.deselected];
        this.persist();
        this.redrawAll();
        this.visibleRunsChanged();
      },
    });
    this.sidebar = el("aside", { class: "ms-sidebar", "data-testid": "sidebar" }, this.settingsPanel.element, this.runSelector.element);

    this.banner = el("div", { class: "ms-banner", role: "alert", "data-testid": "error-banner", hidden: true });
    this.warningsBanner = new WarningsBanner();
    this.healthPanel = new HealthPanel({ onFinding: (run, finding) => this.revealFinding(run, finding) });
    this.emptyHost = el("div", { class: "ms-empty-host", hidden: true });
    this.sectionsHost = el("div", { class: "ms-sections", "data-testid": "sections" });
    this.loading = el("div", { class: "ms-loading", "data-testid": "loading", text: "Loading…" });
    this.main = el("main", { class: "ms-main", "data-testid": "main" }, this.banner, this.warningsBanner.element, this.healthPanel.element, this.loading, this.emptyHost, this.sectionsHost);

    this.app = el(
      "div",
      { class: "ms-app", "data-testid": "mindspore-dashboard", "data-state": "loading" },
      header,
      el("div", { class: "ms-body" }, this.sidebar, this.main),
    );
    clear(this.root);
    this.root.append(this.app);

    this.observer =
      typeof IntersectionObserver !== "undefined"
        ? new IntersectionObserver((entries) => this.onIntersect(entries), { root: this.main, rootMargin: "400px 0px" })
        : null;
  }

  async start() {
    this.hostConnected = connectToHost(() => this.refresh({ fromHost: true }));
    await this.refresh();
  }

  persist() {
    saveSettings(this.settings);
  }

  chartOptions() {
    const s = this.settings;
    return { xAxis: s.xAxis, logY: s.logY, smoothing: s.smoothing, showInterval: s.showInterval };
  }

  onSettingsChange() {
    this.persist();
    // Smoothing slider fires many input events: draw once per frame.
    if (this.redrawQueued) return;
    this.redrawQueued = true;
    requestAnimationFrame(() => {
      this.redrawQueued = false;
      this.redrawAll();
    });
  }

  /** Re-reads status, runs and tags, then every card that is on screen. Calls made meanwhile are merged. */
  refresh(opts = {}) {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    this.refreshing = this.doRefresh(opts).finally(() => {
      this.refreshing = null;
      this.lastRefresh = Date.now();
      this.scheduleTimer();
      if (this.refreshAgain) {
        this.refreshAgain = false;
        this.refresh();
      }
    });
    return this.refreshing;
  }

  async doRefresh({ fromHost = false } = {}) {
    const isFirst = this.app.dataset.state === "loading";
    this.refreshCount = (this.refreshCount || 0) + 1;
    this.app.dataset.refreshCount = String(this.refreshCount);
    this.app.dataset.refreshSource = fromHost ? "tensorboard" : "page";
    // Not awaited: the charts do not wait for the health rules.
    fetchHealth().then(
      (health) => this.healthPanel.setHealth(health),
      (e) => this.healthPanel.setError((e && e.message) || "request failed"),
    );
    const [statusR, runsR, tagsR] = await Promise.allSettled([fetchStatus(), fetchRuns(), fetchTags()]);
    const status = statusR.status === "fulfilled" ? statusR.value : null;
    this.status = status;
    if (status) this.warningsBanner.update(status.warnings);
    this.loading.hidden = true;
    if (status) this.logdirEl.textContent = status.logdir ? status.logdir : "(no logdir)";
    this.logdirEl.title = status && status.logdir ? "Log directory: " + status.logdir : "";

    if (runsR.status === "rejected" || tagsR.status === "rejected") {
      const error = (runsR.reason || tagsR.reason || {}).message || "request failed";
      if (isFirst || !this.cards.size) {
        this.showEmpty(status, error);
      } else {
        this.showBanner(`Could not refresh: ${error}`);
      }
      return;
    }
    this.showBanner("");
    const tags = tagsR.value;
    const runs = runsR.value.filter((r) => r in tags.runs).concat(Object.keys(tags.runs).filter((r) => !runsR.value.includes(r)));
    this.tiers = tags.tiers;
    this.updateTagIndex(tags);

    if ((status && status.has_data === false) || this.tagIndex.size + this.layerIndex.size + this.histIndex.size === 0) {
      const why =
        status && status.has_data === false
          ? status
          : {
              ...(status || {}),
              reason: "no_scalars",
              message: "The runs under this log directory hold no scalar series this tab can draw.",
            };
      this.showEmpty(why, null);
      this.setRuns(runs);
      return;
    }
    this.emptyHost.hidden = true;
    this.healthPanel.element.hidden = false;
    this.sectionsHost.hidden = false;
    this.sidebar.hidden = false;
    this.app.dataset.state = "ready";
    this.setRuns(runs);
    this.reconcileCards();
    this.updatedEl.textContent = "Updated " + new Date().toLocaleTimeString();
    this.redrawAll({ refresh: !isFirst });
  }

  showEmpty(status, error) {
    this.app.dataset.state = "empty";
    this.healthPanel.element.hidden = true;
    this.sectionsHost.hidden = true;
    this.sidebar.hidden = true;
    clear(this.emptyHost).append(renderEmptyState(status, error));
    this.emptyHost.hidden = false;
  }

  showBanner(text) {
    this.banner.textContent = text;
    this.banner.hidden = !text;
  }

  /** The runs checked in the run selector changed (or the run list did): the Health panel follows, and the
   * sections mounted beside the dashboard hear an "ms-visible-runs" event on the app element. */
  visibleRunsChanged() {
    const visible = this.runSelector.visibleRuns();
    this.healthPanel.setRuns(visible);
    this.app.dispatchEvent(new CustomEvent("ms-visible-runs", { detail: visible }));
  }

  setRuns(runs) {
    const same = runs.length === this.runs.length && runs.every((r, i) => r === this.runs[i]);
    this.runs = runs;
    const colors = this.colors.update(runs);
    if (!same) this.runSelector.setRuns(runs, colors);
    this.visibleRunsChanged();
    this.store.retain((run, tag) => runs.includes(run) && this.tagIndex.has(tag));
    this.app.dataset.requests = String(this.store.requests);
  }

  updateTagIndex(tags) {
    const index = new Map();
    const layers = new Map();
    const hists = new Map();
    let ours = false;
    const add = (map, t, tier, run) => {
      let info = map.get(t.tag);
      if (!info) {
        info = { tier, displayName: t.display_name, runs: new Set(), interval: false };
        map.set(t.tag, info);
      }
      info.runs.add(run);
      info.interval = info.interval || Boolean(t.interval);
    };
    for (const [run, byTier] of Object.entries(tags.runs)) {
      for (const tier of tags.tiers) {
        for (const t of byTier[tier] || []) {
          if (t.kind === "layers") add(layers, t, tier, run);
          else if (t.kind === "histogram") add(hists, t, tier, run);
          else if (!t.kind || t.kind === "scalar") {
            // Members of a per-parameter family (local_norm/<param>) are rows of the family's heatmap instead.
            if (t.family) continue;
            add(index, t, tier, run);
            if (t.tag.startsWith("core/")) ours = true;
          }
        }
      }
    }
    this.tagIndex = index;
    this.layerIndex = layers;
    this.histIndex = hists;
    this.ours = ours;
  }

  section(tier) {
    let s = this.sections.get(tier);
    if (s) return s;
    const info = TIER_INFO[tier] || { title: tier, subtitle: "" };
    const collapsed = Boolean(this.settings.collapsed[tier]);
    const count = el("span", { class: "ms-section-count", "data-testid": "section-count" });
    const toggle = el(
      "button",
      {
        type: "button",
        class: "ms-section-toggle",
        "aria-expanded": String(!collapsed),
        "data-testid": "section-toggle",
        on: { click: () => this.setCollapsed(tier, toggle.getAttribute("aria-expanded") === "true") },
      },
      el("span", { class: "ms-chevron", "aria-hidden": "true" }),
      el("span", { class: "ms-section-title", text: info.title }),
      count,
      el("span", { class: "ms-section-subtitle", text: info.subtitle }),
    );
    const grid = el("div", { class: "ms-grid", "data-testid": "section-grid" });
    const panels = el("div", { class: "ms-panels", "data-testid": "section-panels" });
    const hint = el("div", { class: "ms-tier-hint", "data-testid": "tier-hint", hidden: true });
    const body = el("div", { class: "ms-section-body", hidden: collapsed }, hint, panels, grid);
    const element = el(
      "section",
      { class: "ms-section", "data-testid": "tier-section", "data-tier": tier, "data-collapsed": String(collapsed) },
      el("h2", { class: "ms-section-header" }, toggle),
      body,
    );
    s = { element, grid, panels, hint, body, toggle, count, cards: new Map() };
    this.sections.set(tier, s);
    return s;
  }

  setCollapsed(tier, collapsed) {
    const s = this.section(tier);
    this.settings.collapsed[tier] = collapsed;
    this.persist();
    s.toggle.setAttribute("aria-expanded", String(!collapsed));
    s.element.dataset.collapsed = String(collapsed);
    s.body.hidden = collapsed;
    if (!collapsed) {
      for (const card of s.cards.values()) card.chart && card.chart.resize();
      for (const [tag, panel] of this.panels) if (panel.tier === tier && panel.active) panel.render();
    }
  }

  reconcileCards() {
    // Remove cards of tags that are gone (or moved tier), add new ones in order.
    for (const [tag, card] of [...this.cards]) {
      const info = this.tagIndex.get(tag);
      if (!info || info.tier !== card.tier) {
        if (this.observer) this.observer.unobserve(card.element);
        card.destroy();
        this.cards.delete(tag);
        for (const s of this.sections.values()) s.cards.delete(tag);
      }
    }
    for (const [map, index] of [
      [this.panels, this.layerIndex],
      [this.histCards, this.histIndex],
    ]) {
      for (const [tag, view] of [...map]) {
        const info = index.get(tag);
        if (!info || info.tier !== view.tier) {
          if (this.observer) this.observer.unobserve(view.element);
          view.destroy();
          map.delete(tag);
        }
      }
    }
    const byTier = new Map();
    const groupBy = (index) => {
      const out = new Map();
      for (const [tag, info] of index) {
        if (!out.has(info.tier)) out.set(info.tier, []);
        out.get(info.tier).push(tag);
        if (!byTier.has(info.tier)) byTier.set(info.tier, []);
      }
      return out;
    };
    const scalarsBy = groupBy(this.tagIndex);
    const layersBy = groupBy(this.layerIndex);
    const histsBy = groupBy(this.histIndex);
    const order = this.tiers.concat([...byTier.keys()].filter((t) => !this.tiers.includes(t)));
    clear(this.sectionsHost);
    for (const tier of order) {
      const tags = (scalarsBy.get(tier) || []).sort(compareTags);
      const layerTags = (layersBy.get(tier) || []).sort();
      const histTags = (histsBy.get(tier) || []).sort();
      const total = tags.length + layerTags.length + histTags.length;
      if (!total && !EMPTY_TIER_NOTES[tier]) continue; // "other" only shows when it has tags
      const s = this.section(tier);
      this.sectionsHost.append(s.element);
      s.count.textContent = String(total);
      const hint = total && this.ours ? partialHint(tier, tags.concat(layerTags, histTags)) : null;
      s.hint.textContent = hint || "";
      s.hint.hidden = !hint;
      if (!total) {
        s.element.dataset.empty = "true";
        clear(s.panels);
        clear(s.grid).append(el("div", { class: "ms-tier-empty", "data-testid": "tier-empty", text: EMPTY_TIER_NOTES[tier] }));
        continue;
      }
      s.element.dataset.empty = "false";
      const placeholder = s.grid.querySelector(".ms-tier-empty");
      if (placeholder) placeholder.remove();
      for (const tag of layerTags) {
        const info = this.layerIndex.get(tag);
        let panel = this.panels.get(tag);
        if (!panel) {
          panel = new LayerPanel({ tag, displayName: info.displayName, tier });
          this.panels.set(tag, panel);
          if (this.observer) this.observer.observe(panel.element);
        } else panel.setDisplayName(info.displayName);
        s.panels.append(panel.element);
        if (!this.observer) panel.activate();
      }
      for (const tag of tags) {
        let card = this.cards.get(tag);
        const info = this.tagIndex.get(tag);
        if (!card) {
          card = new ChartCard({ tag, displayName: info.displayName, tier, store: this.store });
          this.cards.set(tag, card);
          s.cards.set(tag, card);
          if (this.observer) this.observer.observe(card.element);
        } else {
          card.setDisplayName(info.displayName);
        }
        s.grid.append(card.element); // appending again keeps the order; the element and its chart stay
      }
      for (const tag of histTags) {
        const info = this.histIndex.get(tag);
        let card = this.histCards.get(tag);
        if (!card) {
          card = new HistogramCard({ tag, displayName: info.displayName, tier });
          this.histCards.set(tag, card);
          if (this.observer) this.observer.observe(card.element);
        } else card.setDisplayName(info.displayName);
        s.grid.append(card.element);
        if (!this.observer) card.activate();
      }
      if (!this.observer) for (const card of s.cards.values()) card.activate();
    }
  }

  /** A health finding was clicked: scroll to the chart (or heatmap panel) of its tag and shade its step range. */
  revealFinding(run, finding) {
    const tag = finding.tag;
    let view = this.cards.get(tag) || this.panels.get(tag) || this.histCards.get(tag);
    if (!view) {
      // A layer's own tag (prefix/param) belongs to the family's heatmap (prefix/*).
      for (const [panelTag, panel] of this.panels) {
        if (panelTag.endsWith("/*") && tag.startsWith(panelTag.slice(0, -1))) view = panel;
      }
    }
    if (this.highlighted && this.highlighted !== view) this.clearHighlight(this.highlighted);
    if (!view) {
      this.showBanner(`No chart of ${tag} is shown for the selected runs.`);
      return;
    }
    const s = this.sections.get(view.tier);
    if (s && s.body.hidden) this.setCollapsed(view.tier, false);
    view.activate();
    if (view.highlight) view.highlight(finding.steps, run);
    else {
      // Heatmap panels and distribution cards: the step range as attributes and a marked card.
      const range = finding.steps ? `${finding.steps[0]}-${finding.steps[1]}` : "";
      view.element.dataset.highlight = range;
      view.element.dataset.highlightRun = run;
      view.element.classList.add("ms-highlighted");
    }
    this.highlighted = view;
    view.element.scrollIntoView({ block: "center", behavior: "smooth" });
  }

  clearHighlight(view) {
    if (view.highlight) view.highlight(null);
    else {
      delete view.element.dataset.highlight;
      delete view.element.dataset.highlightRun;
      view.element.classList.remove("ms-highlighted");
    }
  }

  onIntersect(entries) {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const views = [...this.cards.values(), ...this.panels.values(), ...this.histCards.values()];
      const view = views.find((c) => c.element === entry.target);
      if (view) {
        this.observer.unobserve(entry.target);
        view.activate();
      }
    }
  }

  runsForTag(tag, index = this.tagIndex) {
    const info = index.get(tag);
    if (!info) return [];
    return this.runSelector
      .visibleRuns()
      .filter((r) => info.runs.has(r))
      .map((r) => ({ run: r, color: this.colors.color(r) }));
  }

  redrawAll({ refresh = false } = {}) {
    const opts = this.chartOptions();
    for (const [tag, card] of this.cards) card.draw(this.runsForTag(tag), opts, { refresh });
    for (const [tag, panel] of this.panels) {
      panel.setRuns(this.runsForTag(tag, this.layerIndex), opts, { refresh });
    }
    for (const [tag, card] of this.histCards) card.draw(this.runsForTag(tag, this.histIndex), opts, { refresh });
    // A tick later: the batch requests of this redraw have been sent.
    setTimeout(() => (this.app.dataset.requests = String(this.store.requests)), 0);
  }

  scheduleTimer() {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.settings.autoRefresh) return;
    const delay = this.app.dataset.state === "empty" ? EMPTY_REFRESH_MS : REFRESH_MS;
    this.timer = setTimeout(() => {
      // TensorBoard's own reload may just have refreshed us; a hidden page waits until it is seen again.
      const hidden = typeof document !== "undefined" && document.hidden;
      if (hidden || Date.now() - this.lastRefresh < delay / 2) this.scheduleTimer();
      else this.refresh();
    }, delay);
  }
}
