//! The call tree Pyroscope draws flame graphs from: stacks keyed by function name, root first,
//! each node with its own (`self`) and cumulative (`total`) value.
//!
//! Built straight from decoded pprof profiles, one sample type at a time, without merging the
//! profiles first: a window of 240 CPU profiles is 240 inserts of a few thousand stacks into one
//! tree, where a pprof merge would first rebuild every location and function table.
//!
//! Frames are function names as Pyroscope names them (`pkg/model/tree.go`,
//! `TreeFromBackendProfile`): each location's `Line`s expanded, inlined callees included, and a
//! location without lines named by its address in lowercase hex. Samples whose value is not
//! positive are skipped, as Pyroscope's `InsertStack` skips them, and so are samples without
//! locations (an empty stack): upstream's `InsertStack` adds them to a throwaway root, so
//! they count in neither its tree nor its total.
//!
//! Nodes live in one arena and every walk over them is a loop, never a recursion: a profile's
//! stack depth is outside input and must not decide our stack usage.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::pprof::proto::Profile;
use crate::pprof::stacks::RawStacks;

/// A small multiplicative hasher for integer keys (node and name ids), which the standard
/// SipHash would make the hot loop's main cost. Keys come from our own counters, not input.
#[derive(Default, Clone, Copy)]
pub(crate) struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.write_u64(u64::from_le_bytes(word));
        }
        for b in chunks.remainder() {
            self.write_u64(u64::from(*b));
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }
}

pub(crate) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// The root's name id: no real name has it.
pub(crate) const ROOT: u32 = u32::MAX;

/// One call-tree node.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub name: u32,
    pub parent: u32,
    pub self_value: i64,
    pub total: i64,
    /// Child node ids; sorted by name after [`NameTree::finish`].
    pub children: Vec<u32>,
}

/// Each location's frames as name ids, from [`NameTree::prepare`].
#[derive(Debug, Default)]
pub struct Frames {
    ids: Vec<u32>,
    spans: Vec<(u32, u32)>,
    /// A location naming a function the profile lacks: [`Batch::read`] returns it, as
    /// [`NameTree::add_profile`] does, rather than drawing a frame with no name.
    error: Option<TreeError>,
}

/// A profile's samples as root-first stacks of name ids with their values, read without the
/// tree (see [`NameTree::prepare`]).
#[derive(Debug, Default)]
pub struct Batch {
    ids: Vec<u32>,
    stacks: Vec<(usize, usize, i64)>,
}

impl Batch {
    /// Reads every sample of `r` (cleared first), valued by sample type number `value_index`;
    /// samples whose value is not positive are left out.
    pub fn read(
        &mut self,
        r: &mut RawStacks,
        frames: &Frames,
        value_index: usize,
    ) -> Result<(), TreeError> {
        self.ids.clear();
        self.stacks.clear();
        if let Some(e) = &frames.error {
            return Err(e.clone());
        }
        for i in 0..r.sample_count() {
            let (locations, values) = r
                .read_sample(i)
                .map_err(|e| TreeError::Pprof(e.to_string()))?;
            let value = *values.get(value_index).ok_or(TreeError::MissingValue {
                have: values.len(),
                want: value_index,
            })?;
            if value <= 0 {
                continue;
            }
            let start = self.ids.len();
            for &loc in locations.iter().rev() {
                let (a, b) = frames
                    .spans
                    .get(loc as usize)
                    .copied()
                    .ok_or(TreeError::MissingLocation(u64::from(loc)))?;
                self.ids
                    .extend_from_slice(&frames.ids[a as usize..b as usize]);
            }
            self.stacks.push((start, self.ids.len(), value));
        }
        Ok(())
    }
}

