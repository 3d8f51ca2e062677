//! Fitting a PGO profile into a budget of call edges or bytes while keeping the hottest edges
//! (`scraper pgo --max-edges`, `--max-bytes`).
//!
//! Go only reads call edges (see [`super::pgo_edges`]), so the budget is counted in them. The
//! profile stays a real profile: a sample is kept when every edge it contributes is kept, and
//! dropped otherwise (its weight would only feed edges the budget gave up); a sample that
//! contributes no edge (a one-frame stack) is always dropped, since Go ignores it.
//!
//! A sample can feed several edges (inlined frames), so keeping an edge whole means keeping
//! the edges that share its samples too. Edges are taken in the compiler's order, each with
//! those companions while they fit in the budget; an edge whose companions do not fit is kept
//! alone when some of its samples feed no other dropped edge (it loses the rest of its
//! weight), and skipped otherwise, so the budget goes to the next edge rather than to an edge
//! no sample would carry. The summary says how much of the edge weight is left.

use std::collections::{HashMap, HashSet};

use super::error::Result;
use super::merge::merge;
use super::pgo_edges::{CallEdge, EdgeGraph, edges_per_sample};
use super::proto::Profile;

/// What a trim kept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrimSummary {
    pub edges_before: usize,
    pub edges_after: usize,
    /// Total edge weight (Go's `TotalWeight`) before and after.
    pub weight_before: i64,
    pub weight_after: i64,
}

impl TrimSummary {
    /// The share of the edge weight kept, 0..=1 (1 for a profile without edges).
    pub fn kept_share(&self) -> f64 {
        if self.weight_before <= 0 {
            1.0
        } else {
            self.weight_after as f64 / self.weight_before as f64
        }
    }
}

/// Keeps the samples of `p` that feed only the edges chosen for a budget of `max_edges` (see
/// the module docs); one-frame samples go even when every edge fits.
pub fn trim_edges(p: &Profile, max_edges: usize) -> Result<(Profile, TrimSummary)> {
    let before = EdgeGraph::from_profile(p)?;
    let ranked = before.by_weight();
    let per_sample = edges_per_sample(p)?;
    let kept = choose(&before, &ranked, &per_sample, max_edges);
    let mut out = p.clone();
    out.sample = p
        .sample
        .iter()
        .zip(&per_sample)
        .filter(|(_, edges)| !edges.is_empty() && edges.iter().all(|e| kept.contains(e)))
        .map(|(s, _)| s.clone())
        .collect();
    // Merging the one profile drops the functions, locations and strings nobody uses now.
    let out = merge(std::slice::from_ref(&out))?;
    let after = EdgeGraph::from_profile(&out)?;
    let summary = TrimSummary {
        edges_before: ranked.len(),
        edges_after: after.weights.len(),
        weight_before: before.total,
        weight_after: after.total,
    };
    Ok((out, summary))
}

/// At most `max` edges to keep, hottest first, each with the edges sharing its samples when
/// they fit, alone when that still keeps one of its samples, else skipped.
fn choose<'a>(
    graph: &EdgeGraph,
    ranked: &'a [(CallEdge, i64)],
    per_sample: &'a [Vec<CallEdge>],
    max: usize,
) -> HashSet<&'a CallEdge> {
    let mut samples_of: HashMap<&CallEdge, Vec<usize>> = HashMap::new();
    for (i, edges) in per_sample.iter().enumerate() {
        for e in edges {
            samples_of.entry(e).or_default().push(i);
        }
    }
    let mut kept: HashSet<&'a CallEdge> = HashSet::new();
    for (edge, _) in ranked {
        if kept.len() >= max {
            break;
        }
        if kept.contains(edge) {
            continue;
        }
        let samples = samples_of.get(edge).map_or(&[][..], Vec::as_slice);
        // The edge and the weighted edges it shares a sample with, not kept yet.
        let mut group: Vec<&'a CallEdge> = vec![edge];
        for &i in samples {
            for e in &per_sample[i] {
                if graph.weights.contains_key(e) && !kept.contains(e) && !group.contains(&e) {
                    group.push(e);
                }
            }
        }
        if kept.len() + group.len() <= max {
            kept.extend(group);
            continue;
        }
        let carried = samples
            .iter()
            .any(|&i| per_sample[i].iter().all(|e| e == edge || kept.contains(e)));
        if carried {
            kept.insert(edge);
        }
    }
    kept
}

