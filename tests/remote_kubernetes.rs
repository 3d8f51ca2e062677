//! `remote.kubernetes.secret` and `remote.kubernetes.configmap` in the real `scraper run`,
//! against the in-repo fake Kubernetes API (tests/support/fake_kube.rs): a `pyroscope.write`
//! whose endpoint url and basic_auth username come from a ConfigMap and password from a
//! Secret, working from the first load (the url is required: it must be read before the
//! write is first evaluated) and accepted by `scraper check`, which reads nothing; the
//! credentials checked in the `Authorization` header the recording Pyroscope receives; a
//! changed password used after `poll_frequency`; a failed read (last data kept, component
//! unhealthy, one warning, the metric, recovery logged); a reload to a new ConfigMap
//! component taking the url from another object; a reload to an object that does not exist
//! yet, refused, then accepted once it exists; a missing secret, or a ConfigMap without the
//! url's key, refusing the initial load; the secret redacted in the API.

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

/// The ConfigMap holding the write's `url` (`rx`, the receiving Pyroscope) and username.
fn endpoint_configmap(rx: Option<&str>) -> serde_json::Value {
    let mut data = json!({"username": "tenant-1"});
    if let Some(rx) = rx {
        data["url"] = json!(rx);
    }
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "pyro-endpoint", "namespace": "monitoring"},
        "data": data,
    })
}

