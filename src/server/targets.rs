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
use std::time::{Duration, SystemTime};

use axum::extract::{Query, State};
use axum::response::Html;
use serde_json::Value;

use super::AppState;
use crate::gocompat::time::parse_rfc3339;
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
        SystemTime::now(),
    ))
}

fn render(
    sections: &[(String, String, Vec<Value>)],
    health: Option<&str>,
    q: Option<&str>,
    now: SystemTime,
) -> String {
    let mut out = super::page::start("Targets", "Targets");
    out.push_str("<h1>Targets</h1>\n");
    // A plain GET form: the filter is in the address, so a filtered view can be linked.
    let _ = writeln!(
        out,
        "<form class=\"filter\" method=\"get\" action=\"/targets\"><label>Health \
         <select name=\"health\">{}</select></label> <label>Endpoint or label contains \
         <input name=\"q\" value=\"{}\" placeholder=\"service_name=&quot;api&quot;\"></label> \
         <button type=\"submit\">Filter</button> <a href=\"/targets\">clear</a></form>",
        ["", "up", "down", "unknown"]
            .iter()
            .map(|h| format!(
                "<option value=\"{h}\"{}>{}</option>",
                if health.unwrap_or("") == *h {
                    " selected"
                } else {
                    ""
                },
                if h.is_empty() { "any" } else { h }
            ))
            .collect::<String>(),
        escape(q.unwrap_or("")),
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
                 <td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class=\"error\">{}</td></tr>",
                escape(field(t, "url")),
                escape(field(t, "profile_type")),
                escape(health),
                escape(&public_labels(t)),
                when(t, "last_scrape", now),
                escape(field(t, "last_scrape_duration")),
                when(t, "next_scrape", now),
                escape(&delta(t)),
                escape(field(t, "last_error")),
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str(super::page::END);
    out
}

/// A time from the debug info as people read it on this page: how long ago (or how soon),
/// with the exact timestamp on hover.
fn when(t: &Value, name: &str, now: SystemTime) -> String {
    let raw = field(t, name);
    let Some(at) = parse_rfc3339(raw) else {
        return escape(raw);
    };
    let (d, future) = match now.duration_since(at) {
        Ok(d) => (d, false),
        Err(e) => (e.duration(), true),
    };
    let d = format_span(d);
    let text = if future {
        format!("in {d}")
    } else {
        format!("{d} ago")
    };
    format!("<span title=\"{}\">{text}</span>", escape(raw))
}

/// A short span: `850ms`, `4.2s`, `3m10s`, `2h5m`.
fn format_span(d: Duration) -> String {
    let ms = d.as_millis();
    match ms {
        0..=999 => format!("{ms}ms"),
        1_000..=59_999 => format!("{:.1}s", d.as_secs_f64()),
        60_000..=3_599_999 => format!("{}m{}s", ms / 60_000, ms / 1_000 % 60),
        _ => format!("{}h{}m", ms / 3_600_000, ms / 60_000 % 60),
    }
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
        let now = parse_rfc3339("2026-11-26T12:00:05Z").expect("time");
        let all = render(&sections, None, None, now);
        assert!(all.contains("(2 of 2 shown)"), "{all}");
        assert!(all.contains("<td class=\"down\">down</td>"), "{all}");
        assert!(all.contains("connection refused"), "{all}");
        assert!(
            all.contains("<span title=\"2026-11-26T12:00:15Z\">in 10.0s</span>"),
            "{all}"
        );
        assert!(all.contains(">5.0s ago</span>"), "{all}");
        assert!(all.contains("<td>subtracted (2.0 KiB state)</td>"), "{all}");
        assert!(all.contains("service_name=&quot;&lt;db&gt;&quot;"), "{all}");
        assert!(!all.contains("__address__"), "private labels are not shown");

        let down = render(&sections, Some("down"), None, now);
        assert!(
            down.contains("(1 of 2 shown)") && !down.contains("http://a:1"),
            "{down}"
        );
        let q = render(&sections, None, Some("api"), now);
        assert!(q.contains("http://a:1") && !q.contains("http://b:2"), "{q}");
        assert!(q.contains("<input name=\"q\" value=\"api\""), "{q}");
        assert!(down.contains("<option value=\"down\" selected>"), "{down}");
        assert!(render(&[], None, None, now).contains("No component scrapes targets."));
    }
}
