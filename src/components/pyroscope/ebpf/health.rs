//! Whether `pyroscope.ebpf` does its job, judged at the end of every whole collection interval
//! from what that interval showed, with a reason an operator can act on.
//!
//! Two rules make the component unhealthy (both are in docs/EBPF.md, "Health"):
//!
//! * **Nothing could be symbolized.** Over at least [`MIN_USER_FRAMES`] user-space frames,
//!   fewer than [`MIN_SYMBOLIZED_PERCENT`] % have a name. Names need ptrace read access to the
//!   process (its binaries are opened through `/proc/<pid>/root/`), which BPF sampling does
//!   not: without CAP_SYS_PTRACE another user's process is sampled but every one of its user
//!   frames is `[unknown]`. Some `[unknown]` frames are normal (JIT code, garbage
//!   return addresses of code without frame pointers), so only a near-total failure counts;
//!   the share is in `pyroscope_ebpf_user_frames_total` either way.
//! * **No target could be sampled.** The component has targets and not one sample of them
//!   arrived in a whole interval, *and* the sampler could not have sampled any of them: every
//!   followed process has exited, or (perf fallback) is one this user may not sample, or no
//!   running process matches any target. An idle process legitimately yields no CPU samples,
//!   so a quiet interval alone is healthy. With `targets_only = false` every process is a
//!   target, and a host without a single sample in an interval has a sampler that delivers
//!   nothing.
//!
//! Intervals cut short (a sampler restart, shutdown) are not judged.

use std::io;

use serde::Serialize;

/// Fewer user frames than this in an interval say too little about symbolization.
pub const MIN_USER_FRAMES: u64 = 100;
/// Below this share (percent) of symbolized user frames the profiles are unreadable.
pub const MIN_SYMBOLIZED_PERCENT: u64 = 5;
/// Pids named in a message or the debug info; the counts cover the rest.
const EXAMPLES: usize = 5;

/// Whether this process has ptrace read access to another process: what symbolizing it (its
/// binaries are opened through `/proc/<pid>/root/`), and sampling it with `perf_event_open`,
/// take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Readable,
    /// The kernel refused ptrace read access (another user's process, or one with capabilities
    /// this process lacks, without CAP_SYS_PTRACE).
    NotPermitted,
    Exited,
}

/// Reads the `/proc/<pid>/root` link, which the kernel allows only with ptrace read access.
/// Not `/proc/<pid>/maps`: CAP_PERFMON alone lets that be read, but not the process's files,
/// so the names stay out of reach.
pub fn access(pid: u32) -> Access {
    match std::fs::read_link(format!("/proc/{pid}/root")) {
        Ok(_) => Access::Readable,
        Err(e) => classify(&e),
    }
}

fn classify(e: &io::Error) -> Access {
    match e.raw_os_error() {
        Some(libc::EACCES | libc::EPERM) => Access::NotPermitted,
        Some(libc::ENOENT | libc::ESRCH) => Access::Exited,
        // Anything else (EMFILE...) says nothing about the process: do not blame it.
        _ => Access::Readable,
    }
}

/// What the last whole interval showed, for the debug info and the health.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct IntervalReport {
    /// Samples of targets.
    pub samples: u64,
    /// Processes with samples.
    pub processes: usize,
    /// User-space frames over all samples (a frame counts once per sample it is in); the vDSO,
    /// which is read from our own process, is left out.
    pub user_frames: u64,
    pub user_frames_unknown: u64,
    /// Processes the sampler was told to follow (0 when it samples every process).
    pub followed: usize,
    /// Sampled or followed processes this process has no ptrace read access to.
    pub not_permitted: usize,
    /// Followed processes that no longer exist.
    pub exited: usize,
    /// Followed processes the sampler reported it could not follow (perf fallback).
    pub refused: usize,
    /// A few of the processes counted in `not_permitted`.
    pub not_permitted_pids: Vec<u32>,
    /// Followed processes that could be sampled: exist and, for the perf fallback, may be
    /// read and were not refused.
    #[serde(skip)]
    pub sampleable: usize,
}

