// The run filter's linear-time matcher: same answers as JavaScript's RegExp on ordinary patterns, no blow-up on the
// patterns that make a backtracking engine take exponential time, and a clear refusal of what it cannot do.
import { test } from "node:test";
import assert from "node:assert/strict";
import { compileSafe } from "../src/base/safeRegex.js";

const NAMES = [
  "lr0.1_bs32", "lr0.01_bs64", "LR0.1_BS32", "2026-12-05_demo_lr=0.001", "run/rank_3", "mnist-resnet50-a",
  "", "a", "aaa", "abcabc", "x.y", "tab\there", "naïve_run", "run 7", "seed_0/lr_1e-3", "λ=0.5", "a\nb",
];
const PATTERNS = [
  "lr0\\.1_", "^lr", "bs\\d+$", "rank_(\\d+)", "lr=([\\d.]+)", "(a|ab)(c|bcd)?", "a*", "a+?", "^$", "\\bdemo\\b",
  "[a-c]+", "[^a-z_]+", "\\w+/\\w+", "(?:lr|bs)(\\d+)", "x.y", "x\\.y", "a{2}", "a{1,2}", "(a{2,})", "\\s",
  "(?<rank>\\d+)$", "[\\d.]+e-\\d", "run|seed", "^(a|b)*$", "(ab)+", "res(net)?(\\d+)", ".", "\\t", "[.]", "-",
  "\\u03bb", "\\x61+", "na.ve", "(x)?y", "^.*$", "b$", "\\B", "[\\]]", "{", "a{,2}",
];

test("same results as RegExp, case-sensitive and not", () => {
  for (const flags of ["", "i"]) {
    for (const p of PATTERNS) {
      const native = new RegExp(p, flags);
      const { regex, error } = compileSafe(p, { ignoreCase: flags === "i" });
      assert.equal(error, null, p);
      for (const name of NAMES) {
        assert.equal(regex.test(name), native.test(name), `${p} /${flags} on ${JSON.stringify(name)}`);
        const a = regex.exec(name);
        const b = native.exec(name);
        assert.deepEqual(a && [...a], b && [...b], `exec ${p} /${flags} on ${JSON.stringify(name)}`);
        if (a) assert.equal(a.index, b.index, p);
      }
    }
  }
});

test("catastrophic patterns run in linear time", () => {
  const name = "a".repeat(5000) + "b";
  for (const p of ["^(a+)+$", "(a|a)*$", "^(a|aa)+$", "(.*a){12}$", "^(\\w+\\s?)*$"]) {
    const { regex, error } = compileSafe(p);
    assert.equal(error, null, p);
    const t0 = Date.now();
    const got = regex.test(name);
    assert.ok(Date.now() - t0 < 2000, `${p} took ${Date.now() - t0} ms`);
    assert.equal(got, new RegExp(p).test("a".repeat(12) + "b"), p); // same answer as RegExp on a short name
  }
});

test("what cannot run in linear time is refused with a reason", () => {
  assert.match(compileSafe("(a)\\1").error, /backreferences/);
  assert.match(compileSafe("(?=a)").error, /lookaround/);
  assert.match(compileSafe("(?<!a)b").error, /lookaround/);
  assert.match(compileSafe("a{1000}{1000}").error, /too large|nothing to repeat/);
  assert.match(compileSafe("(").error, /unterminated/);
  assert.match(compileSafe("a)").error, /unmatched/);
  assert.match(compileSafe("*a").error, /nothing to repeat/);
  assert.match(compileSafe("[a").error, /unterminated/);
  assert.match(compileSafe("[z-a]").error, /out of order/);
});
