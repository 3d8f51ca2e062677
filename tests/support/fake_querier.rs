//! A fake Pyroscope querier, written from pyroscope-protocol.md §7: Connect unary
//! `querier.v1.QuerierService` calls over HTTP/1.1 with binary protobuf bodies, answered from
//! an in-memory list of profiles.
//!
//! * `SelectMergeStacktraces` (with `format = PPROF`: the merged pprof in field 5, else a
//!   stand-in flame graph in field 1), `SelectMergeProfile` (the pprof as the whole body) and
//!   `Series` (the label sets, each with its `__profile_type__`).
//! * A stored profile is one series per sample type, as Pyroscope ingests it: it matches the
//!   profile type `name:type:unit:period_type:period_unit` when its `__name__` is `name` and it
//!   has the sample type `type/unit`; the result keeps only that sample type.
//! * Ranges are milliseconds, both ends included; `0` for either end, a start after the end,
//!   or a range longer than `max_query_length` (24 h unless configured) is a Connect
//!   `invalid_argument` (400) with Pyroscope's message.
//! * Optionally a tenant is required (Connect `unauthenticated`, 401, as Pyroscope's tenant
//!   interceptor), and basic auth or a bearer token (a plain 401, as from the reverse proxy
//!   that does auth in front of Pyroscope).
//! * Every request is recorded with what it asked for.

#![allow(dead_code)] // each test binary uses a different subset

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};

use base64::Engine as _;
use prost::Message as _;
use scraper::pprof::proto::Profile;
use scraper::query::selector::Selector;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

pub const SELECT_MERGE_STACKTRACES: &str = "/querier.v1.QuerierService/SelectMergeStacktraces";
pub const SELECT_MERGE_PROFILE: &str = "/querier.v1.QuerierService/SelectMergeProfile";
pub const SERIES: &str = "/querier.v1.QuerierService/Series";

pub const DAY_MS: i64 = 86_400_000;
const FORMAT_PPROF: i32 = 4;

