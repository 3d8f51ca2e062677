//! `otelcol.exporter.otlp` (OTLP/gRPC) against a gRPC server in this test (HTTP/2 with prior
//! knowledge, axum): the exporter's calls are captured, unframed and gunzipped here, and their
//! messages decoded by OpenTelemetry's own Python messages (`tests/otlp/decode.py`,
//! opentelemetry-proto 1.45.2 pinned by `tests/otlp/install.sh`). Every value of real Go
//! profiles must be found under the same stack and sample type; an UNAVAILABLE answer is
//! retried, an INVALID_ARGUMENT one drops the profile and counts it.
//!
//! Without the decoder venv the test prints why and passes, unless
//! `SCRAPER_REQUIRE_OTLP_DECODER=1` (set by .ci/run) makes that a failure.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue};
use axum::response::Response;
use http_body_util::BodyExt as _;
use scraper::components::otelcol::exporter_otlp::OtlpGrpcProfiles;
use scraper::pprof::proto::Profile as Pprof;
use scraper::profiles::{Profile, Receiver};
use scraper::runtime::{Component as _, ComponentOptions, MetricsRegistry};
use scraper::syntax::value::Value as AlloyValue;
use serde_json::Value;
use support::pyroscope_receiver::metric_value;
use tokio_util::sync::CancellationToken;

const EXPORT: &str = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";

fn decoder_python() -> Option<PathBuf> {
    support::tools::venv_python(
        "otlp-decoder",
        "opentelemetry.proto.profiles.v1development",
        "SCRAPER_REQUIRE_OTLP_DECODER",
        "tests/otlp/install.sh",
    )
}

/// One captured call: its headers, the message (unframed, decompressed), when it arrived.
struct Call {
    headers: HeaderMap,
    message: Vec<u8>,
    at: Instant,
}

/// A scripted answer: a gRPC status, a `RetryInfo` delay to send with it, and the answer's
/// content type (a non-gRPC one stands for a proxy's page).
#[derive(Clone, Copy)]
struct Answer {
    status: u32,
    retry_info: Option<Duration>,
    content_type: &'static str,
}

fn answer(status: u32) -> Answer {
    Answer {
        status,
        retry_info: None,
        content_type: "application/grpc",
    }
}

#[derive(Clone, Default)]
struct Capture {
    calls: Arc<Mutex<Vec<Call>>>,
    /// Answers, in order; then OK.
    script: Arc<Mutex<Vec<Answer>>>,
}

async fn export(State(c): State<Capture>, req: Request) -> Response {
    let (parts, body) = req.into_parts();
    let body = body.collect().await.expect("body").to_bytes();
    assert!(body.len() >= 5, "a framed message");
    let size = u32::from_be_bytes([body[1], body[2], body[3], body[4]]) as usize;
    assert_eq!(body.len(), 5 + size, "one message");
    let mut message = body[5..].to_vec();
    if body[0] == 1 {
        assert_eq!(parts.headers["grpc-encoding"], "gzip");
        message = scraper::pprof::gunzip(&message, &scraper::pprof::Limits::default())
            .expect("gzip message");
    }
    c.calls.lock().expect("lock").push(Call {
        headers: parts.headers,
        message,
        at: Instant::now(),
    });
    let scripted = {
        let mut s = c.script.lock().expect("lock");
        if s.is_empty() { answer(0) } else { s.remove(0) }
    };
    let status = scripted.status;
    let mut r = if status == 0 {
        // The empty ExportProfilesServiceResponse, then grpc-status 0 in the trailers.
        let mut trailers = HeaderMap::new();
        trailers.insert("grpc-status", HeaderValue::from_static("0"));
        let frames = futures::stream::iter([
            Ok::<_, std::convert::Infallible>(http_body::Frame::data(bytes::Bytes::from_static(
                &[0, 0, 0, 0, 0],
            ))),
            Ok(http_body::Frame::trailers(trailers)),
        ]);
        Response::new(Body::new(http_body_util::StreamBody::new(frames)))
    } else {
        let mut r = Response::new(Body::empty());
        r.headers_mut()
            .insert("grpc-status", HeaderValue::from(status as u16));
        r.headers_mut().insert(
            "grpc-message",
            HeaderValue::from_static("scripted%20failure"),
        );
        if let Some(delay) = scripted.retry_info {
            let details = scraper::protocols::otlp::grpc::retry_details(
                scraper::protocols::otlp::grpc::Status::from_code(status),
                "scripted",
                delay,
            );
            r.headers_mut().insert(
                "grpc-status-details-bin",
                HeaderValue::from_str(&details).expect("base64"),
            );
        }
        r
    };
    r.headers_mut().insert(
        "content-type",
        HeaderValue::from_static(scripted.content_type),
    );
    r
}

