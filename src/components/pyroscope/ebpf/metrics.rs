//! `pyroscope.ebpf` metrics: Alloy's names where Alloy has the metric, plus the sampler's own
//! loss counters.
//!
//! | metric | labels | meaning |
//! |---|---|---|
//! | `pyroscope_ebpf_active_targets` | | targets the component was given that identify processes |
//! | `pyroscope_ebpf_profiling_sessions_total` | | sampler starts |
//! | `pyroscope_ebpf_profiling_sessions_failing_total` | | sampler starts that failed (BPF refused and no fallback possible) |
//! | `pyroscope_ebpf_pprofs_total` | service_name | profiles produced |
//! | `pyroscope_ebpf_pprof_bytes_total` | service_name | compressed bytes of those profiles |
//! | `pyroscope_ebpf_pprof_samples_total` | service_name | samples in those profiles |
//! | `pyroscope_ebpf_samples_lost_total` | | samples the kernel could not deliver (ring or perf buffer full) |
//! | `pyroscope_ebpf_samples_filtered_total` | reason | samples in no profile: `not_followed` (the BPF program's target filter skipped the process: it was no target when sampled), `no_target` (the process matched no target, checked again when the interval was collected) |
//! | `pyroscope_ebpf_user_frames_total` | result | user-space frames in the profiles produced, weighted by samples: `symbolized` or `unknown` (`[unknown]`); the vDSO is not counted |
//! | `pyroscope_ebpf_unwind_stacks_total` | result | user stacks unwound from the BPF program's stack copies: `complete`, or why one ended `[truncated]` (`stack_copy_exhausted`, `go_stack_switch`, `bad_frame`, `unknown_mapping`, `process_unreadable`, `depth_limit`, `no_stack_copy`; docs/EBPF.md) |
//! | `pyroscope_ebpf_offcpu_failures_total` | | off-CPU sampler starts that failed (`off_cpu_threshold > 0`; CPU profiling goes on) |
//! | `pyroscope_ebpf_offcpu_lost_total` | | off-CPU records the kernel could not deliver (ring full) |
//! | `pyroscope_ebpf_python_processes_total` | result | CPython processes examined for the Python frame walk: `walked` (registered with the BPF program), `failed` (a version without offsets, no `_PyRuntime`, the perf fallback...; the reason is in the debug info's problems and the log) |
//! | `pyroscope_ebpf_offcpu_samples_filtered_total` | | off-CPU samples in no profile: their process matched no target (the CPU samples' `samples_filtered_total{reason="no_target"}`) |
//! | `pyroscope_ebpf_offcpu_unwind_stacks_total` | result | as `unwind_stacks_total`, for the off-CPU samples' stacks (which that one does not count) |
//! | `pyroscope_ebpf_offcpu_evicted_total` | | off-CPU stacks dropped before their block ended because too many chosen threads were blocked at once (their blocks go unreported; logged once as a warning) |
//! | `pyroscope_ebpf_offcpu_filter_errors_total` | | failed updates of the off-CPU program's target map (the error is in the debug info and health, logged once) |
//! | `pyroscope_ebpf_python_no_thread_total` | | samples of walked CPython processes whose thread had no thread state in the main interpreter (no Python frames); a process where this is most walks is listed in the debug info's problems |
//! | `pyroscope_ebpf_inaccessible_processes` | reason | at the last collection, processes the component should profile but cannot: `not_permitted` (no ptrace read access, so their files cannot be opened through /proc/<pid>/root: they cannot be symbolized, nor sampled by the perf fallback), `exited` (followed pids that no longer exist) |
//!
//! The first six are Alloy's (Alloy also has `pyroscope_ebpf_pprofs_dropped_total`, for
//! profiles its pipeline drops; ours hands every profile on); the others are ours. Every series
//! also has `component_id` and `component_path`.

use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::unwind::{End, Reason};
use crate::runtime::metrics::{Labels, MetricsRegistry, component_labels};