#[derive(Clone, PartialEq, prost::Message)]
struct SelectMergeStacktracesRequest {
    #[prost(string, tag = "1")]
    profile_type_id: String,
    #[prost(string, tag = "2")]
    label_selector: String,
    #[prost(int64, tag = "3")]
    start: i64,
    #[prost(int64, tag = "4")]
    end: i64,
    #[prost(int64, optional, tag = "5")]
    max_nodes: Option<i64>,
    #[prost(int32, tag = "6")]
    format: i32,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SelectMergeStacktracesResponse {
    #[prost(message, optional, tag = "1")]
    flamegraph: Option<FlameGraph>,
    #[prost(message, optional, tag = "5")]
    pprof: Option<PprofProfile>,
}

/// Just enough of `querier.v1.FlameGraph` (names=1, total=3) to look like one.
#[derive(Clone, PartialEq, prost::Message)]
struct FlameGraph {
    #[prost(string, repeated, tag = "1")]
    names: Vec<String>,
    #[prost(int64, tag = "3")]
    total: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct PprofProfile {
    #[prost(bytes = "vec", tag = "1")]
    profile: Vec<u8>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SelectMergeProfileRequest {
    #[prost(string, tag = "1")]
    profile_type_id: String,
    #[prost(string, tag = "2")]
    label_selector: String,
    #[prost(int64, tag = "3")]
    start: i64,
    #[prost(int64, tag = "4")]
    end: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SeriesRequest {
    #[prost(string, repeated, tag = "1")]
    matchers: Vec<String>,
    #[prost(string, repeated, tag = "2")]
    label_names: Vec<String>,
    #[prost(int64, tag = "3")]
    start: i64,
    #[prost(int64, tag = "4")]
    end: i64,
}

#[derive(Clone, PartialEq, prost::Message)]
struct SeriesResponse {
    #[prost(message, repeated, tag = "2")]
    labels_set: Vec<Labels>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct Labels {
    #[prost(message, repeated, tag = "1")]
    labels: Vec<LabelPair>,
}

#[derive(Clone, PartialEq, prost::Message)]
struct LabelPair {
    #[prost(string, tag = "1")]
    name: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// One stored profile: its series labels (with `__name__`) and time.
#[derive(Clone, Debug)]
pub struct Stored {
    pub labels: Vec<(String, String)>,
    pub time_ms: i64,
    pub profile: Profile,
}

/// How the fake behaves.
#[derive(Clone, Debug)]
pub struct Config {
    /// Required `X-Scope-OrgID`.
    pub tenant: Option<String>,
    /// Required basic auth credentials.
    pub basic_auth: Option<(String, String)>,
    /// Required bearer token.
    pub bearer_token: Option<String>,
    /// Behave like a server without the pprof format: `SelectMergeStacktraces` answers a
    /// flame graph whatever the format.
    pub omit_pprof: bool,
    /// gzip the profile inside `SelectMergeStacktraces` responses.
    pub gzip_pprof: bool,
    /// Answer `Series` with a Connect `unimplemented` error.
    pub fail_series: bool,
    pub max_query_length_ms: i64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tenant: None,
            basic_auth: None,
            bearer_token: None,
            omit_pprof: false,
            gzip_pprof: false,
            fail_series: false,
            max_query_length_ms: DAY_MS,
        }
    }
}

/// One request and what it asked for (fields of the decoded message; empty when it did not
/// decode or has no such field).
#[derive(Clone, Debug, Default)]
pub struct Call {
    pub path: String,
    /// Names lower-case.
    pub headers: Vec<(String, String)>,
    pub profile_type_id: String,
    pub label_selector: String,
    pub matchers: Vec<String>,
    pub start: i64,
    pub end: i64,
    pub format: i32,
    pub status: u16,
}

impl Call {
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
}

struct Shared {
    config: Config,
    data: Vec<Stored>,
    calls: Mutex<Vec<Call>>,
}

impl Shared {
    fn calls(&self) -> MutexGuard<'_, Vec<Call>> {
        self.calls.lock().unwrap_or_else(|e| e.into_inner())
    }
}

pub struct FakeQuerier {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Drop for FakeQuerier {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FakeQuerier {
    /// Serves `data` on 127.0.0.1 (an OS-chosen port) on the current runtime.
    pub async fn start(config: Config, data: Vec<Stored>) -> FakeQuerier {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let shared = Arc::new(Shared {
            config,
            data,
            calls: Mutex::new(Vec::new()),
        });
        let stop = CancellationToken::new();
        let (s, st) = (shared.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let sock = tokio::select! {
                    _ = st.cancelled() => return,
                    r = listener.accept() => match r { Ok((sock, _)) => sock, Err(_) => continue },
                };
                let (s, st) = (s.clone(), st.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = st.cancelled() => {}
                        _ = serve(sock, &s) => {}
                    }
                });
            }
        });
        FakeQuerier { addr, shared, stop }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.shared.calls().clone()
    }

