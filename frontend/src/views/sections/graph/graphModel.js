// The model graph as the page shows it: a tree of the cells' scopes, and a node's output as text. Pure functions
// (unit tested without a browser).

export function shapeText(dtype, shape) {
  const dims = (s) => (Array.isArray(s) && s.every((d) => typeof d === "number") ? `[${s.join(", ")}]` : "?");
  if (shape === null || shape === undefined) return dtype || "";
  if (Array.isArray(shape) && shape.length && Array.isArray(shape[0])) return `${dtype} (${shape.map(dims).join(", ")})`;
  return `${dtype || ""}${dims(shape)}`;
}

/** A scope tree of the nodes: {name, path, children: Map, nodes: [node], count}. */
export function buildScopeTree(nodes) {
  const root = { name: "", path: "", children: new Map(), nodes: [], count: 0 };
  for (const n of nodes) {
    const scope = n.kind === "parameter" ? "Parameters" : n.scope || "(top)";
    let at = root;
    at.count += 1;
    let path = "";
    for (const part of scope.split("/")) {
      path = path ? `${path}/${part}` : part;
      if (!at.children.has(part)) at.children.set(part, { name: part, path, children: new Map(), nodes: [], count: 0 });
      at = at.children.get(part);
      at.count += 1;
    }
    at.nodes.push(n);
  }
  return root;
}
