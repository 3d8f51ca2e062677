//! The two servers (axum over hyper, which speaks HTTP/1.1 and HTTP/2 with prior knowledge on
//! one port): OTLP/gRPC's `ProfilesService/Export` and OTLP/HTTP's `POST <profiles path>`.
//! Both take a request slot (at most [`MAX_IN_FLIGHT`] requests at once), reserve the body's
//! size in the memory budget before reading it, read a bounded body, reserve the
//! decompression's bound before decompressing it within the same limit, reserve what the
//! conversion takes (the decoded message, then the pprof samples it expands to, measured
//! before any is built), convert on the blocking pool (`protocols::otlp::ingest`) and hand the
//! profiles to `output.profiles`, which never waits (`crate::profiles`): the answer does not
//! depend on any backend. The reservation, the request slot and the conversion slot move into
//! the blocking conversion: a client that goes away does not free them while it still runs.

use std::collections::BTreeSet;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Limited};
use prost::Message as _;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

use super::events::{AttributesDropped, ProfilesDropped, RequestAccepted, RequestRejected};
use super::metrics::InstanceMetrics;
use crate::budget::{Budget, Priority, Refusals, Reservation, Use};
use crate::pprof::{self, Limits, PprofError};
use crate::profiles::{Appendable as _, FanOut, Profile};
use crate::protocols::otlp::grpc::{self, Status};
use crate::protocols::otlp::ingest::{ingest, request_output_bytes};
use crate::protocols::otlp::labels::{Place, ValueKind};
use crate::protocols::otlp::proto::collector::profiles::v1development::{
    ExportProfilesServiceRequest, ExportProfilesServiceResponse,
};
use crate::runtime::event::emit;
use crate::sync::lock;

/// Converting a request takes up to this many times its uncompressed size: the decoded
/// message, the pprof profiles built from it and their encoding.
const MEMORY_FACTOR: u64 = 8;
/// Requests read or converted at once, per component (both transports): each may hold a body
/// of up to the size limit, so this and the memory budget bound what clients can make us hold.
pub(crate) const MAX_IN_FLIGHT: usize = 64;
/// The pprof profiles one request may expand to (bytes, see `ingest::request_output_bytes`):
/// the dictionary lets a small request describe huge profiles, refused outright beyond this.
const MAX_OUTPUT_BYTES: u64 = 1 << 30;
/// What a client refused for lack of memory is told to wait before retrying.
pub(crate) const RETRY_DELAY: Duration = Duration::from_secs(1);

/// What every request needs, shared by the component and its servers.
pub(crate) struct Shared {
    pub(crate) id: String,
    pub(crate) fanout: FanOut,
    pub(crate) budget: Budget,
    pub(crate) metrics: InstanceMetrics,
    pub(crate) profiles_forwarded: AtomicU64,
    pub(crate) requests_rejected: AtomicU64,
    pub(crate) refusals: Refusals,
    /// Conversions running at once: CPU work, one per core (a bound on their memory too).
    pub(crate) converters: Arc<Semaphore>,
    /// Requests in flight (see [`MAX_IN_FLIGHT`]).
    pub(crate) requests: Arc<Semaphore>,
    /// When a refusal was last logged as a warning, and how many were not since.
    pub(crate) refusal_logged: Mutex<Option<std::time::Instant>>,
    pub(crate) refusals_not_logged: AtomicU64,
    /// The (place, kind) pairs of dropped attributes already warned about: a client sends the
    /// same kinds with every request, so each pair is a warning once, then debug lines (the
    /// counter keeps counting). At most 15 pairs.
    pub(crate) attributes_warned: Mutex<BTreeSet<(Place, ValueKind)>>,
    /// Why the component is unhealthy (the last refused request, or dropped profiles), if it is.
    pub(crate) problem: Mutex<Option<(SystemTime, String)>>,
}

impl Shared {
    pub(crate) fn new(
        id: String,
        fanout: FanOut,
        budget: Budget,
        metrics: InstanceMetrics,
    ) -> Self {
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        Shared {
            id,
            fanout,
            budget,
            metrics,
            profiles_forwarded: AtomicU64::new(0),
            requests_rejected: AtomicU64::new(0),
            refusals: Refusals::new(
                "OTLP requests refused: the memory budget is full",
                "OTLP requests accepted again: the memory budget has room",
            ),
            converters: Arc::new(Semaphore::new(cores.max(2))),
            requests: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            refusal_logged: Mutex::new(None),
            refusals_not_logged: AtomicU64::new(0),
            attributes_warned: Mutex::new(BTreeSet::new()),
            problem: Mutex::new(None),
        }
    }

