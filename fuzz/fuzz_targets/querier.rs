//! Querier fuzz target: what `scraper run`'s query API (`POST /querier.v1.QuerierService/*`,
//! src/server/querier) reads from a client, and the flame graph path it answers from stored
//! profiles (src/pprof/stacks.rs, src/query/tree.rs, src/query/flamegraph.rs).
//!
//! Every input is read both ways, so each part's execution count is the target's:
//!
//! * as a request body, sent to every method, plain and with `Content-Encoding: gzip`: the
//!   Connect body, the method's message, its checks (profile type ID, selectors, range, step,
//!   `max_nodes`, format, selectors not served) and the answer over no store. An error must be
//!   a 4xx or 501 (the client's fault or not served), never a panic nor a 500; an answer must
//!   decode as the method's response;
//! * as a pprof profile (raw or gzip): `RawStacks` -> `NameTree::add_raw` for each sample type
//!   (at most 4). The tree must hold the same stacks as one built from the prost-decoded
//!   profile; its flame graph must decode back (`FlameGraph::stacks`) to the tree's stacks and
//!   total with every node drawn, and with `max_nodes` 1, 2 and 7 to the same total, with each
//!   drawn stack outside "other" keeping its value; a diff of two sample types (or one against
//!   nothing) must decode to each side's stacks. Values over `i64::MAX` in sum are checked for
//!   panics only (totals saturate).
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use prost::Message as _;
use scraper::pprof::Limits;
use scraper::pprof::stacks::RawStacks;
use scraper::protocols::pyroscope::proto::querier::v1 as q;
use scraper::protocols::pyroscope::proto::types::v1 as t;
use scraper::query::flamegraph::{OTHER, decode_stacks, flame_graph, flame_graph_diff};
use scraper::query::tree::NameTree;

type Stacks = BTreeMap<Vec<String>, i64>;

fn limits() -> Limits {
    // Small, so that huge declared sizes are refused rather than allocated.
    Limits {
        max_decompressed_bytes: 1 << 20,
    }
}

/// Stacks summed by path (decoding may list a path once per node it passes through).
fn by_path(stacks: Vec<(Vec<String>, i64)>) -> Stacks {
    let mut out = Stacks::new();
    for (path, v) in stacks {
        let e = out.entry(path).or_insert(0);
        *e = e.checked_add(v).expect("sum fits: checked by the caller");
    }
    out
}

fn requests(data: &[u8]) {
    for method in scraper::server::fuzz_methods() {
        for encoding in [None, Some("gzip")] {
            match scraper::server::fuzz_request(method, encoding, data) {
                Ok(answer) => {
                    let decodes = match method {
                        "ProfileTypes" => q::ProfileTypesResponse::decode(&answer[..]).is_ok(),
                        "LabelNames" => t::LabelNamesResponse::decode(&answer[..]).is_ok(),
                        "LabelValues" => t::LabelValuesResponse::decode(&answer[..]).is_ok(),
                        "Series" => q::SeriesResponse::decode(&answer[..]).is_ok(),
                        "GetProfileStats" => {
                            t::GetProfileStatsResponse::decode(&answer[..]).is_ok()
                        }
                        "SelectMergeStacktraces" => {
                            q::SelectMergeStacktracesResponse::decode(&answer[..]).is_ok()
                        }
                        // Nothing stored: an empty profile.
                        "SelectMergeProfile" => answer.is_empty(),
                        "SelectSeries" => q::SelectSeriesResponse::decode(&answer[..]).is_ok(),
                        "Diff" => q::DiffResponse::decode(&answer[..]).is_ok(),
                        other => panic!("unknown method {other}"),
                    };
                    assert!(decodes, "{method}: bad answer {answer:?}");
                }
                Err((status, message)) => {
                    assert!(
                        (400..500).contains(&status) || status == 501,
                        "{method} {encoding:?}: status {status}: {message}"
                    );
                    assert!(!message.is_empty(), "{method}: error without a message");
                }
            }
        }
    }
}

