//! The explorer's errors as the contract spells them: a status and `{"error": "message"}`.

use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

use crate::diff::DiffError;
use crate::query::source::QueryError;

/// An error answer: 400 for a bad parameter or a query that found nothing, 404 when no
/// `pyroscope.store` is open, 500 when reading failed.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct ApiError {
    pub status: StatusCode,
    pub message: String,
}

impl ApiError {
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    pub fn internal(message: impl Into<String>) -> ApiError {
        ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.into(),
        }
    }

    pub fn no_store() -> ApiError {
        ApiError {
            status: StatusCode::NOT_FOUND,
            message: "no pyroscope.store is configured: the explorer reads the profiles a \
                      pyroscope.store component keeps; add one to the config and forward \
                      profiles to its receiver"
                .to_string(),
        }
    }
}

impl From<QueryError> for ApiError {
    fn from(e: QueryError) -> ApiError {
        match e {
            // Nothing matched: the question was wrong for this data, and the message (with its
            // "did you mean") says how.
            QueryError::NoMatch(message) => ApiError::bad_request(message),
            e => ApiError::internal(e.to_string()),
        }
    }
}

impl From<DiffError> for ApiError {
    fn from(e: DiffError) -> ApiError {
        match e {
            DiffError::Malformed { .. } => ApiError::internal(e.to_string()),
            e => ApiError::bad_request(e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_errors_map_to_statuses() {
        let cases = [
            (QueryError::NoMatch("no profiles".into()), 400),
            (QueryError::Store("disk".into()), 500),
            (QueryError::Merge("bad".into()), 500),
        ];
        for (e, status) in cases {
            assert_eq!(ApiError::from(e).status.as_u16(), status);
        }
        assert_eq!(ApiError::no_store().status.as_u16(), 404);
        assert!(
            ApiError::no_store()
                .message
                .contains("no pyroscope.store is configured")
        );
    }

    #[tokio::test]
    async fn the_body_is_a_json_error() {
        let resp = ApiError::bad_request("bad <from>").into_response();
        assert_eq!(resp.status().as_u16(), 400);
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .expect("body");
        let json: serde_json::Value = serde_json::from_slice(&body).expect("json");
        assert_eq!(json, serde_json::json!({"error": "bad <from>"}));
    }
}