    pub(crate) fn set_problem(&self, problem: Option<String>) {
        *lock(&self.problem) = problem.map(|p| (SystemTime::now(), p));
    }
}

/// Why a request was refused, in terms both transports map to their own.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The request cannot be read or converted (gRPC INVALID_ARGUMENT, HTTP 400).
    Invalid(String),
    /// Larger than the configured limit (gRPC RESOURCE_EXHAUSTED, HTTP 413).
    TooLarge(String),
    /// No room in the memory budget now (gRPC RESOURCE_EXHAUSTED, HTTP 429): retry later.
    Exhausted(String),
    /// An encoding we do not decode (gRPC UNIMPLEMENTED, HTTP 415).
    Unsupported(String),
    /// Our fault (gRPC INTERNAL, HTTP 500).
    Internal(String),
}

impl Failure {
    fn message(&self) -> &str {
        match self {
            Failure::Invalid(m)
            | Failure::TooLarge(m)
            | Failure::Exhausted(m)
            | Failure::Unsupported(m)
            | Failure::Internal(m) => m,
        }
    }

    fn grpc(&self) -> Status {
        match self {
            Failure::Invalid(_) => Status::InvalidArgument,
            Failure::TooLarge(_) | Failure::Exhausted(_) => Status::ResourceExhausted,
            Failure::Unsupported(_) => Status::Unimplemented,
            Failure::Internal(_) => Status::Internal,
        }
    }

