//! CPython frames (`python_enabled`): finds the interpreter of each target process, tells the
//! BPF program where it is so that every sample of the process carries its Python frames
//! (walked at the tick: reading them later would give another moment's stack), then names
//! those frames from their code objects and splices them into the native stack.
//!
//! * [`detect`]: is a process CPython, where is `_PyRuntime`, which version.
//! * [`offsets`]: the struct offsets per minor version (3.11, 3.12 tables; 3.13's own
//!   `_Py_DebugOffsets`), and the BPF map value.
//! * [`code`]: a code object's name, file and line table, read from the process.
//! * [`splice`]: Python frames in place of the interpreter's native activations.
//!
//! Failures are loud: a CPython the walk does not support, or whose interpreter cannot be
//! found, is logged once, counted in [`Stats`] (shown in the debug info) and listed in the
//! component's problems.

pub mod code;
pub mod detect;
pub mod offsets;
pub mod splice;

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::FileExt as _;
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;

pub use offsets::PyProc;

use super::sample::{PyStack, RawSample, Sampler};
use super::symbolize::Frame;
use code::Code;
use offsets::{Entry, Layout};
use splice::PyFrame;

/// Most code objects cached over all processes, and their bytes: a long-running service
/// with thousands of functions stays well under this; past it the cache starts over.
const MAX_CODES: usize = 65_536;
const MAX_CODE_BYTES: usize = 32 << 20;
/// Problems kept for the debug info (newest last).
const MAX_PROBLEMS: usize = 32;
/// The name of a frame whose code object could not be read.
pub const UNREADABLE: &str = "[python: unreadable code object]";

/// What the walk knows about one process.
enum Proc {
    /// Not CPython (or `python_enabled = false` when it was seen).
    NotPython,
    /// Registered with the BPF program.
    Walked { layout: Layout, mem: File },
    /// CPython we cannot walk; the reason is in the problems.
    Failed,
}

/// Counts for the debug info.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Processes whose frames are walked.
    pub processes_walked: usize,
    /// CPython processes that cannot be walked (see the problems).
    pub processes_failed: u64,
    /// Code objects cached, and their bytes.
    pub codes: usize,
    pub code_bytes: usize,
    /// Frames whose code object could not be read.
    pub unreadable_frames: u64,
}

/// Marks where a stack key's Python part starts (no user address is this high).
const PY_KEY: u64 = u64::MAX - 1;

/// The addresses a sample's stack is counted under: the user addresses, then its Python
/// frames (code object and instruction), so that stacks differing only in Python frames
/// (or lines) are told apart.
pub fn stack_key(user: &[u64], python: &PyStack) -> Vec<u64> {
    let mut key = user.to_vec();
    if !python.frames.is_empty() {
        key.push(PY_KEY);
        for &(code, instr) in &python.frames {
            key.push(code);
            key.push(instr);
        }
    }
    key
}

/// The session's Python state.
pub struct Python {
    enabled: bool,
    /// `pyroscope_ebpf_python_processes_total{result="walked"}` and `{result="failed"}`.
    walked: Counter,
    failed_total: Counter,
    procs: HashMap<u32, Proc>,
    codes: HashMap<(u32, u64), Arc<Code>>,
    code_bytes: usize,
    problems: Vec<String>,
    failed: u64,
    unreadable: u64,
}

impl Python {
    pub fn new(enabled: bool, walked: Counter, failed: Counter) -> Self {
        Python {
            enabled,
            walked,
            failed_total: failed,
            procs: HashMap::new(),
            codes: HashMap::new(),
            code_bytes: 0,
            problems: Vec::new(),
            failed: 0,
            unreadable: 0,
        }
    }

    /// Switches the walk on or off (`python_enabled` changed): processes are examined again.
    pub fn set_enabled(&mut self, enabled: bool, sampler: &mut Option<Box<dyn Sampler>>) {
        if enabled == self.enabled {
            return;
        }
        self.enabled = enabled;
        if let Some(s) = sampler.as_mut() {
            for (&pid, p) in &self.procs {
                if matches!(p, Proc::Walked { .. }) {
                    let _ = s.set_python(pid, None);
                }
            }
        }
        self.procs.clear();
        self.codes.clear();
        self.code_bytes = 0;
    }

    /// Forgets every process (a new sampler starts with an empty map).
    pub fn reset(&mut self) {
        self.procs.clear();
    }

    /// Examines process `pid` once (a target): registers its interpreter with the sampler when
    /// it is a CPython we can walk, reports it when it is one we cannot.
    pub fn observe(&mut self, pid: u32, sampler: &mut dyn Sampler) {
        if !self.enabled || self.procs.contains_key(&pid) {
            return;
        }
        let proc = match detect::detect(pid) {
            Ok(None) => Proc::NotPython,
            Ok(Some(found)) => self.register(pid, &found, sampler),
            Err(e) => {
                self.fail(pid, &e.to_string());
                Proc::Failed
            }
        };
        self.procs.insert(pid, proc);
    }

