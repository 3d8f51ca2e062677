//! The terminal table.

use std::fmt::Write as _;

use super::units::{Measure, format_change, format_span, format_value};
use super::{Change, Report, Row, Summary, Verdict};

const HEADERS: [&str; 6] = [
    "FLAT BEFORE",
    "FLAT AFTER",
    "FLAT CHANGE",
    "CUM BEFORE",
    "CUM AFTER",
    "CUM CHANGE",
];
const GAP: &str = "  ";
/// Narrower than this, a shortened function name no longer says which function it is; the
/// line overflows `width` instead.
const MIN_FUNCTION: usize = 24;

pub(super) fn render(r: &Report, top: usize, width: usize) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}/{}, {}",
        r.sample_type,
        r.unit,
        r.measure.describe()
    );
    let labels = [&r.before, &r.after].map(|s| s.label.chars().count());
    let label_width = labels.into_iter().max().unwrap_or(0);
    for s in [&r.before, &r.after] {
        let _ = writeln!(out, "{}", summary_line(s, &r.unit, r.measure, label_width));
    }
    if let (Some(st), Some(total)) = (&r.statistics, &r.total_stats) {
        let _ = writeln!(
            out,
            "total: {}  ({}, {:.0}% confidence jointly over {} functions tested, {} vs {} parts, noise floor {}% of the total, minimum change {}%)",
            describe(total),
            st.method,
            st.confidence * 100.0,
            st.tested,
            st.before_parts,
            st.after_parts,
            st.noise_floor_pct,
            st.min_change_pct
        );
    }
    out.push('\n');

    let shown = if top == 0 {
        r.rows.len()
    } else {
        top.min(r.rows.len())
    };
    let cells: Vec<[String; 6]> = r.rows[..shown]
        .iter()
        .map(|row| {
            [
                r.measure.format(row.flat_before, &r.unit),
                r.measure.format(row.flat_after, &r.unit),
                format_change(row.flat_change_pct, row.flat_after),
                r.measure.format(row.cum_before, &r.unit),
                r.measure.format(row.cum_after, &r.unit),
                format_change(row.cum_change_pct, row.cum_after),
            ]
        })
        .collect();
    let mut widths = HEADERS.map(|h| h.chars().count());
    for row in &cells {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.chars().count());
        }
    }
    // The verdict column only when there are statistics: old reports keep their layout.
    let verdicts: Option<Vec<String>> = r
        .statistics
        .as_ref()
        .map(|_| r.rows[..shown].iter().map(verdict_cell).collect());
    let verdict_width = verdicts.as_ref().map(|v| {
        v.iter()
            .map(|c| c.chars().count())
            .chain([VERDICT.len()])
            .max()
            .unwrap_or(0)
    });
    let numbers: usize = widths.iter().map(|w| w + GAP.len()).sum::<usize>()
        + verdict_width.map_or(0, |w| w + GAP.len());
    let function_width = width.saturating_sub(numbers).max(MIN_FUNCTION);

    let line = |out: &mut String, cols: [&str; 6], verdict: &str, function: &str| {
        for (c, w) in cols.iter().zip(widths) {
            let _ = write!(out, "{c:>w$}{GAP}");
        }
        if let Some(w) = verdict_width {
            let _ = write!(out, "{verdict:<w$}{GAP}");
        }
        out.push_str(&shorten(function, function_width));
        out.push('\n');
    };
    line(&mut out, HEADERS, VERDICT, "FUNCTION");
    for (i, (row, c)) in r.rows[..shown].iter().zip(&cells).enumerate() {
        line(
            &mut out,
            [&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]].map(String::as_str),
            verdicts.as_ref().map_or("", |v| v[i].as_str()),
            &row.function,
        );
    }
    if shown < r.rows.len() {
        let _ = writeln!(out, "({shown} of {} functions shown)", r.rows.len());
    }
    out
}

const VERDICT: &str = "VERDICT (CUM, INTERVAL)";

/// The row's verdict: on its cum value, or on its flat value when only that one changed
/// significantly (a function whose own work grew while its callees' shrank).
pub(super) fn verdict_cell(row: &Row) -> String {
    fn significant(c: &Option<Change>) -> Option<&Change> {
        c.as_ref()
            .filter(|c| matches!(c.verdict, Verdict::Increase | Verdict::Decrease))
    }
    match (significant(&row.cum_stats), significant(&row.flat_stats)) {
        (None, Some(flat)) => format!("{} (flat)", describe(flat)),
        _ => row.cum_stats.as_ref().map_or_else(String::new, describe),
    }
}

/// "▲ +12.0% [+8.1%, +16.0%]": the verdict's marker, the change and its interval.
pub(super) fn describe(c: &Change) -> String {
    let marker = match c.verdict {
        Verdict::Increase => "▲ up",
        Verdict::Decrease => "▼ down",
        Verdict::NoChange => "= same",
        Verdict::BelowNoiseFloor => return "· below floor".to_string(),
    };
    match (c.pct, c.pct_interval) {
        (Some(p), Some((lo, hi))) => format!("{marker} {p:+.1}% [{lo:+.1}%, {hi:+.1}%]"),
        _ => format!("{marker} (new)"),
    }
}

fn summary_line(s: &Summary, unit: &str, measure: Measure, label_width: usize) -> String {
    format!(
        "{:<label_width$}  {}  {} {}  ({} samples)",
        s.label,
        sources(s),
        match measure {
            Measure::PerSecond => "total",
            Measure::Average => "average",
            Measure::SumPerInstance => "sum per instance",
        },
        match measure {
            // The rate says little without the amount it came from.
            Measure::PerSecond => format!(
                "{} = {}",
                format_value(s.total, unit),
                measure.format(s.normalised, unit)
            ),
            _ => measure.format(s.normalised, unit),
        },
        s.samples,
    )
}

/// "30m × 2 instances, 240 profiles": what a window's values came from.
pub(super) fn sources(s: &Summary) -> String {
    let mut out = format!(
        "{} × {} instance{}",
        format_span(s.seconds),
        s.instances,
        if s.instances == 1 { "" } else { "s" }
    );
    if s.profiles > 0 {
        out.push_str(&format!(
            ", {} profile{}",
            s.profiles,
            if s.profiles == 1 { "" } else { "s" }
        ));
    }
    out
}

/// `s` in at most `width` characters, keeping the end: "…b.com/x/pkg.(*T).Method".
pub(super) fn shorten(s: &str, width: usize) -> String {
    let n = s.chars().count();
    if n <= width {
        return s.to_string();
    }
    let keep = width.saturating_sub(1);
    let tail: String = s.chars().skip(n - keep).collect();
    format!("…{tail}")
}
