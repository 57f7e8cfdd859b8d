// Chart settings: x axis (step / relative / wall time), log y, smoothing, interval band, superseded segments of
// resumed runs.

import { el } from "../base/dom.js";
import { X_AXIS_LABELS } from "../chart/format.js";
import { X_AXES } from "../base/settings.js";

export class SettingsPanel {
  /** @param {{settings: object, onChange: (changed: string) => void}} options */
  constructor({ settings, onChange }) {
    this.settings = settings;
    this.onChange = onChange;

    const axisButtons = X_AXES.map((axis) =>
      el(
        "label",
        { class: "ms-radio" },
        el("input", {
          type: "radio",
          name: "ms-x-axis",
          value: axis,
          "data-testid": `x-axis-${axis}`,
          checked: settings.xAxis === axis,
          on: {
            change: () => {
              settings.xAxis = axis;
              onChange("xAxis");
            },
          },
        }),
        el("span", { text: X_AXIS_LABELS[axis] }),
      ),
    );

    this.logY = el("input", {
      type: "checkbox",
      "data-testid": "log-y",
      checked: settings.logY,
      on: {
        change: () => {
          settings.logY = this.logY.checked;
          onChange("logY");
        },
      },
    });
    this.showInterval = el("input", {
      type: "checkbox",
      "data-testid": "show-interval",
      checked: settings.showInterval,
      on: {
        change: () => {
          settings.showInterval = this.showInterval.checked;
          onChange("showInterval");
        },
      },
    });

    this.showSuperseded = el("input", {
      type: "checkbox",
      "data-testid": "show-superseded",
      checked: settings.showSuperseded,
      on: {
        change: () => {
          settings.showSuperseded = this.showSuperseded.checked;
          onChange("showSuperseded");
        },
      },
    });

    this.slider = el("input", {
      type: "range",
      class: "ms-slider",
      min: "0",
      max: "0.999",
      step: "0.001",
      value: String(settings.smoothing),
      "aria-label": "Smoothing",
      "data-testid": "smoothing-slider",
      on: { input: () => this.setSmoothing(Number(this.slider.value), "slider") },
    });
    this.number = el("input", {
      type: "number",
      class: "ms-input ms-number",
      min: "0",
      max: "0.999",
      step: "0.01",
      value: String(settings.smoothing),
      "aria-label": "Smoothing value",
      "data-testid": "smoothing-input",
      on: {
        change: () => {
          const v = Number(this.number.value);
          this.setSmoothing(Number.isFinite(v) ? Math.min(Math.max(v, 0), 0.999) : 0, "number");
        },
      },
    });

    this.element = el(
      "div",
      { class: "ms-panel ms-settings", "data-testid": "settings" },
      el("div", { class: "ms-panel-title" }, el("span", { text: "Settings" })),
      el("div", { class: "ms-field" }, el("div", { class: "ms-field-label", text: "Smoothing" }), el("div", { class: "ms-smoothing" }, this.slider, this.number)),
      el("div", { class: "ms-field" }, el("div", { class: "ms-field-label", text: "Horizontal axis" }), el("div", { class: "ms-radios", role: "radiogroup" }, axisButtons)),
      el(
        "div",
        { class: "ms-field ms-checks" },
        el("label", { class: "ms-check" }, this.logY, el("span", { text: "Log scale (y)" })),
        el("label", { class: "ms-check", title: "Min/max of every step between two recorded points, when recorded" }, this.showInterval, el("span", { text: "Min/max band" })),
        el(
          "label",
          { class: "ms-check", title: "A resumed run drawn with the steps a later restart replaced (dashed); the restart is marked either way" },
          this.showSuperseded,
          el("span", { text: "Superseded segments" }),
        ),
      ),
    );
  }

  setSmoothing(value, from) {
    this.settings.smoothing = value;
    if (from !== "slider") this.slider.value = String(value);
    if (from !== "number") this.number.value = String(value);
    this.onChange("smoothing");
  }
}
