//! What `scraper diff` and `scraper window` do with a report: print it in the chosen format,
//! write the report files, judge the `--fail-on` conditions and choose the exit code
//! (docs/DIFF-PIPELINE.md): 0 none held, 3 one held, 2 bad usage (clap), 1 could not compute.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, ValueEnum};

use crate::diff::Report;
use crate::diff::fail_on::{self, Basis, Condition, MissingStatistics};

/// The exit code when a `--fail-on` condition held.
pub(crate) const HELD: u8 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Format {
    /// The table, for people.
    Text,
    /// A document described by docs/diff-report.schema.json.
    Json,
    /// GitHub-flavoured markdown tables, for a pull-request comment.
    Markdown,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum Missing {
    /// Exit with code 1: the conditions cannot be judged.
    Error,
    /// Judge the point estimates (the plain percentage change), without confidence.
    Estimates,
    /// Do not judge the conditions; none holds.
    Skip,
}

#[derive(Debug, Args)]
pub(crate) struct OutputArgs {
    /// What to print on standard output: text (the table), json (the document described by
    /// docs/diff-report.schema.json) or markdown (for a pull-request comment).
    #[arg(long, value_enum, default_value_t = Format::Text)]
    format: Format,
    /// Rows in the table, the markdown and the JSON document (0 = all).
    #[arg(long, default_value_t = 20)]
    pub(crate) top: usize,
    /// Also write a self-contained HTML report here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    /// Also write an SVG differential flame graph here.
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
    /// Also write the JSON document here.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Also write the markdown here.
    #[arg(long, value_name = "FILE")]
    markdown: Option<PathBuf>,
    /// Exit with code 3 when this holds; repeatable. `total>5%`: the total per instance grew by
    /// more than 5 % with confidence; `function=~REGEX>10%` (or `flat=~`, `cum=~`): a function
    /// matching the Go regex (unanchored) did. See docs/DIFF-PIPELINE.md.
    #[arg(long = "fail-on", value_name = "CONDITION", value_parser = parse_condition)]
    fail_on: Vec<Condition>,
    /// When the report has no statistics, --fail-on cannot be judged with confidence: error
    /// (exit 1), estimates (judge the plain percentage change) or skip (judge nothing).
    #[arg(long, value_enum, default_value_t = Missing::Error, value_name = "WHAT")]
    missing_statistics: Missing,
}

fn parse_condition(s: &str) -> Result<Condition, String> {
    Condition::parse(s).map_err(|e| e.to_string())
}

/// Writes `text` to `path`.
fn write(path: &Path, text: &str) -> anyhow::Result<()> {
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// Writes `text` to standard output. A reader that went away (`| head`) is not an error: the
/// rest is dropped quietly and the verdict still decides the exit code; any other failure (a
/// full disk) is.
fn print(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context("writing to standard output"))
        }
        _ => Ok(()),
    }
}

/// Writes the report files, prints `report` and returns the verdict's exit code. The files come
/// first: when one cannot be written the command fails (1) before standard output claims an
/// exit code in a document.
pub(crate) fn emit(report: &Report, title: &str, args: &OutputArgs) -> anyhow::Result<ExitCode> {
    let missing = match args.missing_statistics {
        Missing::Error => MissingStatistics::Error,
        Missing::Estimates => MissingStatistics::Estimates,
        Missing::Skip => MissingStatistics::Skip,
    };
    let evaluation = fail_on::evaluate(report, &args.fail_on, missing)?;
    let json = || report.render_json(title, args.top, &evaluation);
    let markdown = || report.render_markdown(title, args.top, &evaluation);
    let mut wrote = Vec::new();
    if let Some(path) = &args.html {
        write(path, &report.render_html(title))?;
        wrote.push(path);
    }
    if let Some(path) = &args.svg {
        write(path, &report.render_svg(title))?;
        wrote.push(path);
    }
    if let Some(path) = &args.json {
        write(path, &json())?;
        wrote.push(path);
    }
    if let Some(path) = &args.markdown {
        write(path, &markdown())?;
        wrote.push(path);
    }
    let mut shown = match args.format {
        Format::Text => report.render_table(args.top, 120),
        Format::Json => json(),
        Format::Markdown => markdown(),
    };
    // Said on stdout after the table (as `diff` always has), on stderr when stdout carries a
    // document.
    let wrote: String = wrote
        .iter()
        .map(|p| format!("wrote {}\n", p.display()))
        .collect();
    if args.format == Format::Text {
        if report.statistics.is_none() {
            shown.push_str(
                "note: no statistics: a window has fewer than 2 parts with profiles (--parts, or longer windows)\n",
            );
        }
        shown.push_str(&wrote);
    } else {
        eprint!("{wrote}");
    }
    print(&shown)?;
    // The verdict goes to stderr whatever the format, so a pipeline's log shows why it failed.
    match evaluation.basis {
        Basis::Estimates => eprintln!(
            "fail-on: the report has no statistics; judging the point estimates, without confidence"
        ),
        Basis::NotEvaluated if !evaluation.outcomes.is_empty() => {
            eprintln!("fail-on: the report has no statistics; conditions not judged")
        }
        _ => {}
    }
    for o in &evaluation.outcomes {
        if !o.held {
            eprintln!("fail-on {}: did not hold", o.condition);
            continue;
        }
        eprintln!("fail-on {}: HELD", o.condition);
        const SHOWN: usize = 10;
        for t in o.triggers.iter().take(SHOWN) {
            eprintln!("  {t}");
        }
        if o.triggers.len() > SHOWN {
            eprintln!("  ... and {} more", o.triggers.len() - SHOWN);
        }
    }
    Ok(if evaluation.held() {
        ExitCode::from(HELD)
    } else {
        ExitCode::SUCCESS
    })
}
