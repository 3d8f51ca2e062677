//! `/debug/pprof/profile?seconds=N`: a CPU profile of scraper itself, answered like Go's
//! net/http/pprof so that `pyroscope.scrape` (or `go tool pprof`) can point at us.
//!
//! `/debug/pprof/` lists what is served. `goroutine` and `heap` answer what is true of a Rust
//! process (its live tasks by name; resident memory by memory-budget account: see
//! `self_profiles`), as pprof or, with `?debug=1`, as text. Go's other profiles (`allocs`,
//! `mutex`, `block`, `threadcreate`) need sampling a Rust process does not do; their paths
//! answer 404 with the reason and where the same question is answered instead, rather than
//! Go-shaped profiles that would not be true.

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use axum::extract::State;

use super::AppState;
use super::self_profiles;
use crate::pprof::self_profile::{self, SelfProfileError};

/// Go's default when `seconds` is absent or not a positive integer.
const DEFAULT_SECONDS: u64 = 30;

pub(super) async fn profile(Query(query): Query<HashMap<String, String>>) -> Response {
    let seconds = query
        .get("seconds")
        .and_then(|s| s.parse::<u64>().ok())
        .filter(|&s| s > 0)
        .unwrap_or(DEFAULT_SECONDS);
    match self_profile::capture(seconds).await {
        Ok(bytes) => (
            [
                (header::CONTENT_TYPE, "application/octet-stream"),
                (
                    header::CONTENT_DISPOSITION,
                    "attachment; filename=\"profile\"",
                ),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            bytes,
        )
            .into_response(),
        Err(e @ SelfProfileError::InvalidDuration(_)) => {
            (StatusCode::BAD_REQUEST, format!("{e}\n")).into_response()
        }
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("Could not enable CPU profiling: {e}\n"),
        )
            .into_response(),
    }
}

/// Go's profile names we cannot serve truthfully, and where their question is answered.
const NOT_SERVED: [(&str, &str); 4] = [
    (
        "allocs",
        "scraper is a Rust program (mimalloc allocator) and does not sample allocations: see heap \
         for resident memory by account, and scraper_memory_* on /metrics",
    ),
    (
        "mutex",
        "scraper is a Rust program: lock contention is not sampled",
    ),
    (
        "block",
        "scraper is a Rust program: blocking is not sampled",
    ),
    (
        "threadcreate",
        "scraper is a Rust program: see process_threads on /metrics",
    ),
];

fn now_nanos() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

fn wants_text(query: &HashMap<String, String>) -> bool {
    query.get("debug").is_some_and(|d| d != "0")
}

/// A profile as Go's handlers send it: gzipped pprof, or text for `?debug=1`.
fn answer(name: &str, profile: crate::pprof::proto::Profile) -> Response {
    let bytes = crate::pprof::encode(&profile, crate::pprof::DEFAULT_LEVEL);
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_string()),
        ],
        bytes,
    )
        .into_response()
}

fn text(body: String) -> Response {
    ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response()
}

/// `/debug/pprof/goroutine`: the live tasks by name.
pub(super) async fn goroutine(Query(query): Query<HashMap<String, String>>) -> Response {
    if wants_text(&query) {
        return text(self_profiles::tasks_text());
    }
    answer("goroutine", self_profiles::tasks_profile(now_nanos()))
}

/// `/debug/pprof/heap`: resident memory by memory-budget account.
pub(super) async fn heap(
    State(state): State<AppState>,
    Query(query): Query<HashMap<String, String>>,
) -> Response {
    if wants_text(&query) {
        return text(self_profiles::heap_text(&state.budget));
    }
    answer(
        "heap",
        self_profiles::heap_profile(&state.budget, now_nanos()),
    )
}

/// `/debug/pprof/`: what can be fetched, as Go's index lists it.
pub(super) async fn index() -> Response {
    let mut out = String::from(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>/debug/pprof/</title>\n</head>\n<body>\n<h1>/debug/pprof/</h1>\n\
         <p>Profiles of scraper itself.</p>\n<table>\n\
         <tr><td><a href=\"profile?seconds=30\">profile</a></td>\
         <td>CPU profile (pprof), <code>?seconds=N</code>, default 30. \
         <code>pyroscope.scrape</code>'s <code>profile.process_cpu</code> and \
         <code>go tool pprof</code> read it.</td></tr>\n\
         <tr><td><a href=\"goroutine?debug=1\">goroutine</a></td>\
         <td>scraper's live tasks by name (a Rust program has tasks, not goroutines): pprof, \
         or text with <code>?debug=1</code>.</td></tr>\n\
         <tr><td><a href=\"heap?debug=1\">heap</a></td>\
         <td>resident memory by memory-budget account, and what no account covers (not per \
         allocation site: mimalloc does not sample allocations): pprof, or text with \
         <code>?debug=1</code>.</td></tr>\n",
    );
    for (name, why) in NOT_SERVED {
        out.push_str(&format!(
            "<tr><td>{name}</td><td>not served: {}</td></tr>\n",
            crate::html::escape(why)
        ));
    }
    out.push_str("</table>\n</body>\n</html>\n");
    ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], out).into_response()
}

/// Go's other profile paths: 404 with why and where to look instead, for whoever follows the
/// index or points `go tool pprof` at them.
pub(super) async fn not_served(axum::extract::Path(name): axum::extract::Path<String>) -> Response {
    let why = NOT_SERVED
        .iter()
        .find(|(n, _)| *n == name)
        .map_or("unknown profile", |(_, why)| why);
    (
        StatusCode::NOT_FOUND,
        format!("profile {name:?} is not available: {why}\n"),
    )
        .into_response()
}
