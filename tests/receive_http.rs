//! `pyroscope.receive_http` end to end: the real `scraper run` binary with
//! `pyroscope.receive_http` -> `pyroscope.write` -> the recording Pyroscope receiver, and ->
//! `pyroscope.store`. Clients: our own HTTP client (Push in proto and JSON, gzip; `/ingest`
//! with raw pprof, pyroscope-go's multipart form and folded text; error statuses), and the real
//! Python Pyroscope SDK from PyPI in its two wire dialects: pyroscope-io 0.8.16 uploads to the
//! legacy `/ingest` (gzipped pprof, tags as pprof sample labels), 1.4.0 pushes to the Push API
//! (tags as series labels).
//!
//! The SDKs are installed by `tests/sdk/install.sh` (pinned, hash-checked) into `.tools/`.
//! Without them the SDK tests print why and pass, unless `SCRAPER_REQUIRE_SDK=1`, which makes
//! a missing SDK a failure.

mod scrape_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use prost::Message as _;
use scrape_support::{Scraper, eventually, free_port, metric};
use scraper::pprof::proto::Profile as Pprof;
use scraper::protocols::pyroscope::proto::push::v1::{PushRequest, RawProfileSeries, RawSample};
use scraper::protocols::pyroscope::proto::types::v1::LabelPair;
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

fn config(port: u16, rx: &str, store: &Path) -> String {
    format!(
        r#"
pyroscope.receive_http "sdk" {{
  http {{
    listen_address = "127.0.0.1"
    listen_port    = {port}
  }}
  forward_to = [pyroscope.write.rx.receiver, pyroscope.store.local.receiver]
}}

pyroscope.write "rx" {{
  endpoint {{
    url = "{rx}"
  }}
}}

pyroscope.store "local" {{
  path = "{store}"
}}
"#,
        store = store.display()
    )
}

/// The scraper with its receiver, store and the address `pyroscope.receive_http` listens on.
struct Setup {
    rx: PyroscopeReceiver,
    scraper: Scraper,
    base: String,
    store: PathBuf,
    _dir: tempfile::TempDir,
}

async fn setup() -> Setup {
    setup_with_env(&[]).await
}

async fn setup_with_env(env: &[(&str, &str)]) -> Setup {
    let rx = PyroscopeReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let port = free_port();
    let scraper = Scraper::start_with_env(|_| config(port, &rx.url(), &store), env).await;
    let base = format!("http://127.0.0.1:{port}");
    let up = eventually(Duration::from_secs(10), || {
        let url = format!("{base}/ingest");
        async move { reqwest::get(url).await.is_ok() }
    })
    .await;
    assert!(up, "receive_http is not listening:\n{}", scraper.logs());
    Setup {
        rx,
        scraper,
        base,
        store,
        _dir: dir,
    }
}

