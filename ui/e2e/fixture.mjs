// Synthetic profiles for the dev server and the render benchmark: `samples` stacks drawn from
// a made-up Go service (seeded, so every run is the same), merged into a tree, cut to
// `maxNodes` the way the flamegraph endpoint cuts (smallest nodes folded into one "other"
// child) and encoded as Pyroscope's FlameGraph levels.

function rng(seed) {
  // mulberry32: a tiny seeded generator; Math.random cannot be seeded.
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PACKAGES = ['main', 'net/http', 'runtime', 'encoding/json', 'github.com/acme/shop/cart', 'github.com/acme/shop/db', 'compress/gzip', 'sync', 'bufio', 'crypto/tls', 'github.com/jackc/pgx/v5', 'sort', 'strings', 'bytes', 'reflect'];
const VERBS = ['Serve', 'Handle', 'Read', 'Write', 'Encode', 'Decode', 'Query', 'Scan', 'Lock', 'Unlock', 'Marshal', 'Unmarshal', 'compute', 'flush', 'parse', 'lookup', 'alloc', 'grow', 'copy', 'hash'];
const NOUNS = ['', 'Request', 'Response', 'Row', 'Cart', 'Item', 'Header', 'Body', 'Conn', 'Buffer', 'Block', 'Span', 'Map', 'Slice', 'String'];

/** Function names: `count` distinct, "pkg.VerbNoun". */
function functionNames(count, rand) {
  const out = new Set();
  while (out.size < count) {
    const p = PACKAGES[Math.floor(rand() * PACKAGES.length)];
    const v = VERBS[Math.floor(rand() * VERBS.length)];
    const n = NOUNS[Math.floor(rand() * NOUNS.length)];
    out.add(`${p}.${v}${n}${rand() < 0.3 ? Math.floor(rand() * 40) : ''}`);
  }
  return [...out];
}

function node(name) {
  return { name, total: 0, self: 0, children: new Map() };
}

/** A tree of `samples` stacks, each sample worth `weight` (10 ms of CPU in nanoseconds). */
export function sampleTree({ samples = 50000, seed = 1, functions = 800, weight = 10_000_000 } = {}) {
  const rand = rng(seed);
  const names = functionNames(functions, rand);
  // Each function calls a few others; the skew (squared random) makes some paths hot.
  const callees = names.map(() => Array.from({ length: 1 + Math.floor(rand() * 4) }, () => Math.floor(rand() * names.length)));
  const roots = ['runtime.main', 'net/http.(*conn).serve', 'runtime.gcBgMarkWorker', 'runtime.mcall'];
  const root = node('total');
  for (let s = 0; s < samples; s++) {
    let at = root;
    const step = (name) => {
      let c = at.children.get(name);
      if (!c) {
        c = node(name);
        at.children.set(name, c);
      }
      c.total += weight;
      at = c;
    };
    root.total += weight;
    step(roots[Math.floor(rand() * rand() * roots.length)]);
    let f = Math.floor(rand() ** 3 * 40);
    const depth = 6 + Math.floor(rand() * 18);
    for (let d = 0; d < depth; d++) {
      step(names[f]);
      const next = callees[f];
      f = next[rand() < 0.88 ? 0 : Math.floor(rand() * next.length)];
    }
    at.self += weight;
  }
  return root;
}

function count(n) {
  let k = 1;
  for (const c of n.children.values()) k += count(c);
  return k;
}

function fold(n, min) {
  let other = 0;
  for (const [k, c] of n.children) {
    if (c.name !== 'other' && c.total < min) {
      other += c.total;
      n.children.delete(k);
    } else {
      fold(c, min);
    }
  }
  if (other > 0) {
    const o = n.children.get('other') || node('other');
    o.total += other;
    o.self += other;
    n.children.set('other', o);
  }
}

/**
 * Folds the smallest nodes into "other" children until at most `maxNodes` remain (the folded
 * "other" nodes count too, so the threshold rises until they fit).
 */
export function cut(root, maxNodes) {
  const totals = [];
  const stack = [root];
  while (stack.length) {
    const n = stack.pop();
    totals.push(n.total);
    for (const c of n.children.values()) stack.push(c);
  }
  if (totals.length <= maxNodes) return root;
  totals.sort((a, b) => b - a);
  let keep = maxNodes;
  for (;;) {
    fold(root, totals[keep - 1] + 1);
    if (count(root) <= maxNodes) return root;
    keep = Math.floor(keep * 0.8);
  }
}

/** Pyroscope's FlameGraph encoding of a nested tree: {names, levels, total, max_self}. */
export function encode(root) {
  const names = [];
  const ids = new Map();
  const id = (s) => {
    if (!ids.has(s)) {
      ids.set(s, names.length);
      names.push(s);
    }
    return ids.get(s);
  };
  const levels = [];
  let maxSelf = 0;
  let level = [[root, 0]];
  while (level.length) {
    const row = [];
    const next = [];
    let end = 0;
    for (const [n, x] of level) {
      row.push(x - end, n.total, n.self, id(n.name));
      end = x + n.total;
      maxSelf = Math.max(maxSelf, n.self);
      let cx = x;
      for (const c of [...n.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
        next.push([c, cx]);
        cx += c.total;
      }
    }
    levels.push(row);
    level = next;
  }
  return { names, levels, total: root.total, max_self: maxSelf };
}

/** The flamegraph endpoint's answer for a synthetic CPU profile of `samples` samples. */
export function flameGraphResponse({ samples = 50000, seed = 1, maxNodes = 8192, seconds = 3600 } = {}) {
  const fg = encode(cut(sampleTree({ samples, seed }), maxNodes));
  return { ...fg, unit: 'nanoseconds', measure: 'per_second', seconds, profiles: Math.round(seconds / 15) * 3, series: 3 };
}
