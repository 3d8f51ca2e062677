//! `GET /api/v0/marks?from=MS&to=MS`: the marks of every open store in a range, oldest first
//! (`POST` records them: `server::marks`).

use std::collections::HashMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use serde::Serialize;

use super::error::ApiError;
use super::params::{Params, millis};
use super::stores;
use crate::query::source::{Mark, ProfileSource as _};
use crate::server::AppState;

/// A mark as the contract's JSON carries it.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub(super) struct MarkJson {
    name: String,
    at: u64,
}

impl From<&Mark> for MarkJson {
    fn from(m: &Mark) -> MarkJson {
        MarkJson {
            name: m.name.clone(),
            at: millis(m.at),
        }
    }
}

#[derive(Debug, Serialize)]
pub(super) struct Marks {
    marks: Vec<MarkJson>,
}

pub(super) async fn list(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Json<Marks>, ApiError> {
    let (from, to) = Params::from_request(query)?.range("")?;
    stores::read("server.explore.marks", &state.stores, move |s| {
        let marks = s.marks(from, to)?.iter().map(MarkJson::from).collect();
        Ok(Marks { marks })
    })
    .await
    .map(Json)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    #[test]
    fn marks_carry_milliseconds() {
        let m = Mark {
            name: "upgrade".into(),
            at: UNIX_EPOCH + Duration::from_millis(1_750_000_000_123),
        };
        assert_eq!(
            serde_json::to_value(MarkJson::from(&m)).expect("json"),
            serde_json::json!({"name": "upgrade", "at": 1_750_000_000_123u64})
        );
    }
}
