//! Typed internal events, as in Vector: something that happened inside a component and that an
//! operator may need to see is a value of its own type, and emitting it writes its log line and
//! updates its metrics in one place. A failure can then never be logged without being counted,
//! or counted without being logged, and the wording and level live next to the counter.

/// An event a component emits: [`InternalEvent::emit`] logs it and counts it.
pub trait InternalEvent {
    fn emit(self);
}

/// Emits `event`; the spelling call sites use (`emit(ProfileRejected { .. })`).
pub fn emit(event: impl InternalEvent) {
    event.emit();
}

/// A rate limit for the log line of an event that can happen on every profile (its counting is
/// never limited): the first occurrence is logged, then at most one per `every`, each saying
/// how many occurrences went unlogged since the previous line.
pub struct LogThrottle {
    every: std::time::Duration,
    /// When a line was last let through, and the occurrences held back since.
    state: std::sync::Mutex<Option<(std::time::Instant, u64)>>,
}

impl LogThrottle {
    pub const fn new(every: std::time::Duration) -> LogThrottle {
        LogThrottle {
            every,
            state: std::sync::Mutex::new(None),
        }
    }

    /// Records an occurrence at `now`: `Some(unlogged)` when it is to be logged, with the
    /// number held back since the previous line; `None` when it is held back.
    pub fn admit(&self, now: std::time::Instant) -> Option<u64> {
        let mut state = crate::sync::lock(&self.state);
        match *state {
            Some((last, ref mut held)) if now.saturating_duration_since(last) < self.every => {
                *held += 1;
                None
            }
            Some((_, held)) => {
                *state = Some((now, 0));
                Some(held)
            }
            None => {
                *state = Some((now, 0));
                Some(0)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::LogThrottle;

    #[test]
    fn throttle_lets_one_line_through_per_interval_and_counts_the_rest() {
        let t = LogThrottle::new(Duration::from_secs(60));
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let got: Vec<Option<u64>> = [0, 1, 59, 60, 61, 200, 200]
            .into_iter()
            .map(|s| t.admit(at(s)))
            .collect();
        assert_eq!(
            got,
            [Some(0), None, None, Some(2), None, Some(1), None],
            "first logged, then one per minute with the count held back"
        );
        // A clock read earlier than the last line (another thread's `now`) is just held back.
        assert_eq!(t.admit(at(150)), None);
    }
}
