//! The sampling session: one OS thread that owns the sampler and the symbolizer, drains
//! samples every [`DRAIN_PERIOD`], and at every `collect_interval` turns the interval's
//! samples into one profile per process and hands them to the receivers.
//!
//! It runs on its own thread because everything it does blocks: reading /proc, parsing ELF
//! files, map syscalls. Nothing it does can stall the async runtime or other components, and
//! a sampler that cannot start leaves the session idle and reported, not crashed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::args::{Arguments, Comm};
use super::bpf::{self, BpfSampler};
use super::caps::{self, Caps};
use super::health::{self, Access, IntervalReport, Trouble};
use super::metrics::ComponentMetrics;
use super::offcpu::{self, OffCpu};
use super::perf::PerfSampler;
use super::profile::{Interval, Shape};
use super::python::{self, Python};
use super::sample::{RawSample, Sampler};
use super::stack::{TRUNCATED_ADDR, frames};
pub use super::status::{Filtered, Findings, Mode, Status};
use super::symbolize::{self, Symbolizer};
use super::targets::{CONTAINER_LABEL, PID_LABEL, Target, Targets};
use super::unwind::{End, Unwinder};
use crate::budget::Budget;
use crate::profiles::{Appendable as _, FanOut, Profile};
use crate::sync::lock;
use crate::targets::container::container_id_of_pid;

mod judge;

use judge::user_frames;

/// How often the sampler is drained: sizes the BPF ring, bounds the delay before a sample's
/// process is symbolized (processes that exit sooner lose their user frames).
pub const DRAIN_PERIOD: Duration = Duration::from_millis(200);
/// How often processes are matched against container targets again (new processes in a
/// container must be found before they can be sampled).
const RESCAN_PERIOD: Duration = Duration::from_secs(5);
/// How long before the targets last changed a process may have started and still be one that
/// discovery had not seen: its walk of /proc and the evaluation of the pipeline take a moment
/// before the targets reach us.
const DISCOVERY_LAG: Duration = Duration::from_secs(5);
/// How long the profiles of a process discovery has not reported yet wait for it (its default
/// `refresh_interval` is 60 s, plus [`DISCOVERY_LAG`]) before they go out with the default
/// target's labels.
const DEFER_LIMIT: Duration = Duration::from_secs(70);
/// Profiles that may wait for discovery at once; past this they go out at once (a fork storm
/// must not hold an unbounded number of profiles in memory).
const MAX_DEFERRED: usize = 4096;
/// The symbolizer's module name of vDSO frames.
const VDSO_MODULE: &str = "[vdso]";
/// Bytes of user stack the BPF program copies per sample for unwinding with call-frame
/// information. `SCRAPER_EBPF_UNWIND=fp` keeps only the frame-pointer walk: the overhead
/// benchmark compares the two modes with it.
fn stack_bytes() -> u32 {
    if std::env::var("SCRAPER_EBPF_UNWIND").is_ok_and(|v| v == "fp") {
        0
    } else {
        bpf::STACK_MAX
    }
}

struct Shared {
    stop: AtomicBool,
    /// New arguments, taken by the thread at its next tick.
    pending: Mutex<Option<Arguments>>,
    status: Mutex<Status>,
}

/// The running session; dropping it stops the thread.
pub struct Session {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Session {
    /// Starts the sampling thread; `budget` bounds the unwind tables it caches.
    pub fn start(
        args: Arguments,
        out: Arc<FanOut>,
        metrics: ComponentMetrics,
        budget: Budget,
    ) -> std::io::Result<Session> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            pending: Mutex::new(None),
            status: Mutex::new(Status::default()),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pyroscope.ebpf".into())
            .spawn(move || Runner::new(args, out, metrics, s, budget).run())?;
        Ok(Session {
            shared,
            thread: Some(thread),
        })
    }

    pub fn update(&self, args: Arguments) {
        *lock(&self.shared.pending) = Some(args);
    }

    /// The debug info: `problems` lists the session's findings first, then the sampler's.
    pub fn status(&self) -> Status {
        let mut status = lock(&self.shared.status).clone();
        let sampler = std::mem::take(&mut status.problems);
        status.problems = status
            .findings
            .problems
            .iter()
            .cloned()
            .chain(sampler)
            .collect();
        status
    }