fn config(port: u16, kube: &str, secret_name: &str) -> String {
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
    url = remote.kubernetes.configmap.endpoint.data["url"]
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

/// `:line:col:` of the first `needle` in `src` (1-based, as `scraper check` prints them).
fn line_col(src: &str, needle: &str) -> String {
    let at = src.find(needle).expect("needle in the config");
    let before = &src[..at];
    let line = before.matches('\n').count() + 1;
    let col = at - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!(":{line}:{col}")
}

fn count(logs: &str, needle: &str) -> usize {
    logs.lines().filter(|l| l.contains(needle)).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_from_a_secret_follow_changes_and_survive_failed_reads() {
    let kube = FakeKube::start().await;
    let rx = PyroscopeReceiver::start().await;
    kube.apply(secret("first"));
    kube.apply(endpoint_configmap(Some(&rx.url())));
    let port = free_port();
    let src = config(port, &kube.url(), "pyro-auth");

    // `check` reads nothing, yet accepts a required url that only the cluster can give,
    // and says, on one line, which attributes it could not check.
    let checked = scraper_check(&src).await;
    assert!(checked.success(), "{}", checked.stderr);
    let lines: Vec<&str> = checked.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", checked.stderr);
    assert!(
        lines[0].starts_with("not checked (uses data read at run): "),
        "{}",
        checked.stderr
    );
    // The url, the username and the password, where their statements start.
    for attribute in ["url = remote", "username = remote", "password = remote"] {
        let at = line_col(&src, attribute);
        assert!(lines[0].contains(&at), "{attribute} ({at}): {}", lines[0]);
    }
    assert_eq!(lines[0].matches("config.alloy:").count(), 3, "{}", lines[0]);

    let s = Scraper::start(|_| src).await;
    let base = format!("http://127.0.0.1:{port}");
    let up = eventually(WAIT, || {
        let url = format!("{base}/ingest");
        async move { reqwest::get(url).await.is_ok() }
    })
    .await;
    assert!(up, "receive_http is not listening:\n{}", s.logs());

    // The first profile already went to the url from the ConfigMap with the secret's
    // credentials: both were read before pyroscope.write was first evaluated (an empty url
    // would have failed the load).
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

    // A reload that replaces the ConfigMap component by a new one, reading another object
    // whose url is another Pyroscope: the new component reads while the reload is applied,
    // before the write is evaluated again, so the reload is accepted and the url followed.
    let rx2 = PyroscopeReceiver::start().await;
    let mut moved = endpoint_configmap(Some(&rx2.url()));
    moved["metadata"]["name"] = json!("pyro-endpoint-b");
    kube.apply(moved);
    let src = std::fs::read_to_string(&s.config)
        .expect("config")
        .replace("configmap \"endpoint\"", "configmap \"moved\"")
        .replace("\"pyro-endpoint\"", "\"pyro-endpoint-b\"")
        .replace("configmap.endpoint.", "configmap.moved.");
    std::fs::write(&s.config, src).expect("write config");
    let (status, text) = reload(&s).await;
    assert!(status.is_success(), "{status}: {text}\n{}", s.logs());
    push(&base, "moved").await;
    assert_eq!(authorization(&rx2, "moved", &s).await, basic("second"));

    // A reload of the same component to an object that does not exist yet, whose url is
    // under a key the current object lacks: the update fails (the read), the component keeps
    // its old arguments and data. Once the object exists, reloading the same file must read
    // it, not judge the new url against the old object's data (where it is missing).
    let rx3 = PyroscopeReceiver::start().await;
    let src = std::fs::read_to_string(&s.config)
        .expect("config")
        .replace("\"pyro-endpoint-b\"", "\"pyro-endpoint-c\"")
        .replace("data[\"url\"]", "data[\"url_c\"]");
    std::fs::write(&s.config, src).expect("write config");
    let (status, text) = reload(&s).await;
    assert!(!status.is_success(), "{status}: {text}\n{}", s.logs());
    assert!(
        text.contains("reading configmap monitoring/pyro-endpoint-c"),
        "{text}"
    );
    let mut c = endpoint_configmap(None);
    c["metadata"]["name"] = json!("pyro-endpoint-c");
    c["data"]["url_c"] = json!(rx3.url());
    kube.apply(c);
    let (status, text) = reload(&s).await;
    assert!(status.is_success(), "{status}: {text}\n{}", s.logs());
    push(&base, "created").await;
    assert_eq!(authorization(&rx3, "created", &s).await, basic("second"));
}

/// `POST /-/reload`: its status and text.
async fn reload(s: &Scraper) -> (reqwest::StatusCode, String) {
    let reload = reqwest::Client::new()
        .post(format!("http://{}/-/reload", s.addr))
        .send()
        .await
        .expect("reload");
    let status = reload.status();
    (status, reload.text().await.unwrap_or_default())
}

/// `scraper <args> <config>` with `src` as the config, run to its end.
async fn scraper(args: &'static [&'static str], src: &str) -> support::child::Output {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("config.alloy");
    std::fs::write(&path, src).expect("write config");
    // The child runs on a blocking thread: the fake API answers from this runtime.
    tokio::task::spawn_blocking(move || {
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_scraper"));
        cmd.args(args)
            .arg(&path)
            .env_remove("KUBERNETES_SERVICE_HOST");
        if args.first() == Some(&"run") {
            cmd.arg("--server.http.listen-addr")
                .arg(format!("127.0.0.1:{}", free_port()))
                .arg("--storage.path")
                .arg(dir.path().join("data"));
        }
        support::child::run(&mut cmd, "scraper", WAIT)
    })
    .await
    .expect("joined")
}

async fn scraper_check(src: &str) -> support::child::Output {
    scraper(&["check"], src).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_object_or_key_missing_at_startup_fails_the_load() {
    // (why, the Secret's name, the ConfigMap has the url key, parts of the error)
    let cases: &[(&str, &str, bool, &[&str])] = &[
        (
            "a secret that does not exist",
            "missing",
            true,
            &[
                "reading secret monitoring/missing",
                "not found",
                "remote.kubernetes.secret",
            ],
        ),
        (
            "a ConfigMap without the url's key",
            "pyro-auth",
            false,
            // At the attribute, as Alloy, whose `data["url"]` is null there too.
            &[
                "endpoint url is empty",
                "url = remote.kubernetes.configmap.endpoint.data",
            ],
        ),
    ];
    for (why, secret_name, has_url, want) in cases {
        let kube = FakeKube::start().await;
        kube.apply(secret("first"));
        kube.apply(endpoint_configmap(has_url.then_some("http://127.0.0.1:1")));
        let src = config(free_port(), &kube.url(), secret_name);
        // What only the cluster can tell is not for `check` to refuse.
        let checked = scraper_check(&src).await;
        assert!(checked.success(), "{why}: {}", checked.stderr);

        let out = scraper(&["run"], &src).await;
        assert!(out.status.is_some(), "{why}: scraper run did not exit");
        assert!(!out.success(), "{why}: {}", out.stderr);
        let all = ["could not perform the initial load successfully"];
        for part in all.iter().chain(want.iter()) {
            assert!(
                out.stderr.contains(part),
                "{why}: {part:?} missing (api {}):\n{}",
                kube.url(),
                out.stderr
            );
        }
    }
}
