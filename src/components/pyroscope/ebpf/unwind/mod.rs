//! User-space unwinding of the stacks the BPF program copies: from a thread's registers and
//! the top of its stack to the return addresses of every frame, with no frame pointers
//! needed.
//!
//! Each frame is stepped by the first of these that covers its pc:
//! * a signal frame (`__restore_rt`): the interrupted registers are read back from the
//!   `ucontext` the kernel saved on the stack ([`signal`]);
//! * Go code: the function's SP delta at that pc from `.gopclntab` (stripped Go binaries have
//!   no other CFI for Go code, and Go's frameless leaves break frame-pointer walks);
//! * the file's call-frame information, `.eh_frame` (or `.debug_frame`), evaluated by the
//!   `framehop` crate, which caches the rule per address;
//! * frame pointers, for code with no CFI (JIT code, anonymous mappings).
//!
//! A stack is complete when a frame's CFI says there is no caller (`_start`, a thread's
//! `clone3`), Go's table marks a top frame (`runtime.goexit`, `runtime.mstart`), or the return
//! address is 0. Otherwise it ends for a [`Reason`], counted in [`Stats`], and the session marks
//! it `[truncated]`.
//!
//! Everything here runs on the session thread, when a sample is drained, while the process is
//! alive: the stack copy is used once and dropped, so memory is the images ([`images`]) and
//! the per-process module lists.

mod image;
mod images;
mod signal;

#[cfg(test)]
mod census;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, Instant};

use framehop::Unwinder as _;
use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{Error as StepError, FrameAddress};

use super::sample::UserRegs;
use super::symbolize::maps::{self, Backing, MapsEntry};
use crate::budget::Budget;
use image::{Bytes, Image};
use images::{Images, Shared};

/// Deepest user stack unwound; deeper stacks end as truncated by [`Reason::DepthLimit`].
pub const MAX_DEPTH: usize = 256;
/// A pc outside every known mapping re-reads the process's maps at most this often.
const MAPS_REREAD_MIN: Duration = Duration::from_millis(250);

/// Why a stack could not be unwound to its root.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Reason {
    /// The sample carried no registers or stack copy (frame-pointer mode, or a kernel thread).
    NoStackCopy,
    /// A frame's caller lies above the copied part of the stack: the stack is deeper than the
    /// copy.
    StackCopyExhausted,
    /// A step read below the stack pointer or made no progress: the unwind information (or the
    /// frame-pointer guess for code without it) did not match the code.
    BadFrame,
    /// A pc in no executable mapping of the process (JIT code, or a garbage return address).
    UnknownMapping,
    /// The process's maps could not be read (it exited, or we may not read it).
    ProcessUnreadable,
    /// More than [`MAX_DEPTH`] frames.
    DepthLimit,
    /// A Go function that switches stacks (`runtime.systemstack`, `runtime.mcall`, ...): its
    /// caller is on another stack, which only the goroutine's saved context (not the sample)
    /// could find. Go's own traceback stops there too.
    GoStackSwitch,
}

impl Reason {
    pub const ALL: [Reason; 7] = [
        Reason::NoStackCopy,
        Reason::StackCopyExhausted,
        Reason::BadFrame,
        Reason::UnknownMapping,
        Reason::ProcessUnreadable,
        Reason::DepthLimit,
        Reason::GoStackSwitch,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoStackCopy => "no_stack_copy",
            Reason::StackCopyExhausted => "stack_copy_exhausted",
            Reason::BadFrame => "bad_frame",
            Reason::UnknownMapping => "unknown_mapping",
            Reason::ProcessUnreadable => "process_unreadable",
            Reason::DepthLimit => "depth_limit",
            Reason::GoStackSwitch => "go_stack_switch",
        }
    }
}

/// How an unwound stack ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// At the stack's true root.
    Root,
    Truncated(Reason),
}

