import assert from "node:assert/strict";
import { test } from "node:test";

import { normalizeHealth } from "../src/api/client.js";
import { rangeKey, rangeLabel, shownHealth, sortFindings, summarize } from "../src/views/sections/health/healthPanel.js";
import { warningsTitle } from "../src/page/warningsBanner.js";

test("normalizeHealth fills every field and decodes the step range", () => {
  const h = normalizeHealth({
    runs: [
      {
        run: "a",
        status: "error",
        findings: [
          { rule: "nonfinite", level: "error", message: "NaN", tag: "core/loss", steps: [14, 48] },
          { rule: "run_unfinished", level: "warn", message: "m", tag: "", steps: [] },
          { rule: "x", level: "bogus", message: "m", tag: "t", steps: [7] },
        ],
      },
      { run: "b", status: "weird" },
    ],
  });
  assert.equal(h.runs.length, 2);
  assert.deepEqual(h.runs[0].findings[0].steps, [14, 48]);
  assert.equal(h.runs[0].findings[1].steps, null);
  assert.equal(h.runs[0].findings[1].tag, "");
  assert.deepEqual(h.runs[0].findings[2].steps, [7, 7]);
  assert.equal(h.runs[0].findings[2].level, "info");
  assert.equal(h.runs[1].status, "ok");
  assert.deepEqual(h.runs[1].findings, []);
  assert.deepEqual(normalizeHealth(null), { runs: [] });
});

test("sortFindings puts errors first and keeps the order within a level", () => {
  const f = (rule, level) => ({ rule, level });
  const sorted = sortFindings([f("a", "info"), f("b", "warn"), f("c", "error"), f("d", "warn"), f("e", "error")]);
  assert.deepEqual(sorted.map((x) => x.rule), ["c", "e", "b", "d", "a"]);
});

test("step range key and label", () => {
  assert.equal(rangeKey([14, 14]), "14-14");
  assert.equal(rangeKey(null), "");
  assert.equal(rangeLabel([14, 14]), "step 14");
  assert.equal(rangeLabel([120, 180]), "steps 120–180");
  assert.equal(rangeLabel(null), "");
});

test("only shown runs, worst first; summary and worst status", () => {
  const health = { runs: [{ run: "a", status: "ok" }, { run: "b", status: "warn" }, { run: "c", status: "error" }] };
  assert.deepEqual(shownHealth(health, ["a", "c", "zz"]).map((r) => r.run), ["c", "a"]);
  assert.deepEqual(shownHealth(health, ["a", "b", "c"]).map((r) => r.run), ["c", "b", "a"]);
  assert.deepEqual(shownHealth(null, ["a"]), []);
  assert.deepEqual(summarize(shownHealth(health, ["a", "b"])), { counts: { error: 0, warn: 1, ok: 1 }, worst: "warn" });
  assert.equal(summarize([]).worst, "ok");
});

test("warnings title", () => {
  assert.equal(warningsTitle(1), "1 unreadable input left out");
  assert.equal(warningsTitle(3), "3 unreadable inputs left out");
});
