//! `POST /api/v0/marks` with `{"name": "upgrade to 0.101.0 started"}`: records an event in
//! every running `pyroscope.store`, so `scraper diff --around-mark` can find it later. Optional
//! `"at"` (RFC 3339) backdates it; default now.

use std::time::SystemTime;

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;

#[derive(Deserialize)]
pub(super) struct MarkRequest {
    name: String,
    #[serde(default)]
    at: Option<String>,
}

pub(super) async fn create(
    State(state): State<AppState>,
    Json(req): Json<MarkRequest>,
) -> (StatusCode, Json<serde_json::Value>) {
    let name = req.name.trim();
    if name.is_empty() {
        return error(StatusCode::BAD_REQUEST, "a mark needs a non-empty name");
    }
    let at = match req.at.as_deref() {
        None => SystemTime::now(),
        Some(s) => match crate::gocompat::time::parse_rfc3339(s) {
            Some(t) => t,
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    &format!("invalid time {s:?}: expected RFC 3339"),
                );
            }
        },
    };
    let name = name.to_string();
    let recorded = crate::runtime::task::spawn_blocking("server.mark", {
        let name = name.clone();
        let stores = state.stores.clone();
        move || stores.record_mark(&name, at)
    })
    .await
    .unwrap_or(0);
    if recorded == 0 {
        return error(
            StatusCode::CONFLICT,
            "no pyroscope.store component is running: marks are stored with the profiles",
        );
    }
    tracing::info!(mark = %name, stores = recorded, "mark recorded");
    (
        StatusCode::OK,
        Json(serde_json::json!({
            "name": name,
            "at": crate::gocompat::time::rfc3339_millis(at),
            "stores": recorded,
        })),
    )
}

fn error(status: StatusCode, message: &str) -> (StatusCode, Json<serde_json::Value>) {
    (status, Json(serde_json::json!({ "error": message })))
}
