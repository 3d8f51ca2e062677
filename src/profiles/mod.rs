//! The hand-off between components that produce profiles (`pyroscope.scrape`, `pyroscope.ebpf`,
//! `pyroscope.receive_http`) and components that consume them (`pyroscope.write`,
//! `pyroscope.relabel`, debug and local stores).
//!
//! A consumer exports a [`Receiver`] wrapped in a capsule (see [`Receiver::export`]); a producer
//! takes its `forward_to` argument as `Vec<CapsuleRef<Receiver>>` and calls
//! [`Receiver::append`] (or a [`FanOut`] over all of them) with every batch it produces.
//!
//! The contract that makes the pipeline robust: **`append` never blocks and never waits on the
//! network.** A consumer that cannot keep up queues, or drops and counts; it never makes the
//! producer wait. Producers can therefore call it from their scrape loop directly.
//!
//! ```text
//! pyroscope.scrape ──append──► FanOut ──► pyroscope.write.a receiver ──► queue ──► senders
//!                                    └──► pyroscope.relabel.b receiver ──► ...
//! ```

pub mod service_name;

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, RwLock};
use std::time::SystemTime;

use bytes::Bytes;

use crate::labels::{LabelName, LabelSet};
use crate::syntax::types::CapsuleRef;
use crate::syntax::value::{Capsule, Value};

/// The capsule type name receivers are exported under (Alloy's name for the same thing).
pub const CAPSULE_TYPE: &str = "pyroscope.Appendable";

/// One label: `(name, value)`. What producers outside the pipeline hand to [`Profile::new`],
/// and what the wire side (prepared push labels, stored series) uses.
pub type Label = (String, String);

/// One profile on its way from a producer to a backend.
#[derive(Clone, PartialEq, Eq)]
pub struct Profile {
    /// The series labels as the producer knows them, private `__*` labels included (consumers
    /// decide what to keep: `pyroscope.write` drops `__*` except `__name__` and `__delta__`).
    /// The same shared [`LabelSet`] discovery and relabelling use: sorted, unique names, no
    /// empty values, so cloning a profile (a [`FanOut`] does for every extra receiver) bumps
    /// reference counts instead of copying label strings.
    pub labels: LabelSet,
    /// Names that the label list given to [`Profile::new`] held more than once (each with a
    /// non-empty value), sorted, usually empty. A [`LabelSet`] cannot hold a name twice, but
    /// Pyroscope refuses such a label set, so the consumers that check labels the way the
    /// backend does (`pyroscope.write`, the local store) still see the duplicate and drop the
    /// profile as they did when labels were a plain list. `labels` holds the last value.
    pub duplicate_labels: Vec<LabelName>,
    /// The pprof exactly as received or produced: gzip-compressed or plain protobuf. Cheap to
    /// clone (reference counted), so fanning out to several consumers copies no profile bytes.
    pub raw: Bytes,
    /// When the producer obtained the profile (end of the scrape, or of the collection
    /// window). Consumers use it to drop profiles the backend would reject as too old.
    pub received_at: SystemTime,
}

impl Profile {
    /// A profile received now, from a list of labels in any order. Empty values are dropped
    /// (empty means absent); a name given twice with non-empty values is recorded in
    /// [`duplicate_labels`](Self::duplicate_labels). Producers that already hold a
    /// [`LabelSet`] use [`with_labels`](Self::with_labels), which copies no string. The names
    /// are not interned (they may come from a network client; see [`LabelSet::from_unshared`]).
    pub fn new(labels: Vec<Label>, raw: impl Into<Bytes>) -> Self {
        let (labels, duplicate_labels) = label_set_of(labels);
        Profile {
            labels,
            duplicate_labels,
            raw: raw.into(),
            received_at: SystemTime::now(),
        }
    }

    /// A profile received now, labelled with a (shared) label set.
    pub fn with_labels(labels: LabelSet, raw: impl Into<Bytes>) -> Self {
        Profile {
            labels,
            duplicate_labels: Vec::new(),
            raw: raw.into(),
            received_at: SystemTime::now(),
        }
    }

    /// The value of label `name`, if present (never `Some("")`).
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name)
    }
}

