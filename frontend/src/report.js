// Entry point of the self-contained report (tb-mindspore report). The report file inlines this bundle and the data
// (<script type="application/json" id="ms-report-data">); the page is the tab's own dashboard, Health panel,
// heatmaps, loss landscapes, run information, images and tensors and Cluster section, with every route answered
// from that data (reportData.js) and images from data URLs in it, so it
// opens from disk with no server and no network. Every chart is drawn at once and the page scrolls as one document
// (a report is read top to bottom, printed or saved), and the page keeps no settings between reports.

import uplotCss from "uplot/dist/uPlot.min.css?inline";
import appCss from "./styles.css?inline";
import { imageDataUrl, reportFetch } from "./api/report.js";
import { setImageSource } from "./api/runData.js";
import { el } from "./base/dom.js";
import { Dashboard } from "./page/dashboard.js";
import { mountCluster } from "./views/sections/cluster/clusterView.js";
import { mountLandscapes } from "./views/sections/landscape/landscapeView.js";
import { mountMedia } from "./views/sections/media/mediaView.js";
import { mountRunInfo } from "./views/sections/runInfo/runInfoView.js";
import { mountGraph } from "./views/sections/graph/graphView.js";

const REPORT_CSS = `
.ms-report-note { padding: 6px 16px; font-size: 12px; color: var(--ms-muted, #666); }
.ms-report [data-testid=refresh], .ms-report [data-testid=last-updated], .ms-report .ms-check { display: none; }
html.ms-report, html.ms-report body, .ms-report .ms-app { height: auto; }
.ms-report .ms-main { overflow: visible; }
.ms-report .ms-sidebar { position: sticky; top: 0; align-self: flex-start; max-height: 100vh; }
`;

function readData() {
  const node = document.getElementById("ms-report-data");
  return JSON.parse(node ? node.textContent : "{}");
}

/** Settings of one report stay with that page: a report opened from disk must not inherit the last one's. */
function forgetStorage() {
  try {
    Object.defineProperty(globalThis, "localStorage", { value: null, configurable: true });
  } catch (e) {
    /* then settings persist like the tab's */
  }
}

function main() {
  const data = readData();
  globalThis.fetch = reportFetch(data);
  setImageSource((run, tag, step) => imageDataUrl(data, run, tag, step));
  forgetStorage();
  const style = document.createElement("style");
  style.id = "ms-styles";
  style.textContent = uplotCss + "\n" + appCss + "\n" + REPORT_CSS;
  document.head.appendChild(style);
  document.documentElement.classList.add("ms-root", "ms-report");
  const meta = data.meta || {};
  const root = el("div", { id: "ms-root" });
  const note = el("div", {
    class: "ms-report-note",
    "data-testid": "report-note",
    text: `Report of ${meta.source || "?"}: ${meta.runs || 0} run(s), written ${meta.generated || "?"} by tb-plugin-mindspore ${meta.version || ""}`,
  });
  const leftOut = Array.isArray(data.left_out) ? data.left_out : [];
  if (leftOut.length) {
    const first = leftOut[0];
    note.dataset.leftOut = String(leftOut.length);
    note.append(` · ${leftOut.length} series could not be read, e.g. ${first.tag} of ${first.run}: ${first.reason || "?"}`);
  }
  document.body.append(note, root);
  const dashboard = new Dashboard(root);
  // Draw every view at once instead of when it scrolls into sight: each view is "seen" right after the dashboard
  // has given it its runs.
  if (dashboard.observer) dashboard.observer.disconnect();
  dashboard.observer = {
    observe: (target) => setTimeout(() => dashboard.onIntersect([{ isIntersecting: true, target }]), 0),
    unobserve: () => {},
  };
  dashboard.settings.autoRefresh = false;
  dashboard.app.dataset.report = "true";
  dashboard.start();
  // The sections the tab mounts beside the dashboard, in the tab's order (index.js).
  mountLandscapes(dashboard);
  mountRunInfo(dashboard);
  mountMedia(dashboard);
  mountCluster(dashboard);
  mountGraph(dashboard); // the model graph a run recorded
  window.msReport = dashboard;
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", main);
else main();
