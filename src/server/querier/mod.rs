//! Pyroscope's query API on the running scraper's stores: `POST
//! /querier.v1.QuerierService/<Method>` (Connect unary, binary protobuf, gzip), so that
//! `scraper query/diff/pgo --url http://<scraper>`, `profilecli` and Grafana's Pyroscope data
//! source read this process's `pyroscope.store`s as they read a Pyroscope backend.
//!
//! * Methods: `ProfileTypes`, `LabelNames`, `LabelValues`, `Series`, `GetProfileStats`
//!   ([`catalog`]); `SelectMergeStacktraces` (flame graph or pprof, `go_pgo` included),
//!   `SelectMergeProfile`, `SelectSeries` and `Diff` ([`select`]). Read-only.
//! * Every open store is read (the same set `POST /api/v0/marks` writes to); with none open,
//!   calls fail with `failed_precondition`.
//! * Tenancy: `X-Scope-OrgID` is accepted and ignored. The store is single-tenant: whoever
//!   can reach this port reads everything in it, whatever tenant they name.
//! * Ranges are not limited (upstream refuses more than 24 h by default): the store is local.
//! * Reads are blocking store calls, run on the blocking pool.

mod catalog;
mod connect;
mod request;
#[cfg(test)]
mod seeds;
mod select;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use prost::Message;

use self::connect::ConnectError;
use super::AppState;
use crate::protocols::pyroscope::wire::Code;
use crate::query::stores::Stores;
use crate::query::types::TypeCache;

/// The service's path prefix.
pub(super) const SERVICE: &str = "querier.v1.QuerierService";

/// Methods upstream has and this querier does not serve, with why.
const NOT_SERVED: [(&str, &str); 3] = [
    ("SelectMergeSpanProfile", "span profiles are not stored"),
    ("SelectHeatmap", "heatmaps are not supported"),
    ("AnalyzeQuery", "query analysis is not supported"),
];

/// Decodes a `Req`, answers it with `f`, encodes the answer.
fn call<Req: Message + Default, Resp: Message>(
    method: &str,
    body: &[u8],
    f: impl FnOnce(Req) -> Result<Resp, ConnectError>,
) -> Result<Vec<u8>, ConnectError> {
    let req = Req::decode(body)
        .map_err(|e| ConnectError::invalid(format!("unmarshal {method} request: {e}")))?;
    f(req).map(|r| r.encode_to_vec())
}

/// One served method: answers a request body from the stores (blocking).
type Handler = fn(&str, &Stores, &TypeCache, &[u8]) -> Result<Vec<u8>, ConnectError>;

/// Every served method with its handler: the one list both routing and the "served" list of
/// the unknown-method error read.
const METHODS: [(&str, Handler); 9] = [
    ("ProfileTypes", |m, s, t, b| {
        call(m, b, |r| catalog::profile_types(s, t, r))
    }),
    ("LabelNames", |m, s, t, b| {
        call(m, b, |r| catalog::label_names(s, t, r))
    }),
    ("LabelValues", |m, s, t, b| {
        call(m, b, |r| catalog::label_values(s, t, r))
    }),
    ("Series", |m, s, t, b| {
        call(m, b, |r| catalog::series(s, t, r))
    }),
    ("GetProfileStats", |m, s, _, b| {
        call(
            m,
            b,
            |_: crate::protocols::pyroscope::proto::types::v1::GetProfileStatsRequest| {
                catalog::profile_stats(s)
            },
        )
    }),
    ("SelectMergeStacktraces", |m, s, _, b| {
        call(m, b, |r| select::select_merge_stacktraces(s, r))
    }),
    ("SelectMergeProfile", |m, s, _, b| {
        // The answer is already an encoded pprof, not a message to encode.
        use crate::protocols::pyroscope::proto::querier::v1::SelectMergeProfileRequest;
        let req = SelectMergeProfileRequest::decode(b)
            .map_err(|e| ConnectError::invalid(format!("unmarshal {m} request: {e}")))?;
        select::select_merge_profile(s, req)
    }),
    ("SelectSeries", |m, s, _, b| {
        call(m, b, |r| select::select_series(s, r))
    }),
    ("Diff", |m, s, _, b| call(m, b, |r| select::diff(s, r))),
];

