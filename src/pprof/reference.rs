//! A deliberately simple, slow model of the delta, on decoded [`Profile`] trees and symbolic
//! stack keys (no hashing, no splicing). Unit tests, property tests and the fuzz target compare
//! the fast engine in `delta.rs` with it. Not part of the supported API.

use std::collections::{BTreeMap, HashMap};

use super::proto::Profile;

/// One line of a frame: function name, file, line, column.
pub type Line = (String, String, i64, i64);

/// One frame: address relative to its mapping, folded flag, lines (inlined first).
pub type Frame = (u64, bool, Vec<Line>);

/// A label: key, string value, number, number unit.
pub type Label = (String, String, i64, String);

/// What identifies a sample across profiles.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StackKey {
    pub frames: Vec<Frame>,
    pub labels: Vec<Label>,
}

fn s(p: &Profile, i: i64) -> String {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .cloned()
        .unwrap_or_default()
}

/// Values per stack key, summed over samples with equal keys. Expects a valid profile.
pub fn by_stack(p: &Profile) -> BTreeMap<StackKey, Vec<i64>> {
    let functions: HashMap<u64, _> = p.function.iter().map(|f| (f.id, f)).collect();
    let mappings: HashMap<u64, _> = p.mapping.iter().map(|m| (m.id, m)).collect();
    let locations: HashMap<u64, Frame> = p
        .location
        .iter()
        .map(|l| {
            let start = mappings.get(&l.mapping_id).map_or(0, |m| m.memory_start);
            let lines = l
                .line
                .iter()
                .map(|ln| {
                    let (name, file) = functions
                        .get(&ln.function_id)
                        .map(|f| (s(p, f.name), s(p, f.filename)))
                        .unwrap_or_default();
                    (name, file, ln.line, ln.column)
                })
                .collect();
            (l.id, (l.address.wrapping_sub(start), l.is_folded, lines))
        })
        .collect();
    let mut out: BTreeMap<StackKey, Vec<i64>> = BTreeMap::new();
    for sample in &p.sample {
        let frames = sample
            .location_id
            .iter()
            .map(|id| locations.get(id).cloned().unwrap_or_default())
            .collect();
        let mut labels: Vec<Label> = sample
            .label
            .iter()
            .filter(|l| l.str != 0 || l.num != 0 || l.num_unit != 0)
            .map(|l| (s(p, l.key), s(p, l.str), l.num, s(p, l.num_unit)))
            .collect();
        labels.sort();
        let entry = out
            .entry(StackKey { frames, labels })
            .or_insert_with(|| vec![0; sample.value.len()]);
        for (acc, v) in entry.iter_mut().zip(&sample.value) {
            *acc = acc.saturating_add(*v);
        }
    }
    out
}

/// Which sample types of `p` have one of these names.
pub fn cumulative_mask(p: &Profile, names: Option<&[&str]>) -> Vec<bool> {
    p.sample_type
        .iter()
        .map(|t| names.is_none_or(|names| names.contains(&s(p, t.r#type).as_str())))
        .collect()
}

/// The expected delta: per stack of `new`, cumulative values minus `old`'s (clamped at 0),
/// gauges as in `new`; all-zero stacks left out. Also returns how many matched stacks had no
/// cumulative value grow and some shrink.
pub fn delta(
    old: &Profile,
    new: &Profile,
    cumulative: &[bool],
) -> (BTreeMap<StackKey, Vec<i64>>, usize) {
    let old = by_stack(old);
    let mut decreased = 0;
    let mut out = BTreeMap::new();
    for (key, mut values) in by_stack(new) {
        let before = old.get(&key);
        let (mut up, mut down) = (false, false);
        for (i, v) in values.iter_mut().enumerate() {
            if !cumulative.get(i).copied().unwrap_or(false) {
                continue;
            }
            let b = before.and_then(|b| b.get(i)).copied().unwrap_or(0);
            up |= *v > b;
            down |= *v < b;
            *v = v.saturating_sub(b).max(0);
        }
        if before.is_some() && down && !up {
            decreased += 1;
        }
        if values.iter().any(|&v| v != 0) {
            out.insert(key, values);
        }
    }
    (out, decreased)
}

/// Sums of every sample type.
pub fn totals(p: &Profile) -> Vec<i64> {
    let mut t = vec![0i64; p.sample_type.len()];
    for sample in &p.sample {
        for (acc, v) in t.iter_mut().zip(&sample.value) {
            *acc = acc.saturating_add(*v);
        }
    }
    t
}