/// The metric families, registered once per process.
pub struct EbpfMetrics {
    active_targets: Family<Labels, Gauge>,
    sessions: Family<Labels, Counter>,
    sessions_failing: Family<Labels, Counter>,
    pprofs: Family<Labels, Counter>,
    pprof_bytes: Family<Labels, Counter>,
    pprof_samples: Family<Labels, Counter>,
    lost: Family<Labels, Counter>,
    filtered: Family<Labels, Counter>,
    user_frames: Family<Labels, Counter>,
    unwind_stacks: Family<Labels, Counter>,
    inaccessible: Family<Labels, Gauge>,
    offcpu_failures: Family<Labels, Counter>,
    offcpu_lost: Family<Labels, Counter>,
    python: Family<Labels, Counter>,
    offcpu_filtered: Family<Labels, Counter>,
    offcpu_unwind_stacks: Family<Labels, Counter>,
    offcpu_evicted: Family<Labels, Counter>,
    offcpu_filter_errors: Family<Labels, Counter>,
    python_no_thread: Family<Labels, Counter>,
}

impl EbpfMetrics {
    pub fn get(registry: &MetricsRegistry) -> Arc<EbpfMetrics> {
        registry.get_or_register(|r: &mut Registry| {
            let m = EbpfMetrics {
                active_targets: Family::default(),
                sessions: Family::default(),
                sessions_failing: Family::default(),
                pprofs: Family::default(),
                pprof_bytes: Family::default(),
                pprof_samples: Family::default(),
                lost: Family::default(),
                filtered: Family::default(),
                user_frames: Family::default(),
                unwind_stacks: Family::default(),
                inaccessible: Family::default(),
                offcpu_failures: Family::default(),
                offcpu_lost: Family::default(),
                python: Family::default(),
                offcpu_filtered: Family::default(),
                offcpu_unwind_stacks: Family::default(),
                offcpu_evicted: Family::default(),
                offcpu_filter_errors: Family::default(),
                python_no_thread: Family::default(),
            };
            r.register(
                "pyroscope_ebpf_python_no_thread",
                "Samples of walked CPython processes whose thread had no thread state",
                m.python_no_thread.clone(),
            );
            r.register(
                "pyroscope_ebpf_python_processes",
                "CPython processes examined for the Python frame walk, by result",
                m.python.clone(),
            );
            r.register(
                "pyroscope_ebpf_active_targets",
                "Targets that identify processes to profile",
                m.active_targets.clone(),
            );
            r.register(
                "pyroscope_ebpf_profiling_sessions",
                "Sampler starts",
                m.sessions.clone(),
            );
            r.register(
                "pyroscope_ebpf_profiling_sessions_failing",
                "Sampler starts that failed",
                m.sessions_failing.clone(),
            );
            r.register(
                "pyroscope_ebpf_pprofs",
                "Profiles produced",
                m.pprofs.clone(),
            );
            r.register(
                "pyroscope_ebpf_pprof_bytes",
                "Compressed bytes of the profiles produced",
                m.pprof_bytes.clone(),
            );
            r.register(
                "pyroscope_ebpf_pprof_samples",
                "Samples in the profiles produced",
                m.pprof_samples.clone(),
            );
            r.register(
                "pyroscope_ebpf_samples_lost",
                "Samples the kernel could not deliver because a buffer was full",
                m.lost.clone(),
            );
            r.register(
                "pyroscope_ebpf_samples_filtered",
                "Samples in no profile, by why their process was not profiled",
                m.filtered.clone(),
            );
            r.register(
                "pyroscope_ebpf_user_frames",
                "User-space frames in the profiles produced, symbolized or unknown",
                m.user_frames.clone(),
            );
            r.register(
                "pyroscope_ebpf_unwind_stacks",
                "User stacks unwound from stack copies, by how they ended: complete or why they were truncated",
                m.unwind_stacks.clone(),
            );
            r.register(
                "pyroscope_ebpf_inaccessible_processes",
                "Processes to profile that could not be read or sampled at the last collection",
                m.inaccessible.clone(),
            );
            r.register(
                "pyroscope_ebpf_offcpu_failures",
                "Off-CPU sampler starts that failed",
                m.offcpu_failures.clone(),
            );
            r.register(
                "pyroscope_ebpf_offcpu_lost",
                "Off-CPU records the kernel could not deliver because the ring was full",
                m.offcpu_lost.clone(),
            );
            r.register(
                "pyroscope_ebpf_offcpu_samples_filtered",
                "Off-CPU samples in no profile because their process matched no target",
                m.offcpu_filtered.clone(),
            );
            r.register(
                "pyroscope_ebpf_offcpu_unwind_stacks",
                "Off-CPU user stacks unwound from stack copies, by how they ended",
                m.offcpu_unwind_stacks.clone(),
            );
            r.register(
                "pyroscope_ebpf_offcpu_evicted",
                "Off-CPU stacks dropped before their block ended to stay within the waiting bound",
                m.offcpu_evicted.clone(),
            );
            r.register(
                "pyroscope_ebpf_offcpu_filter_errors",
                "Failed updates of the off-CPU program's target map",
                m.offcpu_filter_errors.clone(),
            );
            m
        })
    }