/// Counters for the debug info and metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    pub stacks: u64,
    pub complete: u64,
    /// Truncated stacks by reason.
    pub truncated: HashMap<&'static str, u64>,
    pub frames: u64,
    /// Frames stepped with Go's function table.
    pub go_frames: u64,
    pub signal_frames: u64,
    /// Unwind images held, and their bytes.
    pub images: usize,
    pub image_bytes: u64,
    pub image_loads: u64,
    pub image_evictions: u64,
    /// Files whose unwind information could not be read (frame pointers there).
    pub image_failures: u64,
    pub processes: usize,
}

/// An executable mapping of a process and what steps its frames.
struct Region {
    range: Range<u64>,
    /// Run-time address of link-time address 0.
    bias: u64,
    image: Option<Shared>,
    go: bool,
}

struct Proc {
    regions: Vec<Region>,
    unwinder: UnwinderX86_64<Bytes>,
    read_at: Instant,
}

impl Proc {
    fn region(&self, pc: u64) -> Option<&Region> {
        let i = self.regions.partition_point(|r| r.range.start <= pc);
        let r = self.regions.get(i.checked_sub(1)?)?;
        r.range.contains(&pc).then_some(r)
    }
}

pub struct Unwinder {
    procs: HashMap<u32, Proc>,
    images: Images,
    vdso: Option<Shared>,
    cache: CacheX86_64,
    stats: Stats,
}

impl Unwinder {
    pub fn new(budget: Budget) -> Self {
        Unwinder {
            procs: HashMap::new(),
            images: Images::new(budget),
            vdso: load_vdso(),
            cache: CacheX86_64::new(),
            stats: Stats::default(),
        }
    }

    pub fn stats(&self) -> Stats {
        let mut s = self.stats.clone();
        s.images = self.images.len();
        s.image_bytes = self.images.bytes();
        s.image_loads = self.images.loads;
        s.image_evictions = self.images.evictions;
        s.image_failures = self.images.failures;
        s.processes = self.procs.len();
        s
    }

    /// Forgets processes that are gone (their frames were unwound when their samples came).
    pub fn retain_pids(&mut self, alive: &dyn Fn(u32) -> bool) {
        self.procs.retain(|&pid, _| alive(pid));
        self.images.forget_failures();
    }

    /// Unwinds one sample of `pid` into `out` (leaf first: the pc, then return addresses).
    pub fn unwind(
        &mut self,
        pid: u32,
        regs: Option<UserRegs>,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) -> End {
        let end = self.walk(pid, regs, stack, out);
        self.stats.stacks += 1;
        self.stats.frames += out.len() as u64;
        match end {
            End::Root => self.stats.complete += 1,
            End::Truncated(r) => *self.stats.truncated.entry(r.as_str()).or_default() += 1,
        }
        end
    }

