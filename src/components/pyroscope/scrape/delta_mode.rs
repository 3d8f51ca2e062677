//! Whether a loop subtracts consecutive scrapes of a cumulative profile type, or forwards what
//! the target sends because the target already sends deltas.
//!
//! Go's memory, mutex and block profiles are cumulative, so the scraper subtracts the previous
//! scrape. An endpoint that serves deltas itself (godeltaprof's `/debug/pprof/delta_heap`,
//! `delta_mutex` and `delta_block`) configured as `profile.memory`, `profile.mutex` or
//! `profile.block` instead of `profile.godeltaprof_*` must not be subtracted again: the
//! difference of two deltas means nothing, and since per-interval values go up and down, the
//! delta engine takes nearly every scrape for a restart and sends nothing at all. (Alloy decides
//! by the profile type alone and sends nothing for such a config, with a debug line.)
//!
//! Two ways to tell:
//!
//! * **The path.** Its last segment is one of godeltaprof's handlers
//!   ([`is_delta_path`]): target building marks the loop so that it never subtracts and its
//!   profiles carry `__delta__="false"`, as godeltaprof types do.
//! * **The values.** A restart makes counters go down once; afterwards they grow again. Counters
//!   that go down on [`DECREASES_TO_DETECT`] consecutive scrapes are not cumulative, and the loop
//!   forwards every scrape as received from then on. It keeps computing deltas to watch the
//!   values: after [`GROWTHS_TO_REVERT`] consecutive scrapes in which something grew and no
//!   stack went down, the endpoint is cumulative after all (a target that restarted on several
//!   scrapes in a row, such as a crash loop, and then ran steadily), and deltas are sent again.
//!   A per-interval endpoint practically never grows on every stack that often, and an idle one
//!   (nothing grew) does not count, so the mode does not flap on quiet targets.
//!
//! Each switch is reported (`events::DeltaModeChanged`): a loop's first as a warning, telling
//! the user what was done, later ones as info lines.

use bytes::Bytes;

use super::process::Processed;
use crate::pprof::ResetReason;

/// Consecutive scrapes whose counters went down before a loop takes its endpoint for one that
/// serves deltas. The first is indistinguishable from a restart (and reported as one).
pub const DECREASES_TO_DETECT: u32 = 2;
/// Consecutive scrapes that grew without any stack going down before a loop that forwards as
/// received (found by the values) subtracts again.
pub const GROWTHS_TO_REVERT: u32 = 3;

/// godeltaprof's HTTP handlers (`godeltaprof/http/pprof`), by the last segment of their path.
const DELTA_HANDLERS: [&str; 3] = ["delta_heap", "delta_mutex", "delta_block"];

/// Whether `path` (a URL path, without query) is a godeltaprof handler's.
pub fn is_delta_path(path: &str) -> bool {
    let last = path.trim_end_matches('/').rsplit('/').next().unwrap_or("");
    DELTA_HANDLERS.contains(&last)
}

/// What a loop does with what it scrapes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Subtracts the previous scrape (or, for types that are not cumulative, forwards as
    /// received anyway).
    #[default]
    Subtract,
    /// The target serves deltas: every scrape is forwarded as received.
    AsReceived(Cause),
}

impl Mode {
    /// The `mode` label of `pyroscope_scrape_delta_mode_changes_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Subtract => "subtracted",
            Mode::AsReceived(_) => "as_received",
        }
    }
}

/// How a loop found out that its target serves deltas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cause {
    Path,
    Values,
}

impl Cause {
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Path => "path",
            Cause::Values => "values",
        }
    }
}

/// A switch of mode: to `mode`, for `cause`; `first` is whether it is the loop's first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Change {
    pub mode: Mode,
    pub cause: Cause,
    pub first: bool,
}

/// What to do after one scrape.
#[derive(Debug, PartialEq, Eq)]
pub struct Step {
    /// What to forward, if anything.
    pub send: Option<Bytes>,
    /// What happened, for the debug info's `last_outcome`.
    pub outcome: &'static str,
    /// A baseline that started over because the target restarted or changed.
    pub restart: Option<ResetReason>,
    pub change: Option<Change>,
}

pub const FORWARDED: &str = "forwarded";
pub const FORWARDED_AS_RECEIVED: &str =
    "forwarded as received: the target serves deltas, which are not subtracted again";
