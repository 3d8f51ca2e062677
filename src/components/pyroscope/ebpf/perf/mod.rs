//! The fallback CPU sampler for when BPF is not permitted: `perf_event_open` software CPU-clock
//! counters, each with its own sample ring, read on every [`Sampler::drain`].
//!
//! With a filter it opens one counter per thread of every followed process (the entries of
//! `/proc/<pid>/task`); without one, one counter per online CPU that sees every process.
//!
//! What it can do:
//! * sample the followed threads at the configured frequency (per second of CPU time), with
//!   user callchains and, when permitted, kernel callchains;
//! * follow threads started after the filter was set: each drain lists the threads of the
//!   followed processes again, opens counters for new ones and closes those of exited ones;
//! * keep going when a process cannot be followed (another user's, or already exited): it is
//!   skipped and the reason shown in [`Sampler::problems`].
//!
//! What it cannot do:
//! * Unprivileged (no CAP_PERFMON), it can only follow processes of its own uid, and at
//!   `kernel.perf_event_paranoid = 2` (the usual default) only user frames: kernel frames are
//!   then dropped with a recorded problem, and so are the samples that would have landed while
//!   the thread ran in the kernel, so a syscall-heavy process looks less busy than it is.
//! * Sampling the whole host needs CAP_PERFMON or `kernel.perf_event_paranoid <= 0`; otherwise
//!   [`Sampler::set_filter`] with `None` fails with [`SamplerError::Unsupported`]. CPUs brought
//!   online later are not sampled.
//! * New threads are noticed only at the next drain, so their first moments are not sampled.
//!   The counters are not inherited because an inherited counter also follows forked child
//!   processes, which are not in the filter.
//! * It costs one file descriptor and one 64 KiB ring of locked memory per followed thread.
//!   Unprivileged, that memory comes out of `kernel.perf_event_mlock_kb` per CPU and then
//!   `RLIMIT_MEMLOCK`; threads that cannot get a ring are skipped with a recorded problem.
//! * A thread's name is read once, at its first sample; later renames are not seen.

mod chain;
mod counter;
mod problems;
mod procfs;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, HashSet};
use std::io;

use perf_event::Sampler as Ring;
use perf_event::data::Record;
use tracing::{debug, warn};

use crate::components::pyroscope::ebpf::sample::{RawSample, Sampler, SamplerError};
use counter::{OpenError, Opener, Target};
use problems::Problems;
use procfs::Comms;

/// CPU sampling with one `perf_event_open` counter per followed thread (see the module docs).
pub struct PerfSampler {
    opener: Opener,
    following: Following,
    comms: Comms,
    problems: Problems,
    lost: u64,
}

enum Following {
    /// The filtered processes by pid; nothing at all before the first filter.
    Processes(HashMap<u32, Process>),
    /// Every process, one counter per online CPU.
    Host(Vec<Ring>),
}

/// The counters of one followed process.
#[derive(Default)]
struct Process {
    threads: HashMap<u32, Ring>,
    /// Threads that could not be opened. Not retried while they live: whatever refused them
    /// (permissions, limits, an exiting thread) would most likely refuse them again.
    passed_over: HashSet<u32>,
}

impl Process {
    /// Brings the counters in line with the threads now in `/proc/<pid>/task`. Returns the error
    /// of the first thread that could not be followed for a reason other than having exited;
    /// fails with `NotFound` when the process is gone.
    fn sync(
        &mut self,
        pid: u32,
        opener: &mut Opener,
        problems: &mut Problems,
        comms: &mut Comms,
    ) -> io::Result<Option<OpenError>> {
        let tids = procfs::tasks(pid)?;
        let live: HashSet<u32> = tids.iter().copied().collect();
        self.threads.retain(|tid, _| {
            let alive = live.contains(tid);
            if !alive {
                comms.forget(*tid);
            }
            alive
        });
        self.passed_over.retain(|tid| live.contains(tid));

        let mut failure = None;
        for tid in tids {
            if self.threads.contains_key(&tid) || self.passed_over.contains(&tid) {
                continue;
            }
            if failure.is_some() {
                // The reasons a thread is refused (permissions, descriptor or memory limits)
                // hold for its siblings too: do not ask the kernel again for each of them.
                self.passed_over.insert(tid);
                continue;
            }
            match opener.open(Target::Thread(tid), problems) {
                Ok(ring) => {
                    self.threads.insert(tid, ring);
                }
                Err(error) => {
                    self.passed_over.insert(tid);
                    if !error.is_gone() {
                        failure = Some(error);
                    }
                }
            }
        }
        Ok(failure)
    }