    /// The series of one component instance.
    pub fn component(self: &Arc<Self>, component_id: &str) -> ComponentMetrics {
        let base = component_labels(component_id);
        let with = |name: &str, value: &str| {
            let mut l = base.clone();
            l.push((name.to_string(), value.to_string()));
            l
        };
        // One statement per series: `get_or_create` returns a guard on its family, held to the
        // end of the statement, and a second series of the same family in that statement would
        // wait for the write lock forever.
        let active_targets = self.active_targets.get_or_create(&base).clone();
        let sessions = self.sessions.get_or_create(&base).clone();
        let sessions_failing = self.sessions_failing.get_or_create(&base).clone();
        let lost = self.lost.get_or_create(&base).clone();
        let filtered_not_followed = self
            .filtered
            .get_or_create(&with("reason", "not_followed"))
            .clone();
        let filtered_no_target = self
            .filtered
            .get_or_create(&with("reason", "no_target"))
            .clone();
        let user_frames_symbolized = self
            .user_frames
            .get_or_create(&with("result", "symbolized"))
            .clone();
        let user_frames_unknown = self
            .user_frames
            .get_or_create(&with("result", "unknown"))
            .clone();
        let mut unwind = Vec::with_capacity(Reason::ALL.len() + 1);
        let mut offcpu_unwind = Vec::with_capacity(Reason::ALL.len() + 1);
        for result in std::iter::once("complete").chain(Reason::ALL.iter().map(|r| r.as_str())) {
            let counter = self
                .unwind_stacks
                .get_or_create(&with("result", result))
                .clone();
            unwind.push((result, counter));
            let counter = self
                .offcpu_unwind_stacks
                .get_or_create(&with("result", result))
                .clone();
            offcpu_unwind.push((result, counter));
        }
        let inaccessible_not_permitted = self
            .inaccessible
            .get_or_create(&with("reason", "not_permitted"))
            .clone();
        let inaccessible_exited = self
            .inaccessible
            .get_or_create(&with("reason", "exited"))
            .clone();
        let offcpu_failures = self.offcpu_failures.get_or_create(&base).clone();
        let offcpu_lost = self.offcpu_lost.get_or_create(&base).clone();
        let python_walked = self.python.get_or_create(&with("result", "walked")).clone();
        let python_failed = self.python.get_or_create(&with("result", "failed")).clone();
        let offcpu_filtered = self.offcpu_filtered.get_or_create(&base).clone();
        let offcpu_evicted = self.offcpu_evicted.get_or_create(&base).clone();
        let offcpu_filter_errors = self.offcpu_filter_errors.get_or_create(&base).clone();
        let python_no_thread = self.python_no_thread.get_or_create(&base).clone();
        ComponentMetrics {
            offcpu_filtered,
            offcpu_evicted,
            offcpu_filter_errors,
            offcpu_unwind,
            offcpu_failures,
            offcpu_lost,
            python_walked,
            python_failed,
            python_no_thread,
            active_targets,
            sessions,
            sessions_failing,
            lost,
            filtered_not_followed,
            filtered_no_target,
            user_frames_symbolized,
            user_frames_unknown,
            inaccessible_not_permitted,
            inaccessible_exited,
            unwind,
            all: self.clone(),
            base,
        }
    }
}

