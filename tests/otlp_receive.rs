//! `otelcol.receiver.otlp` end to end: export requests built by OpenTelemetry's own Python
//! messages (PyPI opentelemetry-proto 1.45.2, pinned by `tests/otlp/install.sh`, script
//! `tests/otlp/build_request.py`) are sent to the real `scraper run` over OTLP/gRPC (a gRPC
//! client here: HTTP/2 with prior knowledge, the length-prefixed message, `grpc-status` read
//! from the trailers) and over OTLP/HTTP, and forwarded to `pyroscope.store`. What the store
//! holds must equal the pprof the description stands for, by stacks and values (CPU sample
//! counts times the period, as Pyroscope's ingestion makes them), under the labels Pyroscope
//! would give the series. Bad requests are refused with the statuses OTLP clients act on.
//!
//! Without the decoder venv the test prints why and passes, unless
//! `SCRAPER_REQUIRE_OTLP_DECODER=1` (set by .ci/run) makes that a failure.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use http_body_util::BodyExt as _;
use scrape_support::{Scraper, free_port};
use serde_json::{Value, json};

const EXPORT: &str = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export";
const PERIOD: i64 = 20_000_000;

fn decoder_python() -> Option<PathBuf> {
    support::tools::venv_python(
        "otlp-decoder",
        "opentelemetry.proto.profiles.v1development",
        "SCRAPER_REQUIRE_OTLP_DECODER",
        "tests/otlp/install.sh",
    )
}

/// Runs `build_request.py` on `desc`, returning the request's bytes.
fn build_request(python: &Path, desc: &Value) -> Vec<u8> {
    let dir = tempfile::tempdir().expect("tempdir");
    let (input, output) = (dir.path().join("desc.json"), dir.path().join("req.pb"));
    std::fs::write(&input, desc.to_string()).expect("write description");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/otlp/build_request.py");
    let out = Command::new(python)
        .arg(&script)
        .arg(&input)
        .arg(&output)
        .output()
        .expect("run build_request.py");
    assert!(
        out.status.success(),
        "build_request.py failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::read(&output).expect("request bytes")
}

fn now_nanos() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64
}

/// A CPU profile as the OpenTelemetry eBPF profiler sends it: sample counts with a CPU period.
/// `split` sets a sample-level `service.name` on the last sample.
fn cpu_profile(service: &str, base: i64, split: Option<&str>) -> Value {
    let f = |name: &str, line: i64| json!([name, format!("{name}.go"), line]);
    let mut samples = vec![
        json!({"stack": [f("leaf", 3), f("work", 10), f("main", 1)], "value": base,
               "attributes": {"thread.name": "worker"}}),
        json!({"stack": [f("work", 10), f("main", 1)], "value": base + 1}),
        json!({"stack": [f("other", 7), f("main", 1)], "value": base + 2}),
    ];
    if let Some(svc) = split {
        samples.push(
            json!({"stack": [f("split", 5), f("main", 1)], "value": base + 3,
                            "attributes": {"service.name": svc}}),
        );
    }
    json!({
        "resource": {"service.name": service, "host.name": "otel-host"},
        "scope": "go.opentelemetry.io/ebpf-profiler",
        "sample_type": ["samples", "count"],
        "period_type": ["cpu", "nanoseconds"],
        "period": PERIOD,
        "time_unix_nano": now_nanos(),
        "duration_nano": 5_000_000_000i64,
        "samples": samples,
    })
}

/// What the store must hold for `service`: (leaf-first function names) -> nanoseconds.
fn expected(desc: &Value, service: &str) -> BTreeMap<Vec<String>, i64> {
    let mut out = BTreeMap::new();
    for p in desc["profiles"].as_array().expect("profiles") {
        for s in p["samples"].as_array().expect("samples") {
            let svc = s["attributes"]["service.name"]
                .as_str()
                .or(p["resource"]["service.name"].as_str())
                .expect("service");
            if svc != service {
                continue;
            }
            let stack: Vec<String> = s["stack"]
                .as_array()
                .expect("stack")
                .iter()
                .map(|f| f[0].as_str().expect("name").to_owned())
                .collect();
            *out.entry(stack).or_insert(0) += s["value"].as_i64().expect("value") * PERIOD;
        }
    }
    out
}

/// The store's merged `process_cpu` profile for `service`, as stack -> value, and its series.
/// Leaf-first function names -> value.
type Stacks = BTreeMap<Vec<String>, i64>;

