// The flame graph panel, the top-functions table and the sandwich view, for one answer of the
// flamegraph endpoint.

import { fromLevels, fromNested, emptyTree, widest } from './flame/tree.js';
import { topFunctions, sandwich } from './flame/functions.js';
import { FlameChart } from './flame/chart.js';
import { formatMeasured, formatShare, formatValue, isTime, sig3 } from './units.js';

const TABLE_ROWS = 500;
const $ = (id) => document.getElementById(id);

export class FlamePanel {
  /** @param {{onSandwich(name|''), onSearch(q)}} hooks */
  constructor(hooks) {
    this.hooks = hooks;
    this.tree = emptyTree();
    this.resp = null;
    this.rows = [];
    this.sort = { key: 'self', desc: true };
    this.lastRenderMs = 0;
    this.tip = $('tip');
    this.menu = $('menu');
    this.chart = new FlameChart($('flame'), {
      onHover: (i, ev) => this.showTip(this.chart, i, ev),
      onClick: () => this.afterZoom(),
      onContext: (i, ev) => this.showMenu(this.chart.nameOf(i), i, ev),
    });
    this.callers = new FlameChart($('callers'), {
      inverted: true,
      onHover: (i, ev) => this.showTip(this.callers, i, ev),
      onContext: (i, ev) => this.showMenu(this.callers.nameOf(i), -1, ev),
    });
    this.callees = new FlameChart($('callees'), {
      onHover: (i, ev) => this.showTip(this.callees, i, ev),
      onContext: (i, ev) => this.showMenu(this.callees.nameOf(i), -1, ev),
    });
    $('reset').addEventListener('click', () => {
      this.chart.reset();
      this.afterZoom();
    });
    document.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') {
        this.menu.hidden = true;
        this.chart.reset();
        this.afterZoom();
      }
    });
    document.addEventListener('click', (ev) => {
      if (!this.menu.contains(ev.target)) this.menu.hidden = true;
    });
    const search = $('search');
    search.addEventListener('input', () => {
      this.setSearch(search.value);
      this.hooks.onSearch(search.value.trim());
    });
    $('sandwich-open').addEventListener('click', () => {
      if (this.chart.focus > 0) this.hooks.onSandwich(this.chart.nameOf(this.chart.focus));
    });
    $('sandwich-close').addEventListener('click', () => this.hooks.onSandwich(''));
    for (const th of document.querySelectorAll('#top th')) {
      th.addEventListener('click', () => {
        const key = th.dataset.key;
        // A new column sorts widest (or A to Z) first; the same column again flips the order.
        this.sort = this.sort.key === key ? { key, desc: !this.sort.desc } : { key, desc: key !== 'name' };
        this.renderTable();
      });
    }
    window.addEventListener('resize', () => this.redraw());
  }

  /** The normalised value of raw flame graph value v: per second, or an average. */
  norm(v) {
    const r = this.resp || {};
    if (r.measure === 'per_second') return r.seconds > 0 ? v / r.seconds : v;
    if (r.profiles > 0) return (v * Math.max(1, r.series || 1)) / r.profiles;
    return v;
  }

  fmt(v) {
    const r = this.resp || {};
    return formatMeasured(this.norm(v), r.unit, r.measure);
  }

  /**
   * Shows the flamegraph endpoint's answer `resp`. Returns false when it holds no samples.
   * Throws when its levels are broken.
   */
  show(resp, search) {
    const start = performance.now();
    this.resp = resp;
    this.tree = resp.total > 0 && resp.levels && resp.levels.length ? fromLevels(resp.names, resp.levels) : emptyTree();
    this.rows = topFunctions(this.tree);
    $('search').value = search || '';
    this.chart.query = (search || '').toLowerCase();
    this.chart.setTree(this.tree);
    this.lastRenderMs = performance.now() - start;
    document.body.dataset.frames = String(this.chart.frames);
    this.afterZoom();
    this.renderSearchStatus();
    this.renderTable();
    const meta = [];
    if (this.tree.n > 0) {
      meta.push(`total ${this.fmt(resp.total)}`);
      if (resp.profiles) meta.push(`${resp.profiles} profile${resp.profiles === 1 ? '' : 's'}`);
      if (resp.series) meta.push(`${resp.series} series`);
      meta.push(`${this.tree.n} nodes`);
    }
    $('flame-meta').textContent = meta.join(' \u00b7 ');
    return this.tree.n > 0;
  }

  /** Lays out and draws again (what the render benchmark times); returns milliseconds. */
  rerender() {
    const start = performance.now();
    this.tree = this.resp && this.resp.total > 0 ? fromLevels(this.resp.names, this.resp.levels) : emptyTree();
    this.chart.setTree(this.tree);
    this.lastRenderMs = performance.now() - start;
    document.body.dataset.frames = String(this.chart.frames);
    return this.lastRenderMs;
  }

  redraw() {
    this.chart.draw();
    document.body.dataset.frames = String(this.chart.frames);
    if (!$('sandwich-panel').hidden) {
      this.callers.draw();
      this.callees.draw();
    }
  }

  widest(n) {
    return widest(this.tree, n);
  }

  clear() {
    this.resp = null;
    this.tree = emptyTree();
    this.rows = [];
    this.chart.setTree(this.tree);
    document.body.dataset.frames = '0';
    $('flame-meta').textContent = '';
    this.renderTable();
  }

  afterZoom() {
    const f = this.chart.focus;
    $('sandwich-open').disabled = !(f > 0);
    $('sandwich-open').title = f > 0 ? `Sandwich view of ${this.chart.nameOf(f)}` : 'Zoom into a frame first';
    document.body.dataset.focus = f > 0 ? this.chart.nameOf(f) : '';
    document.body.dataset.frames = String(this.chart.frames);
  }

  setSearch(q) {
    this.chart.setQuery(q);
    document.body.dataset.frames = String(this.chart.frames);
    this.renderSearchStatus();
    this.renderTable();
  }

  renderSearchStatus() {
    const c = this.chart;
    const el = $('search-status');
    if (!c.query) {
      el.textContent = '';
      document.body.dataset.matches = '';
      return;
    }
    const root = this.tree.n ? this.tree.total[0] : 0;
    el.textContent = `${c.matchCount} frame${c.matchCount === 1 ? '' : 's'}, ${formatShare(c.matchedTotal, root) || '0%'} of total`;
    document.body.dataset.matches = String(c.matchCount);
    document.body.dataset.matchedShare = root > 0 ? String(c.matchedTotal / root) : '0';
  }

  renderTable() {
    const tbody = document.querySelector('#top tbody');
    tbody.textContent = '';
    const root = this.tree.n ? this.tree.total[0] : 0;
    const q = this.chart.query;
    let rows = q ? this.rows.filter((r) => r.name.toLowerCase().includes(q)) : this.rows.slice();
    const { key, desc } = this.sort;
    const field = key === 'selfShare' ? 'self' : key === 'totalShare' ? 'total' : key;
    rows.sort((a, b) => {
      const x = a[field];
      const y = b[field];
      const c = typeof x === 'string' ? x.localeCompare(y) : x - y;
      return (desc ? -c : c) || a.name.localeCompare(b.name);
    });
    for (const th of document.querySelectorAll('#top th')) {
      th.classList.toggle('sorted', th.dataset.key === key);
      th.classList.toggle('desc', th.dataset.key === key && desc);
    }
    const shown = rows.slice(0, TABLE_ROWS);
    const frag = document.createDocumentFragment();
    for (const r of shown) {
      const tr = document.createElement('tr');
      tr.dataset.fn = r.name;
      const cells = [
        [r.name, 'fn'],
        [this.fmt(r.self), 'n'],
        [formatShare(r.self, root), 'n share'],
        [this.fmt(r.total), 'n'],
        [formatShare(r.total, root), 'n share'],
      ];
      for (const [text, cls] of cells) {
        const td = document.createElement('td');
        td.className = cls;
        td.textContent = text;
        if (cls === 'fn') td.title = r.name;
        tr.appendChild(td);
      }
      tr.addEventListener('click', () => this.hooks.onSandwich(r.name));
      frag.appendChild(tr);
    }
    tbody.appendChild(frag);
    const total = rows.length;
    $('table-meta').textContent = total === 0 ? '' : total > TABLE_ROWS ? `${TABLE_ROWS} of ${total} functions · click a row for its sandwich view` : `${total} function${total === 1 ? '' : 's'} · click a row for its sandwich view`;
  }

  /** Opens the sandwich view of `name`; false when the function is not in the graph. */
  openSandwich(name) {
    const panel = $('sandwich-panel');
    if (!name) {
      panel.hidden = true;
      return true;
    }
    const s = sandwich(this.tree, name);
    if (!s) {
      panel.hidden = true;
      return false;
    }
    panel.hidden = false;
    $('sandwich-name').textContent = name;
    const root = this.tree.total[0];
    $('sandwich-meta').textContent = `self ${this.fmt(s.self)} (${formatShare(s.self, root)}) \u00b7 total ${this.fmt(s.total)} (${formatShare(s.total, root)})`;
    this.callers.setTree(fromNested(s.callers));
    this.callees.setTree(fromNested(s.callees));
    return true;
  }

  showTip(chart, i, ev) {
    const tip = this.tip;
    if (i < 0) {
      tip.hidden = true;
      return;
    }
    const t = chart.tree;
    const root = this.tree.n ? this.tree.total[0] : 0;
    const r = this.resp || {};
    tip.textContent = '';
    const b = document.createElement('b');
    b.textContent = chart.nameOf(i);
    tip.appendChild(b);
    const table = document.createElement('table');
    const cores = (v) => (v > 0 && isTime(r.unit) && r.measure === 'per_second' ? ` (${sig3(timeSeconds(this.norm(v), r.unit))} cores)` : '');
    const lines = [
      ['Total', this.fmt(t.total[i]) + cores(t.total[i]), formatShare(t.total[i], root)],
      ['Self', this.fmt(t.self[i]) + cores(t.self[i]), formatShare(t.self[i], root)],
      ['In range', formatValue(t.total[i], r.unit), 'summed'],
    ];
    for (const line of lines) {
      const tr = document.createElement('tr');
      for (const text of line) {
        const td = document.createElement('td');
        td.textContent = text;
        tr.appendChild(td);
      }
      table.appendChild(tr);
    }
    tip.appendChild(table);
    tip.hidden = false;
    const left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    let top = ev.clientY + 16;
    if (top + tip.offsetHeight > window.innerHeight - 8) top = ev.clientY - tip.offsetHeight - 10;
    tip.style.left = Math.max(0, left) + 'px';
    tip.style.top = Math.max(0, top) + 'px';
  }

  showMenu(name, i, ev) {
    const menu = this.menu;
    menu.textContent = '';
    const item = (label, act) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = label;
      b.addEventListener('click', () => {
        menu.hidden = true;
        act();
      });
      menu.appendChild(b);
    };
    if (i >= 0) {
      item('Zoom into frame', () => {
        this.chart.focus = i;
        this.chart.draw();
        this.afterZoom();
      });
    }
    item('Sandwich view', () => this.hooks.onSandwich(name));
    item('Search for this function', () => {
      $('search').value = name;
      this.setSearch(name);
      this.hooks.onSearch(name);
    });
    this.tip.hidden = true;
    menu.hidden = false;
    menu.style.left = Math.min(ev.clientX, window.innerWidth - menu.offsetWidth - 8) + 'px';
    menu.style.top = Math.min(ev.clientY, window.innerHeight - menu.offsetHeight - 8) + 'px';
  }
}

/** A time value in `unit` as seconds. */
function timeSeconds(v, unit) {
  const f = { nanoseconds: 1e-9, ns: 1e-9, microseconds: 1e-6, us: 1e-6, milliseconds: 1e-3, ms: 1e-3 }[unit];
  return v * (f || 1);
}
