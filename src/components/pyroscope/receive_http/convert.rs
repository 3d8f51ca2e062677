//! A pprof uploaded to `/ingest` (raw or as a multipart form) turned into the profiles a
//! Pyroscope server would store, following `pkg/og/convert/pprof/profile.go` and the
//! distributor's sample-label split (`pkg/model/pprofsplit`):
//!
//! 1. the profile is decompressed (within the size limit) and decoded;
//! 2. Pyroscope's fixes: `time_nanos` of 0 or in 1970 becomes `from` (old pyspy, rbspy and
//!    pyroscope-rs sent microseconds or nothing); for `pyspy` (files with relative paths),
//!    `rbspy` and `scripting` spies each function is renamed `"<file> <function>"`; for
//!    `dotnetspy`, functions that all have id 0 take their location's id, and `-` in sample
//!    type names becomes `_`;
//! 3. series labels: `__name__` from the sample types (below), `__delta__="false"` (the
//!    server never computes deltas for `/ingest`), `pyroscope_spy`, `service_name` = the app
//!    name unless the `name` gives one, then the `name`'s labels except private `__*` ones
//!    (`__session_id__` is kept);
//! 4. string sample labels become series labels, as the distributor does: samples are grouped
//!    by their label sets (`trace_id` and `span_id`, and `profile_id` renamed `span_id`, stay
//!    on the samples), each group becomes its own profile with the group's labels added to the
//!    series labels (series labels win on conflicts), and the promoted labels (and numeric
//!    labels) are removed from the samples. SDKs put their tags there: pyroscope-rs based
//!    SDKs send `tags` as sample labels, not in the `name`.
//!
//! A profile that needed none of this is forwarded with its bytes as received; otherwise it
//! is re-encoded (gzip level 1).
//!
//! `__name__` (Pyroscope's `metricName`): `wall` if any sample type is `wall`; otherwise the
//! first sample type whose display name contains `cpu` gives `process_cpu`, `alloc_`/`inuse_`
//! or `space`/`objects` gives `memory`, `mutex_` `mutex`, `block_` `block`, `goroutines`
//! `goroutines`. Display names come from the form's `sample_type_config` or by default
//! `samples`->`cpu`, `goroutine`->`goroutines`, `contentions`->`mutex_count`,
//! `delay`->`mutex_duration` (so a Go block profile uploaded this way is named `mutex`, as on
//! the server).

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use prost::Message as _;

use super::labelset::LabelSet;
use crate::pprof::proto::{Function, Label as PprofLabel, Profile as Pprof};
use crate::pprof::{self, DELTA_LEVEL, Limits, PprofError};
use crate::profiles::Label;

/// Sample type name -> display name.
pub type DisplayNames = HashMap<String, String>;

/// Pyroscope's `DefaultSampleTypeMapping`, as far as display names go.
pub fn default_display_names() -> DisplayNames {
    [
        ("samples", "cpu"),
        ("goroutine", "goroutines"),
        ("contentions", "mutex_count"),
        ("delay", "mutex_duration"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect()
}

/// What the request says about the profile besides its bytes.
#[derive(Debug, Clone)]
pub struct PprofMeta<'a> {
    pub labelset: &'a LabelSet,
    /// `spyName` (`unknown` when absent).
    pub spy: &'a str,
    /// `from`, in nanoseconds since the epoch.
    pub start_nanos: i64,
    /// The form's `sample_type_config` display names, when it had one (it replaces the
    /// defaults).
    pub display_names: Option<&'a DisplayNames>,
    /// Whether the config named the `inuse-space` type (with spy `unknown`, a .NET profile).
    pub config_has_inuse_dash_space: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("invalid pprof: {0}")]
    Pprof(#[from] PprofError),
    #[error("invalid pprof: the profile has no sample types")]
    NoSampleTypes,
}

/// One profile to forward: series labels (sorted by name) and pprof bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Converted {
    pub labels: Vec<Label>,
    pub raw: Bytes,
}

