//! `pyroscope.enrich` in the real `scraper run`: targets from `discovery.file` (a file changed
//! while running) enrich profiles pushed to `pyroscope.receive_http`, which reach the recording
//! Pyroscope through `pyroscope.write`. Checks the labels that arrive: copied, overwritten,
//! `__` labels left out by the write, unmatched profiles unchanged, and the new labels after
//! the file changes; for `/push` and for `/ingest` (folded text, whose labels come from the
//! `name` parameter: another conversion to a profile).

mod scrape_support;
mod support;

use std::path::Path;
use std::time::Duration;

use scrape_support::{Scraper, eventually, free_port, metric, push_heap};
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

fn config(port: u16, targets: &Path, rx: &str) -> String {
    format!(
        r#"
discovery.file "pods" {{
  files = ["{targets}"]
}}

pyroscope.receive_http "in" {{
  http {{
    listen_address = "127.0.0.1"
    listen_port    = {port}
  }}
  forward_to = [pyroscope.enrich.pods.receiver]
}}

pyroscope.enrich "pods" {{
  targets              = discovery.file.pods.targets
  target_match_label   = "pod_ip"
  profiles_match_label = "ip"
  forward_to           = [pyroscope.write.rx.receiver]
}}

pyroscope.write "rx" {{
  endpoint {{
    url = "{rx}"
  }}
}}
"#,
        targets = targets.display()
    )
}

/// file_sd: one group per pod, its IP as `pod_ip`.
fn targets_file(path: &Path, namespace: &str) {
    let json = serde_json::json!([
        {"targets": ["10.0.0.1:4040"], "labels": {"pod_ip": "10.0.0.1", "namespace": namespace, "team": "payments", "env": "prod"}},
        {"targets": ["10.0.0.2:4040"], "labels": {"pod_ip": "10.0.0.2", "namespace": "other"}},
        {"targets": ["10.0.0.3:4040"], "labels": {"namespace": "no-ip"}},
    ]);
    // Written aside and renamed, so discovery never reads half a file.
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, json.to_string()).expect("write targets");
    std::fs::rename(&tmp, path).expect("rename targets");
}

async fn push(base: &str, service: &str, labels: &[(&str, &str)]) {
    let mut pairs = vec![("__name__", "memory"), ("service_name", service)];
    pairs.extend_from_slice(labels);
    push_heap(base, &pairs).await;
}

/// Pyroscope's legacy `/ingest`: folded stacks, the labels in `name` (`app.cpu{ip=...}`).
async fn ingest(base: &str, service: &str, ip: &str) {
    let resp = reqwest::Client::new()
        .post(format!(
            "{base}/ingest?name={service}.cpu%7Bip%3D{ip}%7D&sampleRate=100&spyName=rbspy"
        ))
        .header("content-type", "binary/octet-stream")
        .body("main;work 7\nmain;idle 3\n")
        .send()
        .await
        .expect("ingest");
    assert_eq!(resp.status().as_u16(), 200);
}

fn labels(r: &Received) -> Vec<(String, String)> {
    let mut l = r.labels.clone();
    l.sort();
    l
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut l: Vec<(String, String)> = pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    l.sort();
    l
}

