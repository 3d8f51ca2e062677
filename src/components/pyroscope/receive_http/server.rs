//! The component's own HTTP server (axum, HTTP/1.1): the two routes, request bodies read
//! within the size limit and the read timeout, `Content-Encoding`, connection limiting and
//! idle/write timeouts on each connection, and graceful stop.
//!
//! Routes, as Alloy mounts them (gorilla/mux): `POST /ingest` and
//! `POST /push.v1.PusherService/Push`; another method on those paths is 405, any other path
//! 404. Conversion work (decompressing, decoding) runs on the blocking pool; forwarding only
//! appends to the `forward_to` receivers, which never wait, so the answer does not depend on
//! any backend (Alloy waits for its `pyroscope.write` pushes and returns their errors).

use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Sleep;
use tokio_util::sync::CancellationToken;

use super::args::HttpConfig;
use super::convert::Converted;
use super::events::RequestRejected;
use super::ingest::{self, IngestRequest};
use super::metrics::InstanceMetrics;
use super::push::{self, Codec};
use crate::budget::{Budget, Priority, Refusals, Reservation, Use};
use crate::pprof::{self, Limits, PprofError};
use crate::profiles::{Appendable as _, FanOut, Profile};
use crate::runtime::event::emit;

/// Converting an `/ingest` body takes up to this many times its uncompressed size: the pprof is
/// decoded (its vectors), then converted to copies per sample type.
const INGEST_MEMORY_FACTOR: u64 = 12;
/// A Push body is only unpacked: the uncompressed message and the raw profiles taken from it.
const PUSH_MEMORY_FACTOR: u64 = 2;

pub const INGEST_PATH: &str = "/ingest";
pub const PUSH_PATH: &str = "/push.v1.PusherService/Push";

/// What every request needs, shared by the component and each server instance.
pub(crate) struct Shared {
    pub(crate) id: String,
    pub(crate) fanout: FanOut,
    pub(crate) body_size_limit: AtomicU64,
    /// Bytes of request bodies held at once, across requests ([`inflight_budget`]); replaced
    /// when `body_size_limit` changes.
    pub(crate) inflight: Mutex<Arc<Semaphore>>,
    /// Conversions (decompressing, decoding) running at once: CPU work, so one per core; a
    /// bound on their working memory too.
    pub(crate) converters: Semaphore,
    pub(crate) metrics: InstanceMetrics,
    pub(crate) profiles_forwarded: AtomicU64,
    pub(crate) requests_rejected: AtomicU64,
    /// Whether the last request's conversion found no room in the memory budget (logs the
    /// start and end of refusing once each).
    pub(crate) refusals: Refusals,
    /// The component's memory budget, from its build options: conversions reserve against it.
    pub(crate) budget: Budget,
}

/// How many body bytes all requests together may hold while they are read and converted:
/// four maximal bodies, so that many clients at once cannot exhaust memory (a request waits
/// for room, within its read timeout).
pub(crate) fn inflight_budget(body_size_limit: u64) -> Arc<Semaphore> {
    let permits = body_size_limit
        .saturating_mul(4)
        .min(Semaphore::MAX_PERMITS as u64);
    Arc::new(Semaphore::new(permits as usize))
}

/// One conversion per available core (at least two).
pub(crate) fn converters() -> Semaphore {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Semaphore::new(cores.max(2))
}

impl Shared {
    fn limit(&self) -> u64 {
        self.body_size_limit.load(Ordering::Relaxed)
    }

    fn inflight(&self) -> Arc<Semaphore> {
        crate::sync::lock(&self.inflight).clone()
    }

    fn forward(&self, route: &str, converted: Vec<Converted>) -> usize {
        let n = converted.len();
        if n == 0 {
            return 0;
        }
        // `Profile::new` turns the client's labels into the shared set. Push and ingest both
        // build them through a map (a later duplicate wins, as in Alloy), so no name repeats;
        // were one to, `new` records it and `pyroscope.write` refuses the profile as before.
        let profiles: Vec<Profile> = converted
            .into_iter()
            .map(|c| Profile::new(c.labels, c.raw))
            .collect();
        self.metrics.profiles(route, n as u64);
        self.profiles_forwarded
            .fetch_add(n as u64, Ordering::Relaxed);
        self.fanout.append(profiles);
        n
    }
}

