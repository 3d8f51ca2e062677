//! The querier's profile methods: `SelectMergeStacktraces` (flame graph or pprof),
//! `SelectMergeProfile` (pprof), `Diff` (two flame graphs) and `SelectSeries` (totals over
//! time).
//!
//! Not supported, with a message saying so: the TREE and DOT formats, profile-ID, trace-ID and
//! span selectors (the store keeps neither IDs nor spans), a `call_site` with pprof output or
//! in `SelectSeries`. `max_nodes` shapes flame graphs only, as upstream (pprof answers are
//! never truncated).

use std::collections::BTreeMap;
use std::time::UNIX_EPOCH;

use prost::Message as _;

use super::catalog::{pairs, store_error};
use super::connect::ConnectError;
use super::request::query;
use crate::pprof::pgo::{PgoOptions, to_pgo};
use crate::pprof::proto::Profile;
use crate::protocols::pyroscope::proto::querier::v1 as q;
use crate::protocols::pyroscope::proto::types::v1 as t;
use crate::protocols::pyroscope::wire::Code;
use crate::query::flamegraph::{
    FlameGraph, FlameGraphDiff, effective_max_nodes, flame_graph, flame_graph_diff,
};
use crate::query::source::{ProfileSource as _, Query};
use crate::query::stores::Stores;
use crate::query::tree::NameTree;

/// The answer's shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    FlameGraph,
    Pprof,
}

fn format(f: i32) -> Result<Format, ConnectError> {
    match q::ProfileFormat::try_from(f) {
        Ok(q::ProfileFormat::Unspecified | q::ProfileFormat::Flamegraph) => Ok(Format::FlameGraph),
        Ok(q::ProfileFormat::Pprof) => Ok(Format::Pprof),
        Ok(other) => Err(ConnectError::unimplemented(format!(
            "format {} is not supported: ask for PROFILE_FORMAT_FLAMEGRAPH or PROFILE_FORMAT_PPROF",
            other.as_str_name()
        ))),
        Err(_) => Err(ConnectError::invalid(format!("unknown profile format {f}"))),
    }
}

/// Refuses the selectors this store cannot answer.
fn unsupported_selectors(
    profile_ids: &[String],
    trace_ids: &[String],
    spans: &[String],
) -> Result<(), ConnectError> {
    if !profile_ids.is_empty() {
        return Err(ConnectError::unimplemented(
            "profile_id_selector is not supported: the store keeps no profile IDs",
        ));
    }
    if trace_ids.iter().any(|s| !s.is_empty()) || spans.iter().any(|s| !s.is_empty()) {
        return Err(ConnectError::unimplemented(
            "trace and span selectors are not supported: the store keeps no span profiles",
        ));
    }
    Ok(())
}

/// What a stack trace selector asks for.
#[derive(Default)]
struct Stacks {
    call_site: Vec<String>,
    pgo: Option<PgoOptions>,
}

fn stacks(sel: Option<t::StackTraceSelector>) -> Stacks {
    let Some(sel) = sel else {
        return Stacks::default();
    };
    match sel.go_pgo {
        // As upstream: with go_pgo set the call site is ignored.
        Some(pgo) => Stacks {
            call_site: Vec::new(),
            pgo: Some(PgoOptions {
                keep_locations: pgo.keep_locations as usize,
                aggregate_callees: pgo.aggregate_callees,
            }),
        },
        None => Stacks {
            call_site: sel.call_site.into_iter().map(|l| l.name).collect(),
            pgo: None,
        },
    }
}

/// The merged pprof of `query` (PGO-transformed when asked), or None when nothing matched.
fn merged_pprof(
    stores: &Stores,
    query: &Query,
    pgo: Option<&PgoOptions>,
) -> Result<Option<Profile>, ConnectError> {
    let Some(merged) = stores
        .select_merge(query, &mut |_, _| {})
        .map_err(store_error)?
    else {
        return Ok(None);
    };
    match pgo {
        None => Ok(Some(merged.profile)),
        Some(opts) => {
            let (p, _) = to_pgo(&merged.profile, opts)
                .map_err(|e| ConnectError::new(Code::InvalidArgument, format!("go_pgo: {e}")))?;
            Ok(Some(p))
        }
    }
}

