//! Puts a sample's Python frames where the interpreter ran them: every native activation of
//! `_PyEval_EvalFrameDefault` runs a run of Python frames (a call from C into Python starts a
//! new activation; Python-to-Python calls stay in the same one since 3.11), so each activation,
//! innermost first, is replaced by its frames, innermost first, as py-spy's native mode and
//! the OpenTelemetry profiler show them.

use std::sync::Arc;

use super::super::symbolize::{Frame, SourceLine};

/// The interpreter loop's native function. Matched as a prefix: LTO builds split it into
/// parts such as `_PyEval_EvalFrameDefault.cold`, each standing for its activation.
pub const EVAL_FRAME: &str = "_PyEval_EvalFrameDefault";
/// The module of kernel frames (they come first in a stack).
const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// One Python frame, named, and whether it is the outermost frame of its activation. `frame`
/// is `None` for an activation that has run no Python frame yet (an empty group).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PyFrame {
    pub frame: Option<Frame>,
    pub entry: bool,
}

/// Replaces each `_PyEval_EvalFrameDefault` of `native` (leaf first) by the Python frames of
/// its activation. Frames the native stack has no activation left for (its unwind stopped
/// early, or the interpreter's frames were not named) go where the last activation was, or on
/// top of the user stack when none was found, so that no Python frame is lost.
pub fn splice(native: Vec<Frame>, python: &[PyFrame]) -> Vec<Frame> {
    if python.is_empty() {
        return native;
    }
    let mut groups = python
        .split_inclusive(|f| f.entry)
        .map(|g| g.iter().filter_map(|f| f.frame.clone()));
    let mut out = Vec::with_capacity(native.len() + python.len());
    let mut last = None;
    for f in native {
        if f.function.starts_with(EVAL_FRAME)
            && let Some(group) = groups.next()
        {
            out.extend(group);
            last = Some(out.len());
            continue;
        }
        out.push(f);
    }
    let rest: Vec<Frame> = groups.flatten().collect();
    if !rest.is_empty() {
        let at = last.unwrap_or_else(|| {
            out.iter()
                .position(|f| &*f.module != KERNEL_MODULE)
                .unwrap_or(out.len())
        });
        out.splice(at..at, rest);
    }
    out
}

/// A Python frame as the profile shows it: the qualified name, in the module that is its
/// source file, with the line it was at.
pub fn frame(qualname: &Arc<str>, filename: &Arc<str>, line: i32) -> Frame {
    Frame {
        function: qualname.clone(),
        module: filename.clone(),
        source: Some(SourceLine {
            file: filename.clone(),
            line: i64::from(line),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(name: &str) -> Frame {
        Frame {
            function: name.into(),
            module: "m".into(),
            source: None,
        }
    }

    fn k(name: &str) -> Frame {
        Frame {
            function: name.into(),
            module: KERNEL_MODULE.into(),
            source: None,
        }
    }

    fn py(name: &str, entry: bool) -> PyFrame {
        PyFrame {
            frame: Some(f(name)),
            entry,
        }
    }

    fn names(frames: &[Frame]) -> Vec<&str> {
        frames.iter().map(|f| &*f.function).collect()
    }

    #[test]
    fn each_activation_is_replaced_by_its_frames() {
        // (native, python, expected)
        type Case = (Vec<Frame>, Vec<PyFrame>, Vec<&'static str>);
        let cases: Vec<Case> = vec![
            // One activation running three Python frames.
            (
                vec![f("PyNumber_Add"), f(EVAL_FRAME), f("Py_RunMain"), f("main")],
                vec![py("hot", false), py("middle", false), py("<module>", true)],
                vec![
                    "PyNumber_Add",
                    "hot",
                    "middle",
                    "<module>",
                    "Py_RunMain",
                    "main",
                ],
            ),
            // Two activations: a C function called back into Python.
            (
                vec![f(EVAL_FRAME), f("_PyObject_Call"), f(EVAL_FRAME), f("main")],
                vec![py("cb", true), py("sort", false), py("<module>", true)],
                vec!["cb", "_PyObject_Call", "sort", "<module>", "main"],
            ),
            // An LTO build's cold part is an activation too.
            (
                vec![f("_PyEval_EvalFrameDefault.cold"), f(EVAL_FRAME), f("main")],
                vec![py("cb", true), py("<module>", true)],
                vec!["cb", "<module>", "main"],
            ),
            // An empty group (a leading 3.12 shim): the innermost activation shows no frame,
            // and the next group stays with the next activation.
            (
                vec![f(EVAL_FRAME), f("call"), f(EVAL_FRAME), f("main")],
                vec![
                    PyFrame {
                        frame: None,
                        entry: true,
                    },
                    py("<module>", true),
                ],
                vec!["call", "<module>", "main"],
            ),
            // No Python frames: unchanged.
            (
                vec![f(EVAL_FRAME), f("main")],
                vec![],
                vec![EVAL_FRAME, "main"],
            ),
            // The unwind stopped inside the first activation: the outer frames follow it.
            (
                vec![f(EVAL_FRAME), f("[truncated]")],
                vec![py("hot", true), py("<module>", true)],
                vec!["hot", "<module>", "[truncated]"],
            ),
            // No activation named at all: on top of the user stack, below the kernel frames.
            (
                vec![k("asm_sysvec"), f("[unknown]"), f("main")],
                vec![py("hot", false), py("<module>", true)],
                vec!["asm_sysvec", "hot", "<module>", "[unknown]", "main"],
            ),
        ];
        for (native, python, want) in cases {
            assert_eq!(names(&splice(native, &python)), want);
        }
    }
}