/// Per server instance: the shared state and the instance's read timeout.
#[derive(Clone)]
struct RouteState {
    shared: Arc<Shared>,
    read_timeout: Duration,
}

fn router(state: RouteState) -> Router {
    Router::new()
        .route(INGEST_PATH, post(handle_ingest))
        .route(PUSH_PATH, post(handle_push))
        .fallback(|| async { (StatusCode::NOT_FOUND, "404 page not found\n") })
        .layer(DefaultBodyLimit::disable())
        .with_state(state)
}

// ---------------------------------------------------------------------------------------------
// Bodies
// ---------------------------------------------------------------------------------------------

/// Why a body could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum BodyError {
    #[error("request body too large: exceeds the {0}-byte limit (body_size_limit)")]
    TooLarge(u64),
    #[error("request body not received within {0:?} (server_read_timeout)")]
    Timeout(Duration),
    #[error("error reading request body: {0}")]
    Read(String),
    #[error("invalid gzip request body: {0}")]
    Gzip(String),
    #[error("unsupported Content-Encoding {0:?} (supported: gzip, identity)")]
    Encoding(String),
}

/// Reads `body` whole, refusing more than `limit` bytes (also when `Content-Length` says so
/// up front) and giving up after `timeout` (zero: no timeout). The bytes are accounted in
/// `inflight` (one permit per byte) until the returned permit is dropped.
pub(crate) async fn read_body(
    body: Body,
    headers: &HeaderMap,
    limit: u64,
    timeout: Duration,
    inflight: Arc<Semaphore>,
) -> Result<(Bytes, Option<OwnedSemaphorePermit>), BodyError> {
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit) {
        return Err(BodyError::TooLarge(limit));
    }
    let read = async move {
        let cap = declared.unwrap_or(0).min(limit).min(4 << 20);
        let mut buf = BytesMut::with_capacity(cap as usize);
        let mut held: Option<OwnedSemaphorePermit> = None;
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| BodyError::Read(e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                if (buf.len() + data.len()) as u64 > limit {
                    return Err(BodyError::TooLarge(limit));
                }
                let n = u32::try_from(data.len()).map_err(|_| BodyError::TooLarge(limit))?;
                if n > 0 {
                    let permit = inflight
                        .clone()
                        .acquire_many_owned(n)
                        .await
                        .map_err(|_| BodyError::Read("server shutting down".into()))?;
                    match &mut held {
                        Some(h) => h.merge(permit),
                        None => held = Some(permit),
                    }
                }
                buf.extend_from_slice(&data);
            }
        }
        Ok((buf.freeze(), held))
    };
    if timeout.is_zero() {
        read.await
    } else {
        tokio::time::timeout(timeout, read)
            .await
            .unwrap_or(Err(BodyError::Timeout(timeout)))
    }
}

/// The request's `Content-Encoding`: `Ok(true)` for gzip, `Ok(false)` for none or identity.
fn gzip_encoded(headers: &HeaderMap) -> Result<bool, BodyError> {
    let Some(v) = headers.get(header::CONTENT_ENCODING) else {
        return Ok(false);
    };
    let v = v.to_str().unwrap_or("").trim().to_ascii_lowercase();
    match v.as_str() {
        "" | "identity" => Ok(false),
        "gzip" | "x-gzip" => Ok(true),
        _ => Err(BodyError::Encoding(v.chars().take(64).collect())),
    }
}

/// Decompresses a gzip body within `limit`.
fn gunzip(body: &Bytes, limit: u64) -> Result<Bytes, BodyError> {
    let limits = Limits {
        max_decompressed_bytes: usize::try_from(limit).unwrap_or(usize::MAX),
    };
    match pprof::gunzip(body, &limits) {
        Ok(v) => Ok(Bytes::from(v)),
        Err(PprofError::TooLarge { .. }) => Err(BodyError::TooLarge(limit)),
        Err(e) => Err(BodyError::Gzip(e.to_string())),
    }
}

