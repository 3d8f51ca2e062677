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

pub mod cache;
pub mod code;
pub mod detect;
pub mod offsets;
pub mod splice;

use std::collections::HashMap;
use std::fs::File;
use std::os::unix::fs::{FileExt as _, MetadataExt as _};
use std::sync::Arc;

use prometheus_client::metrics::counter::Counter;

use crate::budget::Budget;

pub use offsets::PyProc;

use super::sample::{PyStack, RawSample, Sampler};
use super::symbolize::Frame;
use cache::CodeCache;
use code::Code;
use offsets::{Entry, Layout};
use splice::PyFrame;

/// Problems kept for the debug info (newest last).
const MAX_PROBLEMS: usize = 32;
/// The name of a frame whose code object could not be read.
pub const UNREADABLE: &str = "[python: unreadable code object]";
/// Where a walk cut at `PY_MAX_FRAMES` lost its outer frames (as native truncation shows it).
pub const TRUNCATED: &str = "[truncated]";

/// `PY_*` flags of a walk (bpf/profile.bpf.c).
pub const PY_NO_THREAD: u32 = 2;
pub const PY_TRUNCATED: u32 = 4;
/// The entry byte of the frame the BPF program records for an activation it met being entered
/// (`PY_ENTERING_MARK`): no code, and an empty group of frames for that activation.
pub const ENTERING: u8 = 0xfe;
/// A process is reported when at least this many of its walks were seen and most of them
/// found no thread state (a layout or namespace problem, not a thread CPython does not know).
const NO_THREAD_MIN_WALKS: u64 = 20;

/// What the walk knows about one process.
enum Proc {
    /// Not CPython (or `python_enabled = false` when it was seen).
    NotPython,
    /// Its maps or executable could not be read: nothing is known, and it is no Python problem.
    Inaccessible,
    /// Registered with the BPF program.
    Walked {
        layout: Layout,
        mem: File,
        /// Walks seen, and those that found no thread state; `reported` once it is a problem.
        walks: u64,
        no_thread: u64,
        reported: bool,
    },
    /// CPython we cannot walk; the reason is in the problems.
    Failed,
}

/// The file a process runs, (device, inode) of `/proc/<pid>/exe`: when it changes the process
/// has exec'd (a shim exec'ing python, or python exec'ing something else) and is examined anew.
type ExeId = Option<(u64, u64)>;

fn exe_id(pid: u32) -> ExeId {
    std::fs::metadata(format!("/proc/{pid}/exe"))
        .ok()
        .map(|m| (m.dev(), m.ino()))
}

/// The counters [`Python`] updates.
pub struct Counters {
    /// `pyroscope_ebpf_python_processes_total{result="walked"}` and `{result="failed"}`.
    pub walked: Counter,
    pub failed: Counter,
    /// `pyroscope_ebpf_python_walks_no_thread_total`: samples of walked processes whose
    /// thread had no thread state in the main interpreter.
    pub no_thread: Counter,
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
    /// Processes whose maps or executable could not be read (not counted as failures).
    pub processes_inaccessible: usize,
    /// Samples of walked processes whose thread had no thread state.
    pub no_thread_walks: u64,
}

/// Marks where a stack key's Python part starts (no user address is this high).
const PY_KEY: u64 = u64::MAX - 1;
/// The top byte of a frame's raw instruction: its entry marker.
const MARKER: u64 = 0xff << 56;

/// A key's entry for one frame: its line (with the entry marker) when `line` knows it, else the
/// raw instruction, so that the many instructions of one line count as one stack.
fn key_frame(code: u64, raw: u64, line: impl FnOnce(u64, u64) -> Option<i32>) -> [u64; 2] {
    let instr = raw & !MARKER;
    match line(code, instr) {
        // Bit 55 set: a line, never an address (user addresses fit in 47 bits).
        Some(l) => [code, (raw & MARKER) | 1 << 55 | u64::from(l as u32)],
        None => [code, raw],
    }
}

/// The session's Python state.
pub struct Python {
    enabled: bool,
    counters: Counters,
    /// Each process with the executable it ran when it was examined.
    procs: HashMap<u32, (ExeId, Proc)>,
    codes: CodeCache,
    problems: Vec<String>,
    failed: u64,
    unreadable: u64,
    no_thread: u64,
}