    fn walk(&mut self, pid: u32, regs: Option<UserRegs>, stack: &[u8], out: &mut Vec<u64>) -> End {
        let Some(regs) = regs else {
            return End::Truncated(Reason::NoStackCopy);
        };
        if stack.is_empty() {
            return End::Truncated(Reason::NoStackCopy);
        }
        if self.proc(pid, regs.ip).is_none() {
            return End::Truncated(Reason::ProcessUnreadable);
        }
        let copy = StackCopy {
            sp: regs.sp,
            bytes: stack,
        };
        let mut state = UnwindRegsX86_64::new(regs.ip, regs.sp, regs.bp);
        let mut frame = FrameAddress::from_instruction_pointer(regs.ip);
        out.push(regs.ip);
        loop {
            if out.len() >= MAX_DEPTH {
                return End::Truncated(Reason::DepthLimit);
            }
            let pc = frame.address();
            if self.proc(pid, pc).is_none() {
                return End::Truncated(Reason::ProcessUnreadable);
            }
            let Some(proc) = self.procs.get(&pid) else {
                return End::Truncated(Reason::ProcessUnreadable);
            };
            let region = proc.region(frame.address_for_lookup());
            // A return address into a signal trampoline (or, for the first frame, a pc inside
            // one, as when the sample lands in rt_sigreturn itself): the caller is the
            // interrupted code, whose registers the kernel saved in the signal frame.
            if let Some(r) = region
                && let Some(image) = &r.image
                && signal::in_trampoline(image, pc - r.bias, frame.is_return_address())
            {
                let Some(interrupted) = signal::interrupted(&copy, state.sp()) else {
                    return End::Truncated(copy.reason(state.sp() + signal::UCONTEXT_RIP));
                };
                self.stats.signal_frames += 1;
                if frame.is_return_address()
                    && let Some(last) = out.last_mut()
                {
                    // The kernel made the trampoline's first instruction the handler's return
                    // address: it is not after a call, so it is named as it is (see below).
                    *last = pc + 1;
                }
                state = UnwindRegsX86_64::new(interrupted.ip, interrupted.sp, interrupted.bp);
                frame = FrameAddress::from_instruction_pointer(interrupted.ip);
                // Addresses after the first are return addresses, which the symbolizer looks up
                // one byte back (inside the call); an interrupted instruction is no return
                // address, so it goes in one byte on to be named exactly.
                out.push(interrupted.ip.wrapping_add(1));
                continue;
            }
            let sp_before = state.sp();
            let step = match region {
                Some(r) if r.go => {
                    let Some(image) = &r.image else {
                        return End::Truncated(Reason::BadFrame);
                    };
                    let lookup = frame.address_for_lookup() - r.bias;
                    let go = image.lock().ok().and_then(|mut i| i.go_frame(lookup));
                    match go {
                        Some(f) if f.spwrite && !f.top => {
                            return End::Truncated(Reason::GoStackSwitch);
                        }
                        Some(f) => {
                            self.stats.go_frames += 1;
                            go_step(f, &mut state, &copy)
                        }
                        // Non-Go code in a Go binary (cgo, the C runtime of an externally
                        // linked binary): its CFI.
                        None => proc.unwinder.unwind_frame(
                            frame,
                            &mut state,
                            &mut self.cache,
                            &mut |a| copy.read(a),
                        ),
                    }
                }
                Some(_) => {
                    proc.unwinder
                        .unwind_frame(frame, &mut state, &mut self.cache, &mut |a| copy.read(a))
                }
                None => return End::Truncated(Reason::UnknownMapping),
            };
            match step {
                Ok(Some(0)) | Ok(None) => return End::Root,
                Ok(Some(ra)) => {
                    // Callers live at higher addresses: a step that does not move up would loop
                    // or walk garbage.
                    if state.sp() <= sp_before && frame.is_return_address() {
                        return End::Truncated(Reason::BadFrame);
                    }
                    out.push(ra);
                    frame = match FrameAddress::from_return_address(ra) {
                        Some(f) => f,
                        None => return End::Root,
                    };
                }
                Err(StepError::CouldNotReadStack(addr)) => {
                    return End::Truncated(copy.reason(addr));
                }
                Err(_) => return End::Truncated(Reason::BadFrame),
            }
        }
    }

    /// The process's regions, read on first sight and again (rate limited) when `pc` is in
    /// none of them, as after a `dlopen`.
    fn proc(&mut self, pid: u32, pc: u64) -> Option<()> {
        let stale = match self.procs.get(&pid) {
            Some(p) => p.region(pc).is_none() && p.read_at.elapsed() >= MAPS_REREAD_MIN,
            None => true,
        };
        if stale {
            let text = std::fs::read(format!("/proc/{pid}/maps")).ok()?;
            let entries = maps::parse(&text);
            let p = self.build(pid, &entries);
            self.procs.insert(pid, p);
        }
        Some(())
    }

    fn build(&mut self, pid: u32, entries: &[MapsEntry]) -> Proc {
        let mut unwinder = UnwinderX86_64::new();
        let mut regions = Vec::new();
        for e in entries.iter().filter(|e| e.exec) {
            let name = e.module_name();
            let image = match &e.backing {
                Backing::File { .. } => self.images.get(pid, e, &name),
                Backing::Special(s) if s == "[vdso]" => self.vdso.clone(),
                _ => None,
            };
            let mut bias = e.start;
            let mut go = false;
            if let Some(shared) = &image
                && let Ok(img) = shared.lock()
            {
                if let Some(b) = load_bias(&img.info.loads, e) {
                    bias = b;
                }
                go = img.is_go();
                if img.has_cfi() {
                    unwinder.add_module(img.module(e.start..e.end, bias));
                }
            }
            regions.push(Region {
                range: e.start..e.end,
                bias,
                image,
                go,
            });
        }
        regions.sort_by_key(|r| r.range.start);
        Proc {
            regions,
            unwinder,
            read_at: Instant::now(),
        }
    }
}

