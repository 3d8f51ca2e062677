//! `scraper diff --format json`: the report as a stable document for pipelines, described by
//! `docs/diff-report.schema.json` (JSON Schema draft 2020-12; docs/DIFF-PIPELINE.md explains it).
//!
//! The document has its own types rather than serialising [`Report`]: its field names are a
//! promise to scripts, independent of the library's. Numbers that are not finite (which JSON
//! cannot hold) are written as null.

use serde::Serialize;

use super::fail_on::{Basis, Evaluation, Trigger, verdict_name};
use super::units::Measure;
use super::{Change, Report, Statistics, Summary};

/// Bumped when a field changes meaning or disappears; new fields do not bump it.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Serialize)]
struct Document<'a> {
    schema_version: u32,
    title: &'a str,
    sample_type: &'a str,
    unit: &'a str,
    measure: &'static str,
    measure_description: &'static str,
    before: Window<'a>,
    after: Window<'a>,
    total: Value,
    statistics: Option<StatisticsJson<'a>>,
    functions: usize,
    rows: Vec<RowJson<'a>>,
    fail_on: FailOn<'a>,
    exit_code: u8,
}

#[derive(Serialize)]
struct Window<'a> {
    label: &'a str,
    seconds: Option<f64>,
    instances: usize,
    profiles: usize,
    samples: usize,
    total: Option<f64>,
    normalised: Option<f64>,
}

#[derive(Serialize)]
struct Value {
    before: Option<f64>,
    after: Option<f64>,
    change_pct: Option<f64>,
    stats: Option<ChangeJson>,
}

#[derive(Serialize)]
struct ChangeJson {
    delta: Option<f64>,
    interval: [Option<f64>; 2],
    pct: Option<f64>,
    pct_interval: Option<[Option<f64>; 2]>,
    p_value: Option<f64>,
    verdict: &'static str,
}

#[derive(Serialize)]
struct StatisticsJson<'a> {
    method: &'a str,
    confidence: Option<f64>,
    before_parts: usize,
    after_parts: usize,
    noise_floor_pct: Option<f64>,
    min_change_pct: Option<f64>,
    tested: usize,
}

#[derive(Serialize)]
struct RowJson<'a> {
    function: &'a str,
    flat: Value,
    cum: Value,
}

#[derive(Serialize)]
struct FailOn<'a> {
    basis: &'static str,
    held: bool,
    conditions: Vec<ConditionJson<'a>>,
}

#[derive(Serialize)]
struct ConditionJson<'a> {
    condition: &'a str,
    held: bool,
    triggers: Vec<TriggerJson<'a>>,
}

#[derive(Serialize)]
struct TriggerJson<'a> {
    function: Option<&'a str>,
    value: &'static str,
    before: Option<f64>,
    after: Option<f64>,
    change_pct: Option<f64>,
    pct_interval: Option<[Option<f64>; 2]>,
    verdict: Option<&'static str>,
}

fn num(v: f64) -> Option<f64> {
    v.is_finite().then_some(v)
}

fn pair((lo, hi): (f64, f64)) -> [Option<f64>; 2] {
    [num(lo), num(hi)]
}

fn change(c: &Change) -> ChangeJson {
    ChangeJson {
        delta: num(c.delta),
        interval: pair(c.interval),
        pct: c.pct.and_then(num),
        pct_interval: c.pct_interval.map(pair),
        p_value: num(c.p_value),
        verdict: verdict_name(c.verdict),
    }
}

fn value(before: f64, after: f64, pct: Option<f64>, stats: Option<&Change>) -> Value {
    Value {
        before: num(before),
        after: num(after),
        change_pct: pct.and_then(num),
        stats: stats.map(change),
    }
}

fn window(s: &Summary) -> Window<'_> {
    Window {
        label: &s.label,
        seconds: num(s.seconds),
        instances: s.instances,
        profiles: s.profiles,
        samples: s.samples,
        total: num(s.total),
        normalised: num(s.normalised),
    }
}

fn statistics(s: &Statistics) -> StatisticsJson<'_> {
    StatisticsJson {
        method: &s.method,
        confidence: num(s.confidence),
        before_parts: s.before_parts,
        after_parts: s.after_parts,
        noise_floor_pct: num(s.noise_floor_pct),
        min_change_pct: num(s.min_change_pct),
        tested: s.tested,
    }
}

fn trigger(t: &Trigger) -> TriggerJson<'_> {
    TriggerJson {
        function: t.function.as_deref(),
        value: t.value,
        before: num(t.before),
        after: num(t.after),
        change_pct: t.pct.and_then(num),
        pct_interval: t.pct_interval.map(pair),
        verdict: t.verdict.map(verdict_name),
    }
}

/// The measure's name in the document.
pub(super) fn measure_name(m: Measure) -> &'static str {
    match m {
        Measure::PerSecond => "per_second",
        Measure::Average => "average",
        Measure::SumPerInstance => "sum_per_instance",
    }
}

pub(super) fn basis_name(b: Basis) -> &'static str {
    match b {
        Basis::Statistics => "statistics",
        Basis::Estimates => "estimates",
        Basis::NotEvaluated => "not_evaluated",
    }
}

/// The document, pretty-printed, with a final newline; `top` rows (0 = all).
pub(super) fn render(r: &Report, title: &str, top: usize, e: &Evaluation) -> String {
    let shown = if top == 0 {
        r.rows.len()
    } else {
        top.min(r.rows.len())
    };
    let (before, after) = (r.before.normalised, r.after.normalised);
    let doc = Document {
        schema_version: SCHEMA_VERSION,
        title,
        sample_type: &r.sample_type,
        unit: &r.unit,
        measure: measure_name(r.measure),
        measure_description: r.measure.describe(),
        before: window(&r.before),
        after: window(&r.after),
        total: value(
            before,
            after,
            (before != 0.0).then(|| (after - before) / before * 100.0),
            r.total_stats.as_ref(),
        ),
        statistics: r.statistics.as_ref().map(statistics),
        functions: r.rows.len(),
        rows: r.rows[..shown]
            .iter()
            .map(|row| RowJson {
                function: &row.function,
                flat: value(
                    row.flat_before,
                    row.flat_after,
                    row.flat_change_pct,
                    row.flat_stats.as_ref(),
                ),
                cum: value(
                    row.cum_before,
                    row.cum_after,
                    row.cum_change_pct,
                    row.cum_stats.as_ref(),
                ),
            })
            .collect(),
        fail_on: FailOn {
            basis: basis_name(e.basis),
            held: e.held(),
            conditions: e
                .outcomes
                .iter()
                .map(|o| ConditionJson {
                    condition: &o.condition,
                    held: o.held,
                    triggers: o.triggers.iter().map(trigger).collect(),
                })
                .collect(),
        },
        exit_code: if e.held() { 3 } else { 0 },
    };
    // Serialising these plain structs cannot fail (string keys, no maps, no custom code).
    let mut out = serde_json::to_string_pretty(&doc).unwrap_or_default();
    out.push('\n');
    out
}

#[cfg(test)]
#[path = "json_tests.rs"]
mod tests;