impl Python {
    pub fn new(enabled: bool, budget: &Budget, counters: Counters) -> Self {
        Python {
            enabled,
            counters,
            procs: HashMap::new(),
            codes: CodeCache::new(budget),
            problems: Vec::new(),
            failed: 0,
            unreadable: 0,
            no_thread: 0,
        }
    }

    /// The addresses a sample's stack is counted under: the user addresses, then its Python
    /// frames (code object, and line where the code object can be read), so that stacks
    /// differing only in Python frames or lines are told apart, but not every bytecode
    /// instruction of a line. Also counts the walk for the process's no-thread check.
    pub fn stack_key(&mut self, pid: u32, user: &[u64], python: &PyStack) -> Vec<u64> {
        self.count_walk(pid, python.flags);
        let mut key = user.to_vec();
        if !python.frames.is_empty() {
            key.push(PY_KEY);
            key.push(u64::from(python.flags & PY_TRUNCATED));
            for &(code, raw) in &python.frames {
                if (raw >> 56) as u8 == ENTERING {
                    key.extend_from_slice(&[code, raw]);
                    continue;
                }
                let f = key_frame(code, raw, |c, i| self.code(pid, c).map(|c| c.line(i)));
                key.extend_from_slice(&f);
            }
        }
        key
    }

    fn count_walk(&mut self, pid: u32, flags: u32) {
        if flags == 0 {
            return;
        }
        let Some((
            _,
            Proc::Walked {
                walks, no_thread, ..
            },
        )) = self.procs.get_mut(&pid)
        else {
            return;
        };
        *walks += 1;
        if flags & PY_NO_THREAD != 0 {
            *no_thread += 1;
            self.no_thread += 1;
            self.counters.no_thread.inc();
        }
    }

    /// Switches the walk on or off (`python_enabled` changed): processes are examined again.
    pub fn set_enabled(&mut self, enabled: bool, sampler: &mut Option<Box<dyn Sampler>>) {
        if enabled == self.enabled {
            return;
        }
        self.enabled = enabled;
        if let Some(s) = sampler.as_mut() {
            for (&pid, (_, p)) in &self.procs {
                if matches!(p, Proc::Walked { .. }) {
                    let _ = s.set_python(pid, None);
                }
            }
        }
        self.procs.clear();
        self.codes.clear();
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
        let exe = exe_id(pid);
        let proc = match detect::detect(pid) {
            Ok(None) => Proc::NotPython,
            Ok(Some(found)) => self.register(pid, &found, sampler),
            Err(e) if e.is_inaccessible() => {
                tracing::debug!(pid, error = %e, "cannot tell whether this process is CPython");
                Proc::Inaccessible
            }
            Err(e) => {
                self.fail(pid, &e.to_string());
                Proc::Failed
            }
        };
        self.procs.insert(pid, (exe, proc));
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
        self.counters.walked.inc();
        Proc::Walked {
            layout,
            mem,
            walks: 0,
            no_thread: 0,
            reported: false,
        }
    }

    fn fail(&mut self, pid: u32, why: &str) {
        tracing::warn!(pid, reason = %why, "Python frames of this process cannot be shown");
        self.failed += 1;
        self.counters.failed.inc();
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
        let mut python = self.name(s.pid, &s.python);
        if s.python.flags & PY_TRUNCATED != 0 {
            python.push(PyFrame {
                frame: Some(Frame {
                    function: Arc::from(TRUNCATED),
                    module: Arc::from(""),
                    source: None,
                }),
                entry: false,
            });
        }
        splice::splice(native, &python)
    }

    /// The code object at `code` in process `pid`, from the cache or read from the process.
    fn code(&mut self, pid: u32, code: u64) -> Option<Arc<Code>> {
        if let Some(c) = self.codes.get(pid, code) {
            return Some(c);
        }
        let Some((_, Proc::Walked { layout, mem, .. })) = self.procs.get(&pid) else {
            return None;
        };
        match code::read_code(mem, code, &layout.code) {
            Ok(c) => {
                let c = Arc::new(c);
                self.codes.insert(pid, code, c.clone());
                Some(c)
            }
            Err(e) => {
                tracing::debug!(pid, code = code, error = %e, "reading a code object");
                None
            }
        }
    }