    /// Stops the thread and waits for it: at most one drain period, then the last drain and
    /// the partial interval's profiles, handed on before this returns.
    pub fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.stop();
    }
}

struct Runner {
    args: Arguments,
    targets: Targets,
    out: Arc<FanOut>,
    metrics: ComponentMetrics,
    shared: Arc<Shared>,
    sampler: Option<Box<dyn Sampler>>,
    bpf_stats: Option<Box<dyn Fn() -> bpf::Stats + Send>>,
    /// Off-CPU profiling (`off_cpu_threshold > 0`), with its own interval.
    offcpu: OffCpu,
    /// The memory budget: unwind tables, Python code objects and off-CPU stacks are held in it.
    budget: Budget,
    symbolizer: Symbolizer,
    unwinder: Unwinder,
    python: Python,
    interval: Interval,
    /// The target of each process sampled this interval (None: not profiled).
    pid_targets: HashMap<u32, Option<Target>>,
    /// Container id of each process seen, read once from its cgroup.
    containers: HashMap<u32, Option<String>>,
    followed: HashSet<u32>,
    next_collect: Instant,
    next_scan: Instant,
    lost_seen: u64,
    books: Books,
}

/// What the session keeps to account for its samples and judge its own health.
struct Books {
    caps: Caps,
    /// Whether the missing capabilities were logged (once per session).
    caps_noted: bool,
    /// When the current interval began.
    began: Instant,
    /// When the targets last changed: processes started after that (less [`DISCOVERY_LAG`])
    /// may not have been seen by discovery yet.
    targets_updated: Instant,
    /// Targets samples of this interval were taken for, kept when `pid_targets` is cleared by
    /// a target update: a process that exits mid-interval leaves the targets at discovery's
    /// next refresh, yet its samples were taken as a target's.
    sample_targets: HashMap<u32, Target>,
    /// Profiles of processes discovery has not reported yet.
    deferred: Vec<Deferred>,
    /// The BPF program's `filtered` counter at the last collection.
    kernel_filtered_seen: u64,
    /// `samples_unmatched` at the last collection.
    unmatched_seen: u64,
    /// The rule the last whole interval failed.
    trouble: Option<Trouble>,
}

impl Books {
    fn new(now: Instant) -> Self {
        Books {
            caps: Caps::current(),
            caps_noted: false,
            began: now,
            targets_updated: now,
            sample_targets: HashMap::new(),
            deferred: Vec::new(),
            kernel_filtered_seen: 0,
            unmatched_seen: 0,
            trouble: None,
        }
    }
}

/// A finished profile of a process that no target named yet, waiting for discovery.
struct Deferred {
    pid: u32,
    /// Gzipped pprof.
    raw: Vec<u8>,
    samples: u64,
    /// End of the interval it covers.
    ended: SystemTime,
    /// When it started waiting.
    since: Instant,
    /// An `offcpu` profile rather than a `process_cpu` one.
    off_cpu: bool,
}

/// Why an interval ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Collect {
    /// A whole `collect_interval` passed: sent, and judged for health.
    Regular,
    /// The sampler restarts with new settings: the partial interval is sent.
    Restart,
    /// The session stops: the partial interval and every waiting profile are sent.
    Final,
}

/// Where the profile of one process goes.
enum Attribution {
    Target(Target),
    /// Held for discovery to report the process.
    Defer,
    /// No target and `targets_only`: not profiled (counted as filtered).
    Drop,
}

