//! Which watches are failing, since when and why. The component's health, the warning when a
//! watch starts failing and the info line when it is current again all follow from here, so
//! they cannot disagree.
//!
//! A watch fails on any list or watch failure except 410 Gone (an expired resource version is
//! routine: discovery relists at once). It is current again when a list completes or a watch
//! request is answered: from then on its cache follows the server.

use std::time::SystemTime;

use tokio::time::Instant;

use crate::protocols::kubernetes::watcher::{Failure, FailureReason};

/// One watch's failure, from its first failure to its recovery.
#[derive(Clone, Debug)]
pub(super) struct Outage {
    pub since: Instant,
    /// When it started, as health reports times.
    pub started: SystemTime,
    pub failures: u64,
    pub last: Failure,
}

/// Every watch of a session, failing or not.
#[derive(Debug, Default)]
pub(super) struct Outages {
    watches: Vec<Option<Outage>>,
}

impl Outages {
    pub fn new(watches: usize) -> Self {
        Outages {
            watches: vec![None; watches],
        }
    }

    /// Notes a failure of watch `i`; true if it starts an outage. Expired resource versions
    /// are not outages and must not be passed here.
    pub fn failed(&mut self, i: usize, failure: &Failure) -> bool {
        debug_assert!(failure.reason != FailureReason::Expired);
        let Some(slot) = self.watches.get_mut(i) else {
            return false;
        };
        match slot {
            Some(o) => {
                o.failures += 1;
                o.last = failure.clone();
                false
            }
            None => {
                *slot = Some(Outage {
                    since: Instant::now(),
                    started: SystemTime::now(),
                    failures: 1,
                    last: failure.clone(),
                });
                true
            }
        }
    }

    /// Watch `i` is current again: ends and returns its outage, if it had one.
    pub fn recovered(&mut self, i: usize) -> Option<Outage> {
        self.watches.get_mut(i).and_then(Option::take)
    }

    /// How many watches are failing.
    pub fn failing(&self) -> usize {
        self.watches.iter().flatten().count()
    }

    /// The failing watches, by index.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Outage)> {
        self.watches
            .iter()
            .enumerate()
            .filter_map(|(i, o)| o.as_ref().map(|o| (i, o)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timeout() -> Failure {
        Failure::new(
            FailureReason::Timeout,
            "watch request not answered within 1s",
        )
    }

    #[test]
    fn an_outage_starts_once_counts_its_failures_and_ends_at_recovery() {
        let mut o = Outages::new(3);
        assert_eq!(o.failing(), 0);
        assert!(o.failed(1, &timeout()), "the first failure starts it");
        let refused = Failure::new(FailureReason::Watch, "connection refused");
        assert!(!o.failed(1, &refused), "a repeat does not start another");
        assert!(o.failed(2, &timeout()));
        assert_eq!(o.failing(), 2);
        let failing: Vec<(usize, u64)> = o.iter().map(|(i, o)| (i, o.failures)).collect();
        assert_eq!(failing, [(1, 2), (2, 1)]);

        let ended = o.recovered(1).expect("watch 1 was failing");
        assert_eq!(ended.failures, 2);
        assert_eq!(
            ended.last, refused,
            "the last failure is kept for the recovery line"
        );
        assert!(o.recovered(1).is_none(), "recovering twice reports once");
        assert!(
            o.recovered(0).is_none(),
            "a healthy watch has nothing to end"
        );
        assert_eq!(o.failing(), 1);
        assert!(
            o.failed(1, &timeout()),
            "a new failure after recovery is a new outage"
        );
    }

    #[test]
    fn unknown_watches_are_ignored() {
        let mut o = Outages::new(1);
        assert!(!o.failed(5, &timeout()));
        assert!(o.recovered(5).is_none());
        assert_eq!(o.failing(), 0);
    }
}
