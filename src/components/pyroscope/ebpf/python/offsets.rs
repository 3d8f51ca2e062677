//! Where CPython keeps what the frame walk and the code reader need, per minor version.
//!
//! The layout of these structures is fixed within a minor version (CPython's ABI rule for its
//! internal structs since 3.11, which py-spy and the OpenTelemetry profiler rely on too), so
//! one table per minor version serves every build of it: Debian's stripped 3.11.2 and pyenv's
//! 3.11.7 alike. The numbers were read with gdb from the DWARF of pyenv's 3.11.7 and 3.12.1
//! builds (`p &((PyThreadState*)0)->native_thread_id` and so on); only 3.11 is exercised by the
//! tests on this machine kind. 3.13 publishes its offsets in `_Py_DebugOffsets` at the start
//! of `_PyRuntime`, which [`from_debug_offsets`] reads; later versions are reported unsupported.
//!
//! The walk starts at `_PyRuntime.interpreters.main`, the interpreter `Py_Initialize` made
//! (`interpreters.head` is the newest one, a sub-interpreter when there are any); in all three
//! versions `main` is the pointer right after `head` (`struct pyinterpreters` in
//! Include/internal/pycore_runtime.h: mutex, head, main, next_id).

/// The BPF program's view of one process (`struct py_proc` in bpf/profile.bpf.c; same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PyProc {
    /// Address of `_PyRuntime` in the process.
    pub runtime: u64,
    /// `_PyRuntimeState.interpreters.main`.
    pub interp_main: u16,
    pub tstate_head: u16,
    pub tstate_next: u16,
    pub tstate_tid: u16,
    pub tstate_frame: u16,
    /// [`NONE`] when `tstate_frame` is the frame pointer itself (3.13+).
    pub cframe_frame: u16,
    pub frame_previous: u16,
    pub frame_code: u16,
    pub frame_instr: u16,
    pub frame_entry: u16,
    /// `PyThreadState.thread_id`: `pthread_self()`, which the BPF program compares with the
    /// thread's FS base (the same in every pid namespace, unlike `native_thread_id`).
    pub tstate_pthread: u16,
    /// `_PyCFrame.previous` (3.11, 3.12), [`NONE`] on 3.13+: the BPF program checks that
    /// the innermost activation's frames link to its caller's (see `walk_python`).
    pub cframe_previous: u16,
    /// What ends an activation, for the BPF program: 0 for `is_entry`, else the C-stack shim's
    /// `owner` value ([`Entry`], which [`Layout::new`] copies here).
    pub entry_shim: u16,
    /// `PyThreadState.root_cframe` (3.11, 3.12), [`NONE`] on 3.13+: where every chain of
    /// cframes ends, so that the BPF program can tell a live caller's cframe from a value an
    /// earlier activation left.
    pub tstate_root_cframe: u16,
    pub pad: [u16; 2],
}

// SAFETY: plain old data with no padding holes (8 + 16 * 2 bytes), as the map expects.
unsafe impl aya::Pod for PyProc {}

/// `PY_NONE` in profile.bpf.c.
pub const NONE: u16 = 0xffff;

/// How the entry byte of a frame marks the end of one `_PyEval_EvalFrameDefault` activation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    /// 3.11: `is_entry` is true on the outermost frame the activation runs.
    IsEntry,
    /// 3.12+: the activation pushes a shim frame owned by the C stack
    /// (`FRAME_OWNED_BY_CSTACK`) below its first frame; the shim has no code to show.
    CStackShim(u8),
}

/// Offsets of a code object and of the string and bytes objects it points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CodeLayout {
    pub filename: usize,
    pub qualname: usize,
    pub linetable: usize,
    pub firstlineno: usize,
    /// Start of the bytecode (`co_code_adaptive`), which instruction pointers point into.
    pub code: usize,
    /// `PyBytesObject.ob_sval`.
    pub bytes_data: usize,
    /// `PyVarObject.ob_size`.
    pub var_size: usize,
    /// `PyASCIIObject` and `PyCompactUnicodeObject` sizes: where compact strings' text starts.
    pub ascii_size: usize,
    pub compact_size: usize,
}

/// Everything version-specific.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub walk: PyProc,
    pub entry: Entry,
    pub code: CodeLayout,
}