    fn http(&self) -> StatusCode {
        match self {
            Failure::Invalid(_) => StatusCode::BAD_REQUEST,
            Failure::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            Failure::Exhausted(_) => StatusCode::TOO_MANY_REQUESTS,
            Failure::Unsupported(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            Failure::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// Reads a body of at most `limit` bytes within `timeout`.
async fn read_body(body: Body, limit: u64, timeout: Duration) -> Result<Bytes, Failure> {
    let limited = Limited::new(body, usize::try_from(limit).unwrap_or(usize::MAX));
    match tokio::time::timeout(timeout, limited.collect()).await {
        Err(_) => Err(Failure::Invalid(format!(
            "request body not received within {timeout:?}"
        ))),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(Failure::TooLarge(
            format!("request body exceeds the {limit}-byte limit"),
        )),
        Ok(Err(e)) => Err(Failure::Invalid(format!("error reading request body: {e}"))),
    }
}

/// How much of a body refused for its declared length is read and thrown away before the
/// answer. Answering before the body is in and closing makes most HTTP clients (reqwest, and
/// the Collector's when its write fails first) report a broken pipe instead of the 413 that says
/// what to change; Go's net/http likewise discards a little of an unread body. Beyond this the
/// connection is closed and the client sees an error.
const DRAIN_BYTES: u64 = 16 << 20;

/// Reads and discards up to `max` bytes of `body`, within `timeout`; nothing is kept.
async fn drain(body: Body, max: u64, timeout: Duration) {
    let mut body = body;
    let mut seen = 0u64;
    let discard = async {
        while let Some(Ok(frame)) = body.frame().await {
            if let Some(data) = frame.data_ref() {
                seen = seen.saturating_add(data.len() as u64);
                if seen > max {
                    break;
                }
            }
        }
    };
    let _ = tokio::time::timeout(timeout, discard).await;
}

/// Decompresses a gzip payload within `limit` bytes; a payload said to be gzip must be one
/// (its magic number), not passed through as it is.
fn gunzip(data: &Bytes, limit: u64) -> Result<Bytes, Failure> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Err(Failure::Invalid(
            "payload declared gzip is not gzip (no gzip header)".into(),
        ));
    }
    let limits = Limits {
        max_decompressed_bytes: usize::try_from(limit).unwrap_or(usize::MAX),
    };
    match pprof::gunzip(data, &limits) {
        Ok(v) => Ok(Bytes::from(v)),
        Err(PprofError::TooLarge { .. }) => Err(Failure::TooLarge(format!(
            "decompressed request exceeds the {limit}-byte limit"
        ))),
        Err(e) => Err(Failure::Invalid(format!("invalid gzip payload: {e}"))),
    }
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

/// What a request holds while it is read and converted: its request slot and its memory.
pub(crate) struct Admission {
    _slot: tokio::sync::OwnedSemaphorePermit,
    memory: Reservation,
}

fn exhausted(shared: &Shared, need: u64, what: &str) -> Failure {
    shared.refusals.refused(&shared.budget, &shared.id, need);
    Failure::Exhausted(format!(
        "the memory budget (--memory.limit) has no room for {what} ({need} bytes); retry later"
    ))
}

/// A request slot and `bytes` (the body's bound) of memory, before the body is read.
fn admit(shared: &Shared, bytes: u64) -> Result<Admission, Failure> {
    let Ok(slot) = shared.requests.clone().try_acquire_owned() else {
        shared.refusals.refused(&shared.budget, &shared.id, 0);
        return Err(Failure::Exhausted(format!(
            "{MAX_IN_FLIGHT} requests are already in flight; retry later"
        )));
    };
    let Some(memory) = shared
        .budget
        .try_reserve(Use::Receive, Priority::Normal, bytes)
    else {
        return Err(exhausted(shared, bytes, "this request's body"));
    };
    Ok(Admission {
        _slot: slot,
        memory,
    })
}

impl Admission {
    /// Grows the reservation to `bytes` (shrinking always succeeds).
    fn hold(&mut self, shared: &Shared, bytes: u64, what: &str) -> Result<(), Failure> {
        if self.memory.try_resize(Priority::Normal, bytes) {
            Ok(())
        } else {
            Err(exhausted(shared, bytes, what))
        }
    }
}

/// The body's bound: the declared `Content-Length` when it is within `limit` (refused when it
/// is not), else `limit`.
fn body_bound(headers: &HeaderMap, limit: u64) -> Result<u64, Failure> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match declared {
        Some(n) if n > limit => Err(Failure::TooLarge(format!(
            "request body of {n} bytes exceeds the {limit}-byte limit"
        ))),
        Some(n) => Ok(n),
        None => Ok(limit),
    }
}

/// Decodes, converts and forwards one export request (`message`: the uncompressed protobuf);
/// returns how many profiles were forwarded.
async fn process(
    shared: &Arc<Shared>,
    mut admission: Admission,
    message: Bytes,
) -> Result<usize, Failure> {
    let need = (message.len() as u64).saturating_mul(MEMORY_FACTOR);
    admission.hold(shared, need, "converting this request")?;
    shared.refusals.accepted(&shared.id);
    let slot = shared
        .converters
        .clone()
        .acquire_owned()
        .await
        .map_err(|e| Failure::Internal(format!("conversion slots closed: {e}")))?;
    let for_task = Arc::clone(shared);
    let converted =
        crate::runtime::task::spawn_blocking("otelcol.receiver.otlp.convert", move || {
            // Held until the conversion ends, whether or not the client is still there.
            let _slot = slot;
            let mut admission = admission;
            let req = ExportProfilesServiceRequest::decode(message)
                .map_err(|e| Failure::Invalid(format!("failed to parse protobuf request: {e}")))?;
            // pprof gives every sample its own copy of its stack and labels, and every
            // service's part of a profile its own copy of the dictionary entries it uses,
            // which the OTLP dictionary shares: measure that before building any of it. The
            // encoded pprofs take about as much again.
            let output = request_output_bytes(&req).saturating_mul(2);
            if output > MAX_OUTPUT_BYTES
                || (for_task.budget.limit() != 0 && output > for_task.budget.limit())
            {
                return Err(Failure::TooLarge(format!(
                    "the request's samples expand to {output} bytes of pprof (limit {MAX_OUTPUT_BYTES})"
                )));
            }
            admission.hold(
                &for_task,
                need.saturating_add(output),
                "this request's profiles",
            )?;
            let ingested =
                ingest(&req, now_nanos()).map_err(|e| Failure::Invalid(e.to_string()))?;
            drop(req);
            let profiles = ingested
                .profiles
                .into_iter()
                .map(|i| Profile::new(i.labels, pprof::encode(&i.profile, 1)))
                .collect::<Vec<Profile>>();
            Ok::<_, Failure>((profiles, ingested.dropped))
        })
        .await
        .map_err(|e| Failure::Internal(format!("conversion failed: {e}")))??;
    let (converted, dropped) = converted;
    if !dropped.is_empty() {
        emit(AttributesDropped {
            shared,
            dropped: &dropped,
        });
    }
    let n = converted.len();
    if n > 0 && shared.fanout.is_empty() {
        emit(ProfilesDropped {
            shared,
            reason: "no_output",
            profiles: n,
        });
        return Ok(0);
    }
    shared.fanout.append(converted);
    Ok(n)
}

// ---------------------------------------------------------------------------------------------
// OTLP/gRPC
// ---------------------------------------------------------------------------------------------

#[derive(Clone)]
struct RouteState {
    shared: Arc<Shared>,
    max_size: u64,
    read_timeout: Duration,
}

fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "OK",
        Status::InvalidArgument => "INVALID_ARGUMENT",
        Status::ResourceExhausted => "RESOURCE_EXHAUSTED",
        Status::Unimplemented => "UNIMPLEMENTED",
        Status::Internal => "INTERNAL",
        _ => "UNKNOWN",
    }
}

