//! `GET /api/v0/explore/timeline?type=ID&query=SEL&from=MS&to=MS&step=SECONDS`: one value per
//! step with data, normalised as `scraper diff` normalises ([`crate::diff::Measure`]), and the
//! marks of the range.
//!
//! Steps are aligned on multiples of the step since the Unix epoch (not on `from`), so that
//! the same profile lands in the same step whatever range is asked for; a profile counts in
//! the step holding the time it was stored under.

use std::collections::{BTreeMap, HashMap};

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use serde::Serialize;

use super::error::ApiError;
use super::marks::MarkJson;
use super::params::{Params, millis};
use super::stores;
use crate::diff::is_snapshot;
use crate::query::source::ProfileSource as _;
use crate::server::AppState;

/// Steps a default step aims at: about one per pixel column of a wide chart.
const DEFAULT_POINTS: u64 = 600;
/// The smallest default step: the usual scrape interval, finer steps would be mostly empty.
const MIN_DEFAULT_STEP: u64 = 15;
/// The most steps a request may ask for: beyond it a step is far below a pixel.
const MAX_POINTS: u64 = 11_000;

/// How a step's profiles become its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Measure {
    /// What accumulates (CPU time, allocations, contentions): the step's sum over its length.
    PerSecond,
    /// A state (in-use memory, goroutines): each instance's average snapshot, summed.
    Average,
}

impl Measure {
    pub fn of(sample_type: &str) -> Measure {
        if is_snapshot(sample_type) {
            Measure::Average
        } else {
            Measure::PerSecond
        }
    }
}

/// Profiles' totals gathered per step and per series.
#[derive(Debug)]
pub(super) struct Buckets<K> {
    step_ms: u64,
    /// Step start (ms) → series → (sum, profiles).
    steps: BTreeMap<u64, HashMap<K, (f64, u64)>>,
}

impl<K: std::hash::Hash + Eq> Buckets<K> {
    pub fn new(step_seconds: u64) -> Buckets<K> {
        Buckets {
            step_ms: step_seconds.saturating_mul(1000).max(1),
            steps: BTreeMap::new(),
        }
    }

    /// A profile of series `key` stored at `at_ms` whose values sum to `total`.
    pub fn add(&mut self, key: K, at_ms: u64, total: i64) {
        let start = at_ms - at_ms % self.step_ms;
        let entry = self.steps.entry(start).or_default().entry(key).or_default();
        entry.0 += total as f64;
        entry.1 += 1;
    }

    /// `[step start ms, value]` for every step with data, ascending.
    pub fn points(&self, measure: Measure) -> Vec<(u64, f64)> {
        let seconds = self.step_ms as f64 / 1000.0;
        self.steps
            .iter()
            .map(|(&start, series)| {
                let value = match measure {
                    Measure::PerSecond => {
                        series.values().map(|(sum, _)| sum).sum::<f64>() / seconds
                    }
                    Measure::Average => series
                        .values()
                        .map(|&(sum, n)| sum / n.max(1) as f64)
                        .sum::<f64>(),
                };
                (start, value)
            })
            .collect()
    }
}

#[derive(Debug, Serialize)]
pub(super) struct Timeline {
    unit: String,
    measure: Measure,
    step: u64,
    points: Vec<(u64, f64)>,
    marks: Vec<MarkJson>,
}

/// The step: the one asked for, bounded to [`MAX_POINTS`] steps in the range, or one that
/// gives about [`DEFAULT_POINTS`].
fn step(params: &Params, range_ms: u64) -> Result<u64, ApiError> {
    let range_secs = range_ms.div_ceil(1000);
    let default = range_secs.div_ceil(DEFAULT_POINTS).max(MIN_DEFAULT_STEP);
    let step = params.seconds("step", default)?;
    if range_secs / step > MAX_POINTS {
        return Err(ApiError::bad_request(format!(
            "step {step} is too small for the range: at most {MAX_POINTS} steps, so at least {}",
            range_secs.div_ceil(MAX_POINTS)
        )));
    }
    Ok(step)
}

