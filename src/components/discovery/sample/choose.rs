//! The choosing: which keys (pods) of each group are kept, sticky across updates.
//!
//! Every key has a stable 64-bit hash (XXH3-64 of its label values, each followed by a `0xff`
//! byte, which never occurs in UTF-8), so the first choice is the same on every instance and
//! after every restart: the keys with the smallest hashes. After that the choice only changes
//! where it must: a chosen key stays chosen while it exists, a vacancy (a chosen key gone, or a
//! larger limit) is filled by the not-yet-chosen key with the smallest hash, and a group that
//! grows keeps its choice. When the limit shrinks (a smaller `max`, or `fraction` of a smaller
//! group) the chosen keys with the largest hashes are let go first.

use std::collections::{BTreeSet, HashMap};

use xxhash_rust::xxh3::Xxh3;

use super::args::Limit;

/// Label values identifying a group (the `group_by` values) or a key (the `key_by` values).
pub type Values = Box<[String]>;

/// A key with its hash; ordered by hash first, so a set of keys iterates in choosing order.
/// (Equal hashes, vanishingly rare, are ordered by the values, so the order stays total and
/// the same everywhere.)
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub hash: u64,
    pub values: Values,
}

impl Key {
    pub fn new(values: Values) -> Key {
        Key {
            hash: hash_values(&values),
            values,
        }
    }
}

/// The stable hash of a list of values (see the module documentation).
pub fn hash_values<S: AsRef<str>>(values: &[S]) -> u64 {
    let mut h = Xxh3::new();
    for v in values {
        h.update(v.as_ref().as_bytes());
        h.update(&[0xff]);
    }
    h.digest()
}

/// The keys chosen in each group, kept from one update to the next (in memory only).
#[derive(Debug, Default)]
pub struct Sampler {
    chosen: HashMap<Values, BTreeSet<Key>>,
}

impl Sampler {
    /// Updates the choice for the groups and keys present now (`present`: every group's distinct
    /// keys). Groups that are gone are forgotten: if one comes back it is chosen afresh.
    pub fn update(&mut self, present: &HashMap<Values, BTreeSet<Key>>, limit: &Limit) {
        self.chosen.retain(|group, _| present.contains_key(group));
        for (group, keys) in present {
            let chosen = self.chosen.entry(group.clone()).or_default();
            chosen.retain(|k| keys.contains(k));
            let n = limit.of(keys.len());
            while chosen.len() > n {
                chosen.pop_last();
            }
            // Vacancies go to the smallest hashes not chosen yet; `keys` iterates by hash.
            for k in keys {
                if chosen.len() >= n {
                    break;
                }
                if !chosen.contains(k) {
                    chosen.insert(k.clone());
                }
            }
        }
    }

    /// The chosen keys of `group` (empty for an unknown group).
    pub fn chosen(&self, group: &[String]) -> Option<&BTreeSet<Key>> {
        self.chosen.get(group)
    }

