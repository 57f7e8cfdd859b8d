// A rotatable 3-D surface of a loss landscape, drawn with WebGL (WebGL 2, else WebGL 1), with the training path
// on it, its start and end marked, a light wireframe and the bounding box. Drag to rotate, wheel to zoom, double
// click (or the Home key) to reset; arrow keys rotate too. Without WebGL the same surface is drawn with the canvas
// 2-D API (painter's algorithm), so the view never disappears.
//
// World coordinates: X and Y in [-1, 1] along the two directions, height Z in [0, HEIGHT] (the colour scale's
// value, linear or log). The camera orbits the box centre.

import { bilinear, colormap, formatNumber, fractionalIndex } from "./landscapeMath.js";
import { landscapeScale } from "./contour.js";

const HEIGHT = 0.9;
const START = [0, 0.784, 0.325];
const END = [1, 0.09, 0.267];

// -- 4x4 matrices (column-major, as WebGL expects) ------------------------------------------------------------
export function perspective(fovy, aspect, near, far) {
  const f = 1 / Math.tan(fovy / 2);
  const nf = 1 / (near - far);
  return new Float32Array([f / aspect, 0, 0, 0, 0, f, 0, 0, 0, 0, (far + near) * nf, -1, 0, 0, 2 * far * near * nf, 0]);
}

function sub(a, b) {
  return [a[0] - b[0], a[1] - b[1], a[2] - b[2]];
}
function crossV(a, b) {
  return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
}
function norm(a) {
  const l = Math.hypot(a[0], a[1], a[2]) || 1;
  return [a[0] / l, a[1] / l, a[2] / l];
}

export function lookAt(eye, target, up) {
  const z = norm(sub(eye, target));
  const x = norm(crossV(up, z));
  const y = crossV(z, x);
  return new Float32Array([
    x[0], y[0], z[0], 0,
    x[1], y[1], z[1], 0,
    x[2], y[2], z[2], 0,
    -(x[0] * eye[0] + x[1] * eye[1] + x[2] * eye[2]),
    -(y[0] * eye[0] + y[1] * eye[1] + y[2] * eye[2]),
    -(z[0] * eye[0] + z[1] * eye[1] + z[2] * eye[2]),
    1,
  ]);
}

export function multiply(a, b) {
  const out = new Float32Array(16);
  for (let c = 0; c < 4; c++) {
    for (let r = 0; r < 4; r++) {
      let s = 0;
      for (let k = 0; k < 4; k++) s += a[k * 4 + r] * b[c * 4 + k];
      out[c * 4 + r] = s;
    }
  }
  return out;
}

/** Clip-space projection of a world point: [x_ndc, y_ndc, depth, w]. */
export function project(m, p) {
  const x = m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12];
  const y = m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13];
  const z = m[2] * p[0] + m[6] * p[1] + m[10] * p[2] + m[14];
  const w = m[3] * p[0] + m[7] * p[1] + m[11] * p[2] + m[15];
  return [x / w, y / w, z / w, w];
}

/**
 * The surface as triangles: vertices (x, y, z, nx, ny, nz, r, g, b per vertex) and indices of the cells whose
 * four corners are known. Also the path in world coordinates (on the surface when its own loss is missing).
 */
