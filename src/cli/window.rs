//! `scraper window QUERY --mark NAME --width 30m`: the upgrade-window workflow as one pipeline
//! step. Records a mark through the running scraper (`--server`, as `scraper mark`), or reuses
//! one (`--use-mark NAME`, with `--end` for an after window that is already over), or starts the
//! after window at a time (`--at TIME`, no mark: for a Pyroscope backend); waits for the
//! after window to pass and its last profiles to be stored, with a progress bar on stderr; then
//! reports as `scraper diff --around-mark` does and exits with the verdict (`output`: 0, or 3
//! when a `--fail-on` condition held).
//!
//! From the sidecar, the profiles are read through the running scraper's own query API (the
//! default), so the step needs only the scraper's HTTP address, not its store's directory.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context as _;
use clap::Args;

use super::output::OutputArgs;
use super::source::{QueryArgs, SourceArgs};
use super::usage::usage;
use crate::query::catalog::{explain_no_match, has_type};
use crate::query::local::LocalSource;
use crate::query::source::{Mark, ProfileSource as _};
use crate::query::time::{parse_span, parse_time};
use crate::server::DEFAULT_LISTEN_ADDR;

#[derive(Debug, Args)]
pub(crate) struct WindowCmd {
    #[command(flatten)]
    query: QueryArgs,
    /// Record a mark of this name now, through --server, and compare the windows around it.
    /// (Each run records one more mark; a second with the same name is a second mark.)
    #[arg(
        long,
        value_name = "NAME",
        required_unless_present_any = ["use_mark", "at"],
        conflicts_with_all = ["use_mark", "at"]
    )]
    mark: Option<String>,
    /// Reuse the latest existing mark of this name (from --store, else from --server).
    #[arg(long, value_name = "NAME", conflicts_with = "at")]
    use_mark: Option<String>,
    /// No mark: the after window starts at this time (now-5m, RFC 3339 or Unix seconds), for a
    /// source without marks (a Pyroscope backend through --url) or a change not marked.
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
    /// Width of the window before the mark, and of the window after it unless --end.
    #[arg(long, default_value = "30m", value_name = "DURATION")]
    width: String,
    /// End of the after window: now-5m, RFC 3339 or Unix seconds (default: the mark + --width).
    #[arg(long, value_name = "TIME")]
    end: Option<String>,
    /// How long past the after window's end to wait for its last profiles to be scraped and
    /// stored: one scrape interval is enough.
    #[arg(long, default_value = "15s", value_name = "DURATION")]
    settle: String,
    /// Time after the mark left out of the after window while the change rolls out: the
    /// after window starts this long after the mark (its width is still --width). Profiles
    /// taken during a rollout mix the old and the new and make the statistics wide.
    #[arg(long, default_value = "0s", value_name = "DURATION")]
    skip: String,
    /// The running scraper's HTTP address (its --server.http.listen-addr) or URL: where the
    /// mark is recorded, and where profiles are read through its query API unless --store or
    /// --url says otherwise.
    #[arg(long, default_value = DEFAULT_LISTEN_ADDR)]
    server: String,
    /// Read profiles (and --use-mark's mark) from this pyroscope.store directory instead.
    #[arg(long, value_name = "DIR", conflicts_with = "url")]
    store: Option<PathBuf>,
    /// Read profiles from this Pyroscope backend instead (a --mark is still recorded through
    /// --server; a backend keeps no marks: use --at).
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// Tenant (X-Scope-OrgID) for --url.
    #[arg(long, value_name = "ID", requires = "url")]
    tenant: Option<String>,
    /// Basic auth user for --url (password from --password or $PYROSCOPE_PASSWORD).
    #[arg(long, value_name = "USER", requires = "url")]
    username: Option<String>,
    #[arg(long, value_name = "PASSWORD")]
    password: Option<String>,
    /// Bearer token for --url (default $PYROSCOPE_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    token: Option<String>,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    stats: super::diff::StatsArgs,
}

/// A day: an after window ending later than this from now is probably a mistake.
const FAR: Duration = Duration::from_secs(86_400);

