//! `scraper pgo QUERY --from --to -o default.pgo`: a window's CPU profiles merged and
//! transformed for Go's profile-guided optimisation, the way `profilecli query go-pgo` does.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::source::{QueryArgs, RangeArgs, SourceArgs, fetch, write_new};
use crate::pprof::pgo::{PgoOptions, to_pgo};

#[derive(Debug, Args)]
pub(crate) struct PgoCmd {
    #[command(flatten)]
    query: QueryArgs,
    #[command(flatten)]
    range: RangeArgs,
    /// Where to write the profile (gzipped pprof).
    #[arg(
        short = 'o',
        long = "output",
        value_name = "FILE",
        default_value = "default.pgo"
    )]
    output: PathBuf,
    /// Leaf-most frames kept per stack (profilecli's --keep-locations).
    #[arg(long, default_value_t = 5)]
    keep_locations: usize,
    /// Merge samples by leaf function, ignoring the callee's line (profilecli's
    /// --aggregate-callees).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    aggregate_callees: bool,
    /// Overwrite the output file.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    source: SourceArgs,
}

pub(crate) fn pgo(args: PgoCmd) -> anyhow::Result<ExitCode> {
    let q = args.range.query(&args.query)?;
    let source = args.source.open()?;
    let merged = fetch(source.as_ref(), &q, "the window")?;
    let opts = PgoOptions {
        keep_locations: args.keep_locations,
        aggregate_callees: args.aggregate_callees,
    };
    let (profile, summary) = to_pgo(&merged.profile, &opts)?;
    let bytes = crate::pprof::encode(&profile, crate::pprof::DEFAULT_LEVEL);
    write_new(&args.output, &bytes, args.force)?;
    let coverage = if summary.input_total > 0 {
        100.0 * summary.total as f64 / summary.input_total as f64
    } else {
        0.0
    };
    println!(
        "{}: {} profiles from {} series; kept {} samples in {} functions, {}/{} = {coverage:.1}% of the window's total",
        args.output.display(),
        merged.profiles,
        merged.series,
        summary.samples,
        summary.functions,
        summary.sample_type.0,
        summary.sample_type.1,
    );
    Ok(ExitCode::SUCCESS)
}
