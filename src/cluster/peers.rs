//! The candidate peers and what their checks said: pure bookkeeping, so that the rules (a few
//! consecutive failures take a peer out, as many consecutive successes bring it back, a new
//! peer joins at its first success, a peer never reached is not a member, this instance is
//! never a candidate) are tested without a network.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::SystemTime;

use super::ring::Member;

/// Consecutive failed checks that take a peer out of the ring.
pub const FAILURES_TO_LEAVE: u32 = 3;

/// Consecutive successful checks that bring a peer that left back: a flapping peer does not
/// move its targets back and forth on every other check.
pub const SUCCESSES_TO_REJOIN: u32 = 3;

/// A failed check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    pub error: String,
    /// The peer answered 503: it is starting (its config not loaded yet), not broken.
    pub starting: bool,
}

impl Failure {
    pub fn new(error: impl Into<String>) -> Failure {
        Failure {
            error: error.into(),
            starting: false,
        }
    }
}

/// Where a peer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Not checked yet: not a member until its first check succeeds.
    Joining,
    /// Answering its checks: a member.
    Up,
    /// Failed its last checks: not a member until [`SUCCESSES_TO_REJOIN`] in a row succeed.
    Down,
}

/// One candidate: listed by the membership source, checked over HTTP.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Peer {
    #[serde(serialize_with = "ser_str")]
    pub address: Arc<str>,
    #[serde(serialize_with = "ser_str")]
    pub name: Arc<str>,
    pub state: State,
    /// Consecutive failed checks.
    pub failures: u32,
    /// Consecutive successful checks.
    pub successes: u32,
    #[serde(serialize_with = "ser_time")]
    pub last_check: Option<SystemTime>,
    pub last_error: Option<String>,
    /// The process id its last answer carried (`x-scraper-instance`): a new one after the
    /// peer was down means it restarted, not that it is flapping.
    #[serde(skip)]
    pub instance: Option<Arc<str>>,
}

fn ser_str<S: serde::Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

fn ser_time<S: serde::Serializer>(t: &Option<SystemTime>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_some(&crate::gocompat::time::rfc3339_nanos(*t)),
        None => s.serialize_none(),
    }
}

/// A change a check or a new candidate list made.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transition {
    /// Answered for the first time, or again after being down: now a member.
    Joined {
        address: Arc<str>,
        name: Arc<str>,
        was_down: bool,
    },
    /// Failed [`FAILURES_TO_LEAVE`] checks in a row: out of the ring.
    Unreachable {
        address: Arc<str>,
        name: Arc<str>,
        error: String,
        was_member: bool,
        /// The last failure was a 503: a peer still starting.
        starting: bool,
    },
    /// No longer listed by the membership source.
    Removed {
        address: Arc<str>,
        name: Arc<str>,
        was_member: bool,
    },
}

impl Transition {
    /// Whether the ring's members changed.
    pub fn changes_members(&self) -> bool {
        match self {
            Transition::Joined { .. } => true,
            Transition::Unreachable { was_member, .. } | Transition::Removed { was_member, .. } => {
                *was_member
            }
        }
    }
}

/// Every candidate but this instance, by address.
#[derive(Debug, Default)]
pub struct Table {
    peers: BTreeMap<Arc<str>, Peer>,
    /// Addresses that are this instance: the advertised one, and any other that answered its
    /// check with this process's id. Never candidates.
    selves: BTreeSet<String>,
}

impl Table {
    /// A table for the instance advertised at `local`.
    pub fn new(local: &str) -> Table {
        Table {
            peers: BTreeMap::new(),
            selves: BTreeSet::from([local.to_string()]),
        }
    }

    /// `address` answered with this process's id: it is this instance under another address.
    /// It stops being a candidate, now and in later lists, without a transition (it never was
    /// a peer). True the first time.
    pub fn found_self(&mut self, address: &str) -> bool {
        self.peers.remove(address);
        self.selves.insert(address.to_string())
    }

    /// Whether every candidate's checks have decided it: up, or failed enough to be out.
    pub fn decided(&self) -> bool {
        self.peers
            .values()
            .all(|p| p.state != State::Joining || p.failures >= FAILURES_TO_LEAVE)
    }

