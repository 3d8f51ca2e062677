//! Label names shared process-wide: the process's one global cache (docs/ARCHITECTURE.md,
//! `src/labels/`).
//!
//! Targets repeat the same few dozen names (`__meta_kubernetes_pod_name`, the pods' label
//! keys...) thousands of times. Giving every target its own copy of each name costs memory and,
//! worse, spreads the names over the heap: every lookup's binary search then compares against
//! names that are not in cache (the relabel benchmark spent a quarter of its time there). So a
//! name is stored once and every set holds a handle to it. Because the table only grows and is
//! never freed, a stored name lives as long as the process and the handle is a `&'static str`:
//! copying or dropping it counts nothing (see `name.rs` for why that matters).
//!
//! Being never freed, the table is capped: past [`CAP`] distinct names (a
//! config generating label names from values, say) new names are simply not shared, and a flag
//! set when the cap is reached keeps such lookups off the write lock. Names a network client
//! chooses (push and ingest labels) are not interned at all (`LabelSet::from_unshared`), and the
//! table's hash is seeded per process, so nobody can aim colliding names at it from outside.

use std::cell::Cell;
use std::collections::HashSet;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{OnceLock, RwLock};

use super::LabelName;

/// Most names kept: far above any real discovery (hundreds), and at ~100 bytes per name a few
/// MiB at worst.
const CAP: usize = 50_000;

/// XXH3 keyed by a per-process random seed: lookups sit on relabelling's hot path (SipHash
/// would cost several times more per name), and the seed means colliding names cannot be
/// computed from the source ahead of time.
#[derive(Clone)]
struct Seeded(u64);

impl Default for Seeded {
    fn default() -> Self {
        // std's RandomState carries per-process random keys; hashing a constant with it is a
        // random u64 without a dependency on a random-number crate.
        Seeded(std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64))
    }
}

struct SeededHasher(u64);