pub(super) async fn timeline(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Timeline>, ApiError> {
    let params = Params::from_request(query)?;
    let q = params.query("", None)?;
    let step = step(&params, millis(q.to).saturating_sub(millis(q.from)))?;
    let (sample_type, unit) = q.profile_type.sample_type();
    let measure = Measure::of(&sample_type);
    stores::read("server.explore.timeline", &state.stores, move |s| {
        let mut buckets = Buckets::new(step);
        for p in s.totals(&q)? {
            // By series number, not labels: each store's copy of a series is an instance.
            buckets.add(p.series, millis(p.at), p.total);
        }
        let marks = s.marks(q.from, q.to)?.iter().map(MarkJson::from).collect();
        Ok(Timeline {
            unit,
            measure,
            step,
            points: buckets.points(measure),
            marks,
        })
    })
    .await
    .map(Json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_are_epoch_aligned_and_normalised_by_measure() {
        // Two instances, 15 s steps from `base` (a multiple of 15 s): a at 0 s and 14.999 s
        // (one step), b at 0.5 s and 15 s, a again at 31 s.
        let base = 1_749_999_990_000u64;
        let mut b = Buckets::new(15);
        for (key, at, total) in [
            ("a", base, 30),
            ("a", base + 14_999, 60),
            ("b", base + 500, 90),
            ("b", base + 15_000, 150),
            ("a", base + 31_000, 15),
        ] {
            b.add(key, at, total);
        }
        assert_eq!(
            b.points(Measure::PerSecond),
            [
                (base, (30.0 + 60.0 + 90.0) / 15.0),
                (base + 15_000, 150.0 / 15.0),
                (base + 30_000, 15.0 / 15.0),
            ]
        );
        // Averages per instance, summed: a's two snapshots average 45, b's one is 90.
        assert_eq!(
            b.points(Measure::Average),
            [
                (base, 45.0 + 90.0),
                (base + 15_000, 150.0),
                (base + 30_000, 15.0),
            ]
        );
        // 7 s steps start at multiples of 7 s since the epoch, whatever the range.
        let mut b = Buckets::new(7);
        b.add((), 1_750_000_003_000, 7);
        assert_eq!(b.points(Measure::PerSecond), [(1_750_000_000_000, 1.0)]);
        assert!(Buckets::<()>::new(15).points(Measure::Average).is_empty());
    }

    #[test]
    fn measures_follow_the_sample_type() {
        let cases = [
            ("cpu", Measure::PerSecond),
            ("alloc_space", Measure::PerSecond),
            ("contentions", Measure::PerSecond),
            ("delay", Measure::PerSecond),
            ("inuse_space", Measure::Average),
            ("inuse_objects", Measure::Average),
            ("goroutine", Measure::Average),
        ];
        for (ty, want) in cases {
            assert_eq!(Measure::of(ty), want, "{ty}");
        }
        assert_eq!(
            serde_json::to_value(Measure::PerSecond).expect("json"),
            "per_second"
        );
    }

    #[test]
    fn default_and_bounded_steps() {
        let hour = 3_600_000;
        type Case<'a> = (&'a [(&'a str, &'a str)], u64, Result<u64, &'a str>);
        let cases: &[Case] = &[
            (&[], hour, Ok(15)),
            (&[], 7 * 24 * hour, Ok(1008)),
            (&[("step", "60")], hour, Ok(60)),
            (&[("step", "1")], hour, Ok(1)),
            (&[("step", "1")], 24 * hour, Err("at least 8")),
            (&[("step", "x")], hour, Err("invalid step")),
        ];
        for (pairs, range, want) in cases {
            let got = step(&Params::of(pairs), *range).map_err(|e| e.message);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(*w, g, "{pairs:?}"),
                (Err(w), Err(g)) => assert!(g.contains(w), "{pairs:?}: {g}"),
                (w, g) => panic!("{pairs:?}: want {w:?}, got {g:?}"),
            }
        }
    }
}
