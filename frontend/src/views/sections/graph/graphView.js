// The "Model graph" section: the graph a run recorded (SummaryCollector(collect_graph=True), TrainMonitor(graph=True),
// or a converted run's GraphDef), from the graphs / graph routes, as a tree of its cells' scopes: a scope collapses
// and expands, a node shows its operator, output dtype and shape, its scope and its inputs (a click on an input
// goes to that node). A graph too large to send node by node is said as such, with its scopes' node counts. Names
// only ever reach the page as text.

import { fetchGraph, fetchGraphs } from "../../../api/graph.js";
import { el, clear } from "../../../base/dom.js";
import { sectionShell } from "../../sectionShell.js";
import { buildScopeTree, shapeText } from "./graphModel.js";

const EXPAND_DEPTH = 2; // scopes open at first, counted from the top (every scope of a small graph)
const SMALL_GRAPH = 300;
const MAX_ROWS = 3000; // rows drawn at once; more are summarized

class GraphSection {
  constructor() {
    const shell = sectionShell({ testid: "graph-section", title: "Model graph", subtitle: "cells, operators and shapes", settingsKey: "graph" });
    this.element = shell.element;
    this.body = shell.body;
    this.count = shell.count;
    this.runs = [];
    this.run = null;
    this.data = null;
    this.open = new Set();
    this.search = "";
    this.runSelect = el("select", { class: "ms-select", "data-testid": "graph-run", title: "Run", on: { change: () => this.load(this.runSelect.value) } });
    this.searchInput = el("input", {
      type: "search",
      class: "ms-input",
      placeholder: "Search nodes (name or operator)",
      "aria-label": "Search nodes",
      "data-testid": "graph-search",
      on: { input: () => ((this.search = this.searchInput.value.trim().toLowerCase()), this.render()) },
    });
    this.info = el("div", { class: "ms-muted", "data-testid": "graph-info" });
    this.tree = el("div", { class: "ms-graph-tree", "data-testid": "graph-tree", style: { fontFamily: "monospace", fontSize: "12px", maxHeight: "640px", overflow: "auto" } });
    this.body.append(el("div", { class: "ms-heatmap-controls" }, this.runSelect, this.searchInput), this.info, this.tree);
  }

  async refresh() {
    let listing;
    try {
      listing = await fetchGraphs();
    } catch (e) {
      return;
    }
    const runs = Array.isArray(listing.runs) ? listing.runs : [];
    this.element.hidden = runs.length === 0;
    this.count.textContent = runs.length ? String(runs.length) : "";
    const names = runs.map((r) => String(r.run));
    if (JSON.stringify(names) !== JSON.stringify(this.runs)) {
      this.runs = names;
      clear(this.runSelect);
      for (const r of names) this.runSelect.append(el("option", { value: r, text: r }));
    }
    if (!names.includes(this.run) && names.length) this.load(names[0]);
    else this.element.dataset.state = "ready";
  }

  async load(run) {
    this.run = run;
    this.runSelect.value = run;
    this.element.dataset.state = "loading";
    try {
      this.data = await fetchGraph(run);
    } catch (e) {
      this.data = null;
      this.info.textContent = `Could not load the graph of ${run}: ${e && e.message ? e.message : e}`;
      clear(this.tree);
      this.element.dataset.state = "error";
      return;
    }
    this.open = new Set();
    this.render();
    this.element.dataset.state = "ready";
  }

  render() {
    const d = this.data;
    clear(this.tree);
    if (!d) return;
    const ops = Object.entries(d.ops || {})
      .slice(0, 8)
      .map(([op, n]) => `${op} ${n}`)
      .join(", ");
    this.info.textContent = `${d.total_nodes} nodes (step ${d.step}, ${d.source === "mindspore" ? "MindSpore summary file" : "event file"})${ops ? ` · ${ops}` : ""}`;
    if (d.too_large) {
      this.tree.append(el("p", { class: "ms-note ms-note-bad", "data-testid": "graph-too-large", text: d.too_large }));
      for (const [scope, n] of Object.entries(d.scope_counts || {})) this.tree.append(el("div", { "data-testid": "graph-scope-count", text: `${scope}: ${n} nodes` }));
      return;
    }
    const nodes = d.nodes || [];
    this.byId = new Map(nodes.map((n) => [n.id, n]));
    this.expandDepth = nodes.length <= SMALL_GRAPH ? Infinity : EXPAND_DEPTH;
    const shown = this.search ? nodes.filter((n) => n.name.toLowerCase().includes(this.search) || String(n.op).toLowerCase().includes(this.search)) : nodes;
    const root = buildScopeTree(shown);
    this.rows = 0;
    this.renderScope(root, 0, this.tree, Boolean(this.search));
    if (this.rows >= MAX_ROWS) this.tree.append(el("div", { class: "ms-muted", text: `… more rows; search to narrow them down` }));
  }

