// Layers of a heatmap as a tree of module paths ("encoder.layers.0.attn.weight" -> encoder / layers / 0 / ...),
// per-layer statistics, marks, and the list of rows to draw for a given expansion, sort and search.
// Pure functions (unit tested without a browser).


export function splitPath(name) {
  const parts = String(name).split(/[./]/).filter((p) => p !== "");
  return parts.length ? parts : [String(name)];
}

const collator = typeof Intl !== "undefined" ? new Intl.Collator(undefined, { numeric: true, sensitivity: "base" }) : null;

/** Natural order: "layers.2" before "layers.10". */
export function compareNames(a, b) {
  if (collator) return collator.compare(a, b) || (a < b ? -1 : a > b ? 1 : 0);
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Module-path tree of layer names. Chains of groups with one child are merged ("encoder.layers"), a group with a
 * single child is replaced by that child.
 * Node: {id, kind: "group"|"layer", label, path (full prefix or name), children, members (layer indices), layer}
 */
export function buildTree(names) {
  const root = { id: "G:", kind: "group", label: "", path: "", children: [], members: [], childMap: new Map() };
  names.forEach((name, index) => {
    const parts = splitPath(name);
    let node = root;
    node.members.push(index);
    for (let d = 0; d < parts.length - 1; d++) {
      const key = "G:" + parts.slice(0, d + 1).join(".");
      let child = node.childMap.get(key);
      if (!child) {
        child = { id: key, kind: "group", label: parts[d], path: parts.slice(0, d + 1).join("."), children: [], members: [], childMap: new Map() };
        node.childMap.set(key, child);
        node.children.push(child);
      }
      child.members.push(index);
      node = child;
    }
    node.children.push({ id: "L:" + index, kind: "layer", label: parts[parts.length - 1], path: name, children: [], members: [index], layer: index });
  });
  const compress = (node) => {
    node.children = node.children.map(compress);
    delete node.childMap;
    if (node.kind === "group" && node !== root && node.children.length === 1) {
      const only = node.children[0];
      return { ...only, label: node.label + "." + only.label };
    }
    return node;
  };
  const out = compress(root);
  // A root with one group child: start at that group's children (no single top row for the whole model).
  return out;
}

function mean(values) {
  let s = 0;
  let n = 0;
  for (const v of values) {
    if (Number.isFinite(v)) {
      s += v;
      n += 1;
    }
  }
  return n ? s / n : NaN;
}

/**
 * Statistics of every layer (row) of a matrix: count of recorded values, finite ones, zeros, non-finite,
 * mean (of log10 for log scales: a geometric mean; zeros count as 1e-12) and the mark. ``marks`` holds the log10
 * thresholds of the "slow" and "fast" marks of an update ratio (from the server's contract).
 * @returns {{count, finite, zeros, nonfinite, meanT: number, mean: number, mark: string|null}[]}
 */
export function layerStats(values, missing, rows, cols, scale, marks = null) {
  const isLog = scale === "ratio" || scale === "log";
  const out = [];
  for (let r = 0; r < rows; r++) {
    let count = 0;
    let finite = 0;
    let zeros = 0;
    let nonfinite = 0;
    let sum = 0;
    const base = r * cols;
    for (let c = 0; c < cols; c++) {
      const i = base + c;
      if (missing && missing[i]) continue;
      count += 1;
      const v = values[i];
      if (!Number.isFinite(v)) {
        nonfinite += 1;
        continue;
      }
      finite += 1;
      if (isLog) {
        if (v <= 0) {
          zeros += 1;
          sum += -12;
        } else sum += Math.log10(v);
      } else sum += v;
    }
    const meanT = finite ? sum / finite : NaN;
    const meanV = isLog ? Math.pow(10, meanT) : meanT;
    let mark = null;
    if (scale === "ratio" && finite) {
      if (zeros === finite) mark = "frozen";
      else if (marks && meanT < marks.slow) mark = "slow";
      else if (marks && meanT > marks.fast) mark = "fast";
    }
    if (!mark && nonfinite) mark = "nonfinite";
    out.push({ count, finite, zeros, nonfinite, meanT, mean: finite ? meanV : NaN, mark });
  }
  return out;
}

/** Mean statistic of a node (the mean of its members' means, on the transformed scale). */
export function nodeMeanT(node, stats) {
  return mean(node.members.map((i) => stats[i] && stats[i].meanT));
}

/**
 * The rows to draw.
 * @param {object} tree  from buildTree
 * @param {{depth: number, toggled: Map<string, boolean>, sort: "name"|"mean-desc"|"mean-asc", search: string,
 *          stats: object[], names: string[]}} opts
 *   depth: groups shallower than this are expanded (Infinity: all); toggled: per-group override (true = expanded).
 *   search: case-insensitive substring; when set, a flat list of the matching layers.
 * @returns {{id, kind, label, fullName, depth, members: number[], layer: number|null, expanded: boolean}[]}
 */
export function visibleRows(tree, { depth = Infinity, toggled = new Map(), sort = "name", search = "", stats = [], names = [] } = {}) {
  const key = (node) => {
    const m = nodeMeanT(node, stats);
    return Number.isFinite(m) ? m : -Infinity;
  };
  const order = (nodes) => {
    const list = [...nodes];
    if (sort === "mean-desc") list.sort((a, b) => key(b) - key(a) || compareNames(a.path, b.path));
    else if (sort === "mean-asc") list.sort((a, b) => key(a) - key(b) || compareNames(a.path, b.path));
    else list.sort((a, b) => compareNames(a.path, b.path));
    return list;
  };
  const rows = [];
  const q = search.trim().toLowerCase();
  if (q) {
    const leaves = [];
    const walk = (node) => {
      if (node.kind === "layer") {
        if (String(names[node.layer] ?? node.path).toLowerCase().includes(q)) leaves.push(node);
      } else node.children.forEach(walk);
    };
    walk(tree);
    for (const node of order(leaves)) {
      rows.push({ id: node.id, kind: "layer", label: node.path, fullName: node.path, depth: 0, members: node.members, layer: node.layer, expanded: false });
    }
    return rows;
  }
  const visit = (node, d) => {
    for (const child of order(node.children)) {
      if (child.kind === "layer") {
        rows.push({ id: child.id, kind: "layer", label: child.label, fullName: child.path, depth: d, members: child.members, layer: child.layer, expanded: false });
        continue;
      }
      const expanded = toggled.has(child.id) ? toggled.get(child.id) : d < depth;
      rows.push({ id: child.id, kind: "group", label: child.label, fullName: child.path, depth: d, members: child.members, layer: null, expanded });
      if (expanded) visit(child, d + 1);
    }
  };
  visit(tree, 0);
  return rows;
}

/** Deepest group level of a tree (for the depth selector). */
export function treeDepth(tree) {
  let best = 0;
  const walk = (node, d) => {
    for (const c of node.children) {
      if (c.kind === "group") {
        best = Math.max(best, d + 1);
        walk(c, d + 1);
      }
    }
  };
  walk(tree, 0);
  return best;
}

/**
 * One row of values for a group: per column the mean of its members' values (geometric mean on log scales,
 * zeros and values <= 0 left out; a non-finite member value makes the cell non-finite), missing where no member
 * has a value.
 * @returns {{values: Float32Array, missing: Uint8Array}}
 */
export function aggregateRow(values, missing, cols, members, scale) {
  const isLog = scale === "ratio" || scale === "log";
  const outV = new Float32Array(cols);
  const outM = new Uint8Array(cols);
  for (let c = 0; c < cols; c++) {
    let s = 0;
    let n = 0;
    let any = false;
    let bad = NaN;
    let zeros = 0;
    for (const r of members) {
      const i = r * cols + c;
      if (missing && missing[i]) continue;
      any = true;
      const v = values[i];
      if (!Number.isFinite(v)) {
        if (Number.isNaN(bad) || Number.isNaN(v)) bad = v;
        n = -1;
        break;
      }
      if (isLog) {
        if (v > 0) {
          s += Math.log10(v);
          n += 1;
        } else zeros += 1;
      } else {
        s += v;
        n += 1;
      }
    }
    if (!any) {
      outM[c] = 1;
      outV[c] = NaN;
    } else if (n < 0) outV[c] = bad;
    else if (n === 0) outV[c] = zeros ? 0 : NaN;
    else outV[c] = isLog ? Math.pow(10, s / n) : s / n;
  }
  return { values: outV, missing: outM };
}

/**
 * The columns of a heatmap that hold the step range ``[from, to]``: ``[first, last]`` (inclusive), or null when the
 * range lies after the last column. ``steps`` are the columns' steps, increasing; a column of merged steps is
 * labelled with its last step, so a column holds the steps after the previous column's up to its own.
 */
export function columnRange(steps, from, to) {
  const n = steps ? steps.length : 0;
  if (!n || !(from <= to)) return null;
  const firstAtOrAfter = (step) => {
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (steps[mid] < step) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
  const first = firstAtOrAfter(from);
  if (first === n) return null;
  return [first, Math.min(firstAtOrAfter(to), n - 1)];
}

/**
 * Step ticks of a heatmap's x axis: round steps (1, 2 or 5 x 10^k apart) at least ``minGap`` pixels apart, each at
 * the column that holds it; the first and last recorded steps are labelled too, aligned inward so no label is cut.
 * @param {number[]} steps  the step of every column, ascending
 * @returns {{col: number, step: number, x: number, align: "start"|"middle"|"end"}[]}
 */
export function stepTicks(steps, width, minGap = 70) {
  const n = steps.length;
  if (!n || !(width > 0)) return [];
  const xOf = (col) => ((col + 0.5) / n) * width;
  const first = steps[0];
  const last = steps[n - 1];
  const ends = [{ col: 0, step: first, x: xOf(0), align: "start" }];
  if (n === 1) return ends;
  ends.push({ col: n - 1, step: last, x: xOf(n - 1), align: "end" });
  const span = last - first;
  const wanted = Math.max(1, Math.floor(width / minGap));
  let incr = 1;
  for (let p = 1; p <= 1e15 && span / incr > wanted; p *= 10) {
    for (const m of [1, 2, 5]) {
      incr = m * p;
      if (span / incr <= wanted) break;
    }
  }
  const inner = [];
  let col = 0;
  for (let s = Math.ceil(first / incr) * incr; s <= last; s += incr) {
    while (col < n - 1 && steps[col + 1] <= s) col += 1;
    const x = xOf(col);
    if (x - ends[0].x < minGap * 0.8 || ends[1].x - x < minGap * 0.8) continue;
    inner.push({ col, step: steps[col], x, align: "middle" });
  }
  return [ends[0], ...inner, ends[1]];
}

/**
 * The one value every recorded cell of a matrix holds, or null when the cells vary: {value, cells} (value NaN when
 * every recorded cell is NaN; cells 0 and value null when nothing was recorded). A heatmap of such a matrix is one
 * solid block, so the panel says so in a line instead.
 */
export function uniformValue(values, missing) {
  let first = null;
  let cells = 0;
  for (let i = 0; i < values.length; i++) {
    if (missing && missing[i]) continue;
    const v = values[i];
    if (cells === 0) first = v;
    else if (!(v === first || (Number.isNaN(v) && Number.isNaN(first)))) return null;
    cells += 1;
  }
  return { value: cells ? first : null, cells };
}