/// `labels` as a set, and the names it repeats. Empty values go first, so `a="1", a=""` is no
/// duplicate (it was not one for the write path's check either, which ignores empty values).
fn label_set_of(mut labels: Vec<Label>) -> (LabelSet, Vec<LabelName>) {
    labels.retain(|(_, v)| !v.is_empty());
    // Stable: of two labels with the same name the last stays last, and wins below.
    labels.sort_by(|a, b| a.0.cmp(&b.0));
    let mut duplicates: Vec<LabelName> = Vec::new();
    for w in labels.windows(2) {
        if w[0].0 == w[1].0 && duplicates.last().is_none_or(|d| **d != *w[0].0) {
            duplicates.push(LabelName::from(w[0].0.as_str()));
        }
    }
    // Not interned: push and ingest clients choose these names, and a client must not be able
    // to fill the process-wide name table (src/labels/intern.rs) for the life of the process.
    (LabelSet::from_unshared(labels), duplicates)
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profile")
            .field("labels", &self.labels)
            .field("duplicate_labels", &self.duplicate_labels)
            .field("raw_bytes", &self.raw.len())
            .field("received_at", &self.received_at)
            .finish()
    }
}

/// Something profiles can be handed to.
///
/// Implementations must return promptly: no network I/O, no waiting for queue space, no
/// holding a lock that network code holds. When they cannot accept a profile they drop it and
/// count the drop in their own metrics. Batches keep producer order; a consumer that cares about
/// ordering keeps it per series.
pub trait Appendable: Send + Sync + 'static {
    fn append(&self, profiles: Vec<Profile>);
}

/// What consumers export and producers receive: a shared [`Appendable`].
///
/// Capsule equality is identity, so a component that keeps exporting the same `Arc<Receiver>`
/// across updates does not trigger re-evaluation of the components forwarding to it.
#[derive(Clone)]
pub struct Receiver(pub Arc<dyn Appendable>);

impl Receiver {
    pub fn new(appendable: impl Appendable) -> Self {
        Receiver(Arc::new(appendable))
    }

    pub fn append(&self, profiles: Vec<Profile>) {
        self.0.append(profiles);
    }

    /// The receiver consumers put in their `initial_exports` (what dependants see before the
    /// consumer is built, e.g. while `scraper check` analyses a file, or if building fails):
    /// one shared receiver that drops what it gets, warning once per process.
    pub fn unavailable() -> Arc<Receiver> {
        static UNAVAILABLE: OnceLock<Arc<Receiver>> = OnceLock::new();
        UNAVAILABLE
            .get_or_init(|| Arc::new(Receiver::new(Unavailable)))
            .clone()
    }

    /// The capsule value to put in a component's exports, e.g.
    /// `{ receiver = <capsule> }`. Export the same `Arc` every time to keep it stable.
    pub fn export(self: &Arc<Self>) -> Value {
        Value::Capsule(Capsule::new(CAPSULE_TYPE, self.clone()))
    }
}

/// Behind [`Receiver::unavailable`].
struct Unavailable;

impl Appendable for Unavailable {
    fn append(&self, profiles: Vec<Profile>) {
        static WARNED: AtomicBool = AtomicBool::new(false);
        if !profiles.is_empty() && !WARNED.swap(true, Ordering::Relaxed) {
            tracing::warn!(
                profiles = profiles.len(),
                "profiles sent to a receiver that is not running were dropped"
            );
        }
    }
}

impl fmt::Debug for Receiver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Receiver")
    }
}

/// Forwards every batch to several receivers: what a producer with a
/// `forward_to = [a.receiver, b.receiver]` argument calls. The list can be replaced on
/// `update` while other threads append.
///
/// The last receiver gets the batch itself, the others a clone (label and profile bytes are
/// shared; a clone costs reference-count bumps).
#[derive(Default)]
pub struct FanOut {
    receivers: RwLock<Arc<[CapsuleRef<Receiver>]>>,
}

impl FanOut {
    pub fn new(receivers: Vec<CapsuleRef<Receiver>>) -> Self {
        FanOut {
            receivers: RwLock::new(receivers.into()),
        }
    }

    /// Replaces the receivers; batches already being appended finish with the old list.
    pub fn set(&self, receivers: Vec<CapsuleRef<Receiver>>) {
        let mut guard = crate::sync::write(&self.receivers);
        *guard = receivers.into();
    }