  renderScope(scope, depth, host, expandAll) {
    for (const child of [...scope.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      if (this.rows >= MAX_ROWS) return;
      const isOpen = expandAll || this.open.has(child.path) || (depth < this.expandDepth && !this.open.has(`-${child.path}`));
      const row = el(
        "div",
        {
          class: "ms-graph-scope",
          "data-testid": "graph-scope",
          "data-path": child.path,
          "data-open": String(isOpen),
          style: { paddingLeft: `${depth * 14}px`, cursor: "pointer", fontWeight: "600" },
          on: {
            click: () => {
              if (isOpen) {
                this.open.delete(child.path);
                this.open.add(`-${child.path}`);
              } else {
                this.open.add(child.path);
                this.open.delete(`-${child.path}`);
              }
              this.render();
            },
          },
        },
        el("span", { text: `${isOpen ? "▾" : "▸"} ${child.name}` }),
        el("span", { class: "ms-muted", text: `  ${child.count} nodes` }),
      );
      host.append(row);
      this.rows += 1;
      if (!isOpen) continue;
      this.renderScope(child, depth + 1, host, expandAll);
      for (const n of child.nodes) {
        if (this.rows >= MAX_ROWS) return;
        host.append(this.nodeRow(n, depth + 1));
        this.rows += 1;
      }
    }
  }

  nodeRow(n, depth) {
    const own = n.name.split("/").pop();
    const inputs = (n.inputs || []).map((id) => this.byId.get(id)).filter(Boolean);
    const row = el(
      "div",
      { class: "ms-graph-node", "data-testid": "graph-node", "data-op": n.op, "data-name": n.name, id: `ms-graph-node-${n.id}`, style: { paddingLeft: `${depth * 14 + 14}px` }, title: n.name },
      el("span", { class: "ms-graph-op", text: n.op }),
      el("span", { text: ` ${own} ` }),
      el("span", { class: "ms-muted", "data-testid": "graph-node-shape", text: shapeText(n.dtype, n.shape) }),
    );
    if (inputs.length) {
      row.append(el("span", { class: "ms-muted", text: " ← " }));
      inputs.slice(0, 8).forEach((src, i) => {
        if (i) row.append(el("span", { class: "ms-muted", text: ", " }));
        row.append(
          el("a", {
            href: "#",
            "data-testid": "graph-input",
            text: src.name.split("/").pop(),
            title: src.name,
            on: {
              click: (e) => {
                e.preventDefault();
                this.reveal(src);
              },
            },
          }),
        );
      });
      if (inputs.length > 8) row.append(el("span", { class: "ms-muted", text: ` +${inputs.length - 8}` }));
    }
    const attrs = Object.entries(n.attrs || {});
    if (attrs.length) row.title = `${n.name}\n${attrs.map(([k, v]) => `${k}: ${v}`).join("\n")}`;
    return row;
  }

  /** Opens the scopes of a node and scrolls to it. */
  reveal(node) {
    const scope = node.kind === "parameter" ? "Parameters" : node.scope || "(top)";
    let path = "";
    for (const part of scope.split("/")) {
      path = path ? `${path}/${part}` : part;
      this.open.add(path);
      this.open.delete(`-${path}`);
    }
    this.render();
    const target = this.tree.querySelector(`#ms-graph-node-${node.id}`);
    if (target) {
      target.scrollIntoView({ block: "center" });
      target.dataset.highlight = "true";
    }
  }
}

/** Mounts the Model graph section (hidden until a run has a graph). */
export function mountGraph(dashboard) {
  const section = new GraphSection();
  const host = (dashboard && dashboard.main) || document.body;
  host.appendChild(section.element);
  // first read once the charts on screen have their series (the dashboard's first listing)
  if (dashboard && dashboard.firstChartsShown) dashboard.firstChartsShown.then(() => section.refresh());
  else section.refresh();
  if (dashboard) dashboard.events.on("refresh", () => section.refresh());
  return section;
}
