//! `--fail-on` conditions: what makes a pipeline step fail after a diff (docs/DIFF-PIPELINE.md).
//!
//! ```text
//! CONDITION = SUBJECT ">" NUMBER "%"
//! SUBJECT   = "total" | ("function" | "flat" | "cum") "=~" REGEX
//! ```
//!
//! `total>5%` holds when the whole profile's value per instance increased by more than 5 % with
//! confidence: the verdict is [`Verdict::Increase`] and the low end of the percentage's
//! confidence interval is above 5. `function=~RE>10%` holds when any function whose name
//! matches RE (Go/RE2 syntax, unanchored like Go's `regexp.MatchString` and pprof's `-focus`)
//! increased by more than 10 % in its flat or its cum value; `flat=~` and `cum=~` look at one of
//! the two. A value that was 0 before and grew with confidence has no percentage: it counts as
//! more than any threshold. The regex runs from `=~` to the last `>`, so it may itself contain
//! `>`; nothing is trimmed.

use super::{Change, Report, Verdict};
use crate::relabel::GoRegex;

/// One parsed `--fail-on` condition.
#[derive(Clone, Debug)]
pub struct Condition {
    /// As the user wrote it, for reports.
    pub text: String,
    subject: Subject,
    /// In percent.
    threshold: f64,
}

#[derive(Clone, Debug)]
enum Subject {
    Total,
    Functions {
        regex: std::sync::Arc<GoRegex>,
        values: Values,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Values {
    Flat,
    Cum,
    Either,
}

/// Why a condition does not parse: `column` (1-based, in characters) points at the problem.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{text:?}: column {column}: {message}\n  {text}\n  {caret}^", caret = " ".repeat(column.saturating_sub(1)))]
pub struct ParseError {
    pub text: String,
    pub column: usize,
    pub message: String,
}

/// Why conditions could not be evaluated.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum EvaluateError {
    #[error(
        "--fail-on needs statistics, and this report has none (the windows were compared as one merged profile each); pass --missing-statistics estimates to judge the point estimates without confidence, or skip to pass"
    )]
    NoStatistics,
}

/// What to do when the report carries no statistics (the windows had no parts to test).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingStatistics {
    /// The conditions cannot be evaluated: an error (exit code 1).
    #[default]
    Error,
    /// Judge the point estimates (the plain percentage change), without confidence.
    Estimates,
    /// Do not evaluate the conditions; none holds.
    Skip,
}

/// What the conditions were judged on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Basis {
    /// The verdicts and confidence intervals.
    Statistics,
    /// The point estimates, because the report has no statistics.
    Estimates,
    /// Not evaluated (no statistics and [`MissingStatistics::Skip`], or no conditions).
    NotEvaluated,
}

/// The result of all conditions.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    pub basis: Basis,
    pub outcomes: Vec<Outcome>,
}

impl Evaluation {
    /// True when any condition held: the verdict that fails the step.
    pub fn held(&self) -> bool {
        self.outcomes.iter().any(|o| o.held)
    }
}

/// One condition's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub condition: String,
    pub held: bool,
    /// The values that made it hold (empty when it did not).
    pub triggers: Vec<Trigger>,
}

/// A value that made a condition hold. Values are normalised as the report's.
#[derive(Clone, Debug, PartialEq)]
pub struct Trigger {
    /// The function, or None for the total.
    pub function: Option<String>,
    /// "total", "flat" or "cum".
    pub value: &'static str,
    pub before: f64,
    pub after: f64,
    /// The estimated change in percent; None when before was 0.
    pub pct: Option<f64>,
    /// Its confidence interval (None without statistics, or when before was 0).
    pub pct_interval: Option<(f64, f64)>,
    pub verdict: Option<Verdict>,
}

