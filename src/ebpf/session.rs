//! The sampling session: one OS thread that owns the sampler and the symbolizer, drains
//! samples every [`DRAIN_PERIOD`], and at every `collect_interval` turns the interval's
//! samples into one profile per process and hands them to the receivers.
//!
//! It runs on its own thread because everything it does blocks: reading /proc, parsing ELF
//! files, map syscalls. Nothing it does can stall the async runtime or other components, and
//! a sampler that cannot start leaves the session idle and reported, not crashed.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use super::args::{Arguments, Comm};
use super::bpf::{self, BpfSampler};
use super::caps::{self, Caps};
use super::metrics::ComponentMetrics;
use super::perf::PerfSampler;
use super::profile::{Interval, Shape};
use super::sample::{RawSample, Sampler};
use super::symbolize::{self, Frame, Symbolizer};
use super::targets::{CONTAINER_LABEL, PID_LABEL, Target, Targets};
use crate::discovery::process::container_id_of_pid;
use crate::profiles::{Appendable as _, FanOut, Profile};

/// How often the sampler is drained: sizes the BPF ring, bounds the delay before a sample's
/// process is symbolized (processes that exit sooner lose their user frames).
pub const DRAIN_PERIOD: Duration = Duration::from_millis(200);
/// How often processes are matched against container targets again (new processes in a
/// container must be found before they can be sampled).
const RESCAN_PERIOD: Duration = Duration::from_secs(5);
/// Deepest user stack the samplers copy (`MAX_FRAMES` in bpf/profile.bpf.c); a stack this deep
/// was cut by the limit.
const MAX_USER_DEPTH: usize = 127;
/// Name of the synthetic frame marking a user stack that did not reach its root.
pub const TRUNCATED_FRAME: &str = "[truncated]";

/// Functions that legitimately end a user stack (frame-pointer unwinding reached the root).
const ROOT_FUNCTIONS: &[&str] = &[
    "_start",
    "__libc_start_main",
    "__libc_start_call_main",
    "start_thread",
    "clone",
    "clone3",
    "__clone",
    "__clone3",
    "thread_start",
    "runtime.goexit",
    "runtime.goexit.abi0",
    "runtime.mstart",
    "runtime.mstart0",
    "runtime.rt0_go",
    "runtime.rt0_go.abi0",
    "runtime.mstart.abi0",
    "runtime.systemstack_switch",
];

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
    pub symbolizer: Option<serde_json::Value>,
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
            symbolizer: None,
        }
    }
}

struct Shared {
    stop: AtomicBool,
    /// New arguments, taken by the thread at its next tick.
    pending: Mutex<Option<Arguments>>,
    status: Mutex<Status>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The running session; dropping it stops the thread.
pub struct Session {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Session {
    pub fn start(
        args: Arguments,
        out: Arc<FanOut>,
        metrics: ComponentMetrics,
    ) -> std::io::Result<Session> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            pending: Mutex::new(None),
            status: Mutex::new(Status::default()),
        });
        let s = shared.clone();
        let thread = std::thread::Builder::new()
            .name("pyroscope.ebpf".into())
            .spawn(move || Runner::new(args, out, metrics, s).run())?;
        Ok(Session {
            shared,
            thread: Some(thread),
        })
    }

    pub fn update(&self, args: Arguments) {
        *lock(&self.shared.pending) = Some(args);
    }

    pub fn status(&self) -> Status {
        lock(&self.shared.status).clone()
    }

    /// Stops the thread and waits for it (at most one drain period).
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
    symbolizer: Symbolizer,
    interval: Interval,
    /// The target of each process sampled this interval (None: not profiled).
    pid_targets: HashMap<u32, Option<Target>>,
    /// Container id of each process seen, read once from its cgroup.
    containers: HashMap<u32, Option<String>>,
    followed: HashSet<u32>,
    next_collect: Instant,
    next_scan: Instant,
    lost_seen: u64,
}

