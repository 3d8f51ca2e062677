// What the table and the sandwich view show, computed from a decoded tree (tree.js): per
// function self and total over all its frames, and one function's callers and callees merged
// over all the places it is called from.

/**
 * Calls `visit(i, outermost)` for every node but the root in pre-order, where `outermost` is
 * false when an ancestor has the same name: a recursive function's inner frames are already in
 * the outer frame's total and must not be counted twice.
 */
function walk(t, visit) {
  if (t.n === 0) return;
  const open = new Int32Array(t.names.length);
  // Stack of [node, next child to visit].
  const nodes = [0];
  const cursor = [t.childStart[0]];
  while (nodes.length) {
    const top = nodes.length - 1;
    const i = nodes[top];
    const c = cursor[top];
    if (c < t.childEnd[i]) {
      cursor[top] = c + 1;
      visit(c, open[t.name[c]] === 0);
      open[t.name[c]]++;
      nodes.push(c);
      cursor.push(t.childStart[c]);
    } else {
      nodes.pop();
      cursor.pop();
      if (top > 0) open[t.name[i]]--;
    }
  }
}

/** Every function with its self and total, widest self first: [{name, self, total}]. */
export function topFunctions(t) {
  const self = new Float64Array(t.names.length);
  const total = new Float64Array(t.names.length);
  const seen = new Uint8Array(t.names.length);
  walk(t, (i, outermost) => {
    const k = t.name[i];
    seen[k] = 1;
    self[k] += t.self[i];
    if (outermost) total[k] += t.total[i];
  });
  const rows = [];
  for (let k = 0; k < t.names.length; k++) {
    if (seen[k]) rows.push({ name: t.names[k], self: self[k], total: total[k] });
  }
  rows.sort((a, b) => b.self - a.self || b.total - a.total || (a.name < b.name ? -1 : 1));
  return rows;
}

function node(name) {
  return { name, total: 0, self: 0, children: new Map() };
}

function child(parent, name) {
  let c = parent.children.get(name);
  if (!c) {
    c = node(name);
    parent.children.set(name, c);
  }
  return c;
}

/** Adds node i's subtree of t below `into` (whose own values the caller has counted). */
function mergeBelow(t, i, into) {
  const stack = [[i, into]];
  while (stack.length) {
    const [src, dst] = stack.pop();
    for (let c = t.childStart[src]; c < t.childEnd[src]; c++) {
      const d = child(dst, t.names[t.name[c]]);
      d.total += t.total[c];
      d.self += t.self[c];
      stack.push([c, d]);
    }
  }
}

/**
 * The sandwich of function `name`: `callees`, a tree rooted at the function with everything it
 * calls, and `callers`, a tree rooted at the function whose children are its callers (drawn
 * upside down, so callers sit above), both merged over its outermost frames. Null when the
 * function is not in the tree.
 */
export function sandwich(t, name) {
  const k = t.names.indexOf(name);
  if (k < 0) return null;
  const callees = node(name);
  const callers = node(name);
  let found = false;
  walk(t, (i, outermost) => {
    if (t.name[i] !== k || !outermost) return;
    found = true;
    const w = t.total[i];
    callees.total += w;
    callees.self += t.self[i];
    mergeBelow(t, i, callees);
    callers.total += w;
    let at = callers;
    for (let p = t.parent[i]; p >= 0; p = t.parent[p]) {
      at = child(at, t.names[t.name[p]]);
      at.total += w;
    }
    // The path ends at the outermost caller: that is where its weight is "self".
    if (at === callers) callers.self += w;
    else at.self += w;
  });
  if (!found) return null;
  let self = 0;
  walk(t, (i) => {
    if (t.name[i] === k) self += t.self[i];
  });
  return { name, total: callees.total, self, callers, callees };
}
