//! Pyroscope's flame graph encodings (`querier.v1.FlameGraph` and `FlameGraphDiff`), from
//! [`NameTree`]s, the way Pyroscope's `pkg/model/flamegraph.go` and `flamegraph_diff.go` lay
//! them out, so that Grafana and Pyroscope's UI draw our answers as they draw theirs:
//!
//! * `levels[i]` holds the nodes at depth `i` (0 is the single root, named "total"), left to
//!   right, 4 integers each: `[x, total, self, name index]` (7 for a diff: left `x, total,
//!   self`, right `x, total, self`, name index). A node's children start after its own `self`
//!   and follow each other in name order.
//! * `x` is delta-encoded per level: stored as the gap from the end (`x + total`) of the
//!   previous node of that level.
//! * At most `max_nodes` nodes are drawn: a node needs a total of at least the
//!   `max_nodes`-th largest total (for a diff, the larger of its two totals); the rest of a
//!   node's children are folded into one child named "other" (self = total = their sum). A
//!   child really named "other" is folded too in a single flame graph, as upstream does.
//! * `names` are numbered in the order nodes are visited (depth first, last child first), so
//!   byte-for-byte the same as upstream's for the same tree.

use std::collections::HashMap;

use super::tree::NameTree;

/// Upstream's default `max_nodes` when a request sets none.
pub const DEFAULT_MAX_NODES: i64 = 8192;
/// Upstream's ceiling for `max_nodes`.
pub const MAX_MAX_NODES: i64 = 1_048_576;

/// The name nodes below the cut are folded into.
pub const OTHER: &str = "other";

/// `querier.v1.FlameGraph`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FlameGraph {
    pub names: Vec<String>,
    pub levels: Vec<Vec<i64>>,
    pub total: i64,
    pub max_self: i64,
}

/// `querier.v1.FlameGraphDiff`.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct FlameGraphDiff {
    pub names: Vec<String>,
    pub levels: Vec<Vec<i64>>,
    pub total: i64,
    pub max_self: i64,
    pub left_ticks: i64,
    pub right_ticks: i64,
}

/// The `max_nodes` a request means: none or 0 is the default, more than the ceiling is the
/// ceiling or negative is an error with Pyroscope's message (`validation.ValidateMaxNodes`,
/// whose `max_flamegraph_nodes_max` defaults to the same ceiling).
pub fn effective_max_nodes(requested: Option<i64>) -> Result<i64, String> {
    match requested {
        None | Some(0) => Ok(DEFAULT_MAX_NODES),
        Some(n) if n < 0 => Err(format!(
            "max flamegraph nodes limit must be set (max allowed {MAX_MAX_NODES})"
        )),
        Some(n) if n > MAX_MAX_NODES => Err(format!(
            "max flamegraph nodes limit {n} is greater than allowed {MAX_MAX_NODES}"
        )),
        Some(n) => Ok(n),
    }
}

/// Names numbered in first-use order.
#[derive(Default)]
struct Names {
    names: Vec<String>,
    index: HashMap<String, i64>,
}

impl Names {
    /// The index of `key`, stored as `shown` when new.
    fn index(&mut self, key: &str, shown: &str) -> i64 {
        if let Some(&i) = self.index.get(key) {
            return i;
        }
        let i = self.names.len() as i64;
        self.names.push(shown.to_string());
        self.index.insert(key.to_string(), i);
        i
    }
}

/// Reverses the order of the `width`-integer records of each level (visit order is right to
/// left) and delta-encodes the x columns at `x_columns`, each followed by its total.
fn finish_levels(levels: &mut [Vec<i64>], width: usize, x_columns: &[usize]) {
    for level in levels.iter_mut() {
        let mut records: Vec<&[i64]> = level.chunks(width).collect();
        records.reverse();
        let mut out: Vec<i64> = records.concat();
        for &col in x_columns {
            let mut prev = 0i64;
            for rec in out.chunks_mut(width) {
                let x = rec[col];
                rec[col] = x.saturating_sub(prev);
                prev = x.saturating_add(rec[col + 1]);
            }
        }
        *level = out;
    }
}

/// What the walk visits: a tree node, or a folded "other" with its total.
#[derive(Clone, Copy)]
enum Visit {
    Node(u32),
    Other(i64),
}

