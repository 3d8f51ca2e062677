// The page's state, kept in the URL query string so a view can be linked:
//   type      profile type ID (or bare __name__)
//   query     label selector, default {}
//   range     timeline window relative to now: 15m 1h 6h 24h 7d (default 1h) ...
//   from, to  ... or an absolute timeline window (ms since the epoch), which wins over range
//   sel_from, sel_to    the brushed range the flame graph shows (default: the whole window)
//   mode      'diff' for the comparison view
//   before_from, before_to, after_from, after_to   the diff windows
//   search    flame graph search; fn: the function shown in the sandwich view

export const PRESETS = { '15m': 15 * 60e3, '1h': 3600e3, '6h': 6 * 3600e3, '24h': 24 * 3600e3, '7d': 7 * 86400e3 };

const KEYS = ['type', 'query', 'range', 'from', 'to', 'sel_from', 'sel_to', 'mode', 'before_from', 'before_to', 'after_from', 'after_to', 'search', 'fn'];
const NUMBERS = new Set(['from', 'to', 'sel_from', 'sel_to', 'before_from', 'before_to', 'after_from', 'after_to']);

export function readState(search = window.location.search) {
  const q = new URLSearchParams(search);
  const s = {};
  for (const k of KEYS) {
    const v = q.get(k);
    if (v === null || v === '') continue;
    if (NUMBERS.has(k)) {
      const n = Number(v);
      if (Number.isFinite(n)) s[k] = Math.round(n);
    } else {
      s[k] = v;
    }
  }
  if (!s.query) s.query = '{}';
  if (!(s.from < s.to)) {
    delete s.from;
    delete s.to;
    if (!PRESETS[s.range]) s.range = '1h';
  } else {
    delete s.range;
  }
  return s;
}

export function writeState(s, replace = false) {
  const q = new URLSearchParams();
  for (const k of KEYS) {
    const v = s[k];
    if (v === undefined || v === null || v === '') continue;
    if (k === 'query' && v === '{}') continue;
    q.set(k, String(v));
  }
  const url = window.location.pathname + (q.toString() ? '?' + q.toString() : '');
  if (url === window.location.pathname + window.location.search) return;
  if (replace) window.history.replaceState(null, '', url);
  else window.history.pushState(null, '', url);
}

/** The timeline window [from, to] in ms: absolute when set, else the preset ending now. */
export function timelineWindow(s, now = Date.now()) {
  if (s.from < s.to) return [s.from, s.to];
  const span = PRESETS[s.range] || PRESETS['1h'];
  return [now - span, now];
}

/** The range the flame graph shows: the brushed one, else the whole window. */
export function selectedRange(s, window) {
  if (s.sel_from < s.sel_to) return [s.sel_from, s.sel_to];
  return window;
}

/** A timeline step in seconds: about 300 points over the window, never below 15 s. */
export function stepFor(from, to) {
  const nice = [15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const want = (to - from) / 1000 / 300;
  for (const s of nice) if (s >= want) return s;
  return nice[nice.length - 1];
}