    fn close(&mut self, comms: &mut Comms) {
        for tid in self.threads.keys() {
            comms.forget(*tid);
        }
        self.threads.clear();
        self.passed_over.clear();
    }
}

impl PerfSampler {
    /// A sampler that takes `frequency_hz` samples per second of CPU time of each thread, with
    /// kernel frames when `kernel_frames` is set and the kernel allows it. It follows nothing
    /// until [`Sampler::set_filter`] is called.
    pub fn new(frequency_hz: u64, kernel_frames: bool) -> Self {
        Self {
            opener: Opener::new(frequency_hz, kernel_frames),
            following: Following::Processes(HashMap::new()),
            comms: Comms::default(),
            problems: Problems::default(),
            lost: 0,
        }
    }

    /// Samples the kernel could not write because a ring was full, since the start.
    pub fn lost(&self) -> u64 {
        self.lost
    }

    /// Open counters, each one file descriptor and one ring.
    pub fn counters(&self) -> usize {
        match &self.following {
            Following::Processes(processes) => processes
                .values()
                .map(|process| process.threads.len())
                .sum(),
            Following::Host(rings) => rings.len(),
        }
    }

    /// Whether new counters collect kernel frames (asked for and not refused so far).
    pub fn collects_kernel_frames(&self) -> bool {
        self.opener.collects_kernel()
    }

    fn follow_processes(&mut self, pids: &HashSet<u32>) {
        let Self {
            opener,
            following,
            comms,
            problems,
            ..
        } = self;
        if let Following::Host(_) = following {
            *following = Following::Processes(HashMap::new());
            comms.clear();
        }
        let Following::Processes(processes) = following else {
            return;
        };

        processes.retain(|pid, process| {
            let keep = pids.contains(pid);
            if !keep {
                process.close(comms);
                problems.forget_process(*pid);
            }
            keep
        });

        for &pid in pids {
            if processes.contains_key(&pid) {
                continue;
            }
            let mut process = Process::default();
            let reason = match process.sync(pid, opener, problems, comms) {
                Ok(Some(error)) => Some(describe(&error)),
                Ok(None) if process.threads.is_empty() => {
                    Some("no thread could be followed (the process is exiting)".to_owned())
                }
                Ok(None) => None,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    Some("process not found (it may have exited)".to_owned())
                }
                Err(error) => Some(format!("listing /proc/{pid}/task failed: {error}")),
            };
            if let Some(reason) = reason {
                report(problems, pid, reason);
            }
            // Kept even when nothing could be opened, so the next drains pick up whatever it
            // starts later without another set_filter.
            processes.insert(pid, process);
        }
    }

    fn follow_host(&mut self) -> Result<(), SamplerError> {
        if let Following::Host(_) = self.following {
            return Ok(());
        }
        let cpus = procfs::online_cpus();
        let mut rings = Vec::with_capacity(cpus.len());
        for cpu in cpus {
            match self.opener.open(Target::Cpu(cpu), &mut self.problems) {
                Ok(ring) => rings.push(ring),
                Err(error) if error.is_denied() => {
                    return Err(SamplerError::Unsupported(format!(
                        "sampling every process without BPF needs CAP_PERFMON or \
                         kernel.perf_event_paranoid <= 0 ({}); perf_event_open on CPU {cpu}: {}",
                        procfs::paranoid_text(),
                        error.into_io(),
                    )));
                }
                Err(error) => {
                    let what = match &error {
                        OpenError::Map(_) => format!("mapping the sample ring of CPU {cpu}"),
                        _ => format!("opening the CPU-clock counter of CPU {cpu}"),
                    };
                    return Err(SamplerError::Os {
                        what,
                        source: error.into_io(),
                    });
                }
            }
        }
        // Switched only once every CPU has its counter, so a refusal leaves the old filter.
        self.following = Following::Host(rings);
        self.comms.clear();
        self.problems.forget_processes();
        Ok(())
    }
}

