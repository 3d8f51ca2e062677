//! A recording Pyroscope-compatible push receiver, written from the protocol spec
//! (pyroscope-protocol.md §1): `POST /push.v1.PusherService/Push` with a binary
//! `push.v1.PushRequest` (Connect unary), answered with an empty `application/proto` 200 or a
//! Connect JSON error. Every sample that arrives is stored with its series labels and the
//! request's headers.
//!
//! Faults can be injected per request ([`PyroscopeReceiver::fail_next`]) or for every request
//! until cleared ([`PyroscopeReceiver::set_outage`]): Connect errors, plain HTTP statuses, slow
//! answers, hangs, TCP resets, and responses cut off mid-body. A faulted request stores
//! nothing, except [`Fault::Slow`], which answers normally after its delay.
//!
//! The HTTP/1.1 server is hand-written on tokio so that faults below HTTP (resets, truncated
//! bodies) are exact. TLS (optionally with client certificates) through tokio-rustls.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use prost::Message as _;
use scraper::protocols::pyroscope::proto::push::v1::PushRequest;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

pub const PUSH_PATH: &str = "/push.v1.PusherService/Push";
/// Pyroscope's OTLP/HTTP profiles ingestion (pyroscope-protocol.md §8), also served: each OTLP
/// profile is stored as a single-type pprof with its resource attributes as labels.
pub const OTLP_PATH: &str = "/v1development/profiles";
/// Also served: an OAuth2 token endpoint handing out [`TOKEN`].
pub const TOKEN_PATH: &str = "/oauth2/token";
pub const TOKEN: &str = "token-from-oauth2";

/// A misbehaviour for one request.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault {
    /// A Connect error: JSON body `{"code","message"}` with the status connect-go maps the code
    /// to (`resource_exhausted` 429, `invalid_argument` 400, `unavailable` 503, ...).
    Connect(&'static str),
    /// A plain HTTP error (as from a proxy): this status, `text/plain` body.
    Status(u16),
    /// Answer normally (and store) after this delay.
    Slow(Duration),
    /// Read the request and never answer.
    Hang,
    /// Read the request, then reset the connection (RST).
    Reset,
    /// Send a 200 with `Content-Length: 64` and 8 bytes of body, then close.
    CloseMidBody,
}

/// connect-go's `connectCodeToHTTP`.
pub fn connect_status(code: &str) -> u16 {
    match code {
        "canceled" => 499,
        "invalid_argument" | "failed_precondition" | "out_of_range" => 400,
        "deadline_exceeded" => 504,
        "not_found" => 404,
        "already_exists" | "aborted" => 409,
        "permission_denied" => 403,
        "resource_exhausted" => 429,
        "unimplemented" => 501,
        "unavailable" => 503,
        "unauthenticated" => 401,
        _ => 500, // unknown, internal, data_loss
    }
}

/// One stored profile.
#[derive(Clone, Debug)]
pub struct Received {
    pub labels: Vec<(String, String)>,
    pub raw: bytes::Bytes,
    /// Request headers, names lower-case, in arrival order.
    pub headers: Vec<(String, String)>,
    pub at: Instant,
}

impl Received {
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

/// One request as it arrived, whatever became of it.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body_len: usize,
    pub fault: Option<Fault>,
    pub at: Instant,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        header(&self.headers, name)
    }
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    let name = name.to_ascii_lowercase();
    headers
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v.as_str())
}

#[derive(Default)]
struct State {
    received: Vec<Received>,
    requests: Vec<Request>,
    next_faults: VecDeque<Fault>,
    outage: Option<Fault>,
}

