//! The self-contained HTML report. The page's script (assets/diff.js) lays out and draws the
//! flame graph on a `<canvas>` from the tree embedded as JSON: a canvas stays fast with tens of
//! thousands of frames where one DOM element per frame would not.

use std::fmt::Write as _;

use serde::Serialize;

use super::units::{Measure, format_change, format_span, format_value};
use super::{Node, Report, Row, Summary, Verdict};
use crate::html::escape as esc;

const CSS: &str = include_str!("assets/diff.css");
const JS: &str = include_str!("assets/diff.js");

/// Runs before anything else so that even a syntax error in the main script is recorded where
/// a headless browser's DOM dump shows it (tests/diff_html.rs relies on this).
const ERROR_HOOK: &str = "window.addEventListener('error',function(e){var d=document.documentElement;\
d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+(e.message||'error')+'\\n');});";

/// Frames below this share of the whole graph are left out of the page: even zoomed into a
/// frame of 1 % they would be about a pixel wide, and huge profiles would make huge pages.
const MIN_SHARE: f64 = 1e-5;

/// The tree as columns (one array per field): far smaller than an object per node.
#[derive(Serialize)]
struct Data<'a> {
    unit: &'a str,
    /// Whether values are per second (CPU, allocations) rather than averages (heap in use).
    #[serde(rename = "perSecond")]
    per_second: bool,
    names: Vec<&'a str>,
    /// Per name, the verdict on that function ("" = none); empty without statistics.
    verdicts: Vec<String>,
    /// The verdict on the total (the root frame), "" without statistics.
    #[serde(rename = "totalVerdict")]
    total_verdict: String,
    nodes: Columns,
}

#[derive(Serialize, Default)]
struct Columns {
    /// Index into `names`.
    name: Vec<u32>,
    depth: Vec<usize>,
    /// Totals before/after, self before/after, colour intensity (see `Node::change`).
    bt: Vec<f64>,
    at: Vec<f64>,
    sb: Vec<f64>,
    sa: Vec<f64>,
    c: Vec<f64>,
}

fn data_json(r: &Report) -> String {
    let mut names: Vec<&str> = Vec::new();
    let mut ids: std::collections::HashMap<&str, u32> = std::collections::HashMap::new();
    let mut cols = Columns::default();
    let weight = |n: &Node| n.before.max(0.0) + n.after.max(0.0);
    let min = r.tree.nodes.first().map_or(0.0, weight) * MIN_SHARE;
    // Depth of a dropped node while its descendants (the nodes after it that are deeper) are
    // skipped too.
    let mut dropped: Option<usize> = None;
    let sig = super::stats::Significance::of(r);
    let mut verdicts: Vec<String> = Vec::new();
    let mut total_verdict = String::new();
    for n in &r.tree.nodes {
        if dropped.is_some_and(|d| n.depth > d) {
            continue;
        }
        dropped = None;
        if n.depth > 0 && weight(n) < min {
            dropped = Some(n.depth);
            continue;
        }
        if n.depth == 0 {
            total_verdict = sig.text(n).to_string();
        }
        let id = *ids.entry(n.name.as_str()).or_insert_with(|| {
            names.push(n.name.as_str());
            if r.statistics.is_some() {
                verdicts.push(if n.depth == 0 {
                    String::new()
                } else {
                    sig.text(n).to_string()
                });
            }
            (names.len() - 1) as u32
        });
        cols.name.push(id);
        cols.depth.push(n.depth);
        cols.bt.push(n.before);
        cols.at.push(n.after);
        cols.sb.push(n.self_before);
        cols.sa.push(n.self_after);
        cols.c.push(sig.intensity(n));
    }
    let data = Data {
        unit: &r.unit,
        per_second: r.measure == Measure::PerSecond,
        names,
        verdicts,
        total_verdict,
        nodes: cols,
    };
    // Only names and numbers: serialising cannot fail, and an empty tree draws an empty graph.
    let json = serde_json::to_string(&data).unwrap_or_else(|_| "{}".to_string());
    // Outside strings JSON has no '<', and inside them the escape means the same: a function
    // named "</script>" cannot end the element early.
    json.replace('<', "\\u003c")
}

pub(super) fn render(r: &Report, title: &str) -> String {
    let mut out = String::with_capacity(64 * 1024);
    let t = esc(title);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n\
<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
<title>{t}</title>\n<script>{ERROR_HOOK}</script>\n<style>\n{CSS}</style>\n</head>\n<body>\n\
<header>\n<h1>{t}</h1>\n"
    );
    summaries(&mut out, r);
    let _ = write!(
        out,
        "<p class=\"legend\"><span class=\"sw grew\"></span>grew <span class=\"sw shrank\"></span>shrank \
<span class=\"sw same\"></span>unchanged (&lt;1%) · colour intensity ∝ relative change of the frame's total \
(saturating at ±100%){} · width ∝ before + after · hover for values, click to zoom, Esc to reset</p>\n\
</header>\n\
<div class=\"controls\"><input id=\"search\" type=\"search\" placeholder=\"Search functions\" \
aria-label=\"Search functions\" autocomplete=\"off\"><button id=\"reset\" type=\"button\">Reset zoom</button>\
<span id=\"status\"></span></div>\n\
<div id=\"flame\"><canvas id=\"flame-canvas\" role=\"img\" aria-label=\"Differential flame graph\"></canvas></div>\n\
<div id=\"tip\" hidden></div>\n",
        if r.statistics.is_some() {
            " · pale: not a significant change"
        } else {
            ""
        }
    );
    rows(&mut out, r);
    let _ = write!(
        out,
        "<script id=\"diff-data\" type=\"application/json\">{}</script>\n<script>\n{JS}</script>\n</body>\n</html>\n",
        data_json(r)
    );
    out
}