    /// The calls to one RPC path.
    pub fn calls_to(&self, path: &str) -> Vec<Call> {
        self.calls()
            .into_iter()
            .filter(|c| c.path == path)
            .collect()
    }
}

struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Fills `buf` until it holds `n` bytes; false at end of stream.
async fn fill(sock: &mut TcpStream, buf: &mut Vec<u8>, n: usize) -> bool {
    while buf.len() < n {
        let mut chunk = [0u8; 8192];
        match sock.read(&mut chunk).await {
            Ok(0) | Err(_) => return false,
            Ok(k) => buf.extend_from_slice(&chunk[..k]),
        }
    }
    true
}

async fn read_request(sock: &mut TcpStream, buf: &mut Vec<u8>) -> Option<Request> {
    let end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let want = buf.len() + 1;
        if !fill(sock, buf, want).await {
            return None;
        }
    };
    let head = String::from_utf8(buf[..end].to_vec()).ok()?;
    buf.drain(..end + 4);
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next()?.split(' ');
    let method = request_line.next()?.to_string();
    let path = request_line.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let mut request = Request {
        method,
        path,
        headers,
        body: Vec::new(),
    };
    if request
        .header("transfer-encoding")
        .is_some_and(|t| t.contains("chunked"))
    {
        loop {
            let line_end = loop {
                if let Some(i) = buf.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                let want = buf.len() + 1;
                if !fill(sock, buf, want).await {
                    return None;
                }
            };
            let size_line = String::from_utf8(buf[..line_end].to_vec()).ok()?;
            let size = usize::from_str_radix(size_line.split(';').next()?.trim(), 16).ok()?;
            buf.drain(..line_end + 2);
            if !fill(sock, buf, size + 2).await {
                return None;
            }
            request.body.extend_from_slice(&buf[..size]);
            buf.drain(..size + 2);
            if size == 0 {
                break;
            }
        }
    } else {
        let len: usize = request
            .header("content-length")
            .unwrap_or("0")
            .parse()
            .ok()?;
        if !fill(sock, buf, len).await {
            return None;
        }
        request.body = buf.drain(..len).collect();
    }
    Some(request)
}

struct Response {
    status: u16,
    content_type: &'static str,
    extra: Vec<(&'static str, &'static str)>,
    body: Vec<u8>,
}

fn proto(body: Vec<u8>) -> Response {
    Response {
        status: 200,
        content_type: "application/proto",
        extra: Vec::new(),
        body,
    }
}

fn plain(status: u16, text: &str) -> Response {
    Response {
        status,
        content_type: "text/plain; charset=utf-8",
        extra: Vec::new(),
        body: text.as_bytes().to_vec(),
    }
}

/// A Connect error with connect-go's status for `code`.
fn connect_error(code: &str, message: &str) -> Response {
    let status = match code {
        "invalid_argument" | "failed_precondition" | "out_of_range" => 400,
        "unauthenticated" => 401,
        "permission_denied" => 403,
        "not_found" => 404,
        "resource_exhausted" => 429,
        "unimplemented" => 501,
        "unavailable" => 503,
        _ => 500,
    };
    Response {
        status,
        content_type: "application/json",
        extra: Vec::new(),
        body: serde_json::json!({ "code": code, "message": message })
            .to_string()
            .into_bytes(),
    }
}

