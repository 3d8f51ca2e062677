//! The static SVG flame graph: the same layout and colours as the HTML page's, root at the top,
//! with each frame's values in its `<title>` (shown on hover by browsers and viewers).

use std::fmt::Write as _;

use super::table::{shorten, sources};
use super::units::{Measure, format_value};
use super::{Node, Report, Summary};
use crate::html::escape as esc;

const WIDTH: f64 = 1200.0;
const MARGIN: f64 = 10.0;
const ROW: f64 = 18.0;
const HEADER: f64 = 84.0;
/// Narrower frames, and their subtrees, would be invisible yet bloat the file.
const MIN_WIDTH: f64 = 0.3;
/// Of 11px monospace, with a little slack so labels never run past their frame.
const CHAR_WIDTH: f64 = 6.8;

struct Frame {
    node: usize,
    x: f64,
    w: f64,
}

pub(super) fn render(r: &Report, title: &str) -> String {
    let nodes = &r.tree.nodes;
    let frames = layout(nodes);
    let depth = frames
        .iter()
        .filter_map(|f| nodes.get(f.node))
        .map(|n| n.depth)
        .max()
        .unwrap_or(0);
    let height = HEADER + (depth as f64 + 1.0) * ROW + MARGIN;

    let mut out = String::with_capacity(256 * (frames.len() + 8));
    let _ = write!(
        out,
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n\
<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" \
font-family=\"monospace\" font-size=\"11\">\n<title>{}</title>\n<rect width=\"100%\" height=\"100%\" fill=\"#ffffff\"/>\n\
<text x=\"{MARGIN}\" y=\"22\" font-size=\"15\" font-weight=\"bold\">{}</text>\n",
        esc(title),
        esc(title)
    );
    for (y, s) in [(40, &r.before), (56, &r.after)] {
        let _ = writeln!(
            out,
            "<text x=\"{MARGIN}\" y=\"{y}\" fill=\"#444444\">{}</text>",
            esc(&summary(s, &r.unit, r.measure))
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{MARGIN}\" y=\"72\" fill=\"#444444\">{} ({}) per second per instance · width ∝ before + after · \
<tspan fill=\"{}\">■</tspan> grew <tspan fill=\"{}\">■</tspan> shrank <tspan fill=\"{}\">■</tspan> unchanged (&lt;1%){}</text>",
        esc(&r.sample_type),
        esc(&r.unit),
        colour(1.0),
        colour(-1.0),
        colour(0.0),
        if r.statistics.is_some() {
            " · pale: not a significant change"
        } else {
            ""
        }
    );
    let sig = super::stats::Significance::of(r);
    for f in &frames {
        if let Some(n) = nodes.get(f.node) {
            frame(&mut out, n, f, &r.unit, r.measure, &sig);
        }
    }
    out.push_str("</svg>\n");
    out
}

fn summary(s: &Summary, unit: &str, measure: Measure) -> String {
    format!(
        "{}: {}, total {} = {} {}",
        s.label,
        sources(s),
        format_value(s.total, unit),
        measure.format(s.normalised, unit),
        measure.describe()
    )
}

fn weight(n: &Node) -> f64 {
    n.before.max(0.0) + n.after.max(0.0)
}

fn layout(nodes: &[Node]) -> Vec<Frame> {
    let mut frames = Vec::new();
    let Some(root) = nodes.first() else {
        return frames;
    };
    let total = weight(root);
    if total <= 0.0 || !total.is_finite() {
        return frames;
    }
    let k = (WIDTH - 2.0 * MARGIN) / total;
    let mut todo = vec![(0usize, MARGIN)];
    while let Some((i, x)) = todo.pop() {
        let Some(n) = nodes.get(i) else { continue };
        let w = weight(n) * k;
        if w < MIN_WIDTH {
            continue;
        }
        frames.push(Frame { node: i, x, w });
        let mut cx = x;
        for &c in &n.children {
            todo.push((c, cx));
            cx += nodes.get(c).map_or(0.0, weight) * k;
        }
    }
    frames
}

fn frame(
    out: &mut String,
    n: &Node,
    f: &Frame,
    unit: &str,
    measure: Measure,
    sig: &super::stats::Significance<'_>,
) {
    let y = HEADER + n.depth as f64 * ROW;
    let w = if f.w > 2.0 { f.w - 1.0 } else { f.w };
    let c = sig.intensity(n);
    let verdict = match sig.text(n) {
        "" => String::new(),
        t => format!("&#10;verdict: {}", esc(t)),
    };
    let _ = write!(
        out,
        "<g><title>{}&#10;total: {} → {} ({})&#10;self: {} → {} ({}){verdict}</title>\
<rect x=\"{:.2}\" y=\"{y}\" width=\"{:.2}\" height=\"{}\" fill=\"{}\"/>",
        esc(&n.name),
        esc(&measure.format(n.before, unit)),
        esc(&measure.format(n.after, unit)),
        change(n.before, n.after),
        esc(&measure.format(n.self_before, unit)),
        esc(&measure.format(n.self_after, unit)),
        change(n.self_before, n.self_after),
        f.x,
        w,
        ROW - 1.0,
        colour(c),
    );
    let room = ((f.w - 6.0) / CHAR_WIDTH).floor();
    if room >= 3.0 {
        let label = shorten(&n.name, room as usize);
        let _ = write!(
            out,
            "<text x=\"{:.2}\" y=\"{:.1}\" fill=\"{}\">{}</text>",
            f.x + 3.0,
            y + ROW / 2.0 + 4.0,
            text_colour(c),
            esc(&label)
        );
    }
    out.push_str("</g>\n");
}

fn change(before: f64, after: f64) -> String {
    match super::model::change_pct(before, after) {
        Some(p) => format!("{p:+.1}%"),
        None if after != 0.0 => "new".to_string(),
        None => "unchanged".to_string(),
    }
}

/// A frame's fill for a signed change intensity (see `Node::change`). Keep in step with
/// colour() in assets/diff.js, which uses the same hue, saturation and lightness.
pub(super) fn colour(c: f64) -> String {
    if c == 0.0 || c.is_nan() {
        return "#cccccc".to_string();
    }
    let hue = if c > 0.0 { 0.0 } else { 220.0 };
    let lightness = (88.0 - 38.0 * c.abs().min(1.0)) / 100.0;
    let (r, g, b) = hsl(hue, 0.85, lightness);
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// Labels stay readable on the strongest fills.
fn text_colour(c: f64) -> &'static str {
    if c.abs() > 0.6 { "#ffffff" } else { "#111111" }
}

fn hsl(h: f64, s: f64, l: f64) -> (u8, u8, u8) {
    let c = (1.0 - (2.0 * l - 1.0).abs()) * s;
    let hp = h / 60.0;
    let x = c * (1.0 - (hp % 2.0 - 1.0).abs());
    let (r, g, b) = match hp as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = l - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    (byte(r), byte(g), byte(b))
}
