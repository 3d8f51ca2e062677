//! The component over real sockets: routes, status codes, limits, updates.

use std::time::Duration;

use bytes::Bytes;
use prost::Message as _;

use super::*;
use crate::profiles::collect::Collect;
use crate::profiles::{Profile, Receiver};
use crate::protocols::pyroscope::proto::push::v1::{PushRequest, RawProfileSeries, RawSample};
use crate::protocols::pyroscope::proto::types::v1::LabelPair;
use crate::syntax::types::CapsuleRef;

type Headers<'a> = Vec<(&'a str, &'a str)>;

fn args(collect: &Arc<Collect>, http: HttpConfig, body_size_limit: u64) -> Arguments {
    Arguments {
        forward_to: vec![CapsuleRef(Arc::new(Receiver::new(collect.clone())))],
        http,
        graceful_shutdown_timeout: Duration::from_secs(2),
        body_size_limit,
    }
}

fn local(port: u16) -> HttpConfig {
    HttpConfig {
        listen_address: "127.0.0.1".into(),
        listen_port: port,
        ..HttpConfig::default()
    }
}

struct Running {
    component: Arc<ReceiveHttp>,
    collect: Arc<Collect>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), BoxError>>,
    client: reqwest::Client,
}

impl Running {
    async fn start(http: HttpConfig, body_size_limit: u64) -> Running {
        let collect = Arc::new(Collect::default());
        let opts = ComponentOptions::standalone(
            "pyroscope.receive_http.test",
            "pyroscope.receive_http",
            ReceiveHttp::initial_exports(),
        );
        let component = Arc::new(
            ReceiveHttp::build(opts, args(&collect, http, body_size_limit)).expect("build"),
        );
        let shutdown = CancellationToken::new();
        let task = tokio::spawn(component.clone().run(shutdown.clone()));
        Running {
            component,
            collect,
            shutdown,
            task,
            client: reqwest::Client::new(),
        }
    }

    fn url(&self, path: &str) -> String {
        format!(
            "http://{}{path}",
            self.component.local_addr().expect("addr")
        )
    }

    async fn post(
        &self,
        path: &str,
        headers: &[(&str, &str)],
        body: impl Into<reqwest::Body>,
    ) -> (u16, String) {
        let mut req = self.client.post(self.url(path)).body(body);
        for (k, v) in headers {
            req = req.header(*k, *v);
        }
        let resp = req.send().await.expect("send");
        let status = resp.status().as_u16();
        (status, resp.text().await.expect("body"))
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.expect("join").expect("run");
    }
}

fn cpu_pprof() -> Vec<u8> {
    let p = convert::tests::profile(
        &[("cpu", "nanoseconds")],
        &[(0, 10, &[])],
        1_700_000_000_000_000_000,
    );
    crate::pprof::encode(&p, 1)
}

fn push_body() -> Vec<u8> {
    PushRequest {
        series: vec![RawProfileSeries {
            labels: vec![
                LabelPair {
                    name: "service_name".into(),
                    value: "svc".into(),
                },
                LabelPair {
                    name: "__name__".into(),
                    value: "process_cpu".into(),
                },
            ],
            samples: vec![
                RawSample {
                    raw_profile: Bytes::from(cpu_pprof()),
                    id: "1".into(),
                },
                RawSample {
                    raw_profile: Bytes::from_static(b"\xde\xad"),
                    id: "2".into(),
                },
            ],
            annotations: vec![],
        }],
    }
    .encode_to_vec()
}

fn labels(p: &Profile) -> Vec<(&str, &str)> {
    let mut v: Vec<_> = p.labels.iter().collect();
    v.sort();
    v
}

