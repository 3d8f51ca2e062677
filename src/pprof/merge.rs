//! Merging profiles of the same type (PGO export, time-window aggregation), following
//! google/pprof's `Merge` so results match what `go tool pprof` users get:
//!
//! * profiles must have the same period type and the same sample types, in order;
//! * header: earliest non-zero `time_nanos`, summed durations, largest period, comments
//!   de-duplicated, `default_sample_type` and `doc_url` the first non-empty, drop/keep frames
//!   from the first profile;
//! * mappings are identified by (size rounded up to 4 KiB, file offset, build id or else file
//!   name), functions by (name, system name, file, start line), locations by (mapping, address
//!   relative to the mapping, lines, folded), samples by (locations, labels); values of equal
//!   samples are summed and all-zero samples dropped;
//! * the first profile's first mapping stays first (the main binary), ids are renumbered
//!   1..n and the string table is rebuilt.
//!
//! `Line.column`, `Function.start_line` and inlined lines survive (Go PGO needs them).

use std::collections::HashMap;

use super::error::{PprofError, Result};
use super::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};
use super::validate::validate;

/// Merges `profiles` into one new profile (see the module docs).
pub fn merge(profiles: &[Profile]) -> Result<Profile> {
    let Some(first) = profiles.first() else {
        return Err(PprofError::NoProfiles);
    };
    for p in profiles {
        validate(p)?;
    }
    for p in &profiles[1..] {
        compatible(first, p)?;
    }
    let mut m = Merger::default();
    m.out.string_table.push(String::new());
    m.strings.insert(String::new(), 0);
    m.header(profiles);
    for p in profiles {
        m.source(p);
    }
    let mut out = m.finish();
    // Summing can cancel samples out (e.g. a profile scaled by -1); merging once more drops
    // them together with whatever only they referenced, as Go's Merge does.
    if out.sample.iter().any(is_zero) {
        out = merge(std::slice::from_ref(&out))?;
    }
    Ok(out)
}

pub(crate) fn is_zero(s: &Sample) -> bool {
    s.value.iter().all(|&v| v == 0)
}

