//! `scraper window QUERY --mark NAME --width 30m`: the upgrade-window workflow as one pipeline
//! step. Records a mark through the running scraper (`--server`, as `scraper mark`), or reuses
//! one (`--use-mark NAME`, with `--end` for an after window that is already over); waits for the
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
use crate::query::local::LocalSource;
use crate::query::source::{Mark, ProfileSource as _};
use crate::query::time::{parse_span, parse_time};
use crate::server::DEFAULT_LISTEN_ADDR;

#[derive(Debug, Args)]
pub(crate) struct WindowCmd {
    #[command(flatten)]
    query: QueryArgs,
    /// Record a mark of this name now, through --server, and compare the windows around it.
    #[arg(
        long,
        value_name = "NAME",
        required_unless_present = "use_mark",
        conflicts_with = "use_mark"
    )]
    mark: Option<String>,
    /// Reuse the latest existing mark of this name (from --store, else from --server).
    #[arg(long, value_name = "NAME")]
    use_mark: Option<String>,
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
    /// The running scraper's HTTP address (its --server.http.listen-addr) or URL: where the
    /// mark is recorded, and where profiles are read through its query API unless --store or
    /// --url says otherwise.
    #[arg(long, default_value = DEFAULT_LISTEN_ADDR)]
    server: String,
    /// Read profiles (and --use-mark's mark) from this pyroscope.store directory instead.
    #[arg(long, value_name = "DIR", conflicts_with = "url")]
    store: Option<PathBuf>,
    /// Read profiles from this Pyroscope backend instead (the mark is still --server's).
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

pub(crate) fn window(args: WindowCmd) -> anyhow::Result<ExitCode> {
    let width = parse_span(&args.width).map_err(anyhow::Error::msg)?;
    let settle = parse_span(&args.settle).map_err(anyhow::Error::msg)?;
    if width.is_zero() {
        anyhow::bail!("--width must be longer than 0s");
    }
    // Checked before the mark is recorded: a typo, or a selector that matches nothing, must
    // not leave a stray mark behind, nor fail only after the whole after window.
    let q = args.query.build(UNIX_EPOCH, UNIX_EPOCH)?;
    let source = source(&args)?;
    let (name, at) = match (&args.mark, &args.use_mark) {
        (Some(name), _) => {
            let now = SystemTime::now();
            let before = (now.checked_sub(width).unwrap_or(UNIX_EPOCH), now);
            before_window_has_series(source.as_ref(), &q.selector, before)?;
            let (at, stores) = super::mark::record(&args.server, name, None)?;
            eprintln!(
                "mark {name:?} recorded at {} in {stores} store(s)",
                crate::gocompat::time::rfc3339_millis(at)
            );
            (name.clone(), at)
        }
        (None, Some(name)) => {
            let at = find_mark(&args, name)?.at;
            let before = (at.checked_sub(width).unwrap_or(UNIX_EPOCH), at);
            before_window_has_series(source.as_ref(), &q.selector, before)?;
            (name.clone(), at)
        }
        (None, None) => anyhow::bail!("give --mark NAME or --use-mark NAME"),
    };
    let before = (at.checked_sub(width).unwrap_or(UNIX_EPOCH), at);
    let end = match &args.end {
        Some(end) => parse_time(end, SystemTime::now()).map_err(anyhow::Error::msg)?,
        None => at + width,
    };
    if end <= at {
        anyhow::bail!(
            "--end {} is not after the mark {name:?} at {}",
            crate::gocompat::time::rfc3339_millis(end),
            crate::gocompat::time::rfc3339_millis(at)
        );
    }
    wait_until(at, end, settle);

    let (report, title) = super::diff::compare(
        source.as_ref(),
        &args.query,
        (before, (at, end)),
        Some(&name),
        args.output.top,
        &args.stats,
    )?;
    super::output::emit(&report, &title, &args.output)
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

/// Fails when nothing matches the selector just before the mark (for `--mark`: the window
/// before now), so a mistyped selector is found before the wait.
fn before_window_has_series(
    source: &dyn crate::query::source::ProfileSource,
    selector: &crate::query::selector::Selector,
    (from, to): (SystemTime, SystemTime),
) -> anyhow::Result<()> {
    let series = source
        .series(selector, from, to)
        .context("listing the series of the before window")?;
    if series.is_empty() {
        anyhow::bail!(
            "no series match {selector} in the before window ({} .. {}): nothing to compare (`scraper series` lists what there is)",
            crate::gocompat::time::rfc3339_millis(from),
            crate::gocompat::time::rfc3339_millis(to)
        );
    }
    Ok(())
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

/// Sleeps until `end + settle`, showing how much of the after window (`at..end`) has passed: a
/// redrawn bar on a terminal, a line every tenth (at least 5 s apart) otherwise, so that a CI
/// log shows the step is alive without filling up.
fn wait_until(at: SystemTime, end: SystemTime, settle: Duration) {
    let deadline = end + settle;
    let now = SystemTime::now();
    let Ok(left) = deadline.duration_since(now) else {
        return;
    };
    let tty = std::io::stderr().is_terminal();
    let total = end.duration_since(at).unwrap_or_default();
    eprintln!(
        "waiting {} for the after window ({} from the mark) and {} for its last profiles",
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
