//! Off-CPU profiling (`off_cpu_threshold > 0`): where target threads wait, and for how long.
//!
//! [`bpf`] loads `bpf/offcpu.bpf.o` beside the CPU sampler: a thread's switch-out is chosen
//! with probability `off_cpu_threshold` (Alloy's meaning, from the OpenTelemetry profiler
//! Alloy embeds) and its stacks are taken; when it runs again after at least
//! `off_cpu_min_block` (our own argument) the time it was off CPU follows, and [`pair`] joins
//! the two. The session unwinds and symbolizes those stacks like CPU samples, into an interval
//! of its own, and every `collect_interval` sends one `offcpu` profile per process next to the
//! `process_cpu` one.
//!
//! Values are the time off CPU divided by the probability: with `off_cpu_threshold = 0.1`
//! one block in ten is recorded, and scaling by 10 estimates the real waiting time, which is
//! what a reader of a flame graph in nanoseconds expects. (Alloy sends the recorded time
//! unscaled; at the common `1.0` the two agree.)

pub mod bpf;
pub mod pair;

use std::collections::HashSet;

use std::time::SystemTime;

use super::args::Arguments;
use super::metrics::ComponentMetrics;
use super::profile::{Interval, Shape};
use super::sample::RawSample;
use crate::budget::Budget;
use bpf::{OffCpuSampler, Options, Record, Stats};
use pair::Pairs;

/// `__name__` of the off-CPU profiles, as Alloy sends them.
pub const PROFILE_NAME: &str = "offcpu";

/// What the debug info shows under `off_cpu` (absent when off-CPU profiling is off).
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Status {
    /// `running`, or `failed` with `error` (it could not start, or stopped with the CPU
    /// sampler). `running` with `error` set: the processes to follow could not be updated
    /// (it follows the last set that could), until an update succeeds.
    pub state: &'static str,
    pub error: Option<String>,
    /// `off_cpu_threshold`.
    pub probability: f64,
    /// `off_cpu_min_block` in nanoseconds.
    pub min_block_ns: u64,
    /// Stacks waiting for their block to end (or for the thread's next switch-out, when the
    /// block was short).
    pub waiting: usize,
    /// Stacks dropped from the waiting set to stay within its bounds.
    pub evicted: u64,
    /// Block ends whose stacks were not there (lost in the ring, or evicted).
    pub unmatched: u64,
    /// Waiting stacks freed because their thread exited before its block ended.
    pub orphaned: u64,
    /// Off-CPU samples of processes that matched no target.
    pub samples_filtered: u64,
    /// The program's counters.
    pub bpf: Option<Stats>,
    /// Records turned into samples.
    pub samples_total: u64,
}

/// The off-CPU sampler of one session, and the interval its samples go to.
pub struct OffCpu {
    sampler: Option<OffCpuSampler>,
    /// Off-CPU samples of the current interval.
    pub interval: Interval,
    /// 1 / probability: the factor from recorded to estimated off-CPU time.
    scale: f64,
    status: Option<Status>,
    lost_seen: u64,
    evicted_seen: u64,
    pairs: Pairs,
    /// The last error updating the target map (logged once until an update succeeds).
    filter_error: Option<String>,
}

impl OffCpu {
    /// Off-CPU profiling not running (off, or before the sampler starts).
    pub fn off() -> Self {
        OffCpu {
            sampler: None,
            interval: Interval::default(),
            scale: 1.0,
            status: None,
            lost_seen: 0,
            evicted_seen: 0,
            pairs: Pairs::default(),
            filter_error: None,
        }
    }

    /// Starts the off-CPU sampler when `args` ask for it. `bpf_mode` says whether the CPU
    /// sampler runs on BPF: the off-CPU one needs the same privileges and has no perf
    /// fallback. A failure is logged, counted in `failures` and kept for the debug info and
    /// the health; CPU profiling goes on.
    pub fn start(
        args: &Arguments,
        bpf_mode: bool,
        stack_bytes: u32,
        metrics: &ComponentMetrics,
        budget: &Budget,
    ) -> Self {
        let mut this = OffCpu::off();
        if args.off_cpu_threshold <= 0.0 {
            return this;
        }
        this.pairs = Pairs::new(budget);
        let min_block_ns = args.off_cpu_min_block.as_nanos().min(u64::MAX as u128) as u64;
        let mut status = Status {
            state: "running",
            error: None,
            probability: args.off_cpu_threshold,
            min_block_ns,
            waiting: 0,
            evicted: 0,
            unmatched: 0,
            orphaned: 0,
            samples_filtered: 0,
            bpf: None,
            samples_total: 0,
        };
        let loaded = if bpf_mode {
            OffCpuSampler::load(Options {
                filter: args.targets_only,
                kernel_frames: args.kernel_frames,
                stack_bytes,
                probability: args.off_cpu_threshold,
                min_block_ns,
            })
            .map_err(|e| e.to_string())
        } else {
            Err("off-CPU profiling needs the BPF sampler (root, or CAP_BPF and CAP_PERFMON); the perf_event_open fallback cannot time switches".to_string())
        };
        match loaded {
            Ok(s) => {
                this.sampler = Some(s);
                this.scale = 1.0 / args.off_cpu_threshold;
            }
            Err(error) => {
                tracing::warn!(%error, "pyroscope.ebpf: off-CPU profiling could not start; CPU profiles go on");
                metrics.offcpu_failures.inc();
                status.state = "failed";
                status.error = Some(error);
            }
        }
        this.status = Some(status);
        this
    }

