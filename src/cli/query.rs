//! `scraper query QUERY --type T --from --to -o merged.pb.gz`: merges the matching profiles
//! of a time range into one pprof.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

use super::source::{QueryArgs, RangeArgs, SourceArgs, fetch, write_new};

#[derive(Debug, Args)]
pub(crate) struct QueryCmd {
    #[command(flatten)]
    query: QueryArgs,
    #[command(flatten)]
    range: RangeArgs,
    /// Where to write the merged profile (gzipped pprof).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Overwrite the output file.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    source: SourceArgs,
}

pub(crate) fn query(args: QueryCmd) -> anyhow::Result<ExitCode> {
    let q = args.range.query(&args.query)?;
    let source = args.source.open()?;
    let merged = fetch(source.as_ref(), &q, "the query")?;
    let bytes = crate::pprof::encode(&merged.profile, crate::pprof::DEFAULT_LEVEL);
    write_new(&args.output, &bytes, args.force)?;
    println!(
        "{}: {} profiles from {} series merged, {} samples, {} bytes",
        args.output.display(),
        merged.profiles,
        merged.series,
        merged.profile.sample.len(),
        bytes.len()
    );
    Ok(ExitCode::SUCCESS)
}
