//! The legacy text formats of `/ingest` turned into pprof, as Pyroscope's ingest adapter does
//! (`pkg/og/convert/parser.go`, `pkg/og/storage/tree`, `pkg/ingester/pyroscope/ingest_adapter.go`):
//!
//! * `groups` (collapsed/folded, the default format): `frame;frame;leaf <count>` per line, the
//!   count after the last space; lines without a space are skipped;
//! * `lines`: one stack per line, each occurrence counting 1; empty lines skipped.
//!
//! The profile type comes from the app name's last dot-separated part (`app.cpu`,
//! `app.alloc_space`, ...; no dot means `cpu`), see [`convert_metadata`]. For CPU and wall
//! profiles with a non-zero `sampleRate`, counts become nanoseconds (`1e9 / sampleRate` per
//! sample) with period type `cpu/nanoseconds`.
//!
//! Differences from Pyroscope: a negative count is rejected (Pyroscope stores it as a huge
//! unsigned number), and sums saturate instead of wrapping.

use std::collections::{BTreeMap, HashMap};

use crate::pprof::named::NamedProfile;
use crate::pprof::proto::{Profile, ValueType};

/// Stacks (root first) and their summed values.
pub type Stacks = BTreeMap<Vec<String>, u64>;

/// A malformed text body.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FoldedError {
    #[error("line {line}: invalid sample count {count:?}")]
    BadCount { line: usize, count: String },
    #[error("line {line}: negative sample count {count}")]
    NegativeCount { line: usize, count: i64 },
    #[error("the body is not valid UTF-8 text")]
    NotText,
    #[error("unknown profile type: {0}")]
    UnknownProfileType(String),
}

/// Lines as Go's `bufio.ScanLines` yields them: split on `\n`, one trailing `\r` dropped, no
/// empty last line.
fn lines(body: &str) -> impl Iterator<Item = &str> {
    let body = body.strip_suffix('\n').unwrap_or(body);
    let mut it = body.split('\n');
    if body.is_empty() {
        it.next();
    }
    it.map(|l| l.strip_suffix('\r').unwrap_or(l))
}

/// The frames of a stack key as Pyroscope's tree inserts them: split on `;`, empty frames kept
/// except after a trailing `;`.
fn frames(key: &str) -> Vec<String> {
    let key = key.strip_suffix(';').unwrap_or(key);
    if key.is_empty() {
        return Vec::new();
    }
    key.split(';').map(str::to_string).collect()
}

fn add(stacks: &mut Stacks, key: &str, value: u64) {
    let slot = stacks.entry(frames(key)).or_insert(0);
    *slot = slot.saturating_add(value);
}

/// Parses the `groups` format (folded stacks with counts).
pub fn parse_groups(body: &[u8]) -> Result<Stacks, FoldedError> {
    let body = std::str::from_utf8(body).map_err(|_| FoldedError::NotText)?;
    let mut stacks = Stacks::new();
    for (i, line) in lines(body).enumerate() {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let n: i64 = count.parse().map_err(|_| FoldedError::BadCount {
            line: i + 1,
            count: count.chars().take(64).collect(),
        })?;
        let n = u64::try_from(n).map_err(|_| FoldedError::NegativeCount {
            line: i + 1,
            count: n,
        })?;
        add(&mut stacks, stack, n);
    }
    Ok(stacks)
}

/// Parses the `lines` format (one stack per sample).
pub fn parse_lines(body: &[u8]) -> Result<Stacks, FoldedError> {
    let body = std::str::from_utf8(body).map_err(|_| FoldedError::NotText)?;
    let mut counts: HashMap<&str, u64> = HashMap::new();
    for line in lines(body) {
        *counts.entry(line).or_insert(0) += 1;
    }
    let mut stacks = Stacks::new();
    for (key, n) in counts {
        if !key.is_empty() {
            add(&mut stacks, key, n);
        }
    }
    Ok(stacks)
}

/// What the app name says about the profile (`convertMetadata`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// `__name__`: `process_cpu`, `memory`, `wall`, ...
    pub metric: &'static str,
    pub sample_type: String,
    pub sample_unit: &'static str,
    /// The app name without its profile-type suffix.
    pub app: String,
}

