// What the sections below the dashboard share: a collapsible section shell like the dashboard's (its collapsed
// state kept in localStorage) and the styles of the run data sections (Run info, Media).

import css from "./runData.css?inline";
import { el } from "../base/dom.js";

export function injectRunDataStyles() {
  if (document.getElementById("ms-rundata-styles")) return;
  const style = document.createElement("style");
  style.id = "ms-rundata-styles";
  style.textContent = css;
  document.head.appendChild(style);
}

function loadCollapsed(key) {
  try {
    return Boolean(JSON.parse(localStorage.getItem(key) || "{}").collapsed);
  } catch (e) {
    return false;
  }
}

function saveCollapsed(key, collapsed) {
  try {
    localStorage.setItem(key, JSON.stringify({ collapsed }));
  } catch (e) {
    /* storage may be unavailable */
  }
}

/** A collapsible section shell like the dashboard's: {element, body, count, setCollapsed}. */
export function sectionShell({ testid, title, subtitle, settingsKey, extraClass }) {
  let collapsed = loadCollapsed(settingsKey);
  const count = el("span", { class: "ms-section-count", "data-testid": `${testid}-count` });
  const body = el("div", { class: "ms-section-body", hidden: collapsed });
  const toggle = el(
    "button",
    {
      type: "button",
      class: "ms-section-toggle",
      "aria-expanded": String(!collapsed),
      "data-testid": `${testid}-toggle`,
      on: {
        click: () => {
          collapsed = !collapsed;
          saveCollapsed(settingsKey, collapsed);
          toggle.setAttribute("aria-expanded", String(!collapsed));
          body.hidden = collapsed;
        },
      },
    },
    el("span", { class: "ms-chevron", "aria-hidden": "true" }),
    el("span", { class: "ms-section-title", text: title }),
    count,
    el("span", { class: "ms-section-subtitle", text: subtitle }),
  );
  const element = el(
    "section",
    { class: `ms-section ${extraClass || ""}`, "data-testid": testid, "data-state": "loading", hidden: true },
    el("h2", { class: "ms-section-header" }, toggle),
    body,
  );
  return { element, body, count };
}