struct Shared {
    state: Mutex<State>,
    changed: Notify,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct PyroscopeReceiver {
    pub addr: SocketAddr,
    tls: bool,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Drop for PyroscopeReceiver {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl PyroscopeReceiver {
    /// Plain HTTP on 127.0.0.1, an OS-chosen port.
    pub async fn start() -> Self {
        Self::start_with(None).await
    }

    /// HTTPS with `config` (build it with [`tls_server_config`]).
    pub async fn start_tls(config: rustls::ServerConfig) -> Self {
        Self::start_with(Some(Arc::new(config))).await
    }

    async fn start_with(tls: Option<Arc<rustls::ServerConfig>>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            changed: Notify::new(),
        });
        let stop = CancellationToken::new();
        let acceptor = tls.clone().map(tokio_rustls::TlsAcceptor::from);
        let (s, st) = (shared.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let (sock, _) = tokio::select! {
                    _ = st.cancelled() => return,
                    r = listener.accept() => match r { Ok(c) => c, Err(_) => continue },
                };
                let _ = sock.set_nodelay(true);
                let (s, st, acceptor) = (s.clone(), st.clone(), acceptor.clone());
                tokio::spawn(async move {
                    let conn = async {
                        match acceptor {
                            None => serve(sock, &s).await,
                            Some(a) => {
                                if let Ok(tls) = a.accept(sock).await {
                                    serve(tls, &s).await
                                }
                            }
                        }
                    };
                    tokio::select! {
                        _ = st.cancelled() => {}
                        _ = conn => {}
                    }
                });
            }
        });
        PyroscopeReceiver {
            addr,
            tls: tls.is_some(),
            shared,
            stop,
        }
    }

    /// The base URL to configure as an endpoint's `url` (`https://localhost:<port>` with TLS,
    /// matching certificates made by [`TestCa`]).
    pub fn url(&self) -> String {
        if self.tls {
            format!("https://localhost:{}", self.addr.port())
        } else {
            format!("http://{}", self.addr)
        }
    }

    /// Every stored profile, in arrival order.
    pub fn received(&self) -> Vec<Received> {
        self.shared.lock().received.clone()
    }

    pub fn count(&self) -> usize {
        self.shared.lock().received.len()
    }

    /// Every request, faulted or not.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    pub fn request_count(&self) -> usize {
        self.shared.lock().requests.len()
    }

    /// The next `n` requests get `fault` (after any already queued).
    pub fn fail_next(&self, n: usize, fault: Fault) {
        let mut s = self.shared.lock();
        for _ in 0..n {
            s.next_faults.push_back(fault.clone());
        }
    }

    /// Every request gets `fault` until [`PyroscopeReceiver::end_outage`].
    pub fn set_outage(&self, fault: Fault) {
        self.shared.lock().outage = Some(fault);
    }

    pub fn end_outage(&self) {
        self.shared.lock().outage = None;
    }

    /// Waits until `n` profiles are stored; false on timeout.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |s| s.received.len() >= n).await
    }

    /// Waits until `n` requests have arrived; false on timeout.
    pub async fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        self.wait_until(timeout, |s| s.requests.len() >= n).await
    }

    async fn wait_until(&self, timeout: Duration, f: impl Fn(&State) -> bool) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let changed = self.shared.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if f(&self.shared.lock()) {
                return true;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return f(&self.shared.lock());
            }
        }
    }
}

/// Something `serve` can reset: the TCP socket underneath.
trait Conn: AsyncRead + AsyncWrite + Unpin + Send {
    fn tcp(&self) -> &TcpStream;
}

impl Conn for TcpStream {
    fn tcp(&self) -> &TcpStream {
        self
    }
}

impl Conn for tokio_rustls::server::TlsStream<TcpStream> {
    fn tcp(&self) -> &TcpStream {
        self.get_ref().0
    }
}

struct Parsed {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

/// Reads one request; `None` at a clean end of connection or on garbage.
async fn read_request<C: Conn>(c: &mut C, buf: &mut Vec<u8>) -> Option<Parsed> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let mut chunk = [0u8; 16 * 1024];
        let n = c.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).ok()?;
    buf.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let body = if header(&headers, "transfer-encoding").is_some_and(|t| t.contains("chunked")) {
        read_chunked(c, buf).await?
    } else {
        let len: usize = header(&headers, "content-length")
            .map(|l| l.parse().ok())
            .unwrap_or(Some(0))?;
        while buf.len() < len {
            let mut chunk = vec![0u8; (len - buf.len()).min(256 * 1024)];
            let n = c.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        buf.drain(..len).collect()
    };
    Some(Parsed {
        method,
        path,
        headers,
        body,
    })
}

