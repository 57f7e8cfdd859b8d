// Regular expressions for names typed into the tab (run filter, grouping), matched in time linear in the name's
// length whatever the pattern: a Pike VM (Thompson's NFA simulation with capture groups, the technique of RE2 and
// Russ Cox's "Regular Expression Matching: the Virtual Machine Approach"). JavaScript's own RegExp backtracks, so a
// pattern such as ^(a+)+$ against a long run name froze the page.
//
// Syntax: JavaScript's, without backreferences and lookaround (they cannot run in linear time; compile says so):
// literals and escapes (\d \w \s \D \W \S \b \B \t \n \r \f \v \0 \xHH \uHHHH, any escaped punctuation), ".",
// classes [a-z] [^...] with escapes, anchors ^ $, groups (...) (?:...) (?<name>...), alternation |, quantifiers
// * + ? {n} {n,} {n,m} and their lazy forms. Matching is leftmost-first, with JavaScript's captures.
// compileSafe(pattern, {ignoreCase}) returns {regex, error}: regex has test(str) and exec(str) like a RegExp
// (exec returns [match, group1, ...] with undefined for groups that did not take part, and .index).

const MAX_PROGRAM = 20000; // instructions: {n,m} repeats are expanded, so a huge count is refused

class SyntaxErrorSafe extends Error {}

function isWord(c) {
  return c !== undefined && /[A-Za-z0-9_]/.test(c);
}

const CLASS_TESTS = {
  d: (c) => c >= "0" && c <= "9",
  w: (c) => isWord(c),
  s: (c) => /\s/.test(c),
};

// -- parser: pattern -> tree ----------------------------------------------------------------------------------------
class Parser {
  constructor(src) {
    this.src = src;
    this.i = 0;
    this.groups = 0;
  }

  peek() {
    return this.src[this.i];
  }

  eat(ch) {
    if (this.src[this.i] === ch) {
      this.i += 1;
      return true;
    }
    return false;
  }

  fail(message) {
    throw new SyntaxErrorSafe(message);
  }

  parse() {
    const node = this.alternation();
    if (this.i < this.src.length) this.fail(this.peek() === ")" ? "unmatched )" : `unexpected ${this.peek()}`);
    return node;
  }

  alternation() {
    const options = [this.sequence()];
    while (this.eat("|")) options.push(this.sequence());
    return options.length === 1 ? options[0] : { type: "alt", options };
  }

  sequence() {
    const items = [];
    while (this.i < this.src.length && this.peek() !== "|" && this.peek() !== ")") items.push(this.repeat());
    return { type: "seq", items };
  }

