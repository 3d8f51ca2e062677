//! `/api/v0/web/components[/{id}]`: the JSON Alloy's UI and tooling read.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use super::AppState;
use crate::runtime::ComponentInfo;

/// Every component with its health; arguments, exports and debug info only in the detail view,
/// as in Alloy.
pub(super) async fn list(State(state): State<AppState>) -> Json<Vec<ComponentInfo>> {
    Json(state.controller.components().await)
}

pub(super) async fn get(State(state): State<AppState>, Path(id): Path<String>) -> Response {
    match state.controller.component(&id).await {
        Some(info) => Json(info).into_response(),
        None => (StatusCode::NOT_FOUND, "404 page not found\n").into_response(),
    }
}