impl Layout {
    /// The layout with the walk's [`PyProc::entry_shim`] set from `entry`, so the two cannot
    /// disagree.
    fn new(walk: PyProc, entry: Entry, code: CodeLayout) -> Layout {
        let entry_shim = match entry {
            Entry::IsEntry => 0,
            Entry::CStackShim(owner) => u16::from(owner),
        };
        Layout {
            walk: PyProc { entry_shim, ..walk },
            entry,
            code,
        }
    }
}

/// The layout of CPython `major.minor`, or `None` when we have none.
pub fn layout(major: u8, minor: u8) -> Option<Layout> {
    // interpreters.head is at 40 in both; main follows it.
    // _PyCFrame is {use_tracing (3.11 only), current_frame, previous}: previous follows.
    let walk = |tstate_head, tid: u16, cframe_frame: u16, root_cframe, previous, code| PyProc {
        runtime: 0,
        interp_main: 48,
        tstate_head,
        tstate_next: 8,
        tstate_tid: tid,
        // thread_id is the field before native_thread_id.
        tstate_pthread: tid - 8,
        tstate_frame: 56,
        cframe_frame,
        frame_previous: previous,
        frame_code: code,
        frame_instr: 56,
        frame_entry: 0,
        cframe_previous: cframe_frame + 8,
        entry_shim: 0,
        tstate_root_cframe: root_cframe,
        pad: [0; 2],
    };
    let codes = |firstlineno, code, ascii_size, compact_size| CodeLayout {
        filename: 112,
        qualname: 128,
        linetable: 136,
        firstlineno,
        code,
        bytes_data: 32,
        var_size: 16,
        ascii_size,
        compact_size,
    };
    match (major, minor) {
        (3, 11) => Some(Layout::new(
            PyProc {
                frame_entry: 68,
                ..walk(16, 160, 8, 336, 48, 32)
            },
            Entry::IsEntry,
            codes(72, 184, 48, 72),
        )),
        (3, 12) => Some(Layout::new(
            PyProc {
                frame_entry: 70,
                ..walk(72, 144, 0, 272, 8, 0)
            },
            Entry::CStackShim(3),
            codes(68, 192, 40, 56),
        )),
        _ => None,
    }
}

/// `_Py_DebugOffsets`' cookie, the first bytes of `_PyRuntime` from 3.13 on.
pub const DEBUG_COOKIE: &[u8; 8] = b"xdebugpy";
/// Bytes of `_Py_DebugOffsets` read: up to the unicode object's offsets (bytes_object is at
/// 512, unicode_object at 536 in 3.13's struct).
pub const DEBUG_OFFSETS_LEN: usize = 568;

