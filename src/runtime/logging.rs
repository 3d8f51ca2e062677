//! The `logging` config block and the process's log output, switchable at reload time.

use std::sync::Arc;

use serde::Deserialize;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::layer::{Layered, SubscriberExt as _};
use tracing_subscriber::reload;
use tracing_subscriber::util::SubscriberInitExt as _;

use super::logfmt::Logfmt;
use crate::syntax::ast::{Block, Span, Stmt};
use crate::syntax::decode;
use crate::syntax::diag::Diagnostic;
use crate::syntax::eval::EvaluatedBody;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogLevel {
    Debug,
    #[default]
    Info,
    Warn,
    Error,
}

impl LogLevel {
    fn filter(self) -> LevelFilter {
        match self {
            LogLevel::Debug => LevelFilter::DEBUG,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Warn => LevelFilter::WARN,
            LogLevel::Error => LevelFilter::ERROR,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Logfmt,
    Json,
}

/// The decoded `logging` block; the defaults are what an absent block means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoggingConfig {
    pub level: LogLevel,
    pub format: LogFormat,
}

/// The block as written: strings, validated separately so errors can point at the attribute.
#[derive(Debug, Default, Deserialize)]
struct LoggingArguments {
    level: Option<String>,
    format: Option<String>,
}

/// Decodes an evaluated `logging` block (`block` is used for error positions).
pub(crate) fn decode_logging(
    block: &Block,
    body: &EvaluatedBody,
) -> Result<LoggingConfig, Vec<Diagnostic>> {
    let args: LoggingArguments = decode::from_body_at(body, block.header_span())?;
    let mut diags = Vec::new();
    let mut config = LoggingConfig::default();
    if let Some(level) = &args.level {
        match level.as_str() {
            "debug" => config.level = LogLevel::Debug,
            "info" => config.level = LogLevel::Info,
            "warn" => config.level = LogLevel::Warn,
            "error" => config.level = LogLevel::Error,
            other => diags.push(Diagnostic::error(
                attribute_span(block, "level"),
                format!("unrecognized log level {other:?} (expected debug, info, warn or error)"),
            )),
        }
    }
    if let Some(format) = &args.format {
        match format.as_str() {
            "logfmt" => config.format = LogFormat::Logfmt,
            "json" => config.format = LogFormat::Json,
            other => diags.push(Diagnostic::error(
                attribute_span(block, "format"),
                format!("unrecognized log format {other:?} (expected logfmt or json)"),
            )),
        }
    }
    if diags.is_empty() {
        Ok(config)
    } else {
        Err(diags)
    }
}

/// Checks a `logging` block some of whose attributes could not be evaluated (`unevaluated`,
/// their statement spans): the rest of it is decoded for unknown names and types.
pub(crate) fn check_partial(
    block: &Block,
    body: &EvaluatedBody,
    unevaluated: &std::collections::HashSet<Span>,
) -> Vec<Diagnostic> {
    decode::from_body_lenient::<LoggingArguments>(body, block.header_span(), unevaluated).errors
}

fn attribute_span(block: &Block, name: &str) -> Span {
    block
        .body
        .stmts
        .iter()
        .find_map(|s| match s {
            Stmt::Attribute(a) if a.name.name == name => Some(a.value.span),
            _ => None,
        })
        .unwrap_or_else(|| block.header_span())
}

type Base = tracing_subscriber::Registry;
type Filtered = Layered<reload::Layer<Targets, Base>, Base>;
type BoxedFormat = Box<dyn Layer<Filtered> + Send + Sync>;

/// Lets a config reload change the level and format of the global subscriber.
#[derive(Clone)]
pub struct LoggingHandle {
    filter: reload::Handle<Targets, Base>,
    format: reload::Handle<BoxedFormat, Filtered>,
    current: Arc<std::sync::Mutex<LoggingConfig>>,
}

impl std::fmt::Debug for LoggingHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoggingHandle").finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoggingError {
    #[error("installing the log subscriber: {0}")]
    Init(#[from] tracing_subscriber::util::TryInitError),
    #[error("changing the log configuration: {0}")]
    Reload(#[from] reload::Error),
}

/// Installs the process-wide subscriber writing to stderr. Call once, before the config loads.
pub fn init(config: LoggingConfig) -> Result<LoggingHandle, LoggingError> {
    let (filter, filter_handle) = reload::Layer::new(targets(config.level));
    let (format, format_handle) = reload::Layer::new(format_layer(config.format));
    tracing_subscriber::registry()
        .with(filter)
        .with(format)
        .try_init()?;
    Ok(LoggingHandle {
        filter: filter_handle,
        format: format_handle,
        current: Arc::new(std::sync::Mutex::new(config)),
    })
}

impl LoggingHandle {
    pub fn apply(&self, config: LoggingConfig) -> Result<(), LoggingError> {
        let mut current = crate::sync::lock(&self.current);
        if *current == config {
            return Ok(());
        }
        if current.level != config.level {
            self.filter.reload(targets(config.level))?;
        }
        if current.format != config.format {
            self.format.reload(format_layer(config.format))?;
        }
        *current = config;
        Ok(())
    }
}

/// The chosen level for our own code; the HTTP stack's debug output is only noise to users, so
/// those crates stay at `info` even when `debug` is asked for.
fn targets(level: LogLevel) -> Targets {
    let filter = level.filter();
    let quiet = filter.min(LevelFilter::INFO);
    Targets::new()
        .with_default(filter)
        .with_target("hyper", quiet)
        .with_target("hyper_util", quiet)
        .with_target("h2", quiet)
        .with_target("reqwest", quiet)
        .with_target("rustls", quiet)
        .with_target("tower", quiet)
}

fn format_layer(format: LogFormat) -> BoxedFormat {
    match format {
        LogFormat::Logfmt => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .event_format(Logfmt)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .with_ansi(false)
            .json()
            .flatten_event(true)
            .with_current_span(false)
            .with_span_list(true)
            .boxed(),
    }
}