#[tokio::test]
async fn push_in_every_encoding() {
    let r = Running::start(local(0), 1 << 20).await;
    let proto = push_body();
    let gz = crate::pprof::gzip(&proto, 1);
    let json = serde_json::json!({"series": [{"labels": [{"name": "service_name", "value": "svc"}, {"name": "__name__", "value": "process_cpu"}],
        "samples": [{"rawProfile": base64_std(&cpu_pprof())}, {"rawProfile": "3q0="}]}]})
    .to_string();
    let cases: Vec<(&str, Option<&str>, Vec<u8>, &str)> = vec![
        ("application/proto", None, proto.clone(), ""),
        ("application/proto", Some("gzip"), gz.clone(), ""),
        ("application/json", None, json.clone().into_bytes(), "{}"),
        (
            "application/json; charset=utf-8",
            Some("gzip"),
            crate::pprof::gzip(json.as_bytes(), 1),
            "{}",
        ),
    ];
    for (ct, enc, body, want_body) in cases {
        let mut headers = vec![("content-type", ct), ("connect-protocol-version", "1")];
        if let Some(e) = enc {
            headers.push(("content-encoding", e));
        }
        let (status, text) = r.post(PUSH_PATH, &headers, body).await;
        assert_eq!((status, text.as_str()), (200, want_body), "{ct} {enc:?}");
        let got = r.collect.take();
        assert_eq!(got.len(), 2, "{ct}");
        assert_eq!(
            labels(&got[0]),
            [("__name__", "process_cpu"), ("service_name", "svc")]
        );
        assert_eq!(got[0].raw.as_ref(), cpu_pprof().as_slice());
        assert_eq!(got[1].raw.as_ref(), b"\xde\xad");
    }
    r.stop().await;
}

