// The Health panel at the top of the tab: per shown run a status badge (ok / warn / error) and the findings of the
// health rules, errors first. Clicking a finding that names a series asks the owner to scroll to its chart and
// highlight the step range. A finding that names the layers where it started also links to the per-layer heatmap
// (the flight recorder's, else the debug tier's) around its steps. Findings that follow from a cause (after the
// first NaN) are listed under it, folded. Open / closed state (the panel and each run) survives refreshes: the
// data is replaced, what the user chose is kept.

import { el, clear } from "../../../base/dom.js";

const LEVEL_RANK = { error: 0, warn: 1, info: 2 };
const STATUS_LABEL = { ok: "ok", warn: "warn", error: "error" };

/** Findings sorted errors first, then warnings, then info; the order of the check is kept within a level. */
export function sortFindings(findings) {
  return findings
    .map((f, i) => ({ f, i }))
    .sort((a, b) => (LEVEL_RANK[a.f.level] ?? 3) - (LEVEL_RANK[b.f.level] ?? 3) || a.i - b.i)
    .map((x) => x.f);
}

/** "14-14" for the data-highlight / data-steps attributes ("" when the finding has no step range). */
export function rangeKey(steps) {
  return steps ? `${steps[0]}-${steps[1]}` : "";
}

/** What a person reads: "step 14" or "steps 120–180" ("" without a range). */
export function rangeLabel(steps) {
  if (!steps) return "";
  return steps[0] === steps[1] ? `step ${steps[0]}` : `steps ${steps[0]}–${steps[1]}`;
}

const STATUS_RANK = { error: 0, warn: 1, ok: 2 };

/** Per-layer heatmaps a finding with layers links to, the first one the run has wins. */
export const LAYER_TAGS = ["debug/flight/layer_grad_norm", "debug/layer_grad_norm", "debug/update_ratio", "diagnostic/layer_weight_norm"];

/** The heatmap window around where a finding started (its first step): 10 steps on each side, from step 0. */
export function heatmapWindow(steps, pad = 10) {
  if (!steps) return null;
  return [Math.max(0, steps[0] - pad), steps[0] + pad];
}

/** What clicking a finding's layers shows: {tag, fallbackTags, steps} for the owner; null without layers or steps,
 * or when the finding is itself on a per-layer heatmap (clicking it already goes there). */
export function layerTarget(finding) {
  if (!finding.layers || !finding.layers.length || !finding.steps || LAYER_TAGS.includes(finding.tag)) return null;
  return { tag: LAYER_TAGS[0], fallbackTags: LAYER_TAGS.slice(1), steps: heatmapWindow(finding.steps) };
}

// The layers link reads as a link under the finding (set through the DOM: the tab's CSP allows no inline styles).
const LINK_STYLE = { margin: "0 0 2px 60px", padding: "0 6px", border: "0", background: "none", color: "#1a73e8", font: "inherit", fontSize: "12px", textDecoration: "underline" };

/** "layers a, b and 2 more" for the link text. */
export function layersLabel(layers, limit = 3) {
  const shown = layers.slice(0, limit).join(", ");
  return `${layers.length === 1 ? "layer" : "layers"} ${shown}${layers.length > limit ? ` and ${layers.length - limit} more` : ""}`;
}

/** The health entries of the shown runs: errors first, then warnings, then ok; the run list's order within each. */
export function shownHealth(health, visibleRuns) {
  const byRun = new Map((health ? health.runs : []).map((r) => [r.run, r]));
  return visibleRuns
    .filter((r) => byRun.has(r))
    .map((r, i) => ({ entry: byRun.get(r), i }))
    .sort((a, b) => (STATUS_RANK[a.entry.status] ?? 3) - (STATUS_RANK[b.entry.status] ?? 3) || a.i - b.i)
    .map((x) => x.entry);
}

/** Counts per status and the worst status ("ok" when there is nothing). */
export function summarize(entries) {
  const counts = { error: 0, warn: 0, ok: 0 };
  for (const e of entries) counts[e.status] = (counts[e.status] || 0) + 1;
  const worst = counts.error ? "error" : counts.warn ? "warn" : "ok";
  return { counts, worst };
}

