//! `/components/{id}`: one component on a server-rendered page: health and message,
//! references in and out as links, arguments, exports and debug info as nested tables, and
//! the outcome of the latest config load. The data is `/api/v0/web/components/{id}`'s, whose
//! arguments are already redacted (secrets show as `(secret)`); everything interpolated is
//! escaped, since all of it comes from the config file or the outside.

use std::fmt::Write as _;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{Html, IntoResponse, Response};
use serde_json::Value;

use super::AppState;
use crate::gocompat::time::rfc3339_millis;
use crate::html::escape;
use crate::runtime::{ComponentInfo, LoadOutcome};

/// Entries of one array or object shown; the rest are counted (the JSON has them all).
const MAX_ENTRIES: usize = 500;

pub(super) async fn page(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    match state.controller.component(&id).await {
        Some(info) => Html(render(&info, state.controller.last_load().as_ref())).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Html(format!(
                "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
                 <title>not found</title></head><body><p>No component {} is running. \
                 <a href=\"/\">All components</a></p></body></html>\n",
                escape(&id)
            )),
        )
            .into_response(),
    }
}

fn render(c: &ComponentInfo, last_load: Option<&LoadOutcome>) -> String {
    let id = escape(&c.local_id);
    let mut out = super::page::start(&id, "Component");
    let _ = writeln!(
        out,
        "<p><a href=\"/\">Components</a> &rsaquo; {id}</p>\n<h1>{id}</h1>"
    );
    let state = c.health.state.as_str();
    let _ = writeln!(
        out,
        "<table>\n<tr><th>Health</th><td class=\"{state}\">{state}</td></tr>\n\
         <tr><th>Message</th><td>{}</td></tr>\n<tr><th>Updated</th><td>{}</td></tr>\n\
         <tr><th>References</th><td>{}</td></tr>\n<tr><th>Referenced by</th><td>{}</td></tr>\n\
         <tr><th>Last config load</th><td>{}</td></tr>\n</table>",
        escape(&c.health.message),
        escape(&c.health.updated_time),
        links(&c.references_to),
        links(&c.referenced_by),
        load(last_load),
    );
    for (title, value) in [
        ("Arguments", &c.arguments),
        ("Exports", &c.exports),
        ("Debug info", &c.debug_info),
    ] {
        let _ = writeln!(out, "<h2>{title}</h2>");
        match value {
            Some(v) => {
                value_html(&mut out, v);
                out.push('\n');
            }
            None => out.push_str("<p class=\"null\">none</p>\n"),
        }
    }
    let _ = writeln!(
        out,
        "<p><a href=\"/api/v0/web/components/{id}\">as JSON</a></p>\n{}",
        super::page::END
    );
    out
}