/// Pyroscope's `convertMetadata`: the last dot-separated part of the app name is the profile
/// type (`cpu` when there is no dot).
pub fn convert_metadata(app_name: &str) -> Result<Metadata, FoldedError> {
    let (app, st) = match app_name.rsplit_once('.') {
        Some((app, st)) => (app, st),
        None => (app_name, "cpu"),
    };
    let (metric, sample_type, unit): (&'static str, &str, &'static str) = match st {
        "cpu" | "itimer" => ("process_cpu", "samples", "count"),
        "wall" | "seconds" | "nanoseconds" | "microseconds" | "milliseconds" => {
            ("wall", "samples", "count")
        }
        "inuse_objects" | "alloc_objects" => ("memory", st, "count"),
        "inuse_space" | "alloc_space" => ("memory", st, "bytes"),
        "goroutines" => ("goroutine", st, "count"),
        "mutex_count" => ("mutex", "contentions", "count"),
        "mutex_duration" => ("mutex", "delay", "nanoseconds"),
        "block_count" | "lock_count" => ("block", "contentions", "count"),
        "block_duration" | "lock_duration" => ("block", "delay", "nanoseconds"),
        "alloc_in_new_tlab_objects" | "alloc_outside_tlab_objects" | "live" => {
            ("memory", st, "count")
        }
        "alloc_in_new_tlab_bytes" | "alloc_outside_tlab_bytes" => ("memory", st, "bytes"),
        "exceptions" => ("exceptions", "samples", "count"),
        "bytes" => ("memory", "samples", "bytes"),
        other => return Err(FoldedError::UnknownProfileType(other.to_string())),
    };
    Ok(Metadata {
        metric,
        sample_type: sample_type.to_string(),
        sample_unit: unit,
        app: app.to_string(),
    })
}