/// The flame graph of `tree` with at most `max_nodes` nodes (see the module docs; `max_nodes`
/// < 1 draws every node).
pub fn flame_graph(tree: &mut NameTree, max_nodes: i64) -> FlameGraph {
    tree.finish();
    let tree = &*tree;
    let min = tree.min_value(max_nodes);
    let mut names = Names::default();
    let mut levels: Vec<Vec<i64>> = Vec::new();
    let mut max_self = 0i64;
    let mut stack: Vec<(Visit, usize, i64)> = vec![(Visit::Node(0), 0, 0)];
    while let Some((visit, depth, mut x)) = stack.pop() {
        let (total, self_value, name) = match visit {
            Visit::Node(0) => (tree.total(), tree.nodes[0].self_value, "total"),
            Visit::Node(i) => {
                let n = &tree.nodes[i as usize];
                (n.total, n.self_value, tree.name(n.name))
            }
            Visit::Other(total) => (total, total, OTHER),
        };
        max_self = max_self.max(self_value);
        let index = names.index(name, name);
        if depth == levels.len() {
            levels.push(Vec::new());
        }
        levels[depth].extend_from_slice(&[x, total, self_value, index]);
        // Saturating like the tree's totals (outside input): a graph whose total is capped
        // is wrong only in width, never a panic.
        x = x.saturating_add(self_value);
        let Visit::Node(i) = visit else {
            continue;
        };
        let mut other = 0i64;
        for &c in &tree.nodes[i as usize].children {
            let child = &tree.nodes[c as usize];
            if child.total >= min && tree.name(child.name) != OTHER {
                stack.push((Visit::Node(c), depth + 1, x));
                x = x.saturating_add(child.total);
            } else {
                other = other.saturating_add(child.total);
            }
        }
        if other != 0 {
            stack.push((Visit::Other(other), depth + 1, x));
        }
    }
    finish_levels(&mut levels, 4, &[0]);
    FlameGraph {
        names: names.names,
        levels,
        total: tree.total(),
        max_self,
    }
}

/// A node of the two trees laid over each other: `[left, right]` totals and selfs.
struct Pair {
    name: String,
    total: [i64; 2],
    self_value: [i64; 2],
    children: Vec<usize>,
}

/// Both trees as one, every node present on both sides (zero where a side lacks it), children
/// in name order.
fn combine(left: &NameTree, right: &NameTree) -> Vec<Pair> {
    let mut pairs = vec![Pair {
        name: String::new(),
        total: [left.total(), right.total()],
        self_value: [0, 0],
        children: Vec::new(),
    }];
    let mut queue: Vec<(usize, Option<u32>, Option<u32>)> = vec![(0, Some(0), Some(0))];
    while let Some((at, l, r)) = queue.pop() {
        let kids = |t: &NameTree, n: Option<u32>| -> Vec<u32> {
            n.map(|n| t.nodes[n as usize].children.clone())
                .unwrap_or_default()
        };
        let (lk, rk) = (kids(left, l), kids(right, r));
        let (mut i, mut j) = (0, 0);
        while i < lk.len() || j < rk.len() {
            let ln = lk.get(i).map(|&c| left.name(left.nodes[c as usize].name));
            let rn = rk.get(j).map(|&c| right.name(right.nodes[c as usize].name));
            let (take_l, take_r) = match (ln, rn) {
                (Some(a), Some(b)) if a == b => (true, true),
                (Some(a), Some(b)) => (a < b, a > b),
                (Some(_), None) => (true, false),
                _ => (false, true),
            };
            let lc = take_l.then(|| lk[i]);
            let rc = take_r.then(|| rk[j]);
            let node = |t: &NameTree, c: Option<u32>| {
                c.map_or((0, 0), |c| {
                    let n = &t.nodes[c as usize];
                    (n.total, n.self_value)
                })
            };
            let ((lt, ls), (rt, rs)) = (node(left, lc), node(right, rc));
            let name = ln.filter(|_| take_l).or(rn).unwrap_or("").to_string();
            let id = pairs.len();
            pairs.push(Pair {
                name,
                total: [lt, rt],
                self_value: [ls, rs],
                children: Vec::new(),
            });
            pairs[at].children.push(id);
            queue.push((id, lc, rc));
            i += usize::from(take_l);
            j += usize::from(take_r);
        }
    }
    pairs
}

