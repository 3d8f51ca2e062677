//! Why a scrape failed: a short machine-readable [`Reason`] (the `reason` label of
//! `pyroscope_scrape_errors_total`, `last_error_reason` in the debug info) and a precise message.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Reason {
    /// No complete answer within the scrape timeout (a target that never answers).
    Timeout,
    /// Connecting failed, or the connection broke (refused, reset, closed mid-body, DNS, TLS).
    Connection,
    /// A non-2xx status.
    HttpStatus,
    /// Go's "cpu profiling already in use": another profiler holds the target's CPU profiler.
    ProfilingInUse,
    /// The body is larger than `body_size_limit`.
    BodyTooLarge,
    /// A 2xx answer with no body.
    EmptyBody,
    /// Missing or non-`application/octet-stream` content type.
    ContentType,
    /// An HTML or JSON page instead of a profile.
    NotPprof,
    /// Not a decodable profile: bad gzip, truncated or malformed protobuf, invalid tables.
    InvalidProfile,
    /// Credentials could not be read (a `*_file` secret is missing) or fetched (oauth2).
    Auth,
    /// The target's labels exceed `label_limit` or a length limit; it is not scraped.
    LabelLimit,
    /// The memory budget had no room for the scrape (or its body did not fit): the scrape was
    /// shed. The target is down with this reason until a scrape fits again, since nothing of
    /// it reaches the backend. Not in [`Reason::ALL`]: sheds are counted by the budget.
    MemoryBudget,
}

impl Reason {
    pub const ALL: [Reason; 11] = [
        Reason::Timeout,
        Reason::Connection,
        Reason::HttpStatus,
        Reason::ProfilingInUse,
        Reason::BodyTooLarge,
        Reason::EmptyBody,
        Reason::ContentType,
        Reason::NotPprof,
        Reason::InvalidProfile,
        Reason::Auth,
        Reason::LabelLimit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Timeout => "timeout",
            Reason::Connection => "connection",
            Reason::HttpStatus => "http_status",
            Reason::ProfilingInUse => "profiling_in_use",
            Reason::BodyTooLarge => "body_too_large",
            Reason::EmptyBody => "empty_body",
            Reason::ContentType => "content_type",
            Reason::NotPprof => "not_pprof",
            Reason::InvalidProfile => "invalid_profile",
            Reason::Auth => "auth",
            Reason::LabelLimit => "label_limit",
            Reason::MemoryBudget => "memory_budget",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One failed scrape.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScrapeError {
    pub reason: Reason,
    pub message: String,
}

impl ScrapeError {
    pub fn new(reason: Reason, message: impl Into<String>) -> Self {
        ScrapeError {
            reason,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScrapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ScrapeError {}
