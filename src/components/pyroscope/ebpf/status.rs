//! What `pyroscope.ebpf`'s debug info shows: the sampler in use, counts, the unwinder's and
//! symbolizer's state, and what the session found out about its own work (the input of
//! [`super::health`]).

use super::bpf;
use super::health::IntervalReport;

/// Which sampler is running, for the debug info and health.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "mode", rename_all = "snake_case")]
pub enum Mode {
    Starting,
    Bpf,
    /// perf_event_open fallback, with why BPF was not used.
    Perf {
        reason: String,
    },
    /// No sampler could run; the component is unhealthy until its arguments change.
    Failed {
        error: String,
    },
}

/// What the debug info shows.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Status {
    #[serde(flatten)]
    pub mode: Mode,
    pub targets: usize,
    pub followed_pids: usize,
    pub samples_total: u64,
    pub samples_unmatched: u64,
    pub profiles_total: u64,
    pub last_collect: Option<String>,
    pub bpf: Option<bpf::Stats>,
    pub problems: Vec<String>,
    #[serde(flatten)]
    pub findings: Findings,
    pub symbolizer: Option<serde_json::Value>,
    /// Stacks unwound, how they ended (truncation reasons), and the unwind tables held.
    pub unwinder: Option<serde_json::Value>,
    /// Off-CPU profiling, when `off_cpu_threshold > 0`.
    pub off_cpu: Option<super::offcpu::Status>,
    /// CPython processes walked or failed, and the code objects cached.
    pub python: Option<serde_json::Value>,
}

impl Default for Status {
    fn default() -> Self {
        Status {
            mode: Mode::Starting,
            targets: 0,
            followed_pids: 0,
            samples_total: 0,
            samples_unmatched: 0,
            profiles_total: 0,
            last_collect: None,
            bpf: None,
            problems: Vec::new(),
            findings: Findings::default(),
            symbolizer: None,
            unwinder: None,
            off_cpu: None,
            python: None,
        }
    }
}

/// What the session finds out about its own work, for the debug info and the health (see
/// [`super::health`]).
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct Findings {
    /// Capabilities without which some processes cannot be symbolized.
    pub missing_capabilities: Vec<&'static str>,
    /// Samples in no profile, by reason (the `pyroscope_ebpf_samples_filtered_total` series).
    pub samples_filtered: Filtered,
    /// Profiles of processes newer than the targets, waiting for discovery to report them.
    pub deferred_profiles: usize,
    /// What the last whole collection interval showed.
    pub last_interval: Option<IntervalReport>,
    /// Why the component is unhealthy while its sampler runs; `None` when it is not.
    pub unhealthy: Option<String>,
    /// The session's own problems; [`super::session::Session::status`] lists them before the sampler's.
    #[serde(skip)]
    pub problems: Vec<String>,
}

/// Samples in no profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Filtered {
    /// Skipped by the BPF program's filter: the process was no target when sampled (with
    /// `targets_only = true`, every process the targets do not name).
    pub not_followed: u64,
    /// Delivered, but the process matched no target, also when the interval was collected.
    pub no_target: u64,
}
