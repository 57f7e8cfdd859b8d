// The routes of a report file (tb-mindspore report): answers the page's requests from the data inlined in the
// file, in the shape the plugin's routes answer them, so the tab's own views draw a report unchanged. Pure: no DOM.
//
// data: {routes: {runs, status, tags, contract, health, run_info, landscapes, media, clusters},
//        scalars / layers / histograms / tensors / images: {run: {tag: answer}}, landscape: {run: {tag: {last | step:
//        answer}}}, image_bytes: {run: {tag: {step: data URL}}}, cluster: {run: {metric: answer}},
//        cluster_ranks: {run: {metric: {rank: answer}}},
//        table: {run: {tag: answer}}, graph: {run: {graph: answer}}, markers / samples: {run: answer}}

const own = (obj, key) => obj !== null && typeof obj === "object" && Object.prototype.hasOwnProperty.call(obj, key);
const pick = (obj, ...keys) => keys.reduce((o, k) => (own(o, k) ? o[k] : undefined), obj);

function notFound(what) {
  return { status: 404, body: { error: { code: 404, message: `${what} is not part of this report` } } };
}

/** The answer to a relative route URL ("scalars_batch?run=a&tag=b"): {status, body}. */
export function answer(data, url) {
  const [route, query = ""] = String(url).split("?", 2);
  const params = new URLSearchParams(query);
  const run = params.get("run");
  const tag = params.get("tag");
  if (route === "scalars_batch") {
    const series = [];
    const missing = [];
    for (const r of params.getAll("run")) {
      for (const t of params.getAll("tag")) {
        const s = pick(data, "scalars", r, t);
        if (s) series.push(s);
        else missing.push([r, t]);
      }
    }
    return { status: 200, body: { series, missing } };
  }
  if (route === "scalars") {
    const s = pick(data, "scalars", run, tag);
    return s ? { status: 200, body: s } : notFound(`the series ${tag} of run ${run}`);
  }
  if (route === "layers" || route === "histograms") {
    if (route === "layers" && params.has("layer")) {
      return notFound(`one layer at full precision (${params.get("layer")})`);
    }
    const body = pick(data, route, run, tag);
    return body ? { status: 200, body } : notFound(`${tag} of run ${run}`);
  }
  if (route === "tensors" || route === "images") {
    const body = pick(data, route, run, tag);
    return body ? { status: 200, body } : notFound(`${tag} of run ${run}`);
  }
  if (route === "cluster") {
    const metric = params.get("metric");
    if (params.has("rank")) {
      const body = pick(data, "cluster_ranks", run, metric, params.get("rank"));
      return body ? { status: 200, body } : notFound(`the curve of rank ${params.get("rank")} (the report keeps the first ranks' curves)`);
    }
    const body = pick(data, "cluster", run, metric);
    return body ? { status: 200, body } : notFound(`${metric} of cluster ${run}`);
  }
  if (route === "table") {
    const body = pick(data, "table", run, tag);
    if (body && params.has("step") && Number(params.get("step")) !== body.step) return notFound(`${tag} of run ${run} at step ${params.get("step")}`);
    return body ? { status: 200, body } : notFound(`${tag} of run ${run}`);
  }
  if (route === "graph" || route === "markers" || route === "samples") {
    const body = route === "graph" ? pick(data, "graph", run, "graph") : pick(data, route, run);
    return body ? { status: 200, body } : notFound(`the ${route} of run ${run}`);
  }
  if (route === "landscape") {
    const body = pick(data, "landscape", run, tag, params.has("step") ? params.get("step") : "last");
    return body ? { status: 200, body } : notFound(`the landscape ${tag} of run ${run}`);
  }
  if (route === "health" && run !== null) {
    const all = pick(data, "routes", "health");
    const runs = all && Array.isArray(all.runs) ? all.runs.filter((r) => r.run === run) : [];
    return { status: 200, body: { runs } };
  }
  if (route === "landscapes" && run !== null) {
    const list = pick(data, "routes", "landscapes", "runs", run);
    return { status: 200, body: { runs: list ? { [run]: list } : {} } };
  }
  const body = pick(data, "routes", route);
  if (body !== undefined && run === null) return { status: 200, body };
  return notFound(`the route ${route}`);
}

/** The data URL of an image step kept in the report, or null. */
export function imageDataUrl(data, run, tag, step) {
  const url = pick(data, "image_bytes", run, tag, String(step));
  return typeof url === "string" && url.startsWith("data:image/") ? url : null;
}

/** A fetch() that answers from the report's data and never touches the network. */
export function reportFetch(data) {
  return async (url) => {
    const { status, body } = answer(data, typeof url === "string" ? url : url && url.url);
    return new Response(JSON.stringify(body), { status, headers: { "Content-Type": "application/json" } });
  };
}