impl IntervalReport {
    /// Records the access check of a sampled or followed process.
    pub fn note_not_permitted(&mut self, pid: u32) {
        self.not_permitted += 1;
        if self.not_permitted_pids.len() < EXAMPLES {
            self.not_permitted_pids.push(pid);
        }
    }
}

/// What the verdict depends on besides the interval.
#[derive(Clone, Debug, Default)]
pub struct Context {
    /// Targets that identify processes.
    pub targets: usize,
    /// `targets_only = false`: every process is profiled.
    pub profiles_everything: bool,
    /// The perf_event_open fallback samples (it needs the access BPF does not).
    pub perf: bool,
    /// Whether perf events of other users' processes are allowed (CAP_PERFMON).
    pub perfmon: bool,
    /// Capabilities symbolization needs that are missing (CAP_SYS_PTRACE).
    pub missing_for_symbols: Vec<&'static str>,
}

/// Which rule failed, so that a change of numbers is not logged as a new failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trouble {
    Symbols,
    NoSamples,
}

impl Trouble {
    pub fn as_str(self) -> &'static str {
        match self {
            Trouble::Symbols => "symbolization",
            Trouble::NoSamples => "no_samples",
        }
    }
}

/// The verdict on a whole interval: `None` when healthy, else which rule failed and why.
pub fn assess(r: &IntervalReport, cx: &Context) -> Option<(Trouble, String)> {
    if r.samples == 0 {
        return no_samples(r, cx).map(|m| (Trouble::NoSamples, m));
    }
    unsymbolized(r, cx).map(|m| (Trouble::Symbols, m))
}

fn no_samples(r: &IntervalReport, cx: &Context) -> Option<String> {
    if cx.profiles_everything {
        return Some(
            "no samples of any process in the last collection interval: the sampler delivers \
             nothing"
                .to_string(),
        );
    }
    if cx.targets == 0 {
        return None;
    }
    if r.followed == 0 {
        return Some(format!(
            "no samples in the last collection interval: none of the {} targets matches a \
             process running on this host (run in the host PID namespace)",
            cx.targets
        ));
    }
    if r.sampleable > 0 {
        // At least one target process could have been sampled: it was idle.
        return None;
    }
    let mut why = Vec::new();
    if cx.perf && r.not_permitted > 0 {
        let hint = if cx.perfmon {
            "this user may not read them"
        } else {
            "without CAP_PERFMON perf_event_open samples only processes of this user; BPF \
             sampling needs CAP_BPF and CAP_PERFMON"
        };
        why.push(format!(
            "{} not permitted ({hint}; pids {})",
            r.not_permitted,
            list(&r.not_permitted_pids)
        ));
    }
    if r.refused > 0 {
        why.push(format!(
            "{} refused by perf_event_open (see problems)",
            r.refused
        ));
    }
    if r.exited > 0 {
        why.push(format!(
            "{} exited (discovery drops them at its next refresh)",
            r.exited
        ));
    }
    Some(format!(
        "no samples in the last collection interval: none of the {} target processes could be \
         sampled: {}",
        r.followed,
        why.join(", ")
    ))
}