pub const BASELINE: &str =
    "baseline: first scrape of a cumulative profile, kept to compute the next delta (not sent)";
pub const RESET: &str = "baseline reset: the target restarted or changed; not sent";

/// One loop's mode and the streaks that change it.
#[derive(Debug, Default)]
pub struct DeltaMode {
    mode: Mode,
    /// Consecutive scrapes whose counters went down (while subtracting).
    decreasing: u32,
    /// Consecutive scrapes that grew without going down (while forwarding as received).
    growing: u32,
    /// Whether a change was reported already: only the first is a warning.
    changed: bool,
}

impl DeltaMode {
    pub fn mode(&self) -> Mode {
        self.mode
    }

    fn switch(&mut self, mode: Mode, cause: Cause) -> Change {
        self.mode = mode;
        self.decreasing = 0;
        self.growing = 0;
        let first = !self.changed;
        self.changed = true;
        Change { mode, cause, first }
    }

    /// Decides what to forward from what the processor made of a scrape (`processed`) and the
    /// body as received. `delta_path`: the target's path is a godeltaprof handler's (such a loop
    /// does not subtract, so `processed` is the checked body).
    pub fn step(&mut self, processed: Processed, body: Bytes, delta_path: bool) -> Step {
        let mut change = None;
        if delta_path && self.mode != Mode::AsReceived(Cause::Path) {
            change = Some(self.switch(Mode::AsReceived(Cause::Path), Cause::Path));
        }
        let mut step = match self.mode {
            Mode::Subtract => self.subtracting(processed, body),
            Mode::AsReceived(Cause::Path) => as_received(body),
            Mode::AsReceived(Cause::Values) => self.watching(processed, body),
        };
        if change.is_some() {
            step.change = change;
        }
        step
    }

    fn subtracting(&mut self, processed: Processed, body: Bytes) -> Step {
        match processed {
            // Checked as received: a type that is not cumulative.
            Processed::Send(b) => send(b, FORWARDED),
            Processed::Delta { profile, .. } => {
                self.decreasing = 0;
                send(profile, FORWARDED)
            }
            Processed::Baseline => {
                self.decreasing = 0;
                nothing(BASELINE, None)
            }
            Processed::Reset(reason @ ResetReason::CountersDecreased { .. }) => {
                self.decreasing += 1;
                if self.decreasing < DECREASES_TO_DETECT {
                    return nothing(RESET, Some(reason));
                }
                let change = self.switch(Mode::AsReceived(Cause::Values), Cause::Values);
                Step {
                    change: Some(change),
                    ..as_received(body)
                }
            }
            Processed::Reset(reason) => {
                self.decreasing = 0;
                nothing(RESET, Some(reason))
            }
        }
    }

    /// Forwarding as received because of the values: every scrape is sent as received, and
    /// the deltas computed on the side say whether the counters became cumulative again.
    fn watching(&mut self, processed: Processed, body: Bytes) -> Step {
        match processed {
            Processed::Delta { profile, samples } if samples > 0 => {
                self.growing += 1;
                if self.growing < GROWTHS_TO_REVERT {
                    return as_received(body);
                }
                let change = self.switch(Mode::Subtract, Cause::Values);
                Step {
                    change: Some(change),
                    ..send(profile, FORWARDED)
                }
            }
            // Nothing grew (an idle target): says nothing either way.
            Processed::Delta { .. } | Processed::Send(_) | Processed::Baseline => as_received(body),
            Processed::Reset(ResetReason::CountersDecreased { .. }) => {
                self.growing = 0;
                as_received(body)
            }
            // Another binary, another period...: a real restart, reported; the body is a delta
            // all the same.
            Processed::Reset(reason) => {
                self.growing = 0;
                Step {
                    restart: Some(reason),
                    ..as_received(body)
                }
            }
        }
    }
}

fn send(profile: Bytes, outcome: &'static str) -> Step {
    Step {
        send: Some(profile),
        outcome,
        restart: None,
        change: None,
    }
}

fn as_received(body: Bytes) -> Step {
    send(body, FORWARDED_AS_RECEIVED)
}

