//! Rendering a profile as text, in three verbosities (like the OpenTelemetry debug exporter).

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::gocompat::time::rfc3339_millis;
use crate::pprof::proto::Profile as Pprof;
use crate::pprof::trim::default_value_index;
use crate::pprof::{Limits, decode};
use crate::profiles::Profile;

/// How much is printed per profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verbosity {
    /// One line: type, service, instance, size, samples.
    Basic,
    /// Labels, sample types with totals, and the top stacks (function names on one line).
    Normal,
    /// As normal, with one frame per line (function, file:line) for each top stack.
    Detailed,
}

impl Verbosity {
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "basic" => Ok(Verbosity::Basic),
            "normal" => Ok(Verbosity::Normal),
            "detailed" => Ok(Verbosity::Detailed),
            other => Err(format!(
                "unknown verbosity {other:?}: expected \"basic\", \"normal\" or \"detailed\""
            )),
        }
    }
}

/// One stack among the heaviest.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TopStack {
    /// Leaf first.
    pub frames: Vec<String>,
    pub value: i64,
    /// Share of the sample type's total, in percent.
    pub percent: f64,
}

/// What is known about a received profile.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub labels: Vec<(String, String)>,
    pub bytes: usize,
    pub received_at: String,
    /// `type/unit` per sample type.
    pub sample_types: Vec<String>,
    pub totals: Vec<i64>,
    pub samples: usize,
    pub duration_nanos: i64,
    pub period: String,
    /// The sample type stacks are ranked by.
    pub ranked_by: String,
    pub top_stacks: Vec<TopStack>,
    /// Set when the bytes are not a valid profile.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Per top stack (same order), its frames with file:line, for `detailed`.
    #[serde(skip)]
    pub frame_details: Vec<Vec<String>>,
}

