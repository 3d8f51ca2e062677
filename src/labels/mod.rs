//! The label set a relabel rule works on: one discovery target.
//!
//! Design (targets carry 30-80 labels and every discovery update runs pods × rules):
//! * a `Vec` of `(name, value)` pairs kept **sorted by name** with unique names, so a lookup is a
//!   binary search over contiguous memory and iteration is already in Prometheus' sorted order
//!   (which `labelmap` depends on when two names map to the same new name);
//! * names are shared process-wide (`intern`: one allocation per distinct name, held as
//!   `&'static str`, so lookups compare against names in cache and copying a name counts
//!   nothing); values up to 23 bytes are stored in the pair itself and longer ones are
//!   `Arc<str>` (`value`, `smol_str`). Copying a pair is then a plain copy for all but the long values (one
//!   reference-count bump each), and a rule's fixed `target_label` is looked up once at load
//!   time and shared by every target it writes;
//! * setting or deleting one label shifts the tail of the vector in place; nothing rebuilds the
//!   whole set per rule (Prometheus 2.x copies the whole set for every rule that changes it);
//! * the vector itself is shared copy-on-write: cloning a set is one reference-count bump, and
//!   the pairs are copied only by the first change to the clone. Relabelling clones every
//!   discovered target and most rule lists start with `keep`/`drop`, so a dropped target never
//!   had its labels copied; a rule that changes nothing (a `set` of the same value, a `remove`
//!   of an absent label) copies nothing either.
//!
//! Invariant, as in Prometheus' `labels.Builder` and Alloy's target builder: **an empty value is
//! the same as an absent label**. Setting `""` deletes, and inputs with empty values are dropped
//! on construction, so `get` returning `None` and returning `""` never disagree.

use std::borrow::Borrow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::de::{Deserialize, Deserializer};

mod intern;
mod merge;
mod name;
mod value;
use serde::ser::{Serialize, SerializeMap, Serializer};

pub use name::LabelName;
pub use value::LabelValue;

/// `a == b`, answered without reading the bytes when both are the same shared name.
fn same_name(a: &LabelName, b: &str) -> bool {
    (std::ptr::eq(a.as_ptr(), b.as_ptr()) && a.len() == b.len()) || **a == *b
}

/// The process-wide handle of a label name (see the module docs): what a set would store for
/// it. Relabel rules take their label names from here so that they share the targets' names.
pub fn shared_name(name: &str) -> LabelName {
    intern::name(name)
}

/// A target's labels: unique names, sorted, no empty values.
#[derive(Default, PartialEq, Eq, Hash, Clone)]
pub struct LabelSet {
    labels: Arc<Vec<(LabelName, LabelValue)>>,
}

/// Spare capacity given to built and copied sets: relabelling usually adds a few labels, and
/// without room the first insert would reallocate and copy the whole set.
const HEADROOM: usize = 8;

