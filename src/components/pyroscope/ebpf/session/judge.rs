//! The session's judgement of each whole collection interval: which capabilities it lacks,
//! how many user frames it could name, and whether its targets could be sampled at all,
//! handed to [`super::super::health`] to decide the component's health.

use super::*;

impl Runner {
    /// Records the capabilities once per session: without CAP_SYS_PTRACE, processes of other
    /// users are sampled (BPF) but cannot be symbolized, which shows only as `[unknown]`
    /// frames unless said.
    pub(super) fn note_capabilities(&mut self, caps: Caps) {
        self.books.caps = caps;
        let missing = caps.missing_for_symbols();
        if missing.is_empty() || self.books.caps_noted {
            return;
        }
        self.books.caps_noted = true;
        let missing_text = missing.join(" and ");
        tracing::warn!(
            missing = %missing_text,
            "pyroscope.ebpf cannot symbolize processes of other users: their user frames will be [unknown]"
        );
        let mut status = lock(&self.shared.status);
        status.findings.missing_capabilities = missing;
        status.findings.problems = self.capability_problems();
    }

    /// The problem the missing capabilities cause, listed in the debug info for as long as
    /// the session runs.
    fn capability_problems(&self) -> Vec<String> {
        let missing = self.books.caps.missing_for_symbols();
        if missing.is_empty() {
            return Vec::new();
        }
        vec![format!(
            "{} is missing: the user frames of processes of other users (or with capabilities \
             this process lacks) cannot be symbolized, because opening their binaries \
             through /proc/<pid>/root needs ptrace read access; they show as [unknown]",
            missing.join(" and ")
        )]
    }

    /// Judges a whole interval (see [`super::health`]): how much of what was sampled could
    /// be named, and whether any target could be sampled at all. Processes are asked why only
    /// when that can explain something: a sampled process none of whose user frames has a
    /// name, and the followed processes.
    pub(super) fn judge(&mut self, samples: u64, frames: &HashMap<u32, (u64, u64)>) {
        let perf = matches!(lock(&self.shared.status).mode, Mode::Perf { .. });
        let sampler_problems = self
            .sampler
            .as_ref()
            .map(|s| s.problems())
            .unwrap_or_default();
        let refused: HashSet<u32> = health::problem_pids(&sampler_problems).collect();
        let mut report = IntervalReport {
            samples,
            processes: frames.len(),
            followed: self.followed.len(),
            ..IntervalReport::default()
        };
        let mut asked: HashMap<u32, Access> = HashMap::new();
        let mut pids: Vec<u32> = frames.keys().copied().collect();
        pids.sort_unstable();
        for pid in pids {
            let (user, unknown) = frames.get(&pid).copied().unwrap_or_default();
            report.user_frames += user;
            report.user_frames_unknown += unknown;
            if user > 0 && unknown == user {
                let access = health::access(pid);
                if access == Access::NotPermitted {
                    report.note_not_permitted(pid);
                }
                asked.insert(pid, access);
            }
        }
        let mut followed: Vec<u32> = self.followed.iter().copied().collect();
        followed.sort_unstable();
        for pid in followed {
            let access = match asked.get(&pid) {
                Some(&access) => access,
                None => {
                    let access = health::access(pid);
                    if access == Access::NotPermitted {
                        report.note_not_permitted(pid);
                    }
                    access
                }
            };
            match access {
                Access::Exited => report.exited += 1,
                // perf_event_open takes the same access; BPF samples the process regardless.
                Access::NotPermitted if perf => {}
                _ if perf && refused.contains(&pid) => report.refused += 1,
                _ => report.sampleable += 1,
            }
        }
        let symbolized = report
            .user_frames
            .saturating_sub(report.user_frames_unknown);
        self.metrics.user_frames_symbolized.inc_by(symbolized);
        self.metrics
            .user_frames_unknown
            .inc_by(report.user_frames_unknown);
        self.metrics
            .inaccessible_not_permitted
            .set(report.not_permitted as i64);
        self.metrics.inaccessible_exited.set(report.exited as i64);

        let context = health::Context {
            targets: self.targets.len(),
            profiles_everything: self.targets.profiles_everything(),
            perf,
            perfmon: self.books.caps.perfmon(),
            missing_for_symbols: self.books.caps.missing_for_symbols(),
        };
        let verdict = health::assess(&report, &context);
        match (self.books.trouble, &verdict) {
            (old, Some((trouble, reason))) if old != Some(*trouble) => {
                tracing::warn!(check = trouble.as_str(), %reason, "pyroscope.ebpf is unhealthy");
            }
            (Some(old), None) => {
                tracing::info!(
                    check = old.as_str(),
                    "pyroscope.ebpf samples and symbolizes its targets again"
                );
            }
            _ => {}
        }
        self.books.trouble = verdict.as_ref().map(|(trouble, _)| *trouble);

        let mut problems = self.capability_problems();
        let hint = if context.missing_for_symbols.is_empty() {
            String::new()
        } else {
            format!(
                " ({} is missing)",
                context.missing_for_symbols.join(" and ")
            )
        };
        for pid in &report.not_permitted_pids {
            problems.push(format!(
                "pid {pid}: this process may not open its files through /proc/{pid}/root (no \
                 ptrace read access{hint}): its user frames cannot be symbolized"
            ));
        }
        if report.not_permitted > report.not_permitted_pids.len() {
            problems.push(format!(
                "{} more processes whose files may not be opened",
                report.not_permitted - report.not_permitted_pids.len()
            ));
        }
        let mut status = lock(&self.shared.status);
        status.findings.unhealthy = verdict.map(|(_, reason)| reason);
        status.findings.last_interval = Some(report);
        status.findings.problems = problems;
    }
}

/// User-space frames per process over the interval's samples, as (all, `[unknown]`): a frame
/// counts once per sample it is in. Every process sampled has an entry. Kernel frames, the vDSO
/// (read from our own process) and synthetic frames (thread names, truncation marks: no
/// module) say nothing about access to the process and are left out.
pub(super) fn user_frames(interval: &Interval) -> HashMap<u32, (u64, u64)> {
    let mut out: HashMap<u32, (u64, u64)> = HashMap::new();
    interval.for_each_frame(|pid, frame, samples| {
        let counts = out.entry(pid).or_default();
        let module = &*frame.module;
        if module.is_empty() || module == symbolize::KERNEL_MODULE || module == VDSO_MODULE {
            return;
        }
        counts.0 += samples;
        if &*frame.function == symbolize::UNKNOWN {
            counts.1 += samples;
        }
    });
    out
}
