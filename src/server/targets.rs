//! `/targets`: every scrape target of every component, in the spirit of Prometheus's targets
//! page: health, last scrape, its duration, the next scrape, how deltas are made (and the state
//! kept for them) and the last error, filterable by health
//! (`?health=down`) and by a substring of the URL or labels (`?q=otel`).
//!
//! Server-rendered and generic: any component whose debug info has a `targets` list of objects
//! (`pyroscope.scrape` today) is shown, read through the same component API as
//! `/api/v0/web/components/{id}`, so the server knows nothing of a component's internals.
//! Everything interpolated comes from configs or targets, so all of it is escaped.

use std::collections::HashMap;
use std::fmt::Write as _;

use axum::extract::{Query, State};
use axum::response::Html;
use serde_json::Value;

use super::AppState;
use crate::html::escape;

/// One row's fields, as the component's debug info names them.
fn field<'a>(t: &'a Value, name: &str) -> &'a str {
    t.get(name).and_then(Value::as_str).unwrap_or("")
}

/// The labels people set (not `__`-prefixed), `k="v"` joined, as Prometheus shows them.
fn public_labels(t: &Value) -> String {
    let Some(labels) = t.get("labels").and_then(Value::as_object) else {
        return String::new();
    };
    let mut pairs: Vec<String> = labels
        .iter()
        .filter(|(k, _)| !k.starts_with("__"))
        .map(|(k, v)| format!("{k}={:?}", v.as_str().unwrap_or("")))
        .collect();
    pairs.sort();
    pairs.join(", ")
}

/// How the target's deltas are made, and the state kept for them: `subtracted (12.3 KiB)`.
fn delta(t: &Value) -> String {
    let mode = field(t, "delta_mode");
    match t.get("delta_state_bytes").and_then(Value::as_u64) {
        Some(bytes) if bytes > 0 => format!("{mode} ({:.1} KiB state)", bytes as f64 / 1024.0),
        _ => mode.to_string(),
    }
}

fn matches(t: &Value, health: Option<&str>, q: Option<&str>) -> bool {
    if health.is_some_and(|h| !h.is_empty() && field(t, "health") != h) {
        return false;
    }
    match q {
        Some(q) if !q.is_empty() => field(t, "url").contains(q) || public_labels(t).contains(q),
        _ => true,
    }
}

pub(super) async fn page(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Html<String> {
    let mut sections = Vec::new();
    for c in state.controller.components().await {
        let Some(info) = state.controller.component(&c.local_id).await else {
            continue;
        };
        let targets = info
            .debug_info
            .as_ref()
            .and_then(|d| d.get("targets"))
            .and_then(Value::as_array)
            .cloned();
        if let Some(targets) = targets {
            sections.push((c.local_id, c.health.message, targets));
        }
    }
    Html(render(
        &sections,
        query.get("health").map(String::as_str),
        query.get("q").map(String::as_str),
    ))
}

fn render(
    sections: &[(String, String, Vec<Value>)],
    health: Option<&str>,
    q: Option<&str>,
) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>scraper: targets</title>\n<style>\n\
         body{font-family:sans-serif;margin:2em}\
         table{border-collapse:collapse;margin-bottom:2em}\
         td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
         .up{color:#1a7f37}.down{color:#cf222e}.unknown{color:#666}\
         \n</style>\n</head>\n<body>\n<h1>Targets</h1>\n\
         <p><a href=\"/\">components</a> &middot; show: <a href=\"/targets\">all</a> \
         <a href=\"/targets?health=up\">up</a> <a href=\"/targets?health=down\">down</a> \
         <a href=\"/targets?health=unknown\">unknown</a></p>\n",
    );
    if sections.is_empty() {
        out.push_str("<p>No component scrapes targets.</p>\n");
    }
    for (id, message, targets) in sections {
        let shown: Vec<&Value> = targets.iter().filter(|t| matches(t, health, q)).collect();
        let _ = writeln!(
            out,
            "<h2>{} <small>({} of {} shown)</small></h2>\n<p>{}</p>",
            escape(id),
            shown.len(),
            targets.len(),
            escape(message)
        );
        if shown.is_empty() {
            continue;
        }
        out.push_str(
            "<table>\n<tr><th>Endpoint</th><th>Type</th><th>Health</th><th>Labels</th>\
             <th>Last scrape</th><th>Duration</th><th>Next scrape</th><th>Delta</th>\
             <th>Error</th></tr>\n",
        );
        for t in shown {
            let health = field(t, "health");
            let class = match health {
                "up" | "down" => health,
                _ => "unknown",
            };
            let _ = writeln!(
                out,
                "<tr><td>{}</td><td>{}</td><td class=\"{class}\">{}</td><td>{}</td>\
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(field(t, "url")),
                escape(field(t, "profile_type")),
                escape(health),
                escape(&public_labels(t)),
                escape(field(t, "last_scrape")),
                escape(field(t, "last_scrape_duration")),
                escape(field(t, "next_scrape")),
                escape(&delta(t)),
                escape(field(t, "last_error")),
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str, health: &str, service: &str, error: &str) -> Value {
        serde_json::json!({
            "url": url,
            "profile_type": "process_cpu",
            "health": health,
            "labels": {"__address__": "x", "service_name": service},
            "last_error": error,
            "last_scrape": "2026-11-26T12:00:00Z",
            "last_scrape_duration": "12ms",
            "next_scrape": "2026-11-26T12:00:15Z",
            "delta_mode": "subtracted",
            "delta_state_bytes": 2048,
        })
    }

    #[test]
    fn rows_filters_and_escaping() {
        let sections = vec![(
            "pyroscope.scrape.app".to_string(),
            "2 targets: 1 up, 1 down".to_string(),
            vec![
                target("http://a:1/debug/pprof/profile", "up", "api", ""),
                target(
                    "http://b:2/debug/pprof/profile",
                    "down",
                    "<db>",
                    "connection refused",
                ),
            ],
        )];
        let all = render(&sections, None, None);
        assert!(all.contains("(2 of 2 shown)"), "{all}");
        assert!(all.contains("<td class=\"down\">down</td>"), "{all}");
        assert!(all.contains("connection refused"), "{all}");
        assert!(all.contains("<td>2026-11-26T12:00:15Z</td>"), "{all}");
        assert!(all.contains("<td>subtracted (2.0 KiB state)</td>"), "{all}");
        assert!(all.contains("service_name=&quot;&lt;db&gt;&quot;"), "{all}");
        assert!(!all.contains("__address__"), "private labels are not shown");

        let down = render(&sections, Some("down"), None);
        assert!(
            down.contains("(1 of 2 shown)") && !down.contains("http://a:1"),
            "{down}"
        );
        let q = render(&sections, None, Some("api"));
        assert!(q.contains("http://a:1") && !q.contains("http://b:2"), "{q}");
        assert!(render(&[], None, None).contains("No component scrapes targets."));
    }
}
