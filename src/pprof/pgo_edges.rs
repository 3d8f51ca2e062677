//! The weighted call graph Go's compiler builds from a PGO profile, and which of its edges Go
//! calls hot: what `scraper pgo check` compares and `--max-edges` trims by.
//!
//! Go (1.21 to 1.23, `cmd/internal/pgo` over `internal/profile`'s graph) reads it this way:
//!
//! * the value is the first sample type that is `samples/count` or `cpu/nanoseconds`;
//! * only a sample's two leaf-most locations count (frames higher up "are unlikely to be
//!   repeated calls"), walked from the caller down, inlined lines of a location outermost
//!   first, so a sample adds its value to every edge between consecutive frames of those two
//!   locations, each edge once per sample;
//! * a frame is a node keyed by (function name, address, function start line, line); an edge
//!   from a node to the same node is skipped;
//! * an edge is named by the caller's name, the call site's offset (`line - start_line` of the
//!   caller frame) and the callee's name; the named edges' weights are summed, and the profile's
//!   total weight is the sum of all of them;
//! * the compiler sorts edges by weight (heaviest first; ties by caller name, callee name,
//!   offset) and marks as hot the shortest prefix whose cumulative weight exceeds 99 % of the
//!   total (`hotNodesFromCDF`, `-d=pgoinlinecdfthreshold`), the edge that crosses it included.
//!
//! tests/pgo_pipeline.rs compares the edges, weights and order with `go tool preprofile`'s.

use std::collections::{HashMap, HashSet};

use super::error::{PprofError, Result};
use super::proto::{Function, Location, Profile, Sample};

/// Go's default `pgoinlinecdfthreshold`: hot edges carry the top 99 % of the weight.
pub const GO_HOT_CDF_PERCENT: f64 = 99.0;

/// One named call edge, as Go's `NamedCallEdge`. Field order is Go's tie-break order.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallEdge {
    pub caller: String,
    pub callee: String,
    /// The call site's line relative to the caller's first line.
    pub offset: i64,
}

impl std::fmt::Display for CallEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (+{}) -> {}", self.caller, self.offset, self.callee)
    }
}

/// A profile's call edges with their weights (in the chosen sample type's unit).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EdgeGraph {
    pub weights: HashMap<CallEdge, i64>,
    /// Sum of all edge weights (Go's `TotalWeight`).
    pub total: i64,
    /// Whether some frame Go counts (the two leaf-most locations of a sample with a value) has
    /// a function start line: Go refuses a profile without any.
    pub has_start_lines: bool,
    /// `(type, unit)` of the sample type the weights are in.
    pub sample_type: (String, String),
}

/// How a profile's frames resolve, shared by the whole-profile and per-sample walks.
struct Frames<'a> {
    profile: &'a Profile,
    functions: HashMap<u64, &'a Function>,
    locations: HashMap<u64, &'a Location>,
}

/// A node of Go's graph: (function name, address, start line, line).
type Node<'a> = (&'a str, u64, i64, i64);

impl<'a> Frames<'a> {
    fn new(profile: &'a Profile) -> Frames<'a> {
        Frames {
            profile,
            functions: profile.function.iter().map(|f| (f.id, f)).collect(),
            locations: profile.location.iter().map(|l| (l.id, l)).collect(),
        }
    }

    fn string(&self, i: i64) -> &'a str {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.profile.string_table.get(i))
            .map_or("", String::as_str)
    }

    /// The nodes of a location, outermost (the caller) first. A location without lines is
    /// one nameless node, as Go makes one.
    fn nodes(&self, id: u64, out: &mut Vec<Node<'a>>) {
        let Some(l) = self.locations.get(&id) else {
            return;
        };
        if l.line.is_empty() {
            out.push(("", l.address, 0, 0));
            return;
        }
        for line in l.line.iter().rev() {
            // A line without a function is an address-only node, its line number dropped too,
            // as Go's nodeInfo does.
            out.push(match self.functions.get(&line.function_id) {
                Some(f) => (self.string(f.name), l.address, f.start_line, line.line),
                None => ("", l.address, 0, 0),
            });
        }
    }