fn summaries(out: &mut String, r: &Report) {
    let _ = write!(
        out,
        "<table class=\"summary\">\n<thead><tr><th>window</th><th>seconds</th><th>instances</th>\
<th>profiles</th><th>samples</th><th>total</th><th>{}</th></tr></thead>\n<tbody>\n",
        esc(r.measure.describe())
    );
    for (class, s) in [("before", &r.before), ("after", &r.after)] {
        summary_row(out, class, s, &r.unit, r.measure);
    }
    let _ = writeln!(
        out,
        "</tbody>\n</table>\n<p class=\"type\">{} ({}), values {}</p>",
        esc(&r.sample_type),
        esc(&r.unit),
        esc(r.measure.describe())
    );
    if let (Some(st), Some(total)) = (&r.statistics, &r.total_stats) {
        let _ = writeln!(
            out,
            "<p class=\"stats\">Total: <b>{}</b> · {} at {:.0}% confidence jointly over the {} functions \
tested ({} vs {} parts; below {}% of the total a function is not tested, and a change below \
{}% is no change) · intervals are of after − before (docs/DIFF-STATISTICS.md)</p>",
            esc(&super::table::describe(total)),
            esc(&st.method),
            st.confidence * 100.0,
            st.tested,
            st.before_parts,
            st.after_parts,
            st.noise_floor_pct,
            st.min_change_pct
        );
    }
}

fn summary_row(out: &mut String, class: &str, s: &Summary, unit: &str, measure: Measure) {
    let _ = writeln!(
        out,
        "<tr class=\"{class}\"><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>\
<td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
        esc(&s.label),
        format_span(s.seconds),
        s.instances,
        if s.profiles > 0 {
            s.profiles.to_string()
        } else {
            "?".to_string()
        },
        s.samples,
        esc(&format_value(s.total, unit)),
        esc(&measure.format(s.normalised, unit)),
    );
}

fn rows(out: &mut String, r: &Report) {
    let shown = if r.top == 0 {
        r.rows.len()
    } else {
        r.top.min(r.rows.len())
    };
    let _ = write!(
        out,
        "<h2>Top functions <small>({shown} of {}, by change in flat value; click a row to find it)</small></h2>\n\
<table class=\"rows\">\n<thead><tr><th>flat before</th><th>flat after</th><th>flat change</th>\
<th>cum before</th><th>cum after</th><th>cum change</th>{}<th class=\"fn\">function</th></tr></thead>\n<tbody>\n",
        r.rows.len(),
        if r.statistics.is_some() {
            "<th title=\"on the cum value; the interval is of the change in % of before\">verdict</th>"
        } else {
            ""
        }
    );
    let stats = r.statistics.is_some();
    for row in &r.rows[..shown] {
        table_row(out, row, &r.unit, r.measure, stats);
    }
    out.push_str("</tbody>\n</table>\n");
}

fn table_row(out: &mut String, row: &Row, unit: &str, measure: Measure, stats: bool) {
    let f = esc(&row.function);
    let verdict = if stats {
        let class = match row.cum_stats.as_ref().map(|c| c.verdict) {
            Some(Verdict::Increase) => "v up",
            Some(Verdict::Decrease) => "v down",
            _ => "v",
        };
        format!(
            "<td class=\"{class}\">{}</td>",
            esc(&super::table::verdict_cell(row))
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "<tr data-fn=\"{f}\"><td class=\"n\">{}</td><td class=\"n\">{}</td>{}<td class=\"n\">{}</td>\
<td class=\"n\">{}</td>{}{verdict}<td class=\"fn\">{f}</td></tr>",
        esc(&measure.format(row.flat_before, unit)),
        esc(&measure.format(row.flat_after, unit)),
        change_cell(row.flat_change_pct, row.flat_before, row.flat_after),
        esc(&measure.format(row.cum_before, unit)),
        esc(&measure.format(row.cum_after, unit)),
        change_cell(row.cum_change_pct, row.cum_before, row.cum_after),
    );
}

fn change_cell(pct: Option<f64>, before: f64, after: f64) -> String {
    let class = if after > before {
        "n up"
    } else if after < before {
        "n down"
    } else {
        "n"
    };
    format!(
        "<td class=\"{class}\">{}</td>",
        esc(&format_change(pct, after))
    )
}