impl Runner {
    fn new(
        args: Arguments,
        out: Arc<FanOut>,
        metrics: ComponentMetrics,
        shared: Arc<Shared>,
        budget: Budget,
    ) -> Self {
        let targets = Targets::new(&args.targets, args.targets_only);
        let symbolizer = Symbolizer::new(symbolize::Options {
            demangle: args.demangle,
            kernel: args.kernel_frames,
        });
        let now = Instant::now();
        let python = Python::new(
            args.python,
            &budget,
            python::Counters {
                walked: metrics.python_walked.clone(),
                failed: metrics.python_failed.clone(),
                no_thread: metrics.python_no_thread.clone(),
            },
        );
        Runner {
            next_collect: now + args.collect_interval,
            args,
            targets,
            out,
            metrics,
            shared,
            sampler: None,
            bpf_stats: None,
            offcpu: OffCpu::off(),
            symbolizer,
            unwinder: Unwinder::new(budget.clone()),
            budget,
            python,
            interval: Interval::new(SystemTime::now()),
            pid_targets: HashMap::new(),
            containers: HashMap::new(),
            followed: HashSet::new(),
            next_scan: now,
            lost_seen: 0,
            books: Books::new(now),
        }
    }

    fn run(mut self) {
        self.start_sampler();
        while !self.shared.stop.load(Ordering::Relaxed) {
            std::thread::sleep(DRAIN_PERIOD);
            let pending = lock(&self.shared.pending).take();
            if let Some(args) = pending {
                self.apply(args);
            }
            if self.sampler.is_none() {
                continue;
            }
            let now = Instant::now();
            if now >= self.next_scan {
                self.refresh_filter();
                self.next_scan = now + RESCAN_PERIOD;
            }
            self.drain();
            if Instant::now() >= self.next_collect {
                self.collect(Collect::Regular);
                self.next_collect += self.args.collect_interval;
                // After a long stall (a suspended VM), do not try to catch up.
                if self.next_collect < Instant::now() {
                    self.next_collect = Instant::now() + self.args.collect_interval;
                }
            }
        }
        // The partial interval's samples are as real as any: drain and send them before the
        // sampler goes. `Session::stop` waits for this, and the component's `run` for that,
        // so they reach the receivers before those shut down.
        if self.sampler.is_some() {
            self.drain();
        }
        self.collect(Collect::Final);
        tracing::debug!("pyroscope.ebpf session stopped");
    }

    fn set_mode(&self, mode: Mode) {
        lock(&self.shared.status).mode = mode;
    }

    /// Starts BPF if the capabilities allow it and the kernel accepts the program, else the
    /// perf_event_open fallback, else reports exactly what is missing.
    fn start_sampler(&mut self) {
        self.sampler = None;
        self.bpf_stats = None;
        self.offcpu = OffCpu::off();
        lock(&self.shared.status).off_cpu = None;
        self.followed.clear();
        // A new sampler has an empty Python map: every process is examined again.
        self.python.reset();
        self.metrics.sessions.inc();
        let caps = Caps::current();
        self.note_capabilities(caps);
        let missing = caps.missing_for_bpf();
        let forced_perf = std::env::var("SCRAPER_EBPF_SAMPLER").is_ok_and(|v| v == "perf");
        let reason = if forced_perf {
            "SCRAPER_EBPF_SAMPLER=perf".to_string()
        } else if missing.is_empty() {
            match BpfSampler::load(bpf::Options {
                frequency: self.args.sample_rate,
                kernel_frames: self.args.kernel_frames,
                filter: self.args.targets_only,
                drain_period_ms: DRAIN_PERIOD.as_millis() as u64,
                stack_bytes: stack_bytes(),
            }) {
                Ok(s) => {
                    let s = Arc::new(Mutex::new(s));
                    let stats = s.clone();
                    self.bpf_stats = Some(Box::new(move || lock(&stats).stats()));
                    self.sampler = Some(Box::new(SharedBpf(s)));
                    self.set_mode(Mode::Bpf);
                    self.offcpu =
                        OffCpu::start(&self.args, true, stack_bytes(), &self.metrics, &self.budget);
                    self.refresh_filter();
                    return;
                }
                Err(e) => {
                    tracing::warn!(error = %e, "BPF sampler could not start; falling back to perf_event_open");
                    format!("BPF refused: {e}")
                }
            }
        } else {
            format!(
                "BPF sampling needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN); missing {}",
                missing.join(" and ")
            )
        };
        if !self.args.targets_only && !caps.perfmon() {
            let paranoid = caps::perf_event_paranoid()
                .map_or_else(|| "unknown".to_string(), |p| p.to_string());
            let error = format!(
                "{reason}; profiling every process (targets_only = false) without BPF needs CAP_PERFMON (kernel.perf_event_paranoid is {paranoid})"
            );
            tracing::error!(%error, "pyroscope.ebpf cannot sample");
            self.metrics.sessions_failing.inc();
            self.set_mode(Mode::Failed { error });
            return;
        }
        let kernel = self.args.kernel_frames;
        let reason = if caps.perfmon() {
            format!("{reason}; sampling with perf_event_open")
        } else {
            format!(
                "{reason}; sampling with perf_event_open: only processes of this user, user-space frames only"
            )
        };
        tracing::warn!(%reason, "pyroscope.ebpf uses the perf_event_open fallback");
        self.sampler = Some(Box::new(PerfSampler::new(self.args.sample_rate, kernel)));
        self.set_mode(Mode::Perf { reason });
        self.offcpu = OffCpu::start(
            &self.args,
            false,
            stack_bytes(),
            &self.metrics,
            &self.budget,
        );
        self.refresh_filter();
    }

