//! The cluster's ring as this instance sees it: `GET /api/v0/web/peers` (JSON: this instance,
//! the members, every candidate peer with its state and last check, and how many targets each
//! component owns here) and `/cluster`, the same as a page.

use std::fmt::Write as _;

use axum::Json;
use axum::extract::State;
use axum::response::Html;

use super::AppState;
use crate::cluster::View;
use crate::html::escape;

pub(super) async fn api(State(state): State<AppState>) -> Json<View> {
    Json(state.cluster.view())
}

pub(super) async fn page(State(state): State<AppState>) -> Html<String> {
    Html(render(&state.cluster.view()))
}

fn render(v: &View) -> String {
    let mut out = super::page::start("Cluster", "Cluster");
    out.push_str("<h1>Cluster</h1>\n");
    let _ = writeln!(
        out,
        "<p>This instance: <b>{}</b> <code>{}</code>, membership from {} (ring version {}). \
         JSON: <a href=\"/api/v0/web/peers\">/api/v0/web/peers</a>.</p>",
        escape(&v.local.name),
        escape(&v.local.address),
        escape(&v.mode),
        v.version
    );
    if !v.enabled {
        out.push_str(
            "<p class=\"muted\">Clustering is off (<code>--cluster.enabled</code>): this instance is the only peer.</p>\n",
        );
    }
    if v.membership_unknown {
        out.push_str(
            "<p class=\"down\">Membership unknown: the peers were never listed, so this instance scrapes every clustered target it sees.</p>\n",
        );
    }
    if let Some(e) = &v.source_error {
        let _ = writeln!(
            out,
            "<p class=\"down\">Membership source failing: {}</p>",
            escape(e)
        );
    }
    let _ = writeln!(
        out,
        "<h2>Members ({})</h2>\n<table><tr><th>name</th><th>address</th></tr>",
        v.members.len()
    );
    for m in &v.members {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td></tr>",
            escape(&m.name),
            escape(&m.address)
        );
    }
    out.push_str("</table>\n<h2>Peers</h2>\n<table><tr><th>name</th><th>address</th><th>state</th><th>last check</th><th>failures</th><th>last error</th></tr>\n");
    for p in &v.peers {
        let state = match p.state {
            crate::cluster::State::Up => ("up", "up"),
            crate::cluster::State::Down => ("down", "down"),
            crate::cluster::State::Joining => ("unknown", "joining"),
        };
        let last = p
            .last_check
            .map(crate::gocompat::time::rfc3339_nanos)
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td><code>{}</code></td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td class=\"error\">{}</td></tr>",
            escape(&p.name),
            escape(&p.address),
            state.0,
            state.1,
            escape(&last),
            p.failures,
            escape(p.last_error.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</table>\n<h2>Targets owned here</h2>\n<table><tr><th>component</th><th>owned</th><th>given</th></tr>\n");
    for c in &v.components {
        let _ = writeln!(
            out,
            "<tr><td><a href=\"/components/{0}\">{0}</a></td><td>{1}</td><td>{2}</td></tr>",
            escape(&c.component),
            c.owned,
            c.total
        );
    }
    out.push_str("</table>\n");
    out.push_str(super::page::END);
    out
}

#[cfg(test)]
mod tests {
    use crate::cluster::Cluster;

    #[test]
    fn the_page_shows_this_instance_and_escapes() {
        let c = Cluster::alone("<pod>", "127.0.0.1:4040");
        c.report_owned("pyroscope.scrape.x", 3, 7);
        let html = super::render(&c.view());
        assert!(html.contains("&lt;pod&gt;"), "{html}");
        assert!(html.contains("Clustering is off"), "{html}");
        assert!(html.contains("<td>3</td><td>7</td>"), "{html}");
    }
}
