//! The candidate peers and what their checks said: pure bookkeeping, so that the rules (a few
//! consecutive failures take a peer out, one success brings it back, a peer never reached is
//! not a member) are tested without a network.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use super::ring::Member;

/// Consecutive failed checks that take a peer out of the ring.
pub const FAILURES_TO_LEAVE: u32 = 3;

/// Where a peer stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Not checked yet: not a member until its first check succeeds.
    Joining,
    /// Answering its checks: a member.
    Up,
    /// Failed its last checks: not a member until one succeeds.
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
    #[serde(serialize_with = "ser_time")]
    pub last_check: Option<SystemTime>,
    pub last_error: Option<String>,
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
}

impl Table {
    /// Replaces the candidates with `listed` (address, name); new ones start `Joining`.
    pub fn set_candidates(&mut self, listed: &[(String, String)]) -> Vec<Transition> {
        let mut out = Vec::new();
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
        for (address, name) in listed {
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
                    last_check: None,
                    last_error: None,
                },
            );
        }
        out
    }

    /// Records a check of `address` at `at`.
    pub fn record(
        &mut self,
        address: &str,
        result: Result<(), String>,
        at: SystemTime,
    ) -> Option<Transition> {
        let p = self.peers.get_mut(address)?;
        p.last_check = Some(at);
        match result {
            Ok(()) => {
                p.failures = 0;
                p.last_error = None;
                let was = p.state;
                p.state = State::Up;
                (was != State::Up).then(|| Transition::Joined {
                    address: p.address.clone(),
                    name: p.name.clone(),
                    was_down: was == State::Down,
                })
            }
            Err(error) => {
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
        let err = || Err("connection refused".to_string());
        // (step, expected transition, members after)
        let mut t = Table::default();
        assert!(t.set_candidates(&listed(&["a:1", "b:1"])).is_empty());
        assert!(t.members().is_empty(), "unchecked peers are not members");
        // (peer, check result, transition, members after)
        type Step<'a> = (&'a str, Result<(), String>, Option<&'a str>, usize);
        let steps: Vec<Step> = vec![
            ("a:1", ok(), Some("joined"), 1),
            ("b:1", err(), None, 1),
            ("b:1", err(), None, 1),
            ("b:1", err(), Some("never-reached"), 1),
            ("b:1", err(), None, 1),
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
}