/// A trailers-only gRPC answer carrying `status`.
fn grpc_error(status: Status, message: &str) -> Response {
    let mut r = Response::new(Body::empty());
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(grpc::CONTENT_TYPE),
    );
    // What we decode, so that a client sending another encoding can switch (gRPC's
    // compression spec: UNIMPLEMENTED with the accepted encodings).
    h.insert("grpc-accept-encoding", HeaderValue::from_static("gzip"));
    h.insert("grpc-status", HeaderValue::from(u16::from(status.code())));
    if let Ok(v) = HeaderValue::from_str(&grpc::encode_message(message)) {
        h.insert("grpc-message", v);
    }
    r
}

/// The gRPC answer to a refusal: a memory-budget refusal carries a `RetryInfo`, without which
/// OTLP exporters do not retry RESOURCE_EXHAUSTED; a request over the size limit does not (a
/// retry would be refused again).
fn grpc_failure(f: &Failure) -> Response {
    let status = f.grpc();
    let mut r = grpc_error(status, f.message());
    if let Failure::Exhausted(m) = f
        && let Ok(v) = HeaderValue::from_str(&grpc::retry_details(status, m, RETRY_DELAY))
    {
        r.headers_mut().insert(grpc::STATUS_DETAILS_HEADER, v);
    }
    r
}

/// A successful answer: the empty response message, then `grpc-status: 0` in the trailers.
fn grpc_ok(message: &[u8]) -> Response {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    let frames = futures::stream::iter([
        Ok::<_, std::convert::Infallible>(http_body::Frame::data(grpc::frame(message, false))),
        Ok(http_body::Frame::trailers(trailers)),
    ]);
    let mut r = Response::new(Body::new(http_body_util::StreamBody::new(frames)));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(grpc::CONTENT_TYPE),
    );
    r
}

/// Whether `content_type` is gRPC with protobuf messages: `application/grpc` or
/// `application/grpc+proto`, optionally with parameters (not `grpc-web`, not `+json`).
fn is_grpc_proto(content_type: &str) -> bool {
    let media = content_type.split(';').next().unwrap_or("").trim();
    media.eq_ignore_ascii_case(grpc::CONTENT_TYPE)
        || media.eq_ignore_ascii_case("application/grpc+proto")
}

/// gRPC's `grpc-timeout` (`<1-8 digits><H|M|S|m|u|n>`), if present and well formed.
fn grpc_timeout(headers: &HeaderMap) -> Option<Duration> {
    let v = headers.get("grpc-timeout")?.to_str().ok()?.trim();
    if v.len() < 2 || v.len() > 9 {
        return None;
    }
    let (digits, unit) = v.split_at(v.len() - 1);
    let n: u64 = digits.parse().ok()?;
    Some(match unit {
        "H" => Duration::from_secs(n.saturating_mul(3600)),
        "M" => Duration::from_secs(n.saturating_mul(60)),
        "S" => Duration::from_secs(n),
        "m" => Duration::from_millis(n),
        "u" => Duration::from_micros(n),
        "n" => Duration::from_nanos(n),
        _ => return None,
    })
}