    fn apply(&mut self, args: Arguments) {
        let restart = args.sampler_key() != self.args.sampler_key();
        if restart && self.sampler.is_some() {
            // The samples so far were taken with the old settings (rate, filter, kernel
            // frames): send them as a shorter interval of their own before the sampler changes.
            self.drain();
            self.collect(Collect::Restart);
        }
        if args.targets != self.args.targets {
            self.books.targets_updated = Instant::now();
        }
        if args.demangle != self.args.demangle || args.kernel_frames != self.args.kernel_frames {
            self.symbolizer = Symbolizer::new(symbolize::Options {
                demangle: args.demangle,
                kernel: args.kernel_frames,
            });
        }
        self.targets = Targets::new(&args.targets, args.targets_only);
        self.python.set_enabled(args.python, &mut self.sampler);
        self.args = args;
        self.keep_sample_targets();
        self.pid_targets.clear();
        if restart {
            let now = Instant::now();
            self.interval = Interval::new(SystemTime::now());
            self.books.began = now;
            self.next_collect = now + self.args.collect_interval;
            // A new sampler counts from zero.
            self.lost_seen = 0;
            self.books.kernel_filtered_seen = 0;
            self.start_sampler();
        } else {
            self.refresh_filter();
        }
        self.next_scan = Instant::now() + RESCAN_PERIOD;
    }

    fn container_of(containers: &mut HashMap<u32, Option<String>>, pid: u32) -> Option<String> {
        containers
            .entry(pid)
            .or_insert_with(|| container_id_of_pid(pid))
            .clone()
    }

    /// Tells the sampler which processes to follow: the pids targets name, plus processes
    /// whose cgroup names a target's container.
    fn refresh_filter(&mut self) {
        self.metrics.active_targets.set(self.targets.len() as i64);
        let Some(sampler) = self.sampler.as_mut() else {
            return;
        };
        let result = if self.targets.profiles_everything() {
            self.offcpu.set_filter(None, &self.metrics);
            sampler.set_filter(None)
        } else {
            let mut pids: HashSet<u32> = self.targets.pids().collect();
            if self.targets.has_containers() {
                for pid in all_pids() {
                    if pids.contains(&pid) {
                        continue;
                    }
                    let id = Self::container_of(&mut self.containers, pid);
                    if self.targets.resolve(pid, || id).is_some() {
                        pids.insert(pid);
                    }
                }
            }
            // Python processes are registered with the sampler before it follows them: a
            // sample taken in between would have no Python frames (the examination takes
            // ~20 ms a process).
            for &pid in &pids {
                self.python.observe(pid, sampler.as_mut());
            }
            let r = sampler.set_filter(Some(&pids));
            self.offcpu.set_filter(Some(&pids), &self.metrics);
            self.followed = pids;
            r
        };
        let mut status = lock(&self.shared.status);
        status.targets = self.targets.len();
        status.followed_pids = self.followed.len();
        if let Err(e) = result {
            tracing::error!(error = %e, "pyroscope.ebpf could not set the processes to sample");
            status.mode = Mode::Failed {
                error: e.to_string(),
            };
            self.offcpu.fail(&e.to_string());
            status.off_cpu = self.offcpu.status();
            drop(status);
            self.metrics.sessions_failing.inc();
            self.sampler = None;
            return;
        }
        status.off_cpu = self.offcpu.status();
    }