/// Stacks by function name. Node 0 is the root (Pyroscope's "total").
#[derive(Clone, Debug)]
pub struct NameTree {
    names: Vec<Box<str>>,
    name_ids: HashMap<Box<str>, u32>,
    pub(crate) nodes: Vec<Node>,
    edges: IdMap<(u32, u32), u32>,
    /// The leaf node of every stack inserted so far: the same stacks recur in every profile
    /// of a window, and one lookup of the whole stack replaces one per frame.
    leaves: IdMap<Box<[u32]>, u32>,
    /// Root-first name ids a stack must start with (Pyroscope's `call_site` selector).
    call_site: Vec<u32>,
    /// Sum of every inserted value.
    grand_total: i64,
    /// Whether totals are computed and children sorted since the last insert.
    finished: bool,
}

impl Default for NameTree {
    fn default() -> Self {
        NameTree::new()
    }
}

/// Why a profile could not be added.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeError {
    #[error("sample refers to location {0}, which the profile does not have")]
    MissingLocation(u64),
    #[error("location {location} refers to function {function}, which the profile does not have")]
    MissingFunction { location: u64, function: u64 },
    #[error("sample has {have} values, the sample type is number {want}")]
    MissingValue { have: usize, want: usize },
    #[error("{0}")]
    Pprof(String),
}

impl NameTree {
    pub fn new() -> NameTree {
        NameTree {
            names: Vec::new(),
            name_ids: HashMap::new(),
            nodes: vec![Node {
                name: ROOT,
                parent: 0,
                self_value: 0,
                total: 0,
                children: Vec::new(),
            }],
            edges: IdMap::default(),
            leaves: IdMap::default(),
            call_site: Vec::new(),
            grand_total: 0,
            finished: true,
        }
    }

    /// A tree that keeps only stacks starting (root first) with the frames `call_site`.
    pub fn with_call_site(call_site: &[String]) -> NameTree {
        let mut t = NameTree::new();
        t.call_site = call_site.iter().map(|n| t.intern(n)).collect();
        t
    }

    /// The sum of every stack's value.
    pub fn total(&self) -> i64 {
        self.grand_total
    }

    /// Nodes below the root.
    pub fn len(&self) -> usize {
        self.nodes.len() - 1
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.len() == 1
    }

    pub(crate) fn name(&self, id: u32) -> &str {
        self.names.get(id as usize).map_or("", |n| n)
    }

    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.name_ids.get(name) {
            return id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(ROOT - 1);
        self.names.push(name.into());
        self.name_ids.insert(name.into(), id);
        id
    }

    fn child(&mut self, parent: u32, name: u32) -> u32 {
        if let Some(&c) = self.edges.get(&(parent, name)) {
            return c;
        }
        let c = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes.push(Node {
            name,
            parent,
            self_value: 0,
            total: 0,
            children: Vec::new(),
        });
        self.nodes[parent as usize].children.push(c);
        self.edges.insert((parent, name), c);
        c
    }

    /// Adds `value` for the root-first stack of name ids `stack`.
    fn insert_ids(&mut self, stack: &[u32], value: i64) {
        if value <= 0 || stack.is_empty() || !stack.starts_with(&self.call_site) {
            return;
        }
        let leaf = match self.leaves.get(stack) {
            Some(&leaf) => leaf,
            None => {
                let mut node = 0u32;
                for &name in stack {
                    node = self.child(node, name);
                }
                self.leaves.insert(stack.into(), node);
                node
            }
        };
        // Only the leaf is touched here: totals are summed once, by `finish`, instead of once
        // per frame of every sample (a walk through a tree too big for the cache).
        // Saturating: values are outside input, and two large ones must not overflow (a panic
        // in debug builds, a wrapped negative total in release).
        let leaf = &mut self.nodes[leaf as usize];
        leaf.self_value = leaf.self_value.saturating_add(value);
        self.grand_total = self.grand_total.saturating_add(value);
        self.finished = false;
    }

    /// Adds the root-first stack of names `stack` with `value`.
    pub fn insert(&mut self, stack: &[&str], value: i64) {
        let ids: Vec<u32> = stack.iter().map(|n| self.intern(n)).collect();
        self.insert_ids(&ids, value);
    }