export class HealthPanel {
  /** @param {{onFinding: (run: string, finding: object) => void}} options */
  constructor({ onFinding }) {
    this.onFinding = onFinding;
    this.health = null;
    this.visibleRuns = [];
    this.error = "";
    this.userOpen = null; // null: open when a shown run is not ok
    this.runOpen = new Map(); // run -> open, where the user chose
    this.active = null; // {run, rule, tag, key} of the finding last clicked
    this.followOpen = new Set(); // causes whose follow-on findings the user unfolded

    this.summaryEl = el("span", { class: "ms-health-summary", "data-testid": "health-summary" });
    this.toggle = el(
      "button",
      {
        type: "button",
        class: "ms-section-toggle",
        "aria-expanded": "false",
        "data-testid": "health-toggle",
        on: { click: () => this.setOpen(this.toggle.getAttribute("aria-expanded") !== "true") },
      },
      el("span", { class: "ms-chevron", "aria-hidden": "true" }),
      el("span", { class: "ms-section-title", text: "Health" }),
      this.summaryEl,
    );
    this.body = el("div", { class: "ms-health-body", "data-testid": "health-body", hidden: true });
    this.element = el(
      "section",
      { class: "ms-health", "data-testid": "health-panel", "data-state": "loading", "data-status": "ok" },
      el("h2", { class: "ms-section-header" }, this.toggle),
      this.body,
    );
    this.summaryEl.textContent = "checking…";
  }

  setHealth(health) {
    this.health = health;
    this.error = "";
    this.render();
  }

  setError(message) {
    this.error = message;
    this.render();
  }

  setRuns(visibleRuns) {
    this.visibleRuns = visibleRuns.slice();
    if (this.health || this.error) this.render();
  }

  setOpen(open) {
    this.userOpen = open;
    this.render();
  }

  isOpen(worst) {
    return this.userOpen === null ? worst !== "ok" : this.userOpen;
  }

  render() {
    const entries = shownHealth(this.health, this.visibleRuns);
    const { counts, worst } = summarize(entries);
    const open = this.isOpen(worst);
    this.element.dataset.state = this.health ? "ready" : this.error ? "error" : "loading";
    this.element.dataset.status = worst;
    this.element.dataset.runs = String(entries.length);
    this.toggle.setAttribute("aria-expanded", String(open));
    this.body.hidden = !open;
    const parts = [];
    if (counts.error) parts.push(`${counts.error} error`);
    if (counts.warn) parts.push(`${counts.warn} warning`);
    if (counts.ok) parts.push(`${counts.ok} ok`);
    this.summaryEl.textContent = this.error && !this.health
      ? "unavailable"
      : !this.health
        ? "checking…"
        : entries.length
          ? parts.join(" · ")
          : "no shown run";
    this.summaryEl.className = `ms-health-summary ms-health-${worst}`;

    clear(this.body);
    if (this.error) {
      this.body.append(el("div", { class: "ms-health-failed", "data-testid": "health-error", text: `Health check failed: ${this.error}` }));
    }
    if (this.health && !entries.length) {
      this.body.append(el("div", { class: "ms-muted", text: "No run selected in the run list has a health report." }));
    }
    for (const entry of entries) this.body.append(this.renderRun(entry));
  }

  renderRun(entry) {
    const findings = sortFindings(entry.findings);
    const open = this.runOpen.has(entry.run) ? this.runOpen.get(entry.run) : entry.status !== "ok";
    const list = el("ul", { class: "ms-health-findings", "data-testid": "health-findings", hidden: !open || !findings.length });
    for (const f of findings) list.append(this.renderFinding(entry.run, f));
    const serious = findings.filter((f) => f.level !== "info").length;
    const head = el(
      "button",
      {
        type: "button",
        class: "ms-health-run-head",
        "aria-expanded": String(open),
        "data-testid": "health-run-toggle",
        disabled: !findings.length,
        on: {
          click: () => {
            this.runOpen.set(entry.run, !open);
            this.render();
          },
        },
      },
      el("span", {
        class: `ms-health-badge ms-health-${entry.status}`,
        "data-testid": "health-badge",
        "data-status": entry.status,
        text: STATUS_LABEL[entry.status] || entry.status,
      }),
      el("span", { class: "ms-health-run-name", text: entry.run, title: entry.run }),
      el("span", {
        class: "ms-muted",
        text: findings.length
          ? `${findings.length} finding${findings.length === 1 ? "" : "s"}${serious ? ` (${serious} to look at)` : ""}`
          : "no findings",
      }),
    );
    return el(
      "div",
      { class: "ms-health-run", "data-testid": "health-run", "data-run": entry.run, "data-status": entry.status },
      head,
      list,
    );
  }