    fn drain(&mut self) {
        let Some(sampler) = self.sampler.as_mut() else {
            return;
        };
        let mut samples = Vec::new();
        sampler.drain(&mut |s| samples.push(s));
        let problems = sampler.problems();
        let mut unmatched = 0u64;
        let total = samples.len() as u64;
        for s in samples {
            if !self.add(s, None) {
                unmatched += 1;
            }
        }
        for (s, off_ns) in self.offcpu.drain(&self.metrics) {
            if !self.add(s, Some(off_ns)) {
                self.offcpu.filtered(1, &self.metrics);
            }
        }
        let bpf = self.bpf_stats.as_ref().map(|f| f());
        if let Some(stats) = bpf
            && stats.ring_full > self.lost_seen
        {
            self.metrics.lost.inc_by(stats.ring_full - self.lost_seen);
            self.lost_seen = stats.ring_full;
        }
        let mut status = lock(&self.shared.status);
        status.samples_total += total;
        status.samples_unmatched += unmatched;
        status.bpf = bpf;
        status.problems = problems;
        status.off_cpu = self.offcpu.status();
        status
            .problems
            .extend(self.python.problems().iter().cloned());
    }

    /// Counts one sample (an off-CPU one with its nanoseconds); false when its process has
    /// no target.
    fn add(&mut self, s: RawSample, off_ns: Option<u64>) -> bool {
        let containers = &mut self.containers;
        let targets = &self.targets;
        let target = self
            .pid_targets
            .entry(s.pid)
            .or_insert_with(|| {
                targets
                    .resolve(s.pid, || Self::container_of(containers, s.pid))
                    .cloned()
            })
            .is_some();
        if !target {
            return false;
        }
        if let Some(sampler) = self.sampler.as_deref_mut() {
            self.python.observe(s.pid, sampler);
        }
        let comm = if self.args.comm == Comm::None {
            [0u8; 16]
        } else {
            s.comm
        };
        // With a stack copy, the user stack is what the unwinder makes of it; without one
        // (frame-pointer mode, the perf fallback) it is the frame-pointer walk.
        let mut unwound = Vec::new();
        let complete = s.regs.is_some().then(|| {
            let end = self.unwinder.unwind(s.pid, s.regs, &s.stack, &mut unwound);
            self.metrics.unwound(end, off_ns.is_some());
            if end != End::Root {
                unwound.push(TRUNCATED_ADDR);
            }
            end == End::Root
        });
        let user: &[u64] = if complete.is_some() {
            &unwound
        } else {
            &s.user
        };
        let symbolizer = &mut self.symbolizer;
        let python = &mut self.python;
        let comm_frame = self.args.comm.frame();
        let key = python.stack_key(s.pid, user, &s.python);
        let interval = match off_ns {
            Some(_) => &mut self.offcpu.interval,
            None => &mut self.interval,
        };
        let weight = off_ns.unwrap_or(0);
        interval.add_weighted(s.pid, comm, &s.kernel, &key, weight, || {
            let addrs = match user.split_last() {
                Some((&TRUNCATED_ADDR, rest)) => rest,
                _ => user,
            };
            python.splice(&s, frames(symbolizer, &s, addrs, complete, comm_frame))
        });
        true
    }

