//! What `pyroscope.enrich` counts and reports. Alloy's component has no metrics; these are
//! ours, so that a pipeline whose profiles stop matching (a renamed label, discovery that lost
//! its targets) shows up without reading labels at the backend.
//!
//! | metric | type | meaning |
//! |---|---|---|
//! | `pyroscope_enrich_profiles_total{result}` | counter | profiles forwarded, by `result`: `matched` (labels copied), `no_match_label` (the profile lacks the match label), `no_target` (no target has its value) |
//! | `pyroscope_enrich_targets` | gauge | distinct match values in the index (targets a profile can match) |
//! | `pyroscope_enrich_targets_without_match_label` | gauge | targets lacking `target_match_label`, which can never match |
//!
//! Every series has `component_id` and `component_path`; an instance's series are removed when
//! it exits. The events come in pairs, a warning when a problem starts and an info line when it
//! ends, each logged once per occurrence (not on every discovery update or profile):
//!
//! * [`NoTargetMatchable`] / [`TargetsMatchable`]: targets arrived but none carries
//!   `target_match_label` (almost always a misspelt label or a missing relabel rule), and its
//!   end. The component is unhealthy meanwhile.
//! * [`ProfilesUnmatched`] / [`ProfilesMatched`]: for a whole [`super::watch::WINDOW`] profiles
//!   arrived and not one was enriched, because none carried `profiles_match_label` (a misspelt
//!   label) or none carried a value a target has; and the first enriched profile after that.
//!   Counted by `pyroscope_enrich_profiles_total` already, so they only log.
//!
//! Log fields are named as in the other `pyroscope.*` components: `component_id`.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::index::Outcome;
use super::watch::{Problem, WINDOW};
use crate::runtime::event::InternalEvent;
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The families, registered once per process.
struct EnrichMetrics {
    profiles: Family<Labels, Counter>,
    targets: Family<Labels, Gauge>,
    without_label: Family<Labels, Gauge>,
}

/// One instance's series.
pub(super) struct InstanceMetrics {
    all: Arc<EnrichMetrics>,
    base: Labels,
    /// At [`Outcome::index`].
    profiles: [Counter; Outcome::ALL.len()],
    targets: Gauge,
    without_label: Gauge,
}

fn with_result(base: &Labels, outcome: Outcome) -> Labels {
    let mut l = base.clone();
    l.push(("result".to_string(), outcome.as_str().to_string()));
    l
}

impl InstanceMetrics {
    pub(super) fn new(registry: &MetricsRegistry, component_id: &str) -> Self {
        let all = registry.get_or_register(|r: &mut Registry| {
            let m = EnrichMetrics {
                profiles: Family::default(),
                targets: Family::default(),
                without_label: Family::default(),
            };
            r.register(
                "pyroscope_enrich_profiles",
                "Profiles forwarded by pyroscope.enrich, by whether a target matched.",
                m.profiles.clone(),
            );
            r.register(
                "pyroscope_enrich_targets",
                "Distinct target_match_label values pyroscope.enrich can match.",
                m.targets.clone(),
            );
            r.register(
                "pyroscope_enrich_targets_without_match_label",
                "Targets given to pyroscope.enrich without its target_match_label.",
                m.without_label.clone(),
            );
            m
        });
        let base = component_labels(component_id);
        let profiles =
            Outcome::ALL.map(|o| all.profiles.get_or_create(&with_result(&base, o)).clone());
        let targets = all.targets.get_or_create(&base).clone();
        let without_label = all.without_label.get_or_create(&base).clone();
        InstanceMetrics {
            targets,
            without_label,
            profiles,
            all,
            base,
        }
    }

    pub(super) fn count(&self, outcome: Outcome, n: u64) {
        self.profiles[outcome.index()].inc_by(n);
    }

    pub(super) fn profiles(&self, outcome: Outcome) -> u64 {
        self.profiles[outcome.index()].get()
    }

    pub(super) fn index(&self, targets: usize, without_label: usize) {
        self.targets.set(i64::try_from(targets).unwrap_or(i64::MAX));
        self.without_label
            .set(i64::try_from(without_label).unwrap_or(i64::MAX));
    }

    /// Removes every series of this instance (the component exited).
    pub(super) fn remove(&self) {
        for o in Outcome::ALL {
            self.all.profiles.remove(&with_result(&self.base, o));
        }
        self.all.targets.remove(&self.base);
        self.all.without_label.remove(&self.base);
    }
}

/// Targets arrived, and not one has `target_match_label`: nothing can be enriched.
pub(super) struct NoTargetMatchable<'a> {
    pub component_id: &'a str,
    pub label: &'a str,
    pub targets: usize,
}

impl InternalEvent for NoTargetMatchable<'_> {
    fn emit(self) {
        // Its gauge (`pyroscope_enrich_targets_without_match_label`) is set with the index.
        tracing::warn!(
            component_id = %self.component_id,
            target_match_label = %self.label,
            targets = self.targets,
            "pyroscope.enrich: no target has the match label; profiles pass through unchanged"
        );
    }
}

/// The end of [`NoTargetMatchable`]: some target has the match label again, or no target is
/// left without it (`matchable` 0 and `targets` 0: discovery found nothing).
pub(super) struct TargetsMatchable<'a> {
    pub component_id: &'a str,
    pub label: &'a str,
    pub targets: usize,
    pub matchable: usize,
}

impl InternalEvent for TargetsMatchable<'_> {
    fn emit(self) {
        tracing::info!(
            component_id = %self.component_id,
            target_match_label = %self.label,
            targets = self.targets,
            matchable = self.matchable,
            "pyroscope.enrich: targets without the match label are gone; profiles can be enriched again"
        );
    }
}

/// For a whole window profiles arrived and none was enriched, for the reason `problem` gives.
pub(super) struct ProfilesUnmatched<'a> {
    pub component_id: &'a str,
    pub problem: Problem,
    pub profiles_match_label: &'a str,
    /// Profiles seen in the window.
    pub profiles: u64,
    pub matchable_targets: usize,
}

impl InternalEvent for ProfilesUnmatched<'_> {
    fn emit(self) {
        let window = WINDOW.as_secs();
        match self.problem {
            Problem::NoMatchLabel => tracing::warn!(
                component_id = %self.component_id,
                profiles_match_label = %self.profiles_match_label,
                profiles = self.profiles,
                window_seconds = window,
                "pyroscope.enrich: no profile received carries the profiles match label; they pass through unchanged"
            ),
            Problem::NoTarget => tracing::warn!(
                component_id = %self.component_id,
                profiles_match_label = %self.profiles_match_label,
                profiles = self.profiles,
                matchable_targets = self.matchable_targets,
                window_seconds = window,
                "pyroscope.enrich: no profile received has a match value any target has; they pass through unchanged"
            ),
        }
    }
}

/// The end of [`ProfilesUnmatched`]: a profile was enriched.
pub(super) struct ProfilesMatched<'a> {
    pub component_id: &'a str,
    pub problem: Problem,
    pub profiles_match_label: &'a str,
}

impl InternalEvent for ProfilesMatched<'_> {
    fn emit(self) {
        tracing::info!(
            component_id = %self.component_id,
            profiles_match_label = %self.profiles_match_label,
            was = self.problem.as_str(),
            "pyroscope.enrich: profiles are enriched again"
        );
    }
}
