// The profile explorer served at /explore by `scraper run` (docs/UI.md). Reads the JSON API
// under /api/v0/explore; keeps its state in the URL (state.js); reports what it shows on
// <body data-state data-frames> and window.explorer for tests and the render benchmark.

import { readState, writeState, timelineWindow, selectedRange, stepFor, PRESETS } from './state.js';
import { getJSON, getText, apiUrl } from './api.js';
import { Timeline } from './timeline.js';
import { FlamePanel } from './flamepanel.js';
import { renderControls, defaultType, typeLabel } from './controls.js';
import { formatTime, formatSpan } from './units.js';

const $ = (id) => document.getElementById(id);
const MAX_NODES = 8192;

let state = readState();
let win = timelineWindow(state);
let catalog = null;
let marks = [];
let brushing = 'before';
// Each part's status: 'loading' | 'ready' | 'empty' | 'error'; the page's is derived from them.
const parts = { catalog: 'loading', timeline: 'loading', main: 'loading' };
// Answers to superseded requests are dropped: only the newest load of each part may render.
const generation = { catalog: 0, timeline: 0, main: 0 };

function setPart(name, status) {
  parts[name] = status;
  const all = Object.values(parts);
  let s = 'ready';
  if (all.includes('error')) s = 'error';
  else if (all.includes('loading')) s = 'loading';
  else if (parts.catalog === 'empty' || parts.main === 'empty') s = 'empty';
  document.body.dataset.state = s;
}

function message(id, text, kind = 'info') {
  const el = $(id);
  el.hidden = !text;
  el.textContent = text || '';
  el.className = 'message ' + kind;
}

const timeline = new Timeline($('timeline'), { onSelect: (a, b) => brushed(a, b) });
const flame = new FlamePanel({
  onSandwich: (name) => {
    navigate({ fn: name || undefined }, 'local');
    if (name && !flame.openSandwich(name)) message('flame-msg', `${name} is not in this flame graph.`, 'error');
    else if (name) $('sandwich-panel').scrollIntoView({ block: 'nearest', behavior: 'smooth' });
    else flame.openSandwich('');
  },
  onSearch: (q) => navigate({ search: q || undefined }, 'local', true),
});

/** Changes the state, records it in the URL and reloads what depends on what changed. */
function navigate(patch, what, replace = false) {
  state = { ...state, ...patch };
  for (const k of Object.keys(state)) if (state[k] === undefined) delete state[k];
  writeState(state, replace);
  if (what === 'all') loadAll();
  else if (what === 'main') {
    renderChrome();
    loadMain();
  } else if (what === 'chrome') renderChrome();
}

function brushed(a, b) {
  // Brushing freezes a relative window ("last hour") into the absolute one on screen, so that
  // the link keeps showing the same data.
  const frozen = { from: win[0], to: win[1], range: undefined };
  if (state.mode === 'diff') {
    const patch = brushing === 'before' ? { before_from: a, before_to: b } : { after_from: a, after_to: b };
    brushing = brushing === 'before' ? 'after' : 'before';
    navigate({ ...frozen, ...patch }, 'main');
  } else {
    navigate({ ...frozen, sel_from: a, sel_to: b, fn: undefined }, 'main');
  }
}

function bands() {
  if (state.mode === 'diff') {
    const out = [];
    if (state.before_from < state.before_to) out.push({ from: state.before_from, to: state.before_to, label: 'before', colour: 'rgba(61,113,217,0.16)' });
    if (state.after_from < state.after_to) out.push({ from: state.after_from, to: state.after_to, label: 'after', colour: 'rgba(217,72,61,0.16)' });
    return out;
  }
  if (state.sel_from < state.sel_to) return [{ from: state.sel_from, to: state.sel_to, label: '', colour: 'rgba(61,113,217,0.14)' }];
  return [];
}

function rangeText([a, b]) {
  return `${formatTime(a)} \u2013 ${formatTime(b)} (${formatSpan(b - a)})`;
}

