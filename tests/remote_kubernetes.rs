//! `remote.kubernetes.secret` and `remote.kubernetes.configmap` in the real `scraper run`,
//! against the in-repo fake Kubernetes API (tests/support/fake_kube.rs): a `pyroscope.write`
//! whose basic_auth username comes from a ConfigMap and password from a Secret, checked
//! in the `Authorization` header the recording Pyroscope receives; a changed password used
//! after `poll_frequency`; a failed read (last data kept, component unhealthy, one warning,
//! the metric, recovery logged); a missing secret refusing the initial load; the secret
//! redacted in the API.

mod scrape_support;
mod support;

use std::time::Duration;

use base64::Engine as _;
use scrape_support::{Scraper, eventually, free_port, metric, push_heap};
use serde_json::json;
use support::fake_kube::FakeKube;
use support::pyroscope_receiver::PyroscopeReceiver;

/// The hang guard of every wait: far beyond what any step needs, so that only a hang fails.
const WAIT: Duration = Duration::from_secs(30);
const SECRET_ID: &str = "remote.kubernetes.secret.auth";

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s)
}

fn secret(password: &str) -> serde_json::Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "pyro-auth", "namespace": "monitoring"},
        "type": "Opaque",
        "data": {"password": b64(password), "token": b64("unused")},
    })
}

fn basic(password: &str) -> String {
    format!("Basic {}", b64(&format!("tenant-1:{password}")))
}

fn config(port: u16, kube: &str, secret_name: &str, rx: &str) -> String {
    format!(
        r#"
remote.kubernetes.secret "auth" {{
  namespace      = "monitoring"
  name           = "{secret_name}"
  poll_frequency = "1s"
  client {{
    api_server = "{kube}"
  }}
}}

remote.kubernetes.configmap "endpoint" {{
  namespace = "monitoring"
  name      = "pyro-endpoint"
  client {{
    api_server = "{kube}"
  }}
}}

pyroscope.receive_http "in" {{
  http {{
    listen_address = "127.0.0.1"
    listen_port    = {port}
  }}
  forward_to = [pyroscope.write.rx.receiver]
}}

pyroscope.write "rx" {{
  endpoint {{
    url = "{rx}"
    basic_auth {{
      username = remote.kubernetes.configmap.endpoint.data["username"]
      password = remote.kubernetes.secret.auth.data["password"]
    }}
  }}
}}
"#
    )
}

async fn push(base: &str, service: &str) {
    push_heap(base, &[("__name__", "memory"), ("service_name", service)]).await;
}

/// The `Authorization` header the profile of `service` arrived with.
async fn authorization(rx: &PyroscopeReceiver, service: &str, s: &Scraper) -> String {
    let found = eventually(WAIT, || async {
        rx.received()
            .iter()
            .any(|r| r.label("service_name") == Some(service))
    })
    .await;
    assert!(found, "no profile of {service} arrived:\n{}", s.logs());
    let got = rx.received();
    let r = got
        .iter()
        .find(|r| r.label("service_name") == Some(service))
        .expect("arrived");
    r.header("authorization").unwrap_or_default().to_string()
}