/// The call tree of one select request (empty when nothing matched).
fn tree(stores: &Stores, req: &q::SelectMergeStacktracesRequest) -> Result<NameTree, ConnectError> {
    unsupported_selectors(
        &req.profile_id_selector,
        &req.trace_id_selector,
        &req.span_selector,
    )?;
    let sel = stacks(req.stack_trace_selector.clone());
    let Some((query, _)) = query(
        &req.profile_type_id,
        &req.label_selector,
        req.start,
        req.end,
    )?
    else {
        return Ok(NameTree::new());
    };
    if let Some(opts) = &sel.pgo {
        let mut tree = NameTree::new();
        if let Some(p) = merged_pprof(stores, &query, Some(opts))? {
            tree.add_profile(&p, 0)
                .map_err(|e| ConnectError::new(Code::Internal, e.to_string()))?;
        }
        return Ok(tree);
    }
    Ok(stores
        .tree(&query, &sel.call_site)
        .map_err(store_error)?
        .map(|s| s.tree)
        .unwrap_or_default())
}

pub fn flame_graph_message(fg: FlameGraph) -> q::FlameGraph {
    q::FlameGraph {
        names: fg.names,
        levels: fg
            .levels
            .into_iter()
            .map(|values| q::Level { values })
            .collect(),
        total: fg.total,
        max_self: fg.max_self,
    }
}

fn diff_message(d: FlameGraphDiff) -> q::FlameGraphDiff {
    q::FlameGraphDiff {
        names: d.names,
        levels: d
            .levels
            .into_iter()
            .map(|values| q::Level { values })
            .collect(),
        total: d.total,
        max_self: d.max_self,
        left_ticks: d.left_ticks,
        right_ticks: d.right_ticks,
    }
}

pub fn select_merge_stacktraces(
    stores: &Stores,
    req: q::SelectMergeStacktracesRequest,
) -> Result<q::SelectMergeStacktracesResponse, ConnectError> {
    let max_nodes = effective_max_nodes(req.max_nodes).map_err(ConnectError::invalid)?;
    // Checked on the request as sent: SelectMergeProfileRequest has no span selector, so the
    // pprof path below would drop one unseen.
    unsupported_selectors(
        &req.profile_id_selector,
        &req.trace_id_selector,
        &req.span_selector,
    )?;
    match format(req.format)? {
        Format::FlameGraph => {
            let mut tree = tree(stores, &req)?;
            Ok(q::SelectMergeStacktracesResponse {
                flamegraph: Some(flame_graph_message(flame_graph(&mut tree, max_nodes))),
                ..Default::default()
            })
        }
        Format::Pprof => {
            let profile = select_merge_profile(
                stores,
                q::SelectMergeProfileRequest {
                    profile_type_id: req.profile_type_id,
                    label_selector: req.label_selector,
                    start: req.start,
                    end: req.end,
                    max_nodes: req.max_nodes,
                    stack_trace_selector: req.stack_trace_selector,
                    profile_id_selector: req.profile_id_selector,
                    trace_id_selector: req.trace_id_selector,
                },
            )?;
            Ok(q::SelectMergeStacktracesResponse {
                pprof: Some(q::PprofProfile { profile }),
                ..Default::default()
            })
        }
    }
}