    /// Adds every sample of `p`, valued by its sample type number `value_index`.
    pub fn add_profile(&mut self, p: &Profile, value_index: usize) -> Result<(), TreeError> {
        // Function and location ids are usually 1..=n in order (Go writes them so): then the
        // id is the index, and the maps stay empty.
        let dense_functions = p
            .function
            .iter()
            .enumerate()
            .all(|(i, f)| f.id == i as u64 + 1);
        let mut function_names: Vec<u32> = Vec::with_capacity(p.function.len());
        let mut function_index: IdMap<u64, u32> = IdMap::default();
        for f in &p.function {
            let name = p
                .string_table
                .get(usize::try_from(f.name).unwrap_or(usize::MAX))
                .map_or("", String::as_str);
            let id = self.intern(name);
            if !dense_functions {
                function_index.insert(f.id, id);
            }
            function_names.push(id);
        }
        let function = |id: u64| -> Option<u32> {
            if dense_functions {
                let i = usize::try_from(id).ok()?.checked_sub(1)?;
                function_names.get(i).copied()
            } else {
                function_index.get(&id).copied()
            }
        };

        // Each location's frames, caller first (pprof lists the inlined callee first).
        let mut frames: Vec<u32> = Vec::new();
        let mut spans: Vec<(u32, u32)> = Vec::with_capacity(p.location.len());
        let dense_locations = p
            .location
            .iter()
            .enumerate()
            .all(|(i, l)| l.id == i as u64 + 1);
        let mut location_index: IdMap<u64, usize> = IdMap::default();
        for (i, loc) in p.location.iter().enumerate() {
            let start = frames.len() as u32;
            if loc.line.is_empty() {
                let name = format!("{:x}", loc.address);
                frames.push(self.intern(&name));
            } else {
                for line in loc.line.iter().rev() {
                    let id = function(line.function_id).ok_or(TreeError::MissingFunction {
                        location: loc.id,
                        function: line.function_id,
                    })?;
                    frames.push(id);
                }
            }
            spans.push((start, frames.len() as u32));
            if !dense_locations {
                location_index.insert(loc.id, i);
            }
        }

        let mut stack: Vec<u32> = Vec::with_capacity(64);
        for sample in &p.sample {
            let value = *sample
                .value
                .get(value_index)
                .ok_or(TreeError::MissingValue {
                    have: sample.value.len(),
                    want: value_index,
                })?;
            if value <= 0 {
                continue;
            }
            stack.clear();
            for &loc in sample.location_id.iter().rev() {
                let index = if dense_locations {
                    usize::try_from(loc).ok().and_then(|i| i.checked_sub(1))
                } else {
                    location_index.get(&loc).copied()
                };
                let (start, end) = index
                    .and_then(|i| spans.get(i))
                    .copied()
                    .ok_or(TreeError::MissingLocation(loc))?;
                stack.extend_from_slice(&frames[start as usize..end as usize]);
            }
            self.insert_ids(&stack, value);
        }
        Ok(())
    }

    /// Adds every sample of the profile `r` holds, valued by its sample type number
    /// `value_index`: [`NameTree::add_profile`] without a decoded `Profile`.
    pub fn add_raw(&mut self, r: &mut RawStacks, value_index: usize) -> Result<(), TreeError> {
        let frames = self.prepare(r);
        let mut batch = Batch::default();
        batch.read(r, &frames, value_index)?;
        self.insert_batch(&batch);
        Ok(())
    }

    /// The frames of every location of `r`, as this tree's name ids: the only part of adding
    /// a profile that needs the tree besides the inserts themselves, so that several threads
    /// can share one tree and hold its lock briefly.
    pub fn prepare(&mut self, r: &RawStacks) -> Frames {
        let functions: Vec<u32> = r.function_names().map(|n| self.intern(n)).collect();
        let mut frames = Frames::default();
        for i in 0..r.location_count() {
            let start = frames.ids.len() as u32;
            if let Some(loc) = r.location(i) {
                if loc.has_lines() {
                    // Caller first: pprof lists the inlined callee first.
                    for f in loc.functions().rev() {
                        match functions.get(f) {
                            Some(&id) => frames.ids.push(id),
                            None => {
                                frames.error.get_or_insert(TreeError::MissingFunction {
                                    location: loc.id,
                                    function: f as u64,
                                });
                            }
                        }
                    }
                } else {
                    let name = format!("{:x}", loc.address);
                    frames.ids.push(self.intern(&name));
                }
            }
            frames.spans.push((start, frames.ids.len() as u32));
        }
        frames
    }