async fn read_chunked<C: Conn>(c: &mut C, buf: &mut Vec<u8>) -> Option<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = loop {
            if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
                break i;
            }
            let mut chunk = [0u8; 8192];
            let n = c.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        };
        let size_text = String::from_utf8(buf[..line_end].to_vec()).ok()?;
        let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
        buf.drain(..line_end + 2);
        while buf.len() < size + 2 {
            let mut chunk = [0u8; 8192];
            let n = c.read(&mut chunk).await.ok()?;
            if n == 0 {
                return None;
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        body.extend_from_slice(&buf[..size]);
        buf.drain(..size + 2);
        if size == 0 {
            return Some(body);
        }
    }
}

fn response(status: u16, content_type: &str, body: &[u8]) -> Vec<u8> {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        415 => "Unsupported Media Type",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        _ => "Status",
    };
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

fn connect_error(code: &str, message: &str) -> Vec<u8> {
    let body = serde_json::json!({ "code": code, "message": message }).to_string();
    response(connect_status(code), "application/json", body.as_bytes())
}

async fn serve<C: Conn>(mut c: C, shared: &Shared) {
    let mut buf = Vec::new();
    while let Some(req) = read_request(&mut c, &mut buf).await {
        let fault = {
            let mut s = shared.lock();
            let fault = s.next_faults.pop_front().or_else(|| s.outage.clone());
            s.requests.push(Request {
                method: req.method.clone(),
                path: req.path.clone(),
                headers: req.headers.clone(),
                body_len: req.body.len(),
                fault: fault.clone(),
                at: Instant::now(),
            });
            fault
        };
        shared.changed.notify_waiters();
        let reply = match fault {
            None => handle(&req, shared),
            Some(Fault::Slow(d)) => {
                tokio::time::sleep(d).await;
                handle(&req, shared)
            }
            Some(Fault::Connect(code)) => connect_error(code, "injected fault"),
            Some(Fault::Status(status)) => response(status, "text/plain", b"injected fault"),
            Some(Fault::Hang) => {
                // Until the client gives up and closes (or the receiver is dropped).
                let mut sink = [0u8; 1024];
                while matches!(c.read(&mut sink).await, Ok(n) if n > 0) {}
                return;
            }
            Some(Fault::Reset) => {
                let _ = c.tcp().set_zero_linger();
                return;
            }
            Some(Fault::CloseMidBody) => {
                let mut head = b"HTTP/1.1 200 OK\r\nContent-Type: application/proto\r\nContent-Length: 64\r\n\r\n".to_vec();
                head.extend_from_slice(&[0u8; 8]);
                let _ = c.write_all(&head).await;
                let _ = c.flush().await;
                let _ = c.shutdown().await;
                return;
            }
        };
        if c.write_all(&reply).await.is_err() || c.flush().await.is_err() {
            return;
        }
    }
}