impl Trigger {
    /// "+42.0% (interval +30.1% .. +55.2%, increase)".
    pub fn change_text(&self) -> String {
        let pct = match self.pct {
            Some(p) => format!("{p:+.1}%"),
            None => "new (0 before)".to_string(),
        };
        match (self.pct_interval, self.verdict) {
            (Some((lo, hi)), Some(v)) => {
                format!(
                    "{pct} (interval {lo:+.1}% .. {hi:+.1}%, {})",
                    verdict_name(v)
                )
            }
            (None, Some(v)) => format!("{pct} ({})", verdict_name(v)),
            _ => format!("{pct} (point estimate, no statistics)"),
        }
    }
}

impl std::fmt::Display for Trigger {
    /// "main.beta flat +42.0% (interval +30.1% .. +55.2%, increase)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.function {
            Some(name) => write!(f, "{name} {} {}", self.value, self.change_text()),
            None => write!(f, "total {}", self.change_text()),
        }
    }
}

/// The verdict as the JSON document and the markdown table spell it.
pub fn verdict_name(v: Verdict) -> &'static str {
    match v {
        Verdict::Increase => "increase",
        Verdict::Decrease => "decrease",
        Verdict::NoChange => "no_change",
        Verdict::BelowNoiseFloor => "below_noise_floor",
    }
}

impl Condition {
    /// Parses one condition (the grammar is in the module docs).
    pub fn parse(text: &str) -> Result<Condition, ParseError> {
        let err = |column: usize, message: String| ParseError {
            text: text.to_string(),
            column,
            message,
        };
        let Some(gt) = text.rfind('>') else {
            return Err(err(
                text.chars().count() + 1,
                "expected '>' and a threshold such as 5% (e.g. total>5% or function=~^main\\.>10%)"
                    .into(),
            ));
        };
        let threshold_col = text[..gt].chars().count() + 2;
        let threshold = parse_percent(&text[gt + 1..]).map_err(|m| err(threshold_col, m))?;
        let left = &text[..gt];
        let subject = if left == "total" {
            Subject::Total
        } else if let Some((key, pattern)) = left.split_once("=~") {
            let values = match key {
                "function" => Values::Either,
                "flat" => Values::Flat,
                "cum" => Values::Cum,
                _ => {
                    return Err(err(
                        1,
                        format!(
                            "unknown subject {key:?}: expected total, function=~, flat=~ or cum=~"
                        ),
                    ));
                }
            };
            let regex_col = key.chars().count() + 3;
            if pattern.is_empty() {
                return Err(err(regex_col, "expected a regex after =~".into()));
            }
            // Compiled alone first: its errors then name the user's pattern, and a pattern
            // that compiles alone has balanced parentheses, so wrapping it keeps its meaning.
            GoRegex::new(pattern).map_err(|e| err(regex_col, regex_error(&e)))?;
            let regex = GoRegex::new(&format!(".*(?:{pattern}).*"))
                .map_err(|e| err(regex_col, e.to_string()))?;
            Subject::Functions {
                regex: std::sync::Arc::new(regex),
                values,
            }
        } else {
            return Err(err(
                1,
                format!(
                    "unknown subject {left:?}: expected total, function=~REGEX, flat=~REGEX or cum=~REGEX"
                ),
            ));
        };
        Ok(Condition {
            text: text.to_string(),
            subject,
            threshold,
        })
    }
}

/// Go's wording of a compile error, about the user's pattern rather than the anchored form the
/// relabel engine compiles.
fn regex_error(e: &crate::relabel::RegexError) -> String {
    let expr = e
        .expr
        .strip_prefix("^(?s:")
        .and_then(|x| x.strip_suffix(")$"))
        .unwrap_or(&e.expr);
    format!("error parsing regexp: {}: `{expr}`", e.code)
}

/// "5%", "2.5%": a finite, non-negative percentage.
fn parse_percent(s: &str) -> Result<f64, String> {
    let Some(number) = s.strip_suffix('%') else {
        return Err(format!(
            "expected a percentage such as 5%, found {s:?} (the '%' is required)"
        ));
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 && !number.starts_with('+') => Ok(v),
        Ok(_) => Err(format!(
            "the threshold must be a non-negative number of percent, found {number:?}"
        )),
        Err(_) => Err(format!("expected a number before '%', found {number:?}")),
    }
}