fn nothing(outcome: &'static str, restart: Option<ResetReason>) -> Step {
    Step {
        send: None,
        outcome,
        restart,
        change: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(samples: usize) -> Processed {
        Processed::Delta {
            profile: Bytes::from_static(b"delta"),
            samples,
        }
    }

    fn decreased() -> Processed {
        Processed::Reset(ResetReason::CountersDecreased { stacks: 1 })
    }

    const BODY: Bytes = Bytes::from_static(b"body");

    fn sent(step: &Step) -> Option<&[u8]> {
        step.send.as_deref()
    }

    #[test]
    fn godeltaprof_paths_are_recognised() {
        for (path, want) in [
            ("/debug/pprof/delta_heap", true),
            ("/debug/pprof/delta_mutex", true),
            ("/prefix/debug/pprof/delta_block/", true),
            ("delta_heap", true),
            ("/debug/pprof/heap", false),
            ("/debug/pprof/allocs", false),
            ("/debug/pprof/delta_heapx", false),
            ("/delta_heap/other", false),
            ("", false),
        ] {
            assert_eq!(is_delta_path(path), want, "{path}");
        }
    }

    #[test]
    fn a_delta_path_is_forwarded_as_received_and_reported_once() {
        let mut m = DeltaMode::default();
        let s = m.step(Processed::Send(BODY), BODY, true);
        assert_eq!(sent(&s), Some(&b"body"[..]));
        assert_eq!(s.outcome, FORWARDED_AS_RECEIVED);
        assert_eq!(
            s.change,
            Some(Change {
                mode: Mode::AsReceived(Cause::Path),
                cause: Cause::Path,
                first: true
            })
        );
        let s = m.step(Processed::Send(BODY), BODY, true);
        assert_eq!((sent(&s), s.change), (Some(&b"body"[..]), None));
    }

    #[test]
    fn one_restart_is_a_restart_and_deltas_follow() {
        let mut m = DeltaMode::default();
        assert_eq!(m.step(Processed::Baseline, BODY, false).send, None);
        assert_eq!(sent(&m.step(delta(3), BODY, false)), Some(&b"delta"[..]));
        let s = m.step(decreased(), BODY, false);
        assert_eq!((s.send.as_ref(), s.change), (None, None));
        assert!(matches!(
            s.restart,
            Some(ResetReason::CountersDecreased { .. })
        ));
        assert_eq!(sent(&m.step(delta(3), BODY, false)), Some(&b"delta"[..]));
        // Restarts far apart never add up to a delta endpoint.
        for _ in 0..5 {
            assert!(m.step(decreased(), BODY, false).restart.is_some());
            m.step(delta(1), BODY, false);
        }
        assert_eq!(m.mode(), Mode::Subtract);
        // Another kind of restart does not count towards one either.
        assert!(m.step(decreased(), BODY, false).restart.is_some());
        let s = m.step(Processed::Reset(ResetReason::BuildIdChanged), BODY, false);
        assert_eq!(
            (s.restart, s.change),
            (Some(ResetReason::BuildIdChanged), None)
        );
        assert!(m.step(decreased(), BODY, false).change.is_none());
    }

    #[test]
    fn counters_that_keep_going_down_are_forwarded_as_received_until_they_grow_again() {
        let mut m = DeltaMode::default();
        m.step(Processed::Baseline, BODY, false);
        assert!(m.step(decreased(), BODY, false).send.is_none());
        let s = m.step(decreased(), BODY, false);
        assert_eq!(sent(&s), Some(&b"body"[..]), "the detecting scrape is sent");
        assert_eq!(s.restart, None);
        assert_eq!(
            s.change,
            Some(Change {
                mode: Mode::AsReceived(Cause::Values),
                cause: Cause::Values,
                first: true
            })
        );
        // Ups and downs, idle scrapes: still deltas, sent as received, no more reports.
        for p in [
            delta(2),
            decreased(),
            delta(0),
            delta(0),
            delta(4),
            delta(1),
        ] {
            let s = m.step(p, BODY, false);
            assert_eq!((sent(&s), s.change), (Some(&b"body"[..]), None));
        }
        // Growing three times in a row: cumulative after all; the third sends its delta.
        let s = m.step(delta(5), BODY, false);
        assert_eq!(sent(&s), Some(&b"delta"[..]));
        assert_eq!(
            s.change,
            Some(Change {
                mode: Mode::Subtract,
                cause: Cause::Values,
                first: false
            })
        );
        assert_eq!(m.mode(), Mode::Subtract);
        // Found again later: reported, but no longer as the first change.
        m.step(decreased(), BODY, false);
        let s = m.step(decreased(), BODY, false);
        assert!(s.change.is_some_and(|c| !c.first));
    }
}