fn header_str(headers: &HeaderMap, name: header::HeaderName) -> &str {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
}

// ---------------------------------------------------------------------------------------------
// Responses
// ---------------------------------------------------------------------------------------------

/// A JSON error `{"code","message"}`, the shape of Connect errors and of Pyroscope's HTTP
/// errors.
fn json_error(status: u16, code: &str, message: &str) -> Response {
    let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::json!({ "code": code, "message": message }).to_string();
    (
        status,
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        )],
        body,
    )
        .into_response()
}

/// Pyroscope's `connectgrpc.HTTPToCode`: the code its plain-HTTP errors carry.
pub(crate) fn http_to_code(status: u16) -> &'static str {
    match status {
        400 | 413 => "invalid_argument",
        401 => "unauthenticated",
        403 => "permission_denied",
        404 => "unimplemented",
        412 => "failed_precondition",
        429 | 431 => "resource_exhausted",
        499 => "canceled",
        502 | 503 => "unavailable",
        504 => "deadline_exceeded",
        _ => "unknown",
    }
}

fn body_error_status(e: &BodyError, ingest: bool) -> u16 {
    match e {
        BodyError::TooLarge(_) => 413,
        BodyError::Timeout(_) | BodyError::Read(_) => 408,
        BodyError::Encoding(_) if ingest => 415,
        BodyError::Encoding(_) => 501,
        BodyError::Gzip(_) if ingest => 422,
        BodyError::Gzip(_) => 400,
    }
}

impl RouteState {
    fn reject(&self, route: &str, status: u16, code: &str, message: &str) -> Response {
        emit(RequestRejected {
            shared: &self.shared,
            route,
            status,
            message,
        });
        json_error(status, code, message)
    }

    /// Reserves the memory converting `body` takes (`factor` times its uncompressed size, as
    /// the sender declares it, within the body size limit). When the memory budget has no room
    /// it is counted as shed and the error says why; the request is refused with 429, for the
    /// client to retry later.
    fn reserve_conversion(&self, body: &Bytes, factor: u64) -> Result<Reservation, String> {
        let size = body.len() as u64;
        let uncompressed =
            (pprof::codec::declared_size(body) as u64).min(self.shared.limit().max(size));
        let need = size.saturating_add(uncompressed.saturating_mul(factor));
        let budget = &self.shared.budget;
        let Some(reservation) = budget.try_reserve(Use::Receive, Priority::Normal, need) else {
            self.shared.refusals.refused(budget, &self.shared.id, need);
            return Err(format!(
                "the memory budget (--memory.limit) has no room to convert this request \
                 ({need} bytes); retry later"
            ));
        };
        self.shared.refusals.accepted(&self.shared.id);
        Ok(reservation)
    }
}

// ---------------------------------------------------------------------------------------------
// Handlers
// ---------------------------------------------------------------------------------------------