fn base64_std(b: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[tokio::test]
async fn push_errors_are_connect_errors() {
    let r = Running::start(local(0), 4096).await;
    let big = vec![0u8; 5000];
    let bomb = crate::pprof::gzip(&vec![0u8; 100_000], 9);
    let cases: Vec<(Headers<'_>, Vec<u8>, u16, &str)> = vec![
        (
            vec![("content-type", "text/plain")],
            push_body(),
            415,
            "unknown",
        ),
        (vec![], push_body(), 415, "unknown"),
        (
            vec![("content-type", "application/grpc")],
            push_body(),
            415,
            "unknown",
        ),
        (
            vec![("content-type", "application/proto")],
            b"\x0a\xff\xff\xff".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            vec![("content-type", "application/json")],
            b"{not json".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            vec![("content-type", "application/proto")],
            big,
            413,
            "invalid_argument",
        ),
        (
            vec![
                ("content-type", "application/proto"),
                ("content-encoding", "gzip"),
            ],
            bomb,
            413,
            "invalid_argument",
        ),
        (
            vec![
                ("content-type", "application/proto"),
                ("content-encoding", "gzip"),
            ],
            b"not gzip".to_vec(),
            400,
            "invalid_argument",
        ),
        (
            vec![
                ("content-type", "application/proto"),
                ("content-encoding", "br"),
            ],
            push_body(),
            501,
            "unimplemented",
        ),
    ];
    for (headers, body, status, code) in cases {
        let (got, text) = r.post(PUSH_PATH, &headers, body).await;
        assert_eq!(got, status, "{headers:?}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json error body");
        assert_eq!(v["code"], code, "{headers:?}: {text}");
        assert!(!v["message"].as_str().unwrap_or("").is_empty());
    }
    assert!(r.collect.take().is_empty());
    // Another method: 405; another path: 404.
    let resp = r.client.get(r.url(PUSH_PATH)).send().await.expect("get");
    assert_eq!(resp.status().as_u16(), 405);
    let (status, _) = r.post("/push.v1.PusherService/Other", &[], "x").await;
    assert_eq!(status, 404);
    let (status, _) = r
        .post("/debuginfo.v1alpha1.DebuginfoService/Upload/abc", &[], "x")
        .await;
    assert_eq!(status, 404);
    r.stop().await;
}

#[tokio::test]
async fn ingest_routes_and_statuses() {
    let r = Running::start(local(0), 64 << 10).await;
    let pprof = cpu_pprof();
    let ok = [
        (
            "/ingest?name=sdk.app%7Benv%3Dprod%7D&format=pprof&spyName=pyspy",
            "binary/octet-stream",
            None,
            pprof.clone(),
        ),
        (
            "/ingest?name=sdk.app{env=prod}&format=pprof&spyName=pyspy",
            "binary/octet-stream",
            Some("gzip"),
            crate::pprof::gzip(&pprof, 1),
        ),
        (
            "/ingest?name=sdk.app.cpu{env=prod}&spyName=pyspy&sampleRate=100",
            "binary/octet-stream",
            None,
            b"main;work 3\n".to_vec(),
        ),
        (
            "/ingest?name=sdk.app.cpu{env=prod}&format=lines&spyName=pyspy",
            "",
            Some("gzip"),
            crate::pprof::gzip(b"main;work\n", 1),
        ),
    ];
    for (path, ct, enc, body) in ok {
        let mut headers = vec![("content-type", ct)];
        if let Some(e) = enc {
            headers.push(("content-encoding", e));
        }
        let (status, text) = r.post(path, &headers, body).await;
        assert_eq!((status, text.as_str()), (200, ""), "{path}");
        let got = r.collect.take();
        assert_eq!(got.len(), 1, "{path}");
        let l = labels(&got[0]);
        assert!(l.contains(&("service_name", "sdk.app")), "{path}: {l:?}");
        assert!(l.contains(&("env", "prod")), "{path}: {l:?}");
        assert!(l.contains(&("__name__", "process_cpu")), "{path}: {l:?}");
        assert!(l.contains(&("pyroscope_spy", "pyspy")), "{path}: {l:?}");
        crate::pprof::decode(&got[0].raw, &crate::pprof::Limits::default()).expect("valid pprof");
    }

    let big = vec![b'a'; 70 << 10];
    let bomb = crate::pprof::gzip(&vec![b'a'; 1 << 20], 9);
    let bad: Vec<(&str, Headers<'_>, Vec<u8>, u16, &str)> = vec![
        (
            "/ingest",
            vec![],
            b"a 1".to_vec(),
            400,
            "name: service name is required",
        ),
        (
            "/ingest?name=bad%20name",
            vec![],
            b"a 1".to_vec(),
            400,
            "invalid service name",
        ),
        (
            "/ingest?name=app.unknowntype",
            vec![],
            b"a 1".to_vec(),
            400,
            "unknown profile type",
        ),
        (
            "/ingest?name=app&format=pprof",
            vec![],
            b"not pprof".to_vec(),
            422,
            "invalid pprof",
        ),
        (
            "/ingest?name=app.cpu",
            vec![],
            b"a;b notanumber".to_vec(),
            422,
            "invalid sample count",
        ),
        (
            "/ingest?name=app&format=jfr",
            vec![],
            b"x".to_vec(),
            415,
            "not supported",
        ),
        ("/ingest?name=app.cpu", vec![], big, 413, "too large"),
        (
            "/ingest?name=app.cpu",
            vec![("content-encoding", "gzip")],
            bomb,
            413,
            "too large",
        ),
        (
            "/ingest?name=app.cpu",
            vec![("content-encoding", "br")],
            b"a 1".to_vec(),
            415,
            "Content-Encoding",
        ),
        (
            "/ingest?name=app",
            vec![("content-type", "multipart/form-data; boundary=x")],
            b"junk".to_vec(),
            422,
            "multipart",
        ),
    ];
    for (path, headers, body, status, msg) in bad {
        let (got, text) = r.post(path, &headers, body).await;
        assert_eq!(got, status, "{path}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("json");
        assert!(
            v["message"].as_str().unwrap_or("").contains(msg),
            "{path}: {text}"
        );
        assert!(v["code"].is_string());
    }
    assert!(r.collect.take().is_empty());
    let resp = r
        .client
        .get(r.url("/ingest?name=app"))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 405);
    let (status, _) = r.post("/pyroscope/ingest?name=app.cpu", &[], "a 1").await;
    assert_eq!(status, 404);

    let info = r.component.debug_info().expect("info");
    assert_eq!(info["profiles_forwarded"], 4);
    assert_eq!(info["requests_rejected"], 10);
    r.stop().await;
}

#[tokio::test]
async fn garbage_never_panics() {
    let r = Running::start(local(0), 1 << 20).await;
    // Deterministic pseudo-random bodies against every route and format.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let paths = [
        "/ingest?name=a&format=pprof",
        "/ingest?name=a.cpu",
        "/ingest?name=a.cpu&format=lines",
        "/ingest?name=a",
    ];
    for i in 0..40 {
        let len = (next() % 2000) as usize;
        let mut body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if i % 4 == 0 {
            body = crate::pprof::gzip(&body, 1);
        }
        for path in paths {
            let ct = if i % 3 == 0 {
                "multipart/form-data; boundary=x"
            } else {
                "binary/octet-stream"
            };
            let (status, _) = r.post(path, &[("content-type", ct)], body.clone()).await;
            assert!(
                status == 200 || (400..500).contains(&status),
                "{path}: {status}"
            );
        }
        for ct in ["application/proto", "application/json"] {
            let (status, _) = r
                .post(PUSH_PATH, &[("content-type", ct)], body.clone())
                .await;
            assert!(
                status == 200 || (400..500).contains(&status),
                "{ct}: {status}"
            );
        }
    }
    // Still serving.
    let (status, _) = r.post("/ingest?name=a.cpu", &[], "main 1").await;
    assert_eq!(status, 200);
    r.stop().await;
}

