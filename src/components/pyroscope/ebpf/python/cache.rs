//! The code objects named so far, per process and address, bounded by count and bytes and
//! held in the memory budget (`use="ebpf"`, low priority: a cache, read again from the process
//! when needed). Past either bound, or when the budget has no room, it starts over.

use std::collections::HashMap;
use std::sync::Arc;

use super::code::Code;
use crate::budget::{Budget, Priority, Reservation, Use};

/// Most code objects cached over all processes, and their bytes: a long-running service
/// with thousands of functions stays well under this.
const MAX_CODES: usize = 65_536;
const MAX_CODE_BYTES: usize = 32 << 20;

pub struct CodeCache {
    codes: HashMap<(u32, u64), Arc<Code>>,
    bytes: usize,
    /// `bytes`, held in the memory budget.
    memory: Reservation,
}

impl CodeCache {
    pub fn new(budget: &Budget) -> Self {
        CodeCache {
            codes: HashMap::new(),
            bytes: 0,
            memory: budget.reserve(Use::Ebpf, 0),
        }
    }

    pub fn get(&self, pid: u32, addr: u64) -> Option<Arc<Code>> {
        self.codes.get(&(pid, addr)).cloned()
    }

    /// Keeps `code`. When the budget is short the cache starts over (counted as shed), and
    /// when even this one object has no room it is not kept: the caller names its frame all
    /// the same, and reads it again next time.
    pub fn insert(&mut self, pid: u32, addr: u64, code: Arc<Code>) {
        if self.codes.len() >= MAX_CODES || self.bytes >= MAX_CODE_BYTES {
            self.clear();
        }
        let size = code.size();
        if !self
            .memory
            .try_resize(Priority::Low, (self.bytes + size) as u64)
        {
            self.clear();
            self.memory.budget().count_shed(Use::Ebpf, Priority::Low);
            if !self.memory.try_resize(Priority::Low, size as u64) {
                return;
            }
        }
        self.bytes += size;
        self.codes.insert((pid, addr), code);
    }

    /// Forgets every code object and gives its bytes back to the budget.
    pub fn clear(&mut self) {
        self.codes.clear();
        self.bytes = 0;
        self.memory.resize(0);
    }

    pub fn count(&self) -> usize {
        self.codes.len()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(linetable: usize) -> Arc<Code> {
        Arc::new(Code {
            qualname: Arc::from("f"),
            filename: Arc::from("f.py"),
            firstlineno: 1,
            start: 0,
            linetable: vec![0; linetable],
        })
    }

    #[test]
    fn the_cache_is_held_in_the_budget_and_starts_over_when_it_is_short() {
        let one = code(10_000).size() as u64;
        // Low priority may fill 70 %: room for two objects, not three.
        let budget = Budget::new(one * 100 / 70 * 2 + one / 2);
        let mut cache = CodeCache::new(&budget);
        cache.insert(1, 0x10, code(10_000));
        cache.insert(1, 0x20, code(10_000));
        assert_eq!((cache.count(), budget.used_by(Use::Ebpf)), (2, 2 * one));
        // The third has no room: the cache starts over with it.
        cache.insert(1, 0x30, code(10_000));
        assert_eq!((cache.count(), budget.used_by(Use::Ebpf)), (1, one));
        assert!(cache.get(1, 0x30).is_some() && cache.get(1, 0x10).is_none());
        // One too big for the budget on its own is not kept.
        cache.insert(2, 0x40, code(10 * 10_000));
        assert_eq!((cache.count(), budget.used_by(Use::Ebpf)), (0, 0));
        cache.insert(1, 0x10, code(10_000));
        cache.clear();
        assert_eq!((cache.count(), cache.bytes(), budget.used()), (0, 0, 0));
    }

    #[test]
    fn without_a_limit_the_count_bound_still_holds() {
        let mut cache = CodeCache::new(&Budget::unlimited());
        for i in 0..MAX_CODES as u64 + 5 {
            cache.insert(1, i, code(0));
        }
        assert_eq!(cache.count(), 5, "started over at the bound");
    }
}
