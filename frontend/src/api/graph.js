// The graphs / graph routes: which runs recorded a model graph, and one run's graph (nodes with scopes, operators,
// shapes and inputs, or a note that it is too large to send node by node).

import { getJson } from "./client.js";

/** The runs with a graph: the graphs route's answer as sent. */
export function fetchGraphs() {
  return getJson("graphs");
}

/** One run's graph: the graph route's answer as sent. */
export function fetchGraph(run) {
  return getJson("graph", { run });
}
