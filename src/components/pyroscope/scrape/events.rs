//! What a scrape loop reports, as typed events (`runtime::event`): a failed scrape is counted
//! in `pyroscope_scrape_errors_total{reason}` and logged by one `emit`, and a shed scrape is
//! counted in the budget's `scraper_memory_shed_total` and logged the same way, so neither can
//! be counted without its line or logged without its count. So are the start and end of a
//! spell of every target down (the component's health), target restarts, and loops that find
//! their target serves deltas.

use super::delta_mode::{Cause, Change, Mode};
use super::error::ScrapeError;
use super::metrics::ComponentMetrics;
use crate::budget::{Budget, Priority, Use};
use crate::labels::LabelSet;
use crate::pprof::ResetReason;
use crate::runtime::event::InternalEvent;

/// A scrape failed. Logged as a warning when a failure starts or its reason changes; repeats
/// of the same failure only at debug level, so a target that stays down does not flood the log.
pub(super) struct ScrapeFailed<'a> {
    pub metrics: &'a ComponentMetrics,
    pub url: &'a str,
    pub error: &'a ScrapeError,
    pub repeated: bool,
}

impl InternalEvent for ScrapeFailed<'_> {
    fn emit(self) {
        let (url, e) = (self.url, self.error);
        self.metrics.error(e.reason);
        if self.repeated {
            tracing::debug!(url = %url, reason = %e.reason, err = %e, "scrape failed");
        } else {
            tracing::warn!(url = %url, reason = %e.reason, err = %e, "scrape failed");
        }
    }
}

/// A scrape the memory budget had no room for. `first` is whether the loop just started
/// shedding (a warning); later ones are debug lines. `dropped_state` says the loop's delta
/// state was given up too (counted as shed delta state).
pub(super) struct ScrapeShed<'a> {
    pub budget: &'a Budget,
    pub url: &'a str,
    pub priority: Priority,
    pub dropped_state: bool,
    pub first: bool,
}

impl InternalEvent for ScrapeShed<'_> {
    fn emit(self) {
        let (budget, priority, dropped_state) = (self.budget, self.priority, self.dropped_state);
        budget.count_shed(Use::Scrape, priority);
        if dropped_state {
            budget.count_shed(Use::DeltaState, priority);
        }
        if self.first {
            tracing::warn!(
                url = %self.url,
                priority = priority.as_str(),
                used = budget.used(),
                limit = budget.limit(),
                dropped_state,
                "scrape shed: the memory budget is full"
            );
        } else {
            tracing::debug!(url = %self.url, priority = priority.as_str(), dropped_state, "scrape shed");
        }
    }
}

/// Every target has been down for more than two scrape intervals: the component turns
/// unhealthy. `summary` is the health message (counts and the last error).
pub(super) struct AllTargetsDown<'a> {
    pub metrics: &'a ComponentMetrics,
    pub summary: &'a str,
}

impl InternalEvent for AllTargetsDown<'_> {
    fn emit(self) {
        self.metrics.all_down.set(1);
        tracing::warn!(summary = %self.summary, "every target has been down for more than two scrape intervals: nothing is being profiled");
    }
}

/// The end of an [`AllTargetsDown`] spell: a target is up again (or none is down any more).
pub(super) struct TargetsUpAgain<'a> {
    pub metrics: &'a ComponentMetrics,
    pub summary: &'a str,
}

impl InternalEvent for TargetsUpAgain<'_> {
    fn emit(self) {
        self.metrics.all_down.set(0);
        tracing::info!(summary = %self.summary, "targets are being scraped again");
    }
}

/// A cumulative profile's baseline started over: the target restarted (its counters went
/// down) or changed (another binary, other sample types or period). Nothing is sent for this
/// scrape; the next one is a delta from here. Once per restart, with the target's labels.
pub(super) struct TargetRestarted<'a> {
    pub metrics: &'a ComponentMetrics,
    pub url: &'a str,
    pub labels: &'a LabelSet,
    pub reason: &'a ResetReason,
}

impl InternalEvent for TargetRestarted<'_> {
    fn emit(self) {
        let reason = match self.reason {
            ResetReason::CountersDecreased { .. } => "counters_decreased",
            ResetReason::TimeWentBackwards => "time_went_backwards",
            ResetReason::BuildIdChanged => "build_id_changed",
            ResetReason::SampleTypesChanged => "sample_types_changed",
            ResetReason::PeriodChanged => "period_changed",
        };
        self.metrics.restarted(reason);
        tracing::info!(url = %self.url, labels = %self.labels, reason = %self.reason, "target restarted or changed: the delta baseline starts over, nothing is sent for this scrape");
    }
}

/// A loop switched between subtracting scrapes and forwarding what the target sends (see
/// `delta_mode`). A loop's first switch is a warning, since the configuration says otherwise;
/// later ones (a target that flips back) are info lines.
pub(super) struct DeltaModeChanged<'a> {
    pub metrics: &'a ComponentMetrics,
    pub url: &'a str,
    pub labels: &'a LabelSet,
    pub profile_type: &'a str,
    pub change: Change,
}

impl InternalEvent for DeltaModeChanged<'_> {
    fn emit(self) {
        let Change { mode, cause, first } = self.change;
        self.metrics
            .delta_mode_changed(mode.as_str(), cause.as_str());
        let (url, labels, ty) = (self.url, self.labels, self.profile_type);
        let what = match (mode, cause) {
            (Mode::AsReceived(_), Cause::Path) => {
                "the target serves deltas (a godeltaprof path) but is configured as a cumulative profile type: its profiles are forwarded as received, not subtracted again; configure it as profile.godeltaprof_* instead"
            }
            (Mode::AsReceived(_), Cause::Values) => {
                "the target's counters keep going down, so it serves deltas rather than cumulative counters: its profiles are forwarded as received, not subtracted again, until they grow steadily again"
            }
            (Mode::Subtract, _) => {
                "the target's counters grow steadily again: scrapes are subtracted again"
            }
        };
        if first {
            tracing::warn!(url = %url, labels = %labels, profile_type = %ty, "{what}");
        } else {
            tracing::info!(url = %url, labels = %labels, profile_type = %ty, "{what}");
        }
    }
}