/// A recorded problem's text for `error`, with what can be done about it when that is known.
fn describe(error: &OpenError) -> String {
    match error.hint() {
        Some(hint) => format!("{error} ({hint})"),
        None => error.to_string(),
    }
}

/// Records a problem with process `pid`, logging it the first time.
fn report(problems: &mut Problems, pid: u32, reason: String) {
    let message = format!("pid {pid}: {reason}");
    if problems.record_process(pid, message) {
        warn!(pid, error = %reason, "cannot sample process with perf_event_open; skipping it");
    }
}

/// Where drained samples go, and what reading rings updates besides.
struct Sink<'a> {
    comms: &'a mut Comms,
    lost: &'a mut u64,
    each: &'a mut dyn FnMut(RawSample),
}

impl Sink<'_> {
    /// Hands every record waiting in `ring` on, leaving the ring empty.
    fn read(&mut self, ring: &mut Ring) {
        while let Some(record) = ring.next_record() {
            match record.parse_record() {
                Ok(Record::Sample(sample)) => {
                    let (Some(pid), Some(tid)) = (sample.pid(), sample.tid()) else {
                        continue;
                    };
                    let frames = chain::split(sample.callchain().unwrap_or_default());
                    if frames.user.is_empty() && frames.kernel.is_empty() {
                        continue;
                    }
                    (self.each)(RawSample {
                        pid,
                        tid,
                        comm: self.comms.get(pid, tid),
                        user: frames.user,
                        kernel: frames.kernel,
                        regs: None,
                        stack: Vec::new(),
                        python: Default::default(),
                    });
                }
                Ok(Record::Lost(lost)) => *self.lost = self.lost.saturating_add(lost.lost),
                Ok(Record::LostSamples(lost)) => *self.lost = self.lost.saturating_add(lost.lost),
                Ok(_) => {}
                Err(error) => debug!(error = %error, "skipping a perf record that does not parse"),
            }
        }
    }
}

impl Sampler for PerfSampler {
    fn set_filter(&mut self, pids: Option<&HashSet<u32>>) -> Result<(), SamplerError> {
        match pids {
            Some(pids) => {
                self.follow_processes(pids);
                Ok(())
            }
            None => self.follow_host(),
        }
    }

    fn drain(&mut self, each: &mut dyn FnMut(RawSample)) {
        let Self {
            opener,
            following,
            comms,
            problems,
            lost,
        } = self;
        let mut sink = Sink { comms, lost, each };
        match following {
            Following::Host(rings) => {
                for ring in rings {
                    sink.read(ring);
                }
            }
            Following::Processes(processes) => {
                // Rings first: the counters of exited threads still hold their last samples.
                for process in processes.values_mut() {
                    for ring in process.threads.values_mut() {
                        sink.read(ring);
                    }
                }
                for (&pid, process) in processes.iter_mut() {
                    match process.sync(pid, opener, problems, sink.comms) {
                        Ok(Some(error)) => report(problems, pid, describe(&error)),
                        Ok(None) => {}
                        Err(error) if error.kind() == io::ErrorKind::NotFound => {
                            if !process.threads.is_empty() {
                                debug!(pid, "followed process exited");
                            }
                            process.close(sink.comms);
                        }
                        // Keep what is open; the next drain lists the threads again.
                        Err(error) => debug!(pid, error = %error, "listing threads failed"),
                    }
                }
            }
        }
    }

    fn problems(&self) -> Vec<String> {
        self.problems.messages()
    }
}