fn string(p: &Pprof, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

/// Summarizes `profile`, keeping the `top` heaviest stacks.
pub fn summarize(profile: &Profile, top: usize) -> Summary {
    // Sorted already; empty values are not in the set (they mean absent).
    let labels = profile
        .labels
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    let mut s = Summary {
        labels,
        bytes: profile.raw.len(),
        received_at: rfc3339_millis(profile.received_at),
        sample_types: Vec::new(),
        totals: Vec::new(),
        samples: 0,
        duration_nanos: 0,
        period: String::new(),
        ranked_by: String::new(),
        top_stacks: Vec::new(),
        error: None,
        frame_details: Vec::new(),
    };
    let p = match decode(&profile.raw, &Limits::default()) {
        Ok(p) => p,
        Err(e) => {
            s.error = Some(e.to_string());
            return s;
        }
    };
    s.sample_types = p
        .sample_type
        .iter()
        .map(|t| format!("{}/{}", string(&p, t.r#type), string(&p, t.unit)))
        .collect();
    s.samples = p.sample.len();
    s.duration_nanos = p.duration_nanos;
    if let Some(pt) = &p.period_type {
        s.period = format!(
            "{} {}/{}",
            p.period,
            string(&p, pt.r#type),
            string(&p, pt.unit)
        );
    }
    let idx = default_value_index(&p);
    s.ranked_by = s.sample_types.get(idx).cloned().unwrap_or_default();
    s.totals = vec![0; p.sample_type.len()];

    let functions: HashMap<u64, (&str, &str)> = p
        .function
        .iter()
        .map(|f| (f.id, (string(&p, f.name), string(&p, f.filename))))
        .collect();
    // Per location, its frames: inlined callees first, as pprof stores them.
    let frames: HashMap<u64, Vec<(String, String)>> = p
        .location
        .iter()
        .map(|l| {
            let f = if l.line.is_empty() {
                vec![(format!("0x{:x}", l.address), String::new())]
            } else {
                l.line
                    .iter()
                    .map(|ln| {
                        let (name, file) =
                            functions.get(&ln.function_id).copied().unwrap_or(("?", ""));
                        (name.to_string(), format!("{file}:{}", ln.line))
                    })
                    .collect()
            };
            (l.id, f)
        })
        .collect();
    let mut stacks: HashMap<Vec<u64>, i64> = HashMap::new();
    for sample in &p.sample {
        for (t, v) in s.totals.iter_mut().zip(&sample.value) {
            *t = t.saturating_add(*v);
        }
        let v = sample.value.get(idx).copied().unwrap_or(0);
        if v != 0 {
            let e = stacks.entry(sample.location_id.clone()).or_default();
            *e = e.saturating_add(v);
        }
    }
    let total = s.totals.get(idx).copied().unwrap_or(0);
    // Rank stacks as people read them, by function names: one call path sampled at different
    // addresses (lines of a loop, inlined copies) is many location stacks, and ranking those
    // printed the same names several times while a hotter path split across more addresses
    // could drop out of the top. `detailed` shows the file:line frames of each name stack's
    // heaviest location stack.
    let names_of = |locs: &[u64]| -> Vec<&(String, String)> {
        locs.iter()
            .flat_map(|id| frames.get(id).into_iter().flatten())
            .collect()
    };
    let mut by_name: HashMap<Vec<&str>, (i64, &[u64], i64)> = HashMap::new();
    for (locs, value) in &stacks {
        let key: Vec<&str> = names_of(locs).iter().map(|(n, _)| n.as_str()).collect();
        let e = by_name.entry(key).or_insert((0, locs.as_slice(), *value));
        e.0 = e.0.saturating_add(*value);
        if value.abs() > e.2.abs() || (value.abs() == e.2.abs() && locs.as_slice() < e.1) {
            e.1 = locs;
            e.2 = *value;
        }
    }
    let mut ranked: Vec<(Vec<&str>, i64, &[u64])> = by_name
        .into_iter()
        .map(|(names, (value, locs, _))| (names, value, locs))
        .collect();
    ranked.sort_by(|a, b| b.1.abs().cmp(&a.1.abs()).then_with(|| a.0.cmp(&b.0)));
    ranked.truncate(top);
    for (names, value, locs) in ranked {
        s.top_stacks.push(TopStack {
            frames: names.iter().map(|n| n.to_string()).collect(),
            value,
            percent: if total != 0 {
                value as f64 * 100.0 / total as f64
            } else {
                0.0
            },
        });
        s.frame_details.push(
            names_of(locs)
                .iter()
                .map(|(n, f)| format!("{n} {f}"))
                .collect(),
        );
    }
    s
}

/// A value in its unit: seconds for nanoseconds, KiB/MiB for bytes, plain counts otherwise.
pub fn value(v: i64, unit: &str) -> String {
    match unit {
        "nanoseconds" => format!("{:.2}s", v as f64 / 1e9),
        "bytes" => {
            let f = v as f64;
            if f.abs() >= (1 << 20) as f64 {
                format!("{:.2}MiB", f / (1 << 20) as f64)
            } else if f.abs() >= 1024.0 {
                format!("{:.1}KiB", f / 1024.0)
            } else {
                format!("{v}B")
            }
        }
        _ => v.to_string(),
    }
}

fn label<'a>(s: &'a Summary, name: &str) -> &'a str {
    s.labels
        .iter()
        .find(|(k, _)| k == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The text printed for one profile.
pub fn render(component: &str, seq: u64, s: &Summary, verbosity: Verbosity) -> String {
    let mut out = String::new();
    let name = label(s, "__name__");
    let _ = write!(
        out,
        "{component}: profile #{seq} {} service_name={:?} instance={:?} {} bytes",
        if name.is_empty() {
            "(no __name__)"
        } else {
            name
        },
        label(s, "service_name"),
        label(s, "instance"),
        s.bytes,
    );
    if let Some(e) = &s.error {
        let _ = writeln!(out, " INVALID: {e}");
        return out;
    }
    let _ = writeln!(out, " {} samples", s.samples);
    if verbosity == Verbosity::Basic {
        return out;
    }
    let labels: Vec<String> = s.labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    let _ = writeln!(out, "  received: {}", s.received_at);
    let _ = writeln!(out, "  labels: {{{}}}", labels.join(", "));
    let types: Vec<String> = s
        .sample_types
        .iter()
        .zip(&s.totals)
        .map(|(t, total)| {
            let unit = t.rsplit('/').next().unwrap_or("");
            format!("{t} (total {})", value(*total, unit))
        })
        .collect();
    let _ = writeln!(out, "  sample types: {}", types.join(", "));
    if !s.period.is_empty() || s.duration_nanos != 0 {
        let _ = writeln!(
            out,
            "  period: {}; duration: {}",
            if s.period.is_empty() { "-" } else { &s.period },
            value(s.duration_nanos, "nanoseconds")
        );
    }
    if s.top_stacks.is_empty() {
        let _ = writeln!(out, "  no samples with a {} value", s.ranked_by);
        return out;
    }
    let unit = s.ranked_by.rsplit('/').next().unwrap_or("");
    let _ = writeln!(
        out,
        "  top {} stacks by {} (leaf first):",
        s.top_stacks.len(),
        s.ranked_by
    );
    for (i, st) in s.top_stacks.iter().enumerate() {
        let head = format!("{:6.2}% {:>10}", st.percent, value(st.value, unit));
        match verbosity {
            Verbosity::Detailed => {
                let _ = writeln!(out, "    {head}");
                for f in s.frame_details.get(i).into_iter().flatten() {
                    let _ = writeln!(out, "        {f}");
                }
            }
            _ => {
                let shown: Vec<&str> = st.frames.iter().take(8).map(String::as_str).collect();
                let more = st.frames.len().saturating_sub(shown.len());
                let tail = if more > 0 {
                    format!(" < ... {more} more")
                } else {
                    String::new()
                };
                let _ = writeln!(out, "    {head}  {}{tail}", shown.join(" < "));
            }
        }
    }
    out
}
