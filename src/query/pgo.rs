//! Reading what `scraper pgo` turns into Go PGO profiles: the top-N windows of a range by CPU
//! (`--top-windows N --window 5m`), and the values of a label that split a query into one
//! workload each (`--split-by`). The transform itself is `pprof::pgo`.
//!
//! Merging the busiest windows rather than the whole range follows Datadog's finding for PGO
//! (quiet hours dilute the hot paths a build should optimise for); Go itself has no weighted
//! merge (golang/go#64487).

use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

use crate::pprof::proto::Profile;

use super::catalog::has_type;
use super::selector::{MatchOp, Matcher};
use super::source::{Merged, ProfileSource, Query, QueryError};

/// More windows than this in one range is a mistake (a 1 s window over a week), not a plan.
pub const MAX_WINDOWS: usize = 10_000;

/// `[from, to)` cut into consecutive windows of `len` from `from`; the last one ends at `to`.
/// A shorter remainder joins the window before it (the last window is then up to twice as
/// long): alone, a short window holding a whole profile would look busier per second than it
/// was. A range shorter than `len` is one window.
pub fn windows(
    from: SystemTime,
    to: SystemTime,
    len: Duration,
) -> Result<Vec<(SystemTime, SystemTime)>, QueryError> {
    if len.is_zero() {
        return Err(QueryError::Unsupported(
            "the window length must be positive".into(),
        ));
    }
    let span = to
        .duration_since(from)
        .map_err(|_| QueryError::Unsupported("the range ends before it starts".into()))?;
    let count = span.as_nanos().div_ceil(len.as_nanos());
    if count > MAX_WINDOWS as u128 {
        return Err(QueryError::Unsupported(format!(
            "{count} windows of {len:?} in the range: at most {MAX_WINDOWS} (use a longer --window)"
        )));
    }
    let mut out: Vec<(SystemTime, SystemTime)> = Vec::new();
    let mut start = from;
    while start < to {
        // A window reaching past the end of time (a huge --window) ends at `to`.
        let end = start.checked_add(len).map_or(to, |end| end.min(to));
        match out.last_mut() {
            Some(last) if end.duration_since(start).is_ok_and(|d| d < len) => last.1 = end,
            _ => out.push((start, end)),
        }
        start = end;
    }
    Ok(out)
}

/// One window's CPU.
#[derive(Clone, Debug, PartialEq)]
pub struct WindowTotal {
    pub from: SystemTime,
    pub to: SystemTime,
    /// Sum of the window's values in the query's sample type (CPU nanoseconds).
    pub total: i64,
    pub profiles: usize,
}

impl WindowTotal {
    /// Value per second of window: what windows are ranked by, so that a shorter last window
    /// competes on equal terms (for equal lengths it orders as the totals do).
    pub fn rate(&self) -> f64 {
        let secs = self
            .to
            .duration_since(self.from)
            .map_or(0.0, |d| d.as_secs_f64());
        if secs > 0.0 {
            self.total as f64 / secs
        } else {
            0.0
        }
    }
}

/// Indexes of the `n` busiest windows, busiest first (ties: the earlier window); windows
/// without CPU are never chosen.
pub fn rank(windows: &[WindowTotal], n: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..windows.len())
        .filter(|&i| windows[i].total > 0)
        .collect();
    order.sort_by(|&a, &b| {
        windows[b]
            .rate()
            .total_cmp(&windows[a].rate())
            .then(a.cmp(&b))
    });
    order.truncate(n);
    order
}

