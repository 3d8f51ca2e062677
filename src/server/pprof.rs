//! `/debug/pprof/profile?seconds=N`: a CPU profile of scraper itself, answered like Go's
//! net/http/pprof so that `pyroscope.scrape` (or `go tool pprof`) can point at us.

use std::collections::HashMap;

use axum::extract::Query;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

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