pub(crate) fn window(args: WindowCmd) -> anyhow::Result<ExitCode> {
    // Every argument is checked before the mark is recorded: a typo must not leave a stray
    // mark behind, nor fail only after the whole after window. Typos are usage errors (2).
    let width = span("--width", &args.width)?;
    let settle = span("--settle", &args.settle)?;
    let skip = span("--skip", &args.skip)?;
    let start = |at: SystemTime| {
        at.checked_add(skip).ok_or_else(|| {
            usage("--skip is too long: the after window would start past year 292 billion")
        })
    };
    if width.is_zero() {
        return Err(usage("--width must be longer than 0s"));
    }
    let now = SystemTime::now();
    let time = |what: &str, s: &str| parse_time(s, now).map_err(|e| usage(format!("{what}: {e}")));
    let end = args.end.as_deref().map(|e| time("--end", e)).transpose()?;
    let at = args.at.as_deref().map(|t| time("--at", t)).transpose()?;
    let q = args.query.build(UNIX_EPOCH, UNIX_EPOCH)?;
    let source = source(&args)?;
    let before = |at: SystemTime| (at.checked_sub(width).unwrap_or(UNIX_EPOCH), at);
    let (name, at) = match (&args.mark, &args.use_mark, at) {
        (Some(name), _, _) => {
            // The mark will be about now.
            after_window(start(now)?, end, width, settle, "now")?;
            before_window_has_series(source.as_ref(), &q, before(now))?;
            let (at, stores) = super::mark::record(&args.server, name, None)?;
            eprintln!(
                "mark {name:?} recorded at {} in {stores} store(s)",
                crate::gocompat::time::rfc3339_millis(at)
            );
            (Some(name.clone()), at)
        }
        (None, Some(name), _) => {
            let at = find_mark(&args, name)?.at;
            after_window(
                start(at)?,
                end,
                width,
                settle,
                &format!("the mark {name:?}"),
            )?;
            before_window_has_series(source.as_ref(), &q, before(at))?;
            (Some(name.clone()), at)
        }
        (None, None, Some(at)) => {
            after_window(start(at)?, end, width, settle, "--at")?;
            before_window_has_series(source.as_ref(), &q, before(at))?;
            (None, at)
        }
        (None, None, None) => return Err(usage("give --mark NAME, --use-mark NAME or --at TIME")),
    };
    let what = match &name {
        Some(name) => format!("the mark {name:?}"),
        None => "--at".to_string(),
    };
    let after_start = start(at)?;
    let (end, deadline) = after_window(after_start, end, width, settle, &what)?;
    if end.duration_since(SystemTime::now()).is_ok_and(|d| d > FAR) {
        eprintln!(
            "warning: the after window ends at {}, more than a day from now; the step waits until then",
            crate::gocompat::time::rfc3339_millis(end)
        );
    }
    wait_until(after_start, end, deadline);

    let (report, title) = super::diff::compare(
        source.as_ref(),
        &args.query,
        (before(at), (after_start, end)),
        name.as_deref(),
        args.output.top,
        &args.stats,
    )?;
    super::output::emit(&report, &title, &args.output)
}

/// A duration argument; a typo is bad usage.
fn span(what: &str, s: &str) -> anyhow::Result<Duration> {
    parse_span(s).map_err(|e| usage(format!("{what}: {e}")))
}

/// The after window's end (`end`, else `at + width`) and when to stop waiting for it (`settle`
/// later), or a usage error: an end not after `at`, or times past what the clock can hold.
/// `what` names `at` in messages.
fn after_window(
    at: SystemTime,
    end: Option<SystemTime>,
    width: Duration,
    settle: Duration,
    what: &str,
) -> anyhow::Result<(SystemTime, SystemTime)> {
    let rfc = crate::gocompat::time::rfc3339_millis;
    let end = match end {
        Some(end) => end,
        None => at.checked_add(width).ok_or_else(|| {
            usage("--width is too long: the after window would end past year 292 billion")
        })?,
    };
    if end <= at {
        return Err(usage(format!(
            "--end {} is not after {what} ({})",
            rfc(end),
            rfc(at)
        )));
    }
    let deadline = end
        .checked_add(settle)
        .ok_or_else(|| usage("--settle is too long: the wait would end past year 292 billion"))?;
    Ok((end, deadline))
}

/// Where profiles are read: --store, --url, or the running scraper's query API.
fn source(args: &WindowCmd) -> anyhow::Result<Box<dyn crate::query::source::ProfileSource>> {
    let url = match (&args.store, &args.url) {
        (Some(_), _) => None,
        (None, Some(url)) => Some(url.clone()),
        (None, None) => Some(super::mark::base_url(&args.server)),
    };
    SourceArgs {
        store: args
            .store
            .clone()
            .unwrap_or_else(|| PathBuf::from(super::source::DEFAULT_STORE)),
        url,
        tenant: args.tenant.clone(),
        username: args.username.clone(),
        password: args.password.clone(),
        token: args.token.clone(),
    }
    .open()
}

