"""What a page of the MindSpore tab draws, section by section and view by view, read from the views' data attributes:
the same function reads the tab (in TensorBoard's iframe) and the report (a file opened from disk), so the two can be
compared as dicts."""

import time

# Every view with what it drew: charts (runs, points, non-finite values, scale, lines or points), distributions
# (steps), heatmaps (rows, columns per run, flat or not), the Health panel, loss landscapes, run info, images and
# tensors, the Cluster section.
INVENTORY_JS = r"""() => {
  const all = (sel, root = document) => [...root.querySelectorAll(sel)];
  const visible = (e) => !e.closest("[hidden]");
  const out = { sections: [], charts: {}, distributions: {}, heatmaps: {}, health: {}, landscapes: {}, runinfo: {},
                images: {}, tensors: {}, cluster: null };
  for (const s of all("[data-testid=tier-section]").filter(visible)) {
    out.sections.push(`${s.dataset.tier}: ${s.querySelector("[data-testid=section-kinds]").textContent}`);
  }
  for (const id of ["landscape-section", "runinfo-section", "media-section", "cluster-section"]) {
    const s = document.querySelector(`[data-testid=${id}]`);
    if (s && visible(s)) out.sections.push(id);
  }
  for (const c of all("[data-testid=chart]").filter(visible)) {
    const d = c.dataset;
    out.charts[d.tag] = { state: d.state, runs: d.runCount, points: d.points, nonfinite: d.nonfinite,
                          scale: d.scale, spread: d.spread, drawnAs: d.drawnAs };
  }
  for (const c of all("[data-testid=histogram-chart]").filter(visible)) {
    out.distributions[c.dataset.tag] = { state: c.dataset.state, tier: c.dataset.tier, runs: c.dataset.runCount,
                                         steps: c.dataset.steps };
  }
  for (const p of all("[data-testid=heatmap-panel]").filter(visible)) {
    const maps = all("[data-testid=heatmap]", p).map((h) => `${h.dataset.run}: ${h.dataset.rows} x ${h.dataset.cols}`);
    out.heatmaps[p.dataset.tag] = { state: p.dataset.state, flat: p.dataset.flat, maps };
  }
  for (const g of all("[data-testid=health-run]")) {
    out.health[g.dataset.run] = { status: g.dataset.status,
                                  findings: all("[data-testid=health-finding]", g).map((f) => f.dataset.rule + ":" + f.dataset.level).sort() };
  }
  for (const p of all("[data-testid=landscape-panel]").filter(visible)) {
    out.landscapes[p.dataset.run] = { state: p.dataset.state, tag: p.dataset.tag, step: p.dataset.step, method: p.dataset.method };
  }
  for (const c of all("[data-testid=runinfo-card]").filter(visible)) {
    out.runinfo[c.dataset.run] = all("[data-testid=runinfo-hparam]", c).map((r) => `${r.dataset.name}=${r.dataset.value}`);
  }
  for (const c of all("[data-testid=media-image-card]").filter(visible)) {
    const img = c.querySelector("[data-testid=media-image]");
    out.images[`${c.dataset.run}/${c.dataset.tag}`] = { steps: c.dataset.steps, state: c.dataset.state, image: img.dataset.state,
                                                        size: `${img.dataset.naturalWidth}x${img.dataset.naturalHeight}` };
  }
  for (const c of all("[data-testid=media-tensor-card]").filter(visible)) {
    out.tensors[`${c.dataset.run}/${c.dataset.tag}`] = { steps: c.dataset.steps, state: c.dataset.state, shape: c.dataset.shape };
  }
  const cluster = document.querySelector("[data-testid=cluster-panel]");
  if (cluster && visible(cluster)) {
    out.cluster = { state: cluster.dataset.state, ranks: cluster.dataset.ranks, cols: cluster.dataset.cols,
                    clusters: all("[data-testid=cluster-run] option").map((o) => o.value) };
  }
  return out;
}"""

# Every view has its data: nothing is still loading.
SETTLED_JS = r"""() => {
  const loading = (sel, ok) => [...document.querySelectorAll(sel)].filter((e) => !e.closest("[hidden]") && !ok.includes(e.dataset.state));
  return loading("[data-testid=chart]", ["drawn", "empty"]).length === 0
    && loading("[data-testid=histogram-chart]", ["drawn", "empty"]).length === 0
    && loading("[data-testid=heatmap-panel]", ["drawn", "empty"]).length === 0
    && loading("[data-testid=landscape-panel]", ["drawn", "empty"]).length === 0
    && loading("[data-testid=media-tensor-card]", ["drawn"]).length === 0
    && [...document.querySelectorAll("[data-testid=media-image]")].every((i) => i.dataset.state === "loaded")
    && [...document.querySelectorAll("[data-testid=cluster-panel]")].every((c) => c.closest("[hidden]") || c.dataset.state === "ready")
    && document.querySelector("[data-testid=health-panel]").dataset.state === "ready";
}"""


def scroll_through(frame, scroller="[data-testid=main]", pause=0.3):
    """Scrolls the tab's main column from top to bottom so every view is seen (the tab draws views as they come into
    sight), then back to the top."""
    height = frame.evaluate("(s) => document.querySelector(s).scrollHeight", scroller)
    for y in range(0, height + 800, 600):
        frame.evaluate("([s, y]) => { document.querySelector(s).scrollTop = y; }", [scroller, y])
        time.sleep(pause)
    frame.evaluate("(s) => { document.querySelector(s).scrollTop = 0; }", scroller)


def inventory(frame, timeout=120000):
    """The page's inventory once every view has its data."""
    frame.wait_for_function(SETTLED_JS, timeout=timeout)
    return frame.evaluate(INVENTORY_JS)
