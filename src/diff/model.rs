//! Aggregation: per-function flat/cum values and the merged call tree of both windows,
//! normalised as the sample type's [`Measure`] says.

use std::collections::HashMap;

use super::units::Measure;
use super::{
    DiffError, Node, Options, Parts, Report, Row, Side, StatsOptions, Summary, Tree, Window,
};
use crate::pprof::proto::Profile;

/// Below this relative change a frame counts as unchanged: rates computed from windows of
/// different lengths differ in the last bits even when nothing changed.
const UNCHANGED: f64 = 0.01;

const BEFORE: usize = 0;
const AFTER: usize = 1;

pub(super) fn build(before: &Window, after: &Window, opts: &Options) -> Result<Report, DiffError> {
    build_with_parts(before, after, None, opts)
}

/// [`build`], then the statistics over the windows' parts when there are any.
pub(super) fn build_with_parts(
    before: &Window,
    after: &Window,
    parts: Option<(&Parts, &StatsOptions)>,
    opts: &Options,
) -> Result<Report, DiffError> {
    let want = opts.sample_type.as_ref();
    let (bi, bty, bunit) = select(&before.profile, Side::Before, want)?;
    let (ai, aty, aunit) = select(&after.profile, Side::After, want)?;
    if (bty, bunit) != (aty, aunit) {
        return Err(DiffError::SampleTypeMismatch {
            before: format!("{bty}/{bunit}"),
            after: format!("{aty}/{aunit}"),
        });
    }
    // Both windows come from one source, so either both profile counts are known or neither;
    // should only one be, the windows must still be normalised alike.
    let measure = Measure::of(bty, before.profiles.min(after.profiles));
    let mut acc = Acc::default();
    let before_summary = acc.add(before, Side::Before, bi, measure)?;
    let after_summary = acc.add(after, Side::After, ai, measure)?;
    let mut report = Report {
        rows: acc.rows(),
        measure,
        unit: bunit.to_string(),
        sample_type: bty.to_string(),
        before: before_summary,
        after: after_summary,
        tree: acc.tree(),
        top: opts.top,
        total_stats: None,
        statistics: None,
    };
    if let Some((parts, stats)) = parts {
        let want = (bty.to_string(), bunit.to_string());
        let values = |windows: &[Window], side: Side| -> Result<Vec<PartValues>, DiffError> {
            windows
                .iter()
                .map(|w| part_values(w, side, &want, measure))
                .collect()
        };
        let before_parts = values(&parts.before, Side::Before)?;
        let after_parts = values(&parts.after, Side::After)?;
        super::stats::fill(&mut report, &before_parts, &after_parts, stats);
    }
    Ok(report)
}

/// One part's normalised values, as the whole window's are normalised (see [`Acc::add`]).
pub(super) struct PartValues {
    /// Function name → (flat, cum).
    pub functions: HashMap<String, (f64, f64)>,
    pub total: f64,
}

/// The per-function values of one part of a window (a time bucket of it), normalised by the
/// part's own seconds, instances and profiles with the window's `measure`, so that the parts'
/// mean estimates the window's value.
fn part_values(
    w: &Window,
    side: Side,
    want: &(String, String),
    measure: Measure,
) -> Result<PartValues, DiffError> {
    let (index, _, _) = select(&w.profile, side, Some(want))?;
    let mut acc = Acc::default();
    let summary = acc.add(w, side, index, measure)?;
    let s = match side {
        Side::Before => BEFORE,
        Side::After => AFTER,
    };
    let functions = (0..acc.names.len())
        .filter(|&i| acc.seen[i] != 0)
        .map(|i| (acc.names[i].clone(), (acc.flat[i][s], acc.cum[i][s])))
        .collect();
    Ok(PartValues {
        functions,
        total: summary.normalised,
    })
}

/// Signed colour intensity of a change from `before` to `after` (see [`super::Node::change`]).
pub(super) fn change_intensity(before: f64, after: f64) -> f64 {
    let delta = after - before;
    if before == 0.0 {
        return if delta > 0.0 {
            1.0
        } else if delta < 0.0 {
            -1.0
        } else {
            0.0
        };
    }
    let rel = delta / before.abs();
    if rel.is_nan() || rel.abs() < UNCHANGED {
        0.0
    } else {
        rel.clamp(-1.0, 1.0)
    }
}

pub(super) fn change_pct(before: f64, after: f64) -> Option<f64> {
    (before != 0.0).then(|| (after - before) / before.abs() * 100.0)
}

