//! Who owns a key: rendezvous (highest-random-weight) hashing over the live peers.
//!
//! Each (peer, key) pair gets a score from a seeded hash that every instance computes alike
//! (xxh3 with fixed seeds, no per-process randomness); the peer with the highest score owns the
//! key. A peer that leaves gives up only its own keys, each to the peer that scored next for
//! it, and a peer that joins takes from each other peer about 1/N of its keys: no other key
//! moves, which is what keeps cumulative series on the peer that holds their baseline.
//!
//! A peer is identified by the address the others reach it at (`host:port`), the one name every
//! instance agrees on: the EndpointSlice lists addresses, and `--cluster.advertise-address` is
//! the same address seen from the inside, both spelt as `cluster::addr` spells them.

use std::sync::Arc;

use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// Seed of the key hash, so that a key's hash is not the score of any peer.
const KEY_SEED: u64 = 0x7363_7261_7065_7231;

/// One live peer of the ring.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// `host:port` the peers reach it at; what the ring hashes.
    pub address: Arc<str>,
    /// For people: the pod name, or the node name a peer gave itself.
    pub name: Arc<str>,
    seed: u64,
}

impl Member {
    pub fn new(address: &str, name: &str) -> Member {
        Member {
            address: Arc::from(address),
            name: Arc::from(name),
            seed: xxh3_64(address.as_bytes()),
        }
    }

    /// This member's weight for `key`.
    fn score(&self, key: u64) -> u64 {
        xxh3_64_with_seed(&key.to_le_bytes(), self.seed)
    }
}

/// The key of a target: its labels without the `__meta_*` ones (Alloy's choice, so that
/// discovery metadata such as a pod's changing status does not move a target), in sorted
/// order as a label set keeps them. Every profile type of the target shares it, so a target's
/// loops stay together on one peer.
pub fn target_key<'a>(labels: impl IntoIterator<Item = (&'a str, &'a str)>) -> u64 {
    target_key_in(&mut Vec::new(), labels)
}

/// [`target_key`], building the bytes in `bytes` (cleared first), so that a caller keying many
/// targets reuses one buffer.
pub fn target_key_in<'a>(
    bytes: &mut Vec<u8>,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> u64 {
    bytes.clear();
    for (name, value) in labels {
        if name.starts_with("__meta_") {
            continue;
        }
        // 0xff never occurs in UTF-8, so no two label sets give the same bytes.
        bytes.extend_from_slice(name.as_bytes());
        bytes.push(0xff);
        bytes.extend_from_slice(value.as_bytes());
        bytes.push(0xff);
    }
    xxh3_64_with_seed(bytes, KEY_SEED)
}

/// The live peers at one moment, this instance among them.
#[derive(Clone, Debug)]
pub struct Membership {
    /// Sorted by address, never empty (this instance is always a member while running).
    members: Vec<Member>,
    /// This instance's index in `members`.
    local: usize,
    /// Bumped on each change, for logs and the peers view.
    pub version: u64,
    /// Whether the peers are known: the membership source has listed them once and each has
    /// answered or failed enough checks to be out (or 10 s passed). Until then this instance owns nothing rather than everything, so that a
    /// starting instance does not scrape the targets its peers are scraping.
    pub settled: bool,
}

impl Membership {
    /// A ring of this instance alone.
    pub fn alone(local: Member) -> Membership {
        Membership {
            members: vec![local],
            local: 0,
            version: 0,
            settled: true,
        }
    }

    /// The ring of `local` and `others` (duplicates of an address, and of `local`'s, dropped).
    pub fn new(local: Member, others: impl IntoIterator<Item = Member>, version: u64) -> Self {
        let mut members: Vec<Member> = others
            .into_iter()
            .filter(|m| m.address != local.address)
            .collect();
        members.push(local.clone());
        members.sort_by(|a, b| a.address.cmp(&b.address));
        members.dedup_by(|a, b| a.address == b.address);
        let local = members
            .iter()
            .position(|m| m.address == local.address)
            .unwrap_or(0);
        Membership {
            members,
            local,
            version,
            settled: true,
        }
    }

    pub fn members(&self) -> &[Member] {
        &self.members
    }

    pub fn local(&self) -> &Member {
        &self.members[self.local]
    }

    /// The member that owns `key`: the highest score, ties (practically never) to the lower
    /// address so every instance decides alike.
    pub fn owner(&self, key: u64) -> &Member {
        let mut best = &self.members[0];
        let mut best_score = best.score(key);
        for m in &self.members[1..] {
            let s = m.score(key);
            if s > best_score {
                best = m;
                best_score = s;
            }
        }
        best
    }

    /// Whether this instance owns `key` (nothing before the ring is settled).
    pub fn owns(&self, key: u64) -> bool {
        self.settled && (self.members.len() == 1 || std::ptr::eq(self.owner(key), self.local()))
    }

