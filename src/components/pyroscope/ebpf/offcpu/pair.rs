//! Joins the off-CPU program's two records: the STACK record a thread's chosen switch-out
//! wrote, and the END record its switch-in wrote when the block was long enough. A STACK
//! record no END follows was a short block (or its END was lost): the thread's next STACK
//! record replaces it, so at most one waits per thread.
//!
//! Waiting records hold their stack copies (up to 32 KiB each): their count and bytes are
//! bounded, the oldest going first, and counted.

use std::collections::HashMap;

use super::super::sample::RawSample;

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
#[derive(Default)]
pub struct Pairs {
    waiting: HashMap<u32, Waiting>,
    bytes: usize,
    /// Stacks dropped to stay within the bounds before their END came.
    pub evicted: u64,
    /// END records whose STACK record was not there (lost, or evicted).
    pub unmatched: u64,
}

impl Pairs {
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
        while self.waiting.len() > MAX_WAITING || self.bytes > MAX_WAITING_BYTES {
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

    /// Forgets the threads of processes that are gone.
    pub fn retain_pids(&mut self, alive: &dyn Fn(u32) -> bool) {
        let gone: Vec<u32> = self
            .waiting
            .iter()
            .filter(|(_, w)| !alive(w.sample.pid))
            .map(|(&tid, _)| tid)
            .collect();
        for tid in gone {
            self.remove(tid);
        }
    }

    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    fn remove(&mut self, tid: u32) -> Option<RawSample> {
        let w = self.waiting.remove(&tid)?;
        self.bytes = self.bytes.saturating_sub(size(&w.sample));
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
        p.retain_pids(&|pid| pid != 1);
        assert_eq!((p.waiting(), p.bytes), (0, 0));
    }
}
