//! `scraper diff --format markdown`: the report as GitHub-flavoured markdown for a pull-request
//! or merge-request comment: a heading, the windows, the total, a table of the top functions
//! with their verdicts, and the `--fail-on` results.

use std::fmt::Write as _;

use super::fail_on::{Basis, Evaluation, verdict_name};
use super::table::sources;
use super::units::format_change;
use super::{Change, Report, Verdict};

/// Plain text with the characters markdown would read as markup escaped (a selector's `.*`
/// is not emphasis); GFM splits table cells at every unescaped `|`, and a newline would end a
/// row or a heading.
fn text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '~' | '#' | '!' | '&' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A function name as inline code, fenced with more backticks than it contains; in a table,
/// `|` is escaped even there (GFM splits cells first).
fn code(s: &str, in_table: bool) -> String {
    let longest = s.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A name that starts or ends with a backtick needs a space inside the fence.
    let pad = if s.starts_with('`') || s.ends_with('`') {
        " "
    } else {
        ""
    };
    // Backslashes are literal inside code spans; only the pipe needs escaping in a table.
    let mut body = s.replace(['\n', '\r'], " ");
    if in_table {
        body = body.replace('|', "\\|");
    }
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// "**increase**" for a confident change, plain words otherwise; "" without statistics.
fn verdict(stats: Option<&Change>) -> String {
    match stats.map(|s| s.verdict) {
        Some(v @ (Verdict::Increase | Verdict::Decrease)) => format!("**{}**", verdict_name(v)),
        Some(Verdict::NoChange) => "no change".to_string(),
        Some(Verdict::BelowNoiseFloor) => "below noise floor".to_string(),
        None => String::new(),
    }
}

/// "+12.3% (+8.0% .. +16.6%)": the change and its interval when there is one.
fn change(pct: Option<f64>, after: f64, stats: Option<&Change>) -> String {
    let point = format_change(pct, after);
    match stats.and_then(|s| s.pct_interval) {
        Some((lo, hi)) => format!("{point} ({lo:+.1}% .. {hi:+.1}%)"),
        None => point,
    }
}

/// The most the markdown may be, in bytes (at least as many as characters): GitHub refuses
/// comments over 65,536 characters, and a pipeline may wrap the report in words of its own.
pub(super) const MAX_BYTES: usize = 60_000;

/// Triggers listed per condition, as on standard error; the rest are counted.
const TRIGGERS_SHOWN: usize = 10;

pub(super) fn render(r: &Report, title: &str, top: usize, e: &Evaluation) -> String {
    let value = |v: f64| r.measure.format(v, &r.unit);
    let mut out = head(r, title);
    let tail = tail(r, e);
    out.push_str(
        "| function | flat before | flat after | flat change | flat verdict | cum before | cum after | cum change | cum verdict |\n",
    );
    out.push_str("|---|---:|---:|---:|---|---:|---:|---:|---|\n");
    let wanted = if top == 0 {
        r.rows.len()
    } else {
        top.min(r.rows.len())
    };
    // Rows while they fit, leaving room for the tail and the note on what was left out.
    let budget = MAX_BYTES.saturating_sub(out.len() + tail.len() + 200);
    let (mut shown, mut used) = (0, 0);
    for row in &r.rows[..wanted] {
        let line = format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            code(&row.function, true),
            value(row.flat_before),
            value(row.flat_after),
            change(row.flat_change_pct, row.flat_after, row.flat_stats.as_ref()),
            verdict(row.flat_stats.as_ref()),
            value(row.cum_before),
            value(row.cum_after),
            change(row.cum_change_pct, row.cum_after, row.cum_stats.as_ref()),
            verdict(row.cum_stats.as_ref()),
        );
        if used + line.len() > budget {
            break;
        }
        used += line.len();
        out.push_str(&line);
        shown += 1;
    }
    if shown < r.rows.len() {
        let _ = write!(out, "\n{shown} of {} functions shown", r.rows.len());
        if shown < wanted {
            out.push_str(
                " (more would not fit in a pull-request comment; the JSON and HTML reports have them)",
            );
        }
        out.push_str(".\n");
    }
    out.push_str(&tail);
    out
}

/// The heading, the windows and the total.
fn head(r: &Report, title: &str) -> String {
    let mut out = String::new();
    let value = |v: f64| r.measure.format(v, &r.unit);
    let _ = writeln!(out, "### {}\n", text(title));
    let _ = writeln!(
        out,
        "`{}/{}`, {}.\n",
        r.sample_type,
        r.unit,
        r.measure.describe()
    );
    out.push_str("| window | from | total |\n|---|---|---:|\n");
    for s in [&r.before, &r.after] {
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            text(&s.label),
            text(&sources(s)),
            value(s.normalised)
        );
    }
    let (before, after) = (r.before.normalised, r.after.normalised);
    let total_pct = (before != 0.0).then(|| (after - before) / before * 100.0);
    let _ = writeln!(
        out,
        "\n**Total**: {} → {}, {}{}\n",
        value(before),
        value(after),
        change(total_pct, after, r.total_stats.as_ref()),
        match verdict(r.total_stats.as_ref()).as_str() {
            "" => String::new(),
            v => format!(", {v}"),
        }
    );
    out
}

/// How the statistics were computed and the `--fail-on` results, up to [`TRIGGERS_SHOWN`]
/// triggers per condition.
fn tail(r: &Report, e: &Evaluation) -> String {
    let mut out = String::new();
    match &r.statistics {
        Some(s) => {
            let _ = writeln!(
                out,
                "\nStatistics: {} at {}% confidence, {} and {} parts, noise floor {}% of the total, minimum change {}%, {} functions tested.",
                s.method,
                s.confidence * 100.0,
                s.before_parts,
                s.after_parts,
                s.noise_floor_pct,
                s.min_change_pct,
                s.tested
            );
        }
        None => out.push_str(
            "\nNo statistics: the windows were compared as one merged profile each, so changes have no confidence intervals.\n",
        ),
    }
    if e.outcomes.is_empty() {
        return out;
    }
    out.push('\n');
    if e.basis == Basis::Estimates {
        out.push_str("Fail-on conditions judged on the point estimates (no statistics):\n\n");
    } else if e.basis == Basis::NotEvaluated {
        out.push_str("Fail-on conditions not evaluated (no statistics):\n\n");
    }
    for o in &e.outcomes {
        let _ = write!(
            out,
            "- {} {}",
            if o.held { "**FAILED**" } else { "passed" },
            code(&o.condition, false)
        );
        for (i, t) in o.triggers.iter().take(TRIGGERS_SHOWN).enumerate() {
            let name = match &t.function {
                Some(f) => format!("{} {}", code(f, false), t.value),
                None => "total".to_string(),
            };
            let sep = if i == 0 { ":" } else { ";" };
            let _ = write!(out, "{sep} {name} {}", text(&t.change_text()));
        }
        if o.triggers.len() > TRIGGERS_SHOWN {
            let _ = write!(out, "; and {} more", o.triggers.len() - TRIGGERS_SHOWN);
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
#[path = "markdown_tests.rs"]
mod tests;