#[tokio::test]
async fn connection_limit_and_updates() {
    let r = Running::start(
        HttpConfig {
            conn_limit: 1,
            ..local(0)
        },
        1 << 20,
    )
    .await;
    let addr = r.component.local_addr().expect("addr");
    // One idle connection holds the only slot: a second client waits until it closes.
    let held = tokio::net::TcpStream::connect(addr).await.expect("connect");
    tokio::time::sleep(Duration::from_millis(100)).await;
    let client = r.client.clone();
    let url = r.url("/ingest?name=a.cpu");
    let waiting = tokio::spawn(async move {
        client
            .post(url)
            .body("main 1")
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !waiting.is_finished(),
        "the second connection was served despite conn_limit = 1"
    );
    drop(held);
    let status = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("served after the slot freed")
        .expect("join")
        .expect("send");
    assert_eq!(status, 200);

    // Same address, other settings: the socket is kept.
    let collect = r.collect.clone();
    r.component
        .update(args(
            &collect,
            HttpConfig {
                conn_limit: 0,
                ..local(addr.port())
            },
            1 << 20,
        ))
        .expect("update");
    assert_eq!(r.component.local_addr(), Some(addr));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = r.post("/ingest?name=a.cpu", &[], "main 1").await;
    assert_eq!(status, 200);
    // New port: a new socket.
    r.component
        .update(args(&collect, local(0), 16))
        .expect("update");
    let new = r.component.local_addr().expect("addr");
    assert_ne!(new.port(), addr.port());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _) = r
        .post(
            "/ingest?name=a.cpu",
            &[],
            "main 1 and more than sixteen bytes",
        )
        .await;
    assert_eq!(status, 413, "the new body_size_limit applies");
    // A port in use: the update fails and the old server keeps running.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    assert!(
        r.component
            .update(args(&collect, local(port), 1 << 20))
            .is_err()
    );
    assert_eq!(r.component.local_addr(), Some(new));
    r.stop().await;
}

#[tokio::test]
async fn idle_connections_are_closed() {
    use tokio::io::AsyncReadExt as _;
    let r = Running::start(
        HttpConfig {
            idle_timeout: Duration::from_millis(200),
            ..local(0)
        },
        1 << 20,
    )
    .await;
    let mut conn = tokio::net::TcpStream::connect(r.component.local_addr().expect("addr"))
        .await
        .expect("connect");
    let mut buf = [0u8; 16];
    let n = tokio::time::timeout(Duration::from_secs(5), conn.read(&mut buf))
        .await
        .expect("closed by the server");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    r.stop().await;
}

#[test]
fn a_busy_port_fails_the_build() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").port();
    let collect = Arc::new(Collect::default());
    let opts = ComponentOptions::standalone(
        "r",
        "pyroscope.receive_http",
        ReceiveHttp::initial_exports(),
    );
    let err = ReceiveHttp::build(opts, args(&collect, local(port), 1 << 20))
        .err()
        .expect("fails");
    assert!(err.to_string().contains("failed to create server"), "{err}");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

    /// Every parser of client input returns, whatever the bytes.
    #[test]
    fn parsers_never_panic(data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&data);
        let _ = labelset::parse(&text);
        let _ = labelset::parse_time(&text, 0);
        let _ = crate::gocompat::url::query_get(&text, "name");
        let _ = ingest::parse_params(&text, 0);
        let _ = multipart::parse_media_type(&text);
        let _ = multipart::parse(&data, "x");
        let _ = multipart::parse(&data, "--");
        let _ = folded::parse_groups(&data);
        let _ = folded::parse_lines(&data);
        let _ = push::decode(Bytes::copy_from_slice(&data), push::Codec::Proto);
        let _ = push::decode(Bytes::copy_from_slice(&data), push::Codec::Json);
        let req = ingest::IngestRequest {
            query: "name=a&format=pprof",
            content_type: "",
            body: Bytes::copy_from_slice(&data),
            now_nanos: 0,
        };
        let _ = ingest::ingest(&req, &crate::pprof::Limits::default());
        let mut form = b"--x\r\nContent-Disposition: form-data; name=\"profile\"\r\n\r\n".to_vec();
        form.extend_from_slice(&data);
        form.extend_from_slice(b"\r\n--x--");
        let req = ingest::IngestRequest {
            query: "name=a",
            content_type: "multipart/form-data; boundary=x",
            body: Bytes::from(form),
            now_nanos: 0,
        };
        let _ = ingest::ingest(&req, &crate::pprof::Limits::default());
    }
}
