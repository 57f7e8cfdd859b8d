// The empty state: tells the user why there is nothing to draw, from the backend's /status answer.

import { el } from "../base/dom.js";

const TITLES = {
  no_logdir: "TensorBoard has no log directory",
  no_event_files: "No event files under the log directory",
  only_ms_files: "MindSpore summary files with no curves yet",
  only_rank_files: "Only per-rank statistics files",
  waiting_for_flush: "Waiting for the first data",
  no_scalars: "No scalar series yet",
};

const HINTS = {
  no_logdir: [
    "Start TensorBoard with a log directory, e.g. tensorboard --logdir ./summary_log",
  ],
  no_event_files: [
    "Check the path. A relative --logdir is resolved from the folder where tensorboard was started.",
    "Event files are named events.out.tfevents.*; TensorBoard searches the log directory and its subfolders.",
    "A recorded run shows up here within seconds; this page checks again by itself.",
  ],
  only_ms_files: [
    "This tab reads MindSpore's own files (SummaryCollector, SummaryRecord, summary ops) directly: their scalars and histograms appear here as soon as they are written.",
    "An evaluation-only run (SummaryCollector in Model.eval) writes only a lineage file: its metrics and dataset pipeline are under Run info below.",
  ],
  only_rank_files: [
    "The log directory holds per-rank statistics (cluster/rank<k>.tbmsrank): step times, data wait, memory and local loss of every rank, for the Cluster view.",
    "The charts need event files: TrainMonitor writes them on rank 0 (on every rank with all_ranks=True).",
  ],
  waiting_for_flush: [
    "Event files exist but hold no data yet: the writer has not flushed its first values.",
    "This page refreshes by itself; data appears within a few seconds of the first recorded step.",
  ],
  no_scalars: [
    "The event files hold no scalar series that this tab can draw.",
    "Core curves (loss, learning rate, gradient norm) come from this plugin's training callback.",
  ],
};

/**
 * @param {object|null} status  the /status answer, or null when it could not be read
 * @param {string|null} error   message of a failed request, if any
 */
export function renderEmptyState(status, error) {
  const reason = (status && status.reason) || (error ? "error" : "no_data");
  const title = TITLES[reason] || (error ? "Could not load the MindSpore data" : "No data to show");
  const message = (status && status.message) || error || "There is no data to show for this log directory.";
  const box = el(
    "div",
    { class: "ms-empty", "data-testid": "empty-state", "data-reason": reason, role: "status" },
    el("div", { class: "ms-empty-icon", "aria-hidden": "true", text: "∅" }),
    el("h2", { class: "ms-empty-title", "data-testid": "empty-title", text: title }),
    el("p", { class: "ms-empty-message", "data-testid": "empty-message", text: message }),
  );
  const spec = status && typeof status.started_with === "string" && status.started_with.startsWith("--logdir_spec");
  if (spec) {
    box.append(
      el(
        "p",
        { class: "ms-empty-logdir" },
        el("span", { class: "ms-muted", text: "TensorBoard was started with: " }),
        el("code", { "data-testid": "empty-logdir", text: status.started_with }),
      ),
    );
  } else if (status && typeof status.logdir === "string") {
    box.append(
      el(
        "p",
        { class: "ms-empty-logdir" },
        el("span", { class: "ms-muted", text: "Log directory: " }),
        el("code", { "data-testid": "empty-logdir", text: status.logdir || "(none)" }),
      ),
    );
    const abs = typeof status.logdir_abs === "string" ? status.logdir_abs : "";
    if (abs && abs !== status.logdir) {
      box.append(
        el(
          "p",
          { class: "ms-empty-logdir" },
          el("span", { class: "ms-muted", text: "Resolved to: " }),
          el("code", { "data-testid": "empty-logdir-abs", text: abs }),
          typeof status.server_cwd === "string" && status.server_cwd
            ? el("span", { class: "ms-muted", text: ` (relative to ${status.server_cwd}, where TensorBoard was started)` })
            : null,
        ),
      );
    }
  }
  const counts = status && status.counts;
  if (counts && typeof counts === "object") {
    const parts = [];
    if (Number.isFinite(counts.event_files)) parts.push(`${counts.event_files} event file(s)`);
    if (Number.isFinite(counts.ms_files)) parts.push(`${counts.ms_files} MindSpore _MS file(s)`);
    if (Number.isFinite(counts.runs)) parts.push(`${counts.runs} run(s)`);
    if (parts.length) box.append(el("p", { class: "ms-muted ms-empty-counts", text: "Found: " + parts.join(", ") }));
  }
  const hints = HINTS[reason];
  if (hints) box.append(el("ul", { class: "ms-empty-hints" }, hints.map((h) => el("li", { text: h }))));
  return box;
}