/// What Pyroscope's push handler does with a well-formed request; errors as Connect errors.
fn handle(req: &Parsed, shared: &Shared) -> Vec<u8> {
    if req.method == "POST" && req.path == TOKEN_PATH {
        // An OAuth2 token endpoint (client_credentials), for auth tests.
        let body = serde_json::json!({
            "access_token": TOKEN,
            "token_type": "bearer",
            "expires_in": 3600,
        })
        .to_string();
        return response(200, "application/json", body.as_bytes());
    }
    if req.method == "POST" && req.path == OTLP_PATH {
        return handle_otlp(req, shared);
    }
    if req.method != "POST" || req.path != PUSH_PATH {
        return response(404, "text/plain", b"404 page not found");
    }
    match header(&req.headers, "content-type") {
        Some("application/proto") => {}
        other => {
            return response(
                415,
                "text/plain",
                format!("unsupported content type {other:?}").as_bytes(),
            );
        }
    }
    let push = match PushRequest::decode(req.body.as_slice()) {
        Ok(p) => p,
        Err(e) => return connect_error("invalid_argument", &format!("decoding: {e}")),
    };
    if push.series.iter().all(|s| s.samples.is_empty()) {
        return connect_error("invalid_argument", "no profiles received");
    }
    {
        let mut s = shared.lock();
        let now = Instant::now();
        for series in push.series {
            let labels: Vec<(String, String)> = series
                .labels
                .into_iter()
                .map(|l| (l.name, l.value))
                .collect();
            for sample in series.samples {
                s.received.push(Received {
                    labels: labels.clone(),
                    raw: sample.raw_profile,
                    headers: req.headers.clone(),
                    at: now,
                });
            }
        }
    }
    shared.changed.notify_waiters();
    response(200, "application/proto", b"")
}

/// OTLP/HTTP export as Pyroscope's handler takes it: protobuf only (JSON is not needed here),
/// optionally gzipped; 415 for another content type, 400 for a body that does not decode or
/// convert; success is an empty `ExportProfilesServiceResponse`.
fn handle_otlp(req: &Parsed, shared: &Shared) -> Vec<u8> {
    use scraper::protocols::otlp::proto::collector::profiles::v1development::{
        ExportProfilesServiceRequest, ExportProfilesServiceResponse,
    };
    const PROTOBUF: &str = "application/x-protobuf";
    match header(&req.headers, "content-type") {
        Some(PROTOBUF) | Some("application/protobuf") => {}
        other => {
            return response(
                415,
                "text/plain",
                format!("unsupported content type {other:?}").as_bytes(),
            );
        }
    }
    let body = match header(&req.headers, "content-encoding") {
        Some("gzip") => match scraper::pprof::gunzip(&req.body, &scraper::pprof::Limits::default())
        {
            Ok(b) => b,
            Err(e) => return response(400, "text/plain", format!("gzip: {e}").as_bytes()),
        },
        _ => req.body.clone(),
    };
    let export = match ExportProfilesServiceRequest::decode(body.as_slice()) {
        Ok(x) => x,
        Err(e) => return response(400, "text/plain", format!("decoding: {e}").as_bytes()),
    };
    let converted = match scraper::protocols::otlp::convert::to_pprof(&export) {
        Ok(c) => c,
        Err(e) => return response(400, "text/plain", format!("converting: {e}").as_bytes()),
    };
    {
        let mut s = shared.lock();
        let now = Instant::now();
        for c in converted {
            s.received.push(Received {
                labels: c.labels,
                raw: c.profile.encode_to_vec().into(),
                headers: req.headers.clone(),
                at: now,
            });
        }
    }
    shared.changed.notify_waiters();
    response(
        200,
        PROTOBUF,
        &ExportProfilesServiceResponse::default().encode_to_vec(),
    )
}

// ---------------------------------------------------------------------------------------------
// TLS material
// ---------------------------------------------------------------------------------------------

/// A throw-away CA that issues certificates for `localhost`.
pub struct TestCa {
    pub cert_pem: String,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
}

/// A certificate and its key, PEM.
pub struct Issued {
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new(name: &str) -> Self {
        let key = rcgen::KeyPair::generate().expect("key");
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, name);
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.key_usages = vec![
            rcgen::KeyUsagePurpose::KeyCertSign,
            rcgen::KeyUsagePurpose::CrlSign,
        ];
        let cert = params.self_signed(&key).expect("self-sign");
        TestCa {
            cert_pem: cert.pem(),
            issuer: rcgen::Issuer::new(params, key),
        }
    }

    /// A leaf certificate for `names` (DNS names or IP addresses).
    pub fn issue(&self, names: &[&str]) -> Issued {
        let key = rcgen::KeyPair::generate().expect("key");
        let params =
            rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
                .expect("params");
        let cert = params.signed_by(&key, &self.issuer).expect("sign");
        Issued {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }
}

