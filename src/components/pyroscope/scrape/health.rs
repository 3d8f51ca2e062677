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
//! The board keeps each loop's class and the counts, so a loop that changes class (which one
//! that stays up or stays down never does) costs one lookup; the class is read from the loop's
//! status under the board's lock, so a late report can never record a stale one. The message
//! (with the most recent error) is built only when someone asks for the health.

use std::collections::HashMap;
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

impl Counts {
    fn remove(&mut self, class: Class) {
        let n = match class {
            Class::Unknown => &mut self.unknown,
            Class::Up => &mut self.up,
            Class::Down => &mut self.down,
            Class::LongDown => &mut self.long_down,
        };
        *n = n.saturating_sub(1);
    }
}

/// A loop as the board knows it: kept (so its address, the key, is not reused while listed)
/// with the class last read from it.
struct Listed {
    shared: Arc<LoopShared>,
    class: Class,
}

#[derive(Default)]
struct State {
    /// By the loop's address.
    loops: HashMap<usize, Listed>,
    counts: Counts,
    unhealthy: bool,
}

fn key(shared: &LoopShared) -> usize {
    std::ptr::from_ref(shared) as usize
}

/// The loops of a component, their classes and whether the component is unhealthy; shared by
/// the manager (which lists the loops) and the loops (which report class changes).
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

    /// The loops changed (targets were republished, some blocked or unblocked).
    pub fn set_loops(&self, loops: Vec<Arc<LoopShared>>) {
        let mut state = crate::sync::lock(&self.state);
        let mut counts = Counts::default();
        state.loops = loops
            .into_iter()
            .map(|shared| {
                let class = shared.class();
                counts.add(class);
                (key(&shared), Listed { shared, class })
            })
            .collect();
        state.counts = counts;
        self.judge(&mut state);
    }

    /// A loop's class changed. The caller must not hold that loop's status lock. A loop no
    /// longer listed (stopped meanwhile) is ignored.
    pub fn report(&self, shared: &LoopShared) {
        let mut state = crate::sync::lock(&self.state);
        let Some(listed) = state.loops.get_mut(&key(shared)) else {
            return;
        };
        let (old, new) = (listed.class, shared.class());
        if old == new {
            return;
        }
        listed.class = new;
        state.counts.remove(old);
        state.counts.add(new);
        self.judge(&mut state);
    }

    /// Reports the start or end of an unhealthy spell.
    fn judge(&self, state: &mut State) {
        let now = unhealthy(state.unhealthy, &state.counts);
        if now == state.unhealthy {
            return;
        }
        state.unhealthy = now;
        let summary = message(state);
        if now {
            emit(AllTargetsDown {
                metrics: &self.metrics,
                summary: &summary,
            });
        } else {
            emit(TargetsUpAgain {
                metrics: &self.metrics,
                summary: &summary,
            });
        }
    }

    /// The component's health: the summary, unhealthy during a spell of every target down.
    pub fn health(&self) -> Health {
        let state = crate::sync::lock(&self.state);
        let message = message(&state);
        if state.unhealthy {
            Health::unhealthy(format!(
                "every target down for more than two scrape intervals: {message}"
            ))
        } else {
            Health::healthy(message)
        }
    }
}

/// The summary, with the most recent error of a target that is down.
fn message(state: &State) -> String {
    let mut message = state.counts.summary();
    let last = state
        .loops
        .values()
        .filter_map(|l| {
            let s = l.shared.status();
            let error = s.last_error.filter(|_| s.health == TargetHealth::Down)?;
            Some((s.last_error_at?, error, &l.shared))
        })
        .max_by_key(|(at, _, _)| *at);
    if let Some((_, error, shared)) = last {
        message.push_str(&format!(
            " (last error: {}: {})",
            shared.target().scrape.url,
            error.message
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
