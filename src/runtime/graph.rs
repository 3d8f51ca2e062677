//! The component graph: which blocks reference which, in what order to evaluate them, and the
//! load errors a graph can have (references to nothing, cycles).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap, HashMap, HashSet};

use crate::syntax::ast::{Body, Span};
use crate::syntax::diag::Diagnostic;
use crate::syntax::suggest;

/// A block taking part in the graph.
#[derive(Clone, Copy, Debug)]
pub(crate) struct GraphNode<'a> {
    /// Global ID, for messages.
    pub id: &'a str,
    /// How blocks of scope `visible_in` reference it.
    pub key: &'a str,
    pub visible_in: usize,
    /// The scope the body's references are looked up in.
    pub resolves_in: usize,
    pub body: &'a Body,
    /// Where cycle errors point.
    pub span: Span,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Graph {
    /// `deps[i]`: the nodes node `i` references.
    pub deps: Vec<BTreeSet<usize>>,
    /// Dependencies first; ties keep file order. Only meaningful when there are no cycles.
    pub order: Vec<usize>,
    /// `unresolved[i]`: where node `i` has references that resolve to nothing (already
    /// reported), so that evaluating those attributes would only repeat the error.
    pub unresolved: Vec<Vec<Span>>,
}

/// Two nodes one scope names the same way (an export of custom component `test "pass"` named
/// `x` and a built-in `test.pass "x"`): a reference could mean either, so it is an error
/// rather than the later one silently winning.
pub(crate) fn duplicate_keys(nodes: &[GraphNode]) -> Vec<Diagnostic> {
    let mut first: HashMap<(usize, &str), usize> = HashMap::new();
    let mut diags = Vec::new();
    for (i, n) in nodes.iter().enumerate() {
        match first.get(&(n.visible_in, n.key)) {
            Some(&f) => diags.push(Diagnostic::error(
                n.span,
                format!(
                    "{} names both {} and {}; rename one of them",
                    n.key, nodes[f].id, n.id
                ),
            )),
            None => {
                first.insert((n.visible_in, n.key), i);
            }
        }
    }
    diags
}

/// What the first identifier of a reference chain turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Resolved {
    Component(usize),
    /// A block that failed to load for another reason (already reported); no edge, no error.
    Broken,
    /// A standard-library name (`sys`, `constants`, `string`, ...).
    Scope,
    Missing,
}

/// Resolves reference chains against the keys of one resolution scope's nodes: the longest
/// prefix that names a node wins (`discovery.relabel.otel.output` -> `discovery.relabel.otel`),
/// then the standard library.
pub(crate) struct Resolver<'a> {
    ids: HashMap<&'a str, usize>,
    broken: &'a HashSet<String>,
    is_scope_name: &'a dyn Fn(&str) -> bool,
}

impl<'a> Resolver<'a> {
    #[cfg(test)]
    pub fn new(
        nodes: &[GraphNode<'a>],
        scope: usize,
        broken: &'a HashSet<String>,
        is_scope_name: &'a dyn Fn(&str) -> bool,
    ) -> Self {
        let ids = nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| n.visible_in == scope)
            .map(|(i, n)| (n.key, i))
            .collect();
        Resolver {
            ids,
            broken,
            is_scope_name,
        }
    }