/// A listener that completes a TLS handshake before handing a connection to axum.
struct TlsListener {
    inner: tokio::net::TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
}

impl axum::serve::Listener for TlsListener {
    type Io = tokio_rustls::server::TlsStream<tokio::net::TcpStream>;
    type Addr = std::net::SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let Ok((sock, addr)) = self.inner.accept().await else {
                continue;
            };
            if let Ok(tls) = self.acceptor.accept(sock).await {
                return (tls, addr);
            }
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        self.inner.local_addr()
    }
}

/// The test's gRPC server: h2c, or TLS with `tls` (ALPN `h2` only, as grpc-go insists).
async fn grpc_server(capture: Capture, tls: Option<rustls::ServerConfig>) -> String {
    let app = axum::Router::new()
        .route(EXPORT, axum::routing::post(export))
        .with_state(capture);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    match tls {
        None => {
            tokio::spawn(async move { axum::serve(listener, app).await });
        }
        Some(mut config) => {
            config.alpn_protocols = vec![b"h2".to_vec()];
            let listener = TlsListener {
                inner: listener,
                acceptor: tokio_rustls::TlsAcceptor::from(Arc::new(config)),
            };
            tokio::spawn(async move { axum::serve(listener, app).await });
        }
    }
    addr.to_string()
}

fn start(
    body: &str,
) -> (
    Arc<OtlpGrpcProfiles>,
    Arc<Receiver>,
    MetricsRegistry,
    CancellationToken,
) {
    use scraper::syntax::eval::{Scope, eval_body};
    use scraper::syntax::parser::parse_file;
    let (file, diags) = parse_file(body);
    assert!(diags.is_empty(), "{diags:?}");
    let evaluated = eval_body(&file.body, &Scope::stdlib()).expect("eval");
    let args = scraper::syntax::decode::from_body::<
        <OtlpGrpcProfiles as scraper::runtime::Component>::Arguments,
    >(&evaluated)
    .expect("valid arguments");
    let opts = ComponentOptions::standalone(
        "otelcol.exporter.otlp.test",
        "otelcol.exporter.otlp",
        OtlpGrpcProfiles::initial_exports(),
    );
    let kept = opts.metrics.clone();
    let exports = opts.exports.clone();
    let component = Arc::new(OtlpGrpcProfiles::build(opts, args).expect("build"));
    let receiver = match exports.current() {
        AlloyValue::Object(o) => match o.get("receiver") {
            Some(AlloyValue::Capsule(c)) => c.downcast::<Receiver>().expect("receiver"),
            other => panic!("no receiver export: {other:?}"),
        },
        other => panic!("exports: {other:?}"),
    };
    let shutdown = CancellationToken::new();
    tokio::spawn(component.clone().run(shutdown.clone()));
    (component, receiver, kept, shutdown)
}

fn fixture(name: &str) -> (Vec<u8>, Pprof) {
    let path = format!("{}/tests/data/pprof/{name}", env!("CARGO_MANIFEST_DIR"));
    let raw = std::fs::read(&path).expect("fixture");
    let p = scraper::pprof::decode(&raw, &scraper::pprof::Limits::default()).expect("decode");
    (raw, p)
}