/// How [`self_signed`] makes a certificate that signs itself.
#[derive(Clone, Copy, Debug)]
pub enum SelfSigned {
    /// `CA:TRUE`, as `openssl req -x509` makes by default.
    Ca,
    /// No basic constraints: a plain self-signed leaf.
    Leaf,
    /// Expired a day ago.
    Expired,
    /// Extended key usage for client authentication only.
    ClientAuthOnly,
}

/// A certificate for `names` signed by its own key.
pub fn self_signed(names: &[&str], kind: SelfSigned) -> Issued {
    let key = rcgen::KeyPair::generate().expect("key");
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "self-signed test server");
    match kind {
        SelfSigned::Leaf => {}
        SelfSigned::Ca => {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        }
        SelfSigned::Expired => {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        SelfSigned::ClientAuthOnly => {
            params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
            params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
        }
    }
    let cert = params.self_signed(&key).expect("self-sign");
    Issued {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
    }
}

/// A receiver requiring client certificates, with the client's side written to files: the
/// CA that signed the server's certificate (for `server_names`), and a client certificate and
/// key from a second CA the server trusts. The files live as long as the returned value.
pub struct MutualTls {
    pub rx: PyroscopeReceiver,
    /// The same material as PEM text.
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
    pub ca_file: String,
    pub cert_file: String,
    pub key_file: String,
    _dir: tempfile::TempDir,
}

impl MutualTls {
    pub async fn start(server_names: &[&str]) -> MutualTls {
        let ca = TestCa::new("scraper test CA");
        let server = ca.issue(server_names);
        let client_ca = TestCa::new("client CA");
        let client = client_ca.issue(&["scraper"]);
        let rx = PyroscopeReceiver::start_tls(tls_server_config(&server, Some(&client_ca))).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let write = |name: &str, text: &str| {
            let p = dir.path().join(name);
            std::fs::write(&p, text).expect("write");
            p.display().to_string()
        };
        MutualTls {
            rx,
            ca_file: write("ca.pem", &ca.cert_pem),
            ca_pem: ca.cert_pem.clone(),
            cert_pem: client.cert_pem.clone(),
            key_pem: client.key_pem.clone(),
            cert_file: write("client.pem", &client.cert_pem),
            key_file: write("client.key", &client.key_pem),
            _dir: dir,
        }
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A server configuration presenting `server`; with `client_ca`, clients must present a
/// certificate signed by it.
pub fn tls_server_config(server: &Issued, client_ca: Option<&TestCa>) -> rustls::ServerConfig {
    use rustls::pki_types::pem::PemObject as _;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let chain = CertificateDer::pem_slice_iter(server.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .expect("cert");
    let key = PrivateKeyDer::from_pem_slice(server.key_pem.as_bytes()).expect("key");
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions");
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(ca.cert_pem.as_bytes()) {
                roots.add(c.expect("ca")).expect("add ca");
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                roots.into(),
                provider(),
            )
            .build()
            .expect("verifier");
            builder.with_client_cert_verifier(verifier)
        }
    };
    let mut config = builder.with_single_cert(chain, key).expect("server cert");
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    config
}

// ---------------------------------------------------------------------------------------------
// A pyroscope.write instance to test against the receiver
// ---------------------------------------------------------------------------------------------

/// A `pyroscope.write` component built from Alloy source and running on the current runtime.
pub struct Writer {
    pub component: Arc<scraper::components::pyroscope::write::Write>,
    pub receiver: Arc<scraper::profiles::Receiver>,
    pub metrics: scraper::runtime::MetricsRegistry,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), scraper::runtime::BoxError>>,
}

