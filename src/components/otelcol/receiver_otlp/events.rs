//! What `otelcol.receiver.otlp` reports, as typed events (`runtime::event`): each writes its
//! log line and updates its metric (and the component's health) in one `emit`. A refused
//! request is something a user must act on (a client sending what cannot be read, a limit set
//! too low, a memory budget too small), so it is a warning, not a debug line.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::server::Shared;

use crate::runtime::event::InternalEvent;

/// At most one refusal warning per this interval and component; the ones in between are
/// debug lines, counted in the next warning (a client retrying a bad request in a loop must
/// not flood the log). Metrics and health see every one.
pub(super) const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// Whether a refusal at `now` gets a warning, given when the last one did (updated).
fn log_now(last: &mut Option<Instant>, now: Instant, every: Duration) -> bool {
    match *last {
        Some(t) if now.saturating_duration_since(t) < every => false,
        _ => {
            *last = Some(now);
            true
        }
    }
}

/// A request answered with an error (`status`: the gRPC status name or the HTTP code).
pub(super) struct RequestRejected<'a> {
    pub shared: &'a Shared,
    pub transport: &'static str,
    pub status: &'a str,
    pub message: &'a str,
}

impl InternalEvent for RequestRejected<'_> {
    fn emit(self) {
        let s = self.shared;
        s.metrics.request(self.transport, self.status);
        s.requests_rejected.fetch_add(1, Ordering::Relaxed);
        s.set_problem(Some(format!(
            "last {} export request refused ({}): {}",
            self.transport, self.status, self.message
        )));
        let warn = log_now(
            &mut crate::sync::lock(&s.refusal_logged),
            Instant::now(),
            REFUSAL_LOG_EVERY,
        );
        if warn {
            tracing::warn!(
                component_id = %s.id,
                transport = self.transport,
                status = self.status,
                error = self.message,
                not_logged_since = s.refusals_not_logged.swap(0, Ordering::Relaxed),
                "OTLP export request refused"
            );
        } else {
            s.refusals_not_logged.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                component_id = %s.id,
                transport = self.transport,
                status = self.status,
                error = self.message,
                "OTLP export request refused"
            );
        }
    }
}

/// A request whose profiles were handed to `output.profiles`.
pub(super) struct RequestAccepted<'a> {
    pub shared: &'a Shared,
    pub transport: &'static str,
    pub status: &'a str,
    pub profiles: usize,
}

impl InternalEvent for RequestAccepted<'_> {
    fn emit(self) {
        let s = self.shared;
        s.metrics.request(self.transport, self.status);
        s.metrics.forwarded(self.transport, self.profiles as u64);
        s.profiles_forwarded
            .fetch_add(self.profiles as u64, Ordering::Relaxed);
        s.set_problem(None);
        tracing::trace!(
            component_id = %s.id,
            transport = self.transport,
            profiles = self.profiles,
            "OTLP export request forwarded"
        );
    }
}

/// Converted profiles that had nowhere to go (`output.profiles` is empty).
pub(super) struct ProfilesDropped<'a> {
    pub shared: &'a Shared,
    pub reason: &'static str,
    pub profiles: usize,
}

impl InternalEvent for ProfilesDropped<'_> {
    fn emit(self) {
        let s = self.shared;
        s.metrics.dropped(self.reason, self.profiles as u64);
        s.set_problem(Some(
            "received profiles are dropped: output.profiles is empty".to_owned(),
        ));
        tracing::warn!(
            component_id = %s.id,
            reason = self.reason,
            profiles = self.profiles,
            "received profiles dropped: set output {{ profiles = [...] }}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_warnings_are_throttled() {
        let t0 = Instant::now();
        let every = Duration::from_secs(10);
        let mut last = None;
        // (seconds after t0, warned)
        for (at, want) in [
            (0, true),
            (1, false),
            (9, false),
            (10, true),
            (15, false),
            (25, true),
        ] {
            let now = t0 + Duration::from_secs(at);
            assert_eq!(log_now(&mut last, now, every), want, "at {at}s");
        }
    }
}