/// Per (sample type, leaf-first function names): the total value, zeros left out.
fn expected(p: &Pprof) -> BTreeMap<(String, Vec<String>), i64> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let mut out = BTreeMap::new();
    for (k, vt) in p.sample_type.iter().enumerate() {
        for sample in &p.sample {
            if sample.value[k] == 0 {
                continue;
            }
            let mut stack = Vec::new();
            for id in &sample.location_id {
                let l = p.location.iter().find(|l| l.id == *id).expect("location");
                for ln in &l.line {
                    let f = p
                        .function
                        .iter()
                        .find(|f| f.id == ln.function_id)
                        .expect("fn");
                    stack.push(s(f.name));
                }
            }
            *out.entry((s(vt.r#type), stack)).or_insert(0) += sample.value[k];
        }
    }
    out
}

/// What decode.py printed, in the same shape.
fn decoded(profiles: &Value) -> BTreeMap<(String, Vec<String>), i64> {
    let mut out = BTreeMap::new();
    for prof in profiles.as_array().expect("profiles") {
        let ty = prof["type"][0].as_str().expect("type").to_owned();
        for sample in prof["samples"].as_array().expect("samples") {
            let stack: Vec<String> = sample[0]
                .as_array()
                .expect("stack")
                .iter()
                .flat_map(|loc| loc.as_array().expect("lines").clone())
                .map(|line| line[0].as_str().expect("name").to_owned())
                .collect();
            *out.entry((ty.clone(), stack)).or_insert(0) += sample[2].as_i64().expect("value");
        }
    }
    out
}

fn decode_py(python: &Path, message: &[u8]) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("request.pb");
    std::fs::write(&file, message).expect("write");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/decode.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&file)
        .output()
        .expect("run decode.py");
    assert!(
        out.status.success(),
        "decode.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("decoder JSON")
}

async fn wait_until(mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    f()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_export_decodes_with_opentelemetry_proto() {
    let Some(python) = decoder_python() else {
        return;
    };
    let capture = Capture::default();
    // The first call is refused as unavailable (retried), the third as invalid (dropped).
    *capture.script.lock().expect("lock") = vec![answer(14), answer(0), answer(3)];
    let addr = grpc_server(capture.clone(), None).await;
    let (component, receiver, metrics, shutdown) = start(&format!(
        "client {{\n endpoint = \"{addr}\"\n headers = {{ \"X-Scope-OrgID\" = \"team-a\" }}\n tls {{\n  insecure = true\n }}\n}}\nretry_on_failure {{\n initial_interval = \"10ms\"\n max_interval = \"100ms\"\n}}\nqueue_config {{\n senders = 1\n}}\n"
    ));
    let names = [
        "goapp-heap-1.pb.gz",
        "prometheus-mutex-1.pb.gz",
        "goapp-block-2.pb.gz",
    ];
    let fixtures: Vec<(Vec<u8>, Pprof)> = names.iter().map(|n| fixture(n)).collect();
    for (i, (raw, _)) in fixtures.iter().enumerate() {
        receiver.append(vec![Profile::new(
            vec![
                ("__name__".into(), "memory".into()),
                ("service_name".into(), format!("svc-{i}")),
            ],
            raw.clone(),
        )]);
        // One at a time, so the scripted answers meet the profiles in order.
        let want = [2, 3, 4][i];
        assert!(
            wait_until(|| capture.calls.lock().expect("lock").len() >= want).await,
            "exporter sent {} calls",
            capture.calls.lock().expect("lock").len()
        );
    }
    let calls = std::mem::take(&mut *capture.calls.lock().expect("lock"));
    assert_eq!(calls.len(), 4, "one retry, no more");
    for c in &calls {
        assert_eq!(c.headers["content-type"], "application/grpc");
        assert_eq!(c.headers["te"], "trailers");
        assert_eq!(c.headers["x-scope-orgid"], "team-a");
        assert!(c.headers.contains_key("grpc-timeout"));
    }
    assert_eq!(
        calls[0].message, calls[1].message,
        "the retry resends the same request"
    );
    // Calls 1 (first profile), 2 (second, refused) and 3 (third) decode with the third-party
    // messages to exactly the source profiles' values.
    let mut compared = 0;
    for (call, (_, p)) in [&calls[1], &calls[2], &calls[3]].into_iter().zip(&fixtures) {
        let profiles = decode_py(&python, &call.message);
        let want = expected(p);
        assert_eq!(decoded(&profiles), want);
        compared += want.len();
    }
    assert!(compared >= 30, "only {compared} stacks compared");
    let text = metrics.encode().expect("metrics");
    let dropped = metric_value(
        &text,
        "pyroscope_write_dropped_profiles_total",
        &[("component_id", "otelcol.exporter.otlp.test")],
    );
    assert_eq!(dropped, 1.0, "{text}");
    shutdown.cancel();
    drop(component);
    eprintln!(
        "opentelemetry-proto decoded {compared} (type, stack) values from gRPC calls, all equal"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_over_tls_with_a_server_name() {
    use support::pyroscope_receiver::{TestCa, tls_server_config};
    let ca = TestCa::new("otlp test CA");
    let server = ca.issue(&["otlp.internal"]);
    let capture = Capture::default();
    let addr = grpc_server(capture.clone(), Some(tls_server_config(&server, None))).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.cert_pem).expect("write ca");
    // host:port without `insecure`: TLS, the certificate checked for otlp.internal.
    let (_component, receiver, metrics, shutdown) = start(&format!(
        "client {{\n endpoint = \"{addr}\"\n compression = \"none\"\n tls {{\n  ca_file = \"{}\"\n  server_name = \"otlp.internal\"\n }}\n}}\n",
        ca_file.display()
    ));
    let (raw, p) = fixture("goapp-mutex-2.pb.gz");
    receiver.append(vec![Profile::new(
        vec![("service_name".into(), "tls".into())],
        raw,
    )]);
    assert!(
        wait_until(|| !capture.calls.lock().expect("lock").is_empty()).await,
        "nothing arrived over TLS: {}",
        metrics.encode().expect("metrics")
    );
    let calls = std::mem::take(&mut *capture.calls.lock().expect("lock"));
    assert!(
        !calls[0].headers.contains_key("grpc-encoding"),
        "compression = none"
    );
    let req = <scraper::protocols::otlp::proto::collector::profiles::v1development::ExportProfilesServiceRequest as prost::Message>::decode(calls[0].message.as_slice())
        .expect("an export request");
    let got = scraper::protocols::otlp::convert::to_pprof(&req).expect("converts back");
    assert_eq!(
        got.len(),
        p.sample_type.len(),
        "one OTLP profile per sample type"
    );
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_exhausted_is_retried_only_with_retry_info_after_its_delay() {
    let capture = Capture::default();
    let delay = Duration::from_millis(400);
    // Profile 1: RESOURCE_EXHAUSTED without RetryInfo (dropped, as the Collector does).
    // Profile 2: with a RetryInfo of 400 ms (retried, not sooner), then OK.
    // Profile 3: a 200 answer that is not gRPC (a proxy's page): dropped, not retried.
    *capture.script.lock().expect("lock") = vec![
        answer(8),
        Answer {
            retry_info: Some(delay),
            ..answer(8)
        },
        answer(0),
        Answer {
            content_type: "text/html",
            ..answer(0)
        },
    ];
    let addr = grpc_server(capture.clone(), None).await;
    let (_component, receiver, metrics, shutdown) = start(&format!(
        "client {{\n endpoint = \"{addr}\"\n tls {{\n  insecure = true\n }}\n}}\nretry_on_failure {{\n initial_interval = \"10ms\"\n max_interval = \"20ms\"\n}}\nqueue_config {{\n senders = 1\n}}\n"
    ));
    let (raw, _) = fixture("goapp-mutex-2.pb.gz");
    for (i, want) in [1, 3, 4].into_iter().enumerate() {
        receiver.append(vec![Profile::new(
            vec![("service_name".into(), format!("svc-{i}"))],
            raw.clone(),
        )]);
        assert!(
            wait_until(|| capture.calls.lock().expect("lock").len() >= want).await,
            "exporter sent {} calls",
            capture.calls.lock().expect("lock").len()
        );
    }
    let text = metrics.encode().expect("metrics");
    let id = [("component_id", "otelcol.exporter.otlp.test")];
    assert!(
        wait_until(|| metric_value(
            &metrics.encode().expect("metrics"),
            "pyroscope_write_dropped_profiles_total",
            &id
        ) >= 2.0)
        .await,
        "{text}"
    );
    // Give a wrongly scheduled retry the time to show up before counting.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let calls = std::mem::take(&mut *capture.calls.lock().expect("lock"));
    assert_eq!(calls.len(), 4, "one retry (profile 2), no more");
    let gap = calls[2].at - calls[1].at;
    eprintln!("retry after {gap:?} (RetryInfo {delay:?}, backoff 10-20ms)");
    assert!(
        gap >= delay,
        "the retry came {gap:?} after, before {delay:?}"
    );
    let text = metrics.encode().expect("metrics");
    assert_eq!(
        metric_value(&text, "pyroscope_write_dropped_profiles_total", &id),
        2.0,
        "{text}"
    );
    shutdown.cancel();
}
