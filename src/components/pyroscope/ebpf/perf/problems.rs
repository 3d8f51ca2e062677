//! The sampler's problems for the component's debug info: bounded, one per process.

use std::collections::VecDeque;

/// Enough to show what is wrong without letting a host full of unreachable processes grow the
/// list without end.
const MAX_PROCESS_PROBLEMS: usize = 32;

#[derive(Debug, Default)]
pub(super) struct Problems {
    /// Set once: kernel frames were asked for and refused.
    kernel_frames: Option<String>,
    /// Oldest first, at most one per pid.
    processes: VecDeque<(u32, String)>,
}

impl Problems {
    /// Records that kernel frames could not be had. `false` if that was already known, so the
    /// caller logs it only once.
    pub(super) fn record_kernel_frames(&mut self, message: String) -> bool {
        if self.kernel_frames.is_some() {
            return false;
        }
        self.kernel_frames = Some(message);
        true
    }

    /// Records a problem with process `pid`. `false` if one is already recorded for it, so the
    /// caller logs only the first.
    pub(super) fn record_process(&mut self, pid: u32, message: String) -> bool {
        if self.processes.iter().any(|(known, _)| *known == pid) {
            return false;
        }
        if self.processes.len() >= MAX_PROCESS_PROBLEMS {
            self.processes.pop_front();
        }
        self.processes.push_back((pid, message));
        true
    }

    /// Forgets the problem of a process that is no longer followed.
    pub(super) fn forget_process(&mut self, pid: u32) {
        self.processes.retain(|(known, _)| *known != pid);
    }

    pub(super) fn forget_processes(&mut self) {
        self.processes.clear();
    }

    /// Everything recorded, the sampler-wide problem first, then processes oldest first.
    pub(super) fn messages(&self) -> Vec<String> {
        self.kernel_frames
            .iter()
            .cloned()
            .chain(self.processes.iter().map(|(_, message)| message.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_problem_per_process() {
        let mut problems = Problems::default();
        assert!(problems.record_process(7, "pid 7: first".into()));
        assert!(!problems.record_process(7, "pid 7: second".into()));
        assert!(problems.record_process(8, "pid 8: first".into()));
        assert_eq!(problems.messages(), ["pid 7: first", "pid 8: first"]);
        problems.forget_process(7);
        assert_eq!(problems.messages(), ["pid 8: first"]);
        assert!(problems.record_process(7, "pid 7: again".into()));
    }

    #[test]
    fn kernel_frames_recorded_once_and_listed_first() {
        let mut problems = Problems::default();
        assert!(problems.record_process(1, "pid 1".into()));
        assert!(problems.record_kernel_frames("kernel".into()));
        assert!(!problems.record_kernel_frames("kernel again".into()));
        assert_eq!(problems.messages(), ["kernel", "pid 1"]);
        problems.forget_processes();
        assert_eq!(problems.messages(), ["kernel"]);
    }

    #[test]
    fn bounded_dropping_the_oldest() {
        let mut problems = Problems::default();
        for pid in 0..100 {
            problems.record_process(pid, format!("pid {pid}"));
        }
        let messages = problems.messages();
        assert_eq!(messages.len(), MAX_PROCESS_PROBLEMS);
        assert_eq!(messages.first().map(String::as_str), Some("pid 68"));
        assert_eq!(messages.last().map(String::as_str), Some("pid 99"));
    }
}
