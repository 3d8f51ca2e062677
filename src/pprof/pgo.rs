//! Turning a merged CPU profile into a Go PGO input (`default.pgo`), the way
//! `profilecli query go-pgo` gets one from Pyroscope (pyroscope-protocol.md §6):
//!
//! * one sample type is kept: `cpu/nanoseconds`, else `samples/count`. Go's PGO reader also
//!   falls back to other types, but rejects exactly the ones a non-CPU profile has
//!   (`alloc_*`, `inuse_*`, `contentions`, `delay`), so anything else is an error here rather
//!   than a file `go build` refuses later;
//! * every stack is cut to its `keep_locations` leaf-most frames (the compiler only looks at
//!   the hottest few call edges) and samples with equal stacks are summed; samples without
//!   locations are dropped, as Pyroscope drops them;
//! * with `aggregate_callees` the first line of each sample's leaf location is set to 0 before
//!   merging, so every sample ending in the same leaf frame collapses: Go keys edges by the
//!   caller's call-site line, never by the line inside the callee;
//! * sample labels are dropped and addresses of symbolized locations cleared, because
//!   Pyroscope's copy of a profile has neither (its ingestion clears addresses of symbolized
//!   mappings), and both would keep apart samples the transform is meant to merge;
//! * for `cpu/nanoseconds` the period is 1e9 with period type `cpu/nanoseconds`, as Pyroscope
//!   sets for `process_cpu`; a `samples/count` profile keeps its own period, which says how
//!   much CPU time one sample stands for;
//! * `Function.start_line`, line numbers and inlined `Line`s are kept: Go computes an edge's
//!   call-site offset as `line - start_line` and fails on profiles without start lines.
//!
//! The leaf-line zeroing follows Pyroscope after grafana/pyroscope#5637: the zeroed copy is a
//! new location used only at the leaf, so a location that is also some other sample's caller
//! keeps its call-site line there. (Before that change the shared location was edited in
//! place, which moved those call edges to the caller's first line.)

use std::collections::HashMap;

use super::error::{PprofError, Result};
use super::merge::merge;
use super::proto::{Location, Profile, Sample, ValueType};
use super::validate::validate;

/// How the profile is reduced; the defaults are profilecli's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgoOptions {
    /// Leaf-most frames kept per stack; 0 keeps whole stacks.
    pub keep_locations: usize,
    /// Ignore the line inside the leaf function, merging samples per leaf frame.
    pub aggregate_callees: bool,
}

impl Default for PgoOptions {
    fn default() -> Self {
        PgoOptions {
            keep_locations: 5,
            aggregate_callees: true,
        }
    }
}

/// What [`to_pgo`] produced.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgoSummary {
    /// Samples in the output.
    pub samples: usize,
    /// Functions in the output.
    pub functions: usize,
    /// Sum of the output's values.
    pub total: i64,
    /// Sum of the kept sample type over the input; differs from `total` only by samples that
    /// had no locations.
    pub input_total: i64,
    /// `(type, unit)` of the kept sample type.
    pub sample_type: (String, String),
}

const CPU: (&str, &str) = ("cpu", "nanoseconds");
const SAMPLES: (&str, &str) = ("samples", "count");
/// Pyroscope's period for `process_cpu` PGO exports.
const CPU_PERIOD: i64 = 1_000_000_000;