    /// Replaces the candidates with `listed` (address, name); new ones start `Joining`.
    pub fn set_candidates(&mut self, listed: &[(String, String)]) -> Vec<Transition> {
        let mut out = Vec::new();
        let listed: Vec<&(String, String)> = listed
            .iter()
            .filter(|(a, _)| !self.selves.contains(a))
            .collect();
        let keep: std::collections::HashSet<&str> =
            listed.iter().map(|(a, _)| a.as_str()).collect();
        self.peers.retain(|address, p| {
            if keep.contains(&**address) {
                return true;
            }
            out.push(Transition::Removed {
                address: address.clone(),
                name: p.name.clone(),
                was_member: p.state == State::Up,
            });
            false
        });
        for (address, name) in listed.iter().copied() {
            if let Some(p) = self.peers.get_mut(address.as_str()) {
                if *p.name != **name {
                    p.name = Arc::from(name.as_str());
                }
                continue;
            }
            let address: Arc<str> = Arc::from(address.as_str());
            self.peers.insert(
                address.clone(),
                Peer {
                    address,
                    name: Arc::from(name.as_str()),
                    state: State::Joining,
                    failures: 0,
                    successes: 0,
                    last_check: None,
                    last_error: None,
                    instance: None,
                },
            );
        }
        out
    }

    /// Notes the process id `address` answered with. A down peer that answers as a new process
    /// restarted: it rejoins at this success rather than after [`SUCCESSES_TO_REJOIN`], since
    /// the hold-down is for a process that keeps failing, and a restarted peer already claims
    /// its share (keeping it out only makes both scrape that share).
    pub fn note_instance(&mut self, address: &str, instance: &str) {
        let Some(p) = self.peers.get_mut(address) else {
            return;
        };
        let restarted = p
            .instance
            .as_deref()
            .is_some_and(|before| before != instance);
        if restarted && p.state == State::Down {
            p.successes = p.successes.max(SUCCESSES_TO_REJOIN - 1);
        }
        if p.instance.as_deref() != Some(instance) {
            p.instance = Some(Arc::from(instance));
        }
    }

    /// Records a check of `address` at `at`.
    pub fn record(
        &mut self,
        address: &str,
        result: Result<(), Failure>,
        at: SystemTime,
    ) -> Option<Transition> {
        let p = self.peers.get_mut(address)?;
        p.last_check = Some(at);
        match result {
            Ok(()) => {
                p.failures = 0;
                p.last_error = None;
                p.successes = p.successes.saturating_add(1);
                let was = p.state;
                if was == State::Up || (was == State::Down && p.successes < SUCCESSES_TO_REJOIN) {
                    return None;
                }
                p.state = State::Up;
                Some(Transition::Joined {
                    address: p.address.clone(),
                    name: p.name.clone(),
                    was_down: was == State::Down,
                })
            }
            Err(Failure { error, starting }) => {
                p.successes = 0;
                p.failures = p.failures.saturating_add(1);
                p.last_error = Some(error.clone());
                if p.failures >= FAILURES_TO_LEAVE && p.state != State::Down {
                    let was_member = p.state == State::Up;
                    p.state = State::Down;
                    return Some(Transition::Unreachable {
                        address: p.address.clone(),
                        name: p.name.clone(),
                        error,
                        was_member,
                        starting,
                    });
                }
                None
            }
        }
    }

    /// The peers that are members now.
    pub fn members(&self) -> Vec<Member> {
        self.peers
            .values()
            .filter(|p| p.state == State::Up)
            .map(|p| Member::new(&p.address, &p.name))
            .collect()
    }

    pub fn addresses(&self) -> Vec<Arc<str>> {
        self.peers.keys().cloned().collect()
    }

    pub fn peers(&self) -> impl Iterator<Item = &Peer> {
        self.peers.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(addrs: &[&str]) -> Vec<(String, String)> {
        addrs
            .iter()
            .map(|a| (a.to_string(), format!("pod-{a}")))
            .collect()
    }

    fn kind(t: &Transition) -> &'static str {
        match t {
            Transition::Joined {
                was_down: false, ..
            } => "joined",
            Transition::Joined { was_down: true, .. } => "back",
            Transition::Unreachable {
                was_member: true, ..
            } => "left",
            Transition::Unreachable {
                was_member: false, ..
            } => "never-reached",
            Transition::Removed {
                was_member: true, ..
            } => "removed-member",
            Transition::Removed {
                was_member: false, ..
            } => "removed",
        }
    }