    fn register(&mut self, pid: u32, found: &detect::Found, sampler: &mut dyn Sampler) -> Proc {
        let mem = match File::open(format!("/proc/{pid}/mem")) {
            Ok(m) => m,
            Err(e) => {
                self.fail(pid, &format!("opening /proc/{pid}/mem: {e}"));
                return Proc::Failed;
            }
        };
        let (major, minor) = found.major_minor();
        let layout = offsets::layout(major, minor).or_else(|| {
            let mut b = vec![0u8; offsets::DEBUG_OFFSETS_LEN];
            mem.read_exact_at(&mut b, found.runtime).ok()?;
            offsets::from_debug_offsets(&b)
        });
        let Some(layout) = layout else {
            let why = format!(
                "CPython {} ({}) is not supported by the Python frame walk (3.11, 3.12 and 3.13 without free threading are)",
                found.version_text(),
                found.file.display()
            );
            self.fail(pid, &why);
            return Proc::Failed;
        };
        let walk = PyProc {
            runtime: found.runtime,
            ..layout.walk
        };
        if let Err(e) = sampler.set_python(pid, Some(&walk)) {
            self.fail(pid, &e.to_string());
            return Proc::Failed;
        }
        tracing::info!(
            pid,
            ?layout,
            version = %found.version_text(),
            file = %found.file.display(),
            "walking the CPython frames of this process"
        );
        self.walked.inc();
        Proc::Walked { layout, mem }
    }

    fn fail(&mut self, pid: u32, why: &str) {
        tracing::warn!(pid, reason = %why, "Python frames of this process cannot be shown");
        self.failed += 1;
        self.failed_total.inc();
        if self.problems.len() >= MAX_PROBLEMS {
            self.problems.remove(0);
        }
        self.problems.push(format!("python: pid {pid}: {why}"));
    }

    /// The sample's frames with its Python frames spliced in.
    pub fn splice(&mut self, s: &RawSample, native: Vec<Frame>) -> Vec<Frame> {
        if s.python.frames.is_empty() {
            return native;
        }
        let python = self.name(s.pid, &s.python);
        splice::splice(native, &python)
    }

    /// Names a walk's frames from their code objects (cached per process and address).
    fn name(&mut self, pid: u32, stack: &PyStack) -> Vec<PyFrame> {
        let Some(Proc::Walked { layout, mem }) = self.procs.get(&pid) else {
            return Vec::new();
        };
        let mut out: Vec<PyFrame> = Vec::with_capacity(stack.frames.len());
        for &(code, raw) in &stack.frames {
            let marker = (raw >> 56) as u8;
            let instr = raw & 0x00ff_ffff_ffff_ffff;
            let entry = match layout.entry {
                Entry::IsEntry => marker != 0,
                Entry::CStackShim(owner) => {
                    if marker == owner {
                        // The shim ends the activation below it.
                        if let Some(last) = out.last_mut() {
                            last.entry = true;
                        }
                        continue;
                    }
                    false
                }
            };
            let named = match self.codes.get(&(pid, code)) {
                Some(c) => Some(c.clone()),
                None => match code::read_code(mem, code, &layout.code) {
                    Ok(c) => {
                        let c = Arc::new(c);
                        if self.codes.len() >= MAX_CODES || self.code_bytes >= MAX_CODE_BYTES {
                            self.codes.clear();
                            self.code_bytes = 0;
                        }
                        self.code_bytes += c.size();
                        self.codes.insert((pid, code), c.clone());
                        Some(c)
                    }
                    Err(e) => {
                        tracing::debug!(pid, code = code, error = %e, "reading a code object");
                        None
                    }
                },
            };
            let frame = match named {
                Some(c) => splice::frame(&c.qualname, &c.filename, c.line(instr)),
                None => {
                    self.unreadable += 1;
                    Frame {
                        function: Arc::from(UNREADABLE),
                        module: Arc::from(""),
                        source: None,
                    }
                }
            };
            out.push(PyFrame { frame, entry });
        }
        out
    }

    /// Forgets processes that are gone.
    pub fn retain_pids(
        &mut self,
        alive: &dyn Fn(u32) -> bool,
        sampler: &mut Option<Box<dyn Sampler>>,
    ) {
        let gone: Vec<u32> = self.procs.keys().copied().filter(|&p| !alive(p)).collect();
        if gone.is_empty() {
            return;
        }
        for pid in &gone {
            if let (Some(Proc::Walked { .. }), Some(s)) = (self.procs.remove(pid), sampler.as_mut())
            {
                let _ = s.set_python(*pid, None);
            }
        }
        self.codes.retain(|(pid, _), _| !gone.contains(pid));
        self.code_bytes = self.codes.values().map(|c| c.size()).sum();
    }

    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    pub fn stats(&self) -> Stats {
        Stats {
            processes_walked: self
                .procs
                .values()
                .filter(|p| matches!(p, Proc::Walked { .. }))
                .count(),
            processes_failed: self.failed,
            codes: self.codes.len(),
            code_bytes: self.code_bytes,
            unreadable_frames: self.unreadable,
        }
    }
}
