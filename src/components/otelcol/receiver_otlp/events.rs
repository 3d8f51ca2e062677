//! What `otelcol.receiver.otlp` reports, as typed events (`runtime::event`): each writes its
//! log line and updates its metric (and the component's health) in one `emit`. A refused
//! request is something a user must act on (a client sending what cannot be read, a limit set
//! too low, a memory budget too small), so it is a warning, not a debug line.

use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::server::Shared;

use crate::protocols::otlp::labels::{DroppedAttributes, Place, ValueKind};
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
/// form (Pyroscope drops them without a word; here they are counted, and each place and kind
/// is a warning the first time the component sees it, a debug line after: a client sends the
/// same kinds with every request, and the counter is the ongoing signal).
/// Not a health problem: the request is served as Pyroscope would serve it.
pub(super) struct AttributesDropped<'a> {
    pub shared: &'a Shared,
    pub dropped: &'a DroppedAttributes,
}

impl InternalEvent for AttributesDropped<'_> {
    fn emit(self) {
        let s = self.shared;
        for ((place, kind), d) in &self.dropped.counts {
            s.metrics
                .attributes_dropped(place.as_str(), kind.as_str(), d.count);
        }
        let new = not_warned_yet(&mut crate::sync::lock(&s.attributes_warned), self.dropped);
        // `Kinds` is formatted only if the line is written.
        if new.is_empty() {
            tracing::debug!(
                component_id = %s.id,
                attributes = self.dropped.total(),
                kinds = %Kinds { dropped: self.dropped, only: None },
                "OTLP attributes left out of the labels"
            );
        } else {
            tracing::warn!(
                component_id = %s.id,
                attributes = self.dropped.total(),
                kinds = %Kinds { dropped: self.dropped, only: Some(&new) },
                "OTLP attributes left out of the labels: bool, double, bytes, kvlist and \
                 multi-value array values have no label form (as in Pyroscope); warned once \
                 per place and kind, counted in otelcol_receiver_otlp_attributes_dropped_total"
            );
        }
    }
}

/// The pairs of `dropped` not in `warned`, which now holds them.
fn not_warned_yet(
    warned: &mut BTreeSet<(Place, ValueKind)>,
    dropped: &DroppedAttributes,
) -> Vec<(Place, ValueKind)> {
    dropped
        .counts
        .keys()
        .filter(|pair| warned.insert(**pair))
        .copied()
        .collect()
}

/// `place kind: count (first key "k")`, comma-separated, for every pair of `dropped` or the
/// `only` ones.
struct Kinds<'a> {
    dropped: &'a DroppedAttributes,
    only: Option<&'a [(Place, ValueKind)]>,
}

impl std::fmt::Display for Kinds<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut sep = "";
        for ((place, kind), d) in &self.dropped.counts {
            if self
                .only
                .is_some_and(|only| !only.contains(&(*place, *kind)))
            {
                continue;
            }
            write!(
                f,
                "{sep}{} {}: {} (first key {:?})",
                place.as_str(),
                kind.as_str(),
                d.count,
                d.first_key
            )?;
            sep = ", ";
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Pair = (Place, ValueKind);

    #[test]
    fn dropped_attributes_are_counted_by_place_and_kind() {
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
        assert_eq!(
            *crate::sync::lock(&shared.attributes_warned),
            BTreeSet::from([
                (Place::Resource, ValueKind::Kvlist),
                (Place::Sample, ValueKind::Bool)
            ])
        );
    }

    #[test]
    fn each_place_and_kind_is_warned_about_once() {
        let mut warned = BTreeSet::new();
        // (dropped in a request, pairs warned about for it)
        let cases: Vec<(Vec<Pair>, Vec<Pair>)> = vec![
            (
                vec![(Place::Sample, ValueKind::Bool)],
                vec![(Place::Sample, ValueKind::Bool)],
            ),
            (vec![(Place::Sample, ValueKind::Bool)], Vec::new()),
            (
                vec![
                    (Place::Sample, ValueKind::Bool),
                    (Place::Scope, ValueKind::Double),
                    (Place::Sample, ValueKind::Double),
                ],
                vec![
                    (Place::Scope, ValueKind::Double),
                    (Place::Sample, ValueKind::Double),
                ],
            ),
            (
                vec![
                    (Place::Scope, ValueKind::Double),
                    (Place::Sample, ValueKind::Bool),
                ],
                Vec::new(),
            ),
        ];
        for (i, (pairs, want)) in cases.into_iter().enumerate() {
            let mut dropped = DroppedAttributes::default();
            for (place, kind) in pairs {
                dropped.add(place, kind, "k");
            }
            assert_eq!(not_warned_yet(&mut warned, &dropped), want, "request {i}");
        }
    }

    #[test]
    fn kinds_are_listed_with_their_first_key() {
        let mut dropped = DroppedAttributes::default();
        dropped.add(Place::Sample, ValueKind::Bool, "flag");
        dropped.add(Place::Sample, ValueKind::Bool, "other");
        dropped.add(Place::Resource, ValueKind::Kvlist, "k8s\"labels");
        let long = "k".repeat(1000);
        dropped.add(Place::Scope, ValueKind::Double, &long);
        let short = "k".repeat(crate::protocols::otlp::labels::MAX_KEY_BYTES);
        // (only, text)
        let cases: Vec<(Option<Vec<Pair>>, String)> = vec![
            (
                None,
                format!(
                    "resource kvlist: 1 (first key \"k8s\\\"labels\"), scope double: 1 (first \
                     key \"{short}\"), sample bool: 2 (first key \"flag\")"
                ),
            ),
            (
                Some(vec![(Place::Sample, ValueKind::Bool)]),
                "sample bool: 2 (first key \"flag\")".to_owned(),
            ),
            (Some(Vec::new()), String::new()),
        ];
        for (only, want) in cases {
            let kinds = Kinds {
                dropped: &dropped,
                only: only.as_deref(),
            };
            assert_eq!(kinds.to_string(), want);
        }
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
