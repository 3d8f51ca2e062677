//! Setting many sorted labels at once (`LabelSet::set_sorted`, `labelmap`'s write): where each
//! new pair goes is found by binary search, and the pairs between are copied in runs, so a
//! merge compares names only O(adds × log labels) times instead of once per label.
//!
//! Names compare slowly (discovered names share long prefixes such as `__meta_kubernetes_pod_`),
//! and a `labelmap` usually adds names that all sort after every source name (`app`, `team`
//! after `__meta_…`): then the first search finds the end and every other is over an empty
//! range.

use super::{LabelName, LabelValue, intern};

type Pair = (LabelName, LabelValue);

/// Where the pairs of the old set come from: moved out of a vector of our own, or cloned from
/// a shared one. Both can show what is left, for the searches.
pub(super) trait Source {
    fn rest(&self) -> &[Pair];
    fn take_one(&mut self) -> Option<Pair>;
    /// Appends the next `n` pairs (at most what is left) to `out`.
    fn take_into(&mut self, n: usize, out: &mut Vec<Pair>);
}

impl Source for std::vec::IntoIter<Pair> {
    fn rest(&self) -> &[Pair] {
        self.as_slice()
    }
    fn take_one(&mut self) -> Option<Pair> {
        self.next()
    }
    fn take_into(&mut self, n: usize, out: &mut Vec<Pair>) {
        out.extend(self.by_ref().take(n));
    }
}

impl Source for std::slice::Iter<'_, Pair> {
    fn rest(&self) -> &[Pair] {
        self.as_slice()
    }
    fn take_one(&mut self) -> Option<Pair> {
        self.next().cloned()
    }
    fn take_into(&mut self, n: usize, out: &mut Vec<Pair>) {
        let rest = self.as_slice();
        let (run, after) = rest.split_at(n.min(rest.len()));
        out.extend_from_slice(run);
        *self = after.iter();
    }
}

/// Position of `name` in `pairs` (sorted by name): found, or where it would go.
fn search(pairs: &[Pair], name: &str) -> Result<usize, usize> {
    pairs.binary_search_by(|(n, _)| n.as_str().cmp(name))
}

/// True when every pair of `adds` (sorted, unique) is already in `pairs` with its value.
pub(super) fn all_present(pairs: &[Pair], adds: &[(&str, LabelValue)]) -> bool {
    let mut lo = 0;
    for (name, value) in adds {
        match search(&pairs[lo..], name) {
            Ok(i) if pairs[lo + i].1 == *value => lo += i + 1,
            _ => return false,
        }
    }
    true
}

/// Writes `src`'s pairs with `adds` (sorted, unique, no empty value) merged in to `out`; an add
/// replaces the old pair of its name (keeping the old name's handle).
pub(super) fn merge(out: &mut Vec<Pair>, mut src: impl Source, adds: &[(&str, LabelValue)]) {
    for (name, value) in adds {
        let (before, found) = match search(src.rest(), name) {
            Ok(i) => (i, true),
            Err(i) => (i, false),
        };
        src.take_into(before, out);
        let name = match found.then(|| src.take_one()).flatten() {
            Some((old, _)) => old,
            None => intern::name(name),
        };
        out.push((name, value.clone()));
    }
    let left = src.rest().len();
    src.take_into(left, out);
}
