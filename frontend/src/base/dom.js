// Tiny DOM helpers. Text always goes in through textContent: names from the data (runs, tags, layers) are never
// parsed as HTML.

/**
 * el("div", {class: "x", dataset: {tag: "a"}, on: {click: fn}}, child, "text", ...)
 * Attributes are set with setAttribute (never innerHTML); string children become text nodes.
 */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = String(value);
      else if (key === "dataset") Object.assign(node.dataset, value);
      else if (key === "style" && typeof value === "object") Object.assign(node.style, value);
      else if (key === "on") for (const [ev, fn] of Object.entries(value)) node.addEventListener(ev, fn);
      else if (key in node && typeof value !== "string") node[key] = value;
      else node.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

export function clear(node) {
  while (node.firstChild) node.removeChild(node.firstChild);
  return node;
}

/** CSS-safe-ish id fragment for data-testid values (names themselves stay in data-* attributes). */
export function slug(text) {
  return String(text).replace(/[^A-Za-z0-9_-]+/g, "_");
}