impl LabelSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty set with room for `n` labels.
    pub fn with_capacity(n: usize) -> Self {
        Self {
            labels: Arc::new(Vec::with_capacity(n)),
        }
    }

    /// Gives back the spare room a changed set keeps: for sets that are kept long and not
    /// changed again (each scrape loop's labels, 40,000 of them at 8,000 targets). A set still
    /// shared with a clone has no spare room of its own and is left as it is.
    pub fn shrink_to_fit(&mut self) {
        if let Some(own) = Arc::get_mut(&mut self.labels) {
            own.shrink_to_fit();
        }
    }

    /// The pairs for changing: this set's own vector, copied (with headroom) first if it is
    /// shared with a clone.
    fn labels_mut(&mut self) -> &mut Vec<(LabelName, LabelValue)> {
        if Arc::get_mut(&mut self.labels).is_none() {
            let mut own = Vec::with_capacity(self.labels.len() + HEADROOM);
            own.extend(self.labels.iter().cloned());
            self.labels = Arc::new(own);
        }
        Arc::make_mut(&mut self.labels)
    }

    /// Number of labels.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// True when the set has no labels.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    fn find(&self, name: &str) -> Result<usize, usize> {
        self.labels.binary_search_by(|(n, _)| n.as_ref().cmp(name))
    }

    /// The value of `name`, if present (never `Some("")`).
    pub fn get(&self, name: &str) -> Option<&str> {
        match self.find(name) {
            Ok(i) => Some(&self.labels[i].1),
            Err(_) => None,
        }
    }

    /// The shared value handle of `name`, if present (lets a rule copy a value without
    /// copying its bytes).
    pub fn get_shared(&self, name: &str) -> Option<&LabelValue> {
        match self.find(name) {
            Ok(i) => Some(&self.labels[i].1),
            Err(_) => None,
        }
    }

    /// Like [`get`](Self::get), first trying the position in `hint` (where this lookup found
    /// its name last time; targets of one discovery update share their shape, so a rule's
    /// source label sits at the same index in most of them). The hint is only a guess: a
    /// miss falls back to the binary search and updates it.
    pub(crate) fn get_hinted(&self, name: &str, hint: &AtomicUsize) -> Option<&LabelValue> {
        let h = hint.load(Ordering::Relaxed);
        if let Some((n, v)) = self.labels.get(h)
            && same_name(n, name)
        {
            return Some(v);
        }
        // The hint may also be where the name would go: a source label most targets lack
        // (an optional annotation) is then known absent from two comparisons, not a search.
        if self.is_gap(h, name) {
            return None;
        }
        match self.find(name) {
            Ok(i) => {
                hint.store(i, Ordering::Relaxed);
                Some(&self.labels[i].1)
            }
            Err(i) => {
                hint.store(i, Ordering::Relaxed);
                None
            }
        }
    }

    /// True when `name` is absent and would be inserted at `i`: the names around `i` sort
    /// before and after it.
    fn is_gap(&self, i: usize, name: &str) -> bool {
        let l = &self.labels;
        i <= l.len()
            && l.get(i).is_none_or(|(n, _)| name < n.as_str())
            && (i == 0 || l[i - 1].0.as_str() < name)
    }

    /// [`set_shared`](Self::set_shared) with a position hint (see [`get_hinted`](Self::get_hinted)).
    pub(crate) fn set_shared_hinted(
        &mut self,
        name: &LabelName,
        value: LabelValue,
        hint: &AtomicUsize,
    ) {
        if value.is_empty() {
            self.remove(name);
            return;
        }
        let h = hint.load(Ordering::Relaxed);
        if let Some(slot) = self.labels.get(h)
            && same_name(&slot.0, name)
        {
            if slot.1 != value {
                self.labels_mut()[h].1 = value;
            }
            return;
        }
        // A rule adding a label the targets lack (`namespace`, `pod`...) finds the hint to be
        // where it goes: two comparisons instead of a search.
        if self.is_gap(h, name) {
            self.labels_mut().insert(h, (name.clone(), value));
            return;
        }
        let i = match self.find(name) {
            Ok(i) => {
                if self.labels[i].1 != value {
                    self.labels_mut()[i].1 = value;
                }
                i
            }
            Err(i) => {
                self.labels_mut().insert(i, (name.clone(), value));
                i
            }
        };
        hint.store(i, Ordering::Relaxed);
    }

    /// The value of `name`, or `""` when absent: how relabelling reads source labels.
    pub fn get_or_empty(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// True when `name` is present.
    pub fn contains(&self, name: &str) -> bool {
        self.find(name).is_ok()
    }

    /// Sets `name` to `value`; an empty value deletes the label.
    pub fn set(&mut self, name: &str, value: &str) {
        if value.is_empty() {
            self.remove(name);
            return;
        }
        match self.find(name) {
            Ok(i) => {
                // Skip the allocation when the value is unchanged (common for rules that
                // normalise an already-normal value).
                if &*self.labels[i].1 != value {
                    self.labels_mut()[i].1 = LabelValue::new(value);
                }
            }
            Err(i) => self
                .labels_mut()
                .insert(i, (intern::name(name), LabelValue::new(value))),
        }
    }

    /// Like [`set`](Self::set) with owned/shared parts: no allocation for the name when it is
    /// already present or `name` is a shared handle (a rule's fixed `target_label`).
    pub fn set_shared(&mut self, name: &LabelName, value: LabelValue) {
        self.set_value(name, value, || name.clone());
    }

    /// Like [`set_shared`](Self::set_shared) with a borrowed name, allocated only when the
    /// label is new; an unchanged value is left alone.
    pub fn set_shared_str(&mut self, name: &str, value: LabelValue) {
        self.set_value(name, value, || intern::name(name));
    }

    /// Sets `name` to a shared `value`; `make_name` gives the name's handle, asked for only
    /// when the label is new. An empty value removes the label, an unchanged one is left alone
    /// (no copy of a shared set).
    fn set_value(&mut self, name: &str, value: LabelValue, make_name: impl FnOnce() -> LabelName) {
        if value.is_empty() {
            self.remove(name);
            return;
        }
        match self.find(name) {
            Ok(i) => {
                if self.labels[i].1 != value {
                    self.labels_mut()[i].1 = value;
                }
            }
            Err(i) => self.labels_mut().insert(i, (make_name(), value)),
        }
    }

    /// Sets every pair of `adds` in one merge, copying nothing when every pair is already there
    /// with its value. Setting many labels one by one shifts the tail of the set once per new
    /// label; a merge moves each pair once. The merge needs `adds` sorted by name, unique and
    /// without empty values; that is checked (one pass over `adds`, in every build), and adds
    /// that break it are set one by one instead, with [`set`](Self::set)'s meaning: in order,
    /// a later pair of the same name wins, an empty value deletes.
    pub(crate) fn set_sorted(&mut self, adds: &[(&str, LabelValue)]) {
        let mergeable =
            adds.windows(2).all(|w| w[0].0 < w[1].0) && adds.iter().all(|(_, v)| !v.is_empty());
        if !mergeable {
            for (n, v) in adds {
                self.set_shared_str(n, v.clone());
            }
            return;
        }
        if merge::all_present(&self.labels, adds) {
            return;
        }
        let mut out = Vec::with_capacity(self.labels.len() + adds.len() + HEADROOM);
        // One pass either way: the pairs move out of a set of our own, or are cloned straight
        // out of a shared one (no intermediate copy).
        match Arc::get_mut(&mut self.labels) {
            Some(own) => merge::merge(&mut out, std::mem::take(own).into_iter(), adds),
            None => merge::merge(&mut out, self.labels.iter(), adds),
        }
        self.labels = Arc::new(out);
    }

    /// Sets a label from an owned name and value (no copy of either).
    pub fn insert(&mut self, name: impl Into<LabelName>, value: impl Into<LabelValue>) {
        let value = value.into();
        let name = name.into();
        self.set_shared(&name, value);
    }

    /// Removes `name`, returning its value if it was present.
    pub fn remove(&mut self, name: &str) -> Option<LabelValue> {
        match self.find(name) {
            Ok(i) => Some(self.labels_mut().remove(i).1),
            Err(_) => None,
        }
    }

    /// Keeps only the labels for which `keep(name, value)` is true (one pass, in place; `keep`
    /// runs once per label, and nothing is copied when every label is kept).
    pub fn retain(&mut self, mut keep: impl FnMut(&str, &str) -> bool) {
        let Some(first) = self.labels.iter().position(|(n, v)| !keep(n, v)) else {
            return;
        };
        let labels = self.labels_mut();
        let mut write = first;
        for read in first + 1..labels.len() {
            if keep(&labels[read].0, &labels[read].1) {
                labels.swap(write, read);
                write += 1;
            }
        }
        labels.truncate(write);
    }

    /// The labels in sorted name order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> + '_ {
        self.labels.iter().map(|(n, v)| (n.as_ref(), v.as_ref()))
    }

    /// The labels with their shared handles, in sorted name order.
    pub fn iter_shared(&self) -> impl ExactSizeIterator<Item = &(LabelName, LabelValue)> + '_ {
        self.labels.iter()
    }

    /// The label names in sorted order.
    pub fn names(&self) -> impl ExactSizeIterator<Item = &str> + '_ {
        self.labels.iter().map(|(n, _)| n.as_ref())
    }

    /// A sorted map copy (for tests, display and serialisation).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
            .collect()
    }
}

