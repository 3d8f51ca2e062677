//! Requests refused for want of memory, as the components that receive requests report it
//! (`pyroscope.receive_http`, `otelcol.receiver.otlp`): every refusal is counted as shed
//! (`use="receive"`, normal priority), a warning says when refusing starts and an info line when
//! a request is accepted again, so the state a user must act on (a budget too small for the
//! load) is loud once, not once per request.

use std::sync::atomic::{AtomicBool, Ordering};

use super::{Budget, Priority, Use};
use crate::runtime::event::{InternalEvent, emit};

/// One component's refusing state and its two log lines.
#[derive(Debug)]
pub struct Refusals {
    shedding: AtomicBool,
    /// The warning when refusing starts, and the info line when it ends.
    started: &'static str,
    ended: &'static str,
}

impl Refusals {
    pub const fn new(started: &'static str, ended: &'static str) -> Self {
        Refusals {
            shedding: AtomicBool::new(false),
            started,
            ended,
        }
    }

    /// A request needing `need` bytes was refused.
    pub fn refused(&self, budget: &Budget, component_id: &str, need: u64) {
        emit(RequestRefused {
            refusals: self,
            budget,
            component_id,
            need,
        });
    }

    /// A request was accepted: ends a run of refusals.
    pub fn accepted(&self, component_id: &str) {
        emit(RefusalsEnded {
            refusals: self,
            component_id,
        });
    }

    /// Whether requests are being refused now.
    pub fn refusing(&self) -> bool {
        self.shedding.load(Ordering::Relaxed)
    }
}

struct RequestRefused<'a> {
    refusals: &'a Refusals,
    budget: &'a Budget,
    component_id: &'a str,
    need: u64,
}

impl InternalEvent for RequestRefused<'_> {
    fn emit(self) {
        let b = self.budget;
        b.count_shed(Use::Receive, Priority::Normal);
        if !self.refusals.shedding.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                component_id = %self.component_id,
                need = self.need,
                used = b.used(),
                limit = b.limit(),
                "{}",
                self.refusals.started
            );
        }
    }
}

struct RefusalsEnded<'a> {
    refusals: &'a Refusals,
    component_id: &'a str,
}

impl InternalEvent for RefusalsEnded<'_> {
    fn emit(self) {
        if self.refusals.shedding.swap(false, Ordering::Relaxed) {
            tracing::info!(component_id = %self.component_id, "{}", self.refusals.ended);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_counted_and_the_state_changes_once_each_way() {
        let budget = Budget::new(1 << 20);
        let r = Refusals::new("refusing", "accepting");
        assert!(!r.refusing());
        r.accepted("c");
        assert!(
            !r.refusing(),
            "an acceptance without refusals changes nothing"
        );
        r.refused(&budget, "c", 10);
        r.refused(&budget, "c", 10);
        assert!(r.refusing());
        r.accepted("c");
        assert!(!r.refusing());
    }
}