async fn grpc_message(st: &RouteState, req: Request) -> Result<(Admission, Bytes), Failure> {
    let (parts, body) = req.into_parts();
    let limit = st.max_size.saturating_add(5);
    let mut admission = admit(&st.shared, body_bound(&parts.headers, limit)?)?;
    // The client gives up at its deadline: reading past it only holds memory.
    let timeout = grpc_timeout(&parts.headers).map_or(st.read_timeout, |t| t.min(st.read_timeout));
    let body = read_body(body, limit, timeout).await?;
    admission.memory.resize(body.len() as u64);
    let (compressed, message) = grpc::unframe(&body, st.max_size).map_err(|e| match e {
        grpc::FrameError::TooLarge { .. } => Failure::TooLarge(e.to_string()),
        _ => Failure::Invalid(e.to_string()),
    })?;
    if !compressed {
        return Ok((admission, message));
    }
    let encoding = parts
        .headers
        .get("grpc-encoding")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("identity");
    match encoding {
        "gzip" => {
            let held = (body.len() as u64).saturating_add(st.max_size);
            admission.hold(&st.shared, held, "decompressing this request")?;
            let message = gunzip(&message, st.max_size)?;
            drop(body);
            admission.memory.resize(message.len() as u64);
            Ok((admission, message))
        }
        other => Err(Failure::Unsupported(format!(
            "grpc-encoding {other:?} is not supported (gzip)"
        ))),
    }
}

/// A request that is not gRPC at all gets a plain HTTP answer, as gRPC's HTTP/2 protocol
/// says: 415 for another content type, 505 for HTTP/1 (gRPC needs HTTP/2's trailers).
fn not_grpc(req: &Request) -> Option<(StatusCode, String)> {
    if req.version() != axum::http::Version::HTTP_2 {
        return Some((
            StatusCode::HTTP_VERSION_NOT_SUPPORTED,
            format!("gRPC needs HTTP/2, the request is {:?}", req.version()),
        ));
    }
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !is_grpc_proto(content_type) {
        return Some((
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            format!("content-type {content_type:?} is not gRPC with protobuf (application/grpc)"),
        ));
    }
    None
}

async fn handle_grpc(State(st): State<RouteState>, req: Request) -> Response {
    const TRANSPORT: &str = "grpc";
    if let Some((status, message)) = not_grpc(&req) {
        emit(RequestRejected {
            shared: &st.shared,
            transport: TRANSPORT,
            status: status.as_str(),
            message: &message,
        });
        return (status, message).into_response();
    }
    let result = match grpc_message(&st, req).await {
        Ok((admission, message)) => process(&st.shared, admission, message).await,
        Err(f) => Err(f),
    };
    match result {
        Ok(profiles) => {
            emit(RequestAccepted {
                shared: &st.shared,
                transport: TRANSPORT,
                status: "OK",
                profiles,
            });
            grpc_ok(&ExportProfilesServiceResponse::default().encode_to_vec())
        }
        Err(f) => {
            let status = f.grpc();
            emit(RequestRejected {
                shared: &st.shared,
                transport: TRANSPORT,
                status: status_name(status),
                message: f.message(),
            });
            grpc_failure(&f)
        }
    }
}

pub(crate) fn grpc_router(shared: Arc<Shared>, max_size: u64, read_timeout: Duration) -> Router {
    let state = RouteState {
        shared,
        max_size,
        read_timeout,
    };
    Router::new()
        .route(grpc::EXPORT_PATH, post(handle_grpc))
        .fallback(|| async { grpc_error(Status::Unimplemented, "unknown service or method") })
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

// ---------------------------------------------------------------------------------------------
// OTLP/HTTP
// ---------------------------------------------------------------------------------------------

/// An OTLP/HTTP error: a `google.rpc.Status` body (code, message); a memory-budget refusal
/// (429) says when to retry (`Retry-After`, which OTLP/HTTP exporters honour).
fn http_error(f: &Failure) -> Response {
    let body = grpc::RpcStatus {
        code: i32::from(f.grpc().code()),
        message: f.message().to_owned(),
        details: Vec::new(),
    }
    .encode_to_vec();
    let mut r = (
        f.http(),
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/x-protobuf"),
        )],
        body,
    )
        .into_response();
    if let Failure::Exhausted(_) = f {
        r.headers_mut().insert(
            header::RETRY_AFTER,
            HeaderValue::from(RETRY_DELAY.as_secs().max(1)),
        );
    }
    r
}