    #[cfg(test)]
    pub(crate) fn settled_now(mut self) -> Membership {
        self.settled = true;
        self
    }

    /// This ring, not yet settled.
    pub fn unsettled(mut self) -> Membership {
        self.settled = false;
        self
    }

    /// Whether both rings have the same members (names aside).
    pub fn same_members(&self, other: &Membership) -> bool {
        self.members.len() == other.members.len()
            && self
                .members
                .iter()
                .zip(&other.members)
                .all(|(a, b)| a.address == b.address)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring(n: usize, local: usize) -> Membership {
        let members: Vec<Member> = (0..n)
            .map(|i| Member::new(&format!("10.0.0.{i}:4040"), &format!("pod-{i}")))
            .collect();
        Membership::new(members[local].clone(), members, 1)
    }

    fn keys(n: u64) -> Vec<u64> {
        (0..n)
            .map(|i| {
                let addr = format!("10.1.{}.{}:6060", i / 250, i % 250);
                target_key([("__address__", addr.as_str()), ("job", "pods")])
            })
            .collect()
    }

    #[test]
    fn every_key_has_exactly_one_owner_that_all_instances_agree_on() {
        let rings: Vec<Membership> = (0..5).map(|local| ring(5, local)).collect();
        for key in keys(2_000) {
            let owners: Vec<&str> = rings.iter().map(|r| &*r.owner(key).address).collect();
            assert!(owners.windows(2).all(|w| w[0] == w[1]), "{owners:?}");
            assert_eq!(rings.iter().filter(|r| r.owns(key)).count(), 1);
        }
    }

    #[test]
    fn keys_spread_evenly() {
        // (peers, keys): each peer's share stays within 15 % of the fair share.
        for (n, k) in [(2, 4_000), (3, 6_000), (4, 8_000), (7, 14_000)] {
            let r = ring(n, 0);
            let mut counts = vec![0usize; n];
            for key in keys(k) {
                let owner = r.owner(key);
                let i = r.members().iter().position(|m| m == owner).unwrap_or(0);
                counts[i] += 1;
            }
            let fair = k as f64 / n as f64;
            for c in &counts {
                let off = (*c as f64 - fair).abs() / fair;
                assert!(off < 0.15, "{n} peers: {counts:?}");
            }
        }
    }

    #[test]
    fn a_join_moves_about_one_nth_and_only_to_the_newcomer() {
        for n in [2usize, 3, 4, 6] {
            let before = ring(n, 0);
            let after = ring(n + 1, 0);
            let ks = keys(6_000);
            let mut moved = 0;
            for &key in &ks {
                let (a, b) = (before.owner(key), after.owner(key));
                if a.address != b.address {
                    moved += 1;
                    let newcomer = format!("10.0.0.{n}:4040");
                    assert_eq!(&*b.address, newcomer);
                }
            }
            let share = moved as f64 / ks.len() as f64;
            let ideal = 1.0 / (n + 1) as f64;
            assert!((share - ideal).abs() < 0.03, "{n}->{}: {share}", n + 1);
        }
    }

    #[test]
    fn a_leave_moves_only_the_leavers_keys() {
        let before = ring(4, 0);
        let gone = before.members()[2].address.clone();
        let rest: Vec<Member> = before
            .members()
            .iter()
            .filter(|m| m.address != gone)
            .cloned()
            .collect();
        let after = Membership::new(before.local().clone(), rest, 2);
        for key in keys(4_000) {
            let (a, b) = (before.owner(key), after.owner(key));
            if a.address != gone {
                assert_eq!(a.address, b.address);
            }
        }
    }

    #[test]
    fn meta_labels_do_not_change_the_key_and_others_do() {
        let base = target_key([("__address__", "a:1"), ("job", "x")]);
        let meta = target_key([
            ("__address__", "a:1"),
            ("__meta_kubernetes_pod_phase", "Running"),
            ("job", "x"),
        ]);
        assert_eq!(base, meta);
        assert_ne!(base, target_key([("__address__", "a:2"), ("job", "x")]));
        // Name/value boundaries count: ("ab","c") is not ("a","bc").
        assert_ne!(target_key([("ab", "c")]), target_key([("a", "bc")]));
    }

    #[test]
    fn a_ring_of_one_owns_everything_and_duplicates_collapse() {
        let me = Member::new("127.0.0.1:4040", "me");
        let alone = Membership::alone(me.clone());
        assert!(keys(100).into_iter().all(|k| alone.owns(k)));
        let starting = alone.clone().unsettled();
        assert!(keys(100).into_iter().all(|k| !starting.owns(k)));
        let dup = Membership::new(
            me.clone(),
            [me.clone(), Member::new("127.0.0.1:4040", "x")],
            3,
        );
        assert_eq!(dup.members().len(), 1);
        assert!(dup.same_members(&alone));
        assert_eq!(&*dup.local().name, "me");
    }
}
