// The dashboard view: header, settings and run selector on the left, the tier sections (Core, Diagnostic, Debug,
// Other) with one chart card per tag on the right, or the empty state when there is nothing to draw.
// refresh() re-reads status, runs and tags and updates cards in place (zoom, selection and scroll survive).

import { fetchContract, fetchHealth, fetchRuns, fetchStatus, fetchTags } from "../api/client.js";
import { RunColors } from "../base/colors.js";
import { partialHint, tierInfo } from "../base/contract.js";
import { el, clear } from "../base/dom.js";
import { EventChannel } from "../base/events.js";
import { connectToHost } from "../base/host.js";
import { loadSettings, saveSettings } from "../base/settings.js";
import { SeriesStore } from "../api/store.js";
import { followTheme } from "../base/theme.js";
import { renderEmptyState } from "./emptyState.js";
import { HealthPanel } from "../views/sections/health/healthPanel.js";
import { VIEW_KINDS, kindsText, viewKey, viewKindOf } from "./registry.js";
import { RunSelector } from "../views/runSelector.js";
import { SettingsPanel } from "./settingsPanel.js";
import { WarningsBanner } from "./warningsBanner.js";

const REFRESH_MS = 30000;
const EMPTY_REFRESH_MS = 5000;
const CHARTS_WAIT_MS = 3000; // health and status wait at most this long for the charts' first series
// Above this many tag entries in the listing (mindformers: hundreds of per-parameter tags per rank, thousands of
// add_scalars folders behind them), health and status also wait for the charts' first series: their answers then
// take seconds of the server's time, which the charts would otherwise share.
const DEFER_HEALTH_TAGS = 2000;
const DEFER_HEALTH_RUNS = 200; // above this many runs, health and status wait for the charts' first series

export class Dashboard {
  constructor(root) {
    this.root = root;
    this.settings = loadSettings();
    // Resolves once the charts of the first listing have their series (or at once when there are none): the
    // sections below the tiers (landscapes, run information, media, graph, ...) make their first requests then.
    this.firstChartsShown = new Promise((resolve) => (this.resolveFirstCharts = resolve));
    this.colors = new RunColors();
    this.store = new SeriesStore();
    this.runs = [];
    this.events = new EventChannel(); // "refresh", "visible-runs", "theme": what the other sections listen to
    this.contract = null; // the page's part of the data contract (route "contract"), read once
    this.index = new Map(); // viewKey(kind, tag) -> {kind, tag, tier, displayName, runs: Set}
    this.views = new Map(); // viewKey(kind, tag) -> view (the protocol of registry.js)
    this.ours = false; // some run has our tags (then partial tiers say how to record the rest)
    this.tiers = [];
    this.sections = new Map(); // tier -> {element, grid, panels, hint, body, toggle, count}
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
      store: this.store, // told which runs each group holds: a group's series is their mean with a min / max band
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
    followTheme(this.app, (dark) => {
      this.dark = dark;
      this.events.emit("theme", { dark });
      if (this.views.size) this.redrawAll(); // canvas colors follow the theme
    });
    await this.refresh();
  }

  persist() {
    saveSettings(this.settings);
  }