export function buildGeometry(ls, scale) {
  const { nx, ny } = ls;
  const span = scale.tmax - scale.tmin;
  const h = (t) => (span > 0 ? ((t - scale.tmin) / span) * HEIGHT : HEIGHT / 2);
  const X = (i) => (nx > 1 ? (i / (nx - 1)) * 2 - 1 : 0);
  const Y = (j) => (ny > 1 ? (j / (ny - 1)) * 2 - 1 : 0);
  const verts = new Float32Array(nx * ny * 9);
  const heightAt = (i, j) => {
    const t = scale.t[j * nx + i];
    return Number.isFinite(t) ? h(t) : NaN;
  };
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      const k = j * nx + i;
      const z = heightAt(i, j);
      const zl = heightAt(Math.max(0, i - 1), j);
      const zr = heightAt(Math.min(nx - 1, i + 1), j);
      const zd = heightAt(i, Math.max(0, j - 1));
      const zu = heightAt(i, Math.min(ny - 1, j + 1));
      const dx = (X(Math.min(nx - 1, i + 1)) - X(Math.max(0, i - 1))) || 1;
      const dy = (Y(Math.min(ny - 1, j + 1)) - Y(Math.max(0, j - 1))) || 1;
      let n = [0, 0, 1];
      const gx = (zr - zl) / dx;
      const gy = (zu - zd) / dy;
      if (Number.isFinite(gx) && Number.isFinite(gy)) n = norm([-gx, -gy, 1]);
      const c = colormap(span > 0 ? (scale.t[k] - scale.tmin) / span : 0.5);
      verts.set([X(i), Y(j), Number.isFinite(z) ? z : 0, n[0], n[1], n[2], c[0] / 255, c[1] / 255, c[2] / 255], k * 9);
    }
  }
  const idx = [];
  for (let j = 0; j + 1 < ny; j++) {
    for (let i = 0; i + 1 < nx; i++) {
      const a = j * nx + i;
      const b = a + 1;
      const c = a + nx + 1;
      const d = a + nx;
      if ([a, b, c, d].every((k) => Number.isFinite(scale.t[k]))) idx.push(a, b, c, a, c, d);
    }
  }
  const path = [];
  if (ls.path) {
    const x0 = ls.x[0];
    const x1 = ls.x[nx - 1];
    const y0 = ls.y[0];
    const y1 = ls.y[ny - 1];
    for (let k = 0; k < ls.path.x.length; k++) {
      const px = ls.path.x[k];
      const py = ls.path.y[k];
      if (!Number.isFinite(px) || !Number.isFinite(py)) continue;
      let t = Number.isFinite(ls.path.z[k]) ? scale.transform.f(ls.path.z[k]) : NaN;
      if (!Number.isFinite(t)) t = bilinear(scale.t, nx, ny, fractionalIndex(ls.x, px), fractionalIndex(ls.y, py));
      const wx = x1 > x0 ? ((px - x0) / (x1 - x0)) * 2 - 1 : 0;
      const wy = y1 > y0 ? ((py - y0) / (y1 - y0)) * 2 - 1 : 0;
      path.push([wx, wy, Number.isFinite(t) ? h(t) + 0.012 : HEIGHT / 2]);
    }
  }
  return { verts, indices: idx, path, triangles: idx.length / 3 };
}

const SURFACE_VS = `
attribute vec3 aPos; attribute vec3 aNormal; attribute vec3 aColor;
uniform mat4 uMVP; varying vec3 vColor; varying vec3 vNormal;
void main() { gl_Position = uMVP * vec4(aPos, 1.0); vColor = aColor; vNormal = aNormal; }`;
const SURFACE_FS = `
precision mediump float; varying vec3 vColor; varying vec3 vNormal; uniform vec3 uLight;
void main() { float d = abs(dot(normalize(vNormal), uLight)); gl_FragColor = vec4(vColor * (0.5 + 0.5 * d), 1.0); }`;
const LINE_VS = `
attribute vec3 aPos; uniform mat4 uMVP; uniform float uPointSize;
void main() { gl_Position = uMVP * vec4(aPos, 1.0); gl_PointSize = uPointSize; }`;
const LINE_FS = `
precision mediump float; uniform vec4 uColor; uniform float uRound;
void main() {
  if (uRound > 0.5) { vec2 p = gl_PointCoord - vec2(0.5); if (dot(p, p) > 0.25) discard; }
  gl_FragColor = uColor;
}`;

function compile(gl, vs, fs) {
  const prog = gl.createProgram();
  for (const [type, src] of [[gl.VERTEX_SHADER, vs], [gl.FRAGMENT_SHADER, fs]]) {
    const sh = gl.createShader(type);
    gl.shaderSource(sh, src);
    gl.compileShader(sh);
    if (!gl.getShaderParameter(sh, gl.COMPILE_STATUS)) throw new Error("shader: " + gl.getShaderInfoLog(sh));
    gl.attachShader(prog, sh);
  }
  gl.linkProgram(prog);
  if (!gl.getProgramParameter(prog, gl.LINK_STATUS)) throw new Error("program: " + gl.getProgramInfoLog(prog));
  return prog;
}

export const DEFAULT_VIEW = { azimuth: -2.2, elevation: 0.55, zoom: 1 };

/**
 * The 3-D view. The container gets data-renderer ("webgl2" | "webgl" | "canvas2d"), data-state="drawn",
 * data-triangles, data-path-points, data-azimuth / data-elevation, data-path-start / data-path-end (CSS px).
 */
