//! What happens to a profile on its way to a backend, as typed events (`runtime::event`): each
//! writes its log line and updates its counters in one place, so a drop can never be logged
//! without being counted under the same reason, or counted without its line.
//!
//! Drops that happen in bulk for one cause (a full queue, a reload, shutdown, age in the queue)
//! are counted per profile but not logged per profile; everything an endpoint refuses or gives
//! up on is a warning per profile, as in Alloy.

use std::time::Duration;

use super::limits::TrimReport;
use super::metrics::{EndpointMetrics, Latency, Reason};
use crate::protocols::pyroscope::wire::PushError;
use crate::runtime::event::{InternalEvent, LogThrottle};

/// Why an endpoint drops a profile, with what the log line needs.
pub(super) enum Drop<'a> {
    /// Evicted from a full queue or for the memory budget, drained at reload or shutdown, or
    /// older than `max_age` when taken from the queue: counted, not logged one by one.
    Quietly(Reason),
    /// Could not be made into a request (too large after trimming, no room to decode, does not
    /// convert).
    Unsendable { reason: Reason, why: &'a str },
    /// The backend refused it for good.
    Rejected(&'a PushError),
    /// Failed once with retries disabled (`retry_on_failure { enabled = false }`).
    RetriesDisabled(&'a PushError),
    /// Failed `max_backoff_retries` times.
    RetriesExhausted { err: &'a PushError, retries: u32 },
    /// Grew older than `max_age` while being retried.
    AgedOut(&'a PushError),
}

/// A profile one endpoint will not send.
pub(super) struct ProfileDropped<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub bytes: usize,
    pub why: Drop<'a>,
}

impl InternalEvent for ProfileDropped<'_> {
    fn emit(self) {
        let url = self.endpoint;
        let reason = match self.why {
            Drop::Quietly(reason) => reason,
            Drop::Unsendable { reason, why } => {
                tracing::warn!(endpoint = %url, reason = %why, "dropping profile");
                reason
            }
            Drop::Rejected(err) => {
                tracing::warn!(endpoint = %url, err = %err, "push rejected; dropping profile");
                Reason::Rejected
            }
            Drop::RetriesDisabled(err) => {
                tracing::warn!(endpoint = %url, err = %err, "push failed and retries are disabled; dropping profile");
                Reason::RetriesExhausted
            }
            Drop::RetriesExhausted { err, retries } => {
                tracing::warn!(endpoint = %url, retries, err = %err, "push failed; giving up on profile");
                Reason::RetriesExhausted
            }
            Drop::AgedOut(err) => {
                tracing::warn!(endpoint = %url, err = %err, "profile aged out while retrying; dropping it");
                Reason::TooOld
            }
        };
        self.metrics.dropped(reason, self.bytes);
    }
}

/// A profile whose labels break the backend's rules: dropped for every endpoint.
pub(super) struct InvalidLabels<'a, E: std::fmt::Display, L: std::fmt::Debug> {
    pub component: &'a str,
    pub err: &'a E,
    pub labels: &'a L,
    pub bytes: usize,
    pub endpoints: &'a [&'a EndpointMetrics],
}

impl<E: std::fmt::Display, L: std::fmt::Debug> InternalEvent for InvalidLabels<'_, E, L> {
    fn emit(self) {
        tracing::warn!(component = %self.component, err = %self.err, labels = ?self.labels, "invalid labels in profile; dropping it");
        for metrics in self.endpoints {
            metrics.dropped(Reason::InvalidLabels, self.bytes);
        }
    }
}

/// A push failed and will be tried again after `delay`.
pub(super) struct PushRetrying<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub err: &'a PushError,
    pub delay: Duration,
}

impl InternalEvent for PushRetrying<'_> {
    fn emit(self) {
        let delay = self.delay;
        tracing::debug!(endpoint = %self.endpoint, err = %self.err, ?delay, "push failed; retrying");
        self.metrics.retry();
    }
}

/// A profile reached the backend.
pub(super) struct ProfileSent<'a> {
    pub metrics: &'a EndpointMetrics,
    pub bytes: usize,
    pub seconds: f64,
}

impl InternalEvent for ProfileSent<'_> {
    fn emit(self) {
        self.metrics.sent(self.bytes);
        self.metrics.latency(Latency::Endpoint, self.seconds);
    }
}

/// A profile was trimmed to fit the backend's limits. Logged at debug level each time; at info
/// (every sample type kept 95% of its total) or warn (some did not: the limit left no room)
/// at most once a minute per endpoint and level, with the count of trims not logged since.
pub(super) struct ProfileTrimmed<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub report: &'a TrimReport,
}

/// The rate limits of an endpoint's trimming lines: trimming can hit every profile of a large
/// target, every scrape.
pub(super) struct TrimLog {
    complete: LogThrottle,
    short: LogThrottle,
}

impl TrimLog {
    const EVERY: Duration = Duration::from_secs(60);

    pub(super) const fn new() -> TrimLog {
        TrimLog {
            complete: LogThrottle::new(Self::EVERY),
            short: LogThrottle::new(Self::EVERY),
        }
    }
}

impl InternalEvent for ProfileTrimmed<'_> {
    fn emit(self) {
        let r = self.report;
        let endpoint = self.endpoint;
        let (reason, samples_before, samples_after) =
            (r.reason.as_str(), r.samples_before, r.samples_after);
        let kept = r.kept_text();
        let short = r.short().join(", ");
        tracing::debug!(endpoint = %endpoint, reason, samples_before, samples_after, kept = %kept, short = %short, "trimmed profile to the backend's limits");
        let log = self.metrics.trim_log();
        let now = std::time::Instant::now();
        if short.is_empty() {
            if let Some(unlogged) = log.complete.admit(now) {
                tracing::info!(endpoint = %endpoint, reason, samples_before, samples_after, kept = %kept, unlogged, "trimming profiles to the backend's limits; every sample type keeps 95% of its total");
            }
        } else if let Some(unlogged) = log.short.admit(now) {
            tracing::warn!(endpoint = %endpoint, reason, samples_before, samples_after, kept = %kept, short = %short, unlogged, "trimming profiles to the backend's limits; some sample types keep less than 95% of their total");
        }
        self.metrics.trimmed(r.reason);
    }
}
