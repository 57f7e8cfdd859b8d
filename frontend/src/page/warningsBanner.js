// The banner of what the readers left out: damaged records of MindSpore summary files, files no reader may open
// (FIFOs, link loops, impossible record lengths), unreadable series, malformed landscapes or run information. The
// status route lists where (run, file, byte offset, reason). Shown only when there is something to say; the list
// opens on demand and stays open across refreshes.

import { el, clear } from "../base/dom.js";

/** "1 unreadable input left out" / "3 unreadable inputs left out". */
export function warningsTitle(n) {
  return `${n} unreadable input${n === 1 ? "" : "s"} left out`;
}

export class WarningsBanner {
  constructor() {
    this.open = false;
    this.countEl = el("span", { class: "ms-warnings-title", "data-testid": "warnings-title" });
    this.toggle = el(
      "button",
      {
        type: "button",
        class: "ms-link-button",
        "aria-expanded": "false",
        "data-testid": "warnings-toggle",
        on: { click: () => this.setOpen(!this.open) },
      },
      "Show where",
    );
    this.list = el("ul", { class: "ms-warnings-list", "data-testid": "warnings-list", hidden: true });
    this.element = el(
      "div",
      { class: "ms-warnings", role: "status", "data-testid": "warnings-banner", "data-count": "0", hidden: true },
      el(
        "div",
        { class: "ms-warnings-head" },
        this.countEl,
        el("span", { class: "ms-muted", text: "Records or files under the logdir could not be read; the rest is shown." }),
        this.toggle,
      ),
      this.list,
    );
  }

  setOpen(open) {
    this.open = open;
    this.toggle.setAttribute("aria-expanded", String(open));
    this.toggle.textContent = open ? "Hide" : "Show where";
    this.list.hidden = !open;
  }

  /** @param {{run: string, file: string, offset: number|null, reason: string}[]} warnings */
  update(warnings) {
    const items = Array.isArray(warnings) ? warnings : [];
    this.element.hidden = !items.length;
    this.element.dataset.count = String(items.length);
    this.countEl.textContent = warningsTitle(items.length);
    clear(this.list);
    for (const w of items) {
      const offset = w.offset === null || w.offset === undefined ? "" : String(w.offset);
      this.list.append(
        el(
          "li",
          {
            class: "ms-warnings-item",
            "data-testid": "warning-item",
            "data-run": String(w.run || ""),
            "data-file": String(w.file || ""),
            "data-offset": offset,
          },
          el("code", { text: String(w.file || "") }),
          offset ? el("span", { text: ` at byte ${offset}` }) : null,
          w.reason ? el("span", { class: "ms-muted", text: `: ${w.reason}` }) : null,
        ),
      );
    }
    this.setOpen(this.open);
  }
}
