//! `discovery.http` in a real `scraper run` against a real HTTP server in the test (axum on
//! loopback), whose answer the test changes:
//!
//! * the targets carry exactly the labels Prometheus' http_sd documentation lists:
//!   `__address__` per address, the group's `labels`, and `__meta_url` (the configured URL),
//!   which a group cannot forge;
//! * each request says `Accept: application/json`, `X-Prometheus-Refresh-Interval-Seconds`, and
//!   carries the HTTP client arguments (`bearer_token`, `http_headers`);
//! * a changed answer is picked up at the next refresh;
//! * a 500, a `text/plain` answer and broken JSON each keep the last good targets, make the
//!   component unhealthy with the reason, count `prometheus_sd_http_failures_total` and log a
//!   warning; a good answer recovers;
//! * `scraper check` refuses a URL Prometheus refuses.
//!
//! Waits use generous hang guards; nothing asserts a duration.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use scrape_support::{BIN, Scraper, eventually, metric};

const GUARD: Duration = Duration::from_secs(30);
const ID: &str = "discovery.http.sd";

type Target = BTreeMap<String, String>;

/// What the SD endpoint answers now, and the headers of every request it got.
#[derive(Clone, Default)]
struct Sd {
    answer: Arc<Mutex<(u16, String, String)>>,
    requests: Arc<Mutex<Vec<HeaderMap>>>,
}

impl Sd {
    fn set(&self, status: u16, content_type: &str, body: &str) {
        *self.answer.lock().expect("lock") = (status, content_type.into(), body.into());
    }

    fn requests(&self) -> usize {
        self.requests.lock().expect("lock").len()
    }
}

async fn answer(State(sd): State<Sd>, headers: HeaderMap) -> impl IntoResponse {
    sd.requests.lock().expect("lock").push(headers);
    let (status, content_type, body) = sd.answer.lock().expect("lock").clone();
    (
        StatusCode::from_u16(status).expect("status"),
        [(header::CONTENT_TYPE, content_type)],
        body,
    )
}

async fn serve(sd: Sd) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = axum::Router::new()
        .route("/sd", axum::routing::get(answer))
        .with_state(sd);
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}/sd")
}

fn target(pairs: &[(&str, &str)]) -> Target {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn exported(s: &Scraper) -> Vec<Target> {
    let c = s.component(ID).await;
    serde_json::from_value(c["exports"]["targets"].clone())
        .unwrap_or_else(|e| panic!("targets: {e}: {c}"))
}

async fn health(s: &Scraper) -> (String, String) {
    let c = s.component(ID).await;
    (
        c["health"]["state"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        c["health"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn http_sd_targets_follow_the_endpoint() {
    let sd = Sd::default();
    sd.set(
        200,
        "application/json; charset=utf-8",
        r#"[
            {"targets": ["10.1.0.1:6060", "10.1.0.2:6060"], "labels": {"service_name": "api", "__meta_url": "forged"}},
            {"targets": ["10.1.0.3:4040"], "labels": {"__address__": "group:0", "__scheme__": "https"}},
            {"targets": [], "labels": {"unused": "x"}}
        ]"#,
    );
    let url = serve(sd.clone()).await;
    let config_url = url.clone();
    let s = Scraper::start(move |_| {
        format!(
            r#"
discovery.http "sd" {{
  url              = "{config_url}"
  refresh_interval = "1s"
  bearer_token     = "sd-token"
  http_headers     = {{ "X-Scope" = ["team-a"] }}
}}
"#
        )
    })
    .await;

    let want = vec![
        target(&[
            ("__address__", "10.1.0.1:6060"),
            ("__meta_url", &url),
            ("service_name", "api"),
        ]),
        target(&[
            ("__address__", "10.1.0.2:6060"),
            ("__meta_url", &url),
            ("service_name", "api"),
        ]),
        target(&[
            ("__address__", "10.1.0.3:4040"),
            ("__meta_url", &url),
            ("__scheme__", "https"),
        ]),
    ];
    assert!(
        eventually(GUARD, || async { exported(&s).await == want }).await,
        "got {:?}\n{}",
        exported(&s).await,
        s.logs()
    );

    // What the endpoint was asked.
    {
        let requests = sd.requests.lock().expect("lock");
        let h = requests.first().expect("a request");
        assert_eq!(h[header::ACCEPT], "application/json");
        assert_eq!(h["x-prometheus-refresh-interval-seconds"], "1");
        assert_eq!(h[header::AUTHORIZATION], "Bearer sd-token");
        assert_eq!(h["x-scope"], "team-a");
        let agent = h[header::USER_AGENT].to_str().unwrap_or_default();
        assert!(agent.starts_with("scraper/"), "{agent}");
    }

    // A new answer is picked up.
    sd.set(
        200,
        "application/json",
        r#"[{"targets": ["10.1.0.9:6060"]}]"#,
    );
    let new = vec![target(&[
        ("__address__", "10.1.0.9:6060"),
        ("__meta_url", &url),
    ])];
    assert!(eventually(GUARD, || async { exported(&s).await == new }).await);
    assert_eq!(health(&s).await.0, "healthy");

    // Each kind of failure keeps the targets and says why.
    let failures: [(u16, &str, &str, &str); 3] = [
        (
            500,
            "application/json",
            "[]",
            "server returned HTTP status 500 Internal Server Error",
        ),
        (
            200,
            "text/plain",
            "[]",
            "unsupported content type \"text/plain\"",
        ),
        (200, "application/json", "[{\"targets\": [\"a\"]", "EOF"),
    ];
    for (status, content_type, body, reason) in failures {
        sd.set(status, content_type, body);
        let seen = eventually(GUARD, || async {
            let (state, message) = health(&s).await;
            state == "unhealthy" && message.contains(reason)
        })
        .await;
        assert!(seen, "{reason}: {:?}\n{}", health(&s).await, s.logs());
        assert_eq!(exported(&s).await, new, "{reason}: targets must stay");
    }
    let failed = metric(
        &s.metrics().await,
        "prometheus_sd_http_failures_total",
        &[("component_id", ID)],
    );
    assert!(failed.is_some_and(|n| n >= 3.0), "{failed:?}");
    assert!(
        s.logs().contains("discovery.http request failed"),
        "{}",
        s.logs()
    );

    // Good again.
    sd.set(
        200,
        "application/json",
        r#"[{"targets": ["10.1.0.7:6060"]}]"#,
    );
    assert!(
        eventually(GUARD, || async {
            health(&s).await.0 == "healthy"
                && exported(&s).await.first().map(|t| t["__address__"].clone())
                    == Some("10.1.0.7:6060".to_string())
        })
        .await
    );
    assert!(sd.requests() >= 5);
}

#[test]
fn check_refuses_urls_prometheus_refuses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.alloy");
    std::fs::write(
        &path,
        "discovery.http \"sd\" {\n  url = \"ftp://sd.example/targets\"\n}\n",
    )
    .expect("write");
    let out = Command::new(BIN)
        .arg("check")
        .arg(&path)
        .output()
        .expect("run check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("URL scheme must be 'http' or 'https'"),
        "{stderr}"
    );
    assert!(stderr.contains("c.alloy:2:"), "{stderr}");
}