fn unsymbolized(r: &IntervalReport, cx: &Context) -> Option<String> {
    if r.user_frames < MIN_USER_FRAMES {
        return None;
    }
    let symbolized = r.user_frames.saturating_sub(r.user_frames_unknown);
    if symbolized.saturating_mul(100) >= r.user_frames.saturating_mul(MIN_SYMBOLIZED_PERCENT) {
        return None;
    }
    let percent = r.user_frames_unknown.saturating_mul(1000) / r.user_frames.max(1);
    let mut message = format!(
        "{} of the {} user frames sampled in the last collection interval ({}.{}%) are \
         [unknown]",
        r.user_frames_unknown,
        r.user_frames,
        percent / 10,
        percent % 10
    );
    if r.not_permitted > 0 {
        message.push_str(&format!(
            ": this process may not open the files (/proc/<pid>/root) of {} of the {} \
             processes sampled (pids {})",
            r.not_permitted,
            r.processes,
            list(&r.not_permitted_pids)
        ));
        if cx.missing_for_symbols.is_empty() {
            message.push_str(
                "; give it ptrace read access to them (same user, or CAP_SYS_PTRACE, and a \
                 kernel.yama.ptrace_scope that allows it)",
            );
        } else {
            message.push_str(&format!(
                "; reading another user's process needs {}, which is missing",
                cx.missing_for_symbols.join(" and ")
            ));
        }
    } else {
        message.push_str(
            ": their binaries may have no symbols, or live in a mount namespace that \
             /proc/<pid>/root does not reach",
        );
    }
    Some(message)
}

fn list(pids: &[u32]) -> String {
    pids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Pids the sampler's problems are about. The perf fallback reports a process it cannot follow
/// as `pid <pid>: <reason>` (perf/mod.rs `report`); other problems are not about one process.
pub fn problem_pids(problems: &[String]) -> impl Iterator<Item = u32> + '_ {
    problems.iter().filter_map(|p| {
        let rest = p.strip_prefix("pid ")?;
        rest.split_once(':')?.0.parse().ok()
    })
}

/// How long ago process `pid` started, from `/proc/<pid>/stat` and `/proc/uptime`; `None` when
/// it is gone or the files do not parse.
pub fn process_age(pid: u32) -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let uptime = std::fs::read_to_string("/proc/uptime").ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    age_from(&stat, &uptime, u64::try_from(ticks).ok()?)
}