export class Surface3D {
  constructor(container, { onViewChange } = {}) {
    this.container = container;
    this.canvas = document.createElement("canvas");
    this.canvas.className = "ms-ls-canvas ms-ls-gl";
    this.canvas.setAttribute("data-testid", "landscape-surface-canvas");
    this.canvas.tabIndex = 0;
    this.canvas.setAttribute("aria-label", "3-D loss surface: drag to rotate, wheel to zoom, double click to reset");
    this.overlay = document.createElement("canvas");
    this.overlay.className = "ms-ls-overlay";
    container.append(this.canvas, this.overlay);
    this.view = { ...DEFAULT_VIEW };
    this.onViewChange = onViewChange;
    this.gl = null;
    this.renderer = null;
    this.geometry = null;
    this.queued = false;
    this.initGl();
    this.bindInput();
  }

  initGl() {
    const attrs = { antialias: true, preserveDrawingBuffer: true, premultipliedAlpha: false };
    let gl = null;
    let kind = "canvas2d";
    try {
      gl = this.canvas.getContext("webgl2", attrs);
      if (gl) kind = "webgl2";
      else {
        gl = this.canvas.getContext("webgl", attrs) || this.canvas.getContext("experimental-webgl", attrs);
        if (gl) kind = "webgl";
      }
    } catch (e) {
      gl = null;
    }
    if (gl) {
      try {
        this.surfaceProg = compile(gl, SURFACE_VS, SURFACE_FS);
        this.lineProg = compile(gl, LINE_VS, LINE_FS);
        this.uint32 = kind === "webgl2" || Boolean(gl.getExtension("OES_element_index_uint"));
        this.buffers = { verts: gl.createBuffer(), idx: gl.createBuffer(), lines: gl.createBuffer() };
      } catch (e) {
        gl = null;
        kind = "canvas2d";
      }
    }
    this.gl = gl;
    this.renderer = kind;
    this.container.dataset.renderer = kind;
  }

  bindInput() {
    let drag = null;
    const c = this.canvas;
    c.addEventListener("pointerdown", (e) => {
      drag = { x: e.clientX, y: e.clientY, az: this.view.azimuth, el: this.view.elevation };
      if (c.setPointerCapture) c.setPointerCapture(e.pointerId);
    });
    c.addEventListener("pointermove", (e) => {
      if (!drag) return;
      this.setView({ azimuth: drag.az - (e.clientX - drag.x) * 0.01, elevation: drag.el + (e.clientY - drag.y) * 0.01 });
    });
    const end = () => (drag = null);
    c.addEventListener("pointerup", end);
    c.addEventListener("pointercancel", end);
    c.addEventListener(
      "wheel",
      (e) => {
        e.preventDefault();
        this.setView({ zoom: this.view.zoom * Math.exp(-e.deltaY * 0.001) });
      },
      { passive: false },
    );
    c.addEventListener("dblclick", () => this.setView({ ...DEFAULT_VIEW }));
    c.addEventListener("keydown", (e) => {
      const step = 0.1;
      const moves = {
        ArrowLeft: { azimuth: this.view.azimuth + step },
        ArrowRight: { azimuth: this.view.azimuth - step },
        ArrowUp: { elevation: this.view.elevation + step },
        ArrowDown: { elevation: this.view.elevation - step },
        Home: { ...DEFAULT_VIEW },
      };
      if (moves[e.key]) {
        e.preventDefault();
        this.setView(moves[e.key]);
      }
    });
  }

  setView(v, { silent = false } = {}) {
    const next = { ...this.view, ...v };
    next.elevation = Math.max(-1.5, Math.min(1.5, next.elevation));
    next.zoom = Math.max(0.3, Math.min(5, next.zoom));
    this.view = next;
    if (!silent && this.onViewChange) this.onViewChange(next);
    if (this.queued) return;
    this.queued = true;
    requestAnimationFrame(() => {
      this.queued = false;
      this.render();
    });
  }

  draw(ls, opts, width, height) {
    this.ls = ls;
    this.opts = opts;
    this.width = width;
    this.height = height;
    const dpr = window.devicePixelRatio || 1;
    for (const cv of [this.canvas, this.overlay]) {
      cv.width = Math.max(1, Math.round(width * dpr));
      cv.height = Math.max(1, Math.round(height * dpr));
      cv.style.width = width + "px";
      cv.style.height = height + "px";
    }
    this.scale = landscapeScale(ls, opts.log);
    this.geometry = buildGeometry(ls, this.scale);
    if (this.gl) this.upload();
    this.render();
  }