  repeat() {
    let node = this.atom();
    for (;;) {
      const c = this.peek();
      let min;
      let max;
      if (c === "*") [min, max] = [0, Infinity];
      else if (c === "+") [min, max] = [1, Infinity];
      else if (c === "?") [min, max] = [0, 1];
      else if (c === "{") {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.src.slice(this.i));
        if (!m) return node; // a literal "{", as JavaScript takes it
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === "" ? Infinity : Number(m[3]);
        if (max < min) this.fail("numbers out of order in {} quantifier");
        this.i += m[0].length - 1;
      } else return node;
      this.i += 1;
      if (node.type === "assert" || node.type === "repeat") this.fail("nothing to repeat");
      const lazy = this.eat("?");
      node = { type: "repeat", node, min, max, lazy };
    }
  }

  atom() {
    const c = this.src[this.i++];
    if (c === "(") {
      let capture = true;
      let name = null;
      if (this.eat("?")) {
        if (this.eat(":")) capture = false;
        else if (this.peek() === "<" && this.src[this.i + 1] !== "=" && this.src[this.i + 1] !== "!") {
          const end = this.src.indexOf(">", this.i);
          if (end < 0) this.fail("invalid capture group name");
          name = this.src.slice(this.i + 1, end);
          this.i = end + 1;
        } else this.fail("lookaround is not supported in this filter");
      }
      const index = capture ? ++this.groups : 0;
      const inner = this.alternation();
      if (!this.eat(")")) this.fail("unterminated group");
      return capture ? { type: "group", index, name, node: inner } : inner;
    }
    if (c === "[") return this.charClass();
    if (c === ".") return { type: "char", test: (x) => x !== "\n" && x !== "\r" && x !== "\u2028" && x !== "\u2029" };
    if (c === "^") return { type: "assert", kind: "bol" };
    if (c === "$") return { type: "assert", kind: "eol" };
    if (c === "\\") return this.escape(false);
    if (c === ")" || c === "*" || c === "+" || c === "?") this.fail(c === ")" ? "unmatched )" : "nothing to repeat");
    return { type: "char", literal: c };
  }

  escape(inClass) {
    const c = this.src[this.i++];
    if (c === undefined) this.fail("\\ at end of pattern");
    const lower = c.toLowerCase();
    if (CLASS_TESTS[lower]) {
      return { type: "char", test: CLASS_TESTS[lower], negate: c !== lower };
    }
    if (!inClass && (c === "b" || c === "B")) return { type: "assert", kind: c === "b" ? "word" : "nonword" };
    if (/[1-9]/.test(c) && !inClass) this.fail("backreferences are not supported in this filter");
    if (!inClass && c === "k" && this.peek() === "<") this.fail("backreferences are not supported in this filter");
    const simple = { t: "\t", n: "\n", r: "\r", f: "\f", v: "\v", 0: "\0" };
    if (c === "b" && inClass) return { type: "char", literal: "\b" };
    if (simple[c] !== undefined) return { type: "char", literal: simple[c] };
    if (c === "x" || c === "u") {
      const digits = c === "x" ? 2 : 4;
      const hex = this.src.slice(this.i, this.i + digits);
      if (hex.length === digits && /^[0-9a-fA-F]+$/.test(hex)) {
        this.i += digits;
        return { type: "char", literal: String.fromCharCode(parseInt(hex, 16)) };
      }
    }
    return { type: "char", literal: c };
  }

  charClass() {
    const negate = this.eat("^");
    const parts = [];
    while (this.i < this.src.length && this.peek() !== "]") {
      let low = this.classAtom();
      if (this.peek() === "-" && this.src[this.i + 1] !== "]" && this.src[this.i + 1] !== undefined && low.literal !== undefined) {
        this.i += 1;
        const high = this.classAtom();
        if (high.literal === undefined) this.fail("invalid character class range");
        if (high.literal < low.literal) this.fail("range out of order in character class");
        const [a, b] = [low.literal, high.literal];
        low = { test: (x) => x >= a && x <= b };
      }
      parts.push(low);
    }
    if (!this.eat("]")) this.fail("unterminated character class");
    const tests = parts.map((p) => {
      if (p.literal !== undefined) return ((lit) => (x) => x === lit)(p.literal);
      return p.negate ? ((t) => (x) => !t(x))(p.test) : p.test;
    });
    return { type: "char", test: (x) => tests.some((t) => t(x)), negate };
  }

  classAtom() {
    const c = this.src[this.i++];
    if (c === "\\") return this.escape(true);
    return { literal: c };
  }
}

// -- compiler: tree -> program ------------------------------------------------------------------------------------
function compileTree(tree, ignoreCase) {
  const prog = [];
  const emit = (ins) => {
    if (prog.length >= MAX_PROGRAM) throw new SyntaxErrorSafe("pattern too large for this filter");
    prog.push(ins);
    return prog.length - 1;
  };
  const fold = (x) => (x === undefined ? x : x.toLowerCase());
  const charTest = (node) => {
    if (node.literal !== undefined) {
      const lit = node.literal;
      if (!ignoreCase) return (x) => x === lit;
      const l = fold(lit);
      return (x) => x !== undefined && fold(x) === l;
    }
    const t = node.test;
    const negate = Boolean(node.negate);
    // Case folding applies to the set, before it is negated ([^a-z] under i matches no letter at all).
    if (!ignoreCase) return (x) => x !== undefined && t(x) !== negate;
    return (x) => x !== undefined && (t(x) || t(x.toLowerCase()) || t(x.toUpperCase())) !== negate;
  };
  const gen = (node) => {
    switch (node.type) {
      case "char":
        emit({ op: "char", test: charTest(node) });
        break;
      case "assert":
        emit({ op: "assert", kind: node.kind });
        break;
      case "seq":
        for (const item of node.items) gen(item);
        break;
      case "group":
        emit({ op: "save", slot: 2 * node.index });
        gen(node.node);
        emit({ op: "save", slot: 2 * node.index + 1 });
        break;
      case "alt": {
        const jumps = [];
        node.options.forEach((option, k) => {
          if (k < node.options.length - 1) {
            const split = emit({ op: "split", x: 0, y: 0 });
            prog[split].x = prog.length;
            gen(option);
            jumps.push(emit({ op: "jmp", to: 0 }));
            prog[split].y = prog.length;
          } else gen(option);
        });
        for (const j of jumps) prog[j].to = prog.length;
        break;
      }
      case "repeat": {
        const { min, max, lazy } = node;
        for (let k = 0; k < min; k++) gen(node.node);
        if (max === Infinity) {
          const split = emit({ op: "split", x: 0, y: 0 });
          const body = prog.length;
          gen(node.node);
          emit({ op: "jmp", to: split });
          const after = prog.length;
          Object.assign(prog[split], lazy ? { x: after, y: body } : { x: body, y: after });
        } else {
          const splits = [];
          for (let k = min; k < max; k++) {
            const split = emit({ op: "split", x: 0, y: 0 });
            splits.push(split);
            prog[split].body = prog.length;
            gen(node.node);
          }
          const after = prog.length;
          for (const s of splits) Object.assign(prog[s], lazy ? { x: after, y: prog[s].body } : { x: prog[s].body, y: after });
        }
        break;
      }
      default:
        throw new SyntaxErrorSafe("internal: unknown node");
    }
  };
  gen(tree);
  emit({ op: "match" });
  return prog;
}