/// The encoded merged profile (empty when nothing matched).
pub fn select_merge_profile(
    stores: &Stores,
    req: q::SelectMergeProfileRequest,
) -> Result<Vec<u8>, ConnectError> {
    unsupported_selectors(&req.profile_id_selector, &req.trace_id_selector, &[])?;
    let sel = stacks(req.stack_trace_selector);
    if !sel.call_site.is_empty() {
        return Err(ConnectError::unimplemented(
            "a call_site stack trace selector is supported with flame graphs only, not with pprof output",
        ));
    }
    let Some((query, _)) = query(
        &req.profile_type_id,
        &req.label_selector,
        req.start,
        req.end,
    )?
    else {
        return Ok(Vec::new());
    };
    Ok(merged_pprof(stores, &query, sel.pgo.as_ref())?
        .map(|p| p.encode_to_vec())
        .unwrap_or_default())
}

pub fn diff(stores: &Stores, req: q::DiffRequest) -> Result<q::DiffResponse, ConnectError> {
    let (Some(left), Some(right)) = (req.left, req.right) else {
        return Err(ConnectError::invalid("a diff needs both left and right"));
    };
    let max_nodes =
        effective_max_nodes(left.max_nodes.or(right.max_nodes)).map_err(ConnectError::invalid)?;
    let mut l = tree(stores, &left).map_err(|e| side("left", e))?;
    let mut r = tree(stores, &right).map_err(|e| side("right", e))?;
    Ok(q::DiffResponse {
        flamegraph: Some(diff_message(flame_graph_diff(&mut l, &mut r, max_nodes))),
    })
}

fn side(which: &str, e: ConnectError) -> ConnectError {
    ConnectError {
        message: format!("{which}: {}", e.message),
        ..e
    }
}

/// A series' points being summed: step timestamp -> (sum, profiles).
type Points = BTreeMap<i64, (f64, u64)>;

/// The point a profile at `ts` counts in: upstream's steps are `start`, `start + step`, ... up
/// to `end` (all ms), and a profile counts at the first step at or after its time; `None` past
/// the last step.
fn step_of(ts: i64, start: i64, end: i64, step: i64) -> Option<i64> {
    let after = ts.saturating_sub(start).max(0);
    let steps = after / step + i64::from(after % step != 0);
    let at = start.saturating_add(steps.saturating_mul(step));
    (at <= end).then_some(at)
}