/// The layout CPython 3.13 publishes in `_Py_DebugOffsets` at the start of `_PyRuntime`.
/// The struct's own layout changes between minor versions (3.14 added fields), so it is read
/// only for 3.13, the version whose layout this follows (read with gdb from pyenv's 3.13.0:
/// `p (long)&((_Py_DebugOffsets*)0)->thread_state` and so on). `None` when the cookie is
/// missing, the version is another, or the build is free-threaded (another object layout).
pub fn from_debug_offsets(b: &[u8]) -> Option<Layout> {
    if b.len() < DEBUG_OFFSETS_LEN || &b[..8] != DEBUG_COOKIE {
        return None;
    }
    let at = |i: usize| -> u64 { u64::from_ne_bytes(b[i..i + 8].try_into().unwrap_or([0; 8])) };
    let (version, free_threaded) = (at(8), at(16));
    if version >> 16 != 0x030d || free_threaded != 0 {
        return None;
    }
    // Offsets of fields, each a u64 in the struct: whatever does not fit a u16 is wrong.
    let small = |i: usize| u16::try_from(at(i)).ok();
    let walk = PyProc {
        runtime: 0,
        // _Py_DebugOffsets has interpreters_head only; main is the next pointer.
        interp_main: small(24 + 16)?.checked_add(8)?,
        tstate_head: small(48 + 24)?,
        tstate_next: small(152 + 16)?,
        tstate_tid: small(152 + 48)?,
        tstate_frame: small(152 + 32)?,
        cframe_frame: NONE,
        frame_previous: small(224 + 8)?,
        frame_code: small(224 + 16)?,
        frame_instr: small(224 + 24)?,
        frame_entry: small(224 + 40)?,
        tstate_pthread: small(152 + 40)?,
        cframe_previous: NONE,
        entry_shim: 0,
        tstate_root_cframe: NONE,
        pad: [0; 2],
    };
    let ascii_size = usize::from(small(536 + 24)?);
    let code = CodeLayout {
        filename: usize::from(small(272 + 8)?),
        qualname: usize::from(small(272 + 24)?),
        linetable: usize::from(small(272 + 32)?),
        firstlineno: usize::from(small(272 + 40)?),
        code: usize::from(small(272 + 72)?),
        bytes_data: usize::from(small(512 + 16)?),
        var_size: usize::from(small(512 + 8)?),
        ascii_size,
        // PyCompactUnicodeObject adds utf8_length and utf8 to PyASCIIObject.
        compact_size: ascii_size + 16,
    };
    Some(Layout::new(walk, Entry::CStackShim(3), code))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 3.13.0's `_Py_DebugOffsets` as gdb shows it in pyenv's build, reduced to the fields
    /// read.
    fn debug_offsets_3_13() -> Vec<u8> {
        let mut b = vec![0u8; DEBUG_OFFSETS_LEN];
        b[..8].copy_from_slice(DEBUG_COOKIE);
        let fields: [(usize, u64); 20] = [
            (8, 0x030d00f0),
            (24 + 16, 632),
            (48 + 24, 7344),
            (152 + 16, 8),
            (152 + 32, 72),
            (152 + 40, 152),
            (152 + 48, 160),
            (224 + 8, 8),
            (224 + 16, 0),
            (224 + 24, 56),
            (224 + 40, 70),
            (272 + 8, 112),
            (272 + 24, 128),
            (272 + 32, 136),
            (272 + 40, 68),
            (272 + 72, 200),
            (512 + 8, 16),
            (512 + 16, 32),
            (536 + 24, 40),
            (16, 0),
        ];
        for (at, v) in fields {
            b[at..at + 8].copy_from_slice(&v.to_ne_bytes());
        }
        b
    }

    #[test]
    fn debug_offsets_give_the_3_13_layout() {
        let b = debug_offsets_3_13();
        let l = from_debug_offsets(&b).expect("3.13 layout");
        assert_eq!(
            (l.walk.interp_main, l.walk.tstate_head, l.walk.tstate_tid),
            (640, 7344, 160)
        );
        assert_eq!(l.walk.tstate_pthread, 152);
        assert_eq!((l.walk.tstate_frame, l.walk.cframe_frame), (72, NONE));
        assert_eq!((l.walk.cframe_previous, l.walk.entry_shim), (NONE, 3));
        assert_eq!((l.code.code, l.code.compact_size), (200, 56));
        // (what is changed, at, value): each makes the block unusable.
        let bad: [(&str, usize, u64); 3] = [
            ("3.14", 8, 0x030e00f0),
            ("free-threaded", 16, 1),
            ("offset past u16", 152 + 48, 1 << 20),
        ];
        for (what, at, v) in bad {
            let mut c = b.clone();
            c[at..at + 8].copy_from_slice(&v.to_ne_bytes());
            assert_eq!(from_debug_offsets(&c), None, "{what}");
        }
        let mut c = b.clone();
        c[0] = b'y';
        assert_eq!(from_debug_offsets(&c), None, "no cookie");
        assert_eq!(from_debug_offsets(&b[..100]), None, "short");
    }

    #[test]
    fn tables_exist_for_the_supported_versions_only() {
        // (version, has a table, native_thread_id, thread_id, _PyCFrame.previous,
        // root_cframe offsets, entry_shim): from the DWARF of pyenv's builds
        // (`p &((PyThreadState*)0)->thread_id`, `p &((_PyCFrame*)0)->previous`).
        let cases = [
            ((3, 10), false, 0, 0, 0, 0, 0),
            ((3, 11), true, 160, 152, 16, 336, 0),
            ((3, 12), true, 144, 136, 8, 272, 3),
            ((3, 13), false, 0, 0, 0, 0, 0),
        ];
        for ((major, minor), known, tid, pthread, cframe_previous, root, shim) in cases {
            let l = layout(major, minor);
            assert_eq!(l.is_some(), known, "{major}.{minor}");
            if let Some(l) = l {
                assert_eq!(l.walk.tstate_tid, tid);
                assert_eq!(l.walk.tstate_pthread, pthread);
                assert_eq!(l.walk.cframe_previous, cframe_previous);
                assert_eq!(l.walk.tstate_root_cframe, root);
                assert_eq!(l.walk.entry_shim, shim);
                // interpreters.main, not head (40).
                assert_eq!(l.walk.interp_main, 48);
                assert_ne!(l.walk.frame_entry, 0);
            }
        }
        assert_eq!(
            std::mem::size_of::<PyProc>(),
            40,
            "struct py_proc is 40 bytes"
        );
    }
}
