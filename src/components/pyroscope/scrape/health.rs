//! The component's health, drawn from its targets: a summary of their states as the message
//! ("3 targets: 2 up, 1 down (last error: ...)"), and unhealthy while every target has been
//! down for more than two scrape intervals.
//!
//! "More than two intervals" is counted in scrapes, not measured on a clock: a target is long
//! down after [`LONG_DOWN_FAILURES`] failed scrapes in a row (it was already down some time
//! before the first of them, so three failures span more than two intervals), or at once when
//! it is not scraped at all (over a label limit). The component turns unhealthy when every
//! target it knows the state of is long down, and healthy again as soon as one is up (or none
//! is down any more, e.g. the failing targets went away). A target that has not been scraped
//! yet does not end an unhealthy spell: it is not known to be up.
//!
//! Counting needs every loop's status, so it is redone only when a loop's class changes (up,
//! down, long down), which a loop that stays up or stays down never does; the message is built
//! when someone asks for the health.

use std::sync::{Arc, Mutex};

use super::events::{AllTargetsDown, TargetsUpAgain};
use super::metrics::ComponentMetrics;
use super::scrape_loop::{LoopShared, Status, TargetHealth};
use crate::runtime::Health;
use crate::runtime::event::emit;

/// Failed scrapes in a row after which a target counts as long down.
pub const LONG_DOWN_FAILURES: u32 = 3;

/// Where a loop stands, for the component's health.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Unknown,
    Up,
    Down,
    LongDown,
}

impl Status {
    pub fn class(&self) -> Class {
        match self.health {
            TargetHealth::Unknown => Class::Unknown,
            TargetHealth::Up => Class::Up,
            TargetHealth::Down
                if self.blocked || self.consecutive_failures >= LONG_DOWN_FAILURES =>
            {
                Class::LongDown
            }
            TargetHealth::Down => Class::Down,
        }
    }
}

/// How many loops are in each class.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub up: usize,
    pub down: usize,
    pub long_down: usize,
    pub unknown: usize,
}

impl Counts {
    fn add(&mut self, class: Class) {
        match class {
            Class::Unknown => self.unknown += 1,
            Class::Up => self.up += 1,
            Class::Down => self.down += 1,
            Class::LongDown => self.long_down += 1,
        }
    }

    fn total(&self) -> usize {
        self.up + self.down + self.long_down + self.unknown
    }

    /// "3 targets: 2 up, 1 down", unknown ones only when there are some.
    fn summary(&self) -> String {
        let total = self.total();
        if total == 0 {
            return "no targets".to_string();
        }
        let noun = if total == 1 { "target" } else { "targets" };
        let mut s = format!(
            "{total} {noun}: {} up, {} down",
            self.up,
            self.down + self.long_down
        );
        if self.unknown > 0 {
            s.push_str(&format!(", {} not scraped yet", self.unknown));
        }
        s
    }
}

/// Whether a component with these counts is unhealthy, given whether it was.
pub fn unhealthy(was: bool, c: &Counts) -> bool {
    if was {
        c.up == 0 && c.long_down > 0
    } else {
        c.long_down > 0 && c.up == 0 && c.down == 0 && c.unknown == 0
    }
}

#[derive(Default)]
struct State {
    loops: Vec<Arc<LoopShared>>,
    unhealthy: bool,
}

/// The loops of a component and whether it is unhealthy; shared by the manager (which sets
/// the loops) and the loops (which report class changes).
pub struct Board {
    metrics: ComponentMetrics,
    state: Mutex<State>,
}

impl Board {
    pub fn new(metrics: ComponentMetrics) -> Self {
        Board {
            metrics,
            state: Mutex::new(State::default()),
        }
    }

    /// The loops changed (targets were republished).
    pub fn set_loops(&self, loops: Vec<Arc<LoopShared>>) {
        crate::sync::lock(&self.state).loops = loops;
        self.reassess();
    }

    /// A loop's class changed: counts again, and reports the start or end of an unhealthy
    /// spell. The caller must not hold any loop's status lock.
    pub fn reassess(&self) {
        let mut state = crate::sync::lock(&self.state);
        let statuses: Vec<Status> = state.loops.iter().map(|l| l.status()).collect();
        let counts = count(&statuses);
        let now = unhealthy(state.unhealthy, &counts);
        if now == state.unhealthy {
            return;
        }
        state.unhealthy = now;
        let message = message(&state.loops, &statuses, &counts);
        if now {
            emit(AllTargetsDown {
                metrics: &self.metrics,
                summary: &message,
            });
        } else {
            emit(TargetsUpAgain {
                metrics: &self.metrics,
                summary: &message,
            });
        }
    }

    /// The component's health: the summary, unhealthy during a spell of every target down.
    pub fn health(&self) -> Health {
        let state = crate::sync::lock(&self.state);
        let statuses: Vec<Status> = state.loops.iter().map(|l| l.status()).collect();
        let counts = count(&statuses);
        let message = message(&state.loops, &statuses, &counts);
        if state.unhealthy {
            Health::unhealthy(format!(
                "every target down for more than two scrape intervals: {message}"
            ))
        } else {
            Health::healthy(message)
        }
    }
}

fn count(statuses: &[Status]) -> Counts {
    let mut c = Counts::default();
    for s in statuses {
        c.add(s.class());
    }
    c
}

/// The summary, with the most recent error of a target that is down.
fn message(loops: &[Arc<LoopShared>], statuses: &[Status], counts: &Counts) -> String {
    let mut message = counts.summary();
    let last = loops
        .iter()
        .zip(statuses)
        .filter(|(_, s)| s.health == TargetHealth::Down)
        .filter_map(|(l, s)| Some((s.last_error_at?, l, s.last_error.as_ref()?)))
        .max_by_key(|(at, _, _)| *at);
    if let Some((_, l, e)) = last {
        message.push_str(&format!(
            " (last error: {}: {})",
            l.target().scrape.url,
            e.message
        ));
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counts(up: usize, down: usize, long_down: usize, unknown: usize) -> Counts {
        Counts {
            up,
            down,
            long_down,
            unknown,
        }
    }

    #[test]
    fn unhealthy_only_when_every_known_target_is_long_down() {
        // (was, counts, is)
        let cases = [
            (false, counts(0, 0, 3, 0), true),
            (false, counts(0, 1, 2, 0), false),
            (false, counts(1, 0, 2, 0), false),
            (false, counts(0, 0, 2, 1), false),
            (false, counts(0, 0, 0, 0), false),
            // Once unhealthy, a target not scraped yet or one just gone down changes nothing;
            // one up ends it, and so does having no target down any more.
            (true, counts(0, 0, 2, 1), true),
            (true, counts(0, 1, 2, 0), true),
            (true, counts(1, 0, 2, 0), false),
            (true, counts(0, 0, 0, 2), false),
            (true, counts(0, 0, 0, 0), false),
        ];
        for (was, c, want) in cases {
            assert_eq!(unhealthy(was, &c), want, "{was} {c:?}");
        }
    }

    #[test]
    fn summaries() {
        assert_eq!(counts(0, 0, 0, 0).summary(), "no targets");
        assert_eq!(counts(0, 0, 1, 0).summary(), "1 target: 0 up, 1 down");
        assert_eq!(counts(2, 1, 0, 0).summary(), "3 targets: 2 up, 1 down");
        assert_eq!(
            counts(1, 1, 1, 2).summary(),
            "5 targets: 1 up, 2 down, 2 not scraped yet"
        );
    }
}
