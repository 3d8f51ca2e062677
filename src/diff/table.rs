//! The terminal table.

use std::fmt::Write as _;

use super::units::{Measure, format_change, format_span, format_value};
use super::{Report, Summary};

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
    let numbers: usize = widths.iter().map(|w| w + GAP.len()).sum();
    let function_width = width.saturating_sub(numbers).max(MIN_FUNCTION);

    let line = |out: &mut String, cols: [&str; 6], function: &str| {
        for (c, w) in cols.iter().zip(widths) {
            let _ = write!(out, "{c:>w$}{GAP}");
        }
        out.push_str(&shorten(function, function_width));
        out.push('\n');
    };
    line(&mut out, HEADERS, "FUNCTION");
    for (row, c) in r.rows[..shown].iter().zip(&cells) {
        line(
            &mut out,
            [&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]].map(String::as_str),
            &row.function,
        );
    }
    if shown < r.rows.len() {
        let _ = writeln!(out, "({shown} of {} functions shown)", r.rows.len());
    }
    out
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