    /// Follows the same processes as the CPU sampler. An error is kept in the status (the
    /// health reports it), counted, and logged once until an update succeeds again: the
    /// session retries at every rescan.
    pub fn set_filter(&mut self, pids: Option<&HashSet<u32>>, metrics: &ComponentMetrics) {
        let Some(sampler) = self.sampler.as_mut() else {
            return;
        };
        let result = sampler.set_filter(pids);
        let status = self.status.as_mut();
        match result {
            Ok(()) => {
                if let Some(error) = self.filter_error.take() {
                    tracing::info!(%error, "pyroscope.ebpf: off-CPU target map updated again");
                    if let Some(status) = status {
                        status.error = None;
                    }
                }
            }
            Err(error) => {
                metrics.offcpu_filter_errors.inc();
                if self.filter_error.is_none() {
                    tracing::warn!(%error, "pyroscope.ebpf: off-CPU target map could not be updated; retried at every rescan");
                }
                if let Some(status) = status {
                    status.error = Some(format!("updating the processes to follow: {error}"));
                }
                self.filter_error = Some(error);
            }
        }
    }

    /// Stops the off-CPU sampler with the CPU one (`why`): the status says so.
    pub fn fail(&mut self, why: &str) {
        let status = self.status.take();
        *self = OffCpu::off();
        self.status = status.map(|mut s| {
            s.state = "failed";
            s.error = Some(format!("stopped with the CPU sampler: {why}"));
            s
        });
    }

    /// Counts off-CPU samples whose process matched no target.
    pub fn filtered(&mut self, samples: u64, metrics: &ComponentMetrics) {
        metrics.offcpu_filtered.inc_by(samples);
        if let Some(status) = self.status.as_mut() {
            status.samples_filtered += samples;
        }
    }

    /// The finished interval (a new one begins at `ended`) and its profile shape, from the
    /// CPU profiles' one.
    pub fn take_interval(&mut self, ended: SystemTime, cpu: Shape) -> (Interval, Shape) {
        let interval = std::mem::replace(&mut self.interval, Interval::new(ended));
        let shape = Shape {
            off_cpu: true,
            ..cpu
        };
        (interval, shape)
    }

    /// The records since the last drain as samples with their estimated off-CPU nanoseconds;
    /// records the ring lost and stacks evicted are counted.
    pub fn drain(&mut self, metrics: &ComponentMetrics) -> Vec<(RawSample, u64)> {
        let Some(sampler) = self.sampler.as_mut() else {
            return Vec::new();
        };
        let scale = self.scale;
        let pairs = &mut self.pairs;
        let mut out = Vec::new();
        sampler.drain(&mut |r| match r {
            Record::Stack {
                switched_out,
                sample,
            } => pairs.stack(switched_out, sample),
            Record::End {
                tid,
                switched_out,
                off_ns,
            } => {
                if let Some(sample) = pairs.end(tid, switched_out) {
                    out.push((sample, scaled(off_ns, scale)));
                }
            }
            Record::Drop { tid, switched_out } => pairs.drop_short(tid, switched_out),
        });
        let stats = sampler.stats();
        if stats.ring_full > self.lost_seen {
            metrics.offcpu_lost.inc_by(stats.ring_full - self.lost_seen);
            self.lost_seen = stats.ring_full;
        }
        if self.pairs.evicted > self.evicted_seen {
            if self.evicted_seen == 0 {
                tracing::warn!(
                    evicted = self.pairs.evicted,
                    waiting = self.pairs.waiting(),
                    "pyroscope.ebpf: too many chosen threads blocked at once: the stacks of the longest blocks were dropped and those blocks will not be reported; lower off_cpu_threshold or follow fewer processes (logged once, counted in pyroscope_ebpf_offcpu_evicted_total)"
                );
            }
            metrics
                .offcpu_evicted
                .inc_by(self.pairs.evicted - self.evicted_seen);
            self.evicted_seen = self.pairs.evicted;
        }
        if let Some(status) = self.status.as_mut() {
            status.bpf = Some(stats);
            status.samples_total += out.len() as u64;
            status.waiting = self.pairs.waiting();
            status.evicted = self.pairs.evicted;
            status.unmatched = self.pairs.unmatched;
        }
        out
    }