/// The sum of `p`'s values in the query's sample type (the first type when it has no such
/// type: a backend's answer carries only the one asked for).
pub fn total_of(p: &Profile, query: &Query) -> i64 {
    let (want_type, want_unit) = query.profile_type.sample_type();
    let s = |i: i64| {
        usize::try_from(i)
            .ok()
            .and_then(|i| p.string_table.get(i))
            .map_or("", String::as_str)
    };
    let index = p
        .sample_type
        .iter()
        .position(|t| s(t.r#type) == want_type && s(t.unit) == want_unit)
        .unwrap_or(0);
    p.sample
        .iter()
        .filter_map(|x| x.value.get(index))
        .fold(0i64, |acc, v| acc.saturating_add(*v))
}

/// The top windows of a range, merged.
#[derive(Clone, Debug)]
pub struct TopWindows {
    /// The chosen windows merged (`series` is the most any one of them had).
    pub merged: Merged,
    /// The chosen windows, busiest first.
    pub chosen: Vec<WindowTotal>,
    /// Windows in the range, and how many had profiles.
    pub windows: usize,
    pub with_data: usize,
}

/// Queries each window of `query`'s range (`len` long) and merges the `n` busiest; None when no
/// window has CPU. Only the `n` busiest answers so far are held, so memory stays at `n + 1`
/// merged windows whatever the range. `progress` gets (windows done, windows).
pub fn top_windows(
    source: &dyn ProfileSource,
    query: &Query,
    len: Duration,
    n: usize,
    progress: &mut dyn FnMut(usize, usize),
) -> Result<Option<TopWindows>, QueryError> {
    if n == 0 {
        return Err(QueryError::Unsupported(
            "--top-windows must be at least 1".into(),
        ));
    }
    let ranges = windows(query.from, query.to, len)?;
    let mut kept: Vec<(WindowTotal, Merged)> = Vec::new();
    let mut with_data = 0usize;
    for (i, (from, to)) in ranges.iter().enumerate() {
        progress(i, ranges.len());
        let q = Query {
            from: *from,
            to: *to,
            ..query.clone()
        };
        // Adjacent windows share no profile (a profile belongs to the window it is stored
        // in), so the chosen windows merge without counting any profile twice.
        let Some(m) = source.select_merge(&q, &mut |_, _| {})? else {
            continue;
        };
        with_data += 1;
        let total = WindowTotal {
            from: *from,
            to: *to,
            total: total_of(&m.profile, query),
            profiles: m.profiles,
        };
        if total.total <= 0 {
            continue;
        }
        kept.push((total, m));
        if kept.len() > n {
            let totals: Vec<WindowTotal> = kept.iter().map(|(t, _)| t.clone()).collect();
            // Every kept window has CPU, so the ranking holds them all: drop the last.
            if let Some(&worst) = rank(&totals, kept.len()).last() {
                kept.remove(worst);
            }
        }
    }
    progress(ranges.len(), ranges.len());
    if kept.is_empty() {
        return Ok(None);
    }
    let (totals, answers): (Vec<WindowTotal>, Vec<Merged>) = kept.into_iter().unzip();
    let chosen: Vec<WindowTotal> = rank(&totals, n)
        .iter()
        .map(|&i| totals[i].clone())
        .collect();
    let profiles = answers.iter().map(|m| m.profiles).sum();
    let series = answers.iter().map(|m| m.series).max().unwrap_or(0);
    let list: Vec<Profile> = answers.into_iter().map(|m| m.profile).collect();
    let merged = Merged {
        profile: crate::pprof::merge(&list).map_err(|e| QueryError::Merge(e.to_string()))?,
        profiles,
        series,
    };
    Ok(Some(TopWindows {
        merged,
        chosen,
        windows: ranges.len(),
        with_data,
    }))
}

/// The distinct values of a label among the series a query reads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SplitValues {
    /// Sorted.
    pub values: Vec<String>,
    /// Series of the query that do not have the label (left out of every split).
    pub without: usize,
}

/// The values of `label` on the series of `query`'s type its selector selects in its range.
pub fn split_values(
    source: &dyn ProfileSource,
    query: &Query,
    label: &str,
) -> Result<SplitValues, QueryError> {
    let sets = source.series(&query.selector, query.from, query.to)?;
    Ok(values_of(
        sets.iter()
            .filter(|s| has_type(s, &query.profile_type))
            .map(|s| s.as_slice()),
        label,
    ))
}

/// [`SplitValues`] of `label` over label sets.
pub fn values_of<'a>(
    sets: impl Iterator<Item = &'a [(String, String)]>,
    label: &str,
) -> SplitValues {
    let mut values = BTreeSet::new();
    let mut without = 0usize;
    for set in sets {
        match set.iter().find(|(k, v)| k == label && !v.is_empty()) {
            Some((_, v)) => {
                values.insert(v.clone());
            }
            None => without += 1,
        }
    }
    SplitValues {
        values: values.into_iter().collect(),
        without,
    }
}

