use std::arch::asm;
use std::os::unix::fs::FileExt as _;

use super::*;

unsafe extern "C" {
    /// glibc's `backtrace(3)`, which walks with libgcc's unwinder: an implementation
    /// independent of ours, used as the oracle.
    fn backtrace(buffer: *mut *mut std::ffi::c_void, size: std::ffi::c_int) -> std::ffi::c_int;
}

/// What the BPF program would have sent for this thread, plus the oracle's return addresses.
struct Captured {
    regs: UserRegs,
    stack: Vec<u8>,
    oracle: Vec<u64>,
}

/// Copies our own stack from `sp` upwards, page by page like the BPF program, until `max`
/// bytes or the end of the stack mapping.
fn copy_own_stack(sp: u64, max: usize) -> Vec<u8> {
    let mem = std::fs::File::open("/proc/self/mem").expect("open /proc/self/mem");
    let mut out = Vec::with_capacity(max);
    let mut addr = sp;
    while out.len() < max {
        let chunk = (4096 - (addr & 4095)) as usize;
        let mut page = vec![0u8; chunk];
        if mem.read_exact_at(&mut page, addr).is_err() {
            break;
        }
        out.extend_from_slice(&page);
        addr += chunk as u64;
    }
    out.truncate(max);
    out
}

#[inline(never)]
fn capture(max: usize) -> Captured {
    let (ip, sp, bp): (u64, u64, u64);
    // SAFETY: reads three registers into locals; touches no memory.
    unsafe {
        asm!(
            "lea {ip}, [rip]",
            "mov {sp}, rsp",
            "mov {bp}, rbp",
            ip = out(reg) ip,
            sp = out(reg) sp,
            bp = out(reg) bp,
            options(nomem, nostack, preserves_flags)
        );
    }
    let stack = copy_own_stack(sp, max);
    let mut buf = [std::ptr::null_mut(); 256];
    // SAFETY: the buffer has room for the 256 entries we allow.
    let n = unsafe { backtrace(buf.as_mut_ptr(), buf.len() as i32) };
    let oracle = buf[..n.max(0) as usize].iter().map(|&p| p as u64).collect();
    Captured {
        regs: UserRegs { ip, sp, bp },
        stack,
        oracle,
    }
}

#[inline(never)]
fn level3(max: usize) -> Captured {
    std::hint::black_box(capture(std::hint::black_box(max)))
}

#[inline(never)]
fn level2(max: usize) -> Captured {
    std::hint::black_box(level3(std::hint::black_box(max)))
}

#[inline(never)]
fn level1(max: usize) -> Captured {
    std::hint::black_box(level2(std::hint::black_box(max)))
}

/// Unwinds this very thread from a copy of its stack, as a sample of it would be, and checks
/// every return address against glibc's `backtrace`: the whole way to the thread's root.
#[test]
fn own_stack_unwinds_like_libgcc_to_the_root() {
    let c = level1(super::super::bpf::STACK_MAX as usize);
    let mut unwinder = Unwinder::new(Budget::unlimited());
    let mut frames = Vec::new();
    let end = unwinder.unwind(std::process::id(), Some(c.regs), &c.stack, &mut frames);
    // frames[0] is the pc inside `capture`, the oracle's [0] the return address into it from
    // `backtrace`: both are in `capture`; from there on both list the same return addresses.
    assert!(c.oracle.len() > 5, "{:x?}", c.oracle);
    assert!(
        frames.len() >= c.oracle.len(),
        "ours {frames:x?} ({end:?}) vs libgcc {:x?}",
        c.oracle
    );
    assert_eq!(
        frames[1..c.oracle.len()],
        c.oracle[1..],
        "ours {frames:x?} vs libgcc {:x?}",
        c.oracle
    );
    assert_eq!(end, End::Root, "{frames:x?}");
    let stats = unwinder.stats();
    assert_eq!(stats.complete, 1, "{stats:?}");
    assert!(stats.images >= 1, "{stats:?}");
}

/// A copy too short for the stack ends the walk where it runs out, and says so.
#[test]
fn a_short_copy_ends_truncated_for_its_reason() {
    let c = level1(256);
    let mut unwinder = Unwinder::new(Budget::unlimited());
    let mut frames = Vec::new();
    let end = unwinder.unwind(std::process::id(), Some(c.regs), &c.stack, &mut frames);
    assert_eq!(
        end,
        End::Truncated(Reason::StackCopyExhausted),
        "{frames:x?}"
    );
    assert!(!frames.is_empty());
    let mut none = Vec::new();
    assert_eq!(
        unwinder.unwind(std::process::id(), None, &[], &mut none),
        End::Truncated(Reason::NoStackCopy)
    );
    let stats = unwinder.stats();
    assert_eq!(stats.truncated.get("stack_copy_exhausted"), Some(&1));
    assert_eq!(stats.truncated.get("no_stack_copy"), Some(&1));
}

/// A process that does not exist (any more) has nothing to unwind with.
#[test]
fn a_gone_process_is_reported() {
    let mut unwinder = Unwinder::new(Budget::unlimited());
    let mut frames = Vec::new();
    let regs = UserRegs {
        ip: 0x1000,
        sp: 0x2000,
        bp: 0,
    };
    // Pids are below 2^22 on Linux.
    let end = unwinder.unwind(u32::MAX - 1, Some(regs), &[0; 64], &mut frames);
    assert_eq!(end, End::Truncated(Reason::ProcessUnreadable));
}

/// The mapping of a PIE's code starts at a page-aligned file offset that also lies in the
/// read-only segment before it: the bias must come from the executable segment (the case of
/// the test binary itself, where offset and address differ by a page).
#[test]
fn load_bias_uses_the_segment_the_mapping_holds() {
    use crate::components::pyroscope::ebpf::symbolize::elf::Load;
    let loads = [
        Load {
            offset: 0,
            filesz: 0xba2818,
            vaddr: 0,
        },
        Load {
            offset: 0xba2840,
            filesz: 0x1ecaf40,
            vaddr: 0xba3840,
        },
    ];
    let entry = |start: u64, end: u64, offset: u64| MapsEntry {
        start,
        end,
        offset,
        dev: 0,
        inode: 1,
        exec: true,
        backing: Backing::Anonymous,
    };
    // r-xp at file offset 0xba2000, mapped at 0x5627e9a6d000 (page aligned).
    let e = entry(0x5627_e9a6_d000, 0x5627_e9a6_d000 + 0x1ecc000, 0xba2000);
    let bias = load_bias(&loads, &e).expect("a segment");
    // Link-time 0xba3840 (the segment's start) is at the mapping start + 0x840.
    assert_eq!(0xba3840u64.wrapping_add(bias), e.start + 0x840);
    // A non-PIE executable: linked where it is mapped.
    let loads = [Load {
        offset: 0x1000,
        filesz: 0x5000,
        vaddr: 0x401000,
    }];
    let e = entry(0x401000, 0x406000, 0x1000);
    assert_eq!(load_bias(&loads, &e), Some(0));
    assert_eq!(load_bias(&[], &e), None);
}