    /// Adds the stacks of `batch`.
    pub fn insert_batch(&mut self, batch: &Batch) {
        for &(start, end, value) in &batch.stacks {
            self.insert_ids(&batch.ids[start..end], value);
        }
    }

    /// Adds `other`'s stacks to this tree.
    pub fn merge(&mut self, other: &NameTree) {
        let names: Vec<u32> = other.names.iter().map(|n| self.intern(n)).collect();
        let mut mapped: Vec<u32> = Vec::with_capacity(other.nodes.len());
        mapped.push(0);
        self.nodes[0].self_value = self.nodes[0]
            .self_value
            .saturating_add(other.nodes[0].self_value);
        // Nodes are created after their parent, so a parent is always mapped first.
        for n in &other.nodes[1..] {
            let parent = mapped[n.parent as usize];
            let c = self.child(parent, names[n.name as usize]);
            let node = &mut self.nodes[c as usize];
            node.self_value = node.self_value.saturating_add(n.self_value);
            mapped.push(c);
        }
        self.grand_total = self.grand_total.saturating_add(other.grand_total);
        self.finished = false;
    }

    /// Sums every node's total and orders its children by name, as Pyroscope's tree keeps
    /// them; needed before reading totals or walking children.
    pub fn finish(&mut self) {
        if self.finished {
            return;
        }
        for n in &mut self.nodes {
            n.total = n.self_value;
        }
        // Children come after their parent: one backwards pass sums every subtree.
        for i in (1..self.nodes.len()).rev() {
            let (parent, total) = (self.nodes[i].parent as usize, self.nodes[i].total);
            self.nodes[parent].total = self.nodes[parent].total.saturating_add(total);
        }
        // Names ranked once, so that sorting children compares integers, not strings.
        let mut order: Vec<u32> = (0..self.names.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| self.names[a as usize].cmp(&self.names[b as usize]));
        let mut rank = vec![0u32; self.names.len()];
        for (r, &name) in order.iter().enumerate() {
            rank[name as usize] = r as u32;
        }
        let rank_of = |name: u32| rank.get(name as usize).copied().unwrap_or(u32::MAX);
        for i in 0..self.nodes.len() {
            let mut children = std::mem::take(&mut self.nodes[i].children);
            children.sort_unstable_by_key(|&c| rank_of(self.nodes[c as usize].name));
            self.nodes[i].children = children;
        }
        self.finished = true;
    }

    /// The smallest total a node needs to be drawn when at most `max_nodes` nodes may be:
    /// the `max_nodes`-th largest total (0 when the tree is small enough or `max_nodes` < 1),
    /// Pyroscope's `minValue`. Reads totals: call [`NameTree::finish`] first.
    pub(crate) fn min_value(&self, max_nodes: i64) -> i64 {
        let Ok(k) = usize::try_from(max_nodes) else {
            return 0;
        };
        if k == 0 || self.len() <= k {
            return 0;
        }
        let mut totals: Vec<i64> = self.nodes[1..].iter().map(|n| n.total).collect();
        let (_, kth, _) = totals.select_nth_unstable_by(k - 1, |a, b| b.cmp(a));
        *kth
    }