    /// Is `key` chosen in `group`?
    pub fn is_chosen(&self, group: &[String], key: &Key) -> bool {
        self.chosen(group).is_some_and(|c| c.contains(key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(v: &[&str]) -> Values {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn pods(names: impl IntoIterator<Item = String>) -> BTreeSet<Key> {
        names.into_iter().map(|n| Key::new(values(&[&n]))).collect()
    }

    fn pod_names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("app-{i}")).collect()
    }

    fn max(n: usize) -> Limit {
        Limit {
            max: Some(n),
            fraction: None,
        }
    }

    fn chosen_names(s: &Sampler, group: &Values) -> BTreeSet<String> {
        s.chosen(group)
            .map(|c| c.iter().map(|k| k.values[0].clone()).collect())
            .unwrap_or_default()
    }

    /// The smallest `n` hashes of `names`, computed independently of the sampler.
    fn smallest(names: &[String], n: usize) -> BTreeSet<String> {
        let mut by_hash: Vec<(u64, &String)> = names
            .iter()
            .map(|p| (hash_values(&[p.as_str()]), p))
            .collect();
        by_hash.sort();
        by_hash
            .into_iter()
            .take(n)
            .map(|(_, p)| p.clone())
            .collect()
    }

    #[test]
    fn hash_is_stable_and_separates_values() {
        // Pinned: a change here changes every deployed choice after an upgrade.
        assert_eq!(
            hash_values(&["default", "app-0"]),
            xxhash_rust::xxh3::xxh3_64(b"default\xffapp-0\xff")
        );
        assert_ne!(hash_values(&["ab", "c"]), hash_values(&["a", "bc"]));
        assert_ne!(hash_values(&["a"]), hash_values(&["a", ""]));
    }

    /// Steps applied in order to one sampler: (pods present, limit, expectation).
    #[test]
    fn sticky_choice_table() {
        let g = values(&["ns", "ReplicaSet", "app"]);
        let all20 = pod_names(20);
        let first = smallest(&all20, 3);
        let victim = first.iter().next().cloned().expect("three chosen");
        let without_victim: Vec<String> = all20.iter().filter(|p| **p != victim).cloned().collect();
        let all40 = pod_names(40);

        let mut s = Sampler::default();
        let run = |s: &mut Sampler, names: &[String], limit: Limit| {
            let present = HashMap::from([(g.clone(), pods(names.iter().cloned()))]);
            s.update(&present, &limit);
            chosen_names(s, &g)
        };

        // 1. Fresh: the three smallest hashes.
        assert_eq!(run(&mut s, &all20, max(3)), first);
        // 2. Unchanged input: unchanged choice.
        assert_eq!(run(&mut s, &all20, max(3)), first);
        // 3. A chosen pod goes: exactly one choice moves, to the smallest remaining hash.
        let after = run(&mut s, &without_victim, max(3));
        let kept: BTreeSet<String> = first.iter().filter(|p| **p != victim).cloned().collect();
        assert!(kept.is_subset(&after));
        assert_eq!(after.len(), 3);
        let replacement: BTreeSet<String> = after.difference(&kept).cloned().collect();
        let next = smallest(&without_victim, 3);
        assert_eq!(after, next);
        assert_eq!(replacement.len(), 1);
        // 4. The victim comes back (same name): it does not displace anyone.
        assert_eq!(run(&mut s, &all20, max(3)), after);
        // 5. Scaling to 40 pods keeps the three, even if new pods hash smaller.
        assert_eq!(run(&mut s, &all40, max(3)), after);
        assert_ne!(
            smallest(&all40, 3),
            after,
            "the test wants a smaller new hash"
        );
        // 6. A larger limit adds the smallest unchosen hashes; a smaller one drops the largest.
        let five = run(&mut s, &all40, max(5));
        assert!(after.is_subset(&five));
        assert_eq!(five.len(), 5);
        let two = run(&mut s, &all40, max(2));
        let mut by_hash: Vec<&String> = five.iter().collect();
        by_hash.sort_by_key(|p| hash_values(&[p.as_str()]));
        assert_eq!(two, by_hash[..2].iter().map(|p| (*p).clone()).collect());
        // 7. Fewer pods than the limit: all of them.
        let three = pod_names(3);
        assert_eq!(run(&mut s, &three, max(5)), three.iter().cloned().collect());
        // 8. Fraction: ceil(0.25 * 10) = 3 of ten.
        let ten = pod_names(10);
        let f = Limit {
            max: None,
            fraction: Some(0.25),
        };
        assert_eq!(run(&mut s, &ten, f).len(), 3);
    }

    #[test]
    fn fresh_samplers_agree_and_groups_are_independent() {
        let groups: Vec<Values> = (0..5).map(|i| values(&["ns", &format!("d{i}")])).collect();
        let present: HashMap<Values, BTreeSet<Key>> = groups
            .iter()
            .enumerate()
            .map(|(i, g)| (g.clone(), pods(pod_names(10 + i))))
            .collect();
        let mut a = Sampler::default();
        let mut b = Sampler::default();
        a.update(&present, &max(2));
        b.update(&present, &max(2));
        for (i, g) in groups.iter().enumerate() {
            let want = smallest(&pod_names(10 + i), 2);
            assert_eq!(chosen_names(&a, g), want);
            assert_eq!(chosen_names(&b, g), want);
        }
        // A group that disappears is forgotten; the others keep their choice.
        let mut fewer = present.clone();
        fewer.remove(&groups[0]);
        a.update(&fewer, &max(2));
        assert!(a.chosen(&groups[0]).is_none());
        assert_eq!(chosen_names(&a, &groups[1]), smallest(&pod_names(11), 2));
        let k = Key::new(values(&["app-0"]));
        assert!(!a.is_chosen(&groups[0], &k));
    }
}
