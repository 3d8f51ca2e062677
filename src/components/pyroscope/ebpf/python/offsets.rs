//! Where CPython keeps what the frame walk and the code reader need, per minor version.
//!
//! The layout of these structures is fixed within a minor version (CPython's ABI rule for its
//! internal structs since 3.11, which py-spy and the OpenTelemetry profiler rely on too), so
//! one table per minor version serves every build of it: Debian's stripped 3.11.2 and pyenv's
//! 3.11.7 alike. The numbers were read with gdb from the DWARF of pyenv's 3.11.7 and 3.12.1
//! builds (`p &((PyThreadState*)0)->native_thread_id` and so on); only 3.11 is exercised by the
//! tests on this machine kind. 3.13 and later publish their offsets in `_Py_DebugOffsets` at
//! the start of `_PyRuntime`, which is not read yet: those versions are reported unsupported.

/// The BPF program's view of one process (`struct py_proc` in bpf/profile.bpf.c; same layout).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PyProc {
    /// Address of `_PyRuntime` in the process.
    pub runtime: u64,
    pub interp_head: u16,
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
    pub pad: [u16; 2],
}

// SAFETY: plain old data with no padding holes (8 + 12 * 2 bytes), as the map expects.
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

/// The layout of CPython `major.minor`, or `None` when we have none.
pub fn layout(major: u8, minor: u8) -> Option<Layout> {
    let walk = |tstate_head, tid, cframe_frame, previous, code| PyProc {
        runtime: 0,
        interp_head: 40,
        tstate_head,
        tstate_next: 8,
        tstate_tid: tid,
        tstate_frame: 56,
        cframe_frame,
        frame_previous: previous,
        frame_code: code,
        frame_instr: 56,
        frame_entry: 0,
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
        (3, 11) => Some(Layout {
            walk: PyProc {
                frame_entry: 68,
                ..walk(16, 160, 8, 48, 32)
            },
            entry: Entry::IsEntry,
            code: codes(72, 184, 48, 72),
        }),
        (3, 12) => Some(Layout {
            walk: PyProc {
                frame_entry: 70,
                ..walk(72, 144, 0, 8, 0)
            },
            entry: Entry::CStackShim(3),
            code: codes(68, 192, 40, 56),
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_exist_for_the_supported_versions_only() {
        // (version, has a table, thread id offset)
        let cases = [
            ((3, 10), false, 0),
            ((3, 11), true, 160),
            ((3, 12), true, 144),
            ((3, 13), false, 0),
        ];
        for ((major, minor), known, tid) in cases {
            let l = layout(major, minor);
            assert_eq!(l.is_some(), known, "{major}.{minor}");
            if let Some(l) = l {
                assert_eq!(l.walk.tstate_tid, tid);
                assert_ne!(l.walk.frame_entry, 0);
            }
        }
        assert_eq!(
            std::mem::size_of::<PyProc>(),
            32,
            "struct py_proc is 32 bytes"
        );
    }
}