    /// How many receivers batches go to.
    pub fn len(&self) -> usize {
        self.current().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn current(&self) -> Arc<[CapsuleRef<Receiver>]> {
        crate::sync::read(&self.receivers).clone()
    }
}

impl Appendable for FanOut {
    fn append(&self, profiles: Vec<Profile>) {
        let receivers = self.current();
        let Some((last, rest)) = receivers.split_last() else {
            return;
        };
        for r in rest {
            r.append(profiles.clone());
        }
        last.append(profiles);
    }
}

impl fmt::Debug for FanOut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FanOut")
            .field("receivers", &self.len())
            .finish()
    }
}

#[cfg(test)]
pub(crate) mod collect;

#[cfg(test)]
mod tests {
    use super::collect::Collect;
    use super::*;

    #[test]
    fn fan_out_reaches_every_receiver_and_can_be_replaced() {
        let ((a, ra), (b, rb)) = (Collect::receiver(), Collect::receiver());
        let fan = FanOut::new(vec![ra, rb.clone()]);
        let p = Profile::new(vec![("__name__".into(), "cpu".into())], vec![1u8, 2, 3]);
        fan.append(vec![p.clone()]);
        assert_eq!(*a.got(), std::slice::from_ref(&p));
        assert_eq!(*b.got(), std::slice::from_ref(&p));
        // Shared bytes, not copies.
        assert_eq!(a.got()[0].raw.as_ptr(), b.got()[0].raw.as_ptr());
        // Shared label strings too.
        let (la, lb) = (a.got()[0].labels.clone(), b.got()[0].labels.clone());
        let (na, nb) = (
            &la.iter_shared().next().expect("a label").0,
            &lb.iter_shared().next().expect("a label").0,
        );
        assert!(LabelName::ptr_eq(na, nb));
        fan.set(vec![rb]);
        fan.append(vec![p.clone()]);
        assert_eq!(a.got().len(), 1);
        assert_eq!(b.got().len(), 2);
        fan.set(Vec::new());
        fan.append(vec![p]);
        assert!(fan.is_empty());
    }

    #[test]
    fn new_does_not_intern_client_names() {
        let name = "__profile_new_client_chosen_name";
        let p = Profile::new(vec![(name.into(), "v".into())], Vec::new());
        let held = &p.labels.iter_shared().next().expect("a label").0;
        assert!(!LabelName::ptr_eq(held, &crate::labels::shared_name(name)));
    }

    #[test]
    fn new_drops_empty_values_and_records_repeated_names() {
        let l = |pairs: &[(&str, &str)]| -> Vec<Label> {
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect()
        };
        let p = Profile::new(
            l(&[
                ("b", "1"),
                ("a", ""),
                ("b", "2"),
                ("c", "x"),
                ("b", "3"),
                ("d", "1"),
                ("d", ""),
            ]),
            Vec::new(),
        );
        assert_eq!(
            p.labels.iter().collect::<Vec<_>>(),
            [("b", "3"), ("c", "x"), ("d", "1")]
        );
        assert_eq!(p.duplicate_labels, [LabelName::from("b")]);
        assert_eq!(p.label("b"), Some("3"));
        assert_eq!(p.label("a"), None);
        let q = Profile::with_labels(p.labels.clone(), Vec::new());
        assert!(q.duplicate_labels.is_empty());
    }

    #[test]
    fn the_unavailable_receiver_is_one_shared_sink() {
        let a = Receiver::unavailable();
        assert!(Arc::ptr_eq(&a, &Receiver::unavailable()));
        assert_eq!(a.export(), Receiver::unavailable().export());
        a.append(vec![Profile::new(Vec::new(), Bytes::new())]);
    }

    #[test]
    fn exported_capsule_decodes_back_to_the_same_receiver() {
        let c = Arc::new(Collect::default());
        let r = Arc::new(Receiver::new(c.clone()));
        let v = r.export();
        let Value::Capsule(cap) = &v else {
            panic!("not a capsule: {v:?}");
        };
        assert_eq!(cap.type_name, CAPSULE_TYPE);
        let back = cap.downcast::<Receiver>().expect("downcast");
        assert!(Arc::ptr_eq(&back, &r));
        // Same Arc exported twice compares equal: no re-evaluation of dependants.
        assert_eq!(v, r.export());
        back.append(vec![Profile::new(Vec::new(), Bytes::new())]);
        assert_eq!(c.got().len(), 1);
    }
}