    /// Ends the interval: one profile per process, labelled with the target that names the
    /// process now (discovery may have caught up with it since it was sampled), else the one
    /// it was sampled for, else the default target (`targets_only = false`; a process newer
    /// than the targets waits for discovery first, see [`Runner::attribute`]). Profiles of
    /// processes that are no target are counted as filtered. A whole interval is then judged
    /// for health.
    fn collect(&mut self, why: Collect) {
        let ended = SystemTime::now();
        let interval = std::mem::replace(&mut self.interval, Interval::new(ended));
        let began = std::mem::replace(&mut self.books.began, Instant::now());
        // One drain period of slack: the loop collects at the first tick past the deadline.
        let whole =
            why == Collect::Regular && began.elapsed() + DRAIN_PERIOD >= self.args.collect_interval;
        let frames = user_frames(&interval);
        let samples = interval.samples();
        let shape = Shape {
            period_ns: (1_000_000_000 / self.args.sample_rate.max(1)) as i64,
            comm_label: self.args.comm.label(),
            pid_label: self.args.pid_label,
            off_cpu: false,
        };
        let (off_interval, off_shape) = self.offcpu.take_interval(ended, shape);
        self.keep_sample_targets();
        let mut batch = Vec::new();
        // Samples of profiles no target takes: CPU ones, off-CPU ones (counted apart).
        let mut dropped = [0u64; 2];
        // Waiting profiles first: they are the older ones.
        for d in std::mem::take(&mut self.books.deferred) {
            match self.attribute(d.pid, Some(d.since), why) {
                Attribution::Target(t) => {
                    batch.push(self.profile(&t, d.pid, d.raw, d.samples, d.ended, d.off_cpu));
                }
                Attribution::Defer => self.books.deferred.push(d),
                Attribution::Drop => dropped[usize::from(d.off_cpu)] += d.samples,
            }
        }
        let cpu = interval
            .finish(shape, ended)
            .into_iter()
            .map(|p| (p, false));
        let off = off_interval.finish(off_shape, ended).into_iter();
        for (p, off_cpu) in cpu.chain(off.map(|p| (p, true))) {
            match self.attribute(p.pid, None, why) {
                Attribution::Target(t) => {
                    let raw = crate::pprof::gzip(&p.pprof, crate::pprof::DEFAULT_LEVEL);
                    batch.push(self.profile(&t, p.pid, raw, p.samples, ended, off_cpu));
                }
                Attribution::Defer => self.books.deferred.push(Deferred {
                    pid: p.pid,
                    raw: crate::pprof::gzip(&p.pprof, crate::pprof::DEFAULT_LEVEL),
                    samples: p.samples,
                    ended,
                    since: Instant::now(),
                    off_cpu,
                }),
                Attribution::Drop => dropped[usize::from(off_cpu)] += p.samples,
            }
        }
        let sent = batch.len() as u64;
        if !batch.is_empty() {
            self.out.append(batch);
        }
        self.books.sample_targets.clear();
        self.count_filtered(dropped[0]);
        self.offcpu.filtered(dropped[1], &self.metrics);
        if whole {
            self.judge(samples, &frames);
        }
        // Processes that are gone need no per-process state any more; their symbols were
        // resolved when their samples arrived.
        let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
        self.symbolizer.retain_pids(&alive);
        self.unwinder.retain_pids(&alive);
        self.offcpu.retain_threads();
        self.python.retain_pids(&alive, &mut self.sampler);
        self.containers.retain(|&pid, _| alive(pid));
        self.pid_targets.clear();
        let mut status = lock(&self.shared.status);
        status.profiles_total += sent;
        status.last_collect = Some(crate::gocompat::time::rfc3339_millis(ended));
        status.symbolizer = serde_json::to_value(self.symbolizer.stats()).ok();
        status.unwinder = serde_json::to_value(self.unwinder.stats()).ok();
        status.python = serde_json::to_value(self.python.stats()).ok();
        status.findings.deferred_profiles = self.books.deferred.len();
        status.off_cpu = self.offcpu.status();
    }