impl Hasher for SeededHasher {
    fn write(&mut self, bytes: &[u8]) {
        self.0 = xxhash_rust::xxh3::xxh3_64_with_seed(bytes, self.0);
    }
    /// `str`'s `Hash` ends every string with a `0xff` byte; folding it in with a bijection
    /// instead of a second XXH3 call keeps a lookup to one pass over the name.
    fn write_u8(&mut self, byte: u8) {
        self.0 = self.0.rotate_left(8) ^ u64::from(byte);
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

impl BuildHasher for Seeded {
    type Hasher = SeededHasher;
    fn build_hasher(&self) -> SeededHasher {
        SeededHasher(self.0)
    }
}

/// A capped table of shared names. Each is leaked on insertion: the table keeps it for the
/// life of the process anyway, and the `'static` lifetime is what lets handles skip counting.
struct Interner {
    names: RwLock<HashSet<&'static str, Seeded>>,
    /// Set once `names` holds `cap` names (it never shrinks): new names then skip the write
    /// lock, which every unshared name would otherwise take on every lookup.
    full: AtomicBool,
    cap: usize,
}

impl Interner {
    fn new(cap: usize) -> Self {
        Interner {
            names: RwLock::new(HashSet::default()),
            full: AtomicBool::new(false),
            cap,
        }
    }

    fn name(&self, name: &str) -> LabelName {
        if let Some(n) = crate::sync::read(&self.names).get(name) {
            return LabelName::from_static(n);
        }
        if self.full.load(Ordering::Acquire) {
            return LabelName::from(name);
        }
        self.insert(name).unwrap_or_else(|| LabelName::from(name))
    }

    fn shared(&self, owned: LabelName) -> LabelName {
        if owned.as_static().is_some() {
            return owned;
        }
        if let Some(n) = crate::sync::read(&self.names).get(&*owned) {
            return LabelName::from_static(n);
        }
        if self.full.load(Ordering::Acquire) {
            return owned;
        }
        self.insert(&owned).unwrap_or(owned)
    }

    /// The shared handle of `name`, stored now unless another thread was first; `None` when the
    /// table is full.
    fn insert(&self, name: &str) -> Option<LabelName> {
        let mut t = crate::sync::write(&self.names);
        if let Some(n) = t.get(name) {
            return Some(LabelName::from_static(n));
        }
        if t.len() >= self.cap {
            self.full.store(true, Ordering::Release);
            return None;
        }
        let stored: &'static str = Box::leak(Box::from(name));
        t.insert(stored);
        if t.len() >= self.cap {
            self.full.store(true, Ordering::Release);
        }
        Some(LabelName::from_static(stored))
    }
}

fn table() -> &'static Interner {
    static NAMES: OnceLock<Interner> = OnceLock::new();
    NAMES.get_or_init(|| Interner::new(CAP))
}

/// Slots of [`RECENT`]: a power of two, above the names one rule list writes.
const RECENT_SLOTS: usize = 64;

thread_local! {
    /// Names this thread looked up lately, by a cheap hash of their text: `labelmap` looks up
    /// the same new names for every target, and a hit here is one comparison instead of a
    /// seeded hash and the table's lock. Only shared (`'static`) names are kept, so an entry
    /// is never stale.
    static RECENT: [Cell<Option<&'static str>>; RECENT_SLOTS] =
        const { [const { Cell::new(None) }; RECENT_SLOTS] };
}

/// [`RECENT`]'s slot for `name`: its length, last and middle bytes (names of one rule list
/// differ in those far more often than not; a collision only costs a table lookup).
fn recent_slot(name: &str) -> usize {
    let b = name.as_bytes();
    let (last, mid) = (b.last().copied(), b.get(b.len() / 2).copied());
    let h = b.len().wrapping_mul(31) ^ usize::from(last.unwrap_or(0));
    (h.wrapping_mul(31) ^ usize::from(mid.unwrap_or(0))) & (RECENT_SLOTS - 1)
}

/// The shared handle for `name`, allocated (and remembered) on first use.
pub(super) fn name(name: &str) -> LabelName {
    let slot = recent_slot(name);
    if let Some(hit) = RECENT.with(|r| r[slot].get())
        && hit == name
    {
        return LabelName::from_static(hit);
    }
    let found = table().name(name);
    if let Some(s) = found.as_static() {
        RECENT.with(|r| r[slot].set(Some(s)));
    }
    found
}

/// The shared handle for a name already allocated: `owned` itself if the name is new.
pub(super) fn shared(owned: LabelName) -> LabelName {
    table().shared(owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, mpsc};
    use std::time::Duration;

    #[test]
    fn one_allocation_per_name() {
        let a = name("__intern_test_a");
        let b = name("__intern_test_a");
        assert!(LabelName::ptr_eq(&a, &b));
        assert!(a.as_static().is_some(), "a shared name counts nothing");
        let c = shared(LabelName::from("__intern_test_a"));
        assert!(LabelName::ptr_eq(&a, &c));
        let d = shared(LabelName::from("__intern_test_d"));
        assert!(LabelName::ptr_eq(&d, &name("__intern_test_d")));
        assert!(!LabelName::ptr_eq(&a, &d));
    }

    #[test]
    fn the_recent_memo_answers_only_its_own_name() {
        // Pairs sharing a memo slot (same length, last and middle bytes) or differing only in
        // length or in a byte the slot ignores: each lookup, in any order, gives its own name.
        let pairs = [
            ("__memo_test_Ab_cd_x", "__memo_test_Zb_cd_x"),
            ("__memo_test_len", "__memo_test_len_"),
            ("__memo_test_q", "__memo_test_"),
        ];
        for (a, b) in pairs {
            if a.len() == b.len() {
                assert_eq!(recent_slot(a), recent_slot(b), "{a} and {b} should collide");
            }
            let first_a = name(a);
            for _ in 0..3 {
                for n in [a, b, b, a] {
                    let got = name(n);
                    assert_eq!(&*got, n);
                    assert!(LabelName::ptr_eq(&got, &name(n)));
                }
            }
            assert!(LabelName::ptr_eq(&first_a, &name(a)));
            assert!(!LabelName::ptr_eq(&name(a), &name(b)));
        }
    }

    #[test]
    fn seeds_differ_per_table() {
        // Two builders hash alike only if the random keys repeat (chance 2^-64).
        let (a, b) = (Seeded::default(), Seeded::default());
        assert_ne!(a.hash_one("name"), b.hash_one("name"));
        assert_eq!(a.hash_one("name"), a.hash_one("name"));
    }

    #[test]
    fn a_full_table_shares_old_names_and_leaves_the_write_lock_alone() {
        let t = Arc::new(Interner::new(2));
        let a = t.name("a");
        let b = t.shared(LabelName::from("b"));
        assert!(t.full.load(Ordering::Acquire), "full at the cap");
        let c1 = t.name("c");
        let c2 = t.shared(LabelName::from("c"));
        assert!(
            !LabelName::ptr_eq(&c1, &c2),
            "past the cap a name is not shared"
        );
        assert!(c1.as_static().is_none() && c2.as_static().is_none());
        assert_eq!((&*c1, &*c2), ("c", "c"));
        assert!(LabelName::ptr_eq(&a, &t.name("a")));
        assert!(LabelName::ptr_eq(&b, &t.name("b")));

        // With a read guard held elsewhere, a lookup that took the write lock would block:
        // new names past the cap must come back anyway (hang guard, not a timing assertion).
        let guard = crate::sync::read(&t.names);
        let (tx, rx) = mpsc::channel();
        let t2 = Arc::clone(&t);
        let worker = std::thread::spawn(move || {
            let d = t2.name("d");
            let e = t2.shared(LabelName::from("e"));
            let _ = tx.send((d.to_string(), e.to_string()));
        });
        let got = rx.recv_timeout(Duration::from_secs(30));
        drop(guard);
        worker.join().expect("worker");
        assert_eq!(
            got.expect("a full table took the write lock"),
            ("d".to_string(), "e".to_string())
        );
        assert_eq!(crate::sync::read(&t.names).len(), 2);
    }
}