    /// Names a walk's frames from their code objects (cached per process and address).
    fn name(&mut self, pid: u32, stack: &PyStack) -> Vec<PyFrame> {
        let Some((_, Proc::Walked { layout, .. })) = self.procs.get(&pid) else {
            return Vec::new();
        };
        let entry_kind = layout.entry;
        let mut out: Vec<PyFrame> = Vec::with_capacity(stack.frames.len());
        for &(code, raw) in &stack.frames {
            let marker = (raw >> 56) as u8;
            let instr = raw & !MARKER;
            if marker == ENTERING {
                // Its frames were not set yet: the native activation shows none.
                end_activation(&mut out);
                continue;
            }
            let entry = match entry_kind {
                Entry::IsEntry => marker != 0,
                Entry::CStackShim(owner) => {
                    if marker == owner {
                        // The shim ends the activation below it; a shim with no frame above it
                        // in its activation (the walk came at its start, or a shim first in
                        // the chain) still ends one: an empty group keeps the later groups
                        // with their own activations.
                        end_activation(&mut out);
                        continue;
                    }
                    false
                }
            };
            let frame = match self.code(pid, code) {
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
            out.push(PyFrame {
                frame: Some(frame),
                entry,
            });
        }
        out
    }

    /// At the end of an interval: forgets processes that are gone or have exec'd another
    /// file (they are examined again at their next sample), reports walked processes whose
    /// walks mostly find no thread, and empties the code cache: a code object freed and
    /// another allocated at its address would otherwise keep the old name; this interval's
    /// stacks are already named.
    pub fn retain_pids(
        &mut self,
        alive: &dyn Fn(u32) -> bool,
        sampler: &mut Option<Box<dyn Sampler>>,
    ) {
        self.codes.clear();
        let gone: Vec<u32> = self
            .procs
            .iter()
            .filter(|&(&p, (exe, _))| !alive(p) || exe_id(p) != *exe)
            .map(|(&p, _)| p)
            .collect();
        for pid in &gone {
            if let (Some((_, Proc::Walked { .. })), Some(s)) =
                (self.procs.remove(pid), sampler.as_mut())
            {
                let _ = s.set_python(*pid, None);
            }
        }
        let mut lost = Vec::new();
        for (&pid, (_, p)) in &mut self.procs {
            if let Proc::Walked {
                walks,
                no_thread,
                reported,
                ..
            } = p
                && !*reported
                && no_thread_is_the_rule(*walks, *no_thread)
            {
                *reported = true;
                lost.push((pid, *walks, *no_thread));
            }
        }
        for (pid, walks, no_thread) in lost {
            self.fail(
                pid,
                &format!(
                    "{no_thread} of {walks} walks found no thread state for the sampled thread: its Python frames are missing"
                ),
            );
        }
    }

    pub fn problems(&self) -> &[String] {
        &self.problems
    }

    pub fn stats(&self) -> Stats {
        Stats {
            processes_walked: self
                .procs
                .values()
                .filter(|(_, p)| matches!(p, Proc::Walked { .. }))
                .count(),
            processes_inaccessible: self
                .procs
                .values()
                .filter(|(_, p)| matches!(p, Proc::Inaccessible))
                .count(),
            no_thread_walks: self.no_thread,
            processes_failed: self.failed,
            codes: self.codes.count(),
            code_bytes: self.codes.bytes(),
            unreadable_frames: self.unreadable,
        }
    }
}

/// Ends the activation whose frames `out` holds last (a 3.12+ shim frame was met): marks its
/// outermost frame, or, when it has none, adds an empty group so that the groups after it stay
/// with their own activations.
fn end_activation(out: &mut Vec<PyFrame>) {
    match out.last_mut() {
        Some(last) if !last.entry => last.entry = true,
        _ => out.push(PyFrame {
            frame: None,
            entry: true,
        }),
    }
}

/// Whether most of a process's walks found no thread state (and enough were seen to say).
fn no_thread_is_the_rule(walks: u64, no_thread: u64) -> bool {
    walks >= NO_THREAD_MIN_WALKS && no_thread * 2 > walks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_hold_lines_not_instructions() {
        let line = |_: u64, i: u64| Some(if i < 0x1010 { 7 } else { 8 });
        let unread = |_: u64, _: u64| None;
        // Two instructions of line 7 give one key; line 8 another; the entry marker is kept.
        let a = key_frame(0x500, 0x1000, line);
        assert_eq!(a, key_frame(0x500, 0x1008, line));
        assert_ne!(a, key_frame(0x500, 0x1010, line));
        assert_ne!(a, key_frame(0x500, 0x1000 | 3 << 56, line));
        // Unreadable code: the raw instruction, as before.
        assert_eq!(key_frame(0x500, 0x1008, unread), [0x500, 0x1008]);
    }

    #[test]
    fn a_shim_always_ends_one_activation() {
        let f = |entry| PyFrame {
            frame: Some(splice::frame(&Arc::from("f"), &Arc::from("m.py"), 1)),
            entry,
        };
        // (frames before the shim, entry flags after it)
        let cases: [(Vec<PyFrame>, Vec<bool>); 3] = [
            // A frame of the activation: it becomes the outermost.
            (vec![f(false)], vec![true]),
            // A leading shim: an empty group.
            (vec![], vec![true]),
            // Two shims in a row: the second activation ran no frame yet.
            (vec![f(true)], vec![true, true]),
        ];
        for (mut out, want) in cases {
            end_activation(&mut out);
            assert_eq!(out.iter().map(|p| p.entry).collect::<Vec<_>>(), want);
        }
        let mut out = Vec::new();
        end_activation(&mut out);
        assert_eq!(out[0].frame, None);
    }

    /// A walk that met the innermost activation being entered: that activation's native
    /// `_PyEval_EvalFrameDefault` gets no frames, the outer one gets the walk's next frame.
    #[test]
    fn an_activation_being_entered_shows_no_frames() {
        let counters = Counters {
            walked: Counter::default(),
            failed: Counter::default(),
            no_thread: Counter::default(),
        };
        let mut py = Python::new(true, &Budget::unlimited(), counters);
        let layout = offsets::layout(3, 11).expect("3.11");
        let Ok(mem) = File::open("/dev/null") else {
            return;
        };
        let walked = Proc::Walked {
            layout,
            mem,
            walks: 0,
            no_thread: 0,
            reported: false,
        };
        py.procs.insert(7, (None, walked));
        // The marker, then the outer activation's one frame (is_entry set); its code object
        // cannot be read from /dev/null.
        let stack = stack_of(&[(0, u64::from(ENTERING) << 56), (0x500, 0x1000 | 1 << 56)]);
        let named = py.name(7, &stack);
        assert_eq!(named.len(), 2);
        assert_eq!((named[0].frame.as_ref(), named[0].entry), (None, true));
        let outer = named[1].frame.as_ref().map(|f| &*f.function);
        assert_eq!((outer, named[1].entry), (Some(UNREADABLE), true));
        assert_eq!(py.unreadable, 1, "the marker is no unreadable frame");
        let native = |name: &str| Frame {
            function: Arc::from(name),
            module: Arc::from("python3"),
            source: None,
        };
        let stack = splice::splice(
            vec![
                native(splice::EVAL_FRAME),
                native("builtin_sorted"),
                native(splice::EVAL_FRAME),
                native("main"),
            ],
            &named,
        );
        let names: Vec<&str> = stack.iter().map(|f| &*f.function).collect();
        assert_eq!(names, ["builtin_sorted", UNREADABLE, "main"]);
        // The key holds the marker as it is (no code object is looked up for it).
        let key = py.stack_key(7, &[0x10], &stack_of(&[(0, u64::from(ENTERING) << 56)]));
        assert_eq!(key, [0x10, PY_KEY, 0, 0, u64::from(ENTERING) << 56]);
        assert_eq!(py.unreadable, 1);
    }

    fn stack_of(frames: &[(u64, u64)]) -> PyStack {
        PyStack {
            frames: frames.to_vec(),
            flags: 1,
        }
    }

    #[test]
    fn no_thread_is_reported_when_it_is_most_walks() {
        // (walks, no_thread, reported)
        let cases = [
            (0, 0, false),
            (19, 19, false),
            (20, 10, false),
            (20, 11, true),
            (1000, 999, true),
        ];
        for (walks, no_thread, want) in cases {
            assert_eq!(
                no_thread_is_the_rule(walks, no_thread),
                want,
                "{walks} {no_thread}"
            );
        }
    }
}