fn cpu_pprof(function: &str, labels: &[(&str, &str)]) -> Vec<u8> {
    use scraper::pprof::proto::{Function, Label, Line, Location, Sample, ValueType};
    let mut strings: Vec<String> = ["", "cpu", "nanoseconds", function, "main.go"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut label = Vec::new();
    for (k, v) in labels {
        strings.push(k.to_string());
        strings.push(v.to_string());
        label.push(Label {
            key: strings.len() as i64 - 2,
            str: strings.len() as i64 - 1,
            ..Default::default()
        });
    }
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64;
    let p = Pprof {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        period_type: Some(ValueType { r#type: 1, unit: 2 }),
        period: 10_000_000,
        time_nanos: now,
        duration_nanos: 10_000_000_000,
        function: vec![Function {
            id: 1,
            name: 3,
            system_name: 3,
            filename: 4,
            start_line: 0,
        }],
        location: vec![Location {
            id: 1,
            line: vec![Line {
                function_id: 1,
                line: 7,
                column: 0,
            }],
            ..Default::default()
        }],
        sample: vec![Sample {
            location_id: vec![1],
            value: vec![50_000_000],
            label,
        }],
        string_table: strings,
        ..Default::default()
    };
    scraper::pprof::encode(&p, 1)
}

fn decode(raw: &[u8]) -> Pprof {
    let plain = scraper::pprof::gunzip(raw, &scraper::pprof::Limits::default()).expect("gunzip");
    Pprof::decode(plain.as_slice()).expect("pprof")
}

fn function_names(raw: &[u8]) -> Vec<String> {
    let p = decode(raw);
    p.function
        .iter()
        .map(|f| p.string_table[f.name as usize].clone())
        .collect()
}

fn with_service<'a>(rx: &'a [Received], service: &str) -> Vec<&'a Received> {
    rx.iter()
        .filter(|r| r.label("service_name") == Some(service))
        .collect()
}

async fn post(
    url: String,
    headers: &[(&str, &str)],
    body: impl Into<reqwest::Body>,
) -> (u16, String) {
    let mut req = reqwest::Client::new().post(url).body(body);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let resp = req.send().await.expect("send");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

fn multipart(profile: &[u8]) -> Vec<u8> {
    let mut b = b"--BOUNDARY\r\nContent-Disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
    b.extend_from_slice(profile);
    b.extend_from_slice(b"\r\n--BOUNDARY\r\nContent-Disposition: form-data; name=\"sample_type_config\"; filename=\"sample_type_config.json\"\r\nContent-Type: application/octet-stream\r\n\r\n");
    b.extend_from_slice(br#"{"cpu":{"units":"samples","display-name":"cpu","sampled":true}}"#);
    b.extend_from_slice(b"\r\n--BOUNDARY--\r\n");
    b
}

/// Waits until the store has committed `n` profiles (from its debug info).
async fn store_written(s: &Scraper, n: u64) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while std::time::Instant::now() < deadline {
        let info = s.component("pyroscope.store.local").await;
        if info["debugInfo"]["written_total"].as_u64().unwrap_or(0) >= n {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    false
}

/// How many profiles of `service` (and `extra` matchers) the store holds for the last hour.
fn stored(store: &Path, selector: &str) -> usize {
    use scraper::query::source::{ProfileSource as _, ProfileType, Query};
    let source = scraper::query::local::LocalSource::open(store).expect("open store");
    let now = SystemTime::now();
    let q = Query {
        selector: scraper::query::selector::Selector::parse(selector).expect("selector"),
        profile_type: ProfileType::parse("process_cpu").expect("type"),
        from: now - Duration::from_secs(3600),
        to: now + Duration::from_secs(60),
        exclude_straddling: false,
    };
    source
        .select_merge(&q, &mut |_, _| {})
        .expect("query")
        .map_or(0, |m| m.profiles)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn our_client_push_and_ingest() {
    let s = setup().await;
    let base = &s.base;

    // Push, binary protobuf: two samples of one series.
    let push = PushRequest {
        series: vec![RawProfileSeries {
            labels: [
                ("__name__", "process_cpu"),
                ("service_name", "push-app"),
                ("env", "ci"),
            ]
            .iter()
            .map(|(n, v)| LabelPair {
                name: n.to_string(),
                value: v.to_string(),
            })
            .collect(),
            samples: vec![
                RawSample {
                    raw_profile: cpu_pprof("push.one", &[]).into(),
                    id: "a".into(),
                },
                RawSample {
                    raw_profile: cpu_pprof("push.two", &[]).into(),
                    id: "b".into(),
                },
            ],
            annotations: vec![],
        }],
    }
    .encode_to_vec();
    let (status, body) = post(
        format!("{base}/push.v1.PusherService/Push"),
        &[
            ("content-type", "application/proto"),
            ("connect-protocol-version", "1"),
        ],
        push,
    )
    .await;
    assert_eq!((status, body.as_str()), (200, ""));

    // Push, JSON, gzip.
    use base64::Engine as _;
    let json = serde_json::json!({"series": [{
        "labels": [{"name": "__name__", "value": "process_cpu"}, {"name": "service_name", "value": "json-app"}],
        "samples": [{"rawProfile": base64::engine::general_purpose::STANDARD.encode(cpu_pprof("json.fn", &[]))}],
    }]})
    .to_string();
    let (status, body) = post(
        format!("{base}/push.v1.PusherService/Push"),
        &[
            ("content-type", "application/json"),
            ("content-encoding", "gzip"),
        ],
        scraper::pprof::gzip(json.as_bytes(), 1),
    )
    .await;
    assert_eq!((status, body.as_str()), (200, "{}"));

    // /ingest: raw pprof with a tag as sample label, multipart form, folded text.
    let (status, _) = post(
        format!("{base}/ingest?name=ingest-app%7Benv%3Dci%7D&format=pprof&spyName=gospy&from=1700000000&until=1700000010"),
        &[("content-type", "binary/octet-stream")],
        cpu_pprof("ingest.fn", &[("region", "eu")]),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post(
        format!("{base}/ingest?name=form-app{{env=ci}}&spyName=gospy&sampleRate=100"),
        &[("content-type", "multipart/form-data; boundary=BOUNDARY")],
        multipart(&cpu_pprof("form.fn", &[])),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = post(
        format!("{base}/ingest?name=folded-app.cpu{{env=ci}}&sampleRate=100&spyName=rbspy"),
        &[("content-type", "binary/octet-stream")],
        "main;folded.work 7\nmain;folded.idle 3\n",
    )
    .await;
    assert_eq!(status, 200);

    // Refusals: nothing forwarded. The oversized body is a gzip bomb: 65 MiB of zeros, over
    // the default body_size_limit once decompressed.
    let bomb = scraper::pprof::gzip(&vec![0u8; 65 << 20], 9);
    for (path, headers, body, want) in [
        ("/ingest", vec![], b"a 1".to_vec(), 400),
        ("/ingest?name=app&format=jfr", vec![], b"x".to_vec(), 415),
        (
            "/ingest?name=app&format=pprof",
            vec![],
            b"not pprof".to_vec(),
            422,
        ),
        (
            "/ingest?name=app.cpu",
            vec![("content-encoding", "gzip")],
            bomb,
            413,
        ),
        (
            "/push.v1.PusherService/Push",
            vec![("content-type", "text/plain")],
            b"x".to_vec(),
            415,
        ),
        (
            "/push.v1.PusherService/Push",
            vec![("content-type", "application/proto")],
            b"\xff\xff".to_vec(),
            400,
        ),
    ] {
        let (status, text) = post(format!("{base}{path}"), &headers, body).await;
        assert_eq!(status, want, "{path}: {text}");
        let v: serde_json::Value = serde_json::from_str(&text).expect("JSON error body");
        assert!(v["message"].is_string(), "{text}");
    }

    assert!(
        s.rx.wait_for(6, Duration::from_secs(20)).await,
        "received {}:\n{}",
        s.rx.count(),
        s.scraper.logs()
    );
    let rx = s.rx.received();
    assert_eq!(rx.len(), 6, "{rx:#?}");

    let push = with_service(&rx, "push-app");
    assert_eq!(push.len(), 2);
    for r in &push {
        assert_eq!(r.label("__name__"), Some("process_cpu"));
        assert_eq!(r.label("env"), Some("ci"));
    }
    let mut fns: Vec<String> = push.iter().flat_map(|r| function_names(&r.raw)).collect();
    fns.sort();
    assert_eq!(fns, ["push.one", "push.two"]);
    assert_eq!(
        function_names(&with_service(&rx, "json-app")[0].raw),
        ["json.fn"]
    );

    let ingest = with_service(&rx, "ingest-app");
    assert_eq!(ingest.len(), 1);
    let r = ingest[0];
    assert_eq!(r.label("__name__"), Some("process_cpu"));
    assert_eq!(r.label("__delta__"), Some("false"));
    assert_eq!(r.label("pyroscope_spy"), Some("gospy"));
    assert_eq!(r.label("env"), Some("ci"));
    assert_eq!(r.label("region"), Some("eu"), "sample label promoted");
    assert!(decode(&r.raw).sample.iter().all(|s| s.label.is_empty()));

    let form = with_service(&rx, "form-app");
    assert_eq!(form.len(), 1);
    assert_eq!(form[0].label("__name__"), Some("process_cpu"));
    assert_eq!(function_names(&form[0].raw), ["form.fn"]);

    let folded = with_service(&rx, "folded-app");
    assert_eq!(folded.len(), 1);
    assert_eq!(folded[0].label("pyroscope_spy"), Some("rbspy"));
    let p = decode(&folded[0].raw);
    assert_eq!(
        p.sample.iter().map(|s| s.value[0]).sum::<i64>(),
        100_000_000
    );
    assert_eq!(p.string_table[p.sample_type[0].r#type as usize], "cpu");

    // The same six profiles reached the local store.
    assert!(store_written(&s.scraper, 6).await, "{}", s.scraper.logs());
    let info = s.scraper.component("pyroscope.receive_http.sdk").await;
    assert_eq!(info["debugInfo"]["profiles_forwarded"], 6, "{info}");
    assert_eq!(info["debugInfo"]["requests_rejected"], 6, "{info}");
    let metrics = s.scraper.metrics().await;
    assert!(
        metrics.contains("pyroscope_receive_http_profiles_received_total{"),
        "{metrics}"
    );
    let store = s.store.clone();
    drop(s.scraper);
    assert_eq!(stored(&store, r#"{service_name="folded-app"}"#), 1);
    assert_eq!(
        stored(&store, r#"{service_name="ingest-app", region="eu"}"#),
        1
    );
    assert_eq!(stored(&store, r#"{service_name="push-app", env="ci"}"#), 2);
}

// ---------------------------------------------------------------------------------------------
// The real Python SDK
// ---------------------------------------------------------------------------------------------

/// The venv's python for `name` (`pyroscope-sdk`, `pyroscope-sdk-legacy`), or `None` with the
/// reason printed (a failure under `SCRAPER_REQUIRE_SDK=1`).
/// Under `--memory.limit`, a request whose conversion would not fit is refused with 429
/// (`resource_exhausted`: the client keeps its profiles and retries), counted as shed, and
/// the requests that fit still go through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_the_memory_budget_requests_are_refused_with_429_and_counted() {
    let s = setup_with_env(&[("SCRAPER_MEMORY_LIMIT", "64MiB")]).await;
    let base = &s.base;
    // Both need more than 90 % of 64 MiB whatever the process's RSS: a gzip pprof declaring
    // 8 MiB uncompressed (x12 to decode) and a gzip Push body declaring 40 MiB (x2 to unpack).
    let zeros = |n: usize| scraper::pprof::gzip(&vec![0u8; n], 9);
    let (status, body) = post(
        format!("{base}/ingest?name=big-app&format=pprof"),
        &[("content-type", "binary/octet-stream")],
        zeros(8 << 20),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("resource_exhausted"), "{body}");
    assert!(body.contains("memory budget"), "{body}");
    let (status, body) = post(
        format!("{base}/push.v1.PusherService/Push"),
        &[
            ("content-type", "application/proto"),
            ("content-encoding", "gzip"),
        ],
        zeros(40 << 20),
    )
    .await;
    assert_eq!(status, 429, "{body}");
    assert!(body.contains("resource_exhausted"), "{body}");

    // A small profile needs far less than the tenth of the budget that is always left.
    let (status, body) = post(
        format!("{base}/ingest?name=small-app&format=pprof"),
        &[("content-type", "binary/octet-stream")],
        cpu_pprof("small.fn", &[]),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let arrived = eventually(Duration::from_secs(10), || async {
        !with_service(&s.rx.received(), "small-app").is_empty()
    })
    .await;
    assert!(
        arrived,
        "the small profile was not forwarded:\n{}",
        s.scraper.logs()
    );
    assert!(with_service(&s.rx.received(), "big-app").is_empty());
    // One warning when refusing starts, one line when it ends.
    let logs = s.scraper.logs();
    let count = |line: &str| logs.matches(line).count();
    assert_eq!(
        (
            count("requests refused with 429: the memory budget is full"),
            count("requests accepted again: the memory budget has room"),
        ),
        (1, 1),
        "{logs}"
    );

    let m = s.scraper.metrics().await;
    let shed = metric(
        &m,
        "scraper_memory_shed_total",
        &[("use", "receive"), ("priority", "normal")],
    );
    assert_eq!(shed, Some(2.0), "{m}");
    let refused = |route| {
        metric(
            &m,
            "pyroscope_receive_http_requests_total",
            &[("route", route), ("status_code", "429")],
        )
    };
    assert_eq!(
        (refused("ingest"), refused("push")),
        (Some(1.0), Some(1.0)),
        "{m}"
    );
    // Nothing stays reserved once the requests are answered.
    let held = metric(&m, "scraper_memory_accounted_bytes", &[("use", "receive")]);
    assert_eq!(held, Some(0.0), "{m}");
}

fn sdk_python(name: &str) -> Option<PathBuf> {
    support::tools::venv_python(
        name,
        "pyroscope",
        "SCRAPER_REQUIRE_SDK",
        "tests/sdk/install.sh",
    )
}

/// Runs tests/sdk/app.py under `python` against `base` for `seconds` of busy CPU; returns its
/// output.
async fn run_sdk_app(python: &Path, base: &str, app: &str, seconds: u32) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/sdk/app.py");
    // Output goes to a file, so a chatty SDK can never block on a full pipe.
    let log = tempfile::NamedTempFile::new().expect("log file");
    let out = log.reopen().expect("log");
    let err = log.reopen().expect("log");
    let mut child = Command::new(python)
        .arg(&script)
        .args([base, app, &seconds.to_string(), "env=test", "region=eu"])
        .env("SDK_LOG", "1")
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .expect("run the SDK program");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the SDK program did not finish within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let text = String::from_utf8_lossy(&std::fs::read(log.path()).unwrap_or_default()).into_owned();
    assert!(status.success(), "SDK program failed: {text}");
    text
}

/// What every SDK profile must carry, through either API.
fn assert_sdk_profile(r: &Received, spy: Option<&str>) {
    assert_eq!(r.label("service_name"), Some("sdk.app"), "{:?}", r.labels);
    assert_eq!(r.label("env"), Some("test"), "{:?}", r.labels);
    assert_eq!(r.label("region"), Some("eu"), "{:?}", r.labels);
    assert_eq!(r.label("__name__"), Some("process_cpu"), "{:?}", r.labels);
    if let Some(spy) = spy {
        assert_eq!(r.label("pyroscope_spy"), Some(spy), "{:?}", r.labels);
    }
}

async fn sdk_end_to_end(venv: &str, route: &str, spy: Option<&str>) {
    let Some(python) = sdk_python(venv) else {
        return;
    };
    let s = setup().await;
    let out = run_sdk_app(&python, &s.base, "sdk.app", 3).await;
    if !s.rx.wait_for(1, Duration::from_secs(30)).await {
        let info = s.scraper.component("pyroscope.receive_http.sdk").await;
        // py-spy's debug output lists every memory map: not what a reader needs here.
        let out: Vec<&str> = out
            .lines()
            .filter(|l| !l.contains("python_process_info"))
            .collect();
        panic!(
            "no profile from the SDK ({}); receive_http: {}\n{}",
            out.join("\n"),
            info["debugInfo"],
            s.scraper.logs()
        );
    }
    let rx = s.rx.received();
    for r in &rx {
        assert_sdk_profile(r, spy);
    }
    let busy = rx.iter().any(|r| {
        function_names(&r.raw)
            .iter()
            .any(|f| f.contains("busy_work"))
    });
    assert!(busy, "no busy_work frame in {} profiles", rx.len());
    // They came in through the route this SDK version uses.
    let metrics = s.scraper.metrics().await;
    let via = scrape_support::metric(
        &metrics,
        "pyroscope_receive_http_profiles_received_total",
        &[("route", route)],
    );
    assert!(via.is_some_and(|n| n >= 1.0), "{metrics}");
    assert!(
        store_written(&s.scraper, rx.len() as u64).await,
        "{}",
        s.scraper.logs()
    );
    let store = s.store.clone();
    drop(s.scraper);
    assert!(
        stored(
            &store,
            r#"{service_name="sdk.app", env="test", region="eu"}"#
        ) >= 1
    );
}

/// pyroscope-io 0.8: `POST /ingest?name=sdk.app&format=pprof&spyName=pyspy` with a gzipped
/// pprof whose samples carry the tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_through_ingest() {
    sdk_end_to_end("pyroscope-sdk-legacy", "ingest", Some("pyspy")).await;
}

/// pyroscope-io 1.4: Connect push, gzipped protobuf, tags as series labels.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_through_push() {
    sdk_end_to_end("pyroscope-sdk", "push", None).await;
}