/// Decodes the body of a `pyroscope.write` block.
pub fn write_args(
    body: &str,
) -> Result<scraper::components::pyroscope::write::Arguments, Vec<String>> {
    use scraper::syntax::eval::{Scope, eval_body};
    use scraper::syntax::parser::parse_file;
    let (file, diags) = parse_file(body);
    assert!(diags.is_empty(), "{diags:?}");
    let evaluated = eval_body(&file.body, &Scope::stdlib()).expect("eval");
    scraper::syntax::decode::from_body::<scraper::components::pyroscope::write::Arguments>(
        &evaluated,
    )
    .map_err(|ds| ds.into_iter().map(|d| d.message).collect())
}

impl Writer {
    /// Builds and runs `pyroscope.write "test" { <body> }`.
    pub fn start(body: &str) -> Writer {
        use scraper::runtime::{Component as _, ComponentOptions};
        let args = write_args(body).expect("valid arguments");
        let opts = ComponentOptions::standalone(
            "pyroscope.write.test",
            "pyroscope.write",
            scraper::components::pyroscope::write::Write::initial_exports(),
        );
        let metrics = opts.metrics.clone();
        let exports = opts.exports.clone();
        let component = Arc::new(
            scraper::components::pyroscope::write::Write::build(opts, args).expect("build"),
        );
        let receiver = match exports.current() {
            scraper::syntax::value::Value::Object(o) => match o.get("receiver") {
                Some(scraper::syntax::value::Value::Capsule(c)) => c
                    .downcast::<scraper::profiles::Receiver>()
                    .expect("receiver"),
                other => panic!("no receiver export: {other:?}"),
            },
            other => panic!("exports: {other:?}"),
        };
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(component.clone().run(shutdown.clone()));
        Writer {
            component,
            receiver,
            metrics,
            shutdown,
            task,
        }
    }

    pub fn append(&self, profiles: Vec<scraper::profiles::Profile>) {
        self.receiver.append(profiles);
    }

    /// Applies new arguments, as the controller would.
    pub fn update(&self, body: &str) -> Result<(), String> {
        use scraper::runtime::Component as _;
        let args = write_args(body).map_err(|e| e.join("; "))?;
        self.component.update(args).map_err(|e| e.to_string())
    }

    /// Sum of the samples of metric `name` whose labels include all of `labels`.
    pub fn metric(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        metric_value(&self.metrics.encode().expect("encode"), name, labels)
    }

    /// Waits until `f` holds (polling every 10 ms); false on timeout.
    pub async fn wait(&self, timeout: Duration, mut f: impl FnMut(&Writer) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if f(self) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// Queued profiles over all endpoints.
    pub fn queued(&self) -> usize {
        self.component.queue_depth().iter().map(|(_, n, _)| n).sum()
    }

    /// Stops the component (flushing as configured); returns how long that took.
    pub async fn stop(self) -> Duration {
        let started = Instant::now();
        self.shutdown.cancel();
        self.task.await.expect("join").expect("run");
        started.elapsed()
    }
}

/// Sum of the samples of `name` with all of `labels` in an OpenMetrics exposition.
pub fn metric_value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (n, rest) = match series.split_once('{') {
                Some((n, rest)) => (n, rest),
                None => (series, ""),
            };
            if n != name {
                return None;
            }
            if !labels
                .iter()
                .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
            {
                return None;
            }
            value.parse::<f64>().ok()
        })
        .sum()
}

/// A profile for series `series` whose bytes say which one it is (`<series>/<seq>`).
pub fn numbered_profile(series: &str, seq: usize) -> scraper::profiles::Profile {
    scraper::profiles::Profile::new(
        vec![
            ("__name__".to_string(), "process_cpu".to_string()),
            ("service_name".to_string(), series.to_string()),
        ],
        format!("{series}/{seq:06}").into_bytes(),
    )
}

/// `(series, seq)` back from a [`numbered_profile`]'s bytes.
pub fn numbered(raw: &[u8]) -> (String, usize) {
    let text = std::str::from_utf8(raw).expect("utf8");
    let (series, seq) = text.rsplit_once('/').expect("numbered profile");
    (series.to_string(), seq.parse().expect("seq"))
}
