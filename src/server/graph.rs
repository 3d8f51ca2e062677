//! The component graph on `/` as an inline SVG, laid out on the server: one column per
//! dependency depth (components that reference nothing on the left, each other one column
//! right of the deepest component it references), rows in evaluation order, boxes coloured by
//! health and linking to the component's page, an arrow from each referenced component to the
//! one referencing it (the way exports flow). No script, no measuring of text: the same graph
//! always gives the same bytes.

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::html::escape;
use crate::runtime::{ComponentInfo, HealthState};

const BOX_W: usize = 230;
const BOX_H: usize = 34;
const COL_GAP: usize = 70;
const ROW_GAP: usize = 16;
const PAD: usize = 10;
/// Characters of an id shown in a box (the full id is in its tooltip and on its page).
const MAX_LABEL: usize = 32;

/// Where each component goes: (column, row), in the order of `components`.
pub(super) fn layout(components: &[ComponentInfo]) -> Vec<(usize, usize)> {
    let index: HashMap<&str, usize> = components
        .iter()
        .enumerate()
        .map(|(i, c)| (c.local_id.as_str(), i))
        .collect();
    let mut depth = vec![0usize; components.len()];
    // Evaluation order puts dependencies first, so one pass settles every depth; the extra
    // passes only matter for an order that does not, and are bounded (a graph has no cycles,
    // and a depth never exceeds the number of components).
    for _ in 0..components.len() {
        let mut changed = false;
        for (i, c) in components.iter().enumerate() {
            let d = c
                .references_to
                .iter()
                .filter_map(|r| index.get(r.as_str()))
                .filter(|&&j| j != i)
                .map(|&j| depth[j] + 1)
                .max()
                .unwrap_or(0)
                .min(components.len());
            if d != depth[i] {
                depth[i] = d;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    let mut rows: HashMap<usize, usize> = HashMap::new();
    depth
        .iter()
        .map(|&col| {
            let row = rows.entry(col).or_insert(0);
            *row += 1;
            (col, *row - 1)
        })
        .collect()
}

fn colours(state: HealthState) -> (&'static str, &'static str) {
    match state {
        HealthState::Healthy => ("#dafbe1", "#1a7f37"),
        HealthState::Unhealthy => ("#ffebe9", "#cf222e"),
        HealthState::Exited => ("#fff8c5", "#9a6700"),
        HealthState::Unknown => ("#eeeeee", "#666666"),
    }
}

/// `s` cut to [`MAX_LABEL`] characters with an ellipsis.
fn short(s: &str) -> String {
    if s.chars().count() <= MAX_LABEL {
        return s.to_string();
    }
    let mut out: String = s.chars().take(MAX_LABEL - 1).collect();
    out.push('…');
    out
}

/// The SVG element; empty for no components.
pub(super) fn render(components: &[ComponentInfo]) -> String {
    if components.is_empty() {
        return String::new();
    }
    let places = layout(components);
    let cols = places.iter().map(|p| p.0).max().unwrap_or(0) + 1;
    let rows = places.iter().map(|p| p.1).max().unwrap_or(0) + 1;
    let width = 2 * PAD + cols * BOX_W + (cols - 1) * COL_GAP;
    let height = 2 * PAD + rows * BOX_H + (rows - 1) * ROW_GAP;
    let origin =
        |(col, row): (usize, usize)| (PAD + col * (BOX_W + COL_GAP), PAD + row * (BOX_H + ROW_GAP));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"graph\" width=\"{width}\" \
         height=\"{height}\" viewBox=\"0 0 {width} {height}\" role=\"img\" \
         aria-label=\"component graph\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">\
         <path d=\"M0,0L10,5L0,10z\" fill=\"#888\"/></marker></defs>"
    );
    let index: HashMap<&str, usize> = components
        .iter()
        .enumerate()
        .map(|(i, c)| (c.local_id.as_str(), i))
        .collect();
    for (i, c) in components.iter().enumerate() {
        let (x2, y2) = origin(places[i]);
        for r in &c.references_to {
            let Some(&j) = index.get(r.as_str()) else {
                continue;
            };
            let (x1, y1) = origin(places[j]);
            let _ = writeln!(
                out,
                "<line class=\"edge\" x1=\"{}\" y1=\"{}\" x2=\"{x2}\" y2=\"{}\" stroke=\"#888\" \
                 marker-end=\"url(#arrow)\"/>",
                x1 + BOX_W,
                y1 + BOX_H / 2,
                y2 + BOX_H / 2
            );
        }
    }
    for (i, c) in components.iter().enumerate() {
        let (x, y) = origin(places[i]);
        let (fill, stroke) = colours(c.health.state);
        let id = escape(&c.local_id);
        let _ = writeln!(
            out,
            "<a href=\"/components/{id}\"><title>{id}: {state}</title>\
             <rect x=\"{x}\" y=\"{y}\" width=\"{BOX_W}\" height=\"{BOX_H}\" rx=\"4\" \
             fill=\"{fill}\" stroke=\"{stroke}\"/>\
             <text x=\"{}\" y=\"{}\" fill=\"#000\">{}</text></a>",
            x + 8,
            y + BOX_H / 2 + 4,
            escape(&short(&c.local_id)),
            state = c.health.state.as_str(),
        );
    }
    out.push_str("</svg>\n");
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::runtime::info::HealthInfo;

    pub(in crate::server) fn info(id: &str, refs: &[&str], state: HealthState) -> ComponentInfo {
        ComponentInfo {
            name: id.rsplit_once('.').map_or(id, |(n, _)| n).to_string(),
            kind: "block",
            local_id: id.into(),
            module_id: String::new(),
            label: String::new(),
            references_to: refs.iter().map(|r| r.to_string()).collect(),
            referenced_by: vec![],
            health: HealthInfo {
                state,
                message: String::new(),
                updated_time: String::new(),
            },
            original: String::new(),
            arguments: None,
            exports: None,
            debug_info: None,
            live_debugging_enabled: false,
            evaluations: 1,
        }
    }

    #[test]
    fn columns_follow_dependency_depth() {
        let graph = [
            info("discovery.kubernetes.pods", &[], HealthState::Healthy),
            info("pyroscope.store.local", &[], HealthState::Healthy),
            info(
                "discovery.relabel.pods",
                &["discovery.kubernetes.pods"],
                HealthState::Healthy,
            ),
            info(
                "pyroscope.scrape.pods",
                &["discovery.relabel.pods", "pyroscope.store.local"],
                HealthState::Unhealthy,
            ),
            // References something that does not exist: a root.
            info("logging.x", &["nope.nope.x"], HealthState::Unknown),
        ];
        assert_eq!(layout(&graph), [(0, 0), (0, 1), (1, 0), (2, 0), (0, 2)]);
        // An order that does not put dependencies first lays out the same columns.
        let reversed: Vec<ComponentInfo> = graph.iter().rev().cloned().collect();
        let cols: Vec<usize> = layout(&reversed).iter().map(|p| p.0).collect();
        assert_eq!(cols, [0, 2, 1, 0, 0]);

        let svg = render(&graph);
        assert_eq!(svg, render(&graph), "deterministic");
        assert_eq!(svg.matches("<line class=\"edge\"").count(), 3);
        assert_eq!(svg.matches("<rect ").count(), 5);
        // 3 columns, 3 rows.
        assert!(svg.contains("width=\"850\" height=\"154\""), "{svg}");
        // The store (column 0, row 1) feeds the scrape (column 2, row 0).
        assert!(
            svg.contains("x1=\"240\" y1=\"77\" x2=\"610\" y2=\"27\""),
            "{svg}"
        );
        assert!(svg.contains(
            "<a href=\"/components/pyroscope.scrape.pods\"><title>pyroscope.scrape.pods: unhealthy</title>"
        ));
        assert!(svg.contains("fill=\"#ffebe9\" stroke=\"#cf222e\""));
        assert!(render(&[]).is_empty());
    }

    #[test]
    fn ids_are_escaped_and_shortened() {
        let long = format!("a.b.{}", "x".repeat(40));
        let svg = render(&[
            info("t.x.<b>\"", &[], HealthState::Exited),
            info(&long, &[], HealthState::Healthy),
        ]);
        assert!(!svg.contains("<b>"), "{svg}");
        assert!(svg.contains("t.x.&lt;b&gt;&quot;"), "{svg}");
        assert!(
            svg.contains(&format!(">a.b.{}…</text>", "x".repeat(27))),
            "{svg}"
        );
    }
}