pub fn select_series(
    stores: &Stores,
    req: q::SelectSeriesRequest,
) -> Result<q::SelectSeriesResponse, ConnectError> {
    if req
        .stack_trace_selector
        .as_ref()
        .is_some_and(|s| !s.call_site.is_empty() || s.go_pgo.is_some())
    {
        return Err(ConnectError::unimplemented(
            "stack_trace_selector is not supported in SelectSeries",
        ));
    }
    if !(req.step.is_finite() && req.step > 0.0) {
        return Err(ConnectError::invalid(format!(
            "step must be a positive number of seconds, got {}",
            req.step
        )));
    }
    let average = match req.aggregation {
        None => false,
        Some(a) => match t::TimeSeriesAggregationType::try_from(a) {
            Ok(t::TimeSeriesAggregationType::Sum) => false,
            Ok(t::TimeSeriesAggregationType::Average) => true,
            Err(_) => return Err(ConnectError::invalid(format!("unknown aggregation {a}"))),
        },
    };
    let (_, series_type) = super::request::profile_type(&req.profile_type_id)?;
    let Some((query, range)) = query(
        &req.profile_type_id,
        &req.label_selector,
        req.start,
        req.end,
    )?
    else {
        return Ok(q::SelectSeriesResponse::default());
    };
    let step_ms = ((req.step * 1000.0).round() as i64).max(1);
    // Group labels -> step timestamp -> (sum, count).
    let mut groups: BTreeMap<Vec<(String, String)>, Points> = BTreeMap::new();
    for p in stores.totals(&query).map_err(store_error)? {
        let ts =
            p.at.duration_since(UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
        let Some(step_at) = step_of(ts, range.start_ms, range.end_ms, step_ms) else {
            continue;
        };
        let shown = series_type.series_labels(&p.labels);
        let key: Vec<(String, String)> = shown
            .into_iter()
            .filter(|(k, _)| req.group_by.contains(k))
            .collect();
        let point = groups
            .entry(key)
            .or_default()
            .entry(step_at)
            .or_insert((0.0, 0));
        point.0 += p.total as f64;
        point.1 += 1;
    }
    let mut series: Vec<t::Series> = groups
        .into_iter()
        .map(|(labels, points)| t::Series {
            labels: pairs(&labels),
            points: points
                .into_iter()
                .map(|(timestamp, (sum, n))| t::Point {
                    value: if average { sum / n.max(1) as f64 } else { sum },
                    timestamp,
                })
                .collect(),
        })
        .collect();
    if let Some(limit) = req.limit.filter(|l| *l > 0) {
        let total = |s: &t::Series| s.points.iter().map(|p| p.value).sum::<f64>();
        series.sort_by(|a, b| total(b).total_cmp(&total(a)));
        series.truncate(usize::try_from(limit).unwrap_or(usize::MAX));
        series.sort_by(|a, b| {
            let key = |s: &t::Series| {
                s.labels
                    .iter()
                    .map(|l| (l.name.clone(), l.value.clone()))
                    .collect::<Vec<_>>()
            };
            key(a).cmp(&key(b))
        });
    }
    Ok(q::SelectSeriesResponse { series })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profiles_count_at_the_first_step_at_or_after_them() {
        // (ts, start, end, step, point)
        let cases = [
            (1_000, 1_000, 5_000, 1_000, Some(1_000)),
            (1_001, 1_000, 5_000, 1_000, Some(2_000)),
            (2_000, 1_000, 5_000, 1_000, Some(2_000)),
            (500, 1_000, 5_000, 1_000, Some(1_000)),
            (4_999, 1_000, 5_000, 1_000, Some(5_000)),
            (5_001, 1_000, 5_000, 1_000, None),
            (4_500, 1_000, 4_600, 1_000, None),
        ];
        for (ts, start, end, step, want) in cases {
            assert_eq!(
                step_of(ts, start, end, step),
                want,
                "{ts} in {start}..{end}/{step}"
            );
        }
    }

    #[test]
    fn formats_and_selectors_that_are_not_served_say_so() {
        assert_eq!(format(0), Ok(Format::FlameGraph));
        assert_eq!(format(4), Ok(Format::Pprof));
        for f in [2, 3] {
            let e = format(f).expect_err("unsupported");
            assert_eq!(e.code, Code::Unimplemented);
            assert!(e.message.contains("FLAMEGRAPH"), "{}", e.message);
        }
        assert_eq!(format(99).expect_err("unknown").code, Code::InvalidArgument);
        assert!(unsupported_selectors(&["id".into()], &[], &[]).is_err());
        assert!(
            unsupported_selectors(&[], &["0af7651916cd43dd8448eb211c80319c".into()], &[]).is_err()
        );
        assert!(unsupported_selectors(&[], &[], &["00f067aa0ba902b7".into()]).is_err());
        assert!(unsupported_selectors(&[], &[String::new()], &[]).is_ok());
    }

    #[test]
    fn a_span_selector_is_refused_with_pprof_output_too() {
        let stores = Stores::new(Vec::new());
        for format in [q::ProfileFormat::Flamegraph, q::ProfileFormat::Pprof] {
            let req = q::SelectMergeStacktracesRequest {
                profile_type_id: "process_cpu:cpu:nanoseconds:cpu:nanoseconds".into(),
                label_selector: "{}".into(),
                start: 1,
                end: 2,
                format: format as i32,
                span_selector: vec!["00f067aa0ba902b7".into()],
                ..Default::default()
            };
            let e = select_merge_stacktraces(&stores, req).expect_err("span selector refused");
            assert_eq!(e.code, Code::Unimplemented, "{format:?}: {}", e.message);
        }
    }
}