impl<K, V> FromIterator<(K, V)> for LabelSet
where
    K: Into<LabelName>,
    V: Into<LabelValue>,
{
    /// Builds a set from pairs in any order. Empty values are dropped (absent == empty); for a
    /// repeated name the last pair wins, as when a map is built from the same sequence.
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        Self::build(
            iter.into_iter()
                .map(|(k, v)| (intern::shared(k.into()), v.into())),
        )
    }
}

impl LabelSet {
    /// Like collecting pairs into a set ([`FromIterator`]), but the names are **not** interned:
    /// for names a network client chooses (push and ingest labels), which would otherwise fill
    /// the process-wide name table for the life of the process.
    pub fn from_unshared<K, V>(pairs: impl IntoIterator<Item = (K, V)>) -> Self
    where
        K: Into<LabelName>,
        V: Into<LabelValue>,
    {
        Self::build(pairs.into_iter().map(|(k, v)| (k.into(), v.into())))
    }

    /// Sorts, keeps the last of a repeated name, drops empty values.
    fn build(pairs: impl Iterator<Item = (LabelName, LabelValue)>) -> Self {
        let mut labels: Vec<(LabelName, LabelValue)> = pairs.collect();
        // Stable sort keeps input order among equal names, so "last wins" below is well defined.
        labels.sort_by(|a, b| a.0.cmp(&b.0));
        let mut out: Vec<(LabelName, LabelValue)> = Vec::with_capacity(labels.len());
        for (n, v) in labels {
            match out.last_mut() {
                Some(last) if last.0 == n => last.1 = v,
                _ => out.push((n, v)),
            }
        }
        out.retain(|(_, v)| !v.is_empty());
        out.reserve(HEADROOM);
        LabelSet {
            labels: Arc::new(out),
        }
    }
}