  upload() {
    const gl = this.gl;
    const g = this.geometry;
    gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.verts);
    gl.bufferData(gl.ARRAY_BUFFER, g.verts, gl.STATIC_DRAW);
    let indices = g.indices;
    if (!this.uint32 && this.ls.nx * this.ls.ny > 65535) indices = []; // cannot index that many vertices
    this.indexType = this.uint32 ? gl.UNSIGNED_INT : gl.UNSIGNED_SHORT;
    const arr = this.uint32 ? new Uint32Array(indices) : new Uint16Array(indices);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.buffers.idx);
    gl.bufferData(gl.ELEMENT_ARRAY_BUFFER, arr, gl.STATIC_DRAW);
    this.indexCount = arr.length;
    // Lines: wireframe (every k-th row / column), box, path; recorded as [first, count, mode, rgba, depth, size].
    const lines = [];
    const draws = [];
    const push = (pts, mode, color, depth, size = 1) => {
      if (!pts.length) return;
      draws.push({ first: lines.length / 3, count: pts.length, mode, color, depth, size });
      for (const p of pts) lines.push(p[0], p[1], p[2]);
    };
    const { nx, ny } = this.ls;
    const v = g.verts;
    const at = (i, j) => [v[(j * nx + i) * 9], v[(j * nx + i) * 9 + 1], v[(j * nx + i) * 9 + 2]];
    const known = (i, j) => Number.isFinite(this.scale.t[j * nx + i]);
    const kx = Math.max(1, Math.ceil((nx - 1) / 10));
    const ky = Math.max(1, Math.ceil((ny - 1) / 10));
    const wire = [];
    for (let j = 0; j < ny; j += ky) for (let i = 0; i + 1 < nx; i++) if (known(i, j) && known(i + 1, j)) wire.push(at(i, j), at(i + 1, j));
    for (let i = 0; i < nx; i += kx) for (let j = 0; j + 1 < ny; j++) if (known(i, j) && known(i, j + 1)) wire.push(at(i, j), at(i, j + 1));
    push(wire, gl.LINES, [0, 0, 0, 0.22], true);
    const b = [[-1, -1], [1, -1], [1, 1], [-1, 1]];
    const box = [];
    for (let k = 0; k < 4; k++) {
      const p = b[k];
      const q = b[(k + 1) % 4];
      box.push([p[0], p[1], 0], [q[0], q[1], 0], [p[0], p[1], HEIGHT], [q[0], q[1], HEIGHT], [p[0], p[1], 0], [p[0], p[1], HEIGHT]);
    }
    push(box, gl.LINES, [0.55, 0.55, 0.55, 0.6], true);
    if (g.path.length) {
      push(g.path, gl.LINE_STRIP, [1, 1, 1, 0.95], true);
      push(g.path, gl.LINE_STRIP, [0.1, 0.1, 0.1, 0.45], false);
      push(g.path, gl.POINTS, [0.1, 0.1, 0.1, 1], false, 5);
      push([g.path[0]], gl.POINTS, [...START, 1], false, 13);
      push([g.path[g.path.length - 1]], gl.POINTS, [...END, 1], false, 13);
    }
    gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.lines);
    gl.bufferData(gl.ARRAY_BUFFER, new Float32Array(lines), gl.STATIC_DRAW);
    this.lineDraws = draws;
  }

  matrix() {
    const { azimuth, elevation, zoom } = this.view;
    const target = [0, 0, HEIGHT / 2];
    const dist = 4.1 / zoom;
    const eye = [
      target[0] + dist * Math.cos(elevation) * Math.cos(azimuth),
      target[1] + dist * Math.cos(elevation) * Math.sin(azimuth),
      target[2] + dist * Math.sin(elevation),
    ];
    const up = Math.abs(Math.cos(elevation)) < 1e-3 ? [Math.cos(azimuth), Math.sin(azimuth), 0] : [0, 0, 1];
    return { mvp: multiply(perspective(0.7, this.width / Math.max(1, this.height), 0.1, 50), lookAt(eye, target, up)), eye };
  }

  render() {
    if (!this.geometry) return;
    const { mvp, eye } = this.matrix();
    this.mvp = mvp;
    if (this.gl) this.renderGl(mvp, eye);
    else this.render2d(mvp, eye);
    this.drawOverlay(mvp);
    const d = this.container.dataset;
    d.state = "drawn";
    d.triangles = String(this.geometry.triangles);
    d.pathPoints = String(this.geometry.path.length);
    d.azimuth = this.view.azimuth.toFixed(3);
    d.elevation = this.view.elevation.toFixed(3);
    d.zoom = this.view.zoom.toFixed(3);
  }

  renderGl(mvp, eye) {
    const gl = this.gl;
    gl.viewport(0, 0, this.canvas.width, this.canvas.height);
    const bg = background();
    gl.clearColor(bg[0] / 255, bg[1] / 255, bg[2] / 255, 1);
    gl.clear(gl.COLOR_BUFFER_BIT | gl.DEPTH_BUFFER_BIT);
    gl.enable(gl.DEPTH_TEST);
    gl.enable(gl.BLEND);
    gl.blendFunc(gl.SRC_ALPHA, gl.ONE_MINUS_SRC_ALPHA);
    // Surface.
    gl.useProgram(this.surfaceProg);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.verts);
    const attr = (prog, name, size, offset, stride) => {
      const loc = gl.getAttribLocation(prog, name);
      if (loc < 0) return;
      gl.enableVertexAttribArray(loc);
      gl.vertexAttribPointer(loc, size, gl.FLOAT, false, stride, offset);
    };
    attr(this.surfaceProg, "aPos", 3, 0, 36);
    attr(this.surfaceProg, "aNormal", 3, 12, 36);
    attr(this.surfaceProg, "aColor", 3, 24, 36);
    gl.uniformMatrix4fv(gl.getUniformLocation(this.surfaceProg, "uMVP"), false, mvp);
    const light = norm([eye[0] + 1, eye[1] - 1, eye[2] + 2]);
    gl.uniform3fv(gl.getUniformLocation(this.surfaceProg, "uLight"), light);
    gl.enable(gl.POLYGON_OFFSET_FILL);
    gl.polygonOffset(1, 1);
    gl.bindBuffer(gl.ELEMENT_ARRAY_BUFFER, this.buffers.idx);
    if (this.indexCount) gl.drawElements(gl.TRIANGLES, this.indexCount, this.indexType, 0);
    gl.disable(gl.POLYGON_OFFSET_FILL);
    for (const name of ["aNormal", "aColor"]) {
      const loc = gl.getAttribLocation(this.surfaceProg, name);
      if (loc >= 0) gl.disableVertexAttribArray(loc);
    }
    // Lines and points.
    gl.useProgram(this.lineProg);
    gl.bindBuffer(gl.ARRAY_BUFFER, this.buffers.lines);
    attr(this.lineProg, "aPos", 3, 0, 12);
    gl.uniformMatrix4fv(gl.getUniformLocation(this.lineProg, "uMVP"), false, mvp);
    const uColor = gl.getUniformLocation(this.lineProg, "uColor");
    const uSize = gl.getUniformLocation(this.lineProg, "uPointSize");
    const uRound = gl.getUniformLocation(this.lineProg, "uRound");
    const dpr = window.devicePixelRatio || 1;
    for (const d of this.lineDraws) {
      if (d.depth) gl.enable(gl.DEPTH_TEST);
      else gl.disable(gl.DEPTH_TEST);
      gl.uniform4fv(uColor, d.color);
      gl.uniform1f(uSize, d.size * dpr);
      gl.uniform1f(uRound, d.mode === gl.POINTS ? 1 : 0);
      gl.drawArrays(d.mode, d.first, d.count);
    }
  }

  toScreen(mvp, p) {
    const [x, y, z] = project(mvp, p);
    return [((x + 1) / 2) * this.width, ((1 - y) / 2) * this.height, z];
  }

  render2d(mvp) {
    // Painter's algorithm over the cells (farthest first), flat-shaded.
    const ctx = this.canvas.getContext("2d");
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = `rgb(${background().join(",")})`;
    ctx.fillRect(0, 0, this.width, this.height);
    const { nx, ny } = this.ls;
    const v = this.geometry.verts;
    const step = Math.max(1, Math.ceil(Math.max(nx, ny) / 96));
    const scr = new Float64Array(nx * ny * 3);
    for (let k = 0; k < nx * ny; k++) {
      const s = this.toScreen(mvp, [v[k * 9], v[k * 9 + 1], v[k * 9 + 2]]);
      scr[k * 3] = s[0];
      scr[k * 3 + 1] = s[1];
      scr[k * 3 + 2] = s[2];
    }
    const cells = [];
    for (let j = 0; j < ny - 1; j += step) {
      for (let i = 0; i < nx - 1; i += step) {
        const i2 = Math.min(nx - 1, i + step);
        const j2 = Math.min(ny - 1, j + step);
        const ks = [j * nx + i, j * nx + i2, j2 * nx + i2, j2 * nx + i];
        if (!ks.every((k) => Number.isFinite(this.scale.t[k]))) continue;
        cells.push({ ks, depth: (scr[ks[0] * 3 + 2] + scr[ks[2] * 3 + 2]) / 2 });
      }
    }
    cells.sort((a, b) => b.depth - a.depth);
    for (const c of cells) {
      const k = c.ks[0];
      const shade = 0.5 + 0.5 * Math.abs(v[k * 9 + 5]);
      ctx.fillStyle = `rgb(${Math.round(v[k * 9 + 6] * 255 * shade)},${Math.round(v[k * 9 + 7] * 255 * shade)},${Math.round(v[k * 9 + 8] * 255 * shade)})`;
      ctx.beginPath();
      c.ks.forEach((kk, n) => (n ? ctx.lineTo(scr[kk * 3], scr[kk * 3 + 1]) : ctx.moveTo(scr[kk * 3], scr[kk * 3 + 1])));
      ctx.closePath();
      ctx.fill();
      ctx.strokeStyle = ctx.fillStyle;
      ctx.stroke();
    }
    const path = this.geometry.path;
    if (path.length) {
      ctx.strokeStyle = "#212121";
      ctx.lineWidth = 2;
      ctx.beginPath();
      path.forEach((p, n) => {
        const [x, y] = this.toScreen(mvp, p);
        if (n) ctx.lineTo(x, y);
        else ctx.moveTo(x, y);
      });
      ctx.stroke();
    }
  }

  drawOverlay(mvp) {
    const ctx = this.overlay.getContext("2d");
    const dpr = window.devicePixelRatio || 1;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, this.width, this.height);
    ctx.font = '11px Roboto, "Helvetica Neue", Arial, sans-serif';
    ctx.fillStyle = getComputedStyle(document.documentElement).getPropertyValue("--ms-muted").trim() || "#616161";
    ctx.textAlign = "center";
    ctx.textBaseline = "middle";
    const labels = this.ls.axisLabels || [];
    const text = (p, t, align = "center") => {
      const [x, y] = this.toScreen(mvp, p);
      if (!Number.isFinite(x) || !Number.isFinite(y)) return;
      ctx.textAlign = align;
      ctx.fillText(t, x, y);
    };
    // Axis names beside the floor edges nearest to the viewer, moved out of the box's screen outline (the surface
    // lies inside it) so they never cover the surface.
    const front = (a, b) => (this.toScreen(mvp, a)[1] > this.toScreen(mvp, b)[1] ? a : b);
    const ex = front([0, -1, 0], [0, 1, 0]);
    const ey = front([-1, 0, 0], [1, 0, 0]);
    const hull = convexHull(BOX_CORNERS.map((c) => this.toScreen(mvp, c)));
    let clear = 0;
    for (const [p, t] of [[[ex[0], ex[1] * 1.22, 0], short(labels[0] || "x")], [[ey[0] * 1.22, ey[1], 0], short(labels[1] || "y")]]) {
      const at = this.toScreen(mvp, p);
      if (!Number.isFinite(at[0]) || !Number.isFinite(at[1])) continue;
      const w = ctx.measureText(t).width;
      const placed = placeOutside(hull, at, w, 14, this.width, this.height);
      if (!rectHitsPolygon(hull, placed[0] - w / 2, placed[1] - 7, w, 14)) clear += 1;
      ctx.textAlign = "center";
      ctx.fillText(t, placed[0], placed[1]);
    }
    this.container.dataset.axisLabelsClear = String(clear);
    const corners = [[-1, -1], [1, -1], [1, 1], [-1, 1]];
    let left = corners[0];
    for (const c of corners) if (this.toScreen(mvp, [c[0], c[1], 0])[0] < this.toScreen(mvp, [left[0], left[1], 0])[0]) left = c;
    const lx = left[0] * 1.06;
    const ly = left[1] * 1.06;
    text([lx, ly, HEIGHT], formatNumber(this.scale.tmax) + " ", "right");
    text([lx, ly, 0], formatNumber(this.scale.tmin) + " ", "right");
    text([lx, ly, HEIGHT / 2], (this.scale.transform.label || "loss") + " ", "right");
    const d = this.container.dataset;
    const path = this.geometry.path;
    if (path.length) {
      const s = this.toScreen(mvp, path[0]);
      const e = this.toScreen(mvp, path[path.length - 1]);
      d.pathStart = `${s[0].toFixed(1)},${s[1].toFixed(1)}`;
      d.pathEnd = `${e[0].toFixed(1)},${e[1].toFixed(1)}`;
      if (this.renderer === "canvas2d") {
        for (const [p, color] of [[s, "#00c853"], [e, "#ff1744"]]) {
          ctx.fillStyle = color;
          ctx.beginPath();
          ctx.arc(p[0], p[1], 6, 0, Math.PI * 2);
          ctx.fill();
        }
      }
    } else {
      delete d.pathStart;
      delete d.pathEnd;
    }
  }
}