fn count(logs: &str, needle: &str) -> usize {
    logs.lines().filter(|l| l.contains(needle)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_from_a_secret_follow_changes_and_survive_failed_reads() {
    let kube = FakeKube::start().await;
    let rx = PyroscopeReceiver::start().await;
    kube.apply(secret("first"));
    kube.apply(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pyro-endpoint", "namespace": "monitoring"},
        "data": {"username": "tenant-1"},
    }));
    let port = free_port();
    let s = Scraper::start(|_| config(port, &kube.url(), "pyro-auth", &rx.url())).await;
    let base = format!("http://127.0.0.1:{port}");
    let up = eventually(WAIT, || {
        let url = format!("{base}/ingest");
        async move { reqwest::get(url).await.is_ok() }
    })
    .await;
    assert!(up, "receive_http is not listening:\n{}", s.logs());

    // The first profile already carries the secret's credentials: the read happened before
    // pyroscope.write was first evaluated.
    push(&base, "a").await;
    assert_eq!(authorization(&rx, "a", &s).await, basic("first"));
    let reads = kube
        .requests()
        .iter()
        .filter(|r| r.path == "/api/v1/namespaces/monitoring/secrets/pyro-auth")
        .count();
    assert!(reads >= 1);

    // The secret's values never leave through the API; the ConfigMap's are plain strings.
    let component = s.component(SECRET_ID).await;
    let text = component.to_string();
    assert!(!text.contains("first"), "{text}");
    assert!(!text.contains(&b64("first")), "{text}");
    assert_eq!(component["health"]["state"], "healthy", "{component}");
    let endpoint = s
        .component("remote.kubernetes.configmap.endpoint")
        .await
        .to_string();
    assert!(endpoint.contains("tenant-1"), "{endpoint}");

    // A rotated password is used once a poll (every second) has read it.
    kube.apply(secret("second"));
    let mut n = 0;
    let rotated = eventually(WAIT, || {
        n += 1;
        let service = format!("rot{n}");
        let (rx, s, base) = (&rx, &s, &base);
        async move {
            push(base, &service).await;
            authorization(rx, &service, s).await == basic("second")
        }
    })
    .await;
    assert!(rotated, "the new password was never used:\n{}", s.logs());

    // An API server that refuses every read: the last good data stays, the component turns
    // unhealthy, one warning (repeats are debug lines) and the failure counter.
    kube.set_required_token(Some("nobody-has-this"));
    let unhealthy = eventually(WAIT, || async {
        s.component(SECRET_ID).await["health"]["state"] == "unhealthy"
    })
    .await;
    assert!(unhealthy, "{}", s.logs());
    let health = s.component(SECRET_ID).await["health"]["message"].to_string();
    assert!(health.contains("polling failed"), "{health}");
    assert!(
        health.contains("keeping the last good data (2 keys)"),
        "{health}"
    );
    // Three more failed polls, still one warning.
    let more = eventually(WAIT, || async {
        metric(
            &s.metrics().await,
            "scraper_remote_kubernetes_poll_failures_total",
            &[("component_id", SECRET_ID)],
        )
        .unwrap_or(0.0)
            >= 3.0
    })
    .await;
    assert!(more, "{}", s.logs());
    assert_eq!(
        count(&s.logs(), "reading from the Kubernetes API failed"),
        1,
        "{}",
        s.logs()
    );
    push(&base, "during").await;
    assert_eq!(authorization(&rx, "during", &s).await, basic("second"));

    // The API answers again: healthy, and the recovery is logged.
    kube.set_required_token(None);
    let healthy = eventually(WAIT, || async {
        s.component(SECRET_ID).await["health"]["state"] == "healthy"
    })
    .await;
    assert!(healthy, "{}", s.logs());
    assert_eq!(
        count(&s.logs(), "reading from the Kubernetes API works again"),
        1,
        "{}",
        s.logs()
    );
    push(&base, "after").await;
    assert_eq!(authorization(&rx, "after", &s).await, basic("second"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_that_cannot_be_read_at_startup_fails_the_load() {
    let kube = FakeKube::start().await;
    kube.apply(json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pyro-endpoint", "namespace": "monitoring"},
        "data": {"username": "tenant-1"},
    }));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.alloy");
    std::fs::write(
        &path,
        config(free_port(), &kube.url(), "missing", "http://127.0.0.1:1"),
    )
    .expect("write config");
    let kube_url = kube.url();
    // The child runs on a blocking thread: the fake API answers from this runtime.
    let out = tokio::task::spawn_blocking(move || {
        support::child::run(
            std::process::Command::new(env!("CARGO_BIN_EXE_scraper"))
                .arg("run")
                .arg(&path)
                .arg("--server.http.listen-addr")
                .arg(format!("127.0.0.1:{}", free_port()))
                .arg("--storage.path")
                .arg(dir.path().join("data"))
                .env_remove("KUBERNETES_SERVICE_HOST"),
            "scraper run",
            WAIT,
        )
    })
    .await
    .expect("joined");
    assert!(out.status.is_some(), "scraper run did not exit");
    assert!(!out.success(), "{}", out.stderr);
    for want in [
        "could not perform the initial load successfully",
        "reading secret monitoring/missing",
        "not found",
        "remote.kubernetes.secret",
    ] {
        assert!(
            out.stderr.contains(want),
            "{want:?} missing (api {kube_url}):\n{}",
            out.stderr
        );
    }
}
