//! Joins the off-CPU program's records: the STACK record a thread's chosen switch-out wrote,
//! and the END record its switch-in wrote (a DROP record when the block was shorter than
//! `off_cpu_min_block`, which frees the stacks at once). They are paired by thread id *and*
//! switch-out time, so an END only ever takes the stacks of its own switch-out.
//!
//! A STACK record no END or DROP follows (the ring lost it, or the kernel's LRU map let the
//! switch-out time go) waits until the thread's next STACK record replaces it, or until the
//! thread is gone ([`Pairs::retain_threads`], at every collection): a thread id the kernel
//! reuses later must not find it. The kernel never chooses an exiting thread, whose last
//! switch-out has no switch-in.
//!
//! Waiting records hold their stack copies (up to 32 KiB each): their count and bytes are
//! bounded, the oldest going first, and counted in [`Pairs::evicted`]: with DROP records the
//! set holds only threads blocked right now, so evictions mean more chosen threads blocked at
//! once than the bound (~470 whole stack copies): the longest blocks would go unreported.
//! Their bytes are also held in the memory budget (`use="ebpf"`, normal priority, as queued
//! profiles are: they are data not yet sent); when the budget has no room, the oldest go first
//! in the same way, counted alike.

use std::collections::HashMap;

use super::super::sample::RawSample;
use crate::budget::{Budget, Priority, Reservation, Use};

/// Threads whose stacks may wait for their END record at once.
const MAX_WAITING: usize = 8192;
/// Bytes those stacks may take.
const MAX_WAITING_BYTES: usize = 16 << 20;

struct Waiting {
    switched_out: u64,
    sample: RawSample,
}

fn size(s: &RawSample) -> usize {
    s.stack.len() + 8 * (s.user.len() + s.kernel.len()) + std::mem::size_of::<RawSample>()
}

/// Stacks waiting for their block to end.
pub struct Pairs {
    waiting: HashMap<u32, Waiting>,
    bytes: usize,
    /// `bytes`, held in the memory budget.
    memory: Reservation,
    /// Stacks dropped to stay within the bounds before their END came.
    pub evicted: u64,
    /// END records whose STACK record was not there (lost, or evicted).
    pub unmatched: u64,
    /// Stacks freed because their thread was gone before its END came.
    pub orphaned: u64,
}

impl Default for Pairs {
    fn default() -> Self {
        Pairs::new(&Budget::unlimited())
    }
}

impl Pairs {
    pub fn new(budget: &Budget) -> Self {
        Pairs {
            waiting: HashMap::new(),
            bytes: 0,
            memory: budget.reserve(Use::Ebpf, 0),
            evicted: 0,
            unmatched: 0,
            orphaned: 0,
        }
    }

    /// A thread left the CPU: its stacks wait for the END record of this switch-out.
    pub fn stack(&mut self, switched_out: u64, sample: RawSample) {
        self.bytes += size(&sample);
        if let Some(old) = self.waiting.insert(
            sample.tid,
            Waiting {
                switched_out,
                sample,
            },
        ) {
            self.bytes = self.bytes.saturating_sub(size(&old.sample));
        }
        while self.waiting.len() > MAX_WAITING
            || self.bytes > MAX_WAITING_BYTES
            || !self.memory.try_resize(Priority::Normal, self.bytes as u64)
        {
            let Some(oldest) = self
                .waiting
                .iter()
                .min_by_key(|(_, w)| w.switched_out)
                .map(|(&tid, _)| tid)
            else {
                break;
            };
            self.remove(oldest);
            self.evicted += 1;
        }
    }

    /// The thread ran again after a long block: its stacks, if they are those of this
    /// switch-out.
    pub fn end(&mut self, tid: u32, switched_out: u64) -> Option<RawSample> {
        match self.waiting.get(&tid) {
            Some(w) if w.switched_out == switched_out => self.remove(tid),
            _ => {
                self.unmatched += 1;
                None
            }
        }
    }

    /// The thread ran again after a short block: its stacks of this switch-out go.
    pub fn drop_short(&mut self, tid: u32, switched_out: u64) {
        if self
            .waiting
            .get(&tid)
            .is_some_and(|w| w.switched_out == switched_out)
        {
            self.remove(tid);
        }
    }