const TRACE_ID: &str = "trace_id";
const SPAN_ID: &str = "span_id";
const PROFILE_ID: &str = "profile_id";
/// 1971-01-01T00:00:00Z: Go's `Year() == 1970` for non-negative times (UTC).
const END_OF_1970_NANOS: i64 = 365 * 86_400 * 1_000_000_000;

fn string(p: &Pprof, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

fn is_dotnet(meta: &PprofMeta<'_>) -> bool {
    meta.spy == "dotnetspy" || (meta.spy == "unknown" && meta.config_has_inuse_dash_space)
}

fn is_scripting(spy: &str) -> bool {
    matches!(spy, "pyspy" | "rbspy" | "scripting")
}

/// Converts one uploaded pprof (`raw`, gzipped or not; empty means "nothing to store").
pub fn convert(
    raw: &Bytes,
    meta: &PprofMeta<'_>,
    limits: &Limits,
) -> Result<Vec<Converted>, ConvertError> {
    if raw.is_empty() {
        return Ok(Vec::new());
    }
    let dotnet = is_dotnet(meta);
    let mut p = if dotnet {
        // Broken .NET profiles reference functions by ids that only the fix below makes
        // valid: decode first, validate after fixing.
        let plain = pprof::gunzip(raw, limits)?;
        Pprof::decode(plain.as_slice()).map_err(|e| PprofError::Protobuf(e.to_string()))?
    } else {
        pprof::decode(raw, limits)?
    };
    let mut changed = false;
    if (0..END_OF_1970_NANOS).contains(&p.time_nanos) {
        p.time_nanos = meta.start_nanos;
        changed = true;
    }
    if is_scripting(meta.spy) && rename_scripting_functions(&mut p, meta.spy == "pyspy") {
        changed = true;
        // The renaming adds functions and rewrites references: what is stored must still be
        // a valid profile, so check it again rather than trust the rewrite.
        pprof::validate(&p)?;
    }
    if dotnet {
        changed |= fix_dotnet(&mut p);
        pprof::validate(&p)?;
    }
    let metric = metric_name(&p, meta.display_names).ok_or(ConvertError::NoSampleTypes)?;

    let mut series: BTreeMap<String, String> = BTreeMap::new();
    series.insert("__name__".into(), metric);
    series.insert("__delta__".into(), "false".into());
    series.insert("pyroscope_spy".into(), meta.spy.to_string());
    if meta.labelset.get("service_name").is_none() {
        series.insert("service_name".into(), meta.labelset.app().to_string());
    }
    for (k, v) in meta.labelset.ingestible() {
        series.insert(k.to_string(), v.to_string());
    }
    // An empty value is an absent label.
    series.retain(|_, v| !v.is_empty());

    split(p, series, changed, raw)
}

/// Pyroscope's `metricName`; `None` for a profile without sample types.
fn metric_name(p: &Pprof, display_names: Option<&DisplayNames>) -> Option<String> {
    if p.sample_type.is_empty() {
        return None;
    }
    if p.sample_type
        .iter()
        .any(|st| string(p, st.r#type) == "wall")
    {
        return Some("wall".into());
    }
    let defaults;
    let names = match display_names {
        Some(n) => n,
        None => {
            defaults = default_display_names();
            &defaults
        }
    };
    let mut last = "";
    for st in &p.sample_type {
        let raw = string(p, st.r#type);
        let name = names
            .get(raw)
            .filter(|d| !d.is_empty())
            .map_or(raw, String::as_str);
        last = name;
        let metric = if name.contains("cpu") {
            "process_cpu"
        } else if name.contains("alloc_")
            || name.contains("inuse_")
            || name == "space"
            || name == "objects"
        {
            "memory"
        } else if name.contains("mutex_") {
            "mutex"
        } else if name.contains("block_") {
            "block"
        } else if name.contains("goroutines") {
            "goroutines"
        } else {
            continue;
        };
        return Some(metric.into());
    }
    Some(last.to_string())
}

/// `FixFunctionNamesForScriptingLanguages`: every line points at a function named
/// `"<file> <name>"` (pyspy frames whose file is an absolute path are left alone). Returns
/// whether anything changed.
fn rename_scripting_functions(p: &mut Pprof, pyspy: bool) -> bool {
    let index: HashMap<u64, usize> = p
        .function
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    // New functions need ids no function uses. Counting up from the largest id overflowed
    // when a profile already used `u64::MAX` (and wrapped to the invalid id 0 in release), so
    // take the lowest free ids instead: `next` only grows, so the search is linear overall,
    // and there are fewer ids in use than `u64::MAX`.
    let used: std::collections::HashSet<u64> = index.keys().copied().collect();
    let mut next_id = 1u64;
    let mut renamed: HashMap<String, u64> = HashMap::new();
    let mut new_strings: HashMap<String, i64> = HashMap::new();
    let mut new_functions: Vec<Function> = Vec::new();
    let mut changed = false;
    for li in 0..p.location.len() {
        for ni in 0..p.location[li].line.len() {
            let fid = p.location[li].line[ni].function_id;
            let Some(&fi) = index.get(&fid) else { continue };
            let f = &p.function[fi];
            let filename = string(p, f.filename);
            if pyspy && filename.starts_with('/') {
                continue;
            }
            let name = format!("{filename} {}", string(p, f.name));
            let id = match renamed.get(&name) {
                Some(&id) => id,
                None => {
                    while used.contains(&next_id) {
                        next_id += 1;
                    }
                    let id = next_id;
                    next_id += 1;
                    let sid = match new_strings.get(&name) {
                        Some(&s) => s,
                        None => {
                            let s = p.string_table.len() as i64;
                            p.string_table.push(name.clone());
                            new_strings.insert(name.clone(), s);
                            s
                        }
                    };
                    let f = &p.function[fi];
                    new_functions.push(Function {
                        id,
                        name: sid,
                        system_name: f.system_name,
                        filename: f.filename,
                        start_line: f.start_line,
                    });
                    renamed.insert(name, id);
                    id
                }
            };
            p.location[li].line[ni].function_id = id;
            changed = true;
        }
    }
    p.function.extend(new_functions);
    changed
}

/// `FixFunctionIDForBrokenDotnet` and `fixSampleTypes`. Returns whether anything changed.
fn fix_dotnet(p: &mut Pprof) -> bool {
    let mut changed = false;
    if p.function.iter().all(|f| f.id == 0) && p.function.len() == p.location.len() {
        for (f, l) in p.function.iter_mut().zip(&p.location) {
            changed |= f.id != l.id;
            f.id = l.id;
        }
    }
    for i in 0..p.sample_type.len() {
        if let Some(s) = usize::try_from(p.sample_type[i].r#type)
            .ok()
            .and_then(|i| p.string_table.get_mut(i))
            && s.contains('-')
        {
            *s = s.replace('-', "_");
            changed = true;
        }
    }
    changed
}

/// The string labels of a sample that become series labels, sorted.
fn promoted(p: &Pprof, labels: &[PprofLabel]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = labels
        .iter()
        .filter(|l| l.str != 0)
        .map(|l| (string(p, l.key), string(p, l.str)))
        .filter(|(k, _)| !matches!(*k, TRACE_ID | SPAN_ID | PROFILE_ID))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    out.sort();
    out.dedup_by(|a, b| a.0 == b.0);
    out
}

fn finish(labels: BTreeMap<String, String>, raw: Bytes) -> Converted {
    Converted {
        labels: labels.into_iter().collect(),
        raw,
    }
}

/// Splits `p` by its samples' string labels (see the module docs).
fn split(
    mut p: Pprof,
    series: BTreeMap<String, String>,
    changed: bool,
    original: &Bytes,
) -> Result<Vec<Converted>, ConvertError> {
    // Group samples by promoted labels, in order of first appearance.
    // (promoted labels, sample indexes)
    type Group = (Vec<(String, String)>, Vec<usize>);
    let mut groups: Vec<Group> = Vec::new();
    let mut by_key: HashMap<Vec<(String, String)>, usize> = HashMap::new();
    for (i, s) in p.sample.iter().enumerate() {
        let key = promoted(&p, &s.label);
        let g = *by_key.entry(key.clone()).or_insert_with(|| {
            groups.push((key, Vec::new()));
            groups.len() - 1
        });
        groups[g].1.push(i);
    }
    if groups.len() <= 1 && groups.first().is_none_or(|g| g.0.is_empty()) {
        let raw = if changed {
            Bytes::from(pprof::encode(&p, DELTA_LEVEL))
        } else {
            original.clone()
        };
        return Ok(vec![finish(series, raw)]);
    }

    // Keep only trace and span ids on the samples (profile_id is renamed span_id).
    let span_id = match p.string_table.iter().position(|s| s == SPAN_ID) {
        Some(i) => i as i64,
        None => {
            p.string_table.push(SPAN_ID.to_string());
            (p.string_table.len() - 1) as i64
        }
    };
    let samples = std::mem::take(&mut p.sample);
    let samples: Vec<_> = samples
        .into_iter()
        .map(|mut s| {
            s.label.retain_mut(|l| {
                if l.str == 0 {
                    return false;
                }
                match string(&p, l.key) {
                    TRACE_ID | SPAN_ID => true,
                    PROFILE_ID => {
                        l.key = span_id;
                        true
                    }
                    _ => false,
                }
            });
            s
        })
        .collect();

    // Series labels per group (series labels win); groups ending with equal labels merge.
    let mut merged: Vec<(BTreeMap<String, String>, Vec<usize>)> = Vec::new();
    for (key, members) in groups {
        let mut labels = series.clone();
        for (k, v) in key {
            if !v.is_empty() {
                labels.entry(k).or_insert(v);
            }
        }
        match merged.iter_mut().find(|(l, _)| *l == labels) {
            Some((_, m)) => m.extend(members),
            None => merged.push((labels, members)),
        }
    }
    let mut slots: Vec<Option<_>> = samples.into_iter().map(Some).collect();
    let many = merged.len() > 1;
    let mut out = Vec::with_capacity(merged.len());
    for (labels, members) in merged {
        let mut part = Pprof {
            sample: members.iter().filter_map(|&i| slots[i].take()).collect(),
            ..p.clone()
        };
        if many {
            // Drop what only other groups' samples referenced.
            part = pprof::merge::compact(&part)?;
        }
        out.push(finish(
            labels,
            Bytes::from(pprof::encode(&part, DELTA_LEVEL)),
        ));
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::components::pyroscope::receive_http::labelset;
    use crate::pprof::proto::{Line, Location, Sample, ValueType};

    /// `(function index, value, sample labels)`.
    pub(crate) type SampleSpec<'a> = (usize, i64, &'a [(&'a str, &'a str)]);

    /// A profile with sample types `types`, one function per name in `funcs` (files
    /// `file.py`), and samples `(function index, value, [(label, value)])`.
    pub(crate) fn profile(
        types: &[(&str, &str)],
        samples: &[SampleSpec<'_>],
        time_nanos: i64,
    ) -> Pprof {
        let mut strings = vec![String::new()];
        let mut intern = |s: &str| -> i64 {
            if let Some(i) = strings.iter().position(|x| x == s) {
                return i as i64;
            }
            strings.push(s.to_string());
            (strings.len() - 1) as i64
        };
        let sample_type = types
            .iter()
            .map(|(t, u)| ValueType {
                r#type: intern(t),
                unit: intern(u),
            })
            .collect();
        let file = intern("app/file.py");
        let function: Vec<Function> = (1..=3)
            .map(|i| Function {
                id: i,
                name: intern(&format!("f{i}")),
                system_name: 0,
                filename: file,
                start_line: 0,
            })
            .collect();
        let location = (1..=3)
            .map(|i| Location {
                id: i,
                line: vec![Line {
                    function_id: i,
                    line: 10,
                    column: 0,
                }],
                ..Default::default()
            })
            .collect();
        let sample = samples
            .iter()
            .map(|(f, v, labels)| Sample {
                location_id: vec![*f as u64 + 1],
                value: vec![*v; types.len()],
                label: labels
                    .iter()
                    .map(|(k, val)| PprofLabel {
                        key: intern(k),
                        str: intern(val),
                        num: 0,
                        num_unit: 0,
                    })
                    .collect(),
            })
            .collect();
        Pprof {
            sample_type,
            sample,
            location,
            function,
            string_table: strings,
            time_nanos,
            ..Default::default()
        }
    }

    fn meta<'a>(set: &'a LabelSet, spy: &'a str) -> PprofMeta<'a> {
        PprofMeta {
            labelset: set,
            spy,
            start_nanos: 7_000_000_000,
            display_names: None,
            config_has_inuse_dash_space: false,
        }
    }

    fn run(p: &Pprof, name: &str, spy: &str) -> Vec<(Vec<Label>, Pprof)> {
        let set = labelset::parse(name).expect("name");
        let raw = Bytes::from(pprof::encode(p, 1));
        convert(&raw, &meta(&set, spy), &Limits::default())
            .expect("converts")
            .into_iter()
            .map(|c| {
                let decoded = pprof::decode(&c.raw, &Limits::default()).expect("valid output");
                (c.labels, decoded)
            })
            .collect()
    }

    fn l(pairs: &[(&str, &str)]) -> Vec<Label> {
        let mut v: Vec<Label> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        v.sort();
        v
    }

    #[test]
    fn metric_names_follow_pyroscope() {
        let custom: DisplayNames = [("alloc_space".to_string(), "x".to_string())].into();
        type Case<'a> = (&'a [(&'a str, &'a str)], Option<&'a DisplayNames>, &'a str);
        let cases: &[Case<'_>] = &[
            (
                &[("samples", "count"), ("cpu", "nanoseconds")],
                None,
                "process_cpu",
            ),
            (&[("cpu", "nanoseconds")], None, "process_cpu"),
            (
                &[("cpu", "nanoseconds"), ("wall", "nanoseconds")],
                None,
                "wall",
            ),
            (
                &[("alloc_objects", "count"), ("alloc_space", "bytes")],
                None,
                "memory",
            ),
            (&[("space", "bytes")], None, "memory"),
            (&[("goroutine", "count")], None, "goroutines"),
            // Go's block profile: contentions -> mutex_count by default.
            (
                &[("contentions", "count"), ("delay", "nanoseconds")],
                None,
                "mutex",
            ),
            (&[("block_count", "count")], None, "block"),
            (&[("exceptions", "count")], None, "exceptions"),
            // A custom config replaces the defaults: samples is no longer "cpu".
            (&[("samples", "count")], Some(&custom), "samples"),
            (&[("alloc_space", "bytes")], Some(&custom), "x"),
        ];
        for (types, names, want) in cases {
            let p = profile(types, &[], 1);
            assert_eq!(metric_name(&p, *names).as_deref(), Some(*want), "{types:?}");
        }
        assert_eq!(metric_name(&profile(&[], &[], 1), None), None);
    }

    #[test]
    fn labels_from_the_name() {
        let p = profile(
            &[("cpu", "nanoseconds")],
            &[(0, 5, &[])],
            1_700_000_000_000_000_000,
        );
        let raw = Bytes::from(pprof::encode(&p, 1));
        let cases: &[(&str, &str, Vec<Label>)] = &[
            (
                "app.cpu{env=prod,region=eu}",
                "gospy",
                l(&[
                    ("__name__", "process_cpu"),
                    ("__delta__", "false"),
                    ("pyroscope_spy", "gospy"),
                    ("service_name", "app.cpu"),
                    ("env", "prod"),
                    ("region", "eu"),
                ]),
            ),
            (
                "app{service_name=svc,__session_id__=0123456789abcdef,__private=x,empty=}",
                "unknown",
                l(&[
                    ("__name__", "process_cpu"),
                    ("__delta__", "false"),
                    ("pyroscope_spy", "unknown"),
                    ("service_name", "svc"),
                    ("__session_id__", "0123456789abcdef"),
                ]),
            ),
        ];
        for (name, spy, want) in cases {
            let set = labelset::parse(name).expect("name");
            let got = convert(&raw, &meta(&set, spy), &Limits::default()).expect("ok");
            assert_eq!(got.len(), 1);
            assert_eq!(&got[0].labels, want, "{name}");
            // Nothing to fix: the bytes are forwarded as received.
            assert_eq!(got[0].raw, raw);
        }
    }

    #[test]
    fn old_timestamps_take_from() {
        for (t, want) in [
            (0, 7_000_000_000),
            (1_000_000, 7_000_000_000),
            (END_OF_1970_NANOS, END_OF_1970_NANOS),
            (-5, -5),
        ] {
            let p = profile(&[("cpu", "nanoseconds")], &[(0, 5, &[])], t);
            let out = run(&p, "app", "gospy");
            assert_eq!(out[0].1.time_nanos, want, "{t}");
        }
    }

    #[test]
    fn scripting_spies_get_file_qualified_names() {
        let p = profile(&[("cpu", "nanoseconds")], &[(0, 5, &[]), (1, 3, &[])], 1);
        let names = |p: &Pprof| -> Vec<String> {
            p.sample
                .iter()
                .map(|s| {
                    let loc = p
                        .location
                        .iter()
                        .find(|l| l.id == s.location_id[0])
                        .expect("loc");
                    let f = p
                        .function
                        .iter()
                        .find(|f| f.id == loc.line[0].function_id)
                        .expect("function");
                    string(p, f.name).to_string()
                })
                .collect()
        };
        for spy in ["rbspy", "scripting", "pyspy"] {
            let out = run(&p, "app", spy);
            assert_eq!(
                names(&out[0].1),
                ["app/file.py f1", "app/file.py f2"],
                "{spy}"
            );
        }
        assert_eq!(names(&run(&p, "app", "gospy")[0].1), ["f1", "f2"]);
        // pyspy leaves absolute paths alone.
        let mut abs = p.clone();
        let file = abs.function[0].filename as usize;
        abs.string_table[file] = "/abs/file.py".into();
        assert_eq!(names(&run(&abs, "app", "pyspy")[0].1), ["f1", "f2"]);
    }

    #[test]
    fn renaming_survives_the_largest_function_id() {
        // A function id of u64::MAX overflowed the id counter (a panic in debug builds, the
        // invalid id 0 in release): new functions now take free ids, and the result is valid.
        let mut p = profile(&[("cpu", "nanoseconds")], &[(0, 5, &[]), (1, 3, &[])], 1);
        let old = p.function[0].id;
        p.function[0].id = u64::MAX;
        for l in &mut p.location {
            for line in &mut l.line {
                if line.function_id == old {
                    line.function_id = u64::MAX;
                }
            }
        }
        let out = run(&p, "app", "rbspy");
        let got = &out[0].1;
        pprof::validate(got).expect("valid after renaming");
        let mut ids: Vec<u64> = got.function.iter().map(|f| f.id).collect();
        assert!(!ids.contains(&0));
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), got.function.len(), "ids are unique");
    }

    #[test]
    fn dotnet_profiles_are_repaired() {
        let mut p = profile(&[("inuse-space", "bytes")], &[(0, 5, &[])], 1);
        for f in &mut p.function {
            f.id = 0;
        }
        let raw = Bytes::from(pprof::encode(&p, 1));
        let set = labelset::parse("app").expect("name");
        // Without the .NET fix this profile is invalid.
        assert!(convert(&raw, &meta(&set, "gospy"), &Limits::default()).is_err());
        let out = convert(&raw, &meta(&set, "dotnetspy"), &Limits::default()).expect("fixed");
        let d = pprof::decode(&out[0].raw, &Limits::default()).expect("valid");
        assert_eq!(string(&d, d.sample_type[0].r#type), "inuse_space");
        assert_eq!(out[0].labels[0], ("__delta__".into(), "false".into()));
        assert!(
            out[0]
                .labels
                .contains(&("__name__".into(), "memory".into()))
        );
        // spy "unknown" with a config naming inuse-space is .NET too.
        let m = PprofMeta {
            config_has_inuse_dash_space: true,
            ..meta(&set, "unknown")
        };
        assert!(convert(&raw, &m, &Limits::default()).is_ok());
    }

    #[test]
    fn sample_labels_become_series() {
        let p = profile(
            &[("cpu", "nanoseconds")],
            &[
                (0, 5, &[("env", "test"), ("region", "eu")]),
                (
                    1,
                    3,
                    &[("env", "test"), ("region", "eu"), ("trace_id", "t1")],
                ),
                (2, 2, &[("env", "prod"), ("profile_id", "p1")]),
                // Series labels win: this sample joins the first group.
                (
                    2,
                    1,
                    &[("env", "test"), ("region", "eu"), ("service_name", "other")],
                ),
            ],
            1,
        );
        let out = run(&p, "sdk.app", "pyspy");
        assert_eq!(out.len(), 2);
        let base = [
            ("__name__", "process_cpu"),
            ("__delta__", "false"),
            ("pyroscope_spy", "pyspy"),
            ("service_name", "sdk.app"),
        ];
        let with = |extra: &[(&str, &str)]| {
            let mut v = base.to_vec();
            v.extend_from_slice(extra);
            l(&v)
        };
        assert_eq!(out[0].0, with(&[("env", "test"), ("region", "eu")]));
        assert_eq!(out[1].0, with(&[("env", "prod")]));
        let totals = |p: &Pprof| p.sample.iter().map(|s| s.value[0]).sum::<i64>();
        assert_eq!(totals(&out[0].1), 9);
        assert_eq!(totals(&out[1].1), 2);
        let sample_labels = |p: &Pprof| -> Vec<(String, String)> {
            p.sample
                .iter()
                .flat_map(|s| {
                    s.label
                        .iter()
                        .map(|l| (string(p, l.key).to_string(), string(p, l.str).to_string()))
                })
                .collect()
        };
        assert_eq!(
            sample_labels(&out[0].1),
            [("trace_id".to_string(), "t1".to_string())]
        );
        assert_eq!(
            sample_labels(&out[1].1),
            [("span_id".to_string(), "p1".to_string())]
        );
        // Each part only keeps what its samples reference.
        assert_eq!(out[1].1.location.len(), 1);

        // One label set shared by every sample (pyroscope-rs tags): one profile, promoted.
        let p = profile(
            &[("cpu", "nanoseconds")],
            &[(0, 5, &[("env", "test")]), (1, 1, &[("env", "test")])],
            1,
        );
        let out = run(&p, "sdk.app", "gospy");
        assert_eq!(out.len(), 1);
        assert!(out[0].0.contains(&("env".into(), "test".into())));
        assert!(out[0].1.sample.iter().all(|s| s.label.is_empty()));
    }

    #[test]
    fn bad_profiles_are_errors() {
        let set = labelset::parse("app").expect("name");
        let m = meta(&set, "gospy");
        let lim = Limits::default();
        assert!(matches!(
            convert(&Bytes::from_static(b"not a profile"), &m, &lim),
            Err(ConvertError::Pprof(_))
        ));
        assert!(matches!(
            convert(&Bytes::from_static(b"\x1f\x8b\x08\x00garbage"), &m, &lim),
            Err(ConvertError::Pprof(PprofError::Gzip(_)))
        ));
        let empty_types = Bytes::from(pprof::encode(&profile(&[], &[], 1), 1));
        assert_eq!(
            convert(&empty_types, &m, &lim),
            Err(ConvertError::NoSampleTypes)
        );
        let big = Bytes::from(pprof::encode(
            &profile(&[("cpu", "ns")], &[(0, 1, &[])], 1),
            1,
        ));
        let tiny = Limits {
            max_decompressed_bytes: 10,
        };
        assert!(matches!(
            convert(&big, &m, &tiny),
            Err(ConvertError::Pprof(PprofError::TooLarge { .. }))
        ));
        assert_eq!(convert(&Bytes::new(), &m, &lim), Ok(vec![]));
    }
}
