//! Whether the profiles passing through `pyroscope.enrich` are being enriched at all. A
//! misspelt `profiles_match_label`, or match values that never equal a target's (`10.0.0.1`
//! against `10.0.0.1:4040`), would otherwise only show as a counter: every profile forwarded
//! unchanged, nothing logged.
//!
//! Judged per window, not per batch: one batch comes from one producer, and a pipeline where
//! some producers have no target is normal, so only a whole [`WINDOW`] in which profiles
//! arrived and not one was enriched starts the problem. The first enriched profile ends it.
//! Appends only add to atomics and read the clock once per batch; the thread that finds the
//! window over takes its counts with a compare-and-swap, so no lock is taken on the append path.

use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::index::Outcome;

/// How long profiles must arrive without one being enriched before it is reported: a few
/// scrape intervals (Alloy's default is 15 s), and longer than discovery takes to deliver its
/// first targets after a start.
pub(super) const WINDOW: Duration = Duration::from_secs(60);

/// Why no profile was enriched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Problem {
    /// No profile carried `profiles_match_label`.
    NoMatchLabel,
    /// Some carried it, but no target has any of their values.
    NoTarget,
}

impl Problem {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            Problem::NoMatchLabel => "no_match_label",
            Problem::NoTarget => "no_target",
        }
    }

    fn code(p: Option<Problem>) -> u8 {
        match p {
            None => 0,
            Some(Problem::NoMatchLabel) => 1,
            Some(Problem::NoTarget) => 2,
        }
    }

    fn from_code(c: u8) -> Option<Problem> {
        match c {
            1 => Some(Problem::NoMatchLabel),
            2 => Some(Problem::NoTarget),
            _ => None,
        }
    }
}

/// What a batch changed, to be reported once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Change {
    /// A window ended with profiles and none enriched; `profiles` arrived in it.
    Started { problem: Problem, profiles: u64 },
    /// A profile was enriched while `problem` was on.
    Ended(Problem),
}

