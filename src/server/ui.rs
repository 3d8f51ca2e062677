//! `/`: a plain, server-rendered overview of the components, their health and their edges.
//! Everything interpolated comes from the config file, so all of it is escaped.

use std::fmt::Write as _;

use axum::extract::State;
use axum::response::Html;

use super::AppState;
use crate::html::escape;
use crate::runtime::ComponentInfo;

pub(super) async fn index(State(state): State<AppState>) -> Html<String> {
    let components = state.controller.components().await;
    Html(render(&components, state.controller.is_ready()))
}

fn render(components: &[ComponentInfo], ready: bool) -> String {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>scraper</title>\n<style>\n\
         body{font-family:sans-serif;margin:2em}\
         table{border-collapse:collapse}\
         td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left;vertical-align:top}\
         .healthy{color:#1a7f37}.unhealthy{color:#cf222e}.exited{color:#9a6700}.unknown{color:#666}\
         \n</style>\n</head>\n<body>\n<h1>scraper</h1>\n",
    );
    let _ = writeln!(
        out,
        "<p>{} &middot; {} component(s) &middot; <a href=\"/metrics\">metrics</a> &middot; \
         <a href=\"/targets\">targets</a> &middot; \
         <a href=\"/api/v0/web/components\">API</a> &middot; \
         <a href=\"/debug/pprof/\">profile scraper</a></p>",
        if ready { "ready" } else { "not ready" },
        components.len()
    );
    if components.is_empty() {
        out.push_str("<p>No components are configured.</p>\n");
    } else {
        out.push_str(
            "<table>\n<tr><th>Component</th><th>Health</th><th>Message</th>\
             <th>References</th><th>Referenced by</th></tr>\n",
        );
        for c in components {
            let id = escape(&c.local_id);
            let _ = writeln!(
                out,
                "<tr><td><a href=\"/api/v0/web/components/{id}\">{id}</a></td>\
                 <td class=\"{state}\">{state}</td><td>{message}</td><td>{refs}</td>\
                 <td>{refd}</td></tr>",
                state = c.health.state.as_str(),
                message = escape(&c.health.message),
                refs = links(&c.references_to),
                refd = links(&c.referenced_by),
            );
        }
        out.push_str("</table>\n");
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn links(ids: &[String]) -> String {
    ids.iter()
        .map(|id| {
            let id = escape(id);
            format!("<a href=\"/api/v0/web/components/{id}\">{id}</a>")
        })
        .collect::<Vec<_>>()
        .join("<br>")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::HealthState;
    use crate::runtime::info::HealthInfo;

    #[test]
    fn renders_rows_with_escaped_messages() {
        let info = ComponentInfo {
            name: "t.x".into(),
            kind: "block",
            local_id: "t.x.a".into(),
            module_id: String::new(),
            label: "a".into(),
            references_to: vec!["t.x.b".into()],
            referenced_by: vec![],
            health: HealthInfo {
                state: HealthState::Unhealthy,
                message: "bad <value>".into(),
                updated_time: String::new(),
            },
            original: String::new(),
            arguments: None,
            exports: None,
            debug_info: None,
            live_debugging_enabled: false,
            evaluations: 1,
        };
        let html = render(&[info], true);
        assert!(
            html.contains(r#"<td class="unhealthy">unhealthy</td>"#),
            "{html}"
        );
        assert!(html.contains("bad &lt;value&gt;"), "{html}");
        assert!(html.contains(r#"<a href="/api/v0/web/components/t.x.b">t.x.b</a>"#));
        assert!(!html.contains("<value>"));
    }
}
