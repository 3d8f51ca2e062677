//! `scraper pgo check default.pgo QUERY [--from --to] [--min-score PCT]`: how well a PGO
//! profile covers a workload's current hot call edges, so that a profile taken from one
//! workload (layer-1 load balancing) is caught before it optimises a build for another
//! (layer-2 tail sampling).
//!
//! The score is the share of the workload's call-edge weight on its hot call edges (the edges
//! Go would mark hot in a profile of this workload: the top 99 % of its edge weight) that lies
//! on edges the given profile marks hot (`pprof::pgo_edges::coverage`). Edge weight, not CPU: a
//! sample adds its value to every edge of its two leaf-most locations. The profile may also be
//! Go's preprocessed `GO PREPROFILE V1` text. Exit codes are the diff
//! pipeline's: 0 at or above `--min-score` (or without it), 3 below, 1 when the score cannot
//! be computed, 2 for bad usage.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::source::{QueryArgs, RangeArgs, SourceArgs, fetch};
use crate::pprof::pgo_edges::{CallEdge, EdgeGraph, GO_HOT_CDF_PERCENT, coverage};

/// The first line of Go's preprocessed profile (`go tool preprofile`'s output).
const PREPROFILE_HEADER: &str = "GO PREPROFILE V1\n";

/// `--min-score` not met.
const BELOW_THRESHOLD: u8 = 3;

#[derive(Debug, Args)]
pub(crate) struct CheckCmd {
    /// The PGO profile to score (pprof, gzipped or not).
    #[arg(value_name = "PROFILE")]
    profile: PathBuf,
    #[command(flatten)]
    query: QueryArgs,
    #[command(flatten)]
    range: RangeArgs,
    /// Exit 3 when the score is below this percentage.
    #[arg(long, value_name = "PERCENT", value_parser = super::pgo::percent)]
    min_score: Option<f64>,
    /// How many uncovered edges to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
    /// Go's hot-edge threshold: edges carrying the top PERCENT of the weight are hot (the
    /// compiler's -d=pgoinlinecdfthreshold, 99 by default).
    #[arg(
        long,
        value_name = "PERCENT",
        default_value_t = GO_HOT_CDF_PERCENT,
        value_parser = super::pgo::percent
    )]
    hot_cdf: f64,
    #[command(flatten)]
    source: SourceArgs,
}

/// The call edges of a profile `go tool preprofile` wrote: after the header, three lines per
/// edge (caller, callee, "offset weight"), as Go's `FromSerialized` reads them. The weights'
/// unit is not recorded (the profile's first samples/count or cpu/nanoseconds value).
fn preprofile(text: &str) -> anyhow::Result<EdgeGraph> {
    let body = text
        .strip_prefix(PREPROFILE_HEADER)
        .context("not a Go preprocessed profile")?;
    let mut graph = EdgeGraph {
        // Go writes a preprocessed profile only from a profile with start lines.
        has_start_lines: true,
        sample_type: ("weight".into(), String::new()),
        ..EdgeGraph::default()
    };
    let mut lines = body.lines();
    while let Some(caller) = lines.next() {
        let (Some(callee), Some(numbers)) = (lines.next(), lines.next()) else {
            anyhow::bail!("the edge from {caller:?} is cut short");
        };
        let parsed = numbers
            .split_once(' ')
            .and_then(|(o, w)| Some((o.parse::<i64>().ok()?, w.parse::<i64>().ok()?)));
        let Some((offset, weight)) = parsed else {
            anyhow::bail!("{numbers:?} is not \"offset weight\" (edge from {caller:?})");
        };
        let edge = CallEdge {
            caller: caller.to_owned(),
            callee: callee.to_owned(),
            offset,
        };
        let slot = graph.weights.entry(edge).or_insert(0);
        *slot = slot.saturating_add(weight);
        graph.total = graph.total.saturating_add(weight);
    }
    Ok(graph)
}

/// `nanos` as seconds when the weights are CPU nanoseconds, else the plain number.
fn amount(weight: i64, graph: &EdgeGraph) -> String {
    if graph.sample_type == ("cpu".to_string(), "nanoseconds".to_string()) {
        format!("{:.2}s", weight as f64 / 1e9)
    } else {
        format!("{weight} {}", graph.sample_type.0)
    }
}