fn string(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

fn type_of<'a>(p: &'a Profile, vt: &ValueType) -> (&'a str, &'a str) {
    (string(p, vt.r#type), string(p, vt.unit))
}

/// Index of the sample type Go's PGO reader should use.
fn pick_sample_type(p: &Profile) -> Result<usize> {
    let find = |want: (&str, &str)| p.sample_type.iter().position(|t| type_of(p, t) == want);
    if let Some(i) = find(CPU).or_else(|| find(SAMPLES)) {
        return Ok(i);
    }
    let have: Vec<String> = p
        .sample_type
        .iter()
        .map(|t| {
            let (ty, unit) = type_of(p, t);
            format!("{ty}/{unit}")
        })
        .collect();
    Err(PprofError::Incompatible(format!(
        "Go PGO needs a CPU profile (sample type cpu/nanoseconds or samples/count), this one has [{}]",
        have.join(" ")
    )))
}

/// Converts `merged`, an already merged CPU profile, into a Go PGO profile (see the module
/// docs). The result is valid and compact; gzip it with [`super::encode`] to write a `.pgo`
/// file.
pub fn to_pgo(merged: &Profile, opts: &PgoOptions) -> Result<(Profile, PgoSummary)> {
    validate(merged)?;
    let index = pick_sample_type(merged)?;
    let kept = merged.sample_type[index];
    let kept_name = type_of(merged, &kept);
    let sample_type = (kept_name.0.to_owned(), kept_name.1.to_owned());

    let mut input_total = 0i64;
    // Truncated stack -> index in `samples`, so equal stacks are summed in first-seen order
    // (a stable output for equal inputs).
    let mut stacks: HashMap<Vec<u64>, usize> = HashMap::new();
    let mut samples: Vec<Sample> = Vec::new();
    for s in &merged.sample {
        let v = s.value.get(index).copied().unwrap_or(0);
        input_total = input_total.saturating_add(v);
        if s.location_id.is_empty() {
            continue;
        }
        let n = match opts.keep_locations {
            0 => s.location_id.len(),
            keep => keep.min(s.location_id.len()),
        };
        let stack = &s.location_id[..n];
        match stacks.get(stack) {
            Some(&i) => {
                if let Some(acc) = samples.get_mut(i).and_then(|x| x.value.first_mut()) {
                    *acc = acc.saturating_add(v);
                }
            }
            None => {
                stacks.insert(stack.to_vec(), samples.len());
                samples.push(Sample {
                    location_id: stack.to_vec(),
                    value: vec![v],
                    label: Vec::new(),
                });
            }
        }
    }

    let mut locations: Vec<Location> = merged
        .location
        .iter()
        .map(|l| {
            let mut l = l.clone();
            if !l.line.is_empty() {
                l.address = 0;
            }
            l
        })
        .collect();
    if opts.aggregate_callees {
        aggregate_callees(&mut locations, &mut samples);
    }

    let (period_type, period) = if kept_name == CPU {
        (Some(kept), CPU_PERIOD)
    } else {
        (merged.period_type, merged.period)
    };
    let reduced = Profile {
        sample_type: vec![kept],
        sample: samples,
        mapping: merged.mapping.clone(),
        location: locations,
        function: merged.function.clone(),
        string_table: merged.string_table.clone(),
        drop_frames: 0,
        keep_frames: 0,
        time_nanos: merged.time_nanos,
        duration_nanos: merged.duration_nanos,
        period_type,
        period,
        comment: merged.comment.clone(),
        default_sample_type: kept.r#type,
        doc_url: merged.doc_url,
    };
    // Merging the profile with itself does the rest: equal locations (the zeroed leaves) and
    // then equal stacks are combined, zero samples dropped, and only what the remaining
    // samples reference is kept, with ids renumbered and the string table rebuilt.
    let out = merge(std::slice::from_ref(&reduced))?;
    validate(&out)?;
    let total = out
        .sample
        .iter()
        .filter_map(|s| s.value.first())
        .fold(0i64, |acc, v| acc.saturating_add(*v));
    let summary = PgoSummary {
        samples: out.sample.len(),
        functions: out.function.len(),
        total,
        input_total,
        sample_type,
    };
    Ok((out, summary))
}

/// Points every sample's leaf at a copy of its location whose first line is 0 (column too:
/// Go ignores columns, and a leftover one would keep leaves apart).
fn aggregate_callees(locations: &mut Vec<Location>, samples: &mut [Sample]) {
    let by_id: HashMap<u64, usize> = locations
        .iter()
        .enumerate()
        .map(|(i, l)| (l.id, i))
        .collect();
    let mut next_id = locations.iter().map(|l| l.id).max().unwrap_or(0);
    let mut variants: HashMap<u64, u64> = HashMap::new();
    for s in samples {
        let Some(leaf) = s.location_id.first_mut() else {
            continue;
        };
        if let Some(&variant) = variants.get(leaf) {
            *leaf = variant;
            continue;
        }
        let Some(original) = by_id.get(leaf).and_then(|&i| locations.get(i)) else {
            continue;
        };
        if original.line.is_empty() {
            // Unsymbolized: there is no line to forget.
            variants.insert(*leaf, *leaf);
            continue;
        }
        let mut variant = original.clone();
        next_id += 1;
        variant.id = next_id;
        if let Some(first) = variant.line.first_mut() {
            first.line = 0;
            first.column = 0;
        }
        variants.insert(*leaf, next_id);
        *leaf = next_id;
        locations.push(variant);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::pprof::proto::{Function, Mapping};
    use crate::pprof::testutil::{B, start_line};

    /// Every sample carries this label, so that tests see the output drop labels.
    const THREAD: &[(&str, &str)] = &[("thread", "worker")];

    /// A profile of `types` with `period` (type, unit, period) as Go writes one, with a
    /// duration; ids far from 1..n, so renumbering is exercised. Samples are added with
    /// [`B::frames`], which takes the lines from the test, and functions have
    /// [`start_line`]s.
    fn new(types: &[(&str, &str)], period: (&str, &str, i64)) -> B {
        B::new(types)
            .ids_from(100)
            .period_type(period.0, period.1, period.2)
            .time(1_700_000_000_000_000_000)
            .duration(10_000_000_000)
    }

    /// A Go CPU profile's types and period.
    fn cpu() -> B {
        new(
            &[("samples", "count"), ("cpu", "nanoseconds")],
            ("cpu", "nanoseconds", 10_000_000),
        )
    }

    fn name(p: &Profile, i: i64) -> String {
        string(p, i).to_owned()
    }

    /// Every sample as its frames (`func:line`, inlined lines joined by `+`), leaf first.
    fn stacks(p: &Profile) -> BTreeMap<Vec<String>, i64> {
        let functions: HashMap<u64, &Function> = p.function.iter().map(|f| (f.id, f)).collect();
        let locations: HashMap<u64, &Location> = p.location.iter().map(|l| (l.id, l)).collect();
        let mut out = BTreeMap::new();
        for s in &p.sample {
            let frames = s
                .location_id
                .iter()
                .map(|id| {
                    locations[id]
                        .line
                        .iter()
                        .map(|l| format!("{}:{}", name(p, functions[&l.function_id].name), l.line))
                        .collect::<Vec<_>>()
                        .join("+")
                })
                .collect();
            *out.entry(frames).or_insert(0) += s.value[0];
        }
        out
    }

    /// Flat value per function: what `go tool pprof -top` lists, the leaf location's first
    /// (innermost) line's function.
    fn flat(p: &Profile, index: usize) -> BTreeMap<String, i64> {
        let functions: HashMap<u64, &Function> = p.function.iter().map(|f| (f.id, f)).collect();
        let locations: HashMap<u64, &Location> = p.location.iter().map(|l| (l.id, l)).collect();
        let mut out = BTreeMap::new();
        for s in &p.sample {
            let Some(leaf) = s.location_id.first() else {
                continue;
            };
            let f = functions[&locations[leaf].line[0].function_id];
            *out.entry(name(p, f.name)).or_insert(0) += s.value[index];
        }
        out.retain(|_, v| *v != 0);
        out
    }

    /// Expected stacks and their values.
    type Stacks = Vec<(Vec<String>, i64)>;

    fn stack(frames: &[&str]) -> Vec<String> {
        frames.iter().map(|s| s.to_string()).collect()
    }

    fn no_aggregation(keep_locations: usize) -> PgoOptions {
        PgoOptions {
            keep_locations,
            aggregate_callees: false,
        }
    }

    #[test]
    fn defaults_are_profileclis() {
        assert_eq!(
            PgoOptions::default(),
            PgoOptions {
                keep_locations: 5,
                aggregate_callees: true
            }
        );
    }

    #[test]
    fn stacks_are_cut_to_the_leaf_most_frames() {
        let p = cpu()
            .frames(
                &[
                    &[("a", 1)],
                    &[("b", 2)],
                    &[("c", 3)],
                    &[("d", 4)],
                    &[("main", 5)],
                ],
                &[1, 10],
                THREAD,
            )
            // Same three leaf frames, another root: merges once cut to 3.
            .frames(
                &[&[("a", 1)], &[("b", 2)], &[("c", 3)], &[("other", 9)]],
                &[2, 20],
                THREAD,
            )
            .frames(&[&[("x", 7)], &[("main", 5)]], &[4, 40], THREAD)
            .build();
        let cases: Vec<(usize, Stacks)> = vec![
            (
                3,
                vec![
                    (stack(&["a:1", "b:2", "c:3"]), 30),
                    (stack(&["x:7", "main:5"]), 40),
                ],
            ),
            (1, vec![(stack(&["a:1"]), 30), (stack(&["x:7"]), 40)]),
            (
                0,
                vec![
                    (stack(&["a:1", "b:2", "c:3", "d:4", "main:5"]), 10),
                    (stack(&["a:1", "b:2", "c:3", "other:9"]), 20),
                    (stack(&["x:7", "main:5"]), 40),
                ],
            ),
            (
                100,
                vec![
                    (stack(&["a:1", "b:2", "c:3", "d:4", "main:5"]), 10),
                    (stack(&["a:1", "b:2", "c:3", "other:9"]), 20),
                    (stack(&["x:7", "main:5"]), 40),
                ],
            ),
        ];
        for (keep, want) in cases {
            let (out, summary) = to_pgo(&p, &no_aggregation(keep)).expect("pgo");
            let want: BTreeMap<Vec<String>, i64> = want.into_iter().collect();
            assert_eq!(stacks(&out), want, "keep {keep}");
            assert_eq!(summary.samples, want.len(), "keep {keep}");
            assert_eq!((summary.total, summary.input_total), (70, 70));
            // Frames cut away take their functions with them.
            let names: Vec<String> = out.function.iter().map(|f| name(&out, f.name)).collect();
            assert_eq!(summary.functions, names.len());
            if keep == 1 {
                assert_eq!(names.len(), 2, "{names:?}");
            }
        }
    }

    #[test]
    fn callee_aggregation_merges_lines_inside_the_leaf_only() {
        // `leaf` sampled at two lines under the same caller; `mid` is a leaf in one sample and
        // the caller of `leaf` in the others.
        let p = cpu()
            .frames(
                &[&[("leaf", 11)], &[("mid", 20)], &[("main", 30)]],
                &[1, 100],
                THREAD,
            )
            .frames(
                &[&[("leaf", 12)], &[("mid", 20)], &[("main", 30)]],
                &[2, 200],
                THREAD,
            )
            .frames(&[&[("mid", 20)], &[("main", 30)]], &[4, 400], THREAD)
            .frames(
                &[&[("leaf", 11)], &[("mid", 21)], &[("main", 30)]],
                &[8, 800],
                THREAD,
            )
            .build();
        let cases: Vec<(bool, Stacks)> = vec![
            (
                true,
                vec![
                    (stack(&["leaf:0", "mid:20", "main:30"]), 300),
                    (stack(&["leaf:0", "mid:21", "main:30"]), 800),
                    (stack(&["mid:0", "main:30"]), 400),
                ],
            ),
            (
                false,
                vec![
                    (stack(&["leaf:11", "mid:20", "main:30"]), 100),
                    (stack(&["leaf:12", "mid:20", "main:30"]), 200),
                    (stack(&["leaf:11", "mid:21", "main:30"]), 800),
                    (stack(&["mid:20", "main:30"]), 400),
                ],
            ),
        ];
        for (aggregate, want) in cases {
            let opts = PgoOptions {
                keep_locations: 5,
                aggregate_callees: aggregate,
            };
            let (out, summary) = to_pgo(&p, &opts).expect("pgo");
            let want: BTreeMap<Vec<String>, i64> = want.into_iter().collect();
            assert_eq!(stacks(&out), want, "aggregate {aggregate}");
            assert_eq!(summary.total, 1500);
            // Zeroed leaves replace, never duplicate, their location once merged.
            let mut keys: Vec<_> = out
                .location
                .iter()
                .map(|l| {
                    l.line
                        .iter()
                        .map(|x| (x.function_id, x.line))
                        .collect::<Vec<_>>()
                })
                .collect();
            let n = keys.len();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), n);
        }
    }

    #[test]
    fn inlined_frames_and_start_lines_survive() {
        // `inl` inlined into `outer` at line 40; the leaf location carries both lines.
        let p = cpu()
            .frames(
                &[&[("inl", 7), ("outer", 40)], &[("main", 3)]],
                &[1, 5],
                THREAD,
            )
            .frames(
                &[&[("inl", 8), ("outer", 40)], &[("main", 3)]],
                &[1, 6],
                THREAD,
            )
            .build();
        for aggregate in [false, true] {
            let opts = PgoOptions {
                keep_locations: 5,
                aggregate_callees: aggregate,
            };
            let (out, _) = to_pgo(&p, &opts).expect("pgo");
            let want: BTreeMap<Vec<String>, i64> = if aggregate {
                [(stack(&["inl:0+outer:40", "main:3"]), 11)].into()
            } else {
                [
                    (stack(&["inl:7+outer:40", "main:3"]), 5),
                    (stack(&["inl:8+outer:40", "main:3"]), 6),
                ]
                .into()
            };
            assert_eq!(stacks(&out), want);
            for f in &out.function {
                assert_eq!(f.start_line, start_line(string(&out, f.name)));
            }
            assert_eq!(out.function.len(), 3);
            // Columns of kept lines stay; only the zeroed leaf line loses its column.
            let outer_columns: Vec<i64> = out
                .location
                .iter()
                .flat_map(|l| l.line.iter().skip(1))
                .map(|l| l.column)
                .collect();
            assert!(outer_columns.iter().all(|&c| c == 3), "{outer_columns:?}");
        }
    }

    #[test]
    fn sample_type_choice_and_rejection() {
        /// Kept sample type, period type, period.
        type Want = (
            (&'static str, &'static str),
            (&'static str, &'static str),
            i64,
        );
        struct Case {
            name: &'static str,
            types: &'static [(&'static str, &'static str)],
            period: (&'static str, &'static str, i64),
            want: Option<Want>,
        }
        let cases = [
            Case {
                name: "go cpu profile",
                types: &[("samples", "count"), ("cpu", "nanoseconds")],
                period: ("cpu", "nanoseconds", 10_000_000),
                want: Some((("cpu", "nanoseconds"), ("cpu", "nanoseconds"), CPU_PERIOD)),
            },
            Case {
                name: "cpu first",
                types: &[("cpu", "nanoseconds"), ("samples", "count")],
                period: ("cpu", "nanoseconds", 10_000_000),
                want: Some((("cpu", "nanoseconds"), ("cpu", "nanoseconds"), CPU_PERIOD)),
            },
            Case {
                name: "samples only",
                types: &[("samples", "count")],
                period: ("cpu", "nanoseconds", 10_000_000),
                want: Some((("samples", "count"), ("cpu", "nanoseconds"), 10_000_000)),
            },
            Case {
                name: "heap",
                types: &[
                    ("alloc_objects", "count"),
                    ("alloc_space", "bytes"),
                    ("inuse_objects", "count"),
                    ("inuse_space", "bytes"),
                ],
                period: ("space", "bytes", 524288),
                want: None,
            },
            Case {
                name: "mutex",
                types: &[("contentions", "count"), ("delay", "nanoseconds")],
                period: ("contentions", "count", 1),
                want: None,
            },
            Case {
                name: "cpu in milliseconds is not cpu/nanoseconds",
                types: &[("cpu", "milliseconds")],
                period: ("cpu", "milliseconds", 10),
                want: None,
            },
        ];
        for c in cases {
            let values: Vec<i64> = (1..=c.types.len() as i64).collect();
            let p = new(c.types, c.period)
                .frames(&[&[("f", 1)], &[("main", 2)]], &values, THREAD)
                .build();
            let result = to_pgo(&p, &PgoOptions::default());
            let Some((kept, period_type, period)) = c.want else {
                let err = result.expect_err(c.name).to_string();
                assert!(
                    err.contains("Go PGO needs a CPU profile"),
                    "{}: {err}",
                    c.name
                );
                continue;
            };
            let (out, summary) = result.expect(c.name);
            assert_eq!(out.sample_type.len(), 1, "{}", c.name);
            assert_eq!(type_of(&out, &out.sample_type[0]), kept, "{}", c.name);
            assert_eq!(
                summary.sample_type,
                (kept.0.to_string(), kept.1.to_string())
            );
            let pt = out.period_type.expect("period type");
            assert_eq!(type_of(&out, &pt), period_type, "{}", c.name);
            assert_eq!(out.period, period, "{}", c.name);
            assert_eq!(string(&out, out.default_sample_type), kept.0, "{}", c.name);
            let index = c
                .types
                .iter()
                .position(|t| *t == kept)
                .expect("kept type is an input type");
            assert_eq!(summary.total, values[index], "{}", c.name);
        }
    }

    #[test]
    fn flat_totals_per_function_are_kept() {
        let p = cpu()
            .frames(
                &[
                    &[("spinA", 10)],
                    &[("loopA", 20)],
                    &[("run", 30)],
                    &[("worker", 40)],
                    &[("start", 50)],
                    &[("goexit", 60)],
                    &[("main", 70)],
                ],
                &[3, 30],
                THREAD,
            )
            .frames(&[&[("spinA", 11)], &[("main", 71)]], &[1, 10], THREAD)
            .frames(
                &[
                    &[("inl", 5), ("spinB", 12)],
                    &[("loopB", 21)],
                    &[("main", 72)],
                ],
                &[2, 20],
                THREAD,
            )
            .frames(
                &[&[("spinB", 13)], &[("spinA", 14)], &[("main", 73)]],
                &[7, 70],
                THREAD,
            )
            .frames(&[&[("main", 75)]], &[1, 9], THREAD)
            .build();
        let want = flat(&p, 1);
        let inputs_total: i64 = want.values().sum();
        for keep in [0, 1, 2, 5] {
            for aggregate in [false, true] {
                let opts = PgoOptions {
                    keep_locations: keep,
                    aggregate_callees: aggregate,
                };
                let (out, summary) = to_pgo(&p, &opts).expect("pgo");
                assert_eq!(flat(&out, 0), want, "keep {keep} aggregate {aggregate}");
                assert_eq!(summary.total, inputs_total);
                assert_eq!(summary.input_total, inputs_total);
            }
        }
    }

    #[test]
    fn output_is_valid_compact_and_label_free() {
        let mut p = cpu()
            .frames(&[&[("a", 1)], &[("b", 2)], &[("c", 3)]], &[1, 10], THREAD)
            .frames(&[&[("d", 1)], &[("e", 2)]], &[0, 0], THREAD)
            .build();
        // A sample without locations counts in the input total only.
        p.sample.push(Sample {
            location_id: vec![],
            value: vec![1, 5],
            label: vec![],
        });
        // An unused function, location, mapping and string.
        let unused = p.string_table.len() as i64;
        p.string_table.push("unused".to_owned());
        p.function.push(Function {
            id: 9999,
            name: unused,
            ..Function::default()
        });
        p.location.push(Location {
            id: 9999,
            mapping_id: 2,
            ..Location::default()
        });
        p.mapping.push(Mapping {
            id: 2,
            filename: unused,
            ..Mapping::default()
        });
        let (out, summary) = to_pgo(&p, &PgoOptions::default()).expect("pgo");
        validate(&out).expect("valid");
        let bytes = crate::pprof::encode(&out, 6);
        let back = crate::pprof::decode(&bytes, &Default::default()).expect("decodes");
        assert_eq!(back, out);
        assert_eq!((summary.total, summary.input_total), (10, 15));
        assert_eq!(summary.samples, 1);
        assert_eq!(summary.functions, 3);
        assert_eq!(out.location.len(), 3);
        assert_eq!(out.mapping.len(), 1);
        assert!(out.sample.iter().all(|s| s.label.is_empty()));
        for gone in ["unused", "d", "thread", "worker", "samples"] {
            assert!(!out.string_table.iter().any(|s| s == gone), "{gone}");
        }
        assert!(out.location.iter().all(|l| l.address == 0));
        assert_eq!(out.time_nanos, p.time_nanos);
        assert_eq!(out.duration_nanos, p.duration_nanos);
    }

    #[test]
    fn empty_and_unsymbolized_profiles() {
        let empty = cpu().build();
        let (out, summary) = to_pgo(&empty, &PgoOptions::default()).expect("empty");
        assert!(out.sample.is_empty());
        assert_eq!(summary.total, 0);
        assert_eq!(summary.sample_type, ("cpu".into(), "nanoseconds".into()));

        // Locations without lines keep their addresses and are never zeroed.
        let mut p = cpu().build();
        for (id, address) in [(1u64, 0x40_1000u64), (2, 0x40_2000)] {
            p.location.push(Location {
                id,
                mapping_id: 1,
                address,
                ..Location::default()
            });
        }
        p.sample.push(Sample {
            location_id: vec![1, 2],
            value: vec![1, 10],
            label: vec![],
        });
        let (out, _) = to_pgo(&p, &PgoOptions::default()).expect("unsymbolized");
        let mut addresses: Vec<u64> = out.location.iter().map(|l| l.address).collect();
        addresses.sort();
        assert_eq!(addresses, [0x40_1000, 0x40_2000]);

        let mut invalid = cpu().build();
        invalid.string_table.clear();
        assert!(to_pgo(&invalid, &PgoOptions::default()).is_err());
    }
}
