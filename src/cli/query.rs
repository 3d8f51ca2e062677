//! `scraper query QUERY --type T --from --to -o merged.pb.gz`: merges the matching profiles
//! of a time range into one pprof.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::SystemTime;

use clap::Args;

use super::source::{QueryArgs, SourceArgs, fetch, write_new};
use crate::query::time::parse_time;

#[derive(Debug, Args)]
pub(crate) struct QueryCmd {
    #[command(flatten)]
    query: QueryArgs,
    /// Start: now-1h, RFC 3339 or Unix seconds.
    #[arg(long, default_value = "now-1h")]
    from: String,
    /// End (exclusive).
    #[arg(long, default_value = "now")]
    to: String,
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
    let now = SystemTime::now();
    let from = parse_time(&args.from, now).map_err(anyhow::Error::msg)?;
    let to = parse_time(&args.to, now).map_err(anyhow::Error::msg)?;
    let q = args.query.build(from, to)?;
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
