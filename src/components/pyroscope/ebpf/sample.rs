//! What a sampler hands the session: one raw stack per sampling tick.

use std::collections::HashSet;

/// One sample: the thread that was on CPU and its stacks, leaf first, as raw addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RawSample {
    /// The process (thread group) id.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// The thread's `comm`, NUL-padded.
    pub comm: [u8; 16],
    /// User-space return addresses, leaf first; empty for kernel threads or when not collected.
    pub user: Vec<u64>,
    /// Kernel addresses, leaf first; empty when the sample was taken in user mode or kernel
    /// frames are off.
    pub kernel: Vec<u64>,
    /// The thread's user registers, when the sampler copied its stack.
    pub regs: Option<UserRegs>,
    /// The top of the thread's user stack, from `regs.sp` upwards, for unwinding with
    /// call-frame information; empty when not copied (then `user` is all there is).
    pub stack: Vec<u8>,
    /// The CPython frames the BPF program walked at the tick (empty for other processes and
    /// for the perf fallback, which cannot read them at sample time).
    pub python: PyStack,
}

/// A thread's CPython frames at one tick, innermost first, as raw pointers into the process.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PyStack {
    /// (code object, last instruction with the entry marker in its top byte); see
    /// `struct py_frame` in bpf/profile.bpf.c.
    pub frames: Vec<(u64, u64)>,
    /// `PY_*` flags of the walk (0: no walk was tried).
    pub flags: u32,
}

/// The user registers x86_64 unwinding starts from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserRegs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}

/// A source of samples, drained periodically by the session.
pub trait Sampler: Send {
    /// Restricts sampling to these processes (`None`: every process on the host).
    fn set_filter(&mut self, pids: Option<&HashSet<u32>>) -> Result<(), SamplerError>;

    /// Hands every sample collected since the last call to `each`.
    fn drain(&mut self, each: &mut dyn FnMut(RawSample));

    /// Tells the sampler where process `pid`'s CPython interpreter is, so that its samples
    /// carry their Python frames (`None`: forget the process). Only the BPF sampler can walk
    /// them at sample time.
    fn set_python(
        &mut self,
        pid: u32,
        _proc: Option<&super::python::PyProc>,
    ) -> Result<(), SamplerError> {
        Err(SamplerError::Unsupported(format!(
            "pid {pid}: the perf_event_open fallback cannot read Python frames at sample time"
        )))
    }

    /// Problems worth showing in the component's debug info (e.g. a process that could not be
    /// followed), newest last. Empty when all is well.
    fn problems(&self) -> Vec<String> {
        Vec::new()
    }
}

/// Why a sampler could not start or change its filter.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    #[error("{0}")]
    Unsupported(String),
    #[error("{what}: {source}")]
    Os {
        what: String,
        #[source]
        source: std::io::Error,
    },
}