/// Component ids as links to their pages, one a line.
pub(super) fn links(ids: &[String]) -> String {
    ids.iter()
        .map(|id| {
            let id = escape(id);
            format!("<a href=\"/components/{id}\">{id}</a>")
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

/// "2026-11-26T20:00:00.000Z: ok", or the time and the error.
pub(super) fn load(outcome: Option<&LoadOutcome>) -> String {
    match outcome {
        None => "none yet".to_string(),
        Some(LoadOutcome { at, error: None }) => {
            format!("{}: <span class=\"healthy\">ok</span>", rfc3339_millis(*at))
        }
        Some(LoadOutcome { at, error: Some(e) }) => format!(
            "{}: <span class=\"unhealthy\">failed</span><pre>{}</pre>",
            rfc3339_millis(*at),
            escape(e)
        ),
    }
}

/// A JSON value as HTML: objects and arrays as tables (key or index, value), scalars as text.
fn value_html(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<span class=\"null\">null</span>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&escape(s)),
        Value::Array(items) if items.is_empty() => out.push_str("<span class=\"null\">[]</span>"),
        Value::Object(map) if map.is_empty() => out.push_str("<span class=\"null\">{}</span>"),
        Value::Array(items) => {
            out.push_str("<table>");
            for (i, item) in items.iter().enumerate().take(MAX_ENTRIES) {
                let _ = write!(out, "<tr><th>{i}</th><td>");
                value_html(out, item);
                out.push_str("</td></tr>");
            }
            more(out, items.len());
            out.push_str("</table>");
        }
        Value::Object(map) => {
            out.push_str("<table>");
            for (k, item) in map.iter().take(MAX_ENTRIES) {
                let _ = write!(out, "<tr><th>{}</th><td>", escape(k));
                value_html(out, item);
                out.push_str("</td></tr>");
            }
            more(out, map.len());
            out.push_str("</table>");
        }
    }
}

fn more(out: &mut String, len: usize) {
    if len > MAX_ENTRIES {
        let _ = write!(
            out,
            "<tr><td colspan=\"2\">&hellip; {} more (see the JSON)</td></tr>",
            len - MAX_ENTRIES
        );
    }
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;
    use crate::runtime::HealthState;
    use crate::server::graph::tests::info;

    #[test]
    fn nested_values_become_escaped_tables() {
        let mut c = info(
            "pyroscope.write.<x>",
            &["pyroscope.store.a"],
            HealthState::Unhealthy,
        );
        c.health.message = "push failed: <html>".into();
        c.referenced_by = vec!["pyroscope.scrape.s".into()];
        c.arguments = Some(serde_json::json!({
            "endpoint": [{
                "url": "http://x/<y>",
                "basic_auth": {"username": "u", "password": "(secret)"},
                "headers": {},
            }],
            "external_labels": {"a\"b": "c"},
            "tls": null,
            "enabled": true,
            "n": 3,
        }));
        let at = UNIX_EPOCH + Duration::from_secs(1_750_000_000);
        let html = render(
            &c,
            Some(&LoadOutcome {
                at,
                error: Some("bad <config>".into()),
            }),
        );
        for want in [
            "<h1>pyroscope.write.&lt;x&gt;</h1>",
            r#"<td class="unhealthy">unhealthy</td>"#,
            "push failed: &lt;html&gt;",
            r#"<a href="/components/pyroscope.store.a">pyroscope.store.a</a>"#,
            r#"<a href="/components/pyroscope.scrape.s">pyroscope.scrape.s</a>"#,
            "<tr><th>endpoint</th><td><table><tr><th>0</th><td><table>",
            "<tr><th>password</th><td>(secret)</td></tr>",
            "<tr><th>url</th><td>http://x/&lt;y&gt;</td></tr>",
            "<tr><th>a&quot;b</th><td>c</td></tr>",
            "<tr><th>tls</th><td><span class=\"null\">null</span></td></tr>",
            "<tr><th>headers</th><td><span class=\"null\">{}</span></td></tr>",
            "<tr><th>enabled</th><td>true</td></tr><tr><th>endpoint</th>",
            "2025-06-15T15:06:40.000Z: <span class=\"unhealthy\">failed</span><pre>bad &lt;config&gt;</pre>",
            "<h2>Exports</h2>\n<p class=\"null\">none</p>",
            r#"<a href="/api/v0/web/components/pyroscope.write.&lt;x&gt;">as JSON</a>"#,
        ] {
            assert!(html.contains(want), "missing {want:?} in\n{html}");
        }
        for raw in ["<x>", "<html>", "<y>", "<config>"] {
            assert!(!html.contains(raw), "{raw} unescaped");
        }
        assert_eq!(load(None), "none yet");
        assert_eq!(
            load(Some(&LoadOutcome { at, error: None })),
            "2025-06-15T15:06:40.000Z: <span class=\"healthy\">ok</span>"
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let mut out = String::new();
        value_html(
            &mut out,
            &Value::Array(vec![Value::from(1); MAX_ENTRIES + 3]),
        );
        assert_eq!(out.matches("<tr><th>").count(), MAX_ENTRIES);
        assert!(out.contains("&hellip; 3 more (see the JSON)"));
    }
}
