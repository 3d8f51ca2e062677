//! pyroscope.write against the recording receiver: what arrives, with which headers, auth and
//! TLS, to how many endpoints.

mod support;

use std::time::Duration;

use base64::Engine as _;
use scraper::profiles::Profile;
use support::pyroscope_receiver::{
    Fault, MutualTls, PyroscopeReceiver, TOKEN, TOKEN_PATH, TestCa, Writer, numbered,
    numbered_profile, tls_server_config,
};

const WAIT: Duration = Duration::from_secs(10);

fn labels(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn labels_bytes_and_protocol_headers_arrive_exactly() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&format!(
        r#"
external_labels = {{ "cluster" = "c1", "env" = "override" }}
endpoint {{
  url = "{}"
}}
"#,
        rx.url()
    ));
    let scraped = labels(&[
        ("service_name", "ns/app"),
        ("__name__", "memory"),
        ("__delta__", "false"),
        ("__address__", "10.0.0.1:6060"),
        ("__meta_kubernetes_pod_name", "app-0"),
        ("__profile_path__", "/debug/pprof/allocs"),
        ("env", "dev"),
        ("instance", "10.0.0.1:6060"),
        ("otel.scope.name", "com.grafana.alloy/pyroscope.scrape"),
    ]);
    // Bytes that are not valid UTF-8 or protobuf: passed through untouched.
    let raw: Vec<u8> = (0..=255u8).cycle().take(5000).collect();
    w.append(vec![
        Profile::new(scraped.clone(), raw.clone()),
        Profile::new(scraped, b"second".to_vec()),
    ]);
    assert!(rx.wait_for(2, WAIT).await);

    let got = rx.received();
    assert_eq!(
        got[0].labels,
        labels(&[
            ("__delta__", "false"),
            ("__name__", "memory"),
            ("cluster", "c1"),
            ("env", "override"),
            ("instance", "10.0.0.1:6060"),
            ("otel.scope.name", "com.grafana.alloy/pyroscope.scrape"),
            ("service_name", "ns/app"),
        ])
    );
    assert_eq!(got[0].raw.as_ref(), raw.as_slice());
    assert_eq!(got[1].raw.as_ref(), b"second");

    // One series, one sample per request, Connect unary headers.
    let reqs = rx.requests();
    assert_eq!(reqs.len(), 2);
    let r = &reqs[0];
    assert_eq!(r.method, "POST");
    assert_eq!(r.path, "/push.v1.PusherService/Push");
    assert_eq!(r.header("content-type"), Some("application/proto"));
    assert_eq!(r.header("connect-protocol-version"), Some("1"));
    assert_eq!(r.header("connect-timeout-ms"), Some("10000"));
    assert_eq!(
        r.header("user-agent"),
        Some(concat!("scraper/", env!("CARGO_PKG_VERSION")))
    );
    assert_eq!(r.header("authorization"), None);

    let url = rx.url();
    let ep = [("endpoint", url.as_str())];
    // The receiver stores before the writer has read the response.
    assert!(
        w.wait(WAIT, |w| w
            .metric("pyroscope_write_sent_profiles_total", &ep)
            == 2.0)
            .await
    );
    assert_eq!(
        w.metric("pyroscope_write_sent_bytes_total", &ep),
        (raw.len() + 6) as f64
    );
    assert_eq!(w.metric("pyroscope_write_dropped_profiles_total", &ep), 0.0);
    assert!(
        w.metric(
            "pyroscope_write_latency_count",
            &[("type", "push_downstream")]
        ) >= 2.0
    );
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn base_url_with_path_prefix_and_trailing_slash() {
    let rx = PyroscopeReceiver::start().await;
    // Pyroscope behind a path prefix would see /prefix/push...; our receiver serves the root,
    // so check the trailing slash is not doubled.
    let w = Writer::start(&format!("endpoint {{\n  url = \"{}/\"\n}}\n", rx.url()));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(rx.wait_for(1, WAIT).await);
    assert_eq!(rx.requests()[0].path, "/push.v1.PusherService/Push");
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenant_header_and_basic_auth() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&format!(
        r#"
endpoint {{
  url     = "{}"
  headers = {{ "X-Scope-OrgID" = "t1" }}
  http_headers = {{ "X-Extra" = ["a", "b"] }}
  basic_auth {{
    username = "stack-123"
    password = "glc_secret"
  }}
}}
"#,
        rx.url()
    ));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(rx.wait_for(1, WAIT).await);
    let r = &rx.requests()[0];
    assert_eq!(r.header("x-scope-orgid"), Some("t1"));
    let want = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("stack-123:glc_secret")
    );
    assert_eq!(r.header("authorization"), Some(want.as_str()));
    let extra: Vec<&str> = r
        .headers
        .iter()
        .filter(|(n, _)| n == "x-extra")
        .map(|(_, v)| v.as_str())
        .collect();
    assert_eq!(extra, ["a", "b"]);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bearer_token_file_and_oauth2() {
    let rx = PyroscopeReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token = dir.path().join("token");
    std::fs::write(&token, "from-file\n").expect("write");
    let w = Writer::start(&format!(
        r#"
endpoint {{
  url = "{url}"
  bearer_token_file = "{file}"
}}
endpoint {{
  url = "{url}"
  oauth2 {{
    client_id     = "id"
    client_secret = "secret"
    token_url     = "{url}{token_path}"
    scopes        = ["push"]
  }}
}}
"#,
        url = rx.url(),
        file = token.display(),
        token_path = TOKEN_PATH,
    ));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(rx.wait_for(2, WAIT).await);
    let mut auth: Vec<String> = rx
        .received()
        .iter()
        .map(|r| r.header("authorization").unwrap_or("").to_string())
        .collect();
    auth.sort();
    assert_eq!(auth, ["Bearer from-file", &format!("Bearer {TOKEN}")]);
    // The token request: client credentials in a Basic header, form body.
    let token_req = rx
        .requests()
        .into_iter()
        .find(|r| r.path == TOKEN_PATH)
        .expect("token request");
    assert_eq!(
        token_req.header("authorization"),
        Some(
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode("id:secret")
            )
            .as_str()
        )
    );
    assert_eq!(
        token_req.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );

    // The file is read per request: a rotated token is used at once.
    std::fs::write(&token, "rotated").expect("write");
    w.append(vec![numbered_profile("a", 2)]);
    assert!(rx.wait_for(4, WAIT).await);
    assert!(
        rx.received()
            .iter()
            .any(|r| r.header("authorization") == Some("Bearer rotated"))
    );
    // The oauth2 token is cached.
    assert_eq!(
        rx.requests()
            .iter()
            .filter(|r| r.path == TOKEN_PATH)
            .count(),
        1
    );
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_test_ca_and_client_certificates() {
    let tls = MutualTls::start(&["localhost"]).await;
    let (rx, ca_file, cert_file, key_file) = (&tls.rx, &tls.ca_file, &tls.cert_file, &tls.key_file);

    let w = Writer::start(&format!(
        r#"
endpoint {{
  url = "{url}"
  tls_config {{
    ca_file   = "{ca_file}"
    cert_file = "{cert_file}"
    key_file  = "{key_file}"
  }}
}}
"#,
        url = rx.url(),
    ));
    w.append(vec![numbered_profile("tls", 1)]);
    assert!(rx.wait_for(1, WAIT).await);
    assert_eq!(numbered(&rx.received()[0].raw), ("tls".to_string(), 1));
    w.stop().await;

    // Inline PEM (raw string) and min_version = TLS13.
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{url}\"\n  tls_config {{\n    ca_pem = `{ca}`\n    cert_pem = `{cert}`\n    key_pem = `{key}`\n    min_version = \"TLS13\"\n  }}\n}}\n",
        url = rx.url(),
        ca = tls.ca_pem,
        cert = tls.cert_pem,
        key = tls.key_pem,
    ));
    w.append(vec![numbered_profile("tls", 2)]);
    assert!(rx.wait_for(2, WAIT).await);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_verification_failures_and_overrides() {
    let ca = TestCa::new("scraper test CA");
    // The certificate names another host than the URL's.
    let server = ca.issue(&["pyroscope.internal"]);
    let rx = PyroscopeReceiver::start_tls(tls_server_config(&server, None)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("ca.pem");
    std::fs::write(&ca_file, &ca.cert_pem).expect("write");

    // Wrong host name: never delivered, retried as unavailable.
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{}\"\n  min_backoff_period = \"10ms\"\n  max_backoff_period = \"20ms\"\n  tls_config {{\n    ca_file = \"{}\"\n  }}\n}}\n",
        rx.url(),
        ca_file.display()
    ));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(
        w.wait(WAIT, |w| w.metric("pyroscope_write_retries_total", &[])
            >= 3.0)
            .await
    );
    assert_eq!(rx.count(), 0);
    w.stop().await;

    // server_name makes it verify.
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{}\"\n  tls_config {{\n    ca_file = \"{}\"\n    server_name = \"pyroscope.internal\"\n  }}\n}}\n",
        rx.url(),
        ca_file.display()
    ));
    w.append(vec![numbered_profile("a", 2)]);
    assert!(rx.wait_for(1, WAIT).await);
    w.stop().await;

    // insecure_skip_verify accepts it without the CA.
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{}\"\n  tls_config {{\n    insecure_skip_verify = true\n  }}\n}}\n",
        rx.url()
    ));
    w.append(vec![numbered_profile("a", 3)]);
    assert!(rx.wait_for(2, WAIT).await);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_endpoints_both_receive_everything() {
    let (a, b) = (
        PyroscopeReceiver::start().await,
        PyroscopeReceiver::start().await,
    );
    let w = Writer::start(&format!(
        r#"
endpoint {{
  url = "{}"
  min_backoff_period = "5ms"
  max_backoff_period = "50ms"
}}
endpoint {{
  url = "{}"
  min_backoff_period = "5ms"
  max_backoff_period = "50ms"
}}
"#,
        a.url(),
        b.url()
    ));
    // One endpoint has trouble for a while; the other is not held up by it.
    b.fail_next(5, Fault::Connect("unavailable"));
    b.fail_next(3, Fault::Reset);
    let n = 200;
    for i in 0..n {
        w.append(vec![numbered_profile(&format!("s{}", i % 7), i)]);
    }
    assert!(a.wait_for(n, WAIT).await);
    assert!(b.wait_for(n, WAIT).await);
    assert!(
        w.wait(WAIT, |w| w
            .metric("pyroscope_write_sent_profiles_total", &[])
            == 2.0 * n as f64)
            .await
    );
    for rx in [&a, &b] {
        let mut got: Vec<usize> = rx.received().iter().map(|r| numbered(&r.raw).1).collect();
        got.sort_unstable();
        assert_eq!(got, (0..n).collect::<Vec<_>>());
    }
    assert_eq!(
        w.metric(
            "pyroscope_write_sent_profiles_total",
            &[("endpoint", a.url().as_str())]
        ),
        n as f64
    );
    assert_eq!(
        w.metric(
            "pyroscope_write_sent_profiles_total",
            &[("endpoint", b.url().as_str())]
        ),
        n as f64
    );
    assert_eq!(
        w.metric(
            "pyroscope_write_retries_total",
            &[("endpoint", b.url().as_str())]
        ),
        8.0
    );
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_endpoint_accepts_and_drops() {
    let w = Writer::start("external_labels = { \"a\" = \"b\" }\n");
    w.append(vec![numbered_profile("a", 1)]);
    assert_eq!(w.queued(), 0);
    w.stop().await;
}

/// A gzipped CPU-like profile with `n` distinct stacks; sample i has value i + 1.
fn big_profile(n: usize) -> Vec<u8> {
    use prost::Message as _;
    use scraper::pprof::proto::{Function, Line, Location, Profile as Pprof, Sample, ValueType};
    let mut p = Pprof {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        string_table: vec![String::new(), "cpu".into(), "nanoseconds".into()],
        ..Default::default()
    };
    for i in 0..n {
        let id = i as u64 + 1;
        p.string_table.push(format!("main.function{i}"));
        p.function.push(Function {
            id,
            name: p.string_table.len() as i64 - 1,
            ..Default::default()
        });
        p.location.push(Location {
            id,
            line: vec![Line {
                function_id: id,
                line: 10,
                column: 0,
            }],
            ..Default::default()
        });
        p.sample.push(Sample {
            location_id: vec![id],
            value: vec![i as i64 + 1],
            label: Vec::new(),
        });
    }
    scraper::pprof::gzip(&p.encode_to_vec(), 6)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_over_the_backend_limits_are_trimmed_or_dropped() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{}\"\n  limits {{\n    max_profile_samples = 100\n  }}\n}}\nendpoint {{\n  url = \"{}\"\n  limits {{\n    max_burst_bytes = 50\n  }}\n}}\n",
        rx.url(),
        // The same receiver under another spelling, so that metrics tell the two apart.
        rx.url().replace("127.0.0.1", "localhost"),
    ));
    let raw = big_profile(20_000);
    let labels = vec![
        ("__name__".to_string(), "process_cpu".to_string()),
        ("service_name".to_string(), "big".to_string()),
    ];
    w.append(vec![Profile::new(labels, raw.clone())]);
    assert!(rx.wait_for(1, WAIT).await);
    let got = &rx.received()[0];
    let p = scraper::pprof::decode(&got.raw, &scraper::pprof::Limits::default()).expect("decode");
    let mut values: Vec<i64> = p.sample.iter().map(|s| s.value[0]).collect();
    values.sort_unstable();
    // The heaviest 100 stacks, and only what they reference.
    assert_eq!(values, (19_901..=20_000).collect::<Vec<i64>>());
    assert_eq!(p.function.len(), 100);
    assert!(
        w.wait(WAIT, |w| {
            w.metric("pyroscope_write_trimmed_profiles_total", &[]) == 1.0
                && w.metric(
                    "pyroscope_write_dropped_profiles_total",
                    &[("reason", "too_large")],
                ) == 1.0
        })
        .await,
        "{}",
        w.metrics.encode().expect("encode")
    );
    // Sent bytes are the raw_profile bytes pushed (as in Alloy): the trimmed profile's. Counted
    // when the backend's answer arrives, which can be after the receiver recorded the profile.
    let sent = got.raw.len() as f64;
    assert!(
        w.wait(WAIT, |w| {
            w.metric(
                "pyroscope_write_sent_bytes_total",
                &[("endpoint", rx.url().as_str())],
            ) == sent
        })
        .await,
        "{}",
        w.metrics.encode().expect("encode")
    );
    assert!(got.raw.len() < raw.len());
    assert_eq!(rx.count(), 1);
    w.stop().await;
}
