//! A sample's stack as a profile shows it: kernel frames, user frames, a `[truncated]` marker
//! when the user stack did not reach its root, and the thread name as the root when asked for.
//! What counts as reaching the root is decided here, for the unwinder's stacks and the
//! frame-pointer walks alike.

use super::sample::RawSample;
use super::symbolize::{Frame, Symbolizer};

/// Deepest user stack the samplers copy (`MAX_FRAMES` in bpf/profile.bpf.c); a stack this deep
/// was cut by the limit.
pub(super) const MAX_USER_DEPTH: usize = 127;
/// Name of the synthetic frame marking a user stack that did not reach its root.
pub const TRUNCATED_FRAME: &str = "[truncated]";
/// Appended to an unwound stack's addresses when it did not reach its root, so that it is
/// counted apart from a complete stack with the same frames. Not a user-space address.
pub(super) const TRUNCATED_ADDR: u64 = u64::MAX;

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

/// A sample's frames in pprof order (leaf first): kernel, user, the truncation marker, and
/// the thread name as the root when asked for. `complete` is the unwinder's verdict on `user`
/// (`None` for a frame-pointer walk, judged by its last function).
pub(super) fn frames(
    symbolizer: &mut Symbolizer,
    s: &RawSample,
    user: &[u64],
    complete: Option<bool>,
    comm_frame: bool,
) -> Vec<Frame> {
    let kernel = if s.kernel.is_empty() {
        Vec::new()
    } else {
        symbolizer.kernel(&s.kernel)
    };
    let user_frames = if user.is_empty() {
        Vec::new()
    } else {
        symbolizer.user(s.pid, user)
    };
    let comm = comm_frame.then_some(&s.comm);
    assemble(kernel, user_frames, user.len(), complete, comm)
}

/// Joins symbolized frames: a user stack that did not reach its root gets a
/// [`TRUNCATED_FRAME`] so that flame graphs show it as cut, not as a short stack. A stack
/// reached its root when the unwinder says so, or (frame-pointer walks, and unwinds that failed
/// one step past the root) when it ends in a known root function within the depth limit.
fn assemble(
    kernel: Vec<Frame>,
    user: Vec<Frame>,
    user_depth: usize,
    complete: Option<bool>,
    comm: Option<&[u8; 16]>,
) -> Vec<Frame> {
    let mut out = kernel;
    if !user.is_empty() {
        let depth_limit = if complete.is_some() {
            super::unwind::MAX_DEPTH
        } else {
            MAX_USER_DEPTH
        };
        let complete = complete == Some(true)
            || (user_depth < depth_limit
                && user
                    .last()
                    .is_some_and(|f| ROOT_FUNCTIONS.contains(&&*f.function)));
        out.extend(user);
        if !complete {
            out.push(Frame {
                function: TRUNCATED_FRAME.into(),
                module: "".into(),
                source: None,
            });
        }
    }
    if let Some(comm) = comm {
        let end = comm.iter().position(|&b| b == 0).unwrap_or(16);
        out.push(Frame {
            function: String::from_utf8_lossy(&comm[..end]).into(),
            module: "".into(),
            source: None,
        });
    }
    out
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
            let got = assemble(kernel, user, depth, None, comm);
            assert_eq!(names(&got), want);
        }
    }

    #[test]
    fn the_unwinders_verdict_decides_truncation() {
        // (user frames, unwinder says complete, expected)
        let cases: Vec<(Vec<Frame>, Option<bool>, Vec<&str>)> = vec![
            // Unwound to a root that is not in the name list (a thread's clone3 child in a
            // libc we do not know): complete because CFI said so.
            (
                vec![f("leaf"), f("worker"), f("thread_entry_of_some_libc")],
                Some(true),
                vec!["leaf", "worker", "thread_entry_of_some_libc"],
            ),
            // The unwinder ran out of stack copy: marked even though frames look plausible.
            (
                vec![f("leaf"), f("level2")],
                Some(false),
                vec!["leaf", "level2", TRUNCATED_FRAME],
            ),
            // It failed one step past _start: the stack is complete all the same.
            (
                vec![f("leaf"), f("main"), f("_start")],
                Some(false),
                vec!["leaf", "main", "_start"],
            ),
            // Unwound stacks may be deeper than the frame-pointer walk's 127 frames.
            (
                {
                    let mut v: Vec<Frame> = (0..200).map(|_| f("recurse")).collect();
                    v.push(f("_start"));
                    v
                },
                Some(false),
                {
                    let mut v: Vec<&str> = (0..200).map(|_| "recurse").collect();
                    v.push("_start");
                    v
                },
            ),
        ];
        for (user, complete, want) in cases {
            let depth = user.len();
            let got = assemble(vec![], user, depth, complete, None);
            assert_eq!(names(&got), want);
        }
    }
}