/// Keeps as many of the hottest edges as fit in `max_bytes` once encoded at `level` (the
/// largest such count, found by bisection: the encoded size grows with the edges kept). A
/// profile within the budget is returned unchanged; a budget too small for a single edge
/// leaves a profile without samples.
pub fn trim_bytes(p: &Profile, max_bytes: usize, level: u32) -> Result<(Profile, TrimSummary)> {
    let size = |p: &Profile| super::codec::encode(p, level).len();
    let graph = EdgeGraph::from_profile(p)?;
    let edges = graph.weights.len();
    if size(p) <= max_bytes {
        let summary = TrimSummary {
            edges_before: edges,
            edges_after: edges,
            weight_before: graph.total,
            weight_after: graph.total,
        };
        return Ok((p.clone(), summary));
    }
    // Every edge, without the one-frame samples, may fit where the whole profile does not.
    let whole = trim_edges(p, edges)?;
    if size(&whole.0) <= max_bytes {
        return Ok(whole);
    }
    // Invariant: `lo` edges fit (0 always "fits": the caller decides what an empty result
    // means), `hi` edges do not.
    let (mut lo, mut hi) = (0usize, edges);
    let mut best = trim_edges(p, 0)?;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        let candidate = trim_edges(p, mid)?;
        if size(&candidate.0) <= max_bytes {
            lo = mid;
            best = candidate;
        } else {
            hi = mid;
        }
    }
    Ok(best)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::testutil::B;

    /// Four edges from `main` at lines 71..=74 to `a`..`d`, weights 40, 30, 20, 10, plus a
    /// sample with an inlined frame feeding `c`'s edge and an `inl` edge of weight 5, and a
    /// one-frame sample.
    fn profile() -> Profile {
        B::new(&[("cpu", "nanoseconds")])
            .frames(&[&[("a", 1)], &[("main", 71)]], &[40], &[])
            .frames(&[&[("b", 1)], &[("main", 72)]], &[30], &[])
            .frames(&[&[("c", 1)], &[("main", 73)]], &[15], &[])
            .frames(&[&[("inl", 2), ("c", 1)], &[("main", 73)]], &[5], &[])
            .frames(&[&[("d", 1)], &[("main", 74)]], &[10], &[])
            .frames(&[&[("alone", 1)]], &[100], &[])
            .build()
    }

    fn callees(p: &Profile) -> Vec<String> {
        let mut v: Vec<String> = EdgeGraph::from_profile(p)
            .expect("graph")
            .weights
            .keys()
            .map(|e| e.callee.clone())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn the_hottest_edges_are_kept() {
        // Edge weights: a 40, b 30, c 20 (15 + 5), d 10, inl 5; total 105.
        let cases: &[(usize, &[&str], i64)] = &[
            (0, &[], 0),
            (1, &["a"], 40),
            (2, &["a", "b"], 70),
            // `c` and `inl` together do not fit: `c` alone, without the inlined sample.
            (3, &["a", "b", "c"], 85),
            // They fit: `c` keeps all its weight, and `inl` comes with it before `d`.
            (4, &["a", "b", "c", "inl"], 95),
            (5, &["a", "b", "c", "d", "inl"], 105),
            (50, &["a", "b", "c", "d", "inl"], 105),
        ];
        let p = profile();
        for (n, want, weight) in cases {
            let (out, summary) = trim_edges(&p, *n).expect("trim");
            assert_eq!(callees(&out), *want, "max {n}");
            assert_eq!(summary.weight_after, *weight, "max {n}");
            assert_eq!(summary.weight_before, 105);
            assert_eq!(summary.edges_before, 5);
            assert_eq!(summary.edges_after, want.len());
            crate::pprof::validate(&out).expect("valid");
            // The one-frame sample and unused functions are gone, even within the budget.
            assert!(out.sample.iter().all(|s| s.location_id.len() > 1));
            assert!(!out.string_table.iter().any(|s| s == "alone"));
        }
    }

    #[test]
    fn a_hot_edge_whose_samples_feed_others_is_not_lost() {
        // `c -> inl` and `main -> c` (50 each) share their only sample; `main -> a` is 40.
        let p = B::new(&[("cpu", "nanoseconds")])
            .frames(&[&[("inl", 2), ("c", 1)], &[("main", 73)]], &[50], &[])
            .frames(&[&[("a", 1)], &[("main", 71)]], &[40], &[])
            .build();
        // A budget of 1 cannot hold the pair: it goes to `a` rather than to an edge no sample
        // would carry. A budget of 2 keeps the hottest pair whole.
        let cases: &[(usize, &[&str], i64)] = &[
            (0, &[], 0),
            (1, &["a"], 40),
            (2, &["c", "inl"], 100),
            (3, &["a", "c", "inl"], 140),
        ];
        for (n, want, weight) in cases {
            let (out, summary) = trim_edges(&p, *n).expect("trim");
            assert_eq!(callees(&out), *want, "max {n}");
            assert_eq!(summary.weight_after, *weight, "max {n}");
            assert!(summary.edges_after <= *n, "max {n}");
        }
    }

    #[test]
    fn a_byte_budget_keeps_the_most_edges_that_fit() {
        let p = profile();
        let size = |p: &Profile| crate::pprof::encode(p, 6).len();
        let sizes: Vec<usize> = (0..=5)
            .map(|n| size(&trim_edges(&p, n).expect("trim").0))
            .collect();
        for n in 0..=5usize {
            // Exactly the size of `n` edges, and one byte less.
            let (out, _) = trim_bytes(&p, sizes[n], 6).expect("fits");
            let kept = callees(&out).len();
            assert!(kept >= n && size(&out) <= sizes[n], "budget {}", sizes[n]);
            if n > 0 && sizes[n - 1] < sizes[n] {
                let (out, _) = trim_bytes(&p, sizes[n] - 1, 6).expect("smaller");
                assert!(callees(&out).len() < n, "budget {}", sizes[n] - 1);
            }
        }
        let (out, summary) = trim_bytes(&p, 1, 6).expect("tiny");
        assert!(out.sample.is_empty());
        assert_eq!(summary.weight_after, 0);
        assert_eq!(summary.kept_share(), 0.0);
        let (out, _) = trim_bytes(&p, usize::MAX, 6).expect("huge");
        assert_eq!(out, p);
    }
}