/// The current window's counts and the problem on, if any.
pub(super) struct Watch {
    epoch: Instant,
    window: u64,
    /// When the current window began, in nanoseconds since `epoch`.
    window_start: AtomicU64,
    seen: AtomicU64,
    with_label: AtomicU64,
    matched: AtomicU64,
    /// [`Problem::code`] of the problem on.
    problem: AtomicU8,
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl Watch {
    pub(super) fn new(now: Instant, window: Duration) -> Watch {
        Watch {
            epoch: now,
            window: nanos(window),
            window_start: AtomicU64::new(0),
            seen: AtomicU64::new(0),
            with_label: AtomicU64::new(0),
            matched: AtomicU64::new(0),
            problem: AtomicU8::new(0),
        }
    }

    /// The problem on, if any.
    pub(super) fn problem(&self) -> Option<Problem> {
        Problem::from_code(self.problem.load(Ordering::Relaxed))
    }

    /// Records one batch's outcome counts (at [`Outcome::index`]) at `now`. `targets_matchable`
    /// says whether the index has any target: without one, "no target has their value" is
    /// the targets' problem, reported on its own (`NoTargetMatchable`), or discovery has not
    /// delivered yet.
    pub(super) fn observe(
        &self,
        now: Instant,
        counts: &[u64; Outcome::ALL.len()],
        targets_matchable: bool,
    ) -> Option<Change> {
        let matched = counts[Outcome::Matched.index()];
        let without_label = counts[Outcome::NoMatchLabel.index()];
        let seen: u64 = counts.iter().sum();
        self.seen.fetch_add(seen, Ordering::Relaxed);
        self.with_label
            .fetch_add(seen - without_label, Ordering::Relaxed);
        self.matched.fetch_add(matched, Ordering::Relaxed);
        if matched > 0 {
            // Checked with a plain load first: while nothing is wrong (the usual case) the
            // append path writes nothing shared here.
            if self.problem.load(Ordering::Relaxed) != 0 {
                let was = self.problem.swap(0, Ordering::Relaxed);
                return Problem::from_code(was).map(Change::Ended);
            }
            return None;
        }
        self.roll(now, targets_matchable)
    }

    /// Ends the window if it is over, and judges it. Only the thread whose compare-and-swap
    /// moves the window start takes its counts; counts another thread adds meanwhile go to the
    /// next window.
    fn roll(&self, now: Instant, targets_matchable: bool) -> Option<Change> {
        let at = nanos(now.saturating_duration_since(self.epoch));
        let start = self.window_start.load(Ordering::Relaxed);
        if at.saturating_sub(start) < self.window
            || self
                .window_start
                .compare_exchange(start, at, Ordering::Relaxed, Ordering::Relaxed)
                .is_err()
        {
            return None;
        }
        let seen = self.seen.swap(0, Ordering::Relaxed);
        let with_label = self.with_label.swap(0, Ordering::Relaxed);
        let matched = self.matched.swap(0, Ordering::Relaxed);
        if seen == 0 || matched > 0 {
            return None;
        }
        let problem = if with_label == 0 {
            Problem::NoMatchLabel
        } else if targets_matchable {
            Problem::NoTarget
        } else {
            return None;
        };
        let was = self
            .problem
            .swap(Problem::code(Some(problem)), Ordering::Relaxed);
        (was != Problem::code(Some(problem))).then_some(Change::Started {
            problem,
            profiles: seen,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch of `matched`, `no_match_label` and `no_target` profiles.
    fn batch(matched: u64, no_label: u64, no_target: u64) -> [u64; 3] {
        let mut c = [0; 3];
        c[Outcome::Matched.index()] = matched;
        c[Outcome::NoMatchLabel.index()] = no_label;
        c[Outcome::NoTarget.index()] = no_target;
        c
    }

    #[test]
    fn a_problem_starts_after_a_window_without_a_match_and_ends_at_the_next_match() {
        use Problem::*;
        let started = |problem, profiles| Some(Change::Started { problem, profiles });
        // (case, batches as (seconds, counts, targets matchable, change expected) ...)
        type Step = (u64, [u64; 3], bool, Option<Change>);
        let cases: Vec<(&str, Vec<Step>)> = vec![
            (
                "a misspelt profiles_match_label: warned once, at the end of the first window",
                vec![
                    (1, batch(0, 5, 0), true, None),
                    (30, batch(0, 5, 0), true, None),
                    (61, batch(0, 5, 0), true, started(NoMatchLabel, 15)),
                    (62, batch(0, 5, 0), true, None),
                    (130, batch(0, 5, 0), true, None),
                    (200, batch(0, 5, 0), true, None),
                ],
            ),
            (
                "fixed: the first enriched profile ends it, once",
                vec![
                    (61, batch(0, 1, 0), true, started(NoMatchLabel, 1)),
                    (70, batch(1, 0, 0), true, Some(Change::Ended(NoMatchLabel))),
                    (71, batch(1, 0, 0), true, None),
                ],
            ),
            (
                "values no target has",
                vec![
                    (10, batch(0, 2, 3), true, None),
                    (61, batch(0, 0, 1), true, started(NoTarget, 6)),
                    (90, batch(2, 0, 0), true, Some(Change::Ended(NoTarget))),
                ],
            ),
            (
                "no target in the index: the targets' own problem, not this one",
                vec![(61, batch(0, 0, 4), false, None)],
            ),
            (
                "some profiles enriched in the window: nothing wrong",
                vec![
                    (1, batch(1, 0, 0), true, None),
                    (30, batch(0, 9, 9), true, None),
                    (61, batch(0, 9, 9), true, None),
                ],
            ),
            (
                "the reason changes: reported again, once",
                vec![
                    (61, batch(0, 1, 0), true, started(NoMatchLabel, 1)),
                    (122, batch(0, 0, 1), true, started(NoTarget, 1)),
                    (183, batch(0, 0, 1), true, None),
                ],
            ),
        ];
        for (case, steps) in cases {
            let t0 = Instant::now();
            let w = Watch::new(t0, Duration::from_secs(60));
            for (i, (secs, counts, matchable, want)) in steps.into_iter().enumerate() {
                let got = w.observe(t0 + Duration::from_secs(secs), &counts, matchable);
                assert_eq!(got, want, "{case}: step {i}");
            }
        }
    }

    #[test]
    fn the_problem_on_is_readable() {
        let t0 = Instant::now();
        let w = Watch::new(t0, Duration::from_secs(60));
        assert_eq!(w.problem(), None);
        w.observe(t0 + Duration::from_secs(61), &batch(0, 1, 0), true);
        assert_eq!(w.problem(), Some(Problem::NoMatchLabel));
        w.observe(t0 + Duration::from_secs(62), &batch(1, 0, 0), true);
        assert_eq!(w.problem(), None);
    }
}