async fn handle_ingest(State(st): State<RouteState>, req: Request) -> Response {
    const ROUTE: &str = "ingest";
    let limit = st.shared.limit();
    let (parts, body) = req.into_parts();
    let gzip = match gzip_encoded(&parts.headers) {
        Ok(g) => g,
        Err(e) => {
            let status = body_error_status(&e, true);
            return st.reject(ROUTE, status, http_to_code(status), &e.to_string());
        }
    };
    let (body, _held) = match read_body(
        body,
        &parts.headers,
        limit,
        st.read_timeout,
        st.shared.inflight(),
    )
    .await
    {
        Ok(b) => b,
        Err(e) => {
            let status = body_error_status(&e, true);
            return st.reject(ROUTE, status, http_to_code(status), &e.to_string());
        }
    };
    let _memory = match st.reserve_conversion(&body, INGEST_MEMORY_FACTOR) {
        Ok(m) => m,
        Err(e) => return st.reject(ROUTE, 429, "resource_exhausted", &e),
    };
    let query = parts.uri.query().unwrap_or("").to_string();
    let content_type = header_str(&parts.headers, header::CONTENT_TYPE).to_string();
    let limits = Limits {
        max_decompressed_bytes: usize::try_from(limit).unwrap_or(usize::MAX),
    };
    let _slot = st.shared.converters.acquire().await;
    let converted =
        crate::runtime::task::spawn_blocking("pyroscope.receive_http.ingest", move || {
            // A gzip Content-Encoding is decoded when the body is gzip (Pyroscope ignores the
            // header; for pprof, itself gzip, both agree).
            let body = if gzip && pprof::codec::is_gzip(&body) {
                gunzip(&body, limit).map_err(|e| (body_error_status(&e, true), e.to_string()))?
            } else {
                body
            };
            let request = IngestRequest {
                query: &query,
                content_type: &content_type,
                body,
                now_nanos: now_nanos(),
            };
            ingest::ingest(&request, &limits).map_err(|e| (e.status(), e.to_string()))
        })
        .await;
    match converted {
        Ok(Ok(converted)) => {
            let n = st.shared.forward(ROUTE, converted);
            tracing::trace!(component_id = %st.shared.id, profiles = n, "ingest forwarded");
            st.shared.metrics.request(ROUTE, 200);
            StatusCode::OK.into_response()
        }
        Ok(Err((status, message))) => st.reject(ROUTE, status, http_to_code(status), &message),
        Err(e) => st.reject(ROUTE, 500, "internal", &format!("conversion failed: {e}")),
    }
}

async fn handle_push(State(st): State<RouteState>, req: Request) -> Response {
    const ROUTE: &str = "push";
    let limit = st.shared.limit();
    let (parts, body) = req.into_parts();
    let content_type = header_str(&parts.headers, header::CONTENT_TYPE);
    let Some(codec) = Codec::from_content_type(content_type) else {
        let message = format!(
            "invalid content-type: {:?}; expecting \"application/proto\" or \"application/json\"",
            content_type.chars().take(100).collect::<String>()
        );
        let mut resp = st.reject(ROUTE, 415, "unknown", &message);
        resp.headers_mut().insert(
            header::HeaderName::from_static("accept-post"),
            HeaderValue::from_static("application/json, application/proto"),
        );
        return resp;
    };
    let gzip = match gzip_encoded(&parts.headers) {
        Ok(g) => g,
        Err(e) => return st.reject(ROUTE, 501, "unimplemented", &e.to_string()),
    };
    let (body, _held) = match read_body(
        body,
        &parts.headers,
        limit,
        st.read_timeout,
        st.shared.inflight(),
    )
    .await
    {
        Ok(b) => b,
        Err(e) => {
            let status = body_error_status(&e, false);
            let code = match status {
                408 => "deadline_exceeded",
                _ => "invalid_argument",
            };
            return st.reject(ROUTE, status, code, &e.to_string());
        }
    };
    let _memory = match st.reserve_conversion(&body, PUSH_MEMORY_FACTOR) {
        Ok(m) => m,
        Err(e) => return st.reject(ROUTE, 429, "resource_exhausted", &e),
    };
    let _slot = st.shared.converters.acquire().await;
    let converted =
        crate::runtime::task::spawn_blocking("pyroscope.receive_http.push", move || {
            let body = if gzip { gunzip(&body, limit)? } else { body };
            push::decode(body, codec).map_err(|e| BodyError::Read(e.to_string()))
        })
        .await;
    match converted {
        Ok(Ok(converted)) => {
            let n = st.shared.forward(ROUTE, converted);
            tracing::trace!(component_id = %st.shared.id, profiles = n, "push forwarded");
            st.shared.metrics.request(ROUTE, 200);
            (
                StatusCode::OK,
                [(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static(codec.content_type()),
                )],
                codec.empty_response(),
            )
                .into_response()
        }
        Ok(Err(BodyError::TooLarge(limit))) => st.reject(
            ROUTE,
            413,
            "invalid_argument",
            &BodyError::TooLarge(limit).to_string(),
        ),
        Ok(Err(BodyError::Read(message))) => st.reject(ROUTE, 400, "invalid_argument", &message),
        Ok(Err(e)) => st.reject(ROUTE, 400, "invalid_argument", &format!("decompress: {e}")),
        Err(e) => st.reject(ROUTE, 500, "internal", &format!("decoding failed: {e}")),
    }
}

