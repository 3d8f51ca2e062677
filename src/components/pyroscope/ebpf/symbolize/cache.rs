//! Bounded caches: resolved frames by (module, file offset), and interned function names.

use std::collections::{HashMap, HashSet};
use std::mem;
use std::sync::Arc;

use super::Frame;
use super::module::ModuleId;

/// Two generations: lookups that hit the old one are promoted, and when the current one fills
/// up the old one is dropped whole. Cheaper than a true LRU and keeps what is still being hit.
#[derive(Debug)]
pub(crate) struct AddrCache {
    current: HashMap<(ModuleId, u64), Frame>,
    old: HashMap<(ModuleId, u64), Frame>,
    generation_cap: usize,
    pub hits: u64,
    pub misses: u64,
}

impl AddrCache {
    pub fn new(generation_cap: usize) -> Self {
        AddrCache {
            current: HashMap::new(),
            old: HashMap::new(),
            generation_cap: generation_cap.max(1),
            hits: 0,
            misses: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.current.len() + self.old.len()
    }

    pub fn get(&mut self, key: (ModuleId, u64)) -> Option<Frame> {
        if let Some(f) = self.current.get(&key) {
            self.hits += 1;
            return Some(f.clone());
        }
        if let Some(f) = self.old.remove(&key) {
            self.hits += 1;
            self.insert_current(key, f.clone());
            return Some(f);
        }
        self.misses += 1;
        None
    }

    pub fn insert(&mut self, key: (ModuleId, u64), frame: Frame) {
        self.insert_current(key, frame);
    }

    fn insert_current(&mut self, key: (ModuleId, u64), frame: Frame) {
        if self.current.len() >= self.generation_cap {
            self.old = mem::take(&mut self.current);
        }
        self.current.insert(key, frame);
    }
}

/// One allocation per distinct function name, shared by every frame naming it.
#[derive(Debug)]
pub(crate) struct Interner {
    names: HashSet<Arc<str>>,
    cap: usize,
}

impl Interner {
    pub fn new(cap: usize) -> Self {
        Interner {
            names: HashSet::new(),
            cap: cap.max(1),
        }
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn intern(&mut self, name: &str) -> Arc<str> {
        if let Some(n) = self.names.get(name) {
            return Arc::clone(n);
        }
        // Frames keep their names alive; forgetting the set only costs sharing for new ones.
        if self.names.len() >= self.cap {
            self.names.clear();
        }
        let n: Arc<str> = Arc::from(name);
        self.names.insert(Arc::clone(&n));
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(f: &str) -> Frame {
        Frame {
            function: Arc::from(f),
            module: Arc::from("m"),
            source: None,
        }
    }

    #[test]
    fn generations_bound_and_promote() {
        let mut c = AddrCache::new(2);
        c.insert((2, 1), frame("a"));
        c.insert((2, 2), frame("b"));
        // Full: a and b move to the old generation.
        c.insert((2, 3), frame("c"));
        assert_eq!(c.len(), 3);
        // Hitting a promotes it.
        assert_eq!(
            c.get((2, 1)).map(|f| f.function.to_string()),
            Some("a".into())
        );
        // current = {c, a}; inserting d drops the old generation (b).
        c.insert((2, 4), frame("d"));
        assert!(c.get((2, 2)).is_none());
        assert!(c.get((2, 1)).is_some());
        assert!(c.get((2, 3)).is_some());
        assert!(c.len() <= 4);
        assert_eq!(c.misses, 1);
    }

    #[test]
    fn interner_shares_and_bounds() {
        let mut i = Interner::new(2);
        let a = i.intern("a");
        let a2 = i.intern("a");
        assert!(Arc::ptr_eq(&a, &a2));
        i.intern("b");
        i.intern("c");
        assert!(i.len() <= 2);
    }
}