/// Fails when no series of the query's profile type matches its selector just before the mark
/// (for `--mark`: the window before now), so a mistyped selector or `--type` is found before
/// the wait.
fn before_window_has_series(
    source: &dyn crate::query::source::ProfileSource,
    q: &crate::query::source::Query,
    (from, to): (SystemTime, SystemTime),
) -> anyhow::Result<()> {
    let series = source
        .series(&q.selector, from, to)
        .context("listing the series of the before window")?;
    if series.iter().any(|s| has_type(s, &q.profile_type)) {
        return Ok(());
    }
    let hints = explain_no_match(&q.selector, &q.profile_type, &series);
    anyhow::bail!(
        "no {} series match {} in the before window ({} .. {}): nothing to compare (`scraper series` lists what there is){}",
        q.profile_type.name,
        q.selector,
        crate::gocompat::time::rfc3339_millis(from),
        crate::gocompat::time::rfc3339_millis(to),
        hints.iter().map(|h| format!("; {h}")).collect::<String>()
    )
}

/// The latest mark named `name`, from --store or the running scraper.
fn find_mark(args: &WindowCmd, name: &str) -> anyhow::Result<Mark> {
    let (from, to) = (UNIX_EPOCH, SystemTime::now() + Duration::from_secs(86_400));
    let marks = match &args.store {
        Some(dir) => LocalSource::open(dir)
            .with_context(|| format!("opening the store {}", dir.display()))?
            .marks(from, to)
            .context("reading marks")?,
        None => super::mark::list(&args.server, from, to)?,
    };
    if let Some(mark) = marks.iter().rev().find(|m| m.name == name) {
        return Ok(mark.clone());
    }
    let mut known: Vec<&str> = marks.iter().map(|m| m.name.as_str()).collect();
    known.dedup();
    anyhow::bail!(
        "no mark named {name:?} (marks: {})",
        if known.is_empty() {
            "none".to_string()
        } else {
            format!("{known:?}")
        }
    )
}

/// Sleeps until `deadline` (the after window's end plus the settle time), showing how much of
/// the after window (`at..end`) has passed: a redrawn bar on a terminal, a line every tenth (at
/// least 5 s apart) otherwise, so that a CI log shows the step is alive without filling up.
fn wait_until(at: SystemTime, end: SystemTime, deadline: SystemTime) {
    let now = SystemTime::now();
    let Ok(left) = deadline.duration_since(now) else {
        return;
    };
    let settle = deadline.duration_since(end).unwrap_or_default();
    let tty = std::io::stderr().is_terminal();
    let total = end.duration_since(at).unwrap_or_default();
    eprintln!(
        "waiting {} for the after window ({} long) and {} for its last profiles",
        crate::diff::format_span(left.as_secs_f64()),
        crate::diff::format_span(total.as_secs_f64()),
        crate::diff::format_span(settle.as_secs_f64())
    );
    let step = if tty {
        Duration::from_millis(250)
    } else {
        (total / 10).max(Duration::from_secs(5))
    };
    let mut err = std::io::stderr();
    loop {
        let now = SystemTime::now();
        let Ok(left) = deadline.duration_since(now) else {
            break;
        };
        let passed = now.duration_since(at).unwrap_or_default().min(total);
        let line = progress_line(passed, total, left);
        if tty {
            let _ = write!(err, "\r{line}\x1b[K");
            let _ = err.flush();
        } else {
            let _ = writeln!(err, "{line}");
        }
        std::thread::sleep(step.min(left));
    }
    if tty {
        let _ = writeln!(
            err,
            "\r{}\x1b[K",
            progress_line(total, total, Duration::ZERO)
        );
    }
}

/// "after window [##########          ] 15s of 30s, 20s left".
fn progress_line(passed: Duration, total: Duration, left: Duration) -> String {
    const WIDTH: usize = 30;
    let filled = if total.is_zero() {
        WIDTH
    } else {
        ((passed.as_secs_f64() / total.as_secs_f64()) * WIDTH as f64).round() as usize
    }
    .min(WIDTH);
    format!(
        "after window [{}{}] {} of {}, {} left",
        "#".repeat(filled),
        " ".repeat(WIDTH - filled),
        crate::diff::format_span(passed.as_secs_f64().floor()),
        crate::diff::format_span(total.as_secs_f64()),
        crate::diff::format_span(left.as_secs_f64().ceil()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_lines() {
        let s = Duration::from_secs;
        for (passed, total, left, want) in [
            (
                s(0),
                s(30),
                s(45),
                "after window [                              ] 0s of 30s, 45s left",
            ),
            (
                s(15),
                s(30),
                s(30),
                "after window [###############               ] 15s of 30s, 30s left",
            ),
            (
                s(30),
                s(30),
                s(0),
                "after window [##############################] 30s of 30s, 0s left",
            ),
            (
                s(90),
                s(1800),
                s(1725),
                "after window [##                            ] 1m30s of 30m, 28m45s left",
            ),
            (
                s(0),
                s(0),
                s(0),
                "after window [##############################] 0s of 0s, 0s left",
            ),
        ] {
            assert_eq!(progress_line(passed, total, left), want);
        }
    }
}