/// One component's series.
#[derive(Clone)]
pub struct ComponentMetrics {
    all: Arc<EbpfMetrics>,
    base: Labels,
    pub active_targets: Gauge,
    pub sessions: Counter,
    pub sessions_failing: Counter,
    pub lost: Counter,
    pub filtered_not_followed: Counter,
    pub filtered_no_target: Counter,
    pub user_frames_symbolized: Counter,
    pub user_frames_unknown: Counter,
    pub inaccessible_not_permitted: Gauge,
    pub python_walked: Counter,
    pub python_failed: Counter,
    pub python_no_thread: Counter,
    pub inaccessible_exited: Gauge,
    pub offcpu_failures: Counter,
    pub offcpu_lost: Counter,
    pub offcpu_filtered: Counter,
    pub offcpu_evicted: Counter,
    pub offcpu_filter_errors: Counter,
    /// `pyroscope_ebpf_unwind_stacks_total` by result.
    unwind: Vec<(&'static str, Counter)>,
    /// `pyroscope_ebpf_offcpu_unwind_stacks_total` by result.
    offcpu_unwind: Vec<(&'static str, Counter)>,
}

impl ComponentMetrics {
    /// Counts one unwound user stack by how it ended, in the CPU or the off-CPU series.
    pub fn unwound(&self, end: End, off_cpu: bool) {
        let result = match end {
            End::Root => "complete",
            End::Truncated(r) => r.as_str(),
        };
        let series = if off_cpu {
            &self.offcpu_unwind
        } else {
            &self.unwind
        };
        if let Some((_, c)) = series.iter().find(|(r, _)| *r == result) {
            c.inc();
        }
    }

    /// Counts one profile of `service_name` with `bytes` compressed bytes and `samples`
    /// samples, in Alloy's per-service series.
    pub fn pprof(&self, service_name: &str, bytes: u64, samples: u64) {
        let mut l = self.base.clone();
        l.push(("service_name".to_string(), service_name.to_string()));
        self.all.pprofs.get_or_create(&l).inc();
        self.all.pprof_bytes.get_or_create(&l).inc_by(bytes);
        self.all.pprof_samples.get_or_create(&l).inc_by(samples);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_series_of_a_component_is_exposed_with_alloys_names() {
        let registry = MetricsRegistry::new();
        let m = EbpfMetrics::get(&registry).component("pyroscope.ebpf.x");
        m.pprof("svc", 10, 3);
        m.filtered_no_target.inc_by(2);
        m.user_frames_unknown.inc_by(5);
        m.inaccessible_not_permitted.set(1);
        m.unwound(End::Root, false);
        m.unwound(End::Truncated(Reason::StackCopyExhausted), false);
        m.unwound(End::Truncated(Reason::StackCopyExhausted), false);
        m.unwound(End::Truncated(Reason::BadFrame), true);
        m.offcpu_filtered.inc_by(4);
        let text = registry.encode().expect("encode");
        for series in [
            "pyroscope_ebpf_pprofs_total{component_id=\"pyroscope.ebpf.x\"",
            "pyroscope_ebpf_pprof_bytes_total{component_id=\"pyroscope.ebpf.x\"",
            "service_name=\"svc\"} 10",
            "service_name=\"svc\"} 3",
            "reason=\"no_target\"} 2",
            "reason=\"not_followed\"} 0",
            "result=\"unknown\"} 5",
            "result=\"symbolized\"} 0",
            "pyroscope_ebpf_inaccessible_processes{",
            "reason=\"not_permitted\"} 1",
            "pyroscope_ebpf_samples_lost_total{",
            "result=\"complete\"} 1",
            "result=\"stack_copy_exhausted\"} 2",
            "result=\"go_stack_switch\"} 0",
            "pyroscope_ebpf_offcpu_failures_total{",
            "pyroscope_ebpf_offcpu_lost_total{",
            "pyroscope_ebpf_offcpu_evicted_total{",
            "pyroscope_ebpf_offcpu_filter_errors_total{",
            "pyroscope_ebpf_offcpu_samples_filtered_total{component_id=\"pyroscope.ebpf.x\",component_path=\"/\"} 4",
        ] {
            assert!(text.contains(series), "{series} not in\n{text}");
        }
        // Off-CPU stacks stay out of the CPU series.
        for series in [
            "pyroscope_ebpf_unwind_stacks_total{component_id=\"pyroscope.ebpf.x\",component_path=\"/\",result=\"bad_frame\"} 0",
            "pyroscope_ebpf_offcpu_unwind_stacks_total{component_id=\"pyroscope.ebpf.x\",component_path=\"/\",result=\"bad_frame\"} 1",
        ] {
            assert!(text.contains(series), "{series} not in\n{text}");
        }
    }
}
