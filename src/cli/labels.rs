//! `scraper labels` and `scraper series`: what a store or backend holds in a time range, to
//! write queries against.

use std::process::ExitCode;

use clap::Args;

use super::source::{RangeArgs, SourceArgs};
use crate::query::catalog::{format_labels, group_series, has_type, label_values, preview};
use crate::query::selector::Selector;
use crate::query::source::ProfileType;

#[derive(Debug, Args)]
pub(crate) struct LabelsCmd {
    /// Only the series this selector selects.
    #[arg(value_name = "QUERY", default_value = "{}")]
    query: String,
    /// Values shown per label name.
    #[arg(long, value_name = "N", default_value_t = 10)]
    values: usize,
    #[command(flatten)]
    range: RangeArgs,
    #[command(flatten)]
    source: SourceArgs,
}

#[derive(Debug, Args)]
pub(crate) struct SeriesCmd {
    /// Label selector, e.g. '{service_name="scraper"}'.
    #[arg(value_name = "QUERY", default_value = "{}")]
    query: String,
    /// Only series of this profile type (a name or a full ID); all types by default.
    #[arg(long = "type", value_name = "TYPE")]
    profile_type: Option<String>,
    #[command(flatten)]
    range: RangeArgs,
    #[command(flatten)]
    source: SourceArgs,
}

fn parse_selector(query: &str) -> anyhow::Result<Selector> {
    Selector::parse(query)
        .map_err(|e| anyhow::anyhow!("{e}\n  {query}\n  {}^", " ".repeat(e.offset)))
}

/// One line per label name: `name (N values): "a", "b", ...`.
pub(crate) fn labels(args: LabelsCmd) -> anyhow::Result<ExitCode> {
    let selector = parse_selector(&args.query)?;
    let (from, to) = args.range.times()?;
    let source = args.source.open()?;
    let sets = source.series(&selector, from, to)?;
    if sets.is_empty() {
        anyhow::bail!("no series match {selector} in this range");
    }
    for (name, values) in label_values(&sets) {
        println!(
            "{name} ({} values): {}",
            values.len(),
            preview(&values, args.values)
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One line per label set, sorted: `{k="v", ...} type, type`.
pub(crate) fn series(args: SeriesCmd) -> anyhow::Result<ExitCode> {
    let selector = parse_selector(&args.query)?;
    let ty = args
        .profile_type
        .as_deref()
        .map(ProfileType::parse)
        .transpose()
        .map_err(anyhow::Error::msg)?;
    let (from, to) = args.range.times()?;
    let source = args.source.open()?;
    let mut sets = source.series(&selector, from, to)?;
    if let Some(ty) = &ty {
        sets.retain(|s| has_type(s, ty));
    }
    if sets.is_empty() {
        anyhow::bail!("no series match {selector} in this range");
    }
    for (labels, types) in group_series(&sets) {
        let types: Vec<String> = types.into_iter().collect();
        println!("{} {}", format_labels(&labels), types.join(", "));
    }
    Ok(ExitCode::SUCCESS)
}