fn string(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

/// The index, type and unit of the sample type to compare in `p`.
fn select<'p>(
    p: &'p Profile,
    side: Side,
    want: Option<&(String, String)>,
) -> Result<(usize, &'p str, &'p str), DiffError> {
    let types: Vec<(&str, &str)> = p
        .sample_type
        .iter()
        .map(|vt| (string(p, vt.r#type), string(p, vt.unit)))
        .collect();
    let found = match want {
        Some((ty, unit)) => types
            .iter()
            .position(|(t, u)| t == ty && (unit.is_empty() || u == unit))
            .ok_or_else(|| DiffError::SampleTypeMissing {
                side,
                ty: ty.clone(),
                unit: unit.clone(),
                available: if types.is_empty() {
                    "none".to_string()
                } else {
                    types
                        .iter()
                        .map(|(t, u)| format!("{t}/{u}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                },
            })?,
        None => {
            let default = string(p, p.default_sample_type);
            // go tool pprof falls back to the last type when the default names none of them.
            let named = (!default.is_empty())
                .then(|| types.iter().position(|(t, _)| *t == default))
                .flatten();
            match named {
                Some(i) => i,
                None => types
                    .len()
                    .checked_sub(1)
                    .ok_or(DiffError::NoSampleTypes { side })?,
            }
        }
    };
    let (ty, unit) = types[found];
    Ok((found, ty, unit))
}

#[derive(Default)]
struct Acc {
    ids: HashMap<String, u32>,
    names: Vec<String>,
    flat: Vec<[f64; 2]>,
    cum: Vec<[f64; 2]>,
    /// The last sample (stamp) each function was counted in: recursion counts once per sample,
    /// and a non-zero stamp also marks functions that occur in some stack.
    seen: Vec<u64>,
    stamp: u64,
    nodes: Vec<RawNode>,
    edges: HashMap<(u32, u32), u32>,
}

struct RawNode {
    /// u32::MAX for the root.
    name: u32,
    total: [f64; 2],
    own: [f64; 2],
    children: Vec<u32>,
}

impl Acc {
    fn intern(&mut self, name: &str) -> u32 {
        if let Some(&id) = self.ids.get(name) {
            return id;
        }
        let id = self.names.len() as u32;
        self.ids.insert(name.to_string(), id);
        self.names.push(name.to_string());
        self.flat.push([0.0; 2]);
        self.cum.push([0.0; 2]);
        self.seen.push(0);
        id
    }

    fn child(&mut self, parent: u32, name: u32) -> u32 {
        if let Some(&c) = self.edges.get(&(parent, name)) {
            return c;
        }
        let c = self.nodes.len() as u32;
        self.nodes.push(RawNode {
            name,
            total: [0.0; 2],
            own: [0.0; 2],
            children: Vec::new(),
        });
        self.nodes[parent as usize].children.push(c);
        self.edges.insert((parent, name), c);
        c
    }

    fn add(
        &mut self,
        w: &Window,
        side: Side,
        index: usize,
        measure: Measure,
    ) -> Result<Summary, DiffError> {
        if !(w.seconds.is_finite() && w.seconds > 0.0) {
            return Err(DiffError::InvalidWindow {
                side,
                reason: format!(
                    "length must be a positive number of seconds, not {}",
                    w.seconds
                ),
            });
        }
        if w.instances == 0 {
            return Err(DiffError::InvalidWindow {
                side,
                reason: "no instances contributed".to_string(),
            });
        }
        let s = match side {
            Side::Before => BEFORE,
            Side::After => AFTER,
        };
        if self.nodes.is_empty() {
            self.nodes.push(RawNode {
                name: u32::MAX,
                total: [0.0; 2],
                own: [0.0; 2],
                children: Vec::new(),
            });
        }
        let factor = match measure {
            Measure::PerSecond => 1.0 / (w.seconds * w.instances as f64),
            // Each profile is one instance's snapshot: their mean is the average instance.
            Measure::Average => 1.0 / w.profiles.max(1) as f64,
            Measure::SumPerInstance => 1.0 / w.instances as f64,
        };
        let p = &w.profile;
        let malformed = |reason: String| DiffError::Malformed { side, reason };

        let mut functions: HashMap<u64, u32> = HashMap::with_capacity(p.function.len());
        for f in &p.function {
            let name = match string(p, f.name) {
                "" => string(p, f.system_name),
                n => n,
            };
            let name = if name.is_empty() { "<unknown>" } else { name };
            let id = self.intern(name);
            functions.insert(f.id, id);
        }
        // Frames of each location, innermost first: pprof lists inlined callees before callers.
        let mut locations: HashMap<u64, Vec<u32>> = HashMap::with_capacity(p.location.len());
        for l in &p.location {
            let mut frames = Vec::with_capacity(l.line.len().max(1));
            for line in &l.line {
                let f = functions.get(&line.function_id).ok_or_else(|| {
                    malformed(format!(
                        "location {} refers to missing function {}",
                        l.id, line.function_id
                    ))
                })?;
                frames.push(*f);
            }
            if frames.is_empty() {
                // Unsymbolised: the address is all there is to tell frames apart.
                frames.push(self.intern(&format!("0x{:x}", l.address)));
            }
            locations.insert(l.id, frames);
        }

        let mut total: i128 = 0;
        let mut stack: Vec<u32> = Vec::new();
        for (n, sample) in p.sample.iter().enumerate() {
            let raw = *sample.value.get(index).ok_or_else(|| {
                malformed(format!(
                    "sample {n} has {} values, fewer than its {} sample types",
                    sample.value.len(),
                    p.sample_type.len()
                ))
            })?;
            total += i128::from(raw);
            let v = raw as f64 * factor;
            stack.clear();
            for id in &sample.location_id {
                let frames = locations.get(id).ok_or_else(|| {
                    malformed(format!("sample {n} refers to missing location {id}"))
                })?;
                stack.extend_from_slice(frames);
            }
            self.nodes[0].total[s] += v;
            let Some(&leaf) = stack.first() else {
                self.nodes[0].own[s] += v;
                continue;
            };
            self.flat[leaf as usize][s] += v;
            self.stamp += 1;
            for &f in &stack {
                if self.seen[f as usize] != self.stamp {
                    self.seen[f as usize] = self.stamp;
                    self.cum[f as usize][s] += v;
                }
            }
            let mut node = 0;
            for &f in stack.iter().rev() {
                node = self.child(node, f);
                self.nodes[node as usize].total[s] += v;
            }
            self.nodes[node as usize].own[s] += v;
        }
        let total = total as f64;
        Ok(Summary {
            label: w.label.clone(),
            seconds: w.seconds,
            instances: w.instances,
            profiles: w.profiles,
            samples: p.sample.len(),
            total,
            normalised: total * factor,
        })
    }

    fn rows(&self) -> Vec<Row> {
        let mut rows: Vec<Row> = (0..self.names.len())
            .filter(|&i| self.seen[i] != 0)
            .map(|i| {
                let [flat_before, flat_after] = self.flat[i];
                let [cum_before, cum_after] = self.cum[i];
                Row {
                    function: self.names[i].clone(),
                    flat_before,
                    flat_after,
                    cum_before,
                    cum_after,
                    flat_change_pct: change_pct(flat_before, flat_after),
                    cum_change_pct: change_pct(cum_before, cum_after),
                    flat_stats: None,
                    cum_stats: None,
                }
            })
            .collect();
        // Impact is the larger of the two changes: CPU that moved from one caller to another
        // often stays in the same leaf (both call `spin`), and then only the callers' cum
        // shows the move; sorting by flat alone would bury them.
        rows.sort_by(|a, b| {
            let flat = |r: &Row| (r.flat_after - r.flat_before).abs();
            let cum = |r: &Row| (r.cum_after - r.cum_before).abs();
            let impact = |r: &Row| flat(r).max(cum(r));
            impact(b)
                .total_cmp(&impact(a))
                .then(flat(b).total_cmp(&flat(a)))
                .then_with(|| a.function.cmp(&b.function))
        });
        rows
    }

    fn tree(&self) -> Tree {
        let mut nodes = Vec::with_capacity(self.nodes.len());
        if self.nodes.is_empty() {
            return Tree { nodes };
        }
        let name =
            |id: u32| -> &str { self.names.get(id as usize).map_or("total", String::as_str) };
        // Iterative: deep recursion in the profiled program must not overflow our stack.
        // Entries: (raw node, parent's index in `nodes`, depth).
        let mut todo: Vec<(u32, Option<usize>, usize)> = vec![(0, None, 0)];
        while let Some((raw, parent, depth)) = todo.pop() {
            let r = &self.nodes[raw as usize];
            let index = nodes.len();
            nodes.push(Node {
                name: name(r.name).to_string(),
                depth,
                parent,
                children: Vec::new(),
                before: r.total[BEFORE],
                after: r.total[AFTER],
                self_before: r.own[BEFORE],
                self_after: r.own[AFTER],
            });
            if let Some(p) = parent {
                let siblings: &mut Vec<usize> = &mut nodes[p].children;
                siblings.push(index);
            }
            let mut children = r.children.clone();
            // Reversed, so the stack pops them in name order.
            children.sort_by(|a, b| {
                name(self.nodes[*b as usize].name).cmp(name(self.nodes[*a as usize].name))
            });
            todo.extend(children.into_iter().map(|c| (c, Some(index), depth + 1)));
        }
        Tree { nodes }
    }
}
