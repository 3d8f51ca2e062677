//! The LRU cache of relabel results, keyed by incoming label set (the component's module
//! documentation says what is cached and when it is emptied or resized).
//!
//! Hand-written, not for speed (nothing was measured against a crate) but because no LRU map
//! is in the dependency tree: neither `lru`, `hashlink` nor `schnellru` is in Cargo.lock
//! (`lru-slab`, which QUIC pulls in, is a fixed-size slab, not a keyed map), and about 140
//! lines did not justify a new dependency. What the component needs from it is small: lookups
//! by a borrowed `&LabelSet`, so a hit allocates nothing, insert with eviction, clear, and a
//! resize that reports how many entries it evicted. `lru::LruCache<Arc<LabelSet>, V>` does all
//! of that (its `get` borrows the key through `Borrow<LabelSet>`); should `lru` enter the tree,
//! it can replace this file.

use std::collections::HashMap;
use std::sync::Arc;

use crate::labels::LabelSet;

const NIL: usize = usize::MAX;

struct Node<V> {
    key: Arc<LabelSet>,
    value: V,
    /// Towards the most recently used end.
    prev: usize,
    /// Towards the least recently used end.
    next: usize,
}

/// A least-recently-used map from label sets to `V` holding at most `capacity` entries: nodes
/// in a vector linked by index (most recently used at `head`), the map giving each key's index.
/// Lookups borrow the key (`&LabelSet`), so a hit allocates nothing.
pub(super) struct Lru<V> {
    map: HashMap<Arc<LabelSet>, usize>,
    nodes: Vec<Node<V>>,
    head: usize,
    tail: usize,
    capacity: usize,
}

impl<V> Lru<V> {
    pub(super) fn new(capacity: usize) -> Self {
        Lru {
            map: HashMap::new(),
            nodes: Vec::new(),
            head: NIL,
            tail: NIL,
            capacity,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }

    /// The value for `key`, which becomes the most recently used entry.
    pub(super) fn get(&mut self, key: &LabelSet) -> Option<&V> {
        let i = *self.map.get(key)?;
        self.unlink(i);
        self.push_front(i);
        Some(&self.nodes[i].value)
    }

    /// Inserts or replaces `key` as the most recently used entry, evicting the least recently
    /// used one when full.
    pub(super) fn insert(&mut self, key: Arc<LabelSet>, value: V) {
        if let Some(&i) = self.map.get(&*key) {
            self.nodes[i].value = value;
            self.unlink(i);
            self.push_front(i);
            return;
        }
        if self.capacity == 0 {
            return;
        }
        while self.len() >= self.capacity {
            self.remove_index(self.tail);
        }
        let i = self.nodes.len();
        self.map.insert(key.clone(), i);
        self.nodes.push(Node {
            key,
            value,
            prev: NIL,
            next: NIL,
        });
        self.push_front(i);
    }

    pub(super) fn clear(&mut self) {
        self.map.clear();
        self.nodes.clear();
        self.head = NIL;
        self.tail = NIL;
    }

    /// Changes the capacity; returns how many least recently used entries were evicted.
    pub(super) fn resize(&mut self, capacity: usize) -> usize {
        self.capacity = capacity;
        let mut evicted = 0;
        while self.len() > capacity {
            self.remove_index(self.tail);
            evicted += 1;
        }
        evicted
    }

    fn unlink(&mut self, i: usize) {
        let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
        match prev {
            NIL => self.head = next,
            p => self.nodes[p].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.nodes[n].prev = prev,
        }
        self.nodes[i].prev = NIL;
        self.nodes[i].next = NIL;
    }

    fn push_front(&mut self, i: usize) {
        self.nodes[i].prev = NIL;
        self.nodes[i].next = self.head;
        match self.head {
            NIL => self.tail = i,
            h => self.nodes[h].prev = i,
        }
        self.head = i;
    }

    /// Removes node `i`, moving the last node into its slot.
    fn remove_index(&mut self, i: usize) {
        if i >= self.nodes.len() {
            return;
        }
        self.unlink(i);
        let removed = self.nodes.swap_remove(i);
        self.map.remove(&*removed.key);
        if i < self.nodes.len() {
            // The node that was last now lives at `i`: repoint its neighbours and its key.
            let (prev, next) = (self.nodes[i].prev, self.nodes[i].next);
            match prev {
                NIL => self.head = i,
                p => self.nodes[p].next = i,
            }
            match next {
                NIL => self.tail = i,
                n => self.nodes[n].prev = i,
            }
            if let Some(slot) = self.map.get_mut(&*self.nodes[i].key) {
                *slot = i;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_evicts_the_least_recently_used_and_survives_slot_moves() {
        let key = |s: &str| -> Arc<LabelSet> { Arc::new([("k", s)].into_iter().collect()) };
        let mut lru = Lru::new(3);
        for (i, k) in ["a", "b", "c"].into_iter().enumerate() {
            lru.insert(key(k), i);
        }
        assert_eq!(lru.get(&key("a")), Some(&0));
        lru.insert(key("d"), 3); // evicts b
        assert_eq!(lru.get(&key("b")), None);
        assert_eq!(lru.len(), 3);
        lru.insert(key("c"), 20); // replace, no eviction
        assert_eq!(lru.len(), 3);
        // Recency now (most recent first): c, d, a. Shrinking to 1 keeps c.
        assert_eq!(lru.resize(1), 2);
        assert_eq!(lru.get(&key("c")), Some(&20));
        assert_eq!(lru.get(&key("a")), None);
        assert_eq!(lru.get(&key("d")), None);
        lru.resize(4);
        for k in ["e", "f", "g", "h"] {
            lru.insert(key(k), 0);
        }
        assert_eq!(lru.get(&key("c")), None);
        for k in ["e", "f", "g", "h"] {
            assert!(lru.get(&key(k)).is_some(), "{k}");
        }
        // Many inserts through a small cache keep the links and the index consistent.
        let mut small = Lru::new(5);
        for i in 0..1000 {
            small.insert(key(&(i % 7).to_string()), i);
            if i % 3 == 0 {
                small.get(&key(&(i % 5).to_string()));
            }
            assert!(small.len() <= 5);
            for (k, &slot) in &small.map {
                assert_eq!(small.nodes[slot].key, *k);
            }
        }
        small.clear();
        assert_eq!(small.len(), 0);
        small.insert(key("x"), 1);
        assert_eq!(small.get(&key("x")), Some(&1));
    }
}
