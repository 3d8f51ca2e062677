//! Whether a PGO profile is worth building with: `scraper pgo` refuses (or, with
//! `--allow-empty`, replaces with [`empty_pgo`]) a profile that is empty or says too little
//! about the program's hot calls.

use super::error::Result;
use super::pgo_edges::{EdgeGraph, GO_HOT_CDF_PERCENT};
use super::pgo_trim::TrimSummary;
use super::proto::{Profile, ValueType};

/// The least a profile must hold.
#[derive(Clone, Debug, PartialEq)]
pub struct Thresholds {
    /// CPU time in the profile, nanoseconds.
    pub min_cpu_nanos: i64,
    /// Share (0..=1) of the call-edge weight a trim must keep.
    pub min_kept_share: f64,
}

/// Why a profile is not used.
#[derive(Clone, Debug, PartialEq)]
pub enum Problem {
    /// Nothing was sampled.
    NoSamples,
    /// Samples, but no call edge (every stack one frame deep): Go would ignore the profile.
    NoEdges,
    /// Less CPU than the threshold: too few samples to tell hot calls from chance.
    TooLittleCpu { cpu_nanos: i64, min_nanos: i64 },
    /// The budget cut away most of the call-edge weight.
    TrimmedAway { kept_share: f64, min_share: f64 },
}

impl Problem {
    /// Empty (nothing Go could use) rather than unrepresentative (something, but too little).
    pub fn is_empty(&self) -> bool {
        matches!(self, Problem::NoSamples | Problem::NoEdges)
    }
}

fn seconds(nanos: i64) -> String {
    format!("{:.1}s", nanos as f64 / 1e9)
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Problem::NoSamples => write!(f, "empty: no CPU samples"),
            Problem::NoEdges => write!(
                f,
                "empty: no call edges (every stack is one frame deep), Go would ignore it"
            ),
            Problem::TooLittleCpu {
                cpu_nanos,
                min_nanos,
            } => write!(
                f,
                "unrepresentative: {} of CPU, less than --min-cpu {}: too few samples to tell hot calls from chance",
                seconds(*cpu_nanos),
                seconds(*min_nanos)
            ),
            Problem::TrimmedAway {
                kept_share,
                min_share,
            } => write!(
                f,
                "unrepresentative: the budget kept {:.1}% of the call-edge weight, less than --min-kept {:.0}%",
                kept_share * 100.0,
                min_share * 100.0
            ),
        }
    }
}

/// What a profile holds, and its problem if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Assessment {
    /// CPU time it stands for, when its sample type says (`cpu/nanoseconds`, or
    /// `samples/count` with a CPU period).
    pub cpu_nanos: Option<i64>,
    /// Call edges, the hot ones among them, and their total weight.
    pub edges: usize,
    pub hot_edges: usize,
    pub edge_weight: i64,
    /// Whether some function has a start line. Go (1.21 to 1.23) refuses a profile without
    /// any, but only a program built with Go older than 1.20 writes such profiles: that is a
    /// warning here, not a refusal, and `go build` says the same.
    pub start_lines: bool,
    pub problem: Option<Problem>,
}