impl<K: Borrow<str>, V: Borrow<str>> From<&BTreeMap<K, V>> for LabelSet {
    fn from(map: &BTreeMap<K, V>) -> Self {
        // A BTreeMap iterates sorted and unique already; only empties need dropping.
        let labels = map
            .iter()
            .filter(|(_, v)| !Borrow::<str>::borrow(*v).is_empty())
            .map(|(k, v)| (intern::name(k.borrow()), LabelValue::new(v.borrow())))
            .collect();
        LabelSet {
            labels: Arc::new(labels),
        }
    }
}

impl fmt::Debug for LabelSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl fmt::Display for LabelSet {
    /// `{a="1", b="2"}` with Go-style quoting of values, like Prometheus prints label sets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (n, v)) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{n}={}", crate::gocompat::quote(v))?;
        }
        f.write_str("}")
    }
}

impl Serialize for LabelSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.len()))?;
        for (n, v) in self.iter() {
            map.serialize_entry(n, v)?;
        }
        map.end()
    }
}

/// A target decodes from a target capsule (shared labels: no string is copied) or from any
/// map of strings (an Alloy object, JSON).
impl<'de> Deserialize<'de> for LabelSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Target;
        impl<'de> serde::de::Visitor<'de> for Target {
            type Value = LabelSet;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_u64<E: serde::de::Error>(self, slot: u64) -> Result<LabelSet, E> {
                crate::syntax::types::take_view::<LabelSet>(slot)
                    .map(|t| (*t).clone())
                    .ok_or_else(|| E::custom("expected map(string), got capsule"))
            }
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<LabelSet, D::Error> {
                let map = BTreeMap::<String, String>::deserialize(d)?;
                Ok(LabelSet::from(&map))
            }
        }
        deserializer.deserialize_newtype_struct(crate::syntax::types::VIEW_NEWTYPE, Target)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(pairs: &[(&str, &str)]) -> LabelSet {
        pairs.iter().copied().collect()
    }

    #[test]
    fn construction_sorts_dedups_and_drops_empty() {
        type Pairs = &'static [(&'static str, &'static str)];
        // (input pairs, expected sorted output)
        let cases: &[(Pairs, Pairs)] = &[
            (&[], &[]),
            (&[("b", "2"), ("a", "1")], &[("a", "1"), ("b", "2")]),
            (&[("a", "1"), ("a", "2")], &[("a", "2")]),
            (&[("a", ""), ("b", "x")], &[("b", "x")]),
            (&[("a", "1"), ("a", "")], &[]),
            (
                &[("é", "1"), ("z", "2"), ("_", "3")],
                &[("_", "3"), ("z", "2"), ("é", "1")],
            ),
        ];
        for (input, want) in cases {
            let got: Vec<(String, String)> = set(input)
                .iter()
                .map(|(a, b)| (a.into(), b.into()))
                .collect();
            let want: Vec<(String, String)> = want
                .iter()
                .map(|(a, b)| ((*a).into(), (*b).into()))
                .collect();
            assert_eq!(got, want, "input {input:?}");
        }
    }

    #[test]
    fn set_get_remove() {
        let mut s = set(&[("b", "2")]);
        s.set("a", "1");
        s.set("c", "3");
        assert_eq!(s.names().collect::<Vec<_>>(), ["a", "b", "c"]);
        assert_eq!(s.get("b"), Some("2"));
        assert_eq!(s.get_or_empty("zz"), "");
        s.set("b", "");
        assert_eq!(s.get("b"), None);
        assert!(!s.contains("b"));
        assert_eq!(s.remove("a").as_deref(), Some("1"));
        assert_eq!(s.remove("a"), None);
        let name = LabelName::from("d");
        s.set_shared(&name, LabelValue::new("4"));
        s.set_shared(&name, LabelValue::new(""));
        assert_eq!(s.to_map().len(), 1);
    }

    #[test]
    fn display_quotes_like_go() {
        let s = set(&[("a", "x\"y"), ("b", "line\nbreak")]);
        assert_eq!(s.to_string(), r#"{a="x\"y", b="line\nbreak"}"#);
    }

    #[test]
    fn serde_round_trip() {
        let s = set(&[("a", "1"), ("b", "2")]);
        let json = serde_json::to_string(&s).unwrap();
        assert_eq!(json, r#"{"a":"1","b":"2"}"#);
        let back: LabelSet = serde_json::from_str(r#"{"b":"2","a":"1","c":""}"#).unwrap();
        assert_eq!(back, s);
    }

    #[test]
    fn set_sorted_merges_like_setting_one_by_one() {
        type Pairs = &'static [(&'static str, &'static str)];
        // (set, adds sorted by name, expected)
        let cases: &[(Pairs, Pairs, Pairs)] = &[
            (&[], &[], &[]),
            (
                &[("b", "1")],
                &[("a", "x"), ("c", "y")],
                &[("a", "x"), ("b", "1"), ("c", "y")],
            ),
            (
                &[("a", "1"), ("b", "2")],
                &[("b", "3")],
                &[("a", "1"), ("b", "3")],
            ),
            (
                &[("a", "1"), ("b", "2")],
                &[("a", "1"), ("b", "2")],
                &[("a", "1"), ("b", "2")],
            ),
            (
                &[("m", "1")],
                &[("a", "x"), ("z", "y")],
                &[("a", "x"), ("m", "1"), ("z", "y")],
            ),
        ];
        for (start, adds, want) in cases {
            let adds: Vec<(&str, LabelValue)> =
                adds.iter().map(|(n, v)| (*n, LabelValue::new(v))).collect();
            let mut merged = set(start);
            let original = merged.clone();
            merged.set_sorted(&adds);
            let mut one_by_one = set(start);
            for (n, v) in &adds {
                one_by_one.set(n, v);
            }
            assert_eq!(merged, set(want), "{start:?} + {adds:?}");
            assert_eq!(merged, one_by_one);
            // The clone taken before is untouched (copy-on-write).
            assert_eq!(original, set(start));
        }
    }

    #[test]
    fn set_sorted_checks_its_input_in_every_build() {
        type Pairs = &'static [(&'static str, &'static str)];
        // (set, adds breaking the merge's preconditions, expected: as if set one by one)
        let cases: &[(Pairs, Pairs, Pairs)] = &[
            // unsorted
            (
                &[("m", "1")],
                &[("z", "y"), ("a", "x")],
                &[("a", "x"), ("m", "1"), ("z", "y")],
            ),
            // a repeated name: the later wins
            (
                &[("m", "1")],
                &[("a", "x"), ("a", "w")],
                &[("a", "w"), ("m", "1")],
            ),
            // an empty value deletes, and is never stored
            (
                &[("a", "1"), ("b", "2")],
                &[("a", ""), ("c", "3")],
                &[("b", "2"), ("c", "3")],
            ),
            (&[("b", "2")], &[("a", "")], &[("b", "2")]),
        ];
        for (start, adds, want) in cases {
            let adds: Vec<(&str, LabelValue)> =
                adds.iter().map(|(n, v)| (*n, LabelValue::new(v))).collect();
            let mut merged = set(start);
            merged.set_sorted(&adds);
            assert_eq!(merged, set(want), "{start:?} + {adds:?}");
            let names: Vec<&str> = merged.names().collect();
            assert!(names.windows(2).all(|w| w[0] < w[1]), "{names:?}");
            assert!(merged.iter().all(|(_, v)| !v.is_empty()));
        }
    }

    #[test]
    fn from_unshared_builds_like_collect_without_interning() {
        let pairs = [("b", "2"), ("a", "1"), ("b", "3"), ("c", "")];
        let unshared = LabelSet::from_unshared(pairs);
        assert_eq!(unshared, pairs.into_iter().collect::<LabelSet>());
        assert_eq!(unshared, set(&[("a", "1"), ("b", "3")]));
        // A fresh name stays out of the table: interning it afterwards yields another handle.
        let name = "__from_unshared_test_name";
        let s = LabelSet::from_unshared([(name, "v")]);
        let held = &s.iter_shared().next().expect("one label").0;
        assert!(!LabelName::ptr_eq(held, &shared_name(name)));
        let interned: LabelSet = [("__from_unshared_test_other", "v")].into_iter().collect();
        let held = &interned.iter_shared().next().expect("one label").0;
        assert!(LabelName::ptr_eq(
            held,
            &shared_name("__from_unshared_test_other")
        ));
    }

    #[test]
    fn hints_are_only_guesses() {
        let base = set(&[("a", "1"), ("c", "3"), ("e", "5")]);
        // Every hint, right, a gap, wrong or out of range, for present and absent names.
        for hint in 0..6 {
            for name in ["0", "a", "b", "c", "d", "e", "f"] {
                let h = AtomicUsize::new(hint);
                assert_eq!(
                    base.get_hinted(name, &h).map(|v| v.as_str()),
                    base.get(name)
                );
                let mut got = base.clone();
                let h = AtomicUsize::new(hint);
                got.set_shared_hinted(&shared_name(name), LabelValue::new("x"), &h);
                let mut want = base.clone();
                want.set(name, "x");
                assert_eq!(got, want, "{name} with hint {hint}");
                assert_eq!(base, set(&[("a", "1"), ("c", "3"), ("e", "5")]));
            }
        }
    }

    #[test]
    fn clones_share_until_changed() {
        let a = set(&[("a", "1"), ("b", "2"), ("c", "3")]);
        let mut b = a.clone();
        assert!(Arc::ptr_eq(&a.labels, &b.labels));
        // Changes that change nothing copy nothing.
        b.set("a", "1");
        b.remove("zz");
        b.retain(|_, _| true);
        b.set_sorted(&[("b", LabelValue::new("2"))]);
        assert!(Arc::ptr_eq(&a.labels, &b.labels));
        // A real change copies, and only the clone changes.
        b.retain(|n, _| n != "b");
        assert!(!Arc::ptr_eq(&a.labels, &b.labels));
        assert_eq!(b, set(&[("a", "1"), ("c", "3")]));
        assert_eq!(a, set(&[("a", "1"), ("b", "2"), ("c", "3")]));
        let mut c = a.clone();
        c.retain(|n, _| n == "b");
        assert_eq!(c, set(&[("b", "2")]));
        let mut d = a.clone();
        d.set("b", "9");
        assert_eq!(d.get("b"), Some("9"));
        assert_eq!(a.get("b"), Some("2"));
    }
}
