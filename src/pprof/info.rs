//! A human-readable summary of a profile for `scraper pprof info`: sample types, totals,
//! table sizes and the top functions by flat and cumulative value.

use std::collections::{HashMap, HashSet};
use std::fmt;

use super::proto::Profile;
use super::trim::default_value_index;

/// One function's share of a sample type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopFunction {
    pub name: String,
    /// Value of samples whose leaf frame is this function.
    pub flat: i64,
    /// Value of samples with this function anywhere on the stack (counted once per sample).
    pub cum: i64,
}

/// What `pprof info` prints.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    pub sample_types: Vec<(String, String)>,
    pub default_type: usize,
    pub period_type: (String, String),
    pub period: i64,
    pub time_nanos: i64,
    pub duration_nanos: i64,
    pub samples: usize,
    pub zero_samples: usize,
    pub max_depth: usize,
    pub locations: usize,
    pub functions: usize,
    pub mappings: usize,
    pub strings: usize,
    pub totals: Vec<i64>,
    /// The sample type `top` is ranked by.
    pub top_type: usize,
    pub top: Vec<TopFunction>,
}

fn s(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

/// Summarizes a valid profile; `top_type` picks the sample type to rank functions by
/// (default: the profile's default type), `top` how many to list.
pub fn summarize(p: &Profile, top_type: Option<usize>, top: usize) -> Summary {
    let sample_types: Vec<(String, String)> = p
        .sample_type
        .iter()
        .map(|t| (s(p, t.r#type).to_owned(), s(p, t.unit).to_owned()))
        .collect();
    let default_type = default_value_index(p);
    let idx = top_type.unwrap_or(default_type);
    let names: HashMap<u64, &str> = p.function.iter().map(|f| (f.id, s(p, f.name))).collect();
    // Function names of each location, inlined callees first.
    let frames: HashMap<u64, Vec<&str>> = p
        .location
        .iter()
        .map(|l| {
            let fns = l
                .line
                .iter()
                .map(|ln| names.get(&ln.function_id).copied().unwrap_or("?"))
                .collect();
            (l.id, fns)
        })
        .collect();
    let mut totals = vec![0i64; sample_types.len()];
    let mut flat: HashMap<&str, i64> = HashMap::new();
    let mut cum: HashMap<&str, i64> = HashMap::new();
    let mut zero_samples = 0;
    let mut max_depth = 0;
    let mut seen: HashSet<&str> = HashSet::new();
    for sample in &p.sample {
        for (t, v) in totals.iter_mut().zip(&sample.value) {
            *t = t.saturating_add(*v);
        }
        if sample.value.iter().all(|&v| v == 0) {
            zero_samples += 1;
        }
        let v = sample.value.get(idx).copied().unwrap_or(0);
        let stack: Vec<&str> = sample
            .location_id
            .iter()
            .flat_map(|id| frames.get(id).into_iter().flatten().copied())
            .collect();
        max_depth = max_depth.max(stack.len());
        if let Some(leaf) = stack.first() {
            let e = flat.entry(leaf).or_default();
            *e = e.saturating_add(v);
        }
        seen.clear();
        for f in stack {
            // Recursive functions count once per sample.
            if seen.insert(f) {
                let e = cum.entry(f).or_default();
                *e = e.saturating_add(v);
            }
        }
    }
    let mut ranked: Vec<TopFunction> = cum
        .iter()
        .map(|(name, &c)| TopFunction {
            name: (*name).to_owned(),
            flat: flat.get(name).copied().unwrap_or(0),
            cum: c,
        })
        .collect();
    ranked.sort_by(|a, b| {
        b.flat
            .cmp(&a.flat)
            .then(b.cum.cmp(&a.cum))
            .then(a.name.cmp(&b.name))
    });
    ranked.truncate(top);
    let period_type = p.period_type.as_ref().map_or_else(Default::default, |t| {
        (s(p, t.r#type).to_owned(), s(p, t.unit).to_owned())
    });
    Summary {
        sample_types,
        default_type,
        period_type,
        period: p.period,
        time_nanos: p.time_nanos,
        duration_nanos: p.duration_nanos,
        samples: p.sample.len(),
        zero_samples,
        max_depth,
        locations: p.location.len(),
        functions: p.function.len(),
        mappings: p.mapping.len(),
        strings: p.string_table.len(),
        totals,
        top_type: idx,
        top: ranked,
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Sample types:")?;
        for (i, ((ty, unit), total)) in self.sample_types.iter().zip(&self.totals).enumerate() {
            let mark = if i == self.default_type {
                " (default)"
            } else {
                ""
            };
            writeln!(f, "  {ty}/{unit}{mark}: total {total}")?;
        }
        writeln!(
            f,
            "Period: {} {}/{}",
            self.period, self.period_type.0, self.period_type.1
        )?;
        writeln!(
            f,
            "Time: {} ns, duration {} ns",
            self.time_nanos, self.duration_nanos
        )?;
        writeln!(
            f,
            "Samples: {} ({} all-zero), max depth {}; locations {}, functions {}, mappings {}, strings {}",
            self.samples,
            self.zero_samples,
            self.max_depth,
            self.locations,
            self.functions,
            self.mappings,
            self.strings
        )?;
        if self.top.is_empty() {
            return Ok(());
        }
        let (ty, unit) = self
            .sample_types
            .get(self.top_type)
            .cloned()
            .unwrap_or_default();
        let total = self.totals.get(self.top_type).copied().unwrap_or(0);
        writeln!(f, "Top functions by {ty}/{unit}:")?;
        writeln!(
            f,
            "{:>14} {:>6} {:>14} {:>6}  function",
            "flat", "flat%", "cum", "cum%"
        )?;
        let pct = |v: i64| {
            if total == 0 {
                0.0
            } else {
                v as f64 * 100.0 / total as f64
            }
        };
        for t in &self.top {
            writeln!(
                f,
                "{:>14} {:>5.1}% {:>14} {:>5.1}%  {}",
                t.flat,
                pct(t.flat),
                t.cum,
                pct(t.cum),
                t.name
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::testutil::{B, HEAP};

    #[test]
    fn summary() {
        let p = B::new(HEAP)
            .sample(&["leaf", "mid", "main"], &[1, 10, 0, 0])
            .sample(&["mid", "main"], &[2, 20, 0, 0])
            .sample(&["rec", "rec", "main"], &[4, 40, 0, 0])
            .sample(&["x"], &[0, 0, 0, 0])
            .build();
        let s = summarize(&p, Some(1), 3);
        assert_eq!(s.totals, vec![7, 70, 0, 0]);
        assert_eq!((s.samples, s.zero_samples, s.max_depth), (4, 1, 3));
        let top: Vec<(&str, i64, i64)> = s
            .top
            .iter()
            .map(|t| (t.name.as_str(), t.flat, t.cum))
            .collect();
        assert_eq!(
            top,
            vec![("rec", 40, 40), ("mid", 20, 30), ("leaf", 10, 10)]
        );
        let text = s.to_string();
        assert!(text.contains("alloc_space/bytes: total 70"), "{text}");
        assert!(text.contains("inuse_space/bytes (default)"), "{text}");
    }
}