pub(crate) fn check(args: CheckCmd) -> anyhow::Result<ExitCode> {
    let bytes = std::fs::read(&args.profile)
        .with_context(|| format!("reading {}", args.profile.display()))?;
    let profile_graph = if bytes.starts_with(PREPROFILE_HEADER.as_bytes()) {
        preprofile(&String::from_utf8_lossy(&bytes))
            .with_context(|| format!("reading {}", args.profile.display()))?
    } else {
        let profile = crate::pprof::decode(&bytes, &crate::pprof::Limits::default())
            .with_context(|| format!("{} is not a pprof profile", args.profile.display()))?;
        EdgeGraph::from_profile(&profile)
            .with_context(|| format!("reading {}'s call edges", args.profile.display()))?
    };
    if profile_graph.total > 0 && !profile_graph.has_start_lines {
        eprintln!(
            "warning: {} has no function start lines: `go build` would refuse it",
            args.profile.display()
        );
    }

    let q = args.range.query(&args.query)?;
    let source = args.source.open()?;
    let merged = fetch(source.as_ref(), &q, "the workload")?;
    let workload =
        EdgeGraph::from_profile(&merged.profile).context("reading the workload's call edges")?;
    if workload.total > 0 && !workload.has_start_lines {
        // Call sites are offsets from the caller's first line: without start lines they are
        // absolute lines and match nothing in a profile Go can use, a score of ~0 % that
        // would say nothing about the profile.
        anyhow::bail!(
            "the workload {}'s profiles have no function start lines (a program built with Go older than 1.20): its call sites cannot be matched to a PGO profile's, nothing to score",
            q.selector
        );
    }
    let score = coverage(&profile_graph, &workload, args.hot_cdf);
    if score.hot_weight <= 0 {
        anyhow::bail!(
            "the workload {} has no CPU on call edges in {}..{}: nothing to score",
            q.selector,
            crate::gocompat::time::rfc3339_millis(q.from),
            crate::gocompat::time::rfc3339_millis(q.to)
        );
    }

    println!(
        "{} covers {:.1}% of the hot call-edge weight of {} ({}..{}, {} profiles from {} series)",
        args.profile.display(),
        score.score * 100.0,
        q.selector,
        crate::gocompat::time::rfc3339_millis(q.from),
        crate::gocompat::time::rfc3339_millis(q.to),
        merged.profiles,
        merged.series,
    );
    println!(
        "  workload: {} hot call edges, {} on them; profile: {} hot call edges",
        score.workload_hot_edges,
        amount(score.hot_weight, &workload),
        score.profile_hot_edges,
    );
    if !score.uncovered.is_empty() && args.top > 0 {
        println!("  hottest uncovered edges (share of the workload's hot call-edge weight):");
        for (edge, weight) in score.uncovered.iter().take(args.top) {
            println!(
                "  {:>6.1}%  {:>9}  {edge}",
                *weight as f64 * 100.0 / score.hot_weight as f64,
                amount(*weight, &workload),
            );
        }
        if score.uncovered.len() > args.top {
            println!("  ... and {} more", score.uncovered.len() - args.top);
        }
    }
    if let Some(min) = args.min_score
        && score.score * 100.0 < min
    {
        eprintln!(
            "{}: score {:.1}% is below --min-score {min}%",
            args.profile.display(),
            score.score * 100.0
        );
        return Ok(ExitCode::from(BELOW_THRESHOLD));
    }
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocessed_profiles_are_read_as_go_writes_them() {
        let text = "GO PREPROFILE V1\nmain.main\nmain.spin\n3 500\nmain.work\nfmt.Println\n12 7\nmain.main\nmain.spin\n3 1\n";
        let g = preprofile(text).expect("read");
        assert_eq!(g.total, 508);
        assert_eq!(
            g.by_weight(),
            vec![
                (
                    CallEdge {
                        caller: "main.main".into(),
                        callee: "main.spin".into(),
                        offset: 3
                    },
                    501
                ),
                (
                    CallEdge {
                        caller: "main.work".into(),
                        callee: "fmt.Println".into(),
                        offset: 12
                    },
                    7
                ),
            ]
        );
        assert!(g.has_start_lines);
        assert_eq!(preprofile("GO PREPROFILE V1\n").expect("empty").total, 0);
        for bad in [
            "GO PREPROFILE V1\nmain.main\nmain.spin\n",
            "GO PREPROFILE V1\nmain.main\nmain.spin\n3\n",
            "GO PREPROFILE V1\nmain.main\nmain.spin\nx 5\n",
            "not a preprofile",
        ] {
            assert!(preprofile(bad).is_err(), "{bad:?}");
        }
    }
}
