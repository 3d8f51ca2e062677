// A flame graph as flat typed arrays, nodes stored level by level (root first). Both
// Pyroscope's FlameGraph levels and the trees this page builds itself (the sandwich view) become
// this one shape, so one renderer and one set of tables serve all of them.
//
// Fields per node i: name[i] (index into names), x[i] (offset from the root's left edge, in
// value units), total[i], self[i], depth[i], parent[i] (-1 for the root), and its children as
// the index range childStart[i]..childEnd[i] (children of a node are adjacent in the next level
// because each level is ordered by x).

function allocate(n) {
  return {
    n,
    name: new Int32Array(n),
    x: new Float64Array(n),
    total: new Float64Array(n),
    self: new Float64Array(n),
    depth: new Int32Array(n),
    parent: new Int32Array(n),
    childStart: new Int32Array(n),
    childEnd: new Int32Array(n),
  };
}

/** An empty tree (no samples). */
export function emptyTree() {
  return { ...allocate(0), names: [], levelStart: new Int32Array(1) };
}

/**
 * Decodes Pyroscope's `querier.v1.FlameGraph` (names, levels): each level holds four integers
 * per node, [x offset delta-encoded against the end of the previous node of the level, total,
 * self, index into names]. Throws an Error naming the fault when the encoding is broken, so the
 * page can say so instead of drawing nonsense.
 */
export function fromLevels(names, levels) {
  if (!Array.isArray(names) || !Array.isArray(levels)) throw new Error('flame graph: names and levels must be arrays');
  let n = 0;
  for (let d = 0; d < levels.length; d++) {
    const level = levels[d];
    if (!Array.isArray(level) || level.length % 4 !== 0) {
      throw new Error(`flame graph: level ${d} does not hold 4 integers per node`);
    }
    n += level.length / 4;
  }
  const t = allocate(n);
  t.names = names;
  t.levelStart = new Int32Array(levels.length + 1);
  let i = 0;
  for (let d = 0; d < levels.length; d++) {
    const level = levels[d];
    t.levelStart[d] = i;
    const prevStart = d > 0 ? t.levelStart[d - 1] : 0;
    const prevEnd = i;
    let p = prevStart; // Candidate parent in the level above.
    let end = 0; // End of the previous node of this level.
    for (let k = 0; k < level.length; k += 4, i++) {
      const x = end + level[k];
      const total = level[k + 1];
      const name = level[k + 3];
      if (!(name >= 0 && name < names.length)) throw new Error(`flame graph: level ${d} names #${name}, outside names`);
      t.x[i] = x;
      t.total[i] = total;
      t.self[i] = level[k + 2];
      t.name[i] = name;
      t.depth[i] = d;
      t.childStart[i] = t.childEnd[i] = 0;
      end = x + total;
      if (d === 0) {
        t.parent[i] = -1;
        continue;
      }
      // Levels are ordered by x, so the parent only ever moves right.
      while (p + 1 < prevEnd && x >= t.x[p] + t.total[p]) p++;
      if (p >= prevEnd || x < t.x[p] || x + total > t.x[p] + t.total[p]) {
        throw new Error(`flame graph: a node of level ${d} lies outside every node of level ${d - 1}`);
      }
      t.parent[i] = p;
      if (t.childEnd[p] === 0) t.childStart[p] = i;
      t.childEnd[p] = i + 1;
    }
  }
  t.levelStart[levels.length] = i;
  return t;
}

/**
 * A tree from nested nodes `{name, total, self, children: Map<string, node>}`; children are
 * laid out by name, like Pyroscope orders them.
 */
export function fromNested(root) {
  const names = [];
  const ids = new Map();
  const id = (s) => {
    let v = ids.get(s);
    if (v === undefined) {
      v = names.length;
      names.push(s);
      ids.set(s, v);
    }
    return v;
  };
  // Breadth first: that is level order.
  const order = [];
  const xs = [];
  const parents = [];
  const depths = [];
  let queue = [root];
  let queueX = [0];
  let queueParent = [-1];
  let depth = 0;
  const levelStart = [];
  while (queue.length) {
    levelStart.push(order.length);
    const next = [];
    const nextX = [];
    const nextParent = [];
    for (let q = 0; q < queue.length; q++) {
      const node = queue[q];
      const me = order.length;
      order.push(node);
      xs.push(queueX[q]);
      parents.push(queueParent[q]);
      depths.push(depth);
      let cx = queueX[q];
      const kids = [...node.children.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const c of kids) {
        next.push(c);
        nextX.push(cx);
        nextParent.push(me);
        cx += c.total;
      }
    }
    queue = next;
    queueX = nextX;
    queueParent = nextParent;
    depth++;
  }
  levelStart.push(order.length);
  const t = allocate(order.length);
  t.names = names;
  t.levelStart = Int32Array.from(levelStart);
  for (let i = 0; i < order.length; i++) {
    t.name[i] = id(order[i].name);
    t.x[i] = xs[i];
    t.total[i] = order[i].total;
    t.self[i] = order[i].self;
    t.depth[i] = depths[i];
    const p = parents[i];
    t.parent[i] = p;
    if (p >= 0) {
      if (t.childEnd[p] === 0) t.childStart[p] = i;
      t.childEnd[p] = i + 1;
    }
  }
  return t;
}

/** Levels in the tree. */
export function levelCount(t) {
  return t.levelStart.length - 1;
}

/** The n widest frames below the root, widest first, as [{name, total}]. */
export function widest(t, n) {
  const idx = [];
  for (let i = 1; i < t.n; i++) idx.push(i);
  idx.sort((a, b) => t.total[b] - t.total[a] || a - b);
  return idx.slice(0, n).map((i) => ({ name: t.names[t.name[i]], total: t.total[i] }));
}