    /// Calls `edge` once for every distinct edge of `sample` that Go counts.
    fn sample_edges(
        &self,
        sample: &Sample,
        nodes: &mut Vec<Node<'a>>,
        edge: &mut dyn FnMut(CallEdge),
    ) {
        nodes.clear();
        // Go walks the caller (second location) first, then the leaf.
        for id in sample.location_id.iter().take(2).rev() {
            self.nodes(*id, nodes);
        }
        let mut seen: HashSet<(Node<'a>, Node<'a>)> = HashSet::new();
        for pair in nodes.windows(2) {
            let (caller, callee) = (pair[0], pair[1]);
            if caller == callee || !seen.insert((caller, callee)) {
                continue;
            }
            edge(CallEdge {
                caller: caller.0.to_owned(),
                callee: callee.0.to_owned(),
                offset: caller.3 - caller.2,
            });
        }
    }
}

/// Index of the sample type Go's PGO reader uses, and its `(type, unit)`.
fn value_index(p: &Profile) -> Result<(usize, (String, String))> {
    let s = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map_or("", String::as_str)
    };
    p.sample_type
        .iter()
        .enumerate()
        .map(|(i, t)| (i, (s(t.r#type), s(t.unit))))
        .find(|(_, t)| *t == ("samples", "count") || *t == ("cpu", "nanoseconds"))
        .map(|(i, (t, u))| (i, (t.to_owned(), u.to_owned())))
        .ok_or_else(|| {
            PprofError::Incompatible(
                "Go PGO needs a sample type samples/count or cpu/nanoseconds".to_owned(),
            )
        })
}

impl EdgeGraph {
    /// The call graph of `p` as Go's compiler reads it (see the module docs).
    pub fn from_profile(p: &Profile) -> Result<EdgeGraph> {
        let (index, sample_type) = value_index(p)?;
        let frames = Frames::new(p);
        let mut graph = EdgeGraph {
            sample_type,
            ..EdgeGraph::default()
        };
        let mut nodes = Vec::new();
        for s in &p.sample {
            let w = s.value.get(index).copied().unwrap_or(0);
            if w == 0 {
                continue;
            }
            frames.sample_edges(s, &mut nodes, &mut |e| {
                let slot = graph.weights.entry(e).or_insert(0);
                *slot = slot.saturating_add(w);
                graph.total = graph.total.saturating_add(w);
            });
            // Go looks for a start line only among its graph's nodes: the frames of the
            // samples it counts.
            graph.has_start_lines = graph.has_start_lines || nodes.iter().any(|n| n.2 != 0);
        }
        Ok(graph)
    }

    /// Every edge with its weight, in Go's order: heaviest first, ties by caller, callee,
    /// offset.
    pub fn by_weight(&self) -> Vec<(CallEdge, i64)> {
        let mut edges: Vec<(CallEdge, i64)> =
            self.weights.iter().map(|(e, w)| (e.clone(), *w)).collect();
        edges.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        edges
    }

    /// The edges Go marks hot at `cdf_percent` (99 by default): the heaviest ones up to and
    /// including the one whose cumulative weight first exceeds that share of the total.
    pub fn hot(&self, cdf_percent: f64) -> Vec<(CallEdge, i64)> {
        let mut edges = self.by_weight();
        if self.total <= 0 {
            return Vec::new();
        }
        let mut cum = 0i64;
        for (i, (_, w)) in edges.iter().enumerate() {
            cum = cum.saturating_add(*w);
            if cum as f64 / self.total as f64 * 100.0 > cdf_percent {
                edges.truncate(i + 1);
                break;
            }
        }
        edges
    }
}

/// Every distinct edge of each sample of `p`, whatever its value, in sample order: what
/// trimming needs to decide sample by sample.
pub fn edges_per_sample(p: &Profile) -> Result<Vec<Vec<CallEdge>>> {
    value_index(p)?;
    let frames = Frames::new(p);
    let mut nodes = Vec::new();
    Ok(p.sample
        .iter()
        .map(|s| {
            let mut edges = Vec::new();
            frames.sample_edges(s, &mut nodes, &mut |e| edges.push(e));
            edges
        })
        .collect())
}

/// How much of a workload's hot call-edge weight a profile's hot edges cover.
#[derive(Clone, Debug, PartialEq)]
pub struct Coverage {
    /// `covered / hot_weight`, 0..=1 (0 when the workload has no edge weight).
    pub score: f64,
    /// The workload's weight on its own hot edges.
    pub hot_weight: i64,
    /// The part of `hot_weight` on edges the profile marks hot too.
    pub covered: i64,
    /// The workload's hot edges and the profile's.
    pub workload_hot_edges: usize,
    pub profile_hot_edges: usize,
    /// The workload's hot edges the profile does not mark hot, heaviest first.
    pub uncovered: Vec<(CallEdge, i64)>,
}

/// Scores `profile` against `workload`: the share of the workload's weight on its hot edges
/// (what Go would optimise, had the profile been taken from this workload) that lies on edges
/// the profile marks hot (what Go optimises with the profile it is given). A profile taken
/// from the workload itself scores 1.
pub fn coverage(profile: &EdgeGraph, workload: &EdgeGraph, cdf_percent: f64) -> Coverage {
    let profile_hot: HashSet<CallEdge> = profile
        .hot(cdf_percent)
        .into_iter()
        .map(|(e, _)| e)
        .collect();
    let workload_hot = workload.hot(cdf_percent);
    let mut covered = 0i64;
    let mut hot_weight = 0i64;
    let mut uncovered = Vec::new();
    for (edge, w) in &workload_hot {
        hot_weight = hot_weight.saturating_add(*w);
        if profile_hot.contains(edge) {
            covered = covered.saturating_add(*w);
        } else {
            uncovered.push((edge.clone(), *w));
        }
    }
    Coverage {
        score: if hot_weight > 0 {
            covered as f64 / hot_weight as f64
        } else {
            0.0
        },
        hot_weight,
        covered,
        workload_hot_edges: workload_hot.len(),
        profile_hot_edges: profile_hot.len(),
        uncovered,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::testutil::{B, start_line};

    fn cpu() -> B {
        B::new(&[("samples", "count"), ("cpu", "nanoseconds")]).period_type(
            "cpu",
            "nanoseconds",
            10_000_000,
        )
    }

    fn edge(caller: &str, offset: i64, callee: &str) -> CallEdge {
        CallEdge {
            caller: caller.into(),
            callee: callee.into(),
            offset,
        }
    }

    /// `edge` with the offset of `line` in `caller` (the test builder's start lines).
    fn at(caller: &str, line: i64, callee: &str) -> CallEdge {
        edge(caller, line - start_line(caller), callee)
    }

    type Frame = &'static [(&'static str, i64)];

    #[test]
    fn edges_come_from_the_two_leaf_locations() {
        struct Case {
            name: &'static str,
            stack: &'static [Frame],
            want: Vec<CallEdge>,
        }
        let cases = [
            Case {
                name: "a plain call: only the leaf pair, not the frames above",
                stack: &[&[("leaf", 11)], &[("mid", 25)], &[("main", 40)]],
                want: vec![at("mid", 25, "leaf")],
            },
            Case {
                name: "one frame: no edge",
                stack: &[&[("leaf", 11)]],
                want: vec![],
            },
            Case {
                name: "inlined frames in both locations, outermost first",
                stack: &[
                    &[("inl", 7), ("leaf", 12)],
                    &[("inner", 33), ("outer", 52)],
                    &[("main", 40)],
                ],
                want: vec![
                    at("outer", 52, "inner"),
                    at("inner", 33, "leaf"),
                    at("leaf", 12, "inl"),
                ],
            },
            Case {
                name: "one location with an inlined frame",
                stack: &[&[("inl", 7), ("leaf", 12)]],
                want: vec![at("leaf", 12, "inl")],
            },
            Case {
                name: "recursion at another line is an edge",
                stack: &[&[("rec", 41)], &[("rec", 45)]],
                want: vec![at("rec", 45, "rec")],
            },
            Case {
                name: "the same frame twice is not",
                stack: &[&[("rec", 41)], &[("rec", 41)]],
                want: vec![],
            },
        ];
        for c in cases {
            let p = cpu().frames(c.stack, &[1, 10], &[]).build();
            let per_sample = edges_per_sample(&p).expect(c.name);
            assert_eq!(per_sample, vec![c.want.clone()], "{}", c.name);
            // Go's value is the first of samples/count and cpu/nanoseconds: samples, 1.
            let g = EdgeGraph::from_profile(&p).expect(c.name);
            assert_eq!(g.total, c.want.len() as i64, "{}", c.name);
            for e in &c.want {
                assert_eq!(g.weights.get(e), Some(&1), "{}: {e}", c.name);
            }
            assert!(g.has_start_lines);
        }
    }

    #[test]
    fn weights_sum_per_named_edge_in_gos_value() {
        // Go reads the first of samples/count and cpu/nanoseconds: here samples.
        let p = cpu()
            .frames(
                &[&[("leaf", 11)], &[("mid", 25)], &[("a", 1)]],
                &[1, 10],
                &[],
            )
            .frames(
                &[&[("leaf", 13)], &[("mid", 25)], &[("b", 1)]],
                &[2, 20],
                &[],
            )
            .frames(&[&[("leaf", 11)], &[("mid", 26)]], &[4, 40], &[])
            .frames(&[&[("leaf", 11)], &[("mid", 26)]], &[0, 0], &[])
            .build();
        let g = EdgeGraph::from_profile(&p).expect("graph");
        assert_eq!(g.sample_type, ("samples".into(), "count".into()));
        let want: HashMap<CallEdge, i64> =
            [(at("mid", 25, "leaf"), 3), (at("mid", 26, "leaf"), 4)].into();
        assert_eq!(g.weights, want);
        assert_eq!(g.total, 7);
        let cpu_only = B::new(&[("cpu", "nanoseconds")])
            .frames(&[&[("leaf", 11)], &[("mid", 25)]], &[10], &[])
            .build();
        let g = EdgeGraph::from_profile(&cpu_only).expect("cpu");
        assert_eq!(g.sample_type, ("cpu".into(), "nanoseconds".into()));
        let heap = B::new(&[("inuse_space", "bytes")])
            .frames(&[&[("leaf", 11)], &[("mid", 25)]], &[10], &[])
            .build();
        assert!(EdgeGraph::from_profile(&heap).is_err());
    }

    fn graph(weights: &[(&str, i64)]) -> EdgeGraph {
        let weights: HashMap<CallEdge, i64> = weights
            .iter()
            .map(|(callee, w)| (edge("main", 1, callee), *w))
            .collect();
        EdgeGraph {
            total: weights.values().sum(),
            weights,
            has_start_lines: true,
            sample_type: ("cpu".into(), "nanoseconds".into()),
        }
    }

    fn callees(edges: &[(CallEdge, i64)]) -> Vec<&str> {
        edges.iter().map(|(e, _)| e.callee.as_str()).collect()
    }

    #[test]
    fn hot_edges_are_the_cdf_prefix_including_the_crossing_edge() {
        /// Edge weights by callee, the CDF threshold, and the hot callees.
        type Case = (&'static [(&'static str, i64)], f64, &'static [&'static str]);
        let cases: &[Case] = &[
            // 99 % of 1000 is 990: a+b+c = 995 crosses it, d is cold.
            (
                &[("a", 900), ("b", 90), ("c", 5), ("d", 5)],
                99.0,
                &["a", "b", "c"],
            ),
            // Reaching exactly 99 % is not exceeding it: the next edge is needed.
            (&[("a", 990), ("b", 6), ("c", 4)], 99.0, &["a", "b"]),
            // One edge over the threshold alone.
            (&[("a", 600), ("b", 400)], 50.0, &["a"]),
            // Ties: by callee name (same caller and offset).
            (&[("z", 500), ("y", 500)], 50.0, &["y", "z"]),
            (&[("z", 500), ("y", 500)], 40.0, &["y"]),
            // 100 % can never be exceeded: everything is hot.
            (&[("a", 1), ("b", 1)], 100.0, &["a", "b"]),
            (&[], 99.0, &[]),
        ];
        for (weights, cdf, want) in cases {
            let g = graph(weights);
            assert_eq!(callees(&g.hot(*cdf)), *want, "{weights:?} at {cdf}");
        }
    }

    #[test]
    fn coverage_scores_the_workloads_hot_weight_on_the_profiles_hot_edges() {
        struct Case {
            name: &'static str,
            profile: &'static [(&'static str, i64)],
            workload: &'static [(&'static str, i64)],
            score: f64,
            uncovered: &'static [&'static str],
        }
        let cases = [
            Case {
                name: "a profile of the workload itself",
                profile: &[("a", 70), ("b", 30)],
                workload: &[("a", 700), ("b", 300)],
                score: 1.0,
                uncovered: &[],
            },
            Case {
                name: "another workload: only the shared edge counts",
                profile: &[("a", 90), ("shared", 10)],
                workload: &[("b", 800), ("shared", 200)],
                score: 0.2,
                uncovered: &["b"],
            },
            Case {
                name: "an edge the profile has but not as hot does not count",
                profile: &[("a", 10_000), ("b", 1)],
                workload: &[("a", 500), ("b", 500)],
                score: 0.5,
                uncovered: &["b"],
            },
            Case {
                name: "the workload's cold tail is not asked for",
                profile: &[("a", 100)],
                workload: &[("a", 995), ("cold", 5)],
                score: 1.0,
                uncovered: &[],
            },
            Case {
                name: "nothing to cover",
                profile: &[("a", 100)],
                workload: &[],
                score: 0.0,
                uncovered: &[],
            },
        ];
        for c in cases {
            let got = coverage(&graph(c.profile), &graph(c.workload), GO_HOT_CDF_PERCENT);
            assert!((got.score - c.score).abs() < 1e-9, "{}: {got:?}", c.name);
            assert_eq!(callees(&got.uncovered), c.uncovered, "{}", c.name);
            assert_eq!(
                got.covered + got.uncovered.iter().map(|(_, w)| w).sum::<i64>(),
                got.hot_weight,
                "{}",
                c.name
            );
        }
    }

    #[test]
    fn bad_references_are_nameless_frames_not_panics() {
        let mut p = cpu()
            .frames(&[&[("leaf", 11)], &[("mid", 25)]], &[1, 10], &[])
            .build();
        p.function.clear();
        p.sample[0].location_id.push(987_654);
        let g = EdgeGraph::from_profile(&p).expect("graph");
        assert!(!g.has_start_lines);
        // Both frames lost their function: nameless nodes at line 0 (Go drops the line of a
        // frame without a function), told apart by their addresses.
        assert_eq!(g.total, 1);
        assert_eq!(g.by_weight()[0].0, edge("", 0, ""));
    }

    #[test]
    fn start_lines_count_only_on_frames_go_reads() {
        // The start line is on `main`, a third location Go never reads, and on a sample
        // without value: Go finds none.
        let mut p = cpu()
            .frames(
                &[&[("leaf", 11)], &[("mid", 25)], &[("main", 40)]],
                &[1, 10],
                &[],
            )
            .frames(&[&[("zero", 11)], &[("mid", 25)]], &[0, 0], &[])
            .build();
        for f in &mut p.function {
            let name = &p.string_table[usize::try_from(f.name).expect("name")];
            if name != "main" && name != "zero" {
                f.start_line = 0;
            }
        }
        assert!(!EdgeGraph::from_profile(&p).expect("graph").has_start_lines);
        p.sample[1].value = vec![1, 10];
        assert!(EdgeGraph::from_profile(&p).expect("graph").has_start_lines);
    }
}
