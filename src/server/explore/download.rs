//! `GET /api/v0/explore/pprof?type=ID&query=SEL&from=MS&to=MS`: the merged profile, the bytes
//! `scraper query -o` writes; `GET /api/v0/explore/pgo?query=SEL&from=MS&to=MS`: `default.pgo`
//! as `scraper pgo` builds it with its default options (CPU, five leaf frames, callees
//! aggregated).

use std::collections::HashMap;

use axum::extract::rejection::QueryRejection;
use axum::extract::{Query as QueryString, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};

use super::error::ApiError;
use super::params::Params;
use super::stores;
use crate::pprof::pgo::{PgoOptions, to_pgo};
use crate::query::source::select_required;
use crate::server::AppState;

/// `scraper pgo`'s default type.
const PGO_TYPE: &str = "process_cpu";

pub(super) async fn pprof(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = Params::from_request(query)?.query("", None)?;
    let bytes = stores::read("server.explore.pprof", &state.stores, move |s| {
        let merged = select_required(s, &q, "the range", &mut |_, _| {})?;
        Ok(crate::pprof::encode(
            &merged.profile,
            crate::pprof::DEFAULT_LEVEL,
        ))
    })
    .await?;
    Ok(attachment("profile.pb.gz", bytes))
}

pub(super) async fn pgo(
    State(state): State<AppState>,
    query: Result<QueryString<HashMap<String, String>>, QueryRejection>,
) -> Result<Response, ApiError> {
    let q = Params::from_request(query)?.query("", Some(PGO_TYPE))?;
    let bytes = stores::read("server.explore.pgo", &state.stores, move |s| {
        let merged = select_required(s, &q, "the range", &mut |_, _| {})?;
        let (profile, _) = to_pgo(&merged.profile, &PgoOptions::default())
            .map_err(|e| ApiError::bad_request(format!("building default.pgo: {e}")))?;
        Ok(crate::pprof::encode(&profile, crate::pprof::DEFAULT_LEVEL))
    })
    .await?;
    Ok(attachment("default.pgo", bytes))
}

fn attachment(name: &'static str, bytes: Vec<u8>) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/octet-stream".to_string()),
            (
                header::CONTENT_DISPOSITION,
                format!("attachment; filename=\"{name}\""),
            ),
        ],
        bytes,
    )
        .into_response()
}
