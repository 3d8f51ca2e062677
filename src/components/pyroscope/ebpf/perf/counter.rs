//! Opening CPU-clock sampling counters, degrading to user frames when the kernel refuses more.

use std::io;

use perf_event::events::Software;
use perf_event::{Builder, SampleFlag, Sampler as Ring};
use tracing::warn;

use super::problems::Problems;
use super::procfs;

/// Ring size of a per-thread counter. At 97 Hz one thread writes at most ~100 samples a second of
/// at most ~1 KiB (127 frames), so this holds over half a second of the worst case and several
/// seconds of typical stacks. Rings are locked memory: unprivileged, they are charged to
/// `kernel.perf_event_mlock_kb` per CPU and then `RLIMIT_MEMLOCK`, so a big ring per thread
/// would run out after a few dozen threads.
const THREAD_RING_BYTES: usize = 64 * 1024;

/// Ring size of a per-CPU counter (no filter): one CPU carries every thread that runs on it.
const CPU_RING_BYTES: usize = 256 * 1024;

/// What one counter observes.
#[derive(Clone, Copy, Debug)]
pub(super) enum Target {
    /// One thread, on whichever CPU it runs.
    Thread(u32),
    /// Every thread, on one CPU.
    Cpu(usize),
}

#[derive(Debug, thiserror::Error)]
pub(super) enum OpenError {
    #[error("perf_event_open failed: {0}")]
    Open(#[source] io::Error),
    #[error("mapping the sample ring failed: {0}")]
    Map(#[source] io::Error),
    #[error("enabling the counter failed: {0}")]
    Enable(#[source] io::Error),
}

impl OpenError {
    /// The thread exited between being listed and being opened.
    pub(super) fn is_gone(&self) -> bool {
        matches!(self, Self::Open(error) if error.raw_os_error() == Some(libc::ESRCH))
    }

    /// The kernel refused the counter for lack of privileges.
    pub(super) fn is_denied(&self) -> bool {
        matches!(self, Self::Open(error) if is_denied(error))
    }

    /// What the user can do about it, when that is known.
    pub(super) fn hint(&self) -> Option<&'static str> {
        match self {
            Self::Open(error) if is_denied(error) => Some(
                "without CAP_PERFMON only processes of the same user can be sampled, and only \
                 while kernel.perf_event_paranoid <= 2",
            ),
            Self::Open(error) if error.raw_os_error() == Some(libc::EMFILE) => {
                Some("one file descriptor is needed per thread: raise the open-files limit")
            }
            Self::Map(error) if is_denied(error) || error.raw_os_error() == Some(libc::ENOMEM) => {
                Some(
                    "the locked memory for perf rings (kernel.perf_event_mlock_kb per CPU, then \
                     RLIMIT_MEMLOCK) is used up",
                )
            }
            _ => None,
        }
    }

    pub(super) fn into_io(self) -> io::Error {
        match self {
            Self::Open(error) | Self::Map(error) | Self::Enable(error) => error,
        }
    }
}

fn is_denied(error: &io::Error) -> bool {
    matches!(error.raw_os_error(), Some(libc::EACCES | libc::EPERM))
}

/// Builds counters with the sampler's settings, remembering when kernel frames were refused so
/// that later counters do not ask again.
#[derive(Debug)]
pub(super) struct Opener {
    frequency_hz: u64,
    kernel_frames: bool,
    kernel_refused: bool,
}

impl Opener {
    pub(super) fn new(frequency_hz: u64, kernel_frames: bool) -> Self {
        Self {
            // Zero would switch the kernel to period mode with a period of zero, which it rejects.
            frequency_hz: frequency_hz.max(1),
            kernel_frames,
            kernel_refused: false,
        }
    }

    /// Opens, maps and enables a counter for `target`. When kernel frames are wanted but refused,
    /// retries with user frames only and records that once in `problems`.
    pub(super) fn open(
        &mut self,
        target: Target,
        problems: &mut Problems,
    ) -> Result<Ring, OpenError> {
        if !self.kernel_frames || self.kernel_refused {
            return self.open_once(target, false);
        }
        match self.open_once(target, true) {
            Err(error) if error.is_denied() => {
                // If this fails too, the refusal was about the target (another user's process),
                // not about kernel frames: report that instead and keep asking for kernel frames.
                let ring = self.open_once(target, false)?;
                self.kernel_refused = true;
                let paranoid = procfs::paranoid_text();
                let message = format!(
                    "kernel frames are not permitted ({error}): they need CAP_PERFMON or \
                     kernel.perf_event_paranoid <= 1 ({paranoid}); collecting user frames only, \
                     and time spent in the kernel is not sampled"
                );
                if problems.record_kernel_frames(message) {
                    warn!(
                        error = %error,
                        paranoid = %paranoid,
                        "kernel frames not permitted; sampling user frames only"
                    );
                }
                Ok(ring)
            }
            other => other,
        }
    }

    fn open_once(&self, target: Target, kernel: bool) -> Result<Ring, OpenError> {
        let mut builder = Builder::new(Software::CPU_CLOCK);
        let ring_bytes = match target {
            Target::Thread(tid) => {
                // Thread ids come from /proc and fit a pid_t; one that does not names no thread.
                let tid = libc::pid_t::try_from(tid)
                    .map_err(|_| OpenError::Open(io::Error::from_raw_os_error(libc::ESRCH)))?;
                builder.observe_pid(tid).any_cpu();
                THREAD_RING_BYTES
            }
            Target::Cpu(cpu) => {
                builder.any_pid().one_cpu(cpu);
                CPU_RING_BYTES
            }
        };
        builder
            .sample_frequency(self.frequency_hz)
            .sample(SampleFlag::IP | SampleFlag::TID | SampleFlag::CALLCHAIN)
            // Unprivileged at paranoid 2 the kernel refuses any counter that counts kernel time,
            // so without kernel frames the samples taken in the kernel are given up too.
            .exclude_kernel(!kernel)
            .exclude_callchain_kernel(!kernel)
            // Idle time is no process's CPU time; per CPU it would otherwise fill the rings.
            .exclude_idle(true)
            // Enabled only once the ring exists, so no sample is taken with nowhere to go.
            .enabled(false);
        let counter = builder.build().map_err(OpenError::Open)?;
        let mut ring = counter.sampled(ring_bytes).map_err(OpenError::Map)?;
        ring.enable().map_err(OpenError::Enable)?;
        Ok(ring)
    }

    /// Whether counters opened from now on collect kernel frames.
    pub(super) fn collects_kernel(&self) -> bool {
        self.kernel_frames && !self.kernel_refused
    }
}