// Everything drawn from the state alone: preset buttons, mode, selection line, links.
function renderChrome() {
  for (const b of $('presets').children) b.classList.toggle('on', b.dataset.range === state.range);
  $('window').textContent = rangeText(win);
  const diff = state.mode === 'diff';
  $('mode-single').classList.toggle('on', !diff);
  $('mode-diff').classList.toggle('on', diff);
  $('diff-panel').hidden = !diff;
  for (const id of ['flame-panel', 'table-panel']) $(id).hidden = diff;
  if (diff) $('sandwich-panel').hidden = true;
  $('query').value = state.query;
  $('timeline-hint').textContent = diff
    ? `Drag across the timeline to set the ${brushing} range.`
    : 'Drag across the timeline to select a range.';
  $('brush-before').classList.toggle('on', brushing === 'before');
  $('brush-after').classList.toggle('on', brushing === 'after');

  const sel = selectedRange(state, win);
  const selection = $('selection');
  selection.textContent = '';
  if (!diff) {
    const span = document.createElement('span');
    span.textContent = (state.sel_from < state.sel_to ? 'Selected ' : 'Whole window ') + rangeText(sel);
    selection.appendChild(span);
    if (state.sel_from < state.sel_to) {
      const clear = document.createElement('button');
      clear.type = 'button';
      clear.className = 'link';
      clear.textContent = 'clear selection';
      clear.addEventListener('click', () => navigate({ sel_from: undefined, sel_to: undefined, fn: undefined }, 'main'));
      selection.appendChild(clear);
    }
  } else {
    const b = state.before_from < state.before_to ? rangeText([state.before_from, state.before_to]) : 'not set';
    const a = state.after_from < state.after_to ? rangeText([state.after_from, state.after_to]) : 'not set';
    $('diff-ranges').textContent = `before: ${b} \u00b7 after: ${a}`;
  }
  const ready = !!state.type;
  const pprof = $('dl-pprof');
  const pgo = $('dl-pgo');
  pprof.href = ready ? apiUrl('/explore/pprof', { type: state.type, query: state.query, from: sel[0], to: sel[1] }) : '#';
  pgo.href = apiUrl('/explore/pgo', { query: state.query, from: sel[0], to: sel[1] });
  pprof.classList.toggle('disabled', !ready);
  timeline.redraw(bands());
}

async function loadAll() {
  win = timelineWindow(state);
  renderChrome();
  const gen = ++generation.catalog;
  setPart('catalog', 'loading');
  setPart('timeline', 'loading');
  setPart('main', 'loading');
  message('banner', '');
  try {
    const c = await getJSON('/explore/catalog', { from: win[0], to: win[1] });
    if (gen !== generation.catalog) return;
    catalog = c;
  } catch (e) {
    if (gen !== generation.catalog) return;
    message('banner', `Could not load the catalog: ${e.message}`, 'error');
    setPart('catalog', 'error');
    setPart('timeline', 'ready');
    setPart('main', 'ready');
    return;
  }
  const type = defaultType(catalog, state.type);
  if (type !== state.type) {
    state.type = type || undefined;
    if (!state.type) delete state.type;
    writeState(state, true);
  }
  renderControls(catalog, state, (change) => {
    if (change.error) message('banner', change.error, 'error');
    else navigate({ ...change, fn: undefined }, 'all');
  });
  if (!(catalog.profile_types || []).length) {
    const stores = (catalog.stores || []).join(', ');
    timeline.clear();
    flame.clear();
    message('timeline-msg', `No profiles between ${formatTime(win[0])} and ${formatTime(win[1])}${stores ? ' in ' + stores : ''}. Try a longer time range, or check that something writes to the store.`, 'info');
    message('flame-msg', '');
    setPart('catalog', 'empty');
    setPart('timeline', 'ready');
    setPart('main', 'ready');
    return;
  }
  setPart('catalog', 'ready');
  renderChrome();
  loadTimeline();
  loadMain();
}

async function loadTimeline() {
  const gen = ++generation.timeline;
  setPart('timeline', 'loading');
  const step = stepFor(win[0], win[1]);
  const t = (catalog.profile_types || []).find((x) => x.id === state.type);
  $('timeline-title').textContent = t ? typeLabel(t) : state.type || 'Timeline';
  try {
    const tl = await getJSON('/explore/timeline', { type: state.type, query: state.query, from: win[0], to: win[1], step });
    if (gen !== generation.timeline) return;
    marks = tl.marks || [];
    renderMarks();
    timeline.set(tl, win[0], win[1], bands());
    const per = tl.measure === 'per_second' ? 'per second' : 'average';
    $('timeline-title').textContent = `${t ? typeLabel(t) : state.type} \u00b7 ${per}`;
    message('timeline-msg', (tl.points || []).length ? '' : 'No data for this query in this time range.', 'info');
    setPart('timeline', 'ready');
  } catch (e) {
    if (gen !== generation.timeline) return;
    timeline.clear();
    message('timeline-msg', `Could not load the timeline: ${e.message}`, 'error');
    setPart('timeline', 'error');
  }
}

function renderMarks() {
  const sel = $('mark');
  sel.textContent = '';
  for (const m of marks) {
    const o = document.createElement('option');
    o.value = String(m.at);
    o.textContent = `${m.name} (${formatTime(m.at)})`;
    sel.appendChild(o);
  }
  if (!marks.length) {
    const o = document.createElement('option');
    o.value = '';
    o.textContent = 'no marks in range';
    sel.appendChild(o);
  }
  $('around-apply').disabled = !marks.length;
}