/** The page's card colour as [r, g, b] (white, or the dark theme's surface). */
function background() {
  const dark = typeof document !== "undefined" && document.documentElement.classList.contains("ms-dark");
  return dark ? [58, 58, 58] : [255, 255, 255];
}

const BOX_CORNERS = [];
for (const x of [-1, 1]) for (const y of [-1, 1]) for (const z of [0, HEIGHT]) BOX_CORNERS.push([x, y, z]);

/** Convex hull of 2-D points (Andrew's monotone chain), counter-clockwise. */
export function convexHull(points) {
  const pts = points.filter((p) => Number.isFinite(p[0]) && Number.isFinite(p[1])).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  if (pts.length < 3) return pts;
  const cross = (o, a, b) => (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]);
  const half = (list) => {
    const out = [];
    for (const p of list) {
      while (out.length >= 2 && cross(out[out.length - 2], out[out.length - 1], p) <= 0) out.pop();
      out.push(p);
    }
    out.pop();
    return out;
  };
  return half(pts).concat(half(pts.slice().reverse()));
}

function inside(poly, x, y) {
  let yes = false;
  for (let i = 0, j = poly.length - 1; i < poly.length; j = i++) {
    const [xi, yi] = poly[i];
    const [xj, yj] = poly[j];
    if (yi > y !== yj > y && x < ((xj - xi) * (y - yi)) / (yj - yi) + xi) yes = !yes;
  }
  return yes;
}