fn string(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

fn type_of<'a>(p: &'a Profile, t: &ValueType) -> (&'a str, &'a str) {
    (string(p, t.r#type), string(p, t.unit))
}

/// CPU nanoseconds in `p`'s first sample type: a sum of `cpu/nanoseconds`, or `samples/count`
/// times a `cpu/nanoseconds` period; None for anything else.
pub fn cpu_nanos(p: &Profile) -> Option<i64> {
    let first = p.sample_type.first()?;
    let sum = p
        .sample
        .iter()
        .filter_map(|s| s.value.first())
        .fold(0i64, |acc, v| acc.saturating_add(*v));
    match type_of(p, first) {
        ("cpu", "nanoseconds") => Some(sum),
        ("samples", "count") => match &p.period_type {
            Some(pt) if type_of(p, pt) == ("cpu", "nanoseconds") => {
                Some(sum.saturating_mul(p.period))
            }
            _ => None,
        },
        _ => None,
    }
}

/// Assesses `p`, the profile before any budget, against `t`; a trim (which `trim` describes)
/// is judged only by the share of the call-edge weight it kept, so that a budget that cut
/// everything away says so rather than calling the data empty.
pub fn assess(p: &Profile, trim: Option<&TrimSummary>, t: &Thresholds) -> Result<Assessment> {
    let graph = EdgeGraph::from_profile(p)?;
    let cpu = cpu_nanos(p);
    let has_weight = p.sample.iter().any(|s| s.value.iter().any(|v| *v != 0));
    let problem = if !has_weight {
        Some(Problem::NoSamples)
    } else if graph.total <= 0 {
        Some(Problem::NoEdges)
    } else if let Some(c) = cpu.filter(|c| *c < t.min_cpu_nanos) {
        Some(Problem::TooLittleCpu {
            cpu_nanos: c,
            min_nanos: t.min_cpu_nanos,
        })
    } else {
        trim.map(TrimSummary::kept_share)
            .filter(|share| *share < t.min_kept_share)
            .map(|kept_share| Problem::TrimmedAway {
                kept_share,
                min_share: t.min_kept_share,
            })
    };
    Ok(Assessment {
        cpu_nanos: cpu,
        edges: graph.weights.len(),
        hot_edges: graph.hot(GO_HOT_CDF_PERCENT).len(),
        edge_weight: graph.total,
        start_lines: graph.has_start_lines,
        problem,
    })
}

/// A valid CPU profile without samples: what `--allow-empty` writes instead of a profile it
/// refuses. Go builds with it as without a profile ("accept but ignore profile with no
/// samples"), and `-pgo=auto` and an explicit `-pgo=FILE` both find a file. It has no time
/// stamp, so every empty profile has the same bytes (and Go's build cache keeps its builds).
pub fn empty_pgo() -> Profile {
    let cpu = ValueType { r#type: 1, unit: 2 };
    Profile {
        sample_type: vec![cpu],
        string_table: vec![String::new(), "cpu".into(), "nanoseconds".into()],
        period_type: Some(cpu),
        period: 1_000_000_000,
        default_sample_type: 1,
        ..Profile::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pprof::testutil::B;

    const SECOND: i64 = 1_000_000_000;

    fn thresholds() -> Thresholds {
        Thresholds {
            min_cpu_nanos: SECOND,
            min_kept_share: 0.5,
        }
    }

    #[test]
    fn problems_in_order_of_precedence() {
        let two = |v: i64| {
            B::new(&[("cpu", "nanoseconds")]).frames(&[&[("leaf", 11)], &[("main", 40)]], &[v], &[])
        };
        let trimmed = |after: i64| TrimSummary {
            edges_before: 4,
            edges_after: 2,
            weight_before: 100,
            weight_after: after,
        };
        let mut no_start = two(2 * SECOND).build();
        for f in &mut no_start.function {
            f.start_line = 0;
        }
        let cases: Vec<(&str, Profile, Option<TrimSummary>, Option<Problem>)> = vec![
            ("fine", two(2 * SECOND).build(), None, None),
            ("empty", empty_pgo(), None, Some(Problem::NoSamples)),
            (
                "zero values",
                two(0).build(),
                None,
                Some(Problem::NoSamples),
            ),
            (
                "one-frame stacks only",
                B::new(&[("cpu", "nanoseconds")])
                    .frames(&[&[("leaf", 11)]], &[5 * SECOND], &[])
                    .build(),
                None,
                Some(Problem::NoEdges),
            ),
            (
                "no start lines: a warning only",
                no_start.clone(),
                None,
                None,
            ),
            (
                "too little CPU",
                two(SECOND / 2).build(),
                None,
                Some(Problem::TooLittleCpu {
                    cpu_nanos: SECOND / 2,
                    min_nanos: SECOND,
                }),
            ),
            (
                "trimmed to 40 %",
                two(2 * SECOND).build(),
                Some(trimmed(40)),
                Some(Problem::TrimmedAway {
                    kept_share: 0.4,
                    min_share: 0.5,
                }),
            ),
            (
                "trimmed to nothing: trimmed away, not empty",
                two(2 * SECOND).build(),
                Some(trimmed(0)),
                Some(Problem::TrimmedAway {
                    kept_share: 0.0,
                    min_share: 0.5,
                }),
            ),
            (
                "trimmed to 50 %",
                two(2 * SECOND).build(),
                Some(trimmed(50)),
                None,
            ),
        ];
        assert!(
            !assess(&no_start, None, &thresholds())
                .expect("assess")
                .start_lines
        );
        for (name, p, trim, want) in cases {
            let got = assess(&p, trim.as_ref(), &thresholds()).expect(name);
            assert_eq!(got.problem, want, "{name}");
            if let Some(problem) = &got.problem {
                let text = problem.to_string();
                let kind = if problem.is_empty() { "empty" } else { "un" };
                assert!(text.starts_with(kind), "{name}: {text}");
            }
        }
    }

    #[test]
    fn cpu_time_from_the_sample_type() {
        let cases: Vec<(&str, Profile, Option<i64>)> = vec![
            (
                "cpu",
                B::new(&[("cpu", "nanoseconds")])
                    .sample(&["a"], &[7])
                    .build(),
                Some(7),
            ),
            (
                "samples at a cpu period",
                B::new(&[("samples", "count")])
                    .period_type("cpu", "nanoseconds", 10_000_000)
                    .sample(&["a"], &[3])
                    .build(),
                Some(30_000_000),
            ),
            (
                "samples without a cpu period",
                B::new(&[("samples", "count")])
                    .period_type("wall", "nanoseconds", 10)
                    .sample(&["a"], &[3])
                    .build(),
                None,
            ),
            ("empty", empty_pgo(), Some(0)),
        ];
        for (name, p, want) in cases {
            assert_eq!(cpu_nanos(&p), want, "{name}");
        }
    }

    #[test]
    fn the_empty_profile_is_valid_and_stable() {
        let p = empty_pgo();
        crate::pprof::validate(&p).expect("valid");
        let bytes = crate::pprof::encode(&p, crate::pprof::DEFAULT_LEVEL);
        assert_eq!(
            bytes,
            crate::pprof::encode(&empty_pgo(), crate::pprof::DEFAULT_LEVEL)
        );
        assert_eq!(crate::pprof::testutil::decode(&bytes), p);
    }
}