    /// Every root-first stack with its own value, in no particular order (for tests and
    /// tools).
    pub fn stacks(&self) -> Vec<(Vec<String>, i64)> {
        let mut out = Vec::new();
        for (i, n) in self.nodes.iter().enumerate().skip(1) {
            if n.self_value == 0 {
                continue;
            }
            let mut path = Vec::new();
            let mut at = i;
            while at != 0 {
                path.push(self.name(self.nodes[at].name).to_string());
                at = self.nodes[at].parent as usize;
            }
            path.reverse();
            out.push((path, n.self_value));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::proto::{Function, Line, Location, Sample, ValueType};

    /// A profile with functions `names` (ids 1..), one location per entry of `locations`
    /// (each a list of function ids, inlined callee first; empty = no lines, address 0xabc),
    /// and samples as (location ids leaf first, values).
    fn profile(names: &[&str], locations: &[&[u64]], samples: &[(&[u64], [i64; 2])]) -> Profile {
        let mut strings = vec![String::new(), "samples".into(), "count".into()];
        let function = names
            .iter()
            .enumerate()
            .map(|(i, n)| {
                strings.push(n.to_string());
                Function {
                    id: i as u64 + 1,
                    name: strings.len() as i64 - 1,
                    ..Default::default()
                }
            })
            .collect();
        let location = locations
            .iter()
            .enumerate()
            .map(|(i, fs)| Location {
                id: i as u64 + 1,
                address: 0xabc,
                line: fs
                    .iter()
                    .map(|&f| Line {
                        function_id: f,
                        line: 1,
                        column: 0,
                    })
                    .collect(),
                ..Default::default()
            })
            .collect();
        Profile {
            sample_type: vec![ValueType { r#type: 1, unit: 2 }; 2],
            sample: samples
                .iter()
                .map(|(locs, v)| Sample {
                    location_id: locs.to_vec(),
                    value: v.to_vec(),
                    label: vec![],
                })
                .collect(),
            function,
            location,
            string_table: strings,
            ..Default::default()
        }
    }

    fn sorted(mut s: Vec<(Vec<String>, i64)>) -> Vec<(Vec<String>, i64)> {
        s.sort();
        s
    }

    fn stack(names: &[&str], v: i64) -> (Vec<String>, i64) {
        (names.iter().map(|s| s.to_string()).collect(), v)
    }

    #[test]
    fn profiles_become_name_stacks() {
        type Case<'a> = (&'a str, Profile, usize, Vec<(Vec<String>, i64)>);
        let cases: Vec<Case> = vec![
            (
                "leaf-first locations become root-first stacks; equal names merge",
                profile(
                    &["main", "work", "work"],
                    &[&[1], &[2], &[3]],
                    &[(&[2, 1], [1, 10]), (&[3, 1], [2, 20])],
                ),
                1,
                vec![stack(&["main", "work"], 30)],
            ),
            (
                "inlined lines expand caller first",
                profile(
                    &["main", "outer", "inlined"],
                    &[&[1], &[3, 2]],
                    &[(&[2, 1], [1, 5])],
                ),
                0,
                vec![stack(&["main", "outer", "inlined"], 1)],
            ),
            (
                "a location without lines is its address in hex",
                profile(&["main"], &[&[1], &[]], &[(&[2, 1], [1, 7])]),
                1,
                vec![stack(&["main", "abc"], 7)],
            ),
            (
                // Found by the querier fuzz target: they were the root's own value and counted
                // in the total, which upstream's tree leaves them out of.
                "samples without locations are skipped",
                profile(&["main"], &[&[1]], &[(&[], [9, 9]), (&[1], [2, 2])]),
                1,
                vec![stack(&["main"], 2)],
            ),
            (
                "zero and negative values are skipped",
                profile(
                    &["main", "a"],
                    &[&[1], &[2]],
                    &[(&[2, 1], [0, -3]), (&[1], [4, 4])],
                ),
                1,
                vec![stack(&["main"], 4)],
            ),
        ];
        for (name, p, index, want) in cases {
            let mut t = NameTree::new();
            t.add_profile(&p, index).expect(name);
            assert_eq!(sorted(t.stacks()), sorted(want.clone()), "{name}");
            assert_eq!(t.total(), want.iter().map(|s| s.1).sum::<i64>(), "{name}");
        }
    }

    #[test]
    fn raw_profiles_give_the_same_tree() {
        use prost::Message as _;
        let p = profile(
            &["main", "outer", "inlined", "work"],
            &[&[1], &[3, 2], &[4], &[]],
            &[(&[2, 1], [1, 5]), (&[3, 2, 1], [2, 7]), (&[4, 1], [1, 1])],
        );
        let mut direct = NameTree::new();
        direct.add_profile(&p, 1).expect("adds");
        let mut raw = NameTree::new();
        let mut r = RawStacks::new();
        r.load(&p.encode_to_vec(), &crate::pprof::Limits::default())
            .expect("loads");
        raw.add_raw(&mut r, 1).expect("adds");
        assert_eq!(sorted(raw.stacks()), sorted(direct.stacks()));
        assert!(raw.add_raw(&mut r, 5).is_err());
    }

    #[test]
    fn call_site_keeps_stacks_with_that_prefix() {
        let p = profile(
            &["main", "a", "b"],
            &[&[1], &[2], &[3]],
            &[(&[2, 1], [1, 1]), (&[3, 1], [1, 2]), (&[3, 2, 1], [1, 4])],
        );
        let mut t = NameTree::with_call_site(&["main".into(), "a".into()]);
        t.add_profile(&p, 1).expect("adds");
        assert_eq!(
            sorted(t.stacks()),
            vec![stack(&["main", "a"], 1), stack(&["main", "a", "b"], 4)]
        );
    }

    #[test]
    fn bad_references_are_errors_not_panics() {
        let missing_loc = profile(&["main"], &[&[1]], &[(&[9], [1, 1])]);
        assert_eq!(
            NameTree::new().add_profile(&missing_loc, 0),
            Err(TreeError::MissingLocation(9))
        );
        let missing_fn = profile(&["main"], &[&[4]], &[(&[1], [1, 1])]);
        assert!(matches!(
            NameTree::new().add_profile(&missing_fn, 0),
            Err(TreeError::MissingFunction { .. })
        ));
        let p = profile(&["main"], &[&[1]], &[(&[1], [1, 1])]);
        assert!(NameTree::new().add_profile(&p, 5).is_err());
    }

    #[test]
    fn raw_reading_refuses_an_unknown_function_as_add_profile_does() {
        use prost::Message as _;
        let p = profile(&["main", "work"], &[&[1], &[2]], &[(&[2, 1], [1, 3])]);
        let mut r = RawStacks::new();
        r.load(&p.encode_to_vec(), &crate::pprof::Limits::default())
            .expect("loads");
        // The checked tables never hold such an index; the tree must still not invent a name.
        r.set_line_functions(7);
        let mut t = NameTree::new();
        assert!(matches!(
            t.add_raw(&mut r, 1),
            Err(TreeError::MissingFunction { function: 7, .. })
        ));
        assert!(t.is_empty());
    }

    #[test]
    fn merging_trees_adds_their_stacks() {
        let mut a = NameTree::new();
        a.insert(&["main", "x"], 2);
        a.insert(&["main"], 1);
        let mut b = NameTree::new();
        b.insert(&["main", "y"], 3);
        b.insert(&["main", "x"], 4);
        a.merge(&b);
        assert_eq!(a.total(), 10);
        assert_eq!(
            sorted(a.stacks()),
            vec![
                stack(&["main"], 1),
                stack(&["main", "x"], 6),
                stack(&["main", "y"], 3)
            ]
        );
    }

    #[test]
    fn min_value_is_the_kth_largest_total() {
        let mut t = NameTree::new();
        t.insert(&["a", "b"], 5);
        t.insert(&["a", "c"], 3);
        t.insert(&["d"], 1);
        t.finish();
        // Totals: a 8, b 5, c 3, d 1.
        for (max, want) in [(0, 0), (-1, 0), (4, 0), (10, 0), (3, 3), (2, 5), (1, 8)] {
            assert_eq!(t.min_value(max), want, "max_nodes {max}");
        }
    }
}