/// The run-time address of link-time address 0 for the mapping `e`: through the `PT_LOAD`
/// segment that overlaps the mapped file range most. (The mapping starts at a page-aligned
/// offset, which often also lies in the previous segment's last page, so the segment holding
/// `e.offset` itself can be the wrong one.)
fn load_bias(
    loads: &[crate::components::pyroscope::ebpf::symbolize::elf::Load],
    e: &MapsEntry,
) -> Option<u64> {
    let len = e.end - e.start;
    let l = loads
        .iter()
        .filter(|l| l.offset < e.offset + len && l.offset + l.filesz > e.offset)
        .max_by_key(|l| (l.offset + l.filesz).min(e.offset + len) - l.offset.max(e.offset))?;
    // avma(l.offset) = e.start + (l.offset - e.offset), and avma = vaddr + bias.
    Some(
        e.start
            .wrapping_add(l.offset)
            .wrapping_sub(e.offset)
            .wrapping_sub(l.vaddr),
    )
}

/// Steps out of a Go function: the return address sits `sp_delta` above the stack pointer,
/// and the caller's frame pointer (saved by every Go function with a frame) just below it.
fn go_step(
    f: crate::components::pyroscope::ebpf::symbolize::gopclntab::GoFrame,
    regs: &mut UnwindRegsX86_64,
    copy: &StackCopy,
) -> Result<Option<u64>, StepError> {
    if f.top {
        return Ok(None);
    }
    let sp = regs.sp();
    let slot = sp
        .checked_add(u64::from(f.sp_delta))
        .ok_or(StepError::IntegerOverflow)?;
    let ra = copy
        .read(slot)
        .map_err(|()| StepError::CouldNotReadStack(slot))?;
    if f.sp_delta >= 16 {
        // A frame of its own: BP was saved just below the return address.
        if let Ok(bp) = copy.read(slot - 8) {
            regs.set_bp(bp);
        }
    }
    regs.set_sp(slot + 8);
    regs.set_ip(ra);
    Ok(Some(ra))
}

/// The stack bytes the BPF program copied, from `sp` upwards.
struct StackCopy<'a> {
    sp: u64,
    bytes: &'a [u8],
}

impl StackCopy<'_> {
    fn read(&self, addr: u64) -> Result<u64, ()> {
        let off = addr.checked_sub(self.sp).ok_or(())? as usize;
        let word = self
            .bytes
            .get(off..off.checked_add(8).ok_or(())?)
            .ok_or(())?;
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        Ok(u64::from_ne_bytes(w))
    }

    /// Why a read of `addr` failed.
    fn reason(&self, addr: u64) -> Reason {
        if addr
            >= self
                .sp
                .saturating_add(self.bytes.len() as u64)
                .saturating_sub(8)
        {
            Reason::StackCopyExhausted
        } else {
            Reason::BadFrame
        }
    }
}

/// Our own vDSO, which is the image every process on this kernel maps.
fn load_vdso() -> Option<Shared> {
    let text = std::fs::read("/proc/self/maps").ok()?;
    let entry = maps::parse(&text)
        .into_iter()
        .find(|e| matches!(&e.backing, Backing::Special(s) if s == "[vdso]"))?;
    let len = usize::try_from((entry.end - entry.start).min(1 << 20)).ok()?;
    let mut image = vec![0u8; len];
    use std::os::unix::fs::FileExt as _;
    std::fs::File::open("/proc/self/mem")
        .and_then(|f| f.read_exact_at(&mut image, entry.start))
        .ok()?;
    match Image::from_bytes(&image, Arc::from("[vdso]")) {
        Ok(img) => Some(Arc::new(std::sync::Mutex::new(img))),
        Err(e) => {
            tracing::debug!(error = %e, "vDSO unwind information unreadable");
            None
        }
    }
}