fn handler(method: &str) -> Option<Handler> {
    METHODS.iter().find(|(m, _)| *m == method).map(|(_, h)| *h)
}

/// Answers `method` with `handler` from `stores` (blocking).
fn dispatch(
    method: &str,
    handler: Handler,
    stores: &Stores,
    types: &TypeCache,
    body: &[u8],
) -> Result<Vec<u8>, ConnectError> {
    if stores.is_empty() {
        return Err(ConnectError::new(
            Code::FailedPrecondition,
            "no pyroscope.store component is running: the querier reads the stores of this process",
        ));
    }
    handler(method, stores, types, body)
}

/// Not an API: the entry point of the `querier` fuzz target (fuzz/). Runs `body`, sent with
/// `Content-Type: application/proto` and `content_encoding` (if any), through what the handler
/// does before reading a store: the Connect body (gzip undone), then `method`'s request
/// decoded and checked and answered over no store. The encoded answer, or the error's HTTP
/// status and message.
#[doc(hidden)]
pub fn fuzz_request(
    method: &str,
    content_encoding: Option<&str>,
    body: &[u8],
) -> Result<Vec<u8>, (u16, String)> {
    let mut headers = HeaderMap::new();
    headers.insert(
        axum::http::header::CONTENT_TYPE,
        axum::http::HeaderValue::from_static("application/proto"),
    );
    if let Some(e) = content_encoding.and_then(|e| axum::http::HeaderValue::from_str(e).ok()) {
        headers.insert(axum::http::header::CONTENT_ENCODING, e);
    }
    let status = |e: ConnectError| (e.status.unwrap_or(e.code.http_status()), e.message);
    let body = connect::request_body(&headers, body).map_err(status)?;
    let handler = handler(method).ok_or_else(|| (404, format!("unknown method {method}")))?;
    handler(
        method,
        &Stores::new(Vec::new()),
        &TypeCache::default(),
        &body,
    )
    .map_err(status)
}

/// The methods a querier serves (for the fuzz target).
#[doc(hidden)]
pub fn fuzz_methods() -> Vec<&'static str> {
    METHODS.iter().map(|(m, _)| *m).collect()
}

/// `POST /querier.v1.QuerierService/{method}`.
pub(super) async fn handle(
    State(state): State<AppState>,
    Path(method): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some((_, why)) = NOT_SERVED.iter().find(|(m, _)| *m == method) {
        return ConnectError::unimplemented(format!("{SERVICE}/{method} is not served: {why}"))
            .into_response();
    }
    let Some(handler) = handler(&method) else {
        // Connect clients read a 404 as `unimplemented`; the body says which method.
        let served: Vec<&str> = METHODS.iter().map(|(m, _)| *m).collect();
        return ConnectError {
            status: Some(404),
            ..ConnectError::unimplemented(format!(
                "unknown method {SERVICE}/{method}; served: {}",
                served.join(", ")
            ))
        }
        .into_response();
    };
    let body = match connect::request_body(&headers, &body) {
        Ok(b) => b,
        Err(e) => return e.into_response(),
    };
    let stores = Stores::running(&state.stores);
    let types = state.types.clone();
    let started = std::time::Instant::now();
    let method_name = method.clone();
    let result = crate::runtime::task::spawn_blocking("server.querier", move || {
        dispatch(&method_name, handler, &stores, &types, &body)
    })
    .await
    .unwrap_or_else(|e| {
        Err(ConnectError::new(
            Code::Internal,
            format!("the query failed: {e}"),
        ))
    });
    tracing::debug!(method = %method, elapsed_ms = started.elapsed().as_millis() as u64, ok = result.is_ok(), "querier call");
    match result {
        Ok(message) => connect::response(&headers, message),
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_are_listed_once_and_apart_from_the_unserved() {
        let mut names: Vec<&str> = METHODS.iter().map(|(m, _)| *m).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), METHODS.len());
        for (m, _) in NOT_SERVED {
            assert!(handler(m).is_none(), "{m}");
        }
        assert!(handler("Diff").is_some());
        assert!(handler("Nope").is_none());
    }
}