function loadMain() {
  if (state.mode === 'diff') return loadDiff();
  return loadFlame();
}

async function loadFlame() {
  const gen = ++generation.main;
  setPart('main', 'loading');
  message('flame-msg', '');
  if (!state.type) {
    setPart('main', 'ready');
    return;
  }
  const [from, to] = selectedRange(state, win);
  try {
    const resp = await getJSON('/explore/flamegraph', { type: state.type, query: state.query, from, to, max_nodes: MAX_NODES });
    if (gen !== generation.main) return;
    const some = flame.show(resp, state.search);
    if (!some) {
      message('flame-msg', `No samples for ${state.query} between ${formatTime(from)} and ${formatTime(to)}.`, 'info');
      flame.openSandwich('');
      setPart('main', 'empty');
      return;
    }
    if (state.fn && !flame.openSandwich(state.fn)) message('flame-msg', `${state.fn} is not in this flame graph.`, 'info');
    if (!state.fn) flame.openSandwich('');
    setPart('main', 'ready');
  } catch (e) {
    if (gen !== generation.main) return;
    flame.clear();
    flame.openSandwich('');
    message('flame-msg', `Could not load the flame graph: ${e.message}`, 'error');
    setPart('main', 'error');
  }
}

async function loadDiff() {
  const gen = ++generation.main;
  const frame = $('diff-frame');
  const s = state;
  if (!(s.before_from < s.before_to && s.after_from < s.after_to)) {
    frame.hidden = true;
    message('diff-msg', 'Pick a before and an after range: drag across the timeline twice, or take the minutes around a mark.', 'info');
    setPart('main', 'ready');
    return;
  }
  setPart('main', 'loading');
  message('diff-msg', 'Comparing\u2026', 'info');
  try {
    const html = await getText('/explore/diff', {
      type: s.type,
      query: s.query,
      before_from: s.before_from,
      before_to: s.before_to,
      after_from: s.after_from,
      after_to: s.after_to,
    });
    if (gen !== generation.main) return;
    // srcdoc rather than src: an error arrives as readable JSON above instead of a raw page
    // inside the frame, and the report is self-contained (inline script and style).
    frame.srcdoc = html;
    frame.hidden = false;
    // As tall as the report (srcdoc is same-origin), so the page scrolls, not the frame.
    frame.onload = () => {
      const doc = frame.contentDocument;
      if (doc && doc.body) frame.style.height = Math.max(300, doc.body.scrollHeight + 48) + 'px';
    };
    message('diff-msg', '');
    setPart('main', 'ready');
  } catch (e) {
    if (gen !== generation.main) return;
    frame.hidden = true;
    message('diff-msg', `Could not compare: ${e.message}`, 'error');
    setPart('main', 'error');
  }
}

function init() {
  for (const p of Object.keys(PRESETS)) {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = p;
    b.dataset.range = p;
    b.addEventListener('click', () =>
      navigate({ range: p, from: undefined, to: undefined, sel_from: undefined, sel_to: undefined, fn: undefined }, 'all'),
    );
    $('presets').appendChild(b);
  }
  $('query-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    navigate({ query: $('query').value.trim() || '{}', fn: undefined }, 'all');
  });
  $('mode-single').addEventListener('click', () => navigate({ mode: undefined }, 'main'));
  $('mode-diff').addEventListener('click', () => navigate({ mode: 'diff', fn: undefined }, 'main'));
  $('brush-before').addEventListener('click', () => {
    brushing = 'before';
    renderChrome();
  });
  $('brush-after').addEventListener('click', () => {
    brushing = 'after';
    renderChrome();
  });
  $('around-apply').addEventListener('click', () => {
    const at = Number($('mark').value);
    const minutes = Math.max(1, Number($('around').value) || 15);
    if (!Number.isFinite(at) || !$('mark').value) return;
    const d = minutes * 60e3;
    navigate({ from: win[0], to: win[1], range: undefined, before_from: at - d, before_to: at, after_from: at, after_to: at + d }, 'main');
  });
  window.addEventListener('popstate', () => {
    state = readState();
    loadAll();
  });
  window.explorer = {
    /** The n widest frames below the root, widest first: [{name, total}]. */
    widest: (n) => flame.widest(n),
    /** Milliseconds the last flame graph took to decode, lay out and draw. */
    get lastRenderMs() {
      return flame.lastRenderMs;
    },
    /** Decodes, lays out and draws the flame graph again; returns milliseconds. */
    rerender: () => flame.rerender(),
    get state() {
      return { ...state };
    },
  };
  loadAll();
}

init();