    /// One resolver per scope (`broken` has one entry per scope), the nodes grouped by the
    /// scope they are visible in in one pass rather than one pass per scope.
    pub fn per_scope(
        nodes: &[GraphNode<'a>],
        broken: &'a [HashSet<String>],
        is_scope_name: &'a dyn Fn(&str) -> bool,
    ) -> Vec<Self> {
        let mut ids: Vec<HashMap<&'a str, usize>> = vec![HashMap::new(); broken.len()];
        for (i, n) in nodes.iter().enumerate() {
            // A duplicate is reported by `duplicate_keys`; the first one is kept.
            if let Some(scope) = ids.get_mut(n.visible_in) {
                scope.entry(n.key).or_insert(i);
            }
        }
        ids.into_iter()
            .zip(broken)
            .map(|(ids, broken)| Resolver {
                ids,
                broken,
                is_scope_name,
            })
            .collect()
    }

    fn resolve(&self, parts: &[&str]) -> Resolved {
        let mut broken = false;
        for k in (1..=parts.len()).rev() {
            let key = parts[..k].join(".");
            if let Some(&i) = self.ids.get(key.as_str()) {
                return Resolved::Component(i);
            }
            broken |= self.broken.contains(&key);
        }
        if broken {
            Resolved::Broken
        } else if parts.first().is_some_and(|root| (self.is_scope_name)(root)) {
            Resolved::Scope
        } else {
            Resolved::Missing
        }
    }

    /// The component ID nearest to a prefix of `parts` of the same length, as the likely
    /// intended target of a misspelt reference (`pyroscope.write.bakend.receiver`).
    fn nearest_id(&self, parts: &[&str]) -> Option<&'a str> {
        let mut best: Option<(usize, &'a str)> = None;
        for &id in self.ids.keys() {
            let k = id.split('.').count();
            if k > parts.len() {
                continue;
            }
            if let Some(d) = suggest::distance(&parts[..k].join("."), id)
                && best.is_none_or(|(bd, bid)| (d, id) < (bd, bid))
            {
                best = Some((d, id));
            }
        }
        best.map(|(_, id)| id)
    }

    /// The components `body` references, and an error for every chain that resolves to nothing.
    /// Also where the references are that could not be resolved (reported here, or a block
    /// that failed to load): evaluating them would only repeat the problem.
    pub fn references(
        &self,
        body: &Body,
        diags: &mut Vec<Diagnostic>,
    ) -> (BTreeSet<usize>, Vec<Span>) {
        let mut out = BTreeSet::new();
        let mut unresolved = Vec::new();
        body.for_each_reference(&mut |parts, span| match self.resolve(parts) {
            Resolved::Component(i) => {
                out.insert(i);
            }
            Resolved::Scope => {}
            Resolved::Broken => unresolved.push(span),
            Resolved::Missing => {
                unresolved.push(span);
                let d = missing(parts, span);
                diags.push(match self.nearest_id(parts) {
                    Some(id) => d.with_help(format!("did you mean {id:?}?")),
                    None => d,
                });
            }
        });
        (out, unresolved)
    }
}

fn missing(parts: &[&str], span: Span) -> Diagnostic {
    Diagnostic::error(
        span,
        format!(
            "component {:?} does not exist or is out of scope",
            parts.join(".")
        ),
    )
}

/// Builds the graph of `nodes`, reporting unresolvable references and cycles. `resolvers`:
/// one per resolution scope.
pub(crate) fn build(
    nodes: &[GraphNode<'_>],
    resolvers: &[Resolver<'_>],
) -> (Graph, Vec<Diagnostic>) {
    let mut diags = Vec::new();
    let mut unresolved = Vec::with_capacity(nodes.len());
    let deps: Vec<BTreeSet<usize>> = nodes
        .iter()
        .map(|n| match resolvers.get(n.resolves_in) {
            Some(resolver) => {
                let (refs, missing) = resolver.references(n.body, &mut diags);
                unresolved.push(missing);
                refs
            }
            None => {
                unresolved.push(Vec::new());
                BTreeSet::new()
            }
        })
        .collect();
    diags.extend(cycle_errors(nodes, &deps));
    let order = topological_order(&deps);
    (
        Graph {
            deps,
            order,
            unresolved,
        },
        diags,
    )
}

/// Kahn's algorithm with a min-heap so that independent blocks keep file order, which makes
/// startup logs and evaluation deterministic. Nodes on a cycle are left out.
fn topological_order(deps: &[BTreeSet<usize>]) -> Vec<usize> {
    let n = deps.len();
    let mut remaining: Vec<usize> = deps.iter().map(|d| d.len()).collect();
    let mut dependants = vec![Vec::new(); n];
    for (from, ds) in deps.iter().enumerate() {
        for &to in ds {
            dependants[to].push(from);
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> =
        (0..n).filter(|&i| remaining[i] == 0).map(Reverse).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &d in &dependants[i] {
            remaining[d] -= 1;
            if remaining[d] == 0 {
                ready.push(Reverse(d));
            }
        }
    }
    order
}

/// One error per self-reference (`self reference: a`) and per strongly connected component of
/// more than one node, naming one concrete cycle through it (`cycle: a -> b -> a`).
fn cycle_errors(nodes: &[GraphNode<'_>], deps: &[BTreeSet<usize>]) -> Vec<Diagnostic> {
    let mut diags = Vec::new();
    for (i, d) in deps.iter().enumerate() {
        if d.contains(&i) {
            diags.push(Diagnostic::error(
                nodes[i].span,
                format!("self reference: {}", nodes[i].id),
            ));
        }
    }
    for scc in strongly_connected(deps) {
        if scc.len() < 2 {
            continue;
        }
        let members: HashSet<usize> = scc.iter().copied().collect();
        let start = scc.iter().copied().min().unwrap_or(0);
        let path = cycle_through(start, deps, &members);
        let names: Vec<&str> = path.iter().map(|&i| nodes[i].id).collect();
        diags.push(Diagnostic::error(
            nodes[start].span,
            format!("cycle: {}", names.join(" -> ")),
        ));
    }
    diags
}

/// A path `start -> ... -> start` inside one strongly connected component (exists by definition).
fn cycle_through(start: usize, deps: &[BTreeSet<usize>], members: &HashSet<usize>) -> Vec<usize> {
    // Breadth-first search for the shortest way back to `start`, so the message stays short.
    let mut parent: HashMap<usize, usize> = HashMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(cur) = queue.pop_front() {
        for &next in &deps[cur] {
            if !members.contains(&next) || next == cur {
                continue;
            }
            if next == start {
                let mut between = Vec::new();
                let mut at = cur;
                while at != start {
                    between.push(at);
                    at = parent[&at];
                }
                between.reverse();
                let mut path = vec![start];
                path.extend(between);
                path.push(start);
                return path;
            }
            if let std::collections::hash_map::Entry::Vacant(e) = parent.entry(next) {
                e.insert(cur);
                queue.push_back(next);
            }
        }
    }
    vec![start, start]
}

/// Tarjan's algorithm, iterative so that a long chain of blocks cannot overflow the stack.
fn strongly_connected(deps: &[BTreeSet<usize>]) -> Vec<Vec<usize>> {
    const UNVISITED: usize = usize::MAX;
    let n = deps.len();
    let mut index = vec![UNVISITED; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next_index = 0;
    let mut out = Vec::new();
    let adj: Vec<Vec<usize>> = deps.iter().map(|d| d.iter().copied().collect()).collect();

    for root in 0..n {
        if index[root] != UNVISITED {
            continue;
        }
        // (node, position of the next edge to explore)
        let mut work = vec![(root, 0usize)];
        while let Some(&mut (v, ref mut edge)) = work.last_mut() {
            if *edge == 0 && index[v] == UNVISITED {
                index[v] = next_index;
                low[v] = next_index;
                next_index += 1;
                stack.push(v);
                on_stack[v] = true;
            }
            if let Some(&w) = adj[v].get(*edge) {
                *edge += 1;
                if index[w] == UNVISITED {
                    work.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                let mut scc = Vec::new();
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    scc.push(w);
                    if w == v {
                        break;
                    }
                }
                out.push(scc);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::ast::Stmt;
    use crate::syntax::parser::parse_file;

    const STDLIB: &[&str] = &["sys", "constants", "string", "concat"];

    /// Parses `src` and runs the graph over its blocks (ID = name + label).
    fn run(src: &str) -> (Vec<String>, Graph, Vec<String>) {
        let (file, parse_diags) = parse_file(src);
        assert!(parse_diags.is_empty(), "{parse_diags:?}");
        let blocks: Vec<_> = file
            .body
            .stmts
            .iter()
            .filter_map(|s| match s {
                Stmt::Block(b) => Some(b),
                Stmt::Attribute(_) => None,
            })
            .collect();
        let ids: Vec<String> = blocks
            .iter()
            .map(|b| match &b.label {
                Some(l) => format!("{}.{}", b.full_name(), l.value),
                None => b.full_name(),
            })
            .collect();
        let nodes: Vec<GraphNode> = blocks
            .iter()
            .zip(&ids)
            .map(|(b, id)| GraphNode {
                id,
                key: id,
                visible_in: 0,
                resolves_in: 0,
                body: &b.body,
                span: b.header_span(),
            })
            .collect();
        let broken: HashSet<String> = ["broken.thing.x".to_string()].into();
        let scope = |name: &str| STDLIB.contains(&name);
        let resolver = Resolver::new(&nodes, 0, &broken, &scope);
        let (graph, diags) = build(&nodes, &[resolver]);
        let msgs = diags.into_iter().map(|d| d.message).collect();
        (ids, graph, msgs)
    }

    fn edges(ids: &[String], g: &Graph) -> Vec<String> {
        let mut out = Vec::new();
        for (from, deps) in g.deps.iter().enumerate() {
            for &to in deps {
                out.push(format!("{} -> {}", ids[from], ids[to]));
            }
        }
        out
    }

    #[test]
    fn references_order_and_errors() {
        struct Case {
            name: &'static str,
            src: &'static str,
            edges: &'static [&'static str],
            order: &'static [&'static str],
            errors: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "longest prefix wins and the rest is export fields",
                src: r#"
                    a.b "c" { x = 1 }
                    a.b "c_d" { x = 2 }
                    d.e "f" {
                        y = a.b.c.output.more
                        z = a.b.c_d.exports[0]
                    }
                "#,
                edges: &["d.e.f -> a.b.c", "d.e.f -> a.b.c_d"],
                order: &["a.b.c", "a.b.c_d", "d.e.f"],
                errors: &[],
            },
            Case {
                name: "dependencies come first; among ready blocks, the earliest in the file",
                src: r#"
                    t.x "last" { v = t.x.mid.out }
                    t.x "mid" { v = t.x.first.out }
                    t.x "first" { }
                    t.x "other" { }
                "#,
                edges: &["t.x.last -> t.x.mid", "t.x.mid -> t.x.first"],
                order: &["t.x.first", "t.x.mid", "t.x.last", "t.x.other"],
                errors: &[],
            },
            Case {
                name: "stdlib roots, calls and nested blocks",
                src: r#"
                    t.x "a" {
                        v = string.join(concat([sys.env("A")], t.x.b.list), ",")
                        inner { w = constants.hostname }
                    }
                    t.x "b" { }
                "#,
                edges: &["t.x.a -> t.x.b"],
                order: &["t.x.b", "t.x.a"],
                errors: &[],
            },
            Case {
                name: "unknown roots are errors naming the whole chain",
                src: r#"
                    t.x "a" {
                        v = t.x.nope.out
                        w = nothing
                        z = broken.thing.x.out
                    }
                "#,
                edges: &[],
                order: &["t.x.a"],
                errors: &[
                    r#"component "t.x.nope.out" does not exist or is out of scope"#,
                    r#"component "nothing" does not exist or is out of scope"#,
                ],
            },
            Case {
                name: "self reference",
                src: r#"t.x "a" { v = t.x.a.out }"#,
                edges: &["t.x.a -> t.x.a"],
                order: &[],
                errors: &["self reference: t.x.a"],
            },
            Case {
                name: "cycle of three is named in reference order",
                src: r#"
                    t.x "a" { v = t.x.b.out }
                    t.x "b" { v = t.x.c.out }
                    t.x "c" { v = t.x.a.out }
                    t.x "free" { }
                "#,
                edges: &["t.x.a -> t.x.b", "t.x.b -> t.x.c", "t.x.c -> t.x.a"],
                order: &["t.x.free"],
                errors: &["cycle: t.x.a -> t.x.b -> t.x.c -> t.x.a"],
            },
        ];
        for case in cases {
            let (ids, graph, errors) = run(case.src);
            assert_eq!(edges(&ids, &graph), case.edges, "{}", case.name);
            let order: Vec<&str> = graph.order.iter().map(|&i| ids[i].as_str()).collect();
            assert_eq!(order, case.order, "{}", case.name);
            assert_eq!(errors, case.errors, "{}", case.name);
        }
    }
}
