//! `/`: a server-rendered overview: the component graph (an inline SVG, `graph`), then a
//! table of the components with their health and edges, each linking to its page
//! (`/components/{id}`), and links to the explorer and the targets. Everything interpolated
//! comes from the config file or the outside, so all of it is escaped.

use std::fmt::Write as _;

use axum::extract::State;
use axum::response::Html;

use super::AppState;
use super::component::{links, load};
use crate::html::escape;
use crate::runtime::{ComponentInfo, LoadOutcome};

pub(super) async fn index(State(state): State<AppState>) -> Html<String> {
    let components = state.controller.components().await;
    Html(render(
        &components,
        state.controller.is_ready(),
        state.controller.last_load().as_ref(),
    ))
}

fn render(components: &[ComponentInfo], ready: bool, last_load: Option<&LoadOutcome>) -> String {
    let mut out = super::page::start("Components", "Components");
    let _ = writeln!(
        out,
        "<p>{} &middot; {} component(s) &middot; <a href=\"/explore\">explore profiles</a> \
         &middot; <a href=\"/targets\">targets</a> &middot; <a href=\"/metrics\">metrics</a> \
         &middot; <a href=\"/api/v0/web/components\">API</a> &middot; \
         <a href=\"/debug/pprof/\">profile scraper</a></p>\n<p>Last config load: {}</p>",
        if ready { "ready" } else { "not ready" },
        components.len(),
        load(last_load),
    );
    out.push_str(&super::graph::render(components));
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
                "<tr><td><a href=\"/components/{id}\">{id}</a></td>\
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
    out.push_str(super::page::END);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::HealthState;
    use crate::server::graph::tests::info;

    #[test]
    fn renders_the_graph_and_rows_with_escaped_messages() {
        let mut a = info("t.x.a", &["t.x.b"], HealthState::Unhealthy);
        a.health.message = "bad <value>".into();
        let b = info("t.x.b", &[], HealthState::Healthy);
        let html = render(&[b, a], true, None);
        assert!(
            html.contains(r#"<td class="unhealthy">unhealthy</td>"#),
            "{html}"
        );
        assert!(html.contains("bad &lt;value&gt;"), "{html}");
        assert!(html.contains(r#"<td><a href="/components/t.x.a">t.x.a</a></td>"#));
        assert!(html.contains(r#"<a href="/components/t.x.b">t.x.b</a>"#));
        assert!(!html.contains("<value>"));
        assert!(html.contains("<svg "), "{html}");
        assert_eq!(html.matches("<line class=\"edge\"").count(), 1);
        assert!(html.contains(r#"<a href="/explore">explore profiles</a>"#));
        assert!(html.contains(r#"<a href="/targets">targets</a>"#));
        assert!(html.contains("Last config load: none yet"));
        let empty = render(&[], false, None);
        assert!(empty.contains("No components are configured.") && !empty.contains("<svg"));
    }
}
