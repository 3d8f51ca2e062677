//! What `otelcol.receiver.otlp` reports, as typed events (`runtime::event`): each writes its
//! log line and updates its metric (and the component's health) in one `emit`. A refused
//! request is something a user must act on (a client sending what cannot be read, a limit set
//! too low, a memory budget too small), so it is a warning, not a debug line.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::server::Shared;

use crate::protocols::otlp::convert::DroppedAttributes;
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

/// Attributes of an accepted request left out of its labels because their kind has no label
/// form (Pyroscope drops them without a word; here they are counted, and warned about at most
/// once per [`REFUSAL_LOG_EVERY`], since a client sends the same kinds with every request).
/// Not a health problem: the request is served as Pyroscope would serve it.
pub(super) struct AttributesDropped<'a> {
    pub shared: &'a Shared,
    pub dropped: &'a DroppedAttributes,
}

impl InternalEvent for AttributesDropped<'_> {
    fn emit(self) {
        let s = self.shared;
        for ((place, kind), n) in &self.dropped.counts {
            s.metrics
                .attributes_dropped(place.as_str(), kind.as_str(), *n);
        }
        let total = self.dropped.total();
        let kinds: Vec<String> = self
            .dropped
            .counts
            .iter()
            .map(|((place, kind), n)| format!("{} {}: {n}", place.as_str(), kind.as_str()))
            .collect();
        let kinds = kinds.join(", ");
        let first_key = self.dropped.first_key.as_deref().unwrap_or("");
        let warn = log_now(
            &mut crate::sync::lock(&s.attributes_logged),
            Instant::now(),
            REFUSAL_LOG_EVERY,
        );
        if warn {
            tracing::warn!(
                component_id = %s.id,
                attributes = total,
                kinds = %kinds,
                first_key,
                requests_not_logged_since = s.attributes_not_logged.swap(0, Ordering::Relaxed),
                "OTLP attributes left out of the labels: bool, double, bytes, kvlist and \
                 multi-value array values have no label form (as in Pyroscope)"
            );
        } else {
            s.attributes_not_logged.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                component_id = %s.id,
                attributes = total,
                kinds = %kinds,
                first_key,
                "OTLP attributes left out of the labels"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dropped_attributes_are_counted_by_place_and_kind() {
        use crate::protocols::otlp::convert::{Place, ValueKind};
        let registry = crate::runtime::metrics::MetricsRegistry::new();
        let metrics = super::super::metrics::ReceiverMetrics::get(&registry).instance("otlp.in");
        let shared = Shared::new(
            "otlp.in".into(),
            crate::profiles::FanOut::new(Vec::new()),
            crate::budget::Budget::unlimited(),
            metrics,
        );
        let mut dropped = DroppedAttributes::default();
        dropped.add(Place::Sample, ValueKind::Bool, "flag");
        dropped.add(Place::Sample, ValueKind::Bool, "flag");
        dropped.add(Place::Resource, ValueKind::Kvlist, "k8s.labels");
        for _ in 0..2 {
            AttributesDropped {
                shared: &shared,
                dropped: &dropped,
            }
            .emit();
        }
        let text = registry.encode().expect("encode");
        let line = |place: &str, kind: &str| {
            text.lines()
                .find(|l| {
                    l.starts_with("otelcol_receiver_otlp_attributes_dropped_total{")
                        && l.contains(&format!("place=\"{place}\""))
                        && l.contains(&format!("kind=\"{kind}\""))
                })
                .map(|l| l.rsplit(' ').next().unwrap_or("").to_owned())
        };
        assert_eq!(line("sample", "bool").as_deref(), Some("4"), "{text}");
        assert_eq!(line("resource", "kvlist").as_deref(), Some("2"), "{text}");
        // The second within the interval is not a warning but is counted for the next one.
        assert_eq!(shared.attributes_not_logged.load(Ordering::Relaxed), 1);
        assert!(crate::sync::lock(&shared.attributes_logged).is_some());
    }

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