/** Whether a text box (x, y, w, h) overlaps a convex polygon (sampled on its corners, edges' midpoints and centre). */
export function rectHitsPolygon(poly, x, y, w, h) {
  if (poly.length < 3) return false;
  for (const fx of [0, 0.5, 1]) for (const fy of [0, 0.5, 1]) if (inside(poly, x + fx * w, y + fy * h)) return true;
  return poly.some(([px, py]) => px >= x && px <= x + w && py >= y && py <= y + h);
}

/** The label's centre moved away from the polygon's centre until its box is clear (kept inside the canvas). */
export function placeOutside(poly, at, w, h, width, height) {
  if (poly.length < 3) return at;
  const cx = poly.reduce((s, p) => s + p[0], 0) / poly.length;
  const cy = poly.reduce((s, p) => s + p[1], 0) / poly.length;
  let dx = at[0] - cx;
  let dy = at[1] - cy;
  const len = Math.hypot(dx, dy) || 1;
  dx /= len;
  dy /= len;
  const clamp = (v, lo, hi) => Math.max(lo, Math.min(hi, v));
  let best = at;
  for (let k = 0; k <= 40; k++) {
    const x = clamp(at[0] + dx * 4 * k, w / 2 + 2, width - w / 2 - 2);
    const y = clamp(at[1] + dy * 4 * k, h / 2 + 2, height - h / 2 - 2);
    best = [x, y];
    if (!rectHitsPolygon(poly, x - w / 2, y - h / 2, w, h)) break;
  }
  return best;
}

function short(label) {
  const s = String(label);
  return s.length > 40 ? s.slice(0, 39) + "…" : s;
}
