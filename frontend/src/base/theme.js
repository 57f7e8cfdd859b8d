// Dark mode following TensorBoard's theme. TensorBoard puts the class "dark-mode" on its page's <body> (its own
// setting, or the browser's when set to follow it); the plugin frame is served from the same origin, so it reads that
// class and watches it. Where the parent page cannot be read (a frame of another origin, or no parent), the page
// stays light. Sets html.ms-dark and the app's data-theme, and calls onChange(dark) when it changes.

const DARK_CLASS = "dark-mode";

function hostBody() {
  try {
    if (typeof window === "undefined" || !window.parent || window.parent === window) return null;
    return window.parent.document.body || null; // throws for a frame of another origin
  } catch (e) {
    return null;
  }
}

export function followTheme(app, onChange) {
  const body = hostBody();
  let dark = null;
  const apply = () => {
    const now = Boolean(body && body.classList.contains(DARK_CLASS));
    if (now === dark) return;
    dark = now;
    document.documentElement.classList.toggle("ms-dark", dark);
    app.dataset.theme = dark ? "dark" : "light";
    onChange(dark);
  };
  apply();
  if (body && typeof MutationObserver !== "undefined") {
    new MutationObserver(apply).observe(body, { attributes: true, attributeFilter: ["class"] });
  }
  return () => dark;
}

/** A CSS custom property of the page (theme colors for canvas drawing), or the fallback. */
export function themeColor(name, fallback) {
  if (typeof document === "undefined") return fallback;
  const v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
  return v || fallback;
}
