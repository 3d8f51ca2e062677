// The flame graph on a <canvas>, drawn by hand rather than with an SVG library such as
// d3-flame-graph: it reads Pyroscope's FlameGraph level encoding directly (tree.js keeps it as
// flat typed arrays, no object per frame) and must draw 8192 and more frames fast, where SVG
// libraries make one DOM node per frame. Icicle layout: root on top; `inverted` draws the root
// at the bottom (the callers half of the sandwich view).

import { frameColour, ROOT_COLOUR, OTHER_COLOUR, DIM_COLOUR, MATCH_STROKE } from './colour.js';

const ROW = 18;
// Frames narrower than this many CSS pixels cannot be seen or hovered: they are skipped.
const MIN_WIDTH = 0.5;
const FONT = '12px system-ui, -apple-system, "Segoe UI", sans-serif';

export class FlameChart {
  /**
   * @param {HTMLElement} host  element the canvas fills (its width is the chart's)
   * @param {object} opts  {inverted, onHover(i|-1, event), onClick(i), onContext(i, event)}
   */
  constructor(host, opts = {}) {
    this.host = host;
    this.opts = opts;
    this.canvas = document.createElement('canvas');
    this.canvas.className = 'flame-canvas';
    host.appendChild(this.canvas);
    this.ctx = this.canvas.getContext('2d');
    this.tree = null;
    this.focus = 0;
    this.query = '';
    this.matched = null;
    this.rows = [];
    this.frames = 0;
    this.matchedTotal = 0;
    this.drawMs = 0;
    this.canvas.addEventListener('mousemove', (ev) => {
      const i = this.hit(ev);
      this.canvas.style.cursor = i < 0 ? '' : 'pointer';
      if (opts.onHover) opts.onHover(i, ev);
    });
    this.canvas.addEventListener('mouseleave', (ev) => opts.onHover && opts.onHover(-1, ev));
    this.canvas.addEventListener('click', (ev) => {
      const i = this.hit(ev);
      if (i < 0) return;
      // Clicking the focused frame again steps back out one level.
      const t = this.tree;
      this.focus = i === this.focus && t.parent[i] >= 0 ? t.parent[i] : i;
      this.draw();
      if (opts.onClick) opts.onClick(i);
    });
    this.canvas.addEventListener('contextmenu', (ev) => {
      const i = this.hit(ev);
      if (i < 0 || !opts.onContext) return;
      ev.preventDefault();
      opts.onContext(i, ev);
    });
  }

  setTree(tree) {
    this.tree = tree;
    this.focus = 0;
    this.computeMatches();
    this.draw();
  }

  nameOf(i) {
    return this.tree.names[this.tree.name[i]];
  }

  setQuery(q) {
    this.query = q.trim().toLowerCase();
    this.computeMatches();
    this.draw();
  }

  /** Zooms into the first frame named `name` (exactly), if any; false when there is none. */
  focusName(name) {
    const t = this.tree;
    for (let i = 0; i < t.n; i++) {
      if (this.nameOf(i) === name) {
        this.focus = i;
        this.draw();
        return true;
      }
    }
    return false;
  }

  reset() {
    this.focus = 0;
    this.draw();
  }

  // Which frames match the search, and the share of the whole they cover: a match inside
  // another match is already in its total.
  computeMatches() {
    const t = this.tree;
    this.matchedTotal = 0;
    this.matchCount = 0;
    if (!t || this.query === '') {
      this.matched = null;
      return;
    }
    const q = this.query;
    const byName = new Int8Array(t.names.length);
    for (let k = 0; k < t.names.length; k++) byName[k] = t.names[k].toLowerCase().includes(q) ? 1 : 0;
    const matched = new Uint8Array(t.n);
    const under = new Uint8Array(t.n);
    // Level order: a parent comes before its children.
    for (let i = 0; i < t.n; i++) {
      const p = t.parent[i];
      under[i] = p >= 0 ? under[p] | matched[p] : 0;
      matched[i] = byName[t.name[i]];
      if (matched[i]) {
        this.matchCount++;
        if (!under[i]) this.matchedTotal += t.total[i];
      }
    }
    this.matched = matched;
  }

