//! `/-/ready`, `/-/healthy` and `/-/reload`, with Alloy's status codes and texts.

use axum::extract::State;
use axum::http::StatusCode;

use super::AppState;

/// Carries this process's id, by which the cluster's checks recognise this instance behind an
/// address it does not advertise.
pub(super) async fn ready(
    State(state): State<AppState>,
) -> (StatusCode, [(&'static str, &'static str); 1], &'static str) {
    let id = [(
        crate::cluster::INSTANCE_HEADER,
        crate::cluster::instance_id(),
    )];
    if state.controller.is_ready() {
        (StatusCode::OK, id, "Alloy is ready.\n")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, id, "Alloy is not ready.\n")
    }
}

/// Lists unhealthy components by ID (Alloy lists component names, which cannot tell two
/// `pyroscope.scrape` blocks apart).
pub(super) async fn healthy(State(state): State<AppState>) -> (StatusCode, String) {
    let unhealthy = state.controller.unhealthy_components().await;
    if unhealthy.is_empty() {
        (
            StatusCode::OK,
            "All Alloy components are healthy.\n".to_string(),
        )
    } else {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("unhealthy components: {}\n", unhealthy.join(", ")),
        )
    }
}

pub(super) async fn reload(State(state): State<AppState>) -> (StatusCode, String) {
    tracing::info!("reload requested via /-/reload endpoint");
    match state.reload().await {
        Ok(()) => (StatusCode::OK, "config reloaded\n".to_string()),
        Err(e) => (StatusCode::BAD_REQUEST, format!("{e}\n")),
    }
}
