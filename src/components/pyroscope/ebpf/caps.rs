//! Which sampler the process may use, decided from its effective capabilities before trying,
//! so that a refusal can name exactly what is missing.

/// Capability numbers (include/uapi/linux/capability.h).
const CAP_SYS_PTRACE: u32 = 19;
const CAP_SYS_ADMIN: u32 = 21;
const CAP_PERFMON: u32 = 38;
const CAP_BPF: u32 = 39;

/// The effective capability set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps(u64);

impl Caps {
    /// This process's effective set, from /proc/self/status; empty if unreadable.
    pub fn current() -> Caps {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| Caps::parse(&s))
            .unwrap_or(Caps(0))
    }

    /// Parses the `CapEff:` line of a /proc/<pid>/status file.
    pub fn parse(status: &str) -> Option<Caps> {
        let hex = status
            .lines()
            .find_map(|l| l.strip_prefix("CapEff:"))?
            .trim();
        u64::from_str_radix(hex, 16).ok().map(Caps)
    }

    fn has(self, cap: u32) -> bool {
        self.0 & (1u64 << cap) != 0
    }

    /// Capabilities BPF sampling needs that are missing; empty when it may be tried. Before
    /// Linux 5.8 CAP_SYS_ADMIN covered both.
    pub fn missing_for_bpf(self) -> Vec<&'static str> {
        if self.has(CAP_SYS_ADMIN) {
            return Vec::new();
        }
        let mut missing = Vec::new();
        if !self.has(CAP_BPF) {
            missing.push("CAP_BPF");
        }
        if !self.has(CAP_PERFMON) {
            missing.push("CAP_PERFMON");
        }
        missing
    }

    /// Whether perf events of any process (and kernel frames) are allowed.
    pub fn perfmon(self) -> bool {
        self.has(CAP_PERFMON) || self.has(CAP_SYS_ADMIN)
    }

    /// Capabilities symbolization needs that are missing. Names come from a process's binaries,
    /// opened as `/proc/<pid>/root/<path>`, which the kernel allows only with ptrace read access
    /// (CAP_PERFMON lets `/proc/<pid>/maps` be read, not that): for a process of another user (or
    /// with capabilities this one lacks) it takes CAP_SYS_PTRACE, whichever sampler runs. BPF samples such a process
    /// all the same, so without it its user frames are all `[unknown]`.
    pub fn missing_for_symbols(self) -> Vec<&'static str> {
        if self.has(CAP_SYS_PTRACE) {
            Vec::new()
        } else {
            vec!["CAP_SYS_PTRACE"]
        }
    }
}

/// `kernel.perf_event_paranoid`, if readable.
pub fn perf_event_paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decides_from_the_effective_set() {
        let cases = [
            // root
            ("CapEff:\t000001ffffffffff\n", vec![]),
            // nobody with nothing
            (
                "CapInh:\t0000000000000000\nCapEff:\t0000000000000000\n",
                vec!["CAP_BPF", "CAP_PERFMON"],
            ),
            // CAP_BPF + CAP_PERFMON
            ("CapEff:\t000000c000000000\n", vec![]),
            // CAP_BPF only
            ("CapEff:\t0000008000000000\n", vec!["CAP_PERFMON"]),
            // CAP_SYS_ADMIN (pre-5.8 kernels)
            ("CapEff:\t0000000000200000\n", vec![]),
        ];
        for (status, missing) in cases {
            let caps = Caps::parse(status).expect("parses");
            assert_eq!(caps.missing_for_bpf(), missing, "{status}");
        }
        assert!(Caps::parse("Name: x\n").is_none());
        assert!(
            Caps::parse("CapEff:\t000000c000000000\n")
                .expect("caps")
                .perfmon()
        );
        assert!(
            !Caps::parse("CapEff:\t0000008000000000\n")
                .expect("caps")
                .perfmon()
        );
    }

    #[test]
    fn symbolizing_other_users_processes_needs_cap_sys_ptrace() {
        let cases = [
            // root
            ("CapEff:\t000001ffffffffff\n", vec![]),
            // CAP_BPF + CAP_PERFMON only: samples every process, names only its own user's.
            ("CapEff:\t000000c000000000\n", vec!["CAP_SYS_PTRACE"]),
            // CAP_BPF + CAP_PERFMON + CAP_SYS_PTRACE (the Helm chart's set, without SYSLOG)
            ("CapEff:\t000000c000080000\n", vec![]),
            // CAP_SYS_ADMIN does not imply ptrace access.
            ("CapEff:\t0000000000200000\n", vec!["CAP_SYS_PTRACE"]),
        ];
        for (status, missing) in cases {
            let caps = Caps::parse(status).expect("parses");
            assert_eq!(caps.missing_for_symbols(), missing, "{status}");
        }
    }
}