async fn serve(mut sock: TcpStream, shared: &Shared) {
    let mut buf = Vec::new();
    while let Some(request) = read_request(&mut sock, &mut buf).await {
        let mut call = Call {
            path: request.path.clone(),
            headers: request.headers.clone(),
            ..Call::default()
        };
        let response = handle(&request, shared, &mut call);
        call.status = response.status;
        shared.calls().push(call);
        let mut out = format!(
            "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\n",
            response.status,
            response.content_type,
            response.body.len()
        );
        for (name, value) in &response.extra {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(&response.body);
        if sock.write_all(&bytes).await.is_err() {
            return;
        }
    }
}

fn handle(request: &Request, shared: &Shared, call: &mut Call) -> Response {
    let config = &shared.config;
    let authorization = request.header("authorization");
    if let Some((user, password)) = &config.basic_auth {
        let want = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))
        );
        if authorization != Some(want.as_str()) {
            let mut r = plain(401, "Unauthorized\n");
            r.extra
                .push(("WWW-Authenticate", "Basic realm=\"pyroscope\""));
            return r;
        }
    }
    if let Some(token) = &config.bearer_token
        && authorization != Some(format!("Bearer {token}").as_str())
    {
        return plain(401, "Unauthorized\n");
    }
    if request.method != "POST"
        || ![SELECT_MERGE_STACKTRACES, SELECT_MERGE_PROFILE, SERIES]
            .contains(&request.path.as_str())
    {
        return plain(404, "404 page not found\n");
    }
    if request.header("content-type") != Some("application/proto") {
        return plain(415, "unsupported content type\n");
    }
    if let Some(tenant) = &config.tenant {
        match request.header("x-scope-orgid") {
            None => return connect_error("unauthenticated", "no org id"),
            Some(t) if t != tenant => {
                return connect_error("permission_denied", &format!("unknown tenant {t:?}"));
            }
            Some(_) => {}
        }
    }
    let body = request.body.as_slice();
    match request.path.as_str() {
        SELECT_MERGE_STACKTRACES => {
            let Ok(req) = SelectMergeStacktracesRequest::decode(body) else {
                return connect_error("invalid_argument", "malformed request");
            };
            call.profile_type_id = req.profile_type_id.clone();
            call.label_selector = req.label_selector.clone();
            (call.start, call.end, call.format) = (req.start, req.end, req.format);
            let merged = match select(
                shared,
                &req.profile_type_id,
                &req.label_selector,
                req.start,
                req.end,
            ) {
                Ok(p) => p,
                Err(r) => return r,
            };
            let response = if config.omit_pprof || req.format != FORMAT_PPROF {
                SelectMergeStacktracesResponse {
                    flamegraph: Some(FlameGraph {
                        names: vec!["total".into()],
                        total: merged
                            .sample
                            .iter()
                            .map(|s| s.value.first().copied().unwrap_or(0))
                            .sum(),
                    }),
                    pprof: None,
                }
            } else {
                let raw = merged.encode_to_vec();
                let profile = if config.gzip_pprof {
                    scraper::pprof::gzip(&raw, 1)
                } else {
                    raw
                };
                SelectMergeStacktracesResponse {
                    flamegraph: None,
                    pprof: Some(PprofProfile { profile }),
                }
            };
            proto(response.encode_to_vec())
        }
        SELECT_MERGE_PROFILE => {
            let Ok(req) = SelectMergeProfileRequest::decode(body) else {
                return connect_error("invalid_argument", "malformed request");
            };
            call.profile_type_id = req.profile_type_id.clone();
            call.label_selector = req.label_selector.clone();
            (call.start, call.end) = (req.start, req.end);
            match select(
                shared,
                &req.profile_type_id,
                &req.label_selector,
                req.start,
                req.end,
            ) {
                Ok(p) => proto(p.encode_to_vec()),
                Err(r) => r,
            }
        }
        _ => {
            let Ok(req) = SeriesRequest::decode(body) else {
                return connect_error("invalid_argument", "malformed request");
            };
            call.matchers = req.matchers.clone();
            (call.start, call.end) = (req.start, req.end);
            if config.fail_series {
                return connect_error("unimplemented", "Series is not served here");
            }
            if let Err(r) = check_range(config, req.start, req.end) {
                return r;
            }
            let mut selectors = Vec::new();
            for m in &req.matchers {
                match Selector::parse(m) {
                    Ok(s) => selectors.push(s),
                    Err(e) => return connect_error("invalid_argument", &e.to_string()),
                }
            }
            let mut sets: Vec<Vec<(String, String)>> = Vec::new();
            for stored in &shared.data {
                if stored.time_ms < req.start || stored.time_ms > req.end {
                    continue;
                }
                for id in profile_type_ids(stored) {
                    let mut labels = stored.labels.clone();
                    labels.push(("__profile_type__".into(), id));
                    labels.sort();
                    // Several matchers are alternatives, as in Prometheus' series API.
                    let selected =
                        selectors.is_empty() || selectors.iter().any(|s| s.matches_pairs(&labels));
                    if selected && !sets.contains(&labels) {
                        sets.push(labels);
                    }
                }
            }
            let response = SeriesResponse {
                labels_set: sets
                    .into_iter()
                    .map(|labels| Labels {
                        labels: labels
                            .into_iter()
                            .map(|(name, value)| LabelPair { name, value })
                            .collect(),
                    })
                    .collect(),
            };
            proto(response.encode_to_vec())
        }
    }
}

