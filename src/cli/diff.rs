//! `scraper diff QUERY --before FROM..TO --after FROM..TO` (or `--around-mark NAME --width
//! 30m`): what changed between two windows, per function, normalised per scraped instance
//! (per second, or averaged for heap-in-use and goroutine snapshots); a table on the terminal, and optionally an HTML report with a
//! differential flame graph (`--html`) or an SVG (`--svg`); for pipelines, `--format json|markdown`
//! and `--fail-on` with exit code 3 (`output`).

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Args;

use super::output::OutputArgs;
use super::source::{QueryArgs, SourceArgs, fetch};
use super::usage::usage;
use crate::diff::{Options, Parts, Report, StatsOptions, Window};
use crate::query::source::{Merged, ProfileSource, Query};
use crate::query::time::{parse_range, parse_span};

#[derive(Debug, Args)]
pub(crate) struct DiffCmd {
    #[command(flatten)]
    query: QueryArgs,
    /// The window before the change, FROM..TO (e.g. now-2h..now-1h).
    #[arg(
        long,
        value_name = "FROM..TO",
        requires = "after",
        conflicts_with = "around_mark"
    )]
    before: Option<String>,
    /// The window after the change.
    #[arg(long, value_name = "FROM..TO", requires = "before")]
    after: Option<String>,
    /// Compare the windows just before and just after the latest mark of this name.
    #[arg(long, value_name = "NAME")]
    around_mark: Option<String>,
    /// Width of each window around the mark.
    #[arg(long, default_value = "30m")]
    width: String,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    stats: StatsArgs,
    #[command(flatten)]
    source: SourceArgs,
}

/// How each window is cut into parts and the changes tested (docs/DIFF-STATISTICS.md); shared
/// with `scraper window`.
#[derive(Debug, Args, Clone)]
pub(crate) struct StatsArgs {
    /// Time buckets each window is cut into for the statistics (at most one per scrape of an
    /// instance); 0 or 1 = no statistics.
    #[arg(long, default_value_t = 20, value_name = "N")]
    pub(crate) parts: usize,
    /// Confidence of the intervals, jointly over all functions tested.
    #[arg(long, default_value_t = 0.95, value_parser = confidence)]
    pub(crate) confidence: f64,
    /// Functions below this share of the total (percent) in both windows are not tested, and
    /// a function's change smaller than this share of the before total is not significant.
    #[arg(long, default_value_t = 1.0, value_name = "PCT", value_parser = noise_floor)]
    pub(crate) noise_floor: f64,
    /// Changes estimated below this (percent of before) are not called significant, however
    /// tight their interval: a program's CPU drifts by a percent or so between any two windows.
    #[arg(long, default_value_t = 5.0, value_name = "PCT", value_parser = noise_floor)]
    pub(crate) min_change: f64,
}

fn confidence(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v > 0.0 && v < 1.0 => Ok(v),
        _ => Err(format!(
            "{s:?} is not a confidence between 0 and 1 (e.g. 0.95)"
        )),
    }
}

fn noise_floor(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if (0.0..=100.0).contains(&v) => Ok(v),
        _ => Err(format!("{s:?} is not a percentage between 0 and 100")),
    }
}

pub(crate) type Range = (SystemTime, SystemTime);

/// What the arguments ask to compare: two ranges, or the windows of a width around a mark.
enum Asked {
    Ranges(Range, Range),
    AroundMark(String, Duration),
}

/// The arguments' windows, parsed before anything is opened: a typo is bad usage (exit code
/// 2), not a failure to compute (1).
fn asked(args: &DiffCmd, now: SystemTime) -> anyhow::Result<Asked> {
    args.query.build(now, now)?;
    if let (Some(b), Some(a)) = (&args.before, &args.after) {
        let before = parse_range(b, now).map_err(usage)?;
        let after = parse_range(a, now).map_err(usage)?;
        return Ok(Asked::Ranges(before, after));
    }
    let Some(name) = &args.around_mark else {
        return Err(usage(
            "give --before FROM..TO and --after FROM..TO, or --around-mark NAME",
        ));
    };
    let width = parse_span(&args.width).map_err(usage)?;
    Ok(Asked::AroundMark(name.clone(), width))
}

/// The two windows to compare, and the mark they are around, if any.
fn windows(
    args: &DiffCmd,
    source: &dyn ProfileSource,
    now: SystemTime,
) -> anyhow::Result<(Range, Range, Option<String>)> {
    let (name, width) = match asked(args, now)? {
        Asked::Ranges(before, after) => return Ok((before, after, None)),
        Asked::AroundMark(name, width) => (name, width),
    };
    let marks = match &args.source.url {
        // A Pyroscope backend keeps no marks: ask the URL as a running scraper.
        Some(url) => marks_from_url(url, now)?,
        None => source
            .marks(UNIX_EPOCH, now + Duration::from_secs(86_400))
            .context("reading marks")?,
    };
    let Some(mark) = marks.iter().rev().find(|m| m.name == name) else {
        let known: Vec<&str> = marks.iter().map(|m| m.name.as_str()).collect();
        anyhow::bail!(
            "no mark named {name:?} (marks: {})",
            if known.is_empty() {
                "none".to_string()
            } else {
                format!("{known:?}")
            }
        );
    };
    let before = (mark.at.checked_sub(width).unwrap_or(UNIX_EPOCH), mark.at);
    let end = mark
        .at
        .checked_add(width)
        .ok_or_else(|| usage(format!("--width {} is too long", args.width)))?;
    let after = (mark.at, end.min(now.max(mark.at + Duration::from_secs(1))));
    Ok((before, after, Some(mark.name.clone())))
}