fn stored(store: &Path, service: &str) -> (Stacks, Vec<Vec<(String, String)>>) {
    use scraper::query::source::{ProfileSource as _, ProfileType, Query};
    let source = scraper::query::local::LocalSource::open(store).expect("open store");
    let now = SystemTime::now();
    let selector = format!("{{service_name=\"{service}\"}}");
    let q = Query {
        selector: scraper::query::selector::Selector::parse(&selector).expect("selector"),
        profile_type: ProfileType::parse("process_cpu").expect("type"),
        from: now - Duration::from_secs(3600),
        to: now + Duration::from_secs(60),
        exclude_straddling: false,
    };
    let series = source
        .series(&q.selector, q.from, q.to)
        .expect("series")
        .into_iter()
        .collect();
    let Some(merged) = source.select_merge(&q, &mut |_, _| {}).expect("query") else {
        return (BTreeMap::new(), series);
    };
    let p = merged.profile;
    let name = |id: u64| {
        let f = p.function.iter().find(|f| f.id == id).expect("function");
        p.string_table[f.name as usize].clone()
    };
    let mut out = BTreeMap::new();
    for s in &p.sample {
        let stack: Vec<String> = s
            .location_id
            .iter()
            .map(|id| {
                let l = p.location.iter().find(|l| l.id == *id).expect("location");
                name(l.line[0].function_id)
            })
            .collect();
        *out.entry(stack).or_insert(0) += s.value[0];
    }
    (out, series)
}

fn frame(message: &[u8], compressed: bool) -> Vec<u8> {
    let mut out = vec![u8::from(compressed)];
    out.extend_from_slice(&(message.len() as u32).to_be_bytes());
    out.extend_from_slice(message);
    out
}

