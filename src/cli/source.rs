//! What `scraper query`, `pgo` and `diff` share: where profiles are read from (the local store
//! or a Pyroscope backend), the query arguments, and a progress bar.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use clap::Args;

use super::usage::usage;
use crate::query::local::LocalSource;
use crate::query::remote::{RemoteOptions, RemoteSource};
use crate::query::selector::Selector;
use crate::query::source::{
    Merged, ProfileSource, ProfileType, Query, QueryError, select_required,
};

/// The default store: `pyroscope.store "local"` under `scraper run`'s default storage path.
pub(crate) const DEFAULT_STORE: &str = "data-scraper/pyroscope.store.local";

#[derive(Debug, Args)]
pub(crate) struct SourceArgs {
    /// Directory of a pyroscope.store (the default is where `pyroscope.store "local"` writes
    /// under `scraper run`'s default --storage.path).
    #[arg(long, value_name = "DIR", default_value = DEFAULT_STORE, conflicts_with = "url")]
    pub(crate) store: PathBuf,
    /// Read from a Pyroscope backend's querier API instead of the local store.
    #[arg(long, value_name = "URL")]
    pub(crate) url: Option<String>,
    /// Tenant (X-Scope-OrgID) for --url.
    #[arg(long, value_name = "ID", requires = "url")]
    pub(crate) tenant: Option<String>,
    /// Basic auth user for --url (password from --password or $PYROSCOPE_PASSWORD).
    #[arg(long, value_name = "USER", requires = "url")]
    pub(crate) username: Option<String>,
    #[arg(long, value_name = "PASSWORD")]
    pub(crate) password: Option<String>,
    /// Bearer token for --url (default $PYROSCOPE_TOKEN).
    #[arg(long, value_name = "TOKEN")]
    pub(crate) token: Option<String>,
}

impl SourceArgs {
    pub(crate) fn open(&self) -> anyhow::Result<Box<dyn ProfileSource>> {
        match &self.url {
            Some(url) => {
                let options = RemoteOptions {
                    tenant: self.tenant.clone(),
                    // Secrets from the environment keep them out of `ps` and shell history.
                    basic_auth: self.username.clone().map(|u| {
                        let password = self
                            .password
                            .clone()
                            .or_else(|| std::env::var("PYROSCOPE_PASSWORD").ok())
                            .unwrap_or_default();
                        (u, password)
                    }),
                    bearer_token: self
                        .token
                        .clone()
                        .or_else(|| std::env::var("PYROSCOPE_TOKEN").ok()),
                    headers: Vec::new(),
                    timeout: Duration::from_secs(120),
                };
                Ok(Box::new(RemoteSource::new(url, options)?))
            }
            None => Ok(Box::new(LocalSource::open(&self.store).with_context(|| {
                format!(
                    "no store at {} (run `scraper run` with a pyroscope.store block first, or pass --store DIR or --url URL)",
                    self.store.display()
                )
            })?)),
        }
    }
}

#[derive(Debug, Args)]
pub(crate) struct QueryArgs {
    /// Label selector, e.g. '{service_name="otel/pprof-collector", namespace=~"otel.*"}'.
    #[arg(value_name = "QUERY", default_value = "{}")]
    pub(crate) query: String,
    /// Profile type: a name (process_cpu, memory, goroutine, mutex, block) or a full ID
    /// (process_cpu:cpu:nanoseconds:cpu:nanoseconds).
    #[arg(long = "type", value_name = "TYPE", default_value = "process_cpu")]
    pub(crate) profile_type: String,
}

impl QueryArgs {
    pub(crate) fn build(&self, from: SystemTime, to: SystemTime) -> anyhow::Result<Query> {
        // Typos are bad usage (exit code 2), not a failure to compute (1).
        let selector = Selector::parse(&self.query).map_err(|e| {
            usage(format!(
                "{e}\n  {}\n  {}^",
                self.query,
                " ".repeat(e.offset)
            ))
        })?;
        let profile_type = ProfileType::parse(&self.profile_type).map_err(usage)?;
        Ok(Query {
            selector,
            profile_type,
            from,
            to,
            exclude_straddling: false,
        })
    }
}

/// `--from` / `--to` of `query` and `pgo`.
#[derive(Debug, Args)]
pub(crate) struct RangeArgs {
    /// Start: now-1h, RFC 3339 or Unix seconds.
    #[arg(long, default_value = "now-1h")]
    from: String,
    /// End (exclusive).
    #[arg(long, default_value = "now")]
    to: String,
}

impl RangeArgs {
    /// The query for this range, times relative to now.
    pub(crate) fn query(&self, args: &QueryArgs) -> anyhow::Result<Query> {
        let (from, to) = self.times()?;
        args.build(from, to)
    }

    /// `(from, to)`, relative to now.
    pub(crate) fn times(&self) -> anyhow::Result<(SystemTime, SystemTime)> {
        let now = SystemTime::now();
        let from = crate::query::time::parse_time(&self.from, now).map_err(usage)?;
        let to = crate::query::time::parse_time(&self.to, now).map_err(usage)?;
        Ok((from, to))
    }
}

/// Runs a query with a progress bar on a terminal; `what` names it in messages.
pub(crate) fn fetch(
    source: &dyn ProfileSource,
    query: &Query,
    what: &str,
) -> anyhow::Result<Merged> {
    let mut bar = Progress::new(what);
    let merged = select_required(source, query, what, &mut |done, total| {
        bar.update(done, total)
    });
    bar.finish();
    merged.map_err(|e| match e {
        QueryError::NoMatch(message) => anyhow::anyhow!(message),
        e => anyhow::Error::new(e).context(format!("querying {what}")),
    })
}

/// A one-line progress bar on stderr, drawn only on a terminal and at most 10 times a second.
pub(crate) struct Progress {
    what: String,
    /// What is counted ("profiles", "windows").
    unit: &'static str,
    tty: bool,
    last: Option<std::time::Instant>,
    drawn: bool,
}

impl Progress {
    pub(crate) fn new(what: &str) -> Progress {
        Progress::counting(what, "profiles")
    }

    pub(crate) fn counting(what: &str, unit: &'static str) -> Progress {
        Progress {
            what: what.to_string(),
            unit,
            tty: std::io::stderr().is_terminal(),
            last: None,
            drawn: false,
        }
    }

    pub(crate) fn update(&mut self, done: usize, total: usize) {
        if !self.tty || total == 0 {
            return;
        }
        let now = std::time::Instant::now();
        if self
            .last
            .is_some_and(|t| now.duration_since(t) < Duration::from_millis(100) && done < total)
        {
            return;
        }
        self.last = Some(now);
        const WIDTH: usize = 30;
        let filled = (done.min(total) * WIDTH) / total;
        let mut err = std::io::stderr();
        let _ = write!(
            err,
            "\r{} [{}{}] {done}/{total} {}",
            self.what,
            "#".repeat(filled),
            " ".repeat(WIDTH - filled),
            self.unit
        );
        let _ = err.flush();
        self.drawn = true;
    }

    pub(crate) fn finish(&mut self) {
        if self.drawn {
            eprintln!();
        }
    }
}

/// Writes `bytes` to `path`, refusing to overwrite unless `force`.
pub(crate) fn write_new(path: &std::path::Path, bytes: &[u8], force: bool) -> anyhow::Result<()> {
    if !force && path.exists() {
        anyhow::bail!("{} exists (use --force to overwrite)", path.display());
    }
    std::fs::write(path, bytes).with_context(|| format!("writing {}", path.display()))
}
