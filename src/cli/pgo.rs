//! `scraper pgo QUERY --from --to -o default.pgo`: a range's CPU profiles merged and
//! transformed for Go's profile-guided optimisation, the way `profilecli query go-pgo` does;
//! optionally only the busiest windows (`--top-windows`), one profile per workload
//! (`--split-by`), trimmed to a budget (`--max-edges`, `--max-bytes`), and refused when empty or
//! unrepresentative unless `--allow-empty` (docs/PGO.md). `scraper pgo check` is
//! [`super::pgo_check`].

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Args, Subcommand};

use super::pgo_output::{single_path, split_paths};
use super::source::{Progress, QueryArgs, RangeArgs, SourceArgs};
use crate::pprof::pgo::{PgoOptions, to_pgo};
use crate::pprof::pgo_assess::{Problem, Thresholds, assess, empty_pgo};
use crate::pprof::pgo_edges::{EdgeGraph, GO_HOT_CDF_PERCENT};
use crate::pprof::pgo_trim::{TrimSummary, trim_bytes, trim_edges};
use crate::pprof::proto::Profile;
use crate::query::pgo::{split_values, top_windows, with_label};
use crate::query::source::{Merged, ProfileSource, Query, QueryError, select_required};

#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub(crate) struct PgoCmd {
    #[command(subcommand)]
    command: Option<PgoCommand>,
    // Boxed: the arguments are many, and `Command`'s variants should stay alike in size.
    #[command(flatten)]
    build: Box<BuildArgs>,
}

#[derive(Debug, Subcommand)]
enum PgoCommand {
    /// Score how well a PGO profile covers a workload's current hot call edges (exit 3 below
    /// --min-score).
    Check(Box<super::pgo_check::CheckCmd>),
}

#[derive(Debug, Args)]
struct BuildArgs {
    #[command(flatten)]
    query: QueryArgs,
    #[command(flatten)]
    range: RangeArgs,
    /// Where to write the profile (gzipped pprof). With --split-by: a path containing
    /// {value} (e.g. 'pgo/{value}/default.pgo') or a directory (DIR/<value>.pgo).
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
    /// Merge only the N windows with the most CPU (per second) instead of the whole range.
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    top_windows: Option<usize>,
    /// Length of the windows --top-windows ranks (a shorter last window joins the one before).
    #[arg(
        long,
        value_name = "DURATION",
        default_value = "5m",
        requires = "top_windows",
        value_parser = positive_span
    )]
    window: Duration,
    /// Write one profile per value of this label (one workload each).
    #[arg(long, value_name = "LABEL")]
    split_by: Option<String>,
    /// Keep at most this many call edges, the hottest (as Go ranks them).
    #[arg(long, value_name = "N")]
    max_edges: Option<usize>,
    /// Keep as many of the hottest call edges as fit in this size, gzipped ("64KiB").
    #[arg(long, value_name = "SIZE", value_parser = size)]
    max_bytes: Option<usize>,
    /// Refuse a profile with less CPU time than this (too few samples to tell hot calls from
    /// chance).
    #[arg(long, value_name = "DURATION", default_value = "1s", value_parser = span)]
    min_cpu: Duration,
    /// Refuse a trimmed profile that kept less than this percentage of the call-edge weight.
    #[arg(long, value_name = "PERCENT", default_value = "50", value_parser = percent)]
    min_kept: f64,
    /// Fail open: write an empty profile (Go builds as without PGO) instead of failing when the
    /// result is empty or unrepresentative, warn, and exit 0.
    #[arg(long)]
    allow_empty: bool,
    /// Overwrite output files.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    source: SourceArgs,
}

pub(crate) fn pgo(args: PgoCmd) -> anyhow::Result<ExitCode> {
    match args.command {
        Some(PgoCommand::Check(check)) => super::pgo_check::check(*check),
        None => build(*args.build),
    }
}

/// One profile to write: its path, what it is, and what is wrong with it.
struct Built {
    path: PathBuf,
    /// The query it was built from, for messages.
    what: String,
    profile: Profile,
    report: String,
    problem: Option<String>,
}

fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let q = args.range.query(&args.query)?;
    let source = args.source.open()?;
    let thresholds = Thresholds {
        min_cpu_nanos: i64::try_from(args.min_cpu.as_nanos()).unwrap_or(i64::MAX),
        min_kept_share: (args.min_kept / 100.0).clamp(0.0, 1.0),
    };
    let mut built = Vec::new();
    match &args.split_by {
        None => {
            let path = single_path(&args.output).map_err(anyhow::Error::msg)?;
            refuse_existing(&path, args.force)?;
            built.push(one(&args, source.as_ref(), &q, path, &thresholds)?);
        }
        Some(label) => {
            let split = split_values(source.as_ref(), &q, label)?;
            if split.without > 0 {
                eprintln!(
                    "warning: {} series of {} have no {label} label and are in no profile",
                    split.without, q.selector
                );
            }
            if split.values.is_empty() {
                let message = format!(
                    "no {} series of {} have a {label} label in the range: no profile to write",
                    q.profile_type.name, q.selector
                );
                if args.allow_empty {
                    eprintln!("warning: {message} (--allow-empty: nothing written)");
                    return Ok(ExitCode::SUCCESS);
                }
                anyhow::bail!(message);
            }
            let paths =
                split_paths(&args.output, label, &split.values).map_err(anyhow::Error::msg)?;
            for path in paths.values() {
                refuse_existing(path, args.force)?;
            }
            for (value, path) in paths {
                let narrowed = with_label(&q, label, &value)?;
                built.push(one(&args, source.as_ref(), &narrowed, path, &thresholds)?);
            }
        }
    }
    let refused: Vec<&Built> = built.iter().filter(|b| b.problem.is_some()).collect();
    if !refused.is_empty() && !args.allow_empty {
        for b in &refused {
            eprintln!("{}: {}", b.what, b.problem.as_deref().unwrap_or_default());
        }
        anyhow::bail!(
            "no profile written: {} of {} {} empty or unrepresentative (--allow-empty writes an empty profile instead and exits 0)",
            refused.len(),
            built.len(),
            if built.len() == 1 { "is" } else { "are" }
        );
    }
    for b in &built {
        let profile = match &b.problem {
            Some(problem) => {
                // On stdout: it describes a file written, which may be stderr itself
                // (`-o /dev/stderr 2> default.pgo`).
                println!(
                    "warning: {}: {problem}; --allow-empty: wrote an empty profile (Go builds as without PGO)",
                    b.what
                );
                empty_pgo()
            }
            None => b.profile.clone(),
        };
        write(&b.path, &profile, args.split_by.is_some())?;
        if b.problem.is_none() {
            println!("{}: {}", b.path.display(), b.report);
        }
    }
    Ok(ExitCode::SUCCESS)
}

// Value parsers: bad values are bad usage, which clap reports (exit 2) before any query runs.

/// A count of at least one.
fn at_least_one(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!("{s:?} is not a whole number of at least 1")),
    }
}

/// A duration ("5m", "1h30m", "2d").
fn span(s: &str) -> Result<Duration, String> {
    crate::query::time::parse_span(s)
}

/// A duration longer than zero.
fn positive_span(s: &str) -> Result<Duration, String> {
    let d = span(s)?;
    if d.is_zero() {
        return Err("the duration must be longer than zero".into());
    }
    Ok(d)
}

/// A byte size ("64KiB", "100000").
fn size(s: &str) -> Result<usize, String> {
    let n = crate::runtime::size::parse_size(s)?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// A percentage, 0 to 100 (no NaN).
pub(super) fn percent(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(p),
        _ => Err(format!("{s:?} is not a percentage between 0 and 100")),
    }
}

/// Refuses to overwrite an existing file without `--force`. Paths under /dev (`/dev/stdout`,
/// `/dev/stderr`, `/dev/fd/N`) are streams the caller chose, never files clobbered by mistake.
fn refuse_existing(path: &std::path::Path, force: bool) -> anyhow::Result<()> {
    if !force && !path.starts_with("/dev") && path.exists() {
        anyhow::bail!("{} exists (use --force to overwrite)", path.display());
    }
    Ok(())
}

fn write(path: &std::path::Path, profile: &Profile, make_dirs: bool) -> anyhow::Result<()> {
    if make_dirs && let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let bytes = crate::pprof::encode(profile, crate::pprof::DEFAULT_LEVEL);
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}