/// The one profile of `service` that arrived, waiting for it.
async fn arrived(rx: &PyroscopeReceiver, service: &str, s: &Scraper) -> Received {
    let found = eventually(Duration::from_secs(20), || async {
        rx.received()
            .iter()
            .any(|r| r.label("service_name") == Some(service))
    })
    .await;
    assert!(found, "no profile of {service} arrived:\n{}", s.logs());
    let got: Vec<Received> = rx
        .received()
        .into_iter()
        .filter(|r| r.label("service_name") == Some(service))
        .collect();
    assert_eq!(got.len(), 1, "{got:?}");
    got.into_iter().next().expect("one")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovered_labels_reach_the_backend_and_follow_the_targets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pods.json");
    targets_file(&file, "shop");
    let rx = PyroscopeReceiver::start().await;
    let port = free_port();
    let s = Scraper::start(|_| config(port, &file, &rx.url())).await;
    let base = format!("http://127.0.0.1:{port}");
    let up = eventually(Duration::from_secs(10), || {
        let url = format!("{base}/ingest");
        async move { reqwest::get(url).await.is_ok() }
    })
    .await;
    assert!(up, "receive_http is not listening:\n{}", s.logs());

    // Matched: every target label copied (copy-all), the profile's own `env` overwritten;
    // `__address__` and `__meta_filepath` were copied too but pyroscope.write leaves `__*`
    // labels other than `__name__` out, as Alloy's does.
    push(&base, "a", &[("ip", "10.0.0.1"), ("env", "dev")]).await;
    let a = arrived(&rx, "a", &s).await;
    assert_eq!(
        labels(&a),
        owned(&[
            ("__name__", "memory"),
            ("service_name", "a"),
            ("ip", "10.0.0.1"),
            ("pod_ip", "10.0.0.1"),
            ("namespace", "shop"),
            ("team", "payments"),
            ("env", "prod"),
        ])
    );

    // The same through /ingest: the profile built from folded text is enriched too.
    ingest(&base, "e", "10.0.0.2").await;
    let e = arrived(&rx, "e", &s).await;
    assert_eq!(
        labels(&e),
        owned(&[
            ("__name__", "process_cpu"),
            ("__delta__", "false"),
            ("pyroscope_spy", "rbspy"),
            ("service_name", "e"),
            ("ip", "10.0.0.2"),
            ("pod_ip", "10.0.0.2"),
            ("namespace", "other"),
        ])
    );

    // No target with that IP, and no `ip` label at all: forwarded unchanged.
    push(&base, "b", &[("ip", "10.0.0.9")]).await;
    push(&base, "c", &[]).await;
    let b = arrived(&rx, "b", &s).await;
    assert_eq!(
        labels(&b),
        owned(&[
            ("__name__", "memory"),
            ("service_name", "b"),
            ("ip", "10.0.0.9")
        ])
    );
    let c = arrived(&rx, "c", &s).await;
    assert_eq!(
        labels(&c),
        owned(&[("__name__", "memory"), ("service_name", "c")])
    );

    // The file changes: the next profile gets the new namespace.
    targets_file(&file, "shop-v2");
    let mut n = 0;
    let moved = eventually(Duration::from_secs(20), || {
        n += 1;
        let service = format!("d{n}");
        let (base, rx) = (&base, &rx);
        async move {
            push(base, &service, &[("ip", "10.0.0.1")]).await;
            tokio::time::sleep(Duration::from_millis(300)).await;
            rx.received().iter().any(|r| {
                r.label("service_name") == Some(service.as_str())
                    && r.label("namespace") == Some("shop-v2")
            })
        }
    })
    .await;
    assert!(moved, "namespace never changed:\n{}", s.logs());

    let text = s.metrics().await;
    let id = |result: &'static str| {
        [
            ("component_id", "pyroscope.enrich.pods"),
            ("result", result),
        ]
    };
    let value =
        |result: &'static str| metric(&text, "pyroscope_enrich_profiles_total", &id(result));
    assert!(value("matched") >= Some(3.0), "{text}");
    assert_eq!(value("no_target"), Some(1.0), "{text}");
    assert_eq!(value("no_match_label"), Some(1.0), "{text}");
    let targets = metric(
        &text,
        "pyroscope_enrich_targets_without_match_label",
        &[("component_id", "pyroscope.enrich.pods")],
    );
    assert_eq!(targets, Some(1.0), "{text}");
}

/// A match label no target has (here misspelt): the profiles pass unchanged, and the warning
/// and gauge say why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_match_label_no_target_has_is_reported() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("pods.json");
    targets_file(&file, "shop");
    let rx = PyroscopeReceiver::start().await;
    let port = free_port();
    let s = Scraper::start(|_| {
        config(port, &file, &rx.url()).replace(
            "target_match_label   = \"pod_ip\"",
            "target_match_label   = \"podip\"",
        )
    })
    .await;
    let warned = s
        .wait(Duration::from_secs(10), |s| {
            s.logs().contains("no target has the match label")
        })
        .await;
    assert!(warned, "no warning:\n{}", s.logs());
    let base = format!("http://127.0.0.1:{port}");
    let up = eventually(Duration::from_secs(10), || {
        let url = format!("{base}/ingest");
        async move { reqwest::get(url).await.is_ok() }
    })
    .await;
    assert!(up, "receive_http is not listening:\n{}", s.logs());
    push(&base, "a", &[("ip", "10.0.0.1")]).await;
    let a = arrived(&rx, "a", &s).await;
    assert_eq!(
        labels(&a),
        owned(&[
            ("__name__", "memory"),
            ("service_name", "a"),
            ("ip", "10.0.0.1")
        ])
    );
    let text = s.metrics().await;
    let id = [("component_id", "pyroscope.enrich.pods")];
    assert_eq!(
        metric(&text, "pyroscope_enrich_targets_without_match_label", &id),
        Some(3.0),
        "{text}"
    );
    assert_eq!(
        metric(&text, "pyroscope_enrich_targets", &id),
        Some(0.0),
        "{text}"
    );
}