    /// Who process `pid`'s profile belongs to; `waiting_since` is set for a profile that
    /// already waits for discovery.
    ///
    /// With `targets_only = false` and targets that name processes by pid (discovery.process),
    /// a process that started after the targets last changed has not been seen by discovery
    /// yet: labelling it with the default target would file its CPU time under
    /// `ebpf/unspecified` although discovery will name it at its next refresh. Its profile
    /// waits for that, up to [`DEFER_LIMIT`], while the process lives (an exited process that
    /// discovery never saw will never be named). Stopping sends everything.
    fn attribute(&mut self, pid: u32, waiting_since: Option<Instant>, why: Collect) -> Attribution {
        let containers = &mut self.containers;
        if let Some(t) = self
            .targets
            .named(pid, || Self::container_of(containers, pid))
        {
            return Attribution::Target(t.clone());
        }
        if let Some(t) = self.books.sample_targets.get(&pid) {
            return Attribution::Target(t.clone());
        }
        let Some(default) = self.targets.default_target() else {
            return Attribution::Drop;
        };
        let unseen = || {
            health::process_age(pid)
                .is_some_and(|age| age < self.books.targets_updated.elapsed() + DISCOVERY_LAG)
        };
        let wait = why != Collect::Final
            && self.targets.has_pids()
            && waiting_since.is_none_or(|since| since.elapsed() < DEFER_LIMIT)
            && self.books.deferred.len() < MAX_DEFERRED
            && unseen();
        if wait {
            Attribution::Defer
        } else {
            Attribution::Target(default.clone())
        }
    }

    /// Remembers the targets that `pid_targets` holds before it is cleared (see
    /// [`Books::sample_targets`]); the default target is not worth remembering.
    fn keep_sample_targets(&mut self) {
        for (&pid, target) in &self.pid_targets {
            if let Some(t) = target
                && (t.pid.is_some() || t.container_id.is_some())
            {
                self.books
                    .sample_targets
                    .entry(pid)
                    .or_insert_with(|| t.clone());
            }
        }
    }

    /// One profile of process `pid` for `target`: its labels plus the process's own.
    fn profile(
        &self,
        target: &Target,
        pid: u32,
        raw: Vec<u8>,
        samples: u64,
        ended: SystemTime,
        off_cpu: bool,
    ) -> Profile {
        // The target's shared set plus this process's labels: no target label is copied.
        let mut labels = target.labels.clone();
        if off_cpu {
            labels.set("__name__", offcpu::PROFILE_NAME);
        }
        labels.set(PID_LABEL, &pid.to_string());
        let container = target
            .container_id
            .clone()
            .or_else(|| self.containers.get(&pid).cloned().flatten());
        if let Some(id) = container {
            labels.set(CONTAINER_LABEL, &id);
        }
        let service = labels.get("service_name").unwrap_or_default();
        self.metrics.pprof(service, raw.len() as u64, samples);
        let mut profile = Profile::with_labels(labels, raw);
        profile.received_at = ended;
        profile
    }

    /// Counts the samples no profile holds: those the BPF program's filter skipped, those
    /// drained for no target, and `dropped`, the samples of profiles that found no target at
    /// collection.
    fn count_filtered(&mut self, dropped: u64) {
        let kernel = self.bpf_stats.as_ref().map_or(0, |stats| stats().filtered);
        let not_followed = kernel.saturating_sub(self.books.kernel_filtered_seen);
        self.books.kernel_filtered_seen = kernel;
        let mut status = lock(&self.shared.status);
        let unmatched = status
            .samples_unmatched
            .saturating_sub(self.books.unmatched_seen);
        self.books.unmatched_seen = status.samples_unmatched;
        let no_target = unmatched + dropped;
        status.findings.samples_filtered.not_followed += not_followed;
        status.findings.samples_filtered.no_target += no_target;
        drop(status);
        self.metrics.filtered_not_followed.inc_by(not_followed);
        self.metrics.filtered_no_target.inc_by(no_target);
    }
}

/// The sampler behind a mutex, so the session can read BPF counters through another handle.
struct SharedBpf(Arc<Mutex<BpfSampler>>);

impl Sampler for SharedBpf {
    fn set_filter(
        &mut self,
        pids: Option<&HashSet<u32>>,
    ) -> Result<(), super::sample::SamplerError> {
        lock(&self.0).set_filter(pids)
    }
    fn drain(&mut self, each: &mut dyn FnMut(RawSample)) {
        lock(&self.0).drain(each)
    }
    fn problems(&self) -> Vec<String> {
        lock(&self.0).problems()
    }
    fn set_python(
        &mut self,
        pid: u32,
        proc: Option<&super::python::PyProc>,
    ) -> Result<(), super::sample::SamplerError> {
        lock(&self.0).set_python(pid, proc)
    }
}

/// Every numeric entry of /proc.
fn all_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}