/// Fetches (the whole range or its top windows), transforms, trims and assesses one query.
fn one(
    args: &BuildArgs,
    source: &dyn ProfileSource,
    q: &Query,
    path: PathBuf,
    thresholds: &Thresholds,
) -> anyhow::Result<Built> {
    let what = format!("{} ({})", q.selector, path.display());
    let (merged, mut report) = match fetch(args, source, q)? {
        Ok(found) => found,
        // Nothing matched: an empty result, which --allow-empty lets through.
        Err(message) => {
            return Ok(Built {
                path,
                what,
                profile: empty_pgo(),
                report: String::new(),
                problem: Some(format!("empty: {message}")),
            });
        }
    };
    let opts = PgoOptions {
        keep_locations: args.keep_locations,
        aggregate_callees: args.aggregate_callees,
    };
    let (untrimmed, summary) = to_pgo(&merged.profile, &opts)?;
    let mut profile = untrimmed.clone();
    let mut trimmed: Option<TrimSummary> = None;
    if let Some(max) = args.max_edges {
        let (p, t) = trim_edges(&profile, max)?;
        profile = p;
        trimmed = Some(t);
    }
    if let Some(max) = args.max_bytes {
        let (p, t) = trim_bytes(&profile, max, crate::pprof::DEFAULT_LEVEL)?;
        profile = p;
        // Both budgets: the share kept is of the weight before the first.
        trimmed = Some(match trimmed {
            Some(first) => TrimSummary {
                edges_after: t.edges_after,
                weight_after: t.weight_after,
                ..first
            },
            None => t,
        });
    }
    // Emptiness and --min-cpu are the data's problems, judged before any budget; the budget is
    // judged by --min-kept alone.
    let assessment = assess(&untrimmed, trimmed.as_ref(), thresholds)?;
    let written = EdgeGraph::from_profile(&profile)?;
    let coverage = if summary.input_total > 0 {
        100.0 * summary.total as f64 / summary.input_total as f64
    } else {
        0.0
    };
    report.push_str(&format!(
        "{} profiles from {} series; kept {} samples in {} functions, {}/{} = {coverage:.1}% of the total; {} call edges, {} hot",
        merged.profiles,
        merged.series,
        profile.sample.len(),
        profile.function.len(),
        summary.sample_type.0,
        summary.sample_type.1,
        written.weights.len(),
        written.hot(GO_HOT_CDF_PERCENT).len(),
    ));
    if let Some(t) = &trimmed {
        report.push_str(&format!(
            "; trimmed from {} edges, {:.1}% of the edge weight kept",
            t.edges_before,
            t.kept_share() * 100.0
        ));
    }
    if !assessment.start_lines && assessment.edge_weight > 0 {
        // On stdout with the rest of the report: `-o /dev/stderr 2> default.pgo` (kubectl exec)
        // must get the profile's bytes alone on stderr.
        report.push_str(
            "; warning: no function start lines (a program built with Go older than 1.20), `go build -pgo` refuses such a profile",
        );
    }
    Ok(Built {
        path,
        what,
        profile,
        report,
        problem: assessment.problem.as_ref().map(Problem::to_string),
    })
}

/// The merged profiles to transform and a description of what was chosen; `Err(message)`
/// (inside `Ok`) when nothing matched, errors reading the source as errors.
#[allow(clippy::type_complexity)]
fn fetch(
    args: &BuildArgs,
    source: &dyn ProfileSource,
    q: &Query,
) -> anyhow::Result<Result<(Merged, String), String>> {
    let what = format!("{}", q.selector);
    let Some(n) = args.top_windows else {
        let mut bar = Progress::new(&what);
        let merged = select_required(source, q, "the range", &mut |d, t| bar.update(d, t));
        bar.finish();
        return match merged {
            Ok(m) => Ok(Ok((m, String::new()))),
            Err(QueryError::NoMatch(message)) => Ok(Err(message)),
            Err(e) => Err(anyhow::Error::new(e).context(format!("querying {what}"))),
        };
    };
    let len = args.window;
    let mut bar = Progress::counting(&what, "windows");
    let top = top_windows(source, q, len, n, &mut |d, t| bar.update(d, t));
    bar.finish();
    let top = top.with_context(|| format!("querying {what}"))?;
    let Some(top) = top else {
        return Ok(Err(format!(
            "no {} profiles with CPU match {what} in any window of the range",
            q.profile_type.name
        )));
    };
    let chosen: Vec<String> = top
        .chosen
        .iter()
        .map(|w| {
            format!(
                "{} ({:.1}s CPU)",
                crate::gocompat::time::rfc3339_millis(w.from),
                w.total as f64 / 1e9
            )
        })
        .collect();
    let report = format!(
        "the {} busiest of {} windows of {} with profiles ({} in the range): {}; ",
        top.chosen.len(),
        top.with_data,
        crate::gocompat::time::format_go_duration(args.window),
        top.windows,
        chosen.join(", ")
    );
    Ok(Ok((top.merged, report)))
}