// -- the VM ---------------------------------------------------------------------------------------------------------
function assertHolds(kind, str, i) {
  if (kind === "bol") return i === 0;
  if (kind === "eol") return i === str.length;
  const boundary = isWord(str[i - 1]) !== isWord(str[i]);
  return kind === "word" ? boundary : !boundary;
}

function run(prog, slots, str) {
  // seen[pc] === position + 1: pc already has a thread at that position (each pc once per position, so the work
  // per character is bounded by the program's size). Threads are kept in priority order.
  const seen = new Int32Array(prog.length).fill(-1);
  const addThread = (list, pc, caps, pos) => {
    const mark = pos + 1;
    const stack = [[pc, caps]];
    while (stack.length) {
      const [p, c] = stack.pop();
      if (seen[p] === mark) continue;
      seen[p] = mark;
      const ins = prog[p];
      if (ins.op === "jmp") stack.push([ins.to, c]);
      else if (ins.op === "split") {
        stack.push([ins.y, c]); // popped after everything reachable from x: x has priority
        stack.push([ins.x, c]);
      } else if (ins.op === "save") {
        const copy = c.slice();
        copy[ins.slot] = pos;
        stack.push([p + 1, copy]);
      } else if (ins.op === "assert") {
        if (assertHolds(ins.kind, str, pos)) stack.push([p + 1, c]);
      } else list.push([p, c]);
    }
  };
  let clist = [];
  let matched = null;
  for (let i = 0; i <= str.length; i++) {
    if (matched === null) {
      // a match starting here has the lowest priority: after the threads already running
      const caps = new Array(slots).fill(-1);
      caps[0] = i;
      addThread(clist, 0, caps, i);
    }
    if (!clist.length) {
      if (matched !== null) break;
      continue; // nothing started here (an assertion failed): try the next position
    }
    const nlist = [];
    const ch = str[i];
    for (const [pc, caps] of clist) {
      const ins = prog[pc];
      if (ins.op === "match") {
        matched = caps.slice();
        matched[1] = i;
        break; // the lower-priority threads are cut off (leftmost-first, as JavaScript)
      }
      if (ins.op === "char" && i < str.length && ins.test(ch)) addThread(nlist, pc + 1, caps, i + 1);
    }
    clist = nlist;
  }
  return matched;
}

/** {regex, error}: a linear-time matcher for ``pattern`` (or the reason it cannot be one). */
export function compileSafe(pattern, { ignoreCase = false } = {}) {
  try {
    const parser = new Parser(String(pattern));
    const tree = parser.parse();
    const groups = parser.groups;
    // slot 0 / 1: the whole match; 2k / 2k + 1: group k
    const prog = compileTree({ type: "seq", items: [tree] }, ignoreCase);
    const slots = 2 * (groups + 1);
    const regex = {
      source: String(pattern),
      exec(str) {
        const s = String(str);
        const caps = run(prog, slots, s);
        if (!caps) return null;
        const out = [];
        for (let g = 0; g <= groups; g++) {
          const a = caps[2 * g];
          const b = caps[2 * g + 1];
          out.push(a >= 0 && b >= 0 ? s.slice(a, b) : undefined);
        }
        out.index = caps[0];
        return out;
      },
      test(str) {
        return run(prog, slots, String(str)) !== null;
      },
    };
    return { regex, error: null };
  } catch (e) {
    if (e instanceof SyntaxErrorSafe) return { regex: null, error: e.message };
    throw e;
  }
}