/// The marks of `url` when it is a running scraper (its /api/v0/marks); a Pyroscope backend has
/// none, and its source would answer an empty list, so say so instead of "no mark named".
fn marks_from_url(url: &str, now: SystemTime) -> anyhow::Result<Vec<crate::query::source::Mark>> {
    super::mark::list(url, UNIX_EPOCH, now + Duration::from_secs(86_400)).map_err(|e| {
        anyhow::anyhow!(
            "no marks from {url} ({e:#}): marks are not available from a Pyroscope backend, only from a running scraper's query API; give --before FROM..TO and --after FROM..TO, or read the store with --store DIR"
        )
    })
}

/// A window from a source's answer for `range`.
fn window(merged: Merged, range: Range, label: &str) -> Window {
    Window::measured(merged.profile, merged.profiles, merged.series, range, label)
}

fn query_at(q: &Query, range: Range) -> Query {
    Query {
        from: range.0,
        to: range.1,
        exclude_straddling: true,
        ..q.clone()
    }
}

/// The window `range` cut into its parts (`query::buckets`).
fn parts(
    source: &dyn ProfileSource,
    q: &Query,
    range: Range,
    merged: &Merged,
    parts: usize,
    label: &str,
) -> anyhow::Result<Vec<Window>> {
    let cut = crate::query::buckets::buckets(source, &query_at(q, range), merged, parts)
        .with_context(|| format!("querying the parts of {label}"))?;
    Ok(cut
        .into_iter()
        .map(|(m, range)| window(m, range, label))
        .collect())
}

/// Both windows of `q` (its range is ignored), merged and in parts, compared: the report and
/// its title. What `scraper diff` prints and `scraper window` decides on.
pub(crate) fn report_for(
    source: &dyn ProfileSource,
    q: &Query,
    (before_range, after_range): (Range, Range),
    mark: Option<&str>,
    top: usize,
    stats: &StatsArgs,
) -> anyhow::Result<(Report, String)> {
    let (before_label, after_label) = crate::diff::side_labels(mark);
    let mut sides = Vec::with_capacity(2);
    for (range, what, label) in [
        (before_range, "the before window", &before_label),
        (after_range, "the after window", &after_label),
    ] {
        let merged = fetch(source, &query_at(q, range), what)?;
        let cut = parts(source, q, range, &merged, stats.parts, label)?;
        sides.push((window(merged, range, label), cut));
    }
    let (after, after_parts) = sides.pop().context("after window")?;
    let (before, before_parts) = sides.pop().context("before window")?;
    // Fewer than 2 parts in a window is not an error: the report is still worth having, only
    // without verdicts; `output::emit` says so with the table (stderr may carry a report:
    // `--html /dev/stderr 2> report.html` in the sidecar's README).
    let opts = Options {
        sample_type: Some(q.profile_type.sample_type()),
        top,
    };
    let report = crate::diff::diff_with_parts(
        &before,
        &after,
        &Parts {
            before: before_parts,
            after: after_parts,
        },
        &StatsOptions {
            confidence: stats.confidence,
            noise_floor_pct: stats.noise_floor,
            min_change_pct: stats.min_change,
        },
        &opts,
    )?;
    let title = crate::diff::title(&q.profile_type.name, &q.selector.to_string(), mark);
    Ok((report, title))
}

/// The report `args` ask for, and its title.
pub(crate) fn report(args: &DiffCmd) -> anyhow::Result<(Report, String)> {
    let now = SystemTime::now();
    asked(args, now)?;
    let source = args.source.open()?;
    let (before_range, after_range, mark) = windows(args, source.as_ref(), now)?;
    compare(
        source.as_ref(),
        &args.query,
        (before_range, after_range),
        mark.as_deref(),
        args.output.top,
        &args.stats,
    )
}

/// The report on two windows of `source` (`mark` names them) and its title; what `diff` and
/// `window` share.
pub(crate) fn compare(
    source: &dyn ProfileSource,
    query: &QueryArgs,
    ranges: (Range, Range),
    mark: Option<&str>,
    top: usize,
    stats: &StatsArgs,
) -> anyhow::Result<(Report, String)> {
    let q = query.build(ranges.0.0, ranges.0.1)?;
    report_for(source, &q, ranges, mark, top, stats)
}

pub(crate) fn diff(args: DiffCmd) -> anyhow::Result<ExitCode> {
    let (report, title) = report(&args)?;
    super::output::emit(&report, &title, &args.output)
}