  /** Lays out and draws the visible frames; returns the milliseconds it took. */
  draw() {
    const start = performance.now();
    const t = this.tree;
    const ctx = this.ctx;
    const cssWidth = Math.max(100, this.host.clientWidth || 800);
    this.rows = [];
    this.frames = 0;
    if (!t || t.n === 0) {
      this.canvas.width = 0;
      this.canvas.height = 0;
      this.canvas.style.height = '0px';
      this.drawMs = performance.now() - start;
      return this.drawMs;
    }
    // Layout first (which frames, where), then size the canvas to what is drawn: deep but
    // invisibly thin stacks would otherwise leave a blank expanse.
    const f = this.focus;
    const fx = t.x[f];
    const fw = t.total[f];
    const k = fw > 0 ? cssWidth / fw : 0;
    const rows = [];
    // The focused frame and its ancestors span the whole width.
    const chain = [];
    for (let a = f; a >= 0; a = t.parent[a]) chain.push(a);
    for (let j = chain.length - 1; j >= 0; j--) rows.push([chain[j], 0, cssWidth]);
    const levels = t.levelStart.length - 1;
    const fd = t.depth[f];
    for (let d = fd + 1; d < levels && k > 0; d++) {
      const from = t.levelStart[d];
      const to = t.levelStart[d + 1];
      // The first frame at or right of the focus's left edge, by binary search on x.
      let lo = from;
      let hi = to;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (t.x[mid] < fx) lo = mid + 1;
        else hi = mid;
      }
      const row = [];
      for (let i = lo; i < to && t.x[i] < fx + fw; i++) {
        const pw = t.total[i] * k;
        if (pw < MIN_WIDTH) continue;
        row.push(i, (t.x[i] - fx) * k, pw);
      }
      if (row.length === 0) break;
      rows.push(row);
    }
    // rows[0..fd] hold one [node, x, w] triple each; flatten them the same way.
    const depthCount = rows.length;
    const height = depthCount * ROW;
    const dpr = window.devicePixelRatio || 1;
    this.canvas.width = Math.round(cssWidth * dpr);
    this.canvas.height = Math.round(height * dpr);
    this.canvas.style.width = cssWidth + 'px';
    this.canvas.style.height = height + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssWidth, height);
    ctx.font = FONT;
    ctx.textBaseline = 'middle';
    const charWidth = ctx.measureText('abcdefghijklmnopqrstuvwxyz').width / 26 || 7;
    const matched = this.matched;
    const inverted = !!this.opts.inverted;
    let frames = 0;
    for (let d = 0; d < depthCount; d++) {
      const row = rows[d];
      const y = (inverted ? depthCount - 1 - d : d) * ROW;
      for (let r = 0; r < row.length; r += 3) {
        const i = row[r];
        const px = row[r + 1];
        const pw = row[r + 2];
        const name = t.names[t.name[i]];
        const dim = matched !== null && !matched[i];
        ctx.fillStyle = dim ? DIM_COLOUR : i === 0 || name === 'total' ? ROOT_COLOUR : name === 'other' ? OTHER_COLOUR : frameColour(name);
        ctx.fillRect(px, y, pw > 2 ? pw - 1 : pw, ROW - 1);
        if (matched !== null && matched[i]) {
          ctx.strokeStyle = MATCH_STROKE;
          ctx.lineWidth = 2;
          ctx.strokeRect(px + 1, y + 1, Math.max(0, pw - 3), ROW - 3);
        }
        const room = Math.floor((pw - 6) / charWidth);
        if (room >= 3) {
          // Shortened from the start: the end of a qualified name says which function it is.
          const label = name.length > room ? '\u2026' + name.slice(name.length - room + 1) : name;
          ctx.fillStyle = dim ? '#9a9ea8' : '#1d1d1f';
          ctx.fillText(label, px + 3, y + ROW / 2);
        }
        frames++;
      }
    }
    this.rows = rows;
    this.depthCount = depthCount;
    this.frames = frames;
    this.drawMs = performance.now() - start;
    return this.drawMs;
  }

  /** The frame under the mouse, or -1. */
  hit(ev) {
    const r = this.canvas.getBoundingClientRect();
    const mx = ev.clientX - r.left;
    let d = Math.floor((ev.clientY - r.top) / ROW);
    if (this.opts.inverted) d = this.depthCount - 1 - d;
    const row = this.rows[d];
    if (!row) return -1;
    for (let j = 0; j < row.length; j += 3) {
      if (mx >= row[j + 1] && mx < row[j + 1] + row[j + 2]) return row[j];
    }
    return -1;
  }
}
