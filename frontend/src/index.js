// Entry point of the MindSpore tab. TensorBoard loads this module in the plugin iframe and calls render().

import uplotCss from "uplot/dist/uPlot.min.css?inline";
import appCss from "./styles.css?inline";
import { Dashboard } from "./page/dashboard.js";
import { mountCluster } from "./views/sections/cluster/clusterView.js";
import { mountCompare } from "./views/sections/compare/compareView.js";
import { mountGraph } from "./views/sections/graph/graphView.js";
import { mountLandscapes } from "./views/sections/landscape/landscapeView.js";
import { mountMedia } from "./views/sections/media/mediaView.js";
import { mountRunInfo } from "./views/sections/runInfo/runInfoView.js";

let dashboard = null;

function injectStyles() {
  if (document.getElementById("ms-styles")) return;
  const style = document.createElement("style");
  style.id = "ms-styles";
  style.textContent = uplotCss + "\n" + appCss;
  document.head.appendChild(style);
}

/** Builds the whole page into document.body. Calling it again keeps the page that is already there. */
export function render() {
  if (dashboard) return dashboard;
  injectStyles();
  document.documentElement.classList.add("ms-root");
  const root = document.createElement("div");
  root.id = "ms-root";
  document.body.appendChild(root);
  dashboard = new Dashboard(root);
  dashboard.start();
  mountLandscapes(dashboard); // the Loss landscape section, shown when a run has landscapes
  mountRunInfo(dashboard); // hyperparameters, MindSpore lineage, run information
  mountMedia(dashboard); // ImageSummary images and TensorSummary tensors
  mountCluster(dashboard); // ranks x steps of a multi-rank run, grouped by node
  mountGraph(dashboard); // the model graph a run recorded (cells' scopes, operators, shapes)
  mountCompare(dashboard); // a run against its reference (port check)
  return dashboard;
}