fn string(p: &Profile, i: i64) -> &str {
    usize::try_from(i)
        .ok()
        .and_then(|i| p.string_table.get(i))
        .map_or("", String::as_str)
}

fn label<'a>(labels: &'a [(String, String)], name: &str) -> &'a str {
    labels
        .iter()
        .find(|(n, _)| n == name)
        .map_or("", |(_, v)| v.as_str())
}

/// The profile type IDs a stored profile is ingested under: one per sample type.
fn profile_type_ids(stored: &Stored) -> Vec<String> {
    let p = &stored.profile;
    let name = label(&stored.labels, "__name__");
    let (pt, pu) = p
        .period_type
        .map_or(("", ""), |t| (string(p, t.r#type), string(p, t.unit)));
    p.sample_type
        .iter()
        .map(|t| {
            format!(
                "{name}:{}:{}:{pt}:{pu}",
                string(p, t.r#type),
                string(p, t.unit)
            )
        })
        .collect()
}

/// Pyroscope's `ValidateRangeRequest` (without the lookback clamp).
fn check_range(config: &Config, start: i64, end: i64) -> Result<(), Response> {
    if start == 0 || end == 0 {
        return Err(connect_error(
            "invalid_argument",
            "missing time range in the query",
        ));
    }
    if start > end {
        return Err(connect_error(
            "invalid_argument",
            "query start time is after end time",
        ));
    }
    let length = end - start;
    if length > config.max_query_length_ms {
        let actual = scraper::gocompat::time::format_go_duration(std::time::Duration::from_millis(
            length as u64,
        ));
        let limit = if config.max_query_length_ms % DAY_MS == 0 {
            format!("{}d", config.max_query_length_ms / DAY_MS)
        } else {
            scraper::gocompat::time::format_go_duration(std::time::Duration::from_millis(
                config.max_query_length_ms as u64,
            ))
        };
        return Err(connect_error(
            "invalid_argument",
            &format!(
                "the query time range exceeds the limit (max_query_length, actual: {actual}, limit: {limit})"
            ),
        ));
    }
    Ok(())
}

/// The merge of every stored profile of type `type_id` matching `selector` in
/// `[start, end]`, reduced to the type's sample type; an empty `Profile` when none match.
fn select(
    shared: &Shared,
    type_id: &str,
    selector: &str,
    start: i64,
    end: i64,
) -> Result<Profile, Response> {
    check_range(&shared.config, start, end)?;
    let selector =
        Selector::parse(selector).map_err(|e| connect_error("invalid_argument", &e.to_string()))?;
    let parts: Vec<&str> = type_id.split(':').collect();
    let [name, ty, unit, _, _] = parts.as_slice() else {
        return Err(connect_error(
            "invalid_argument",
            &format!("invalid profile type {type_id:?}"),
        ));
    };
    let mut matching = Vec::new();
    for stored in &shared.data {
        if stored.time_ms < start
            || stored.time_ms > end
            || label(&stored.labels, "__name__") != *name
            || !selector.matches_pairs(&stored.labels)
        {
            continue;
        }
        let p = &stored.profile;
        let Some(index) = p
            .sample_type
            .iter()
            .position(|t| string(p, t.r#type) == *ty && string(p, t.unit) == *unit)
        else {
            continue;
        };
        let mut one = p.clone();
        one.sample_type = vec![p.sample_type[index]];
        for s in &mut one.sample {
            s.value = vec![s.value[index]];
        }
        matching.push(one);
    }
    if matching.is_empty() {
        return Ok(Profile::default());
    }
    scraper::pprof::merge(&matching).map_err(|e| connect_error("internal", &e.to_string()))
}