fn age_from(stat: &str, uptime: &str, ticks_per_second: u64) -> Option<std::time::Duration> {
    // The command name (field 2) may hold spaces and parentheses: fields resume after the
    // last ')'. starttime is field 22, the 20th after it.
    let (_, rest) = stat.rsplit_once(')')?;
    let start_ticks: u64 = rest.split_whitespace().nth(19)?.parse().ok()?;
    let up: f64 = uptime.split_whitespace().next()?.parse().ok()?;
    if ticks_per_second == 0 || !up.is_finite() || up < 0.0 {
        return None;
    }
    let started = std::time::Duration::from_secs_f64(start_ticks as f64 / ticks_per_second as f64);
    Some(std::time::Duration::from_secs_f64(up).saturating_sub(started))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn report() -> IntervalReport {
        IntervalReport {
            samples: 1000,
            processes: 1,
            user_frames: 8000,
            user_frames_unknown: 100,
            followed: 1,
            sampleable: 1,
            ..IntervalReport::default()
        }
    }

    fn cx() -> Context {
        Context {
            targets: 1,
            ..Context::default()
        }
    }

    #[test]
    fn a_symbolized_interval_is_healthy() {
        assert_eq!(assess(&report(), &cx()), None);
        // A few frames say nothing either way.
        let r = IntervalReport {
            user_frames: 40,
            user_frames_unknown: 40,
            ..report()
        };
        assert_eq!(assess(&r, &cx()), None);
    }

    #[test]
    fn unreadable_processes_without_cap_sys_ptrace_are_named_as_the_cause() {
        let mut r = IntervalReport {
            user_frames: 7900,
            user_frames_unknown: 7800,
            ..report()
        };
        r.note_not_permitted(4242);
        let c = Context {
            missing_for_symbols: vec!["CAP_SYS_PTRACE"],
            ..cx()
        };
        let (trouble, message) = assess(&r, &c).expect("unhealthy");
        assert_eq!(trouble, Trouble::Symbols);
        assert!(
            message.contains("7800 of the 7900 user frames"),
            "{message}"
        );
        assert!(message.contains("(98.7%)"), "{message}");
        assert!(message.contains("pids 4242"), "{message}");
        assert!(
            message.contains("needs CAP_SYS_PTRACE, which is missing"),
            "{message}"
        );

        // With the capability, the hint is about access, not a capability to add.
        let (_, message) = assess(&r, &cx()).expect("unhealthy");
        assert!(!message.contains("missing"), "{message}");

        // Readable but nameless: the binaries are the suspects.
        let r = IntervalReport {
            user_frames: 7900,
            user_frames_unknown: 7800,
            ..report()
        };
        let (_, message) = assess(&r, &cx()).expect("unhealthy");
        assert!(message.contains("no symbols"), "{message}");
    }

    #[test]
    fn no_samples_is_healthy_only_while_some_target_could_be_sampled() {
        let quiet = IntervalReport {
            samples: 0,
            processes: 0,
            user_frames: 0,
            user_frames_unknown: 0,
            ..report()
        };
        // Idle targets.
        assert_eq!(assess(&quiet, &cx()), None);
        // No targets at all: nothing to sample is not a failure.
        let none = Context { targets: 0, ..cx() };
        assert_eq!(
            assess(
                &IntervalReport {
                    followed: 0,
                    sampleable: 0,
                    ..quiet.clone()
                },
                &none
            ),
            None
        );

        // The perf fallback may not sample another user's process.
        let mut denied = IntervalReport {
            sampleable: 0,
            ..quiet.clone()
        };
        denied.note_not_permitted(1);
        let perf = Context { perf: true, ..cx() };
        let (trouble, message) = assess(&denied, &perf).expect("unhealthy");
        assert_eq!(trouble, Trouble::NoSamples);
        assert!(message.contains("1 not permitted"), "{message}");
        assert!(message.contains("CAP_PERFMON"), "{message}");

        // Every target process exited.
        let gone = IntervalReport {
            sampleable: 0,
            exited: 1,
            ..quiet.clone()
        };
        let (_, message) = assess(&gone, &cx()).expect("unhealthy");
        assert!(message.contains("1 exited"), "{message}");

        // Targets that match no process.
        let unmatched = IntervalReport {
            followed: 0,
            sampleable: 0,
            ..quiet.clone()
        };
        let (_, message) = assess(&unmatched, &cx()).expect("unhealthy");
        assert!(
            message.contains("none of the 1 targets matches"),
            "{message}"
        );

        // Every process is a target and not one was sampled.
        let host = Context {
            profiles_everything: true,
            ..cx()
        };
        let (_, message) = assess(&unmatched, &host).expect("unhealthy");
        assert!(message.contains("no samples of any process"), "{message}");
    }

    #[test]
    fn the_perf_fallbacks_per_process_problems_name_their_pids() {
        let problems = vec![
            "kernel frames are not permitted".to_string(),
            "pid 12: perf_event_open failed: Permission denied".to_string(),
            "pid x: nonsense".to_string(),
        ];
        assert_eq!(problem_pids(&problems).collect::<Vec<_>>(), [12]);
    }

    #[test]
    fn access_errors_map_to_what_they_say_about_the_process() {
        let e = |errno| io::Error::from_raw_os_error(errno);
        assert_eq!(classify(&e(libc::EACCES)), Access::NotPermitted);
        assert_eq!(classify(&e(libc::ENOENT)), Access::Exited);
        assert_eq!(classify(&e(libc::EMFILE)), Access::Readable);
        assert_eq!(access(std::process::id()), Access::Readable);
        assert_eq!(access(u32::MAX), Access::Exited);
    }

    #[test]
    fn process_age_from_its_start_time() {
        // comm with a space and a parenthesis; starttime (field 22) = 1000 ticks = 10 s.
        let stat = "42 (a b) c) S 1 42 42 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 1000 0 0";
        assert_eq!(
            age_from(stat, "15.50 20.00\n", 100),
            Some(Duration::from_millis(5500))
        );
        assert_eq!(age_from("garbage", "15.50 20.00", 100), None);
        assert!(process_age(std::process::id()).is_some());
        assert_eq!(process_age(u32::MAX), None);
    }
}
