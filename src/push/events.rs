//! What happens to a profile on its way to a backend, as typed events (`runtime::event`): each
//! writes its log line and updates its counters in one place, so a drop can never be logged
//! without being counted under the same reason, or counted without its line.
//!
//! Drops that happen in bulk for one cause (a full queue, a reload, shutdown, age in the queue)
//! are counted per profile but not logged per profile; everything an endpoint refuses or gives
//! up on is a warning per profile, as in Alloy.

use std::time::Duration;

use super::metrics::{EndpointMetrics, Latency, Reason};
use crate::protocols::pyroscope::wire::PushError;
use crate::runtime::event::InternalEvent;

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

/// A profile was trimmed to fit the backend's limits.
pub(super) struct ProfileTrimmed<'a> {
    pub metrics: &'a EndpointMetrics,
    pub endpoint: &'a str,
    pub samples_before: usize,
    pub samples_after: usize,
}

impl InternalEvent for ProfileTrimmed<'_> {
    fn emit(self) {
        let (samples_before, samples_after) = (self.samples_before, self.samples_after);
        tracing::debug!(endpoint = %self.endpoint, samples_before, samples_after, "trimmed profile to the backend's limits");
        self.metrics.trimmed();
    }
}
