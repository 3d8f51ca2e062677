// Frame colours: one hue per package, so that a package's frames read as a block, like
// Pyroscope's default palette. The package is the name up to the last '.' before any '(' or
// the first '::' (Go, Java, Python dotted paths and Rust/C++ paths).

const PALETTE = [
  '#f2a35e', '#e8c15b', '#a7cf6a', '#7fc8a9', '#74b4e0', '#9aa5e6',
  '#c69be0', '#e79bc1', '#ef8f7f', '#d6b48c', '#9fd3c7', '#b8c96a',
];

function hash(s) {
  // FNV-1a: small and stable across runs, so a function keeps its colour between views.
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

export function packageOf(name) {
  const cut = name.indexOf('(');
  const base = cut > 0 ? name.slice(0, cut) : name;
  const rust = base.indexOf('::');
  if (rust > 0) return base.slice(0, rust);
  const slash = base.lastIndexOf('/');
  const dot = base.indexOf('.', slash + 1);
  return dot > 0 ? base.slice(0, dot) : base;
}

const cache = new Map();

/** The fill of a frame named `name`. */
export function frameColour(name) {
  const pkg = packageOf(name);
  let c = cache.get(pkg);
  if (c === undefined) {
    c = PALETTE[hash(pkg) % PALETTE.length];
    cache.set(pkg, c);
  }
  return c;
}

export const ROOT_COLOUR = '#c8ccd4';
export const OTHER_COLOUR = '#dadde3';
export const DIM_COLOUR = '#eceef1';
export const MATCH_STROKE = '#7a00cc';