async fn http_message(st: &RouteState, req: Request) -> Result<(Admission, Bytes), Failure> {
    let (parts, body) = req.into_parts();
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let media = content_type.split(';').next().unwrap_or("").trim();
    match media {
        "application/x-protobuf" | "application/protobuf" => {}
        "application/json" => {
            return Err(Failure::Unsupported(
                "OTLP/HTTP JSON is not supported for profiles; send application/x-protobuf".into(),
            ));
        }
        other => {
            return Err(Failure::Unsupported(format!(
                "unsupported content type {other:?} (application/x-protobuf)"
            )));
        }
    }
    let encoding = parts
        .headers
        .get(header::CONTENT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let gzip = match encoding.as_str() {
        "" | "identity" => false,
        "gzip" | "x-gzip" => true,
        other => {
            return Err(Failure::Unsupported(format!(
                "unsupported Content-Encoding {other:?} (gzip, identity)"
            )));
        }
    };
    let bound = match body_bound(&parts.headers, st.max_size) {
        Ok(bound) => bound,
        Err(too_large) => {
            drain(body, DRAIN_BYTES, st.read_timeout).await;
            return Err(too_large);
        }
    };
    let mut admission = admit(&st.shared, bound)?;
    let body = read_body(body, st.max_size, st.read_timeout).await?;
    admission.memory.resize(body.len() as u64);
    if !gzip {
        return Ok((admission, body));
    }
    let held = (body.len() as u64).saturating_add(st.max_size);
    admission.hold(&st.shared, held, "decompressing this request")?;
    let message = gunzip(&body, st.max_size)?;
    drop(body);
    admission.memory.resize(message.len() as u64);
    Ok((admission, message))
}

async fn handle_http(State(st): State<RouteState>, req: Request) -> Response {
    const TRANSPORT: &str = "http";
    let result = match http_message(&st, req).await {
        Ok((admission, message)) => process(&st.shared, admission, message).await,
        Err(f) => Err(f),
    };
    match result {
        Ok(profiles) => {
            emit(RequestAccepted {
                shared: &st.shared,
                transport: TRANSPORT,
                status: "200",
                profiles,
            });
            (
                StatusCode::OK,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/x-protobuf"),
                )],
                ExportProfilesServiceResponse::default().encode_to_vec(),
            )
                .into_response()
        }
        Err(f) => {
            emit(RequestRejected {
                shared: &st.shared,
                transport: TRANSPORT,
                status: f.http().as_str(),
                message: f.message(),
            });
            http_error(&f)
        }
    }
}

pub(crate) fn http_router(
    shared: Arc<Shared>,
    path: &str,
    max_size: u64,
    read_timeout: Duration,
) -> Router {
    let state = RouteState {
        shared,
        max_size,
        read_timeout,
    };
    Router::new()
        .route(path, post(handle_http))
        .fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found\n") })
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

// ---------------------------------------------------------------------------------------------
// Serving
// ---------------------------------------------------------------------------------------------

/// One running server; stopping it leaves the listener open.
pub(crate) struct Instance {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Instance {
    /// Serves `app` on a duplicate of `listener`.
    pub(crate) fn start(
        name: &'static str,
        listener: &std::net::TcpListener,
        app: Router,
        max_concurrent_streams: u32,
        id: String,
    ) -> std::io::Result<Instance> {
        let listener = tokio::net::TcpListener::from_std(listener.try_clone()?)?;
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let task = crate::runtime::task::spawn(
            name,
            super::serve::serve(listener, app, max_concurrent_streams, stop, id),
        );
        Ok(Instance { cancel, task })
    }

    /// Stops accepting, lets requests in flight finish for up to `grace`, then drops the rest.
    pub(crate) async fn stop(mut self, grace: Duration) {
        self.cancel.cancel();
        if tokio::time::timeout(grace, &mut self.task).await.is_err() {
            self.task.abort();
        }
    }
}

/// Binds `address` (`host:port`).
pub(crate) fn bind(address: &str) -> std::io::Result<std::net::TcpListener> {
    let listener = std::net::TcpListener::bind(address)
        .map_err(|e| std::io::Error::new(e.kind(), format!("listen on {address}: {e}")))?;
    listener.set_nonblocking(true)?;
    Ok(listener)
}

#[cfg(test)]
#[path = "server_tests.rs"]
mod tests;