/// One unary gRPC call: (grpc-status, grpc-message), from the trailers or a trailers-only
/// answer.
async fn grpc_call(addr: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> (String, String) {
    let h = grpc_answer(addr, body, headers).await;
    let get = |name: &str| {
        h.get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    (get("grpc-status"), get("grpc-message"))
}

/// One unary gRPC call: the answer's headers and trailers in one map.
async fn grpc_answer(addr: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> http::HeaderMap {
    let client = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let mut req = client
        .post(format!("http://{addr}{EXPORT}"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("gRPC call");
    assert_eq!(resp.status().as_u16(), 200, "gRPC answers are HTTP 200");
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    let resp: http::Response<reqwest::Body> = resp.into();
    let headers = resp.headers().clone();
    let collected = resp.into_body().collect().await.expect("body");
    let mut all = headers;
    all.extend(collected.trailers().cloned().unwrap_or_default());
    all
}

async fn http_post(url: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> u16 {
    http_answer(url, body, headers).await.status().as_u16()
}

async fn http_answer(url: &str, body: Vec<u8>, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = reqwest::Client::new().post(url).body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    req.send().await.expect("post")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_built_requests_reach_the_store_over_grpc_and_http() {
    let Some(python) = decoder_python() else {
        return;
    };
    let over_grpc = json!({"profiles": [
        cpu_profile("otel-grpc", 3, Some("otel-split")),
    ]});
    let over_http = json!({"profiles": [cpu_profile("otel-http", 5, None)]});
    let grpc_req = build_request(&python, &over_grpc);
    let http_req = build_request(&python, &over_http);

    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let (grpc_port, http_port) = (free_port(), free_port());
    let scraper = Scraper::start(|_| {
        format!(
            r#"
otelcol.receiver.otlp "in" {{
  grpc {{
    endpoint = "127.0.0.1:{grpc_port}"
  }}
  http {{
    endpoint = "127.0.0.1:{http_port}"
    max_request_body_size = "1MiB"
  }}
  output {{
    profiles = [pyroscope.store.local.receiver]
    traces   = []
  }}
}}

pyroscope.store "local" {{
  path = "{}"
}}
"#,
            store.display()
        )
    })
    .await;
    let grpc_addr = format!("127.0.0.1:{grpc_port}");
    let http_url = format!("http://127.0.0.1:{http_port}/v1development/profiles");

    // gRPC, the message gzip-compressed as grpc-go's gzip compressor sends it.
    let gz = scraper::pprof::gzip(&grpc_req, 6);
    let (status, message) =
        grpc_call(&grpc_addr, frame(&gz, true), &[("grpc-encoding", "gzip")]).await;
    assert_eq!(
        (status.as_str(), message.as_str()),
        ("0", ""),
        "{}",
        scraper.logs()
    );
    // HTTP, protobuf with a gzip Content-Encoding.
    let status = http_post(
        &http_url,
        scraper::pprof::gzip(&http_req, 6),
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{}", scraper.logs());

    // Three series: the gRPC profile split by its sample-level service.name, and the HTTP one.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let info = scraper.component("pyroscope.store.local").await;
        if info["debugInfo"]["written_total"].as_u64().unwrap_or(0) >= 3 {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "store: {info}\n{}",
            scraper.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let info = scraper.component("otelcol.receiver.otlp.in").await;
    assert_eq!(info["debugInfo"]["profiles_forwarded"], 3, "{info}");
    assert_eq!(info["health"]["state"], "healthy", "{info}");

    // Refusals a client acts on.
    let (status, message) = grpc_call(&grpc_addr, frame(b"\xff\xff", false), &[]).await;
    assert_eq!(status, "3", "INVALID_ARGUMENT: {message}");
    assert!(message.contains("protobuf"), "{message}");
    let answer = grpc_answer(
        &grpc_addr,
        frame(&grpc_req, true),
        &[("grpc-encoding", "snappy")],
    )
    .await;
    assert_eq!(answer["grpc-status"], "12", "UNIMPLEMENTED");
    assert_eq!(answer["grpc-accept-encoding"], "gzip", "what we decode");
    // Flagged compressed but not gzip: refused, not read as it is.
    let (status, message) = grpc_call(
        &grpc_addr,
        frame(&grpc_req, true),
        &[("grpc-encoding", "gzip")],
    )
    .await;
    assert_eq!(status, "3", "INVALID_ARGUMENT: {message}");
    assert!(message.contains("not gzip"), "{message}");
    // Not gRPC at all: plain HTTP answers (gRPC over HTTP/2's rules).
    let h2 = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .expect("client");
    let resp = h2
        .post(format!("http://{grpc_addr}{EXPORT}"))
        .header("content-type", "application/grpc+json")
        .body(frame(&grpc_req, false))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 415);
    let resp = reqwest::Client::new()
        .post(format!("http://{grpc_addr}{EXPORT}"))
        .header("content-type", "application/grpc")
        .body(frame(&grpc_req, false))
        .send()
        .await
        .expect("post");
    assert_eq!(resp.status().as_u16(), 505, "HTTP/1.1 is not gRPC");
    let big = vec![0u8; 2 << 20];
    let ct = [("content-type", "application/x-protobuf")];
    assert_eq!(http_post(&http_url, big, &ct).await, 413);
    assert_eq!(
        http_post(
            &http_url,
            http_req.clone(),
            &[("content-type", "text/plain")]
        )
        .await,
        415
    );
    assert_eq!(http_post(&http_url, b"\x0a\xff".to_vec(), &ct).await, 400);
    let info = scraper.component("otelcol.receiver.otlp.in").await;
    assert_eq!(info["health"]["state"], "unhealthy", "{info}");
    assert_eq!(info["debugInfo"]["requests_rejected"], 8, "{info}");
    let metrics = scraper.metrics().await;
    assert!(
        metrics.contains("otelcol_receiver_otlp_requests_total{component_id=\"otelcol.receiver.otlp.in\",component_path=\"/\",transport=\"grpc\",status=\"INVALID_ARGUMENT\"} 2"),
        "{metrics}"
    );
    assert!(
        scraper.logs().contains("output > traces"),
        "ignored outputs are warned about"
    );

    drop(scraper);
    for (desc, service) in [
        (&over_grpc, "otel-grpc"),
        (&over_grpc, "otel-split"),
        (&over_http, "otel-http"),
    ] {
        let want = expected(desc, service);
        let (got, series) = stored(&store, service);
        assert!(!want.is_empty());
        assert_eq!(got, want, "{service}: stacks and values");
        assert_eq!(series.len(), 1, "{service}: {series:?}");
        let labels: BTreeMap<_, _> = series[0].iter().cloned().collect();
        assert_eq!(
            labels.get("__name__").map(String::as_str),
            Some("process_cpu")
        );
        assert_eq!(labels.get("__delta__").map(String::as_str), Some("false"));
        assert_eq!(
            labels.get("host.name").map(String::as_str),
            Some("otel-host")
        );
        assert_eq!(
            labels.get("service_name").map(String::as_str),
            Some(service)
        );
        eprintln!("{service}: {} stacks equal, labels {labels:?}", got.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_memory_budget_requests_are_refused_as_retryable() {
    let (grpc_port, http_port) = (free_port(), free_port());
    let scraper = Scraper::start_with_env(
        |_| {
            format!(
                r#"
otelcol.receiver.otlp "in" {{
  grpc {{
    endpoint         = "127.0.0.1:{grpc_port}"
    max_recv_msg_size = "32MiB"
  }}
  http {{
    endpoint = "127.0.0.1:{http_port}"
  }}
  output {{
    profiles = [pyroscope.debug.out.receiver]
  }}
}}

pyroscope.debug "out" {{ }}
"#
            )
        },
        &[("SCRAPER_MEMORY_LIMIT", "64MiB")],
    )
    .await;
    // 10 MiB uncompressed takes ~80 MiB to convert: more than the whole budget.
    let zeros = scraper::pprof::gzip(&vec![0u8; 10 << 20], 9);
    let resp = http_answer(
        &format!("http://127.0.0.1:{http_port}/v1development/profiles"),
        zeros.clone(),
        &[
            ("content-type", "application/x-protobuf"),
            ("content-encoding", "gzip"),
        ],
    )
    .await;
    assert_eq!(resp.status().as_u16(), 429, "{}", scraper.logs());
    assert_eq!(resp.headers()["retry-after"], "1", "when to retry");
    let answer = grpc_answer(
        &format!("127.0.0.1:{grpc_port}"),
        frame(&zeros, true),
        &[("grpc-encoding", "gzip")],
    )
    .await;
    let message = answer["grpc-message"].to_str().expect("text");
    assert_eq!(answer["grpc-status"], "8", "RESOURCE_EXHAUSTED: {message}");
    assert!(message.contains("memory budget"), "{message}");
    // With a RetryInfo, without which OTLP exporters do not retry RESOURCE_EXHAUSTED.
    let details = answer["grpc-status-details-bin"].to_str().expect("base64");
    assert_eq!(
        scraper::protocols::otlp::grpc::retry_delay(details),
        Some(Duration::from_secs(1)),
        "{details}"
    );
    let metrics = scraper.metrics().await;
    assert!(
        metrics.contains("transport=\"http\",status=\"429\"} 1"),
        "{metrics}"
    );
    assert!(
        scraper
            .logs()
            .contains("OTLP requests refused: the memory budget is full"),
        "{}",
        scraper.logs()
    );
}

/// The receiver's config with an HTTP server on `http_port` (and gRPC on `grpc_port`).
fn reload_config(http_port: u16, grpc_port: Option<u16>) -> String {
    let grpc = grpc_port.map_or(String::new(), |p| {
        format!("  grpc {{\n    endpoint = \"127.0.0.1:{p}\"\n  }}\n")
    });
    format!(
        "otelcol.receiver.otlp \"in\" {{\n{grpc}  http {{\n    endpoint = \"127.0.0.1:{http_port}\"\n  }}\n  output {{\n    profiles = [pyroscope.debug.out.receiver]\n  }}\n}}\n\npyroscope.debug \"out\" {{ }}\n"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_moves_the_servers_and_a_port_in_use_keeps_the_old_ones() {
    let (a, b, grpc) = (free_port(), free_port(), free_port());
    let scraper = Scraper::start(|_| reload_config(a, None)).await;
    // An export request with an empty dictionary: valid, no profiles.
    let empty = vec![0x12, 0x00];
    let ct = [("content-type", "application/x-protobuf")];
    let url = |port: u16| format!("http://127.0.0.1:{port}/v1development/profiles");
    assert_eq!(http_post(&url(a), empty.clone(), &ct).await, 200);
    let client = reqwest::Client::new();
    let reload = || async {
        client
            .post(format!("http://{}/-/reload", scraper.addr))
            .send()
            .await
            .expect("reload")
            .status()
            .as_u16()
    };

    std::fs::write(&scraper.config, reload_config(b, Some(grpc))).expect("write config");
    assert_eq!(reload().await, 200, "{}", scraper.logs());
    let moved = scrape_support::eventually(Duration::from_secs(10), || {
        let (url, empty) = (url(b), empty.clone());
        async move {
            reqwest::Client::new()
                .post(url)
                .header("content-type", "application/x-protobuf")
                .body(empty)
                .send()
                .await
                .is_ok_and(|r| r.status().as_u16() == 200)
        }
    })
    .await;
    assert!(moved, "{}", scraper.logs());
    let (status, _) = grpc_call(&format!("127.0.0.1:{grpc}"), frame(&empty, false), &[]).await;
    assert_eq!(status, "0");
    let old = reqwest::Client::new()
        .post(url(a))
        .header("content-type", "application/x-protobuf")
        .body(empty.clone())
        .send()
        .await;
    assert!(old.is_err(), "the old port is closed: {old:?}");

    // A port in use: the reload fails and the running servers stay.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let c = taken.local_addr().expect("addr").port();
    std::fs::write(&scraper.config, reload_config(c, Some(grpc))).expect("write config");
    reload().await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(http_post(&url(b), empty.clone(), &ct).await, 200);
    let info = scraper.component("otelcol.receiver.otlp.in").await;
    assert!(
        info.to_string().contains("listen on 127.0.0.1:"),
        "the failed update is reported: {info}"
    );
}

/// A request whose dictionary shares one long stack among many samples: small on the wire,
/// terabytes once every pprof sample holds its own copy of the stack.
fn expanding_request(frames: usize, samples: usize, values: &[i64]) -> Vec<u8> {
    use prost::Message as _;
    use scraper::protocols::otlp::proto::collector::profiles::v1development::ExportProfilesServiceRequest;
    use scraper::protocols::otlp::proto::profiles::v1development as otlp;
    let dictionary = otlp::ProfilesDictionary {
        string_table: vec!["".into(), "alloc_space".into(), "bytes".into(), "f".into()],
        function_table: vec![
            otlp::Function::default(),
            otlp::Function {
                name_strindex: 3,
                ..otlp::Function::default()
            },
        ],
        location_table: vec![
            otlp::Location::default(),
            otlp::Location {
                lines: vec![otlp::Line {
                    function_index: 1,
                    ..otlp::Line::default()
                }],
                ..otlp::Location::default()
            },
        ],
        stack_table: vec![
            otlp::Stack::default(),
            otlp::Stack {
                location_indices: vec![1; frames],
            },
        ],
        attribute_table: vec![otlp::KeyValueAndUnit::default()],
        ..otlp::ProfilesDictionary::default()
    };
    let sample = otlp::Sample {
        stack_index: 1,
        values: values.to_vec(),
        ..otlp::Sample::default()
    };
    ExportProfilesServiceRequest {
        resource_profiles: vec![otlp::ResourceProfiles {
            scope_profiles: vec![otlp::ScopeProfiles {
                profiles: vec![otlp::Profile {
                    sample_type: Some(otlp::ValueType {
                        type_strindex: 1,
                        unit_strindex: 2,
                    }),
                    samples: vec![sample; samples],
                    ..otlp::Profile::default()
                }],
                ..otlp::ScopeProfiles::default()
            }],
            ..otlp::ResourceProfiles::default()
        }],
        dictionary: Some(dictionary),
    }
    .encode_to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_expanding_past_the_limit_or_overflowing_are_refused_for_good() {
    // 20k frames shared by 50k samples: ~300 KB on the wire, ~16 GB as pprof samples.
    let huge = expanding_request(20_000, 50_000, &[1]);
    assert!(huge.len() < 1 << 20, "{}", huge.len());
    let overflow = expanding_request(2, 1, &[i64::MAX, 1]);
    let (grpc_port, http_port) = (free_port(), free_port());
    let scraper = Scraper::start(|_| {
        format!(
            r#"
otelcol.receiver.otlp "in" {{
  grpc {{
    endpoint = "127.0.0.1:{grpc_port}"
  }}
  http {{
    endpoint = "127.0.0.1:{http_port}"
  }}
  output {{
    profiles = [pyroscope.debug.out.receiver]
  }}
}}

pyroscope.debug "out" {{ }}
"#
        )
    })
    .await;
    let grpc_addr = format!("127.0.0.1:{grpc_port}");
    let answer = grpc_answer(&grpc_addr, frame(&huge, false), &[]).await;
    let message = answer["grpc-message"].to_str().expect("text");
    assert_eq!(answer["grpc-status"], "8", "RESOURCE_EXHAUSTED: {message}");
    assert!(message.contains("expand to"), "{message}");
    assert!(
        answer.get("grpc-status-details-bin").is_none(),
        "no RetryInfo: a retry would be refused again"
    );
    let url = format!("http://127.0.0.1:{http_port}/v1development/profiles");
    let ct = [("content-type", "application/x-protobuf")];
    assert_eq!(http_post(&url, huge, &ct).await, 413, "{}", scraper.logs());
    let (status, message) = grpc_call(&grpc_addr, frame(&overflow, false), &[]).await;
    assert_eq!(status, "3", "INVALID_ARGUMENT: {message}");
    assert!(message.contains("overflow"), "{message}");
    assert_eq!(http_post(&url, overflow, &ct).await, 400);
    let info = scraper.component("otelcol.receiver.otlp.in").await;
    assert_eq!(info["debugInfo"]["requests_rejected"], 4, "{info}");
}
