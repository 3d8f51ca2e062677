//! What a scrape loop reports, as typed events (`runtime::event`): a failed scrape is counted
//! in `pyroscope_scrape_errors_total{reason}` and logged by one `emit`, and a shed scrape is
//! counted in the budget's `scraper_memory_shed_total` and logged the same way, so neither can
//! be counted without its line or logged without its count.

use super::error::ScrapeError;
use super::metrics::ComponentMetrics;
use crate::budget::{Budget, Priority, Use};
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