/// Checks the flame graph of `tree` with `max_nodes` against `want` (the tree's stacks).
fn check_flame_graph(tree: &mut NameTree, want: &Stacks, max_nodes: i64) {
    let fg = flame_graph(tree, max_nodes);
    assert_eq!(fg.total, tree.total(), "max_nodes {max_nodes}");
    let drawn = fg
        .stacks()
        .unwrap_or_else(|e| panic!("max_nodes {max_nodes}: our flame graph does not decode: {e}"));
    let root_self = fg
        .levels
        .first()
        .and_then(|l| l.get(2))
        .copied()
        .unwrap_or(0);
    let max_self = drawn
        .iter()
        .map(|(_, v)| *v)
        .max()
        .unwrap_or(0)
        .max(root_self);
    assert_eq!(fg.max_self, max_self, "max_nodes {max_nodes}");
    assert!(drawn.iter().all(|(_, v)| *v > 0), "max_nodes {max_nodes}");
    let drawn = by_path(drawn);
    // A function really named "other" is folded even when every node may be drawn (as
    // upstream), so only a tree without one must come back exactly.
    let has_other = want.keys().any(|p| p.iter().any(|f| f == OTHER));
    let all = max_nodes == 0 || usize::try_from(max_nodes).is_ok_and(|m| tree.len() <= m);
    if all && !has_other {
        assert_eq!(&drawn, want, "max_nodes {max_nodes}: every node drawn");
        return;
    }
    // The root's own value (drawn as its self, not as a stack) is 0 since samples without
    // locations are skipped as upstream skips them; it counted in the total before.
    let root_self = tree.total() - want.values().sum::<i64>();
    assert_eq!(fg.levels.first().and_then(|l| l.get(2)), Some(&root_self));
    let sum: i64 = drawn.values().sum();
    assert_eq!(
        sum + root_self,
        tree.total(),
        "max_nodes {max_nodes}: folding keeps the total"
    );
    for (path, v) in &drawn {
        if !path.iter().any(|f| f == OTHER) {
            assert_eq!(want.get(path), Some(v), "max_nodes {max_nodes}: {path:?}");
        }
    }
}

fn profile(data: &[u8]) {
    let mut raw = RawStacks::new();
    if raw.load(data, &limits()).is_err() {
        return;
    }
    let decoded = scraper::pprof::decode(data, &limits()).ok();
    let types = raw.sample_types().len().min(4);
    let mut trees: Vec<(NameTree, Stacks)> = Vec::new();
    for index in 0..types {
        let mut tree = NameTree::new();
        let added = tree.add_raw(&mut raw, index);
        if let Some(p) = &decoded {
            let mut direct = NameTree::new();
            let direct_added = direct.add_profile(p, index);
            assert_eq!(
                added.is_ok(),
                direct_added.is_ok(),
                "type {index}: raw {added:?}, decoded {direct_added:?}"
            );
        }
        if added.is_err() {
            continue;
        }
        // The round trip holds only when no sum saturates.
        let mut positive = 0i128;
        for i in 0..raw.sample_count() {
            // Samples without locations are skipped, as upstream's tree skips them.
            if let Ok((locations, values)) = raw.read_sample(i)
                && !locations.is_empty()
            {
                positive += i128::from(values.get(index).copied().unwrap_or(0).max(0));
            }
        }
        if positive > i128::from(i64::MAX) {
            for max_nodes in [0, 1, 2] {
                let _ = flame_graph(&mut tree, max_nodes).stacks();
            }
            continue;
        }
        tree.finish();
        let want = by_path(tree.stacks());
        assert_eq!(i128::from(tree.total()), positive, "type {index}");
        if let Some(p) = &decoded {
            let mut direct = NameTree::new();
            if direct.add_profile(p, index).is_ok() {
                assert_eq!(
                    by_path(direct.stacks()),
                    want,
                    "type {index}: raw vs decoded"
                );
            }
        }
        for max_nodes in [0, 1, 2, 7] {
            check_flame_graph(&mut tree, &want, max_nodes);
        }
        trees.push((tree, want));
    }
    let (mut left, want_left) = match trees.pop() {
        Some(t) => t,
        None => return,
    };
    let (mut right, want_right) = trees.pop().unwrap_or_default();
    if i128::from(left.total()) + i128::from(right.total()) > i128::from(i64::MAX) {
        let _ = flame_graph_diff(&mut left, &mut right, 2);
        return;
    }
    let d = flame_graph_diff(&mut left, &mut right, 0);
    assert_eq!((d.left_ticks, d.right_ticks), (left.total(), right.total()));
    let side = |x: usize, own: usize| {
        decode_stacks(&d.names, &d.levels, 7, x, own)
            .unwrap_or_else(|e| panic!("our diff does not decode: {e}"))
    };
    // The diff names the root by the empty name, shown as "total": a function with the empty
    // name shares its entry.
    let shown = |want: Stacks| -> Stacks {
        let mut out = Stacks::new();
        for (path, v) in want {
            let path = path
                .into_iter()
                .map(|f| if f.is_empty() { "total".to_string() } else { f })
                .collect();
            *out.entry(path).or_insert(0) += v;
        }
        out
    };
    assert_eq!(by_path(side(0, 2)), shown(want_left), "diff, left side");
    assert_eq!(by_path(side(3, 5)), shown(want_right), "diff, right side");
    let small = flame_graph_diff(&mut left, &mut right, 2);
    assert_eq!(
        (small.left_ticks, small.right_ticks),
        (d.left_ticks, d.right_ticks)
    );
}

fuzz_target!(|data: &[u8]| {
    requests(data);
    profile(data);
});
