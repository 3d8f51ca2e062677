//! `scraper pgo check default.pgo QUERY [--from --to] [--min-score PCT]`: how well a PGO
//! profile covers a workload's current hot call edges, so that a profile taken from one
//! workload (layer-1 load balancing) is caught before it optimises a build for another
//! (layer-2 tail sampling).
//!
//! The score is the share of the workload's CPU on its hot call edges (the edges Go would
//! mark hot in a profile of this workload: the top 99 % of its edge weight) that lies on edges
//! the given profile marks hot (`pprof::pgo_edges::coverage`). Exit codes are the diff
//! pipeline's: 0 at or above `--min-score` (or without it), 3 below, 1 when the score cannot
//! be computed, 2 for bad usage.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;

use super::source::{QueryArgs, RangeArgs, SourceArgs, fetch};
use crate::pprof::pgo_edges::{EdgeGraph, GO_HOT_CDF_PERCENT, coverage};

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
    #[arg(long, value_name = "PERCENT")]
    min_score: Option<f64>,
    /// How many uncovered edges to list.
    #[arg(long, value_name = "N", default_value_t = 10)]
    top: usize,
    /// Go's hot-edge threshold: edges carrying the top PERCENT of the weight are hot (the
    /// compiler's -d=pgoinlinecdfthreshold, 99 by default).
    #[arg(long, value_name = "PERCENT", default_value_t = GO_HOT_CDF_PERCENT)]
    hot_cdf: f64,
    #[command(flatten)]
    source: SourceArgs,
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
    if !(0.0..=100.0).contains(&args.hot_cdf) {
        anyhow::bail!("--hot-cdf must be between 0 and 100");
    }
    let bytes = std::fs::read(&args.profile)
        .with_context(|| format!("reading {}", args.profile.display()))?;
    let profile = crate::pprof::decode(&bytes, &crate::pprof::Limits::default())
        .with_context(|| format!("{} is not a pprof profile", args.profile.display()))?;
    let profile_graph = EdgeGraph::from_profile(&profile)
        .with_context(|| format!("reading {}'s call edges", args.profile.display()))?;
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
        "{} covers {:.1}% of the hot call-edge CPU of {} ({}..{}, {} profiles from {} series)",
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
        println!("  hottest uncovered edges (share of the workload's hot call-edge CPU):");
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
