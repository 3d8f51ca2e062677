// The timeline of the selected series (uPlot), with the store's marks as labelled vertical
// lines and the chosen ranges as shaded bands. Dragging across it picks a range.

import uPlot from 'uplot';
import { formatMeasured } from './units.js';

const HEIGHT = 170;

// The y axis as wide as its longest label ("512MiB/s", "0.500ns/s"), which uPlot leaves to us.
function axisWidth(u, values) {
  if (!values || !values.length) return 50;
  const longest = Math.max(...values.map((v) => String(v).length));
  return Math.max(50, Math.ceil(longest * 7 + 18));
}

export class Timeline {
  /** @param {HTMLElement} host  @param {{onSelect(fromMs, toMs)}} opts */
  constructor(host, opts) {
    this.host = host;
    this.opts = opts;
    this.plot = null;
    this.marks = [];
    this.bands = [];
    this.unit = '';
    this.measure = 'per_second';
    window.addEventListener('resize', () => {
      if (this.plot) this.plot.setSize({ width: this.width(), height: HEIGHT });
    });
  }

  width() {
    return Math.max(200, this.host.clientWidth || 800);
  }

  /**
   * Shows `tl` (the API's timeline answer) over window [from, to] ms with steps of `step`
   * seconds; `bands` are [{from, to, label, colour}] in ms.
   */
  set(tl, from, to, bands) {
    this.marks = tl.marks || [];
    this.bands = bands || [];
    this.unit = tl.unit || '';
    this.measure = tl.measure || 'per_second';
    const step = Math.max(1, tl.step || 15);
    // One x per step across the whole window, null where there is no data, so that gaps show
    // as gaps rather than as lines drawn across them.
    const byStep = new Map();
    for (const [ms, v] of tl.points || []) byStep.set(Math.floor(ms / 1000 / step), v);
    const xs = [];
    const ys = [];
    const first = Math.floor(from / 1000 / step);
    const last = Math.floor(to / 1000 / step);
    // Each value covers its whole step: drawn at the step's middle, so the line reaches the
    // data's end instead of stopping a step short of it.
    for (let k = first; k <= last; k++) {
      xs.push(k * step + step / 2);
      ys.push(byStep.has(k) ? byStep.get(k) : null);
    }
    this.clear();
    const fmt = (v) => (v === null || v === undefined ? '' : formatMeasured(v, this.unit, this.measure));
    const self = this;
    this.plot = new uPlot(
      {
        width: this.width(),
        height: HEIGHT,
        legend: { show: false },
        scales: { x: { time: true, range: [from / 1000, to / 1000] }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
        cursor: { drag: { x: true, y: false, setScale: false }, points: { size: 6 } },
        series: [
          {},
          { label: 'value', stroke: '#3d71d9', width: 1.5, fill: 'rgba(61,113,217,0.12)', spanGaps: false, points: { show: false } },
        ],
        axes: [
          { stroke: '#6e6e73', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#d9d9de' } },
          { stroke: '#6e6e73', grid: { stroke: '#eef0f3' }, ticks: { stroke: '#d9d9de' }, size: axisWidth, values: (u, splits) => splits.map(fmt) },
        ],
        hooks: {
          draw: [(u) => self.decorate(u)],
          setSelect: [
            (u) => {
              if (u.select.width < 3) return;
              const a = u.posToVal(u.select.left, 'x') * 1000;
              const b = u.posToVal(u.select.left + u.select.width, 'x') * 1000;
              u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
              self.opts.onSelect(Math.round(a), Math.round(b));
            },
          ],
          setCursor: [(u) => self.hover(u)],
        },
      },
      [xs, ys],
      this.host,
    );
    this.readout = document.createElement('div');
    this.readout.className = 'tl-readout';
    this.host.appendChild(this.readout);
  }

  hover(u) {
    const i = u.cursor.idx;
    if (i === null || i === undefined || !this.readout) {
      if (this.readout) this.readout.textContent = '';
      return;
    }
    const x = u.data[0][i];
    const y = u.data[1][i];
    const when = new Date(x * 1000).toLocaleString();
    this.readout.textContent = y === null ? `${when}: no data` : `${when}: ${formatMeasured(y, this.unit, this.measure)}`;
  }

  // Bands behind the line would be nicer, but uPlot's draw hook runs last; translucent fills
  // keep the line readable.
  decorate(u) {
    const ctx = u.ctx;
    const { left, top, width, height } = u.bbox;
    const dpr = window.devicePixelRatio || 1;
    ctx.save();
    // uPlot leaves its axis text settings (right-aligned y labels) on the context.
    ctx.textAlign = 'left';
    ctx.beginPath();
    ctx.rect(left, top, width, height);
    ctx.clip();
    for (const b of this.bands) {
      const x0 = u.valToPos(b.from / 1000, 'x', true);
      const x1 = u.valToPos(b.to / 1000, 'x', true);
      ctx.fillStyle = b.colour;
      ctx.fillRect(x0, top, Math.max(1, x1 - x0), height);
      if (b.label) {
        ctx.fillStyle = '#1d1d1f';
        ctx.font = `${11 * dpr}px system-ui, sans-serif`;
        ctx.textBaseline = 'bottom';
        ctx.fillText(b.label, x0 + 3 * dpr, top + height - 2 * dpr);
      }
    }
    ctx.font = `${11 * dpr}px system-ui, sans-serif`;
    ctx.textBaseline = 'top';
    // Labels that would overlap the previous one move down a line (marks close in time).
    const lineHeight = 14 * dpr;
    const rowsEnd = [];
    const sorted = this.marks.slice().sort((a, b) => a.at - b.at);
    for (const m of sorted) {
      const x = Math.round(u.valToPos(m.at / 1000, 'x', true)) + 0.5;
      if (x < left || x > left + width) continue;
      ctx.strokeStyle = '#d9822b';
      ctx.lineWidth = dpr;
      ctx.setLineDash([4 * dpr, 3 * dpr]);
      ctx.beginPath();
      ctx.moveTo(x, top);
      ctx.lineTo(x, top + height);
      ctx.stroke();
      ctx.setLineDash([]);
      const label = m.name;
      const w = ctx.measureText(label).width + 6 * dpr;
      // Labels near the right edge go left of their line.
      const lx = x + w > left + width ? x - w : x;
      let row = 0;
      while (row < rowsEnd.length && rowsEnd[row] > lx) row++;
      rowsEnd[row] = lx + w + 4 * dpr;
      const ly = top + 1 + row * lineHeight;
      ctx.fillStyle = 'rgba(255,255,255,0.9)';
      ctx.fillRect(lx, ly, w, lineHeight);
      ctx.fillStyle = '#a65b12';
      ctx.fillText(label, lx + 3 * dpr, ly + dpr);
    }
    ctx.restore();
  }

  redraw(bands) {
    this.bands = bands || [];
    if (this.plot) this.plot.redraw(false);
  }

  clear() {
    if (this.plot) this.plot.destroy();
    this.plot = null;
    this.host.textContent = '';
    this.readout = null;
  }
}