  renderFinding(run, f, nested = false) {
    const key = rangeKey(f.steps);
    const isActive =
      this.active && this.active.run === run && this.active.rule === f.rule && this.active.tag === f.tag && this.active.key === key;
    const content = [
      el("span", { class: `ms-health-level ms-health-${f.level}`, "data-testid": "health-level", text: f.level }),
      el("code", { class: "ms-health-rule", "data-testid": "health-rule", text: f.rule }),
      el("span", { class: "ms-health-message", "data-testid": "health-message", text: f.message }),
      el(
        "span",
        { class: "ms-health-where" },
        f.tag ? el("code", { class: "ms-health-tag", text: f.tag }) : el("span", { class: "ms-muted", text: "whole run" }),
        f.steps ? el("span", { class: "ms-health-steps", "data-testid": "health-steps", text: rangeLabel(f.steps) }) : null,
        f.source && f.source.includes("live")
          ? el("span", { "data-testid": "health-live", text: "seen while training", title: f.action ? `action: ${f.action}` : "" })
          : null,
      ),
    ];
    const attrs = {
      class: "ms-health-finding" + (isActive ? " ms-active" : ""),
      "data-testid": nested ? "health-follow-on" : "health-finding",
      "data-run": run,
      "data-rule": f.rule,
      "data-level": f.level,
      "data-tag": f.tag,
      "data-steps": key,
      "data-layers": (f.layers || []).join(","),
      "data-follow-ons": String((f.followOns || []).length),
      "data-active": String(Boolean(isActive)),
    };
    const body = !f.tag
      ? el("div", { class: "ms-health-finding-body" }, content)
      : el(
          "button",
          {
            type: "button",
            class: "ms-health-finding-body ms-health-link",
            title: `Show ${f.tag}${f.steps ? " at " + rangeLabel(f.steps) : ""}`,
            on: {
              click: () => {
                this.active = { run, rule: f.rule, tag: f.tag, key };
                this.render();
                this.onFinding(run, f);
              },
            },
          },
          content,
        );
    return el("li", attrs, body, this.renderLayerLink(run, f), nested ? null : this.renderFollowOns(run, f));
  }

  /** "layers a, b at steps 4–24": opens the per-layer heatmap around the finding's steps. */
  renderLayerLink(run, f) {
    const target = layerTarget(f);
    if (!target) return null;
    return el(
      "button",
      {
        type: "button",
        class: "ms-health-link ms-health-layers",
        style: LINK_STYLE,
        "data-testid": "health-layers-link",
        "data-heatmap": target.tag,
        "data-window": rangeKey(target.steps),
        title: `Show the per-layer heatmap at ${rangeLabel(target.steps)}`,
        on: { click: () => this.onFinding(run, { ...f, ...target }) },
      },
      `Started in ${layersLabel(f.layers)}: per-layer heatmap at ${rangeLabel(target.steps)}`,
    );
  }

  /** The findings that follow from this one, folded under it (open state kept across refreshes). */
  renderFollowOns(run, f) {
    const list = f.followOns || [];
    if (!list.length) return null;
    const key = `${run}\u0000${f.rule}\u0000${f.tag}\u0000${rangeKey(f.steps)}`;
    const details = el(
      "details",
      { class: "ms-health-follow-ons", "data-testid": "health-follow-ons", open: this.followOpen.has(key), style: { margin: "0 0 4px 6px", fontSize: "12px" } },
      el("summary", {
        class: "ms-muted",
        style: { cursor: "pointer" },
        text: `${list.length} follow-on finding${list.length === 1 ? "" : "s"}${f.steps ? ` from step ${f.steps[0]} on` : ""} (they follow from this one)`,
      }),
      el("ul", { class: "ms-health-findings", style: { paddingLeft: "24px" } }, sortFindings(list).map((g) => this.renderFinding(run, g, true))),
    );
    details.addEventListener("toggle", () => (details.open ? this.followOpen.add(key) : this.followOpen.delete(key)));
    return details;
  }
}