  chartOptions() {
    const s = this.settings;
    return { xAxis: s.xAxis, logY: s.logY, smoothing: s.smoothing, showInterval: s.showInterval, showSuperseded: s.showSuperseded, dark: Boolean(this.dark) };
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
    // The other sections re-read their routes alongside.
    this.events.emit("refresh", { count: this.refreshCount, source: this.app.dataset.refreshSource });
    // The health rules and the status (logdir, warnings) come after the listings; on a logdir of more than
    // DEFER_HEALTH_RUNS runs only once the charts on screen have their series: there they are the slowest answers,
    // and computed beside the charts' series they would hold those up (the server's Python threads share one
    // interpreter lock). The charts wait for the status only to explain an empty page.
    let statusP = null;
    const status = () =>
      (statusP ||= fetchStatus().then(
        (st) => {
          this.status = st;
          this.warningsBanner.update(st.warnings);
          // What TensorBoard was started with (--logdir DIR or --logdir_spec name:DIR,...).
          const started = typeof st.started_with === "string" && st.started_with ? st.started_with : "";
          this.logdirEl.textContent = st.logdir ? (started.startsWith("--logdir_spec") ? started : st.logdir) : "(no logdir)";
          this.logdirEl.title = started ? "TensorBoard was started with " + started : "";
          this.app.dataset.statusState = "ready";
          return st;
        },
        () => {
          this.app.dataset.statusState = "error";
          return null;
        },
      ));
    const health = () =>
      fetchHealth().then(
        (h) => this.healthPanel.setHealth(h),
        (e) => this.healthPanel.setError((e && e.message) || "request failed"),
      );
    const [runsR, tagsR, contractR] = await Promise.allSettled([
      fetchRuns(),
      fetchTags(),
      this.contract ? Promise.resolve(this.contract) : fetchContract(),
    ]);
    this.loading.hidden = true;

    if (runsR.status === "rejected" || tagsR.status === "rejected" || contractR.status === "rejected") {
      const error = (runsR.reason || tagsR.reason || contractR.reason || {}).message || "request failed";
      if (isFirst || !this.views.size) {
        this.showEmpty(await status(), error);
      } else {
        this.showBanner(`Could not refresh: ${error}`);
      }
      health();
      this.resolveFirstCharts();
      return;
    }
    this.showBanner("");
    this.contract = contractR.value;
    const tags = tagsR.value;
    const runs = runsR.value.filter((r) => r in tags.runs).concat(Object.keys(tags.runs).filter((r) => !runsR.value.includes(r)));
    this.tiers = tags.tiers;
    this.updateTagIndex(tags);
    const entries = Object.values(tags.runs).reduce((n, byTier) => n + tags.tiers.reduce((m, t) => m + (byTier[t] || []).length, 0), 0);
    const defer = (runs.length > DEFER_HEALTH_RUNS || entries > DEFER_HEALTH_TAGS) && this.index.size > 0;
    if (!defer && this.index.size > 0) {
      health();
      status();
    }

    if (this.index.size === 0) {
      const st = await status();
      health();
      const why =
        st && st.has_data === false
          ? st
          : {
              ...(st || {}),
              reason: "no_scalars",
              message: "The runs under this log directory hold no scalar series this tab can draw.",
            };
      this.showEmpty(why, null);
      this.setRuns(runs);
      this.resolveFirstCharts();
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
    if (defer || isFirst) {
      this.chartsLoaded().then(() => {
        this.resolveFirstCharts();
        if (defer) {
          health();
          status();
        }
      });
    }
  }

  /** Resolves when the charts on screen have had their series (the views seen by the observer ask for them a
   * frame or two after a redraw), or after CHARTS_WAIT_MS at most. */
  chartsLoaded() {
    const frame = () => new Promise((resolve) => (typeof requestAnimationFrame === "function" ? requestAnimationFrame(() => resolve()) : setTimeout(resolve, 16)));
    const settled = frame()
      .then(frame)
      .then(() => new Promise((resolve) => setTimeout(resolve, 0)))
      .then(() => this.store.idle());
    return Promise.race([settled, new Promise((resolve) => setTimeout(resolve, CHARTS_WAIT_MS))]);
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
   * sections mounted beside the dashboard hear "visible-runs" on the event channel. */
  visibleRunsChanged() {
    const visible = this.runSelector.visibleRuns();
    this.healthPanel.setRuns(visible);
    this.events.emit("visible-runs", visible);
  }

  setRuns(runs) {
    const same = runs.length === this.runs.length && runs.every((r, i) => r === this.runs[i]);
    this.runs = runs;
    const colors = this.colors.update(runs);
    if (!same) this.runSelector.setRuns(runs, colors);
    this.visibleRunsChanged();
    const present = new Set(runs);
    this.store.retain((run, tag) => present.has(run) && this.index.has(viewKey("scalar", tag)));
    this.app.dataset.requests = String(this.store.requests);
  }

  updateTagIndex(tags) {
    const index = new Map();
    const aliases = new Map(); // run -> Map(our tag -> the run's own tag of that quantity)
    const order = this.contract.tag_order;
    let ours = false;
    for (const [run, byTier] of Object.entries(tags.runs)) {
      const own = new Set(tags.tiers.flatMap((tier) => (byTier[tier] || []).map((t) => t.tag)));
      for (const tier of tags.tiers) {
        for (const t of byTier[tier] || []) {
          const kind = viewKindOf(t);
          if (!kind) continue;
          // Another library's tag of one of our quantities (a Hugging Face Trainer's train/loss) is drawn in our
          // chart (core/loss): one chart per quantity; a run that has both is drawn from ours.
          let tag = t.tag;
          if (kind === "scalar" && t.same_as) {
            if (own.has(t.same_as)) continue;
            tag = t.same_as;
            if (!aliases.has(run)) aliases.set(run, new Map());
            aliases.get(run).set(tag, t.tag);
          }
          const key = viewKey(kind, tag);
          let info = index.get(key);
          if (!info) {
            info = { kind, tag, tier, displayName: t.display_name, runs: new Set(), sources: new Set() };
            index.set(key, info);
          }
          info.runs.add(run);
          info.sources.add(t.tag);
          if (kind === "scalar" && order.some((o) => t.tag === o || t.tag.startsWith(o + "/"))) ours = true;
        }
      }
    }
    this.index = index;
    this.store.setAliases(aliases);
    this.ours = ours;
  }

  section(tier) {
    let s = this.sections.get(tier);
    if (s) return s;
    const info = tierInfo(this.contract, tier);
    const collapsed = Boolean(this.settings.collapsed[tier]);
    const count = el("span", { class: "ms-section-count", "data-testid": "section-count" });
    // What the section holds, by kind ("3 heatmaps · 5 charts · 5 distributions"): a distribution is never counted
    // as a chart of scalars.
    const kinds = el("span", { class: "ms-section-subtitle ms-section-kinds", "data-testid": "section-kinds" });
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
      kinds,
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
    s = { element, grid, panels, hint, body, toggle, count, kinds };
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
    if (!collapsed) for (const view of this.views.values()) if (view.tier === tier && view.active && view.resize) view.resize();
  }

  reconcileCards() {
    // Views of tags that are gone (or moved tier) go; new ones are created by the registry, in its order.
    for (const [key, view] of [...this.views]) {
      const info = this.index.get(key);
      if (!info || info.tier !== view.tier) {
        if (this.observer) this.observer.unobserve(view.element);
        view.destroy();
        this.views.delete(key);
      }
    }
    const byTier = new Map(); // tier -> [info]
    for (const info of this.index.values()) {
      if (!byTier.has(info.tier)) byTier.set(info.tier, []);
      byTier.get(info.tier).push(info);
    }
    const order = this.tiers.concat([...byTier.keys()].filter((t) => !this.tiers.includes(t)));
    clear(this.sectionsHost);
    for (const tier of order) {
      const infos = byTier.get(tier) || [];
      const emptyNote = tierInfo(this.contract, tier).emptyNote;
      if (!infos.length && !emptyNote) continue; // "other" only shows when it has tags
      const s = this.section(tier);
      this.sectionsHost.append(s.element);
      s.count.textContent = String(infos.length);
      s.count.title = kindsText(infos);
      s.kinds.textContent = infos.length ? kindsText(infos) : "";
      const hint = infos.length && this.ours ? partialHint(this.contract, tier, infos.map((i) => i.tag)) : null;
      s.hint.textContent = hint || "";
      s.hint.hidden = !hint;
      if (!infos.length) {
        s.element.dataset.empty = "true";
        clear(s.panels);
        clear(s.grid).append(el("div", { class: "ms-tier-empty", "data-testid": "tier-empty", text: emptyNote }));
        continue;
      }
      s.element.dataset.empty = "false";
      const placeholder = s.grid.querySelector(".ms-tier-empty");
      if (placeholder) placeholder.remove();
      for (const kind of VIEW_KINDS) {
        const tags = infos.filter((i) => i.kind === kind.kind).map((i) => i.tag).sort(kind.order(this.contract));
        for (const tag of tags) {
          const key = viewKey(kind.kind, tag);
          const info = this.index.get(key);
          let view = this.views.get(key);
          if (!view) {
            view = kind.create({ tag, displayName: info.displayName, tier, store: this.store, contract: this.contract });
            this.views.set(key, view);
            if (this.observer) this.observer.observe(view.element);
          } else view.setDisplayName(info.displayName);
          if (view.setSources) view.setSources([...info.sources]);
          s[kind.slot].append(view.element); // appending again keeps the order; the element and its chart stay
          if (!this.observer) view.activate();
        }
      }
    }
  }

  /** A health finding was clicked: scroll to the chart (or heatmap panel) of its tag and shade its step range. */
  revealFinding(run, finding) {
    // A finding's layers link names several heatmaps (fallbackTags): the first one shown wins.
    // Another library's tag of one of our quantities is drawn in our chart (see updateTagIndex).
    const drawnIn = (t) => [...this.index.values()].find((i) => i.kind === "scalar" && i.sources && i.sources.has(t));
    const tags = [finding.tag, ...(finding.fallbackTags || [])].map((t) => (drawnIn(t) ? drawnIn(t).tag : t));
    const tag = tags.find((t) => ["scalar", "layers", "histogram"].some((k) => this.views.has(viewKey(k, t)))) || tags[0];
    let view = null;
    for (const kind of ["scalar", "layers", "histogram"]) view = view || this.views.get(viewKey(kind, tag)) || null;
    if (!view) {
      // A layer's own tag (prefix/param) belongs to the family's heatmap (prefix/*).
      for (const v of this.views.values()) {
        if (v.tag.endsWith("/*") && tag.startsWith(v.tag.slice(0, -1)) && this.views.get(viewKey("layers", v.tag)) === v) view = v;
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
    view.highlight(finding.steps, run);
    this.highlighted = view;
    view.element.scrollIntoView({ block: "center", behavior: "smooth" });
  }

  clearHighlight(view) {
    view.highlight(null);
  }

  onIntersect(entries) {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      const view = [...this.views.values()].find((v) => v.element === entry.target);
      if (view) {
        this.observer.unobserve(entry.target);
        view.activate();
      }
    }
  }

  /** The visible runs that have the series of this index entry, with their colors. */
  runsOf(info) {
    const runs = this.runSelector.visibleRuns().filter((r) => info.runs.has(r));
    // Line charts draw run groups when grouping is on; every view draws at most the selector's limit of runs.
    return this.runSelector.chartRuns(runs, info.kind === "scalar", this.colors);
  }

  redrawAll({ refresh = false } = {}) {
    const opts = this.chartOptions();
    for (const [key, view] of this.views) {
      const info = this.index.get(key);
      const runs = info ? this.runsOf(info) : [];
      // With no checked run the card shrinks to its title and a one-line note.
      view.element.dataset.empty = String(!runs.length);
      view.update(runs, opts, { refresh });
    }
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
