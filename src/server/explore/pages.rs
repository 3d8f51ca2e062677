//! `GET /explore` and `GET /explore/assets/{name}`: the explorer's page and its built assets,
//! compiled into the binary (no CDN, nothing read from disk at run time). The assets are
//! generated from `ui/` and committed under `assets/`; never edited by hand.

use axum::extract::Path;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

/// Name, content type and bytes of every asset served.
const ASSETS: [(&str, &str, &[u8]); 2] = [
    (
        "explore.js",
        "text/javascript; charset=utf-8",
        include_bytes!("assets/explore.js"),
    ),
    (
        "explore.css",
        "text/css; charset=utf-8",
        include_bytes!("assets/explore.css"),
    ),
];

const PAGE: &str = include_str!("assets/explore.html");

pub(super) async fn page() -> Response {
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], PAGE).into_response()
}

pub(super) async fn asset(Path(name): Path<String>) -> Response {
    match find(&name) {
        Some((content_type, bytes)) => (
            [
                (header::CONTENT_TYPE, content_type),
                // The page asks for them by fixed names, so they must not outlive a new binary
                // in a cache.
                (header::CACHE_CONTROL, "no-cache"),
            ],
            bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
    }
}

fn find(name: &str) -> Option<(&'static str, &'static [u8])> {
    ASSETS
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, ty, bytes)| (*ty, *bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_loads_the_assets_served() {
        for (name, _, bytes) in ASSETS {
            assert!(
                PAGE.contains(&format!("/explore/assets/{name}")),
                "{name} not loaded"
            );
            assert!(!bytes.is_empty(), "{name}");
        }
        assert!(find("explore.js").is_some_and(|(t, _)| t.starts_with("text/javascript")));
        assert!(find("../mod.rs").is_none());
        assert!(find("explore.html").is_none());
    }
}