/// `query` narrowed to the series whose `label` is `value`.
pub fn with_label(query: &Query, label: &str, value: &str) -> Result<Query, QueryError> {
    let matcher = Matcher::new(label, MatchOp::Eq, value).map_err(QueryError::Unsupported)?;
    let mut q = query.clone();
    q.selector.matchers.push(matcher);
    Ok(q)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs)
    }

    #[test]
    fn ranges_are_cut_into_windows() {
        /// From, to, window length (seconds), and the windows.
        type Case = (u64, u64, u64, &'static [(u64, u64)]);
        let cases: &[Case] = &[
            (0, 900, 300, &[(0, 300), (300, 600), (600, 900)]),
            // The 100 s remainder joins the window before it.
            (0, 700, 300, &[(0, 300), (300, 700)]),
            (0, 899, 300, &[(0, 300), (300, 899)]),
            (0, 100, 300, &[(0, 100)]),
            (0, 400, 300, &[(0, 400)]),
            (50, 50, 300, &[]),
        ];
        for (from, to, len, want) in cases {
            let got = windows(at(*from), at(*to), Duration::from_secs(*len)).expect("windows");
            let want: Vec<(SystemTime, SystemTime)> =
                want.iter().map(|(a, b)| (at(*a), at(*b))).collect();
            assert_eq!(got, want, "{from}..{to} by {len}");
        }
        assert!(windows(at(0), at(10), Duration::ZERO).is_err());
        assert!(windows(at(10), at(0), Duration::from_secs(1)).is_err());
        assert!(windows(at(0), at(100_000), Duration::from_secs(1)).is_err());
        // A window longer than time itself is the whole range, not a panic.
        assert_eq!(
            windows(at(0), at(100), Duration::MAX).expect("huge"),
            vec![(at(0), at(100))]
        );
    }

    #[test]
    fn windows_rank_by_cpu_per_second() {
        let w = |from: u64, to: u64, total: i64| WindowTotal {
            from: at(from),
            to: at(to),
            total,
            profiles: 1,
        };
        let cases: Vec<(Vec<WindowTotal>, usize, Vec<usize>)> = vec![
            (
                vec![w(0, 300, 10), w(300, 600, 30), w(600, 900, 20)],
                2,
                vec![1, 2],
            ),
            // More asked for than there are: all, busiest first.
            (vec![w(0, 300, 10), w(300, 600, 30)], 5, vec![1, 0]),
            // Ties: the earlier window first.
            (
                vec![w(0, 300, 20), w(300, 600, 20), w(600, 900, 5)],
                1,
                vec![0],
            ),
            // A last window that took in the remainder ranks by its rate: 30 in 300 s beats
            // 36 in 400 s.
            (vec![w(0, 300, 30), w(300, 700, 36)], 1, vec![0]),
            // Windows without CPU are never chosen.
            (vec![w(0, 300, 0), w(300, 600, 0)], 2, vec![]),
            (vec![], 3, vec![]),
        ];
        for (windows, n, want) in cases {
            assert_eq!(rank(&windows, n), want, "{windows:?} top {n}");
        }
    }

    #[test]
    fn split_values_are_the_distinct_values_of_the_label() {
        let set = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let sets = [
            set(&[("service_name", "lb"), ("workload", "l1")]),
            set(&[("service_name", "lb"), ("workload", "l2")]),
            set(&[("service_name", "lb2"), ("workload", "l1")]),
            set(&[("service_name", "lb")]),
            set(&[("service_name", "lb"), ("workload", "")]),
        ];
        let cases: &[(&str, &[&str], usize)] = &[
            ("workload", &["l1", "l2"], 2),
            ("service_name", &["lb", "lb2"], 0),
            ("pod", &[], 5),
        ];
        for (label, values, without) in cases {
            let got = values_of(sets.iter().map(|s| s.as_slice()), label);
            assert_eq!(got.values, *values, "{label}");
            assert_eq!(got.without, *without, "{label}");
        }
    }

    #[test]
    fn a_split_narrows_the_selector() {
        let query = Query {
            selector: crate::query::selector::Selector::parse(r#"{service_name="lb"}"#)
                .expect("selector"),
            profile_type: crate::query::source::ProfileType::parse("process_cpu").expect("type"),
            from: at(0),
            to: at(10),
            exclude_straddling: false,
        };
        let q = with_label(&query, "workload", "l1").expect("narrowed");
        let pairs = |w: &str| {
            vec![
                ("service_name".to_string(), "lb".to_string()),
                ("workload".to_string(), w.to_string()),
            ]
        };
        assert!(q.selector.matches_pairs(&pairs("l1")));
        assert!(!q.selector.matches_pairs(&pairs("l2")));
        assert_eq!(q.from, query.from);
    }
}
