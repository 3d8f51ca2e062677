//! The command line: `scraper run | check | fmt | labels | series | query | pgo | diff | window |
//! mark | pprof | relabel | discover | version`.

mod alloy_flags;
mod check;
mod cluster;
mod diff;
mod discover;
mod fmt;
mod labels;
mod mark;
mod output;
mod pgo;
mod pgo_check;
mod pgo_output;
mod pprof;
mod query;
mod relabel;
mod run;
mod source;
mod usage;
mod watch;
mod window;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::server::DEFAULT_LISTEN_ADDR;

#[derive(Debug, Parser)]
#[command(
    name = "scraper",
    version,
    about = "Continuous-profiling scraper configured in Grafana Alloy syntax"
)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the components described by a config file.
    Run(RunArgs),
    /// Report every error in configs, without running anything. A path is a config file or a
    /// directory, whose *.alloy files are one config.
    Check {
        #[arg(required = true, value_name = "PATH")]
        files: Vec<PathBuf>,
    },
    /// Format config files in the canonical Alloy style ("-", or no file: standard input to
    /// standard output).
    Fmt {
        /// Rewrite the files in place instead of printing them.
        #[arg(short = 'w', long = "write")]
        write: bool,
        #[arg(value_name = "FILE", default_value = "-")]
        files: Vec<PathBuf>,
    },
    /// List the label names and values of the series a store or backend holds in a range.
    Labels(labels::LabelsCmd),
    /// List the series (label sets, with their profile types) a selector selects in a range.
    Series(labels::SeriesCmd),
    /// Merge the profiles of a time range (local store or a Pyroscope backend) into one pprof.
    Query(query::QueryCmd),
    /// Write a range's CPU profiles as a Go PGO profile (default.pgo), or `pgo check` one.
    Pgo(pgo::PgoCmd),
    /// Compare two windows (or the windows around a mark) per function.
    Diff(diff::DiffCmd),
    /// Mark a change, wait for the window after it, report and exit with the verdict (for
    /// pipelines: exit code 3 when a --fail-on condition held).
    Window(window::WindowCmd),
    /// Record an event (e.g. an upgrade starting) in the running scraper's stores.
    Mark(mark::MarkCmd),
    /// Inspect, delta and merge pprof profiles.
    Pprof {
        #[command(subcommand)]
        command: pprof::PprofCommand,
    },
    /// Run a discovery.relabel block of a config file over targets given as JSON.
    Relabel(relabel::RelabelArgs),
    /// Print the targets a discovery.kubernetes block of a config file finds now, as JSON.
    Discover(discover::DiscoverArgs),
    /// Print the version.
    Version,
}

#[derive(Debug, Args)]
pub(crate) struct RunArgs {
    /// The config file, or a directory whose *.alloy files are one config.
    #[arg(value_name = "PATH")]
    file: PathBuf,
    /// Address the HTTP server listens on (port 0 picks a free port; the log says which).
    #[arg(long = "server.http.listen-addr", default_value = DEFAULT_LISTEN_ADDR)]
    listen_addr: String,
    /// Directory where components keep state across restarts.
    #[arg(long = "storage.path", default_value = "data-scraper/")]
    storage_path: PathBuf,
    /// Memory budget: a size ("256MiB"), "auto" (80% of the cgroup's memory limit; none
    /// without one) or 0 for none. Over budget, work is shed by priority instead of growing
    /// (docs/PERFORMANCE.md, "Memory budget").
    #[arg(
        long = "memory.limit",
        default_value = "auto",
        env = "SCRAPER_MEMORY_LIMIT"
    )]
    memory_limit: String,
    /// Re-read the config this often and reload it when its content changed (a ConfigMap
    /// volume update); logged as reloads are. 0s: off (reload with SIGHUP or /-/reload).
    #[arg(
        long = "config.watch-interval",
        default_value = "0s",
        value_name = "DURATION"
    )]
    config_watch_interval: crate::syntax::types::Duration,
    #[command(flatten)]
    cluster: cluster::ClusterArgs,
    #[command(flatten)]
    alloy: alloy_flags::AlloyFlags,
}

/// A config file read and parsed for the offline debugging commands (`relabel`, `discover`).
struct LoadedConfig {
    /// The path as given, for messages.
    name: String,
    src: String,
    source: crate::syntax::diag::Source,
    file: crate::syntax::ast::File,
}

/// Reads and parses `path`; syntax errors are printed with carets and fail the command.
fn load_config(path: &std::path::Path) -> anyhow::Result<LoadedConfig> {
    use anyhow::Context as _;
    let name = path.display().to_string();
    let bytes = std::fs::read(path).with_context(|| format!("reading {name}"))?;
    let src = String::from_utf8_lossy(&bytes).into_owned();
    let source = crate::syntax::diag::Source::new(name.clone(), src.clone());
    let (file, syntax) = crate::syntax::parser::parse_file(&src);
    if syntax.iter().any(crate::syntax::diag::Diagnostic::is_error) {
        eprint!("{}", source.render_all(&syntax));
        anyhow::bail!("{name} has syntax errors");
    }
    Ok(LoadedConfig {
        name,
        src,
        source,
        file,
    })
}

/// The top-level block `<name> "<label>"` of a config file.
fn find_component<'a>(
    stmts: &'a [crate::syntax::ast::Stmt],
    name: &str,
    label: &str,
) -> Option<&'a crate::syntax::ast::Block> {
    stmts.iter().find_map(|s| match s {
        crate::syntax::ast::Stmt::Block(b)
            if b.full_name() == name && b.label.as_ref().is_some_and(|l| l.value == label) =>
        {
            Some(b)
        }
        _ => None,
    })
}

/// Parses the arguments and runs the command; `main.rs` is only this call.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => run::run(args),
        Command::Check { files } => Ok(check::check(&files)),
        Command::Fmt { write, files } => Ok(fmt::fmt(&files, write)),
        Command::Labels(args) => labels::labels(args),
        Command::Series(args) => labels::series(args),
        Command::Query(args) => query::query(args),
        Command::Pgo(args) => pgo::pgo(args),
        Command::Diff(args) => diff::diff(args),
        Command::Window(args) => window::window(args),
        Command::Mark(args) => mark::mark(args),
        Command::Pprof { command } => pprof::run(command),
        Command::Relabel(args) => relabel::relabel(args),
        Command::Discover(args) => discover::discover(args),
        Command::Version => {
            println!("scraper, version v{}", env!("CARGO_PKG_VERSION"));
            Ok(ExitCode::SUCCESS)
        }
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("Error: {e:#}");
            usage::exit_code(&e)
        }
    }
}
