//! Label names shared process-wide.
//!
//! Targets repeat the same few dozen names (`__meta_kubernetes_pod_name`, the pods' label
//! keys...) thousands of times. Giving every target its own copy of each name costs memory and,
//! worse, spreads the names over the heap: every lookup's binary search then compares against
//! names that are not in cache (the relabel benchmark spent a quarter of its time there). So a
//! name is stored once and every set holds a handle to it, which also makes copying a set touch
//! only a few hot reference counts.
//!
//! The table only grows, so it is capped: past [`CAP`] distinct names (a config generating
//! label names from values, say) new names are simply not shared.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock, RwLock};

use xxhash_rust::xxh3::Xxh3DefaultBuilder;

use super::LabelName;

/// Most names kept: far above any real discovery (hundreds), and at ~100 bytes per name a few
/// MiB at worst.
const CAP: usize = 50_000;

/// Keyed by XXH3 rather than SipHash: names are not attacker-chosen keys of a long-lived map
/// an attacker can grow (the table is capped), and lookups sit on relabelling's hot path.
type Table = HashSet<LabelName, Xxh3DefaultBuilder>;

fn table() -> &'static RwLock<Table> {
    static NAMES: OnceLock<RwLock<Table>> = OnceLock::new();
    NAMES.get_or_init(|| RwLock::new(Table::default()))
}

/// The shared handle for `name`, allocated (and remembered) on first use.
pub(super) fn name(name: &str) -> LabelName {
    if let Some(n) = crate::sync::read(table()).get(name) {
        return n.clone();
    }
    shared(Arc::from(name))
}

/// The shared handle for a name already allocated: `owned` itself if the name is new.
pub(super) fn shared(owned: LabelName) -> LabelName {
    if let Some(n) = crate::sync::read(table()).get(&*owned) {
        return n.clone();
    }
    let mut t = crate::sync::write(table());
    if let Some(n) = t.get(&*owned) {
        return n.clone();
    }
    if t.len() < CAP {
        t.insert(owned.clone());
    }
    owned
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_allocation_per_name() {
        let a = name("__intern_test_a");
        let b = name("__intern_test_a");
        assert!(Arc::ptr_eq(&a, &b));
        let c = shared(Arc::from("__intern_test_a"));
        assert!(Arc::ptr_eq(&a, &c));
        let d = shared(Arc::from("__intern_test_d"));
        assert!(Arc::ptr_eq(&d, &name("__intern_test_d")));
        assert!(!Arc::ptr_eq(&a, &d));
    }
}