    /// Forgets the stacks of threads that are gone (`alive(pid, tid)` is false): their END
    /// will never come, and a later thread with the same id must not take them.
    pub fn retain_threads(&mut self, alive: &dyn Fn(u32, u32) -> bool) {
        let gone: Vec<u32> = self
            .waiting
            .iter()
            .filter(|(tid, w)| !alive(w.sample.pid, **tid))
            .map(|(&tid, _)| tid)
            .collect();
        for tid in gone {
            self.remove(tid);
            self.orphaned += 1;
        }
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn remove(&mut self, tid: u32) -> Option<RawSample> {
        let w = self.waiting.remove(&tid)?;
        self.bytes = self.bytes.saturating_sub(size(&w.sample));
        self.memory
            .resize(self.memory.bytes().min(self.bytes as u64));
        Some(w.sample)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(pid: u32, tid: u32, stack: usize) -> RawSample {
        RawSample {
            pid,
            tid,
            comm: [0; 16],
            user: vec![0x401000],
            kernel: vec![],
            regs: None,
            stack: vec![0; stack],
            python: Default::default(),
        }
    }

    #[test]
    fn an_end_takes_the_stack_of_its_own_switch_out_only() {
        let mut p = Pairs::default();
        p.stack(100, sample(1, 10, 64));
        // A short block: no END, the next switch-out replaces it.
        p.stack(200, sample(1, 10, 64));
        assert_eq!(p.waiting(), 1);
        assert!(p.end(10, 100).is_none(), "stale switch-out");
        assert_eq!(p.unmatched, 1);
        let s = p.end(10, 200).expect("paired");
        assert_eq!(s.tid, 10);
        assert!(p.end(10, 200).is_none(), "taken once");
        assert!(p.end(11, 5).is_none(), "never seen");
        assert_eq!(p.unmatched, 3);
        assert_eq!((p.waiting(), p.bytes), (0, 0));
    }

    #[test]
    fn waiting_stacks_are_bounded_oldest_first() {
        let mut p = Pairs::default();
        let big = 32 << 10;
        let fit = MAX_WAITING_BYTES / (big + size(&sample(0, 0, 0)));
        for tid in 0..fit as u32 + 10 {
            p.stack(u64::from(tid), sample(1, tid, big));
        }
        assert!(p.bytes <= MAX_WAITING_BYTES);
        assert_eq!(p.evicted, 10);
        assert!(p.end(0, 0).is_none(), "the oldest went first");
        assert!(p.end(fit as u32 + 9, u64::from(fit as u32 + 9)).is_some());
        p.retain_threads(&|pid, _| pid != 1);
        assert_eq!((p.waiting(), p.bytes), (0, 0));
    }

    #[test]
    fn waiting_stacks_are_held_in_the_memory_budget_oldest_first_when_it_is_short() {
        // A budget whose normal share (80 %) holds three of these stacks, not four.
        let one = (size(&sample(1, 0, 100 << 10)) as u64) * 100 / 80;
        let budget = Budget::new(one * 3 + one / 2);
        let mut p = Pairs::new(&budget);
        for tid in 0..4u32 {
            p.stack(u64::from(tid), sample(1, tid, 100 << 10));
        }
        assert_eq!((p.waiting(), p.evicted), (3, 1));
        assert_eq!(budget.used_by(Use::Ebpf), p.bytes as u64);
        assert!(p.end(0, 0).is_none(), "the oldest went first");
        assert!(p.end(3, 3).is_some());
        assert_eq!(budget.used_by(Use::Ebpf), p.bytes as u64);
        p.retain_threads(&|_, _| false);
        assert_eq!(budget.used_by(Use::Ebpf), 0);
        drop(p);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn a_short_block_frees_its_stacks_at_once() {
        let mut p = Pairs::default();
        p.stack(100, sample(1, 10, 64));
        p.drop_short(10, 99);
        assert_eq!(p.waiting(), 1, "a DROP of another switch-out frees nothing");
        p.drop_short(10, 100);
        assert_eq!((p.waiting(), p.bytes), (0, 0));
        assert!(p.end(10, 100).is_none());
        // Many short blocks never evict a long one.
        p.stack(1, sample(1, 1, 32 << 10));
        for t in 0..10_000u64 {
            let tid = 2 + (t % 4000) as u32;
            p.stack(100 + t, sample(1, tid, 32 << 10));
            p.drop_short(tid, 100 + t);
        }
        assert_eq!(p.evicted, 0);
        assert!(p.end(1, 1).is_some(), "the long block kept its stacks");
    }

    #[test]
    fn an_exited_threads_stack_is_freed_and_never_pairs_with_a_reused_id() {
        let mut p = Pairs::default();
        // Thread 10 of process 1 is chosen as it leaves the CPU, then exits: no END.
        p.stack(100, sample(1, 10, 64));
        // At the next collection thread 10 is gone (pid 1 lives on).
        p.retain_threads(&|pid, tid| pid == 1 && tid != 10);
        assert_eq!((p.waiting(), p.bytes, p.orphaned), (0, 0, 1));
        // The id is reused by a new thread: an END naming the old switch-out (as a stale
        // kernel time would) finds nothing; the new thread's own switch-out pairs.
        assert!(p.end(10, 100).is_none());
        p.stack(5_000, sample(1, 10, 64));
        assert!(p.end(10, 100).is_none(), "not the old switch-out");
        assert_eq!(p.end(10, 5_000).map(|s| s.tid), Some(10));
        assert_eq!(p.unmatched, 2);
    }
}