    #[test]
    fn checks_drive_membership() {
        let now = SystemTime::now();
        let ok = || Ok(());
        let err = || Err(Failure::new("connection refused"));
        // (step, expected transition, members after)
        let mut t = Table::new("self:1");
        assert!(
            t.set_candidates(&listed(&["a:1", "b:1", "self:1"]))
                .is_empty()
        );
        assert_eq!(t.addresses().len(), 2, "this instance is never a candidate");
        assert!(t.members().is_empty(), "unchecked peers are not members");
        // (peer, check result, transition, members after)
        type Step<'a> = (&'a str, Result<(), Failure>, Option<&'a str>, usize);
        let steps: Vec<Step> = vec![
            ("a:1", ok(), Some("joined"), 1),
            ("b:1", err(), None, 1),
            ("b:1", err(), None, 1),
            ("b:1", err(), Some("never-reached"), 1),
            ("b:1", err(), None, 1),
            // Back only after three successes in a row: a flapping peer stays out.
            ("b:1", ok(), None, 1),
            ("b:1", ok(), None, 1),
            ("b:1", err(), None, 1),
            ("b:1", ok(), None, 1),
            ("b:1", ok(), None, 1),
            ("b:1", ok(), Some("back"), 2),
            ("a:1", err(), None, 2),
            ("a:1", err(), None, 2),
            ("a:1", ok(), None, 2),
            ("a:1", err(), None, 2),
            ("a:1", err(), None, 2),
            ("a:1", err(), Some("left"), 1),
            ("c:1", ok(), None, 1),
        ];
        for (i, (addr, result, want, members)) in steps.into_iter().enumerate() {
            let got = t.record(addr, result, now);
            assert_eq!(got.as_ref().map(kind), want, "step {i}");
            assert_eq!(t.members().len(), members, "step {i}");
        }
        let removed = t.set_candidates(&listed(&["a:1"]));
        assert_eq!(
            removed.iter().map(kind).collect::<Vec<_>>(),
            ["removed-member"]
        );
        assert!(removed[0].changes_members());
        assert!(t.members().is_empty());
        assert_eq!(t.addresses().len(), 1);
    }

    #[test]
    fn a_restarted_peer_rejoins_at_its_first_answer() {
        let now = SystemTime::now();
        let mut t = Table::new("self:1");
        t.set_candidates(&listed(&["b:1"]));
        t.note_instance("b:1", "first");
        t.record("b:1", Ok(()), now);
        for _ in 0..FAILURES_TO_LEAVE {
            t.record("b:1", Err(Failure::new("refused")), now);
        }
        assert!(t.members().is_empty());
        // The same process answering again is held down (flapping)...
        t.note_instance("b:1", "first");
        assert!(t.record("b:1", Ok(()), now).is_none());
        t.record("b:1", Err(Failure::new("refused")), now);
        // ...a new process is back at once.
        t.note_instance("b:1", "second");
        let back = t.record("b:1", Ok(()), now);
        assert_eq!(back.as_ref().map(kind), Some("back"));
        assert_eq!(t.members().len(), 1);
    }

    #[test]
    fn settling_waits_for_every_candidate_to_be_decided() {
        let now = SystemTime::now();
        let starting = || {
            Err(Failure {
                error: "503".into(),
                starting: true,
            })
        };
        let mut t = Table::new("self:1");
        t.set_candidates(&listed(&["a:1", "b:1"]));
        assert!(!t.decided());
        t.record("a:1", Ok(()), now);
        assert!(!t.decided(), "b:1 not checked yet");
        for i in 1..FAILURES_TO_LEAVE {
            t.record("b:1", starting(), now);
            assert!(!t.decided(), "b:1 failed {i} times: maybe slow, not gone");
        }
        let last = t.record("b:1", starting(), now);
        assert!(matches!(
            last,
            Some(Transition::Unreachable {
                starting: true,
                was_member: false,
                ..
            })
        ));
        assert!(t.decided());
    }

    #[test]
    fn an_address_that_is_this_instance_stops_being_a_candidate() {
        let mut t = Table::new("10.0.0.1:1");
        t.set_candidates(&listed(&["10.0.0.1:1", "127.0.0.1:1", "b:1"]));
        assert_eq!(t.addresses().len(), 2);
        assert!(t.found_self("127.0.0.1:1"));
        assert!(!t.found_self("127.0.0.1:1"), "reported once");
        t.set_candidates(&listed(&["127.0.0.1:1", "b:1"]));
        assert_eq!(t.addresses(), [Arc::from("b:1")]);
        assert!(t.members().is_empty());
    }
}