/// Evaluates `conditions` on `report`; see [`MissingStatistics`] for a report without statistics.
pub fn evaluate(
    report: &Report,
    conditions: &[Condition],
    missing: MissingStatistics,
) -> Result<Evaluation, EvaluateError> {
    let basis = if conditions.is_empty() {
        Basis::NotEvaluated
    } else if report.statistics.is_some() {
        Basis::Statistics
    } else {
        match missing {
            MissingStatistics::Error => return Err(EvaluateError::NoStatistics),
            MissingStatistics::Estimates => Basis::Estimates,
            MissingStatistics::Skip => Basis::NotEvaluated,
        }
    };
    let outcomes = conditions
        .iter()
        .map(|c| {
            let triggers = if basis == Basis::NotEvaluated {
                Vec::new()
            } else {
                triggers(report, c, basis)
            };
            Outcome {
                condition: c.text.clone(),
                held: !triggers.is_empty(),
                triggers,
            }
        })
        .collect();
    Ok(Evaluation { basis, outcomes })
}

fn triggers(report: &Report, c: &Condition, basis: Basis) -> Vec<Trigger> {
    let mut out = Vec::new();
    match &c.subject {
        Subject::Total => {
            let (before, after) = (report.before.normalised, report.after.normalised);
            let value = Value {
                before,
                after,
                pct: pct(before, after),
                stats: report.total_stats.as_ref(),
            };
            out.extend(value.trigger(None, "total", c.threshold, basis));
        }
        Subject::Functions { regex, values } => {
            for row in report.rows.iter().filter(|r| regex.is_match(&r.function)) {
                let flat = Value {
                    before: row.flat_before,
                    after: row.flat_after,
                    pct: row.flat_change_pct,
                    stats: row.flat_stats.as_ref(),
                };
                let cum = Value {
                    before: row.cum_before,
                    after: row.cum_after,
                    pct: row.cum_change_pct,
                    stats: row.cum_stats.as_ref(),
                };
                let name = Some(row.function.clone());
                if *values != Values::Cum {
                    out.extend(flat.trigger(name.clone(), "flat", c.threshold, basis));
                }
                if *values != Values::Flat {
                    out.extend(cum.trigger(name, "cum", c.threshold, basis));
                }
            }
        }
    }
    out
}

fn pct(before: f64, after: f64) -> Option<f64> {
    (before != 0.0).then(|| (after - before) / before * 100.0)
}

/// One value of the report, with what the condition needs to judge it.
struct Value<'a> {
    before: f64,
    after: f64,
    pct: Option<f64>,
    stats: Option<&'a Change>,
}

impl Value<'_> {
    fn trigger(
        &self,
        function: Option<String>,
        value: &'static str,
        threshold: f64,
        basis: Basis,
    ) -> Option<Trigger> {
        let held = match basis {
            // A value without statistics in a report that has them was not tested (e.g. below
            // the noise floor): no confidence, so it cannot hold.
            Basis::Statistics => self.stats.is_some_and(|s| {
                s.verdict == Verdict::Increase
                    && match s.pct_interval {
                        Some((lo, _)) => lo > threshold,
                        // Nothing before: any confident growth exceeds every percentage.
                        None => s.pct.is_none(),
                    }
            }),
            Basis::Estimates => match self.pct {
                Some(p) => p > threshold,
                None => self.before == 0.0 && self.after > 0.0,
            },
            Basis::NotEvaluated => false,
        };
        let stats = if basis == Basis::Statistics {
            self.stats
        } else {
            None
        };
        held.then(|| Trigger {
            function,
            value,
            before: self.before,
            after: self.after,
            pct: stats.map_or(self.pct, |s| s.pct),
            pct_interval: stats.and_then(|s| s.pct_interval),
            verdict: stats.map(|s| s.verdict),
        })
    }
}

#[cfg(test)]
#[path = "fail_on_tests.rs"]
mod tests;