// ---------------------------------------------------------------------------------------------
// Connections
// ---------------------------------------------------------------------------------------------

/// Accepts connections up to `conn_limit` at a time (like Go's `netutil.LimitListener`: the
/// next accept waits for a free slot).
struct LimitedListener {
    inner: tokio::net::TcpListener,
    slots: Option<Arc<Semaphore>>,
    shared: Arc<Shared>,
    idle_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
}

impl axum::serve::Listener for LimitedListener {
    type Io = Conn;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Conn, SocketAddr) {
        let permit = match &self.slots {
            Some(s) => s.clone().acquire_owned().await.ok(),
            None => None,
        };
        loop {
            match self.inner.accept().await {
                Ok((io, addr)) => {
                    let _ = io.set_nodelay(true);
                    self.shared.metrics.connections.inc();
                    return (
                        Conn {
                            io,
                            _permit: permit,
                            shared: self.shared.clone(),
                            idle_timeout: self.idle_timeout,
                            write_timeout: self.write_timeout,
                            read_deadline: None,
                            write_deadline: None,
                        },
                        addr,
                    );
                }
                Err(e) => {
                    // Out of descriptors and the like: wait a little rather than spin.
                    tracing::warn!(component_id = %self.shared.id, error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<SocketAddr> {
        self.inner.local_addr()
    }
}

/// A connection: holds its slot, and fails a read (write) that waits longer than the idle
/// (write) timeout.
struct Conn {
    io: TcpStream,
    _permit: Option<OwnedSemaphorePermit>,
    shared: Arc<Shared>,
    idle_timeout: Option<Duration>,
    write_timeout: Option<Duration>,
    read_deadline: Option<Pin<Box<Sleep>>>,
    write_deadline: Option<Pin<Box<Sleep>>>,
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.shared.metrics.connections.dec();
    }
}

/// `poll`, an I/O operation's result, unless it has been pending for longer than `after`
/// (`deadline` is armed the first time it is pending, disarmed once it is ready): then a
/// `TimedOut` error saying `why`.
fn within<T>(
    poll: Poll<io::Result<T>>,
    deadline: &mut Option<Pin<Box<Sleep>>>,
    after: Option<Duration>,
    cx: &mut Context<'_>,
    why: &'static str,
) -> Poll<io::Result<T>> {
    if poll.is_ready() {
        *deadline = None;
        return poll;
    }
    let Some(after) = after else {
        return Poll::Pending;
    };
    let sleep = deadline.get_or_insert_with(|| Box::pin(tokio::time::sleep(after)));
    if sleep.as_mut().poll(cx).is_pending() {
        return Poll::Pending;
    }
    *deadline = None;
    Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, why)))
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_read(cx, buf);
        within(
            poll,
            &mut this.read_deadline,
            this.idle_timeout,
            cx,
            "connection idle for longer than server_idle_timeout",
        )
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.io).poll_write(cx, buf);
        within(
            poll,
            &mut this.write_deadline,
            this.write_timeout,
            cx,
            "write blocked for longer than server_write_timeout",
        )
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

// ---------------------------------------------------------------------------------------------
// Listening and serving
// ---------------------------------------------------------------------------------------------

/// Binds `cfg`'s address (every interface: IPv6 `[::]`, falling back to `0.0.0.0`).
pub(crate) fn bind(cfg: &HttpConfig) -> io::Result<std::net::TcpListener> {
    let addr = cfg.bind_address();
    let listener = match std::net::TcpListener::bind(addr.as_str()) {
        Ok(l) => l,
        Err(e) if cfg.listen_address.trim().is_empty() && e.kind() != io::ErrorKind::AddrInUse => {
            std::net::TcpListener::bind(("0.0.0.0", cfg.listen_port))?
        }
        Err(e) => return Err(io::Error::new(e.kind(), format!("listen on {addr}: {e}"))),
    };
    listener.set_nonblocking(true)?;
    Ok(listener)
}