/// Builds the pprof Pyroscope's `Tree.Pprof` builds: one fake mapping, one location and
/// function per distinct frame name, one sample per stack (leaf first), `time_nanos` = `from`.
/// CPU and wall profiles with a non-zero `sample_rate` are scaled to nanoseconds.
pub fn to_pprof(stacks: &Stacks, meta: &Metadata, start_nanos: i64, sample_rate: u32) -> Profile {
    let mut b = NamedProfile::new();
    b.profile_mut().time_nanos = start_nanos;
    let mut sample_type = meta.sample_type.as_str();
    let mut unit = meta.sample_unit;
    let mut scale = 1u64;
    if sample_rate != 0 && matches!(meta.metric, "wall" | "process_cpu") {
        let period = 1_000_000_000 / i64::from(sample_rate);
        let period_type = ValueType {
            r#type: b.intern("cpu"),
            unit: b.intern("nanoseconds"),
        };
        let p = b.profile_mut();
        p.period = period;
        // Pyroscope drops a zero period (it would leave period_type without a period).
        if period != 0 {
            p.period_type = Some(period_type);
        }
        sample_type = if meta.metric == "wall" { "wall" } else { "cpu" };
        unit = "nanoseconds";
        scale = period as u64;
    }
    b.sample_type(sample_type, unit);
    for (stack, &value) in stacks {
        if value == 0 {
            continue;
        }
        let v = value.saturating_mul(scale);
        b.add(
            stack.iter().map(String::as_str),
            vec![i64::try_from(v).unwrap_or(i64::MAX)],
        );
    }
    b.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(entries: &[(&[&str], u64)]) -> Stacks {
        entries
            .iter()
            .map(|(k, v)| (k.iter().map(|s| s.to_string()).collect(), *v))
            .collect()
    }

    #[test]
    fn groups_parse_like_pyroscope() {
        let cases: &[(&str, Result<Stacks, FoldedError>)] = &[
            (
                "main;work 3\nmain;idle 1\n",
                Ok(st(&[(&["main", "work"], 3), (&["main", "idle"], 1)])),
            ),
            (
                "main;work 3\r\nmain;work 2",
                Ok(st(&[(&["main", "work"], 5)])),
            ),
            // No space: skipped. Frames with spaces: the count is after the last one.
            (
                "nospace\nmain;do work 7\n\n",
                Ok(st(&[(&["main", "do work"], 7)])),
            ),
            // A trailing ';' adds no frame; empty frames in the middle are kept.
            (
                "a;b; 1\na;;b 2",
                Ok(st(&[(&["a", "b"], 1), (&["a", "", "b"], 2)])),
            ),
            (" 4", Ok(st(&[(&[], 4)]))),
            ("+5 is fine +5", Ok(st(&[(&["+5 is fine"], 5)]))),
            ("", Ok(Stacks::new())),
            (
                "a;b x",
                Err(FoldedError::BadCount {
                    line: 1,
                    count: "x".into(),
                }),
            ),
            (
                "a 1\na;b ",
                Err(FoldedError::BadCount {
                    line: 2,
                    count: "".into(),
                }),
            ),
            (
                "a -3",
                Err(FoldedError::NegativeCount { line: 1, count: -3 }),
            ),
            (
                "a 99999999999999999999",
                Err(FoldedError::BadCount {
                    line: 1,
                    count: "99999999999999999999".into(),
                }),
            ),
        ];
        for (body, want) in cases {
            assert_eq!(&parse_groups(body.as_bytes()), want, "{body:?}");
        }
        assert_eq!(parse_groups(b"\xff 1"), Err(FoldedError::NotText));
    }

    #[test]
    fn lines_count_occurrences() {
        let got = parse_lines(b"main;work\nmain;work\r\nmain;idle\n\nmain;work\n").expect("parses");
        assert_eq!(got, st(&[(&["main", "work"], 3), (&["main", "idle"], 1)]));
        assert_eq!(parse_lines(b"").expect("empty"), Stacks::new());
    }

    #[test]
    fn app_names_give_profile_types() {
        type Want<'a> = Option<(&'a str, &'a str, &'a str, &'a str)>;
        let cases: &[(&str, Want<'_>)] = &[
            ("app", Some(("process_cpu", "samples", "count", "app"))),
            ("app.cpu", Some(("process_cpu", "samples", "count", "app"))),
            (
                "my.app.cpu",
                Some(("process_cpu", "samples", "count", "my.app")),
            ),
            (
                "app.itimer",
                Some(("process_cpu", "samples", "count", "app")),
            ),
            ("app.wall", Some(("wall", "samples", "count", "app"))),
            ("app.seconds", Some(("wall", "samples", "count", "app"))),
            (
                "app.alloc_space",
                Some(("memory", "alloc_space", "bytes", "app")),
            ),
            (
                "app.inuse_objects",
                Some(("memory", "inuse_objects", "count", "app")),
            ),
            (
                "app.goroutines",
                Some(("goroutine", "goroutines", "count", "app")),
            ),
            (
                "app.mutex_count",
                Some(("mutex", "contentions", "count", "app")),
            ),
            (
                "app.mutex_duration",
                Some(("mutex", "delay", "nanoseconds", "app")),
            ),
            (
                "app.block_count",
                Some(("block", "contentions", "count", "app")),
            ),
            (
                "app.lock_duration",
                Some(("block", "delay", "nanoseconds", "app")),
            ),
            ("app.live", Some(("memory", "live", "count", "app"))),
            (
                "app.alloc_in_new_tlab_bytes",
                Some(("memory", "alloc_in_new_tlab_bytes", "bytes", "app")),
            ),
            (
                "app.exceptions",
                Some(("exceptions", "samples", "count", "app")),
            ),
            ("app.bytes", Some(("memory", "samples", "bytes", "app"))),
            ("my.app", None),
            ("app.", None),
        ];
        for (name, want) in cases {
            let got = convert_metadata(name).ok();
            let got = got.as_ref().map(|m| {
                (
                    m.metric,
                    m.sample_type.as_str(),
                    m.sample_unit,
                    m.app.as_str(),
                )
            });
            assert_eq!(got, *want, "{name}");
        }
        assert_eq!(
            convert_metadata("my.app").unwrap_err().to_string(),
            "unknown profile type: app"
        );
    }

    fn strings(p: &Profile, vt: &ValueType) -> (String, String) {
        (
            p.string_table[vt.r#type as usize].clone(),
            p.string_table[vt.unit as usize].clone(),
        )
    }

    #[test]
    fn cpu_profiles_are_scaled_to_nanoseconds() {
        let stacks = st(&[
            (&["main", "work"], 3),
            (&["main", "idle"], 1),
            (&["zero"], 0),
        ]);
        let meta = convert_metadata("app.cpu").expect("cpu");
        let p = to_pprof(&stacks, &meta, 42, 100);
        crate::pprof::validate(&p).expect("valid");
        assert_eq!(p.time_nanos, 42);
        assert_eq!(p.period, 10_000_000);
        assert_eq!(
            strings(&p, &p.sample_type[0]),
            ("cpu".into(), "nanoseconds".into())
        );
        assert_eq!(
            strings(&p, p.period_type.as_ref().expect("period type")),
            ("cpu".into(), "nanoseconds".into())
        );
        assert_eq!(p.sample.len(), 2);
        let by_leaf: HashMap<String, i64> = p
            .sample
            .iter()
            .map(|s| {
                let leaf = p.location[s.location_id[0] as usize - 1].line[0].function_id;
                let name = p.function[leaf as usize - 1].name;
                (p.string_table[name as usize].clone(), s.value[0])
            })
            .collect();
        assert_eq!(by_leaf["work"], 30_000_000);
        assert_eq!(by_leaf["idle"], 10_000_000);
        // "main" is one location shared by both stacks, the root (last).
        assert_eq!(p.location.len(), 3);
        assert_eq!(p.sample[0].location_id.len(), 2);

        // sampleRate=0: counts stay counts.
        let p = to_pprof(&stacks, &meta, 0, 0);
        assert_eq!(
            strings(&p, &p.sample_type[0]),
            ("samples".into(), "count".into())
        );
        assert!(p.period_type.is_none());
        // Memory is never scaled.
        let p = to_pprof(
            &stacks,
            &convert_metadata("a.alloc_space").expect("mem"),
            0,
            100,
        );
        assert_eq!(
            strings(&p, &p.sample_type[0]),
            ("alloc_space".into(), "bytes".into())
        );
        assert_eq!(p.period, 0);
        // Wall: type wall.
        let p = to_pprof(&stacks, &convert_metadata("a.wall").expect("wall"), 0, 50);
        assert_eq!(
            strings(&p, &p.sample_type[0]),
            ("wall".into(), "nanoseconds".into())
        );
        assert_eq!(p.period, 20_000_000);
    }
}