    /// Forgets waiting stacks of threads that are gone (see [`pair`]).
    pub fn retain_threads(&mut self) {
        self.pairs.retain_threads(&|pid, tid| {
            std::path::Path::new(&format!("/proc/{pid}/task/{tid}")).exists()
        });
        if let Some(status) = self.status.as_mut() {
            status.waiting = self.pairs.waiting();
            status.orphaned = self.pairs.orphaned;
        }
    }

    pub fn status(&self) -> Option<Status> {
        self.status.clone()
    }
}

/// `off_ns` recorded with probability 1 / `scale`, as an estimate of the real time.
fn scaled(off_ns: u64, scale: f64) -> u64 {
    if scale == 1.0 {
        return off_ns;
    }
    (off_ns as f64 * scale).round().min(u64::MAX as f64) as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_time_is_scaled_by_the_inverse_probability() {
        let cases = [
            (50_000_000, 1.0, 50_000_000),
            (50_000_000, 4.0, 200_000_000),
            (3, 1.0 / 0.3, 10),
            (u64::MAX, 2.0, u64::MAX),
        ];
        for (off, scale, want) in cases {
            assert_eq!(scaled(off, scale), want, "{off} x {scale}");
        }
    }

    #[test]
    fn without_a_threshold_nothing_starts_and_without_bpf_it_fails_loudly() {
        let mut args: Arguments =
            crate::syntax::decode::decode_source("forward_to = []").expect("valid");
        let registry = crate::runtime::metrics::MetricsRegistry::new();
        let metrics = super::super::metrics::EbpfMetrics::get(&registry).component("x");
        let off = OffCpu::start(&args, true, 0, &metrics, &Budget::unlimited());
        assert!(off.status().is_none());
        args.off_cpu_threshold = 0.5;
        let mut failed = OffCpu::start(&args, false, 0, &metrics, &Budget::unlimited());
        let status = failed.status().expect("status");
        assert_eq!(status.state, "failed");
        assert!(
            status
                .error
                .as_deref()
                .is_some_and(|e| e.contains("needs the BPF sampler")),
            "{status:?}"
        );
        assert_eq!(metrics.offcpu_failures.get(), 1);
        // Stopping with the CPU sampler keeps the settings and says why.
        failed.fail("bad filter");
        let status = failed.status().expect("status");
        assert_eq!((status.state, status.probability), ("failed", 0.5));
        assert!(
            status
                .error
                .as_deref()
                .is_some_and(|e| e.contains("bad filter"))
        );
    }

    /// The target map holds 16,384 processes: one more fails the update, which the status
    /// (and so the health) and the counter show until an update succeeds again.
    #[test]
    fn a_failed_filter_update_is_reported_until_one_succeeds_as_root() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: loading the off-CPU program needs root");
            return;
        }
        let mut args: Arguments =
            crate::syntax::decode::decode_source("forward_to = []\noff_cpu_threshold = 0.5")
                .expect("valid");
        args.targets_only = true;
        let registry = crate::runtime::metrics::MetricsRegistry::new();
        let metrics = super::super::metrics::EbpfMetrics::get(&registry).component("x");
        let mut off = OffCpu::start(&args, true, 0, &metrics, &Budget::unlimited());
        let status = off.status().expect("status");
        assert_eq!((status.state, status.error), ("running", None));
        let too_many: HashSet<u32> = (1..=16_385).collect();
        off.set_filter(Some(&too_many), &metrics);
        off.set_filter(Some(&too_many), &metrics);
        let status = off.status().expect("status");
        assert_eq!(status.state, "running");
        assert!(
            status
                .error
                .as_deref()
                .is_some_and(|e| e.contains("updating the processes to follow")),
            "{status:?}"
        );
        assert_eq!(metrics.offcpu_filter_errors.get(), 2);
        off.set_filter(Some(&HashSet::from([1])), &metrics);
        assert_eq!(off.status().expect("status").error, None);
        assert_eq!(metrics.offcpu_filter_errors.get(), 2);
    }
}