/// One running server on a listener; stopping it leaves the listener itself open.
pub(crate) struct Instance {
    cancel: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl Instance {
    /// Serves on a duplicate of `listener` with `cfg`'s limits and timeouts.
    pub(crate) fn start(
        listener: &std::net::TcpListener,
        cfg: &HttpConfig,
        shared: Arc<Shared>,
    ) -> io::Result<Instance> {
        let inner = tokio::net::TcpListener::from_std(listener.try_clone()?)?;
        let nonzero = |d: Duration| (!d.is_zero()).then_some(d);
        shared
            .metrics
            .connections_limit
            .set(i64::try_from(cfg.conn_limit).unwrap_or(i64::MAX));
        let listener = LimitedListener {
            inner,
            slots: (cfg.conn_limit > 0).then(|| Arc::new(Semaphore::new(cfg.conn_limit))),
            shared: shared.clone(),
            idle_timeout: nonzero(cfg.idle_timeout),
            write_timeout: nonzero(cfg.write_timeout),
        };
        let app = router(RouteState {
            shared: shared.clone(),
            read_timeout: cfg.read_timeout,
        });
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let task = crate::runtime::task::spawn("pyroscope.receive_http.server", async move {
            let serve = axum::serve(listener, app).with_graceful_shutdown(stop.cancelled_owned());
            if let Err(e) = serve.await {
                tracing::error!(component_id = %shared.id, error = %e, "server stopped with an error");
            }
        });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bodies_are_bounded() {
        let h = HeaderMap::new();
        let budget = inflight_budget(5);
        let read = |body, headers, timeout| {
            let budget = budget.clone();
            async move {
                read_body(body, headers, 5, timeout, budget)
                    .await
                    .map(|(b, _)| b)
            }
        };
        let got = read(Body::from("hello"), &h, Duration::ZERO).await;
        assert_eq!(got, Ok(Bytes::from_static(b"hello")));
        let got = read(Body::from("hello!"), &h, Duration::ZERO).await;
        assert_eq!(got, Err(BodyError::TooLarge(5)));
        let mut declared = HeaderMap::new();
        declared.insert(header::CONTENT_LENGTH, HeaderValue::from_static("1000"));
        let got = read(Body::from("x"), &declared, Duration::ZERO).await;
        assert_eq!(got, Err(BodyError::TooLarge(5)));

        // A body that never ends times out.
        let (_tx, rx) = tokio::sync::mpsc::channel::<Result<Bytes, io::Error>>(1);
        let got = read(tokio_stream_from(rx), &h, Duration::from_millis(50)).await;
        assert_eq!(got, Err(BodyError::Timeout(Duration::from_millis(50))));

        // Bodies held count against the in-flight budget (4 x 5 bytes) until released.
        let (held, permit) = read_body(Body::from("hello"), &h, 5, Duration::ZERO, budget.clone())
            .await
            .expect("read");
        assert_eq!(held.len(), 5);
        assert_eq!(budget.available_permits(), 15);
        let mut others = Vec::new();
        for _ in 0..3 {
            others.push(read(Body::from("hello"), &h, Duration::ZERO).await);
        }
        assert_eq!(
            budget.available_permits(),
            15,
            "the reads above released theirs"
        );
        let full = {
            let b1 = read_body(Body::from("hello"), &h, 5, Duration::ZERO, budget.clone()).await;
            let b2 = read_body(Body::from("hello"), &h, 5, Duration::ZERO, budget.clone()).await;
            let b3 = read_body(Body::from("hello"), &h, 5, Duration::ZERO, budget.clone()).await;
            (b1, b2, b3)
        };
        assert_eq!(budget.available_permits(), 0);
        // Full: the next body waits, and times out.
        let got = read(Body::from("x"), &h, Duration::from_millis(50)).await;
        assert_eq!(got, Err(BodyError::Timeout(Duration::from_millis(50))));
        drop((full, permit));
        assert_eq!(budget.available_permits(), 20);
    }

    fn tokio_stream_from(mut rx: tokio::sync::mpsc::Receiver<Result<Bytes, io::Error>>) -> Body {
        Body::from_stream(futures::stream::poll_fn(move |cx| rx.poll_recv(cx)))
    }

    #[test]
    fn encodings() {
        let mut h = HeaderMap::new();
        assert_eq!(gzip_encoded(&h), Ok(false));
        for (v, want) in [
            ("gzip", Ok(true)),
            ("GZIP ", Ok(true)),
            ("x-gzip", Ok(true)),
            ("identity", Ok(false)),
            ("br", Err(BodyError::Encoding("br".into()))),
        ] {
            h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(v));
            assert_eq!(gzip_encoded(&h), want, "{v}");
        }
        let data = b"profile bytes".repeat(100);
        let gz = Bytes::from(pprof::gzip(&data, 1));
        assert_eq!(gunzip(&gz, 10_000).expect("fits").as_ref(), data.as_slice());
        assert_eq!(gunzip(&gz, 100), Err(BodyError::TooLarge(100)));
        assert!(matches!(
            gunzip(&Bytes::from_static(b"\x1f\x8b\x08\x00junk"), 100),
            Err(BodyError::Gzip(_))
        ));
    }

    #[test]
    fn status_mapping() {
        let cases = [
            (BodyError::TooLarge(1), 413, 413),
            (BodyError::Timeout(Duration::ZERO), 408, 408),
            (BodyError::Read("x".into()), 408, 408),
            (BodyError::Encoding("br".into()), 415, 501),
            (BodyError::Gzip("x".into()), 422, 400),
        ];
        for (e, ingest, push) in cases {
            assert_eq!(body_error_status(&e, true), ingest, "{e}");
            assert_eq!(body_error_status(&e, false), push, "{e}");
        }
        assert_eq!(http_to_code(413), "invalid_argument");
        assert_eq!(http_to_code(422), "unknown");
        assert_eq!(http_to_code(415), "unknown");
    }

    /// What `within` returns when polled once, rather than waiting on it.
    async fn within_once(
        poll: Poll<io::Result<usize>>,
        deadline: &mut Option<Pin<Box<Sleep>>>,
        after: Option<Duration>,
    ) -> Poll<io::Result<usize>> {
        let mut poll = Some(poll);
        std::future::poll_fn(|cx| {
            let poll = poll.take().unwrap_or(Poll::Pending);
            Poll::Ready(within(poll, deadline, after, cx, "stuck"))
        })
        .await
    }

    #[tokio::test]
    async fn io_pending_past_its_deadline_times_out() {
        let after = Some(Duration::from_millis(20));
        let mut deadline = None;
        // Without a timeout, pending stays pending and nothing is armed.
        assert!(
            within_once(Poll::Pending, &mut deadline, None)
                .await
                .is_pending()
        );
        assert!(deadline.is_none());
        // Pending arms the deadline; ready disarms it and passes the result through.
        assert!(
            within_once(Poll::Pending, &mut deadline, after)
                .await
                .is_pending()
        );
        assert!(deadline.is_some());
        assert!(matches!(
            within_once(Poll::Ready(Ok(5)), &mut deadline, after).await,
            Poll::Ready(Ok(5))
        ));
        assert!(deadline.is_none());

        // An operation that never completes fails once the deadline passes, with the reason.
        let mut deadline = None;
        let wait = std::future::poll_fn(|cx| {
            within::<()>(Poll::Pending, &mut deadline, after, cx, "stuck")
        });
        let err = tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .expect("the deadline fires")
            .expect_err("timed out");
        assert_eq!(
            (err.kind(), err.to_string()),
            (io::ErrorKind::TimedOut, "stuck".into())
        );
        assert!(deadline.is_none(), "disarmed after firing");
    }
}
