//! Signal frames on x86_64 Linux.
//!
//! The kernel delivers a signal by pushing a `struct rt_sigframe` on the thread's stack and
//! calling the handler with the frame's first word, `pretcode`, as its return address; that
//! points at the `sa_restorer` trampoline (glibc's `__restore_rt`, musl's `__restore_rt`, Go's
//! `runtime.sigreturn__sigaction`), which only calls `rt_sigreturn`. When the handler's frame
//! is unwound, the stack pointer lands on the frame's `struct ucontext`, whose `uc_mcontext`
//! holds every register of the interrupted code: the next frame starts from those (as an
//! instruction pointer, not a return address: the interrupted code did not call anything).
//!
//! glibc describes `__restore_rt` with CFI expressions that framehop does not evaluate, so the
//! trampoline is recognised by its code instead, which is what the kernel's ABI fixes.

use super::StackCopy;
use super::images::Shared;
use crate::components::pyroscope::ebpf::sample::UserRegs;

/// `mov $15, %rax; syscall` (glibc, Go) and `mov $15, %eax; syscall` (musl): 15 is
/// `__NR_rt_sigreturn`.
const TRAMPOLINES: [&[u8]; 2] = [
    &[0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05],
    &[0xb8, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05],
];
const LONGEST: usize = 9;

/// `struct ucontext`: `uc_flags`, `uc_link`, `uc_stack` (24 bytes), then `uc_mcontext`, a
/// `struct sigcontext` whose registers run r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip.
const MCONTEXT: u64 = 40;
const UCONTEXT_RBP: u64 = MCONTEXT + 10 * 8;
const UCONTEXT_RSP: u64 = MCONTEXT + 15 * 8;
pub(super) const UCONTEXT_RIP: u64 = MCONTEXT + 16 * 8;

/// Whether link-time address `vaddr` of `image` is in a sigreturn trampoline: its first
/// instruction when `vaddr` is a return address (where the kernel sends the handler's `ret`),
/// else any instruction boundary of it (a sample taken in the trampoline, or in the
/// `rt_sigreturn` system call with the pc after `syscall`).
pub(super) fn in_trampoline(image: &Shared, vaddr: u64, return_address: bool) -> bool {
    let Ok(mut image) = image.lock() else {
        return false;
    };
    // Offsets of the instruction boundaries in the two trampolines: glibc's/Go's 7-byte `mov`,
    // musl's 5-byte one, each followed by the 2-byte `syscall`.
    let starts: &[u64] = if return_address { &[0] } else { &[0, 5, 7, 9] };
    starts.iter().any(|&back| {
        vaddr
            .checked_sub(back)
            .is_some_and(|start| image.is_sigreturn(start, LONGEST, matches_trampoline))
    })
}

fn matches_trampoline(code: &[u8]) -> bool {
    TRAMPOLINES.iter().any(|t| code.starts_with(t))
}

/// The interrupted registers, from the `ucontext` at `sp`.
pub(super) fn interrupted(copy: &StackCopy, sp: u64) -> Option<UserRegs> {
    let at = |off: u64| copy.read(sp.checked_add(off)?).ok();
    Some(UserRegs {
        ip: at(UCONTEXT_RIP)?,
        sp: at(UCONTEXT_RSP)?,
        bp: at(UCONTEXT_RBP)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trampolines_are_recognised_by_their_code() {
        let cases: [(&[u8], bool); 5] = [
            (&[0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05], true),
            (&[0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05, 0x90, 0x90], true),
            // rt_sigreturn's number differs: not a trampoline.
            (&[0x48, 0xc7, 0xc0, 0x0e, 0, 0, 0, 0x0f, 0x05], false),
            (&[0x55, 0x48, 0x89, 0xe5, 0, 0, 0, 0, 0], false),
            (&[0xb8, 0x0f], false),
        ];
        for (code, want) in cases {
            assert_eq!(matches_trampoline(code), want, "{code:02x?}");
        }
    }

    #[test]
    fn registers_come_from_the_saved_context() {
        let sp = 0x7000_0000u64;
        let mut bytes = vec![0u8; 1024];
        let mut put = |off: u64, v: u64| {
            bytes[off as usize..off as usize + 8].copy_from_slice(&v.to_ne_bytes())
        };
        put(UCONTEXT_RIP, 0x401234);
        put(UCONTEXT_RSP, 0x7ffd_0000);
        put(UCONTEXT_RBP, 0x7ffd_0040);
        let copy = StackCopy { sp, bytes: &bytes };
        assert_eq!(
            interrupted(&copy, sp),
            Some(UserRegs {
                ip: 0x401234,
                sp: 0x7ffd_0000,
                bp: 0x7ffd_0040
            })
        );
        // A context above the copy cannot be read.
        assert_eq!(interrupted(&copy, sp + 1000), None);
    }
}