/// The diff flame graph of `left` and `right` (Pyroscope's `NewFlamegraphDiff`): both trees
/// aligned node by node, at most `max_nodes` nodes by the larger of each node's two totals.
pub fn flame_graph_diff(
    left: &mut NameTree,
    right: &mut NameTree,
    max_nodes: i64,
) -> FlameGraphDiff {
    left.finish();
    right.finish();
    let pairs = combine(left, right);
    let min = match usize::try_from(max_nodes) {
        Ok(k) if k > 0 && pairs.len() > k => {
            let mut totals: Vec<i64> = pairs.iter().map(|p| p.total[0].max(p.total[1])).collect();
            let (_, kth, _) = totals.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
            *kth
        }
        _ => 0,
    };
    enum DiffVisit {
        Pair(usize),
        Other([i64; 2]),
    }
    let mut names = Names::default();
    let mut levels: Vec<Vec<i64>> = Vec::new();
    let mut max_self = 0i64;
    let mut stack: Vec<(DiffVisit, usize, [i64; 2])> = vec![(DiffVisit::Pair(0), 0, [0, 0])];
    while let Some((visit, depth, mut x)) = stack.pop() {
        let (total, self_value, index) = match &visit {
            DiffVisit::Pair(i) => {
                let p = &pairs[*i];
                let shown = if *i == 0 { "total" } else { p.name.as_str() };
                (p.total, p.self_value, names.index(&p.name, shown))
            }
            DiffVisit::Other(t) => (*t, *t, names.index(OTHER, OTHER)),
        };
        max_self = max_self.max(self_value[0]).max(self_value[1]);
        if depth == levels.len() {
            levels.push(Vec::new());
        }
        levels[depth].extend_from_slice(&[
            x[0],
            total[0],
            self_value[0],
            x[1],
            total[1],
            self_value[1],
            index,
        ]);
        x[0] = x[0].saturating_add(self_value[0]);
        x[1] = x[1].saturating_add(self_value[1]);
        let DiffVisit::Pair(i) = visit else {
            continue;
        };
        let mut other = [0i64; 2];
        for &c in &pairs[i].children {
            let t = pairs[c].total;
            if t[0] >= min || t[1] >= min {
                stack.push((DiffVisit::Pair(c), depth + 1, x));
                x[0] = x[0].saturating_add(t[0]);
                x[1] = x[1].saturating_add(t[1]);
            } else {
                other[0] = other[0].saturating_add(t[0]);
                other[1] = other[1].saturating_add(t[1]);
            }
        }
        if other != [0, 0] {
            stack.push((DiffVisit::Other(other), depth + 1, x));
        }
    }
    finish_levels(&mut levels, 7, &[0, 3]);
    FlameGraphDiff {
        names: names.names,
        levels,
        total: left.total().saturating_add(right.total()),
        max_self,
        left_ticks: left.total(),
        right_ticks: right.total(),
    }
}

/// Decodes `levels` (records of `width` integers, x at `x_column`, total after it, name index
/// last) back into root-first stacks (the root left out) with their own value from
/// `self_column`. Errors on a record whose parent cannot be found or a bad name index.
pub fn decode_stacks(
    names: &[String],
    levels: &[Vec<i64>],
    width: usize,
    x_column: usize,
    self_column: usize,
) -> Result<Vec<(Vec<String>, i64)>, String> {
    // Absolute x of every record, level by level.
    let mut absolute: Vec<Vec<(i64, i64, usize)>> = Vec::with_capacity(levels.len());
    for (depth, level) in levels.iter().enumerate() {
        if level.len() % width != 0 {
            return Err(format!("level {depth} has {} values", level.len()));
        }
        let mut prev = 0i64;
        let mut out = Vec::new();
        for (k, rec) in level.chunks(width).enumerate() {
            let x = prev
                .checked_add(rec[x_column])
                .ok_or_else(|| format!("level {depth}: x overflows"))?;
            prev = x
                .checked_add(rec[x_column + 1])
                .ok_or_else(|| format!("level {depth}: x + total overflows"))?;
            out.push((x, rec[x_column + 1], k));
        }
        absolute.push(out);
    }
    let name = |v: i64| -> Result<String, String> {
        usize::try_from(v)
            .ok()
            .and_then(|i| names.get(i))
            .cloned()
            .ok_or_else(|| format!("name index {v} out of range"))
    };
    let mut stacks = Vec::new();
    for depth in 1..levels.len() {
        for &(x, total, k) in &absolute[depth] {
            let rec = &levels[depth][k * width..(k + 1) * width];
            let own = rec[self_column];
            if own == 0 {
                continue;
            }
            let mut path = vec![name(rec[width - 1])?];
            let (mut at, mut width_at) = (x, total);
            for up in (0..depth).rev() {
                let parents = &absolute[up];
                let p = parents.partition_point(|&(px, _, _)| px <= at);
                let &(px, pt, pk) = p
                    .checked_sub(1)
                    .and_then(|p| parents.get(p))
                    .ok_or_else(|| format!("no parent for a node at level {depth}"))?;
                if i128::from(at) + i128::from(width_at) > i128::from(px) + i128::from(pt) {
                    return Err(format!("a node at level {depth} lies outside its parent"));
                }
                if up > 0 {
                    path.push(name(levels[up][pk * width + width - 1])?);
                }
                (at, width_at) = (px, pt);
            }
            path.reverse();
            stacks.push((path, own));
        }
    }
    Ok(stacks)
}

impl FlameGraph {
    /// The drawn stacks (folded "other" nodes included) with their own values.
    pub fn stacks(&self) -> Result<Vec<(Vec<String>, i64)>, String> {
        decode_stacks(&self.names, &self.levels, 4, 0, 2)
    }
}

#[cfg(test)]
mod tests;