fn string(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

fn value_type<'a>(p: &'a Profile, vt: Option<&ValueType>) -> (&'a str, &'a str) {
    vt.map_or(("", ""), |vt| (string(p, vt.r#type), string(p, vt.unit)))
}

/// Whether `b` can be merged into (or subtracted from) `a`.
pub fn compatible(a: &Profile, b: &Profile) -> Result<()> {
    let (pa, pb) = (
        value_type(a, a.period_type.as_ref()),
        value_type(b, b.period_type.as_ref()),
    );
    if pa != pb {
        return Err(PprofError::Incompatible(format!(
            "period types {}/{} and {}/{}",
            pa.0, pa.1, pb.0, pb.1
        )));
    }
    let types = |p: &Profile| -> Vec<String> {
        p.sample_type
            .iter()
            .map(|t| {
                let (ty, unit) = value_type(p, Some(t));
                format!("{ty}/{unit}")
            })
            .collect()
    };
    let (ta, tb) = (types(a), types(b));
    if ta != tb {
        return Err(PprofError::Incompatible(format!(
            "sample types [{}] and [{}]",
            ta.join(" "),
            tb.join(" ")
        )));
    }
    Ok(())
}

type MappingKey = (u64, u64, String);
type FunctionKey = (i64, String, String, String);
type LocationKey = (u64, u64, Vec<(u64, i64, i64)>, bool);
type SampleKey = (Vec<u64>, Vec<(i64, i64, i64, i64)>);

#[derive(Default)]
struct Merger {
    out: Profile,
    strings: HashMap<String, i64>,
    mappings: HashMap<MappingKey, u64>,
    functions: HashMap<FunctionKey, u64>,
    locations: HashMap<LocationKey, u64>,
    samples: HashMap<SampleKey, usize>,
}

/// Per source profile: its ids mapped to output ids (and, for mappings, the address shift).
#[derive(Default)]
struct SourceMaps {
    mappings: HashMap<u64, (u64, i64)>,
    functions: HashMap<u64, u64>,
    locations: HashMap<u64, u64>,
}

impl Merger {
    fn intern(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.strings.get(s) {
            return i;
        }
        let i = self.out.string_table.len() as i64;
        self.out.string_table.push(s.to_owned());
        self.strings.insert(s.to_owned(), i);
        i
    }

    fn header(&mut self, profiles: &[Profile]) {
        let first = &profiles[0];
        let mut time = 0i64;
        let mut duration = 0i64;
        let mut period = 0i64;
        let mut comments: Vec<&str> = Vec::new();
        let mut default_type = "";
        let mut doc_url = "";
        for p in profiles {
            if p.time_nanos != 0 && (time == 0 || p.time_nanos < time) {
                time = p.time_nanos;
            }
            duration = duration.saturating_add(p.duration_nanos);
            period = period.max(p.period);
            for &c in &p.comment {
                let c = string(p, c);
                if !comments.contains(&c) {
                    comments.push(c);
                }
            }
            if default_type.is_empty() {
                default_type = string(p, p.default_sample_type);
            }
            if doc_url.is_empty() {
                doc_url = string(p, p.doc_url);
            }
        }
        for t in &first.sample_type {
            let (ty, unit) = value_type(first, Some(t));
            let vt = ValueType {
                r#type: self.intern(ty),
                unit: self.intern(unit),
            };
            self.out.sample_type.push(vt);
        }
        if let Some(pt) = &first.period_type {
            let (ty, unit) = value_type(first, Some(pt));
            self.out.period_type = Some(ValueType {
                r#type: self.intern(ty),
                unit: self.intern(unit),
            });
        }
        self.out.drop_frames = self.intern(string(first, first.drop_frames));
        self.out.keep_frames = self.intern(string(first, first.keep_frames));
        self.out.time_nanos = time;
        self.out.duration_nanos = duration;
        self.out.period = period;
        for c in comments {
            let c = self.intern(c);
            self.out.comment.push(c);
        }
        self.out.default_sample_type = self.intern(default_type);
        self.out.doc_url = self.intern(doc_url);
    }

    fn source(&mut self, p: &Profile) {
        let mut maps = SourceMaps::default();
        if self.out.mapping.is_empty()
            && let Some(m) = p.mapping.first()
        {
            // The main binary's mapping comes first in pprof; keep it there.
            self.mapping(p, m, &mut maps);
        }
        let mappings: HashMap<u64, &Mapping> = p.mapping.iter().map(|m| (m.id, m)).collect();
        let functions: HashMap<u64, &Function> = p.function.iter().map(|f| (f.id, f)).collect();
        let locations: HashMap<u64, &Location> = p.location.iter().map(|l| (l.id, l)).collect();
        for s in &p.sample {
            if is_zero(s) {
                continue;
            }
            let mut loc_ids = Vec::with_capacity(s.location_id.len());
            for id in &s.location_id {
                if let Some(l) = locations.get(id) {
                    loc_ids.push(self.location(p, l, &mappings, &functions, &mut maps));
                }
            }
            let mut labels: Vec<(i64, i64, i64, i64)> = s
                .label
                .iter()
                // Go's decoder drops labels with neither a string nor a number.
                .filter(|l| l.str != 0 || l.num != 0 || l.num_unit != 0)
                .map(|l| {
                    (
                        self.intern(string(p, l.key)),
                        self.intern(string(p, l.str)),
                        l.num,
                        self.intern(string(p, l.num_unit)),
                    )
                })
                .collect();
            let label_msgs: Vec<Label> = labels
                .iter()
                .map(|&(key, str, num, num_unit)| Label {
                    key,
                    str,
                    num,
                    num_unit,
                })
                .collect();
            labels.sort_unstable();
            let key = (loc_ids, labels);
            match self.samples.get(&key) {
                Some(&i) => {
                    if let Some(out) = self.out.sample.get_mut(i) {
                        for (acc, v) in out.value.iter_mut().zip(&s.value) {
                            *acc = acc.saturating_add(*v);
                        }
                    }
                }
                None => {
                    self.samples.insert(key.clone(), self.out.sample.len());
                    self.out.sample.push(Sample {
                        location_id: key.0,
                        value: s.value.clone(),
                        label: label_msgs,
                    });
                }
            }
        }
    }

    fn mapping(&mut self, p: &Profile, m: &Mapping, maps: &mut SourceMaps) -> (u64, i64) {
        if let Some(&r) = maps.mappings.get(&m.id) {
            return r;
        }
        const ROUND: u64 = 0x1000;
        let size = m.memory_limit.wrapping_sub(m.memory_start);
        let size = size.wrapping_add(ROUND - 1);
        let size = size - size % ROUND;
        let build_id = string(p, m.build_id);
        let file = string(p, m.filename);
        // A mapping with neither build id nor file is a fake one; all fakes are one mapping.
        let id_or_file = if !build_id.is_empty() { build_id } else { file };
        let key = (size, m.file_offset, id_or_file.to_owned());
        let result = match self.mappings.get(&key) {
            Some(&id) => {
                let start = self
                    .out
                    .mapping
                    .get(id as usize - 1)
                    .map_or(0, |o| o.memory_start);
                (id, (start as i64).wrapping_sub(m.memory_start as i64))
            }
            None => {
                let id = self.out.mapping.len() as u64 + 1;
                let mapping = Mapping {
                    id,
                    filename: self.intern(file),
                    build_id: self.intern(build_id),
                    ..*m
                };
                self.out.mapping.push(mapping);
                self.mappings.insert(key, id);
                (id, 0)
            }
        };
        maps.mappings.insert(m.id, result);
        result
    }

    fn function(&mut self, p: &Profile, f: &Function, maps: &mut SourceMaps) -> u64 {
        if let Some(&id) = maps.functions.get(&f.id) {
            return id;
        }
        let key = (
            f.start_line,
            string(p, f.name).to_owned(),
            string(p, f.system_name).to_owned(),
            string(p, f.filename).to_owned(),
        );
        let id = match self.functions.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.out.function.len() as u64 + 1;
                let function = Function {
                    id,
                    name: self.intern(&key.1),
                    system_name: self.intern(&key.2),
                    filename: self.intern(&key.3),
                    start_line: f.start_line,
                };
                self.out.function.push(function);
                self.functions.insert(key, id);
                id
            }
        };
        maps.functions.insert(f.id, id);
        id
    }

    fn location(
        &mut self,
        p: &Profile,
        l: &Location,
        mappings: &HashMap<u64, &Mapping>,
        functions: &HashMap<u64, &Function>,
        maps: &mut SourceMaps,
    ) -> u64 {
        if let Some(&id) = maps.locations.get(&l.id) {
            return id;
        }
        let (mapping_id, shift) = match mappings.get(&l.mapping_id) {
            Some(m) => self.mapping(p, m, maps),
            None => (0, 0),
        };
        let address = (l.address as i64).wrapping_add(shift) as u64;
        let lines: Vec<Line> = l
            .line
            .iter()
            .map(|ln| Line {
                function_id: functions
                    .get(&ln.function_id)
                    .map_or(0, |f| self.function(p, f, maps)),
                line: ln.line,
                column: ln.column,
            })
            .collect();
        let start = if mapping_id == 0 {
            0
        } else {
            self.out
                .mapping
                .get(mapping_id as usize - 1)
                .map_or(0, |m| m.memory_start)
        };
        let key = (
            mapping_id,
            address.wrapping_sub(start),
            lines
                .iter()
                .map(|ln| (ln.function_id, ln.line, ln.column))
                .collect(),
            l.is_folded,
        );
        let id = match self.locations.get(&key) {
            Some(&id) => id,
            None => {
                let id = self.out.location.len() as u64 + 1;
                self.out.location.push(Location {
                    id,
                    mapping_id,
                    address,
                    line: lines,
                    is_folded: l.is_folded,
                });
                self.locations.insert(key, id);
                id
            }
        };
        maps.locations.insert(l.id, id);
        id
    }

    fn finish(self) -> Profile {
        self.out
    }
}

/// Removes zero samples and everything only they referenced; renumbers ids and rebuilds the
/// string table (Go's `Compact`).
pub fn compact(p: &Profile) -> Result<Profile> {
    merge(std::slice::from_ref(p))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::pprof::reference::{StackKey, by_stack};
    use crate::pprof::testutil::{B, HEAP};

    fn summed(profiles: &[Profile]) -> BTreeMap<StackKey, Vec<i64>> {
        let mut out: BTreeMap<StackKey, Vec<i64>> = BTreeMap::new();
        for p in profiles {
            for (k, v) in by_stack(p) {
                let e = out.entry(k).or_insert_with(|| vec![0; v.len()]);
                for (a, b) in e.iter_mut().zip(v) {
                    *a += b;
                }
            }
        }
        out.retain(|_, v| v.iter().any(|&x| x != 0));
        out
    }

    #[test]
    fn merges_by_stack_whatever_the_ids() {
        let a = B::new(HEAP)
            .time(300)
            .sample(&["x", "main"], &[1, 2, 3, 4])
            .labeled(&["y", "main"], &[1, 1, 1, 1], &[("k", "v")])
            .build();
        let b = B::new(HEAP)
            .ids_from(900)
            .time(100)
            .sample(&["y", "main"], &[5, 5, 5, 5])
            .labeled(&["y", "main"], &[1, 1, 1, 1], &[("k", "v")])
            .sample(&["x", "main"], &[1, 1, 1, 1])
            .build();
        let c = B::new(HEAP).time(0).sample(&["z"], &[0, 0, 0, 0]).build();
        let inputs = [a, b, c];
        let m = merge(&inputs).expect("merge");
        validate(&m).expect("valid");
        assert_eq!(by_stack(&m), summed(&inputs));
        assert_eq!(m.sample.len(), 3);
        assert_eq!(m.location.len(), 3, "x, main, y");
        assert_eq!(m.time_nanos, 100);
        assert_eq!(m.mapping[0].id, 1);
        assert!(
            !m.string_table.iter().any(|s| s == "z"),
            "zero-only function dropped"
        );
    }

    #[test]
    fn cancelling_samples_disappear_with_their_tables() {
        let a = B::new(HEAP).sample(&["x", "main"], &[1, 2, 3, 4]).build();
        let mut neg = a.clone();
        for s in &mut neg.sample {
            for v in &mut s.value {
                *v = -*v;
            }
        }
        let m = merge(&[a, neg]).expect("merge");
        assert!(m.sample.is_empty());
        assert!(m.location.is_empty() && m.function.is_empty());
        assert_eq!(m.mapping.len(), 1, "the main mapping stays");
    }

    #[test]
    fn headers_combine_like_go() {
        let mut a = B::new(HEAP).time(50).sample(&["x"], &[1, 1, 1, 1]).build();
        a.duration_nanos = 10;
        a.comment.push(a.string_table.len() as i64);
        a.string_table.push("c1".into());
        let mut b = B::new(HEAP)
            .time(20)
            .period(1000)
            .sample(&["x"], &[1, 1, 1, 1])
            .build();
        b.duration_nanos = 5;
        b.period = 9_000_000;
        b.comment.push(b.string_table.len() as i64);
        b.string_table.push("c1".into());
        b.default_sample_type = 4; // "inuse_space"? whatever string 4 is
        let m = merge(&[a, b.clone()]).expect("merge");
        assert_eq!(
            (m.time_nanos, m.duration_nanos, m.period),
            (20, 15, 9_000_000)
        );
        assert_eq!(m.comment.len(), 1);
        assert_eq!(
            m.string_table[m.default_sample_type as usize],
            b.string_table[4]
        );
    }

    #[test]
    fn pgo_fields_survive() {
        let mut a = B::new(HEAP).sample(&["x", "main"], &[1, 1, 1, 1]).build();
        a.location[0].line[0].column = 7;
        a.function[0].start_line = 42;
        a.location[0].line.push(Line {
            function_id: a.function[1].id,
            line: 99,
            column: 3,
        });
        let m = merge(&[a.clone(), a]).expect("merge");
        let loc = &m.location[0];
        assert_eq!(loc.line.len(), 2);
        assert_eq!(
            (loc.line[0].column, loc.line[1].line, loc.line[1].column),
            (7, 99, 3)
        );
        assert_eq!(m.function[0].start_line, 42);
        assert_eq!(m.sample[0].value, vec![2, 2, 2, 2]);
    }

    #[test]
    fn incompatible_and_invalid_inputs() {
        let heap = B::new(HEAP).build();
        let cpu = B::new(&[("samples", "count"), ("cpu", "nanoseconds")]).build();
        let mut other_period = heap.clone();
        other_period.period_type = None;
        let mut invalid = heap.clone();
        invalid.string_table.clear();
        let cases: Vec<(&str, Vec<Profile>)> = vec![
            ("none", vec![]),
            ("sample types", vec![heap.clone(), cpu]),
            ("period type", vec![heap.clone(), other_period]),
            ("invalid", vec![heap.clone(), invalid]),
        ];
        for (name, inputs) in cases {
            assert!(merge(&inputs).is_err(), "{name}");
        }
    }
}