impl Runner {
    fn new(
        args: Arguments,
        out: Arc<FanOut>,
        metrics: ComponentMetrics,
        shared: Arc<Shared>,
    ) -> Self {
        let targets = Targets::new(&args.targets, args.targets_only);
        let symbolizer = Symbolizer::new(symbolize::Options {
            demangle: args.demangle,
            kernel: args.kernel_frames,
        });
        let now = Instant::now();
        Runner {
            next_collect: now + args.collect_interval,
            args,
            targets,
            out,
            metrics,
            shared,
            sampler: None,
            bpf_stats: None,
            symbolizer,
            interval: Interval::new(SystemTime::now()),
            pid_targets: HashMap::new(),
            containers: HashMap::new(),
            followed: HashSet::new(),
            next_scan: now,
            lost_seen: 0,
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
                self.collect();
                self.next_collect += self.args.collect_interval;
                // After a long stall (a suspended VM), do not try to catch up.
                if self.next_collect < Instant::now() {
                    self.next_collect = Instant::now() + self.args.collect_interval;
                }
            }
        }
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
        self.followed.clear();
        self.metrics.sessions.inc();
        let caps = Caps::current();
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
            }) {
                Ok(s) => {
                    let s = Arc::new(Mutex::new(s));
                    let stats = s.clone();
                    self.bpf_stats = Some(Box::new(move || lock(&stats).stats()));
                    self.sampler = Some(Box::new(SharedBpf(s)));
                    self.set_mode(Mode::Bpf);
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
        self.refresh_filter();
    }

    fn apply(&mut self, args: Arguments) {
        let restart = args.sampler_key() != self.args.sampler_key();
        if args.demangle != self.args.demangle || args.kernel_frames != self.args.kernel_frames {
            self.symbolizer = Symbolizer::new(symbolize::Options {
                demangle: args.demangle,
                kernel: args.kernel_frames,
            });
        }
        self.targets = Targets::new(&args.targets, args.targets_only);
        self.args = args;
        self.pid_targets.clear();
        if restart {
            // Samples so far were taken at the old rate; start the interval afresh.
            self.interval = Interval::new(SystemTime::now());
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
            let r = sampler.set_filter(Some(&pids));
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
            drop(status);
            self.metrics.sessions_failing.inc();
            self.sampler = None;
        }
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
            if !self.add(s) {
                unmatched += 1;
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
    }

    /// Counts one sample; false when its process has no target.
    fn add(&mut self, s: RawSample) -> bool {
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
        let comm = if self.args.comm == Comm::None {
            [0u8; 16]
        } else {
            s.comm
        };
        let symbolizer = &mut self.symbolizer;
        let comm_frame = self.args.comm.frame();
        self.interval.add(s.pid, comm, &s.kernel, &s.user, || {
            frames(symbolizer, &s, comm_frame)
        });
        true
    }

    fn collect(&mut self) {
        let ended = SystemTime::now();
        let interval = std::mem::replace(&mut self.interval, Interval::new(ended));
        let shape = Shape {
            period_ns: (1_000_000_000 / self.args.sample_rate.max(1)) as i64,
            comm_label: self.args.comm.label(),
            pid_label: self.args.pid_label,
        };
        let mut batch = Vec::new();
        for p in interval.finish(shape, ended) {
            let Some(Some(target)) = self.pid_targets.get(&p.pid) else {
                continue;
            };
            let mut labels: Vec<(String, String)> = target.labels.to_vec();
            labels.push((PID_LABEL.to_string(), p.pid.to_string()));
            let container = target
                .container_id
                .clone()
                .or_else(|| self.containers.get(&p.pid).cloned().flatten());
            if let Some(id) = container {
                labels.push((CONTAINER_LABEL.to_string(), id));
            }
            let service = labels
                .iter()
                .find(|(k, _)| k == "service_name")
                .map(|(_, v)| v.clone())
                .unwrap_or_default();
            let raw = crate::pprof::gzip(&p.pprof, crate::pprof::DEFAULT_LEVEL);
            self.metrics.pprof(&service);
            self.metrics.pprof_bytes.inc_by(raw.len() as u64);
            self.metrics.pprof_samples.inc_by(p.samples);
            let mut profile = Profile::new(labels, raw);
            profile.received_at = ended;
            batch.push(profile);
        }
        let sent = batch.len() as u64;
        if !batch.is_empty() {
            self.out.append(batch);
        }
        // Processes that are gone need no per-process state any more; their symbols were
        // resolved when their samples arrived.
        let alive = |pid: u32| std::path::Path::new(&format!("/proc/{pid}")).exists();
        self.symbolizer.retain_pids(&alive);
        self.containers.retain(|&pid, _| alive(pid));
        self.pid_targets.clear();
        let mut status = lock(&self.shared.status);
        status.profiles_total += sent;
        status.last_collect = Some(crate::runtime::timefmt::rfc3339_millis(ended));
        status.symbolizer = serde_json::to_value(self.symbolizer.stats()).ok();
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
}

/// A sample's frames in pprof order (leaf first): kernel, user, the truncation marker, and
/// the thread name as the root when asked for.
fn frames(symbolizer: &mut Symbolizer, s: &RawSample, comm_frame: bool) -> Vec<Frame> {
    let kernel = if s.kernel.is_empty() {
        Vec::new()
    } else {
        symbolizer.kernel(&s.kernel)
    };
    let user = if s.user.is_empty() {
        Vec::new()
    } else {
        symbolizer.user(s.pid, &s.user)
    };
    let comm = comm_frame.then_some(&s.comm);
    assemble(kernel, user, s.user.len(), comm)
}

/// Joins symbolized frames: a user stack that does not end in a root function (frame-pointer
/// unwinding stopped early, or hit the depth limit) gets a [`TRUNCATED_FRAME`] so that
/// flame graphs show it as cut, not as a short stack.
fn assemble(
    kernel: Vec<Frame>,
    user: Vec<Frame>,
    user_depth: usize,
    comm: Option<&[u8; 16]>,
) -> Vec<Frame> {
    let mut out = kernel;
    if !user.is_empty() {
        let complete = user_depth < MAX_USER_DEPTH
            && user
                .last()
                .is_some_and(|f| ROOT_FUNCTIONS.contains(&&*f.function));
        out.extend(user);
        if !complete {
            out.push(Frame {
                function: TRUNCATED_FRAME.into(),
                module: "".into(),
            });
        }
    }
    if let Some(comm) = comm {
        let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
        out.push(Frame {
            function: String::from_utf8_lossy(&comm[..end]).into(),
            module: "".into(),
        });
    }
    out
}

/// Every numeric entry of /proc.
fn all_pids() -> Vec<u32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> Frame {
        Frame {
            function: name.into(),
            module: "m".into(),
        }
    }

    fn names(frames: &[Frame]) -> Vec<&str> {
        frames.iter().map(|f| &*f.function).collect()
    }

    #[test]
    fn stacks_that_miss_their_root_are_marked_truncated() {
        let mut comm = [0u8; 16];
        comm[..4].copy_from_slice(b"spin");
        // (kernel, user, user depth, comm, expected frames)
        type Case<'a> = (
            Vec<Frame>,
            Vec<Frame>,
            usize,
            Option<&'a [u8; 16]>,
            Vec<&'a str>,
        );
        let cases: Vec<Case> = vec![
            // Frame pointers all the way: complete.
            (
                vec![],
                vec![f("hot"), f("main"), f("__libc_start_call_main")],
                3,
                None,
                vec!["hot", "main", "__libc_start_call_main"],
            ),
            (
                vec![],
                vec![
                    f("main.hot"),
                    f("main.main"),
                    f("runtime.main"),
                    f("runtime.goexit"),
                ],
                4,
                None,
                vec!["main.hot", "main.main", "runtime.main", "runtime.goexit"],
            ),
            // No frame pointers: the walk stopped in the middle.
            (
                vec![],
                vec![f("crunch"), f("[unknown]")],
                2,
                None,
                vec!["crunch", "[unknown]", TRUNCATED_FRAME],
            ),
            // Cut by the depth limit even if the last frame looks like a root.
            (
                vec![],
                vec![f("a"), f("_start")],
                MAX_USER_DEPTH,
                None,
                vec!["a", "_start", TRUNCATED_FRAME],
            ),
            // Kernel frames first; a kernel thread has no user part and no marker; the thread
            // name is the root.
            (
                vec![f("do_syscall_64")],
                vec![f("read"), f("main"), f("_start")],
                3,
                Some(&comm),
                vec!["do_syscall_64", "read", "main", "_start", "spin"],
            ),
            (
                vec![f("worker_thread"), f("kthread")],
                vec![],
                0,
                None,
                vec!["worker_thread", "kthread"],
            ),
        ];
        for (kernel, user, depth, comm, want) in cases {
            let got = assemble(kernel, user, depth, comm);
            assert_eq!(names(&got), want);
        }
    }
}
