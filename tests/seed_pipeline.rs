//! The seed config (a real user's production config, ../shared/alloy-corpus/profiling/
//! seed-otel-collector.alloy) runs unchanged: `discovery.kubernetes` lists pods from the fake
//! API server, `discovery.relabel` applies the user's 12 rules, `pyroscope.scrape` scrapes real
//! Go pprof programs standing in for the pods on their own 127.0.0.x addresses, and
//! `pyroscope.write` pushes to the recording receiver.
//!
//! The config has no `api_server` and runs outside a cluster, so discovery reads the
//! kubeconfig named by `$KUBECONFIG`, which points at the fake.

mod scrape_support;
mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use scrape_support::{Proc, Scraper, build_go, have_go, start_go};
use serde_json::json;
use support::fake_kube::FakeKube;
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

/// A collector pod as the OpenTelemetry operator creates it.
fn collector_pod(
    name: &str,
    app: &str,
    ip: &str,
    ports: &[i32],
    component: &str,
) -> serde_json::Value {
    let ports: Vec<_> = ports
        .iter()
        .map(|p| json!({"name": format!("p{p}"), "containerPort": p, "protocol": "TCP"}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "otel", "uid": format!("uid-{name}"),
            "labels": {
                "app.kubernetes.io/component": component,
                "app.kubernetes.io/name": app,
                "app.kubernetes.io/version": "0.112.0"
            },
            "annotations": {"opentelemetry-operator-config/sha256": format!("sha-{app}")}
        },
        "spec": {"nodeName": "node-1", "containers": [
            {"name": "otc-container", "image": "otel/opentelemetry-collector:0.112.0", "ports": ports}
        ]},
        "status": {"phase": "Running", "podIP": ip, "hostIP": "192.168.0.1",
            "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

fn seed_config() -> String {
    let path =
        scrape_support::repo().join("../shared/alloy-corpus/profiling/seed-otel-collector.alloy");
    match std::fs::read_to_string(&path) {
        Ok(s) => s,
        Err(e) => {
            if std::env::var_os("SCRAPER_REQUIRE_CORPUS").is_some() {
                panic!("{}: {e}", path.display());
            }
            // The committed copy is asserted identical to the corpus file in scrape_e2e.
            std::fs::read_to_string(scrape_support::repo().join("config/seed-otel-collector.alloy"))
                .expect("config/seed-otel-collector.alloy")
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_config_scrapes_collector_pods_found_in_kubernetes() {
    if !have_go() {
        return;
    }
    let app = build_go("scrapeapp");
    // Two pprof-enabled collectors, a gateway collector without the pprof port, an operator
    // that does declare 1777 but is not a collector, and a pod without an IP yet. Every
    // address that a wrong rule could reach serves pprof, so a leak would show up as profiles.
    let pods = [
        (
            "pprof-collector-0",
            "pprof-collector",
            "127.0.0.2",
            vec![4317, 4318, 1777, 8888],
            "opentelemetry-collector",
        ),
        (
            "pprof-collector-1",
            "pprof-collector",
            "127.0.0.3",
            vec![4317, 4318, 1777, 8888],
            "opentelemetry-collector",
        ),
        (
            "gateway-0",
            "gateway",
            "127.0.0.4",
            vec![4317, 4318, 8888],
            "opentelemetry-collector",
        ),
        (
            "operator-0",
            "opentelemetry-operator",
            "127.0.0.5",
            vec![1777, 8080],
            "controller-manager",
        ),
    ];
    let mut procs: Vec<Proc> = Vec::new();
    for (_, _, ip, _, _) in &pods {
        let listen = format!("{ip}:1777");
        let (p, addr) = start_go(&app.bin, &["-listen", &listen, "-duty", "0.05"]);
        assert_eq!(addr, listen);
        procs.push(p);
    }
    let fake = FakeKube::start().await;
    for (name, app_name, ip, ports, component) in &pods {
        fake.apply(collector_pod(name, app_name, ip, ports, component));
    }
    fake.apply(collector_pod(
        "pprof-collector-pending",
        "pprof-collector",
        "",
        &[1777],
        "opentelemetry-collector",
    ));
    // Same labels and port, other namespace: `namespaces { names = ["otel"] }` excludes it.
    let mut elsewhere = collector_pod(
        "pprof-collector-x",
        "pprof-collector",
        "127.0.0.6",
        &[1777],
        "opentelemetry-collector",
    );
    elsewhere["metadata"]["namespace"] = json!("default");
    fake.apply(elsewhere);

    let rx = PyroscopeReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = fake.kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_string_lossy().into_owned();
    let url = rx.url();
    let scraper = Scraper::start_with_env(
        |_| seed_config(),
        &[
            ("KUBECONFIG", kubeconfig.as_str()),
            ("PYROSCOPE_URL", url.as_str()),
            ("PYROSCOPE_USERNAME", "tenant-1"),
            ("PYROSCOPE_PASSWORD", "s3cret"),
        ],
    )
    .await;

    // goroutine and memory come on the first scrape, process_cpu after its 14 s delta window.
    let types = ["goroutine", "memory", "process_cpu"];
    let complete = |got: &[Received]| {
        let seen: BTreeSet<(String, String)> = got
            .iter()
            .map(|r| {
                (
                    r.label("pod").unwrap_or("").to_string(),
                    r.label("__name__").unwrap_or("").to_string(),
                )
            })
            .collect();
        ["pprof-collector-0", "pprof-collector-1"].iter().all(|p| {
            types
                .iter()
                .all(|t| seen.contains(&(p.to_string(), t.to_string())))
        })
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !complete(&rx.received()) {
        assert!(
            std::time::Instant::now() < deadline,
            "not every collector pod and type arrived; got {:?}\nscraper logs:\n{}",
            rx.received().iter().map(|r| &r.labels).collect::<Vec<_>>(),
            scraper.logs()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let got = rx.received();
    let pods_seen: BTreeSet<&str> = got.iter().filter_map(|r| r.label("pod")).collect();
    assert_eq!(
        pods_seen,
        BTreeSet::from(["pprof-collector-0", "pprof-collector-1"])
    );
    for r in &got {
        let pod = r.label("pod").expect("pod label");
        let ip = if pod.ends_with('0') {
            "127.0.0.2"
        } else {
            "127.0.0.3"
        };
        assert_eq!(
            r.label("service_name"),
            Some("otel/pprof-collector"),
            "{:?}",
            r.labels
        );
        assert_eq!(r.label("namespace"), Some("otel"));
        assert_eq!(r.label("container"), Some("otc-container"));
        assert_eq!(r.label("service_version"), Some("0.112.0"));
        assert_eq!(r.label("config_sha"), Some("sha-pprof-collector"));
        assert_eq!(r.label("instance"), Some(format!("{ip}:1777").as_str()));
        // The seed's `node` rule copies `__meta_kubernetes_node_name`, which Prometheus (and
        // so Alloy) sets only with `attach_metadata { node = true }`; the config does not ask
        // for it, so exact semantics mean no `node` label (spec relabel-and-kubernetes §9.G).
        assert_eq!(r.label("node"), None, "{:?}", r.labels);
        assert!(
            !r.labels
                .iter()
                .any(|(k, _)| k.starts_with("__meta_") || k == "__port__"),
            "{:?}",
            r.labels
        );
        assert_eq!(
            r.header("authorization"),
            Some("Basic dGVuYW50LTE6czNjcmV0")
        );
    }
    // Discovery listed only the otel namespace, as the config says.
    assert!(
        fake.requests()
            .iter()
            .all(|r| r.path.starts_with("/api/v1/namespaces/otel/")),
        "{:#?}",
        fake.requests()
    );
    drop(procs);
}

/// With `attach_metadata { node = true }` added, the seed rules' `node` label appears: what
/// the config's author meant (checked through `scraper discover`, which runs the same rules).
#[tokio::test]
async fn seed_rules_get_a_node_label_once_node_metadata_is_attached() {
    let fake = FakeKube::start().await;
    fake.apply(collector_pod(
        "pprof-collector-0",
        "pprof-collector",
        "10.0.0.2",
        &[4317, 1777],
        "opentelemetry-collector",
    ));
    fake.apply(json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"zone": "a"}}}));
    let seed = seed_config();
    let patched = seed.replacen(
        "    namespaces {",
        "    attach_metadata {\n        node = true\n    }\n    namespaces {",
        1,
    );
    assert_ne!(seed, patched);
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = fake.kubeconfig(dir.path());
    let run = move |config: String| {
        let path = dir.path().join("seed.alloy");
        std::fs::write(&path, config).expect("write");
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_scraper"))
            .args([
                "discover",
                "--component",
                "discovery.kubernetes.pods",
                "--relabel",
                "discovery.relabel.otel",
                "--timeout",
                "10",
                "--config",
            ])
            .arg(&path)
            .env("KUBECONFIG", &kubeconfig)
            .env("PYROSCOPE_URL", "http://127.0.0.1:1")
            .env("PYROSCOPE_USERNAME", "u")
            .env("PYROSCOPE_PASSWORD", "p")
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("scraper discover");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let targets: Vec<std::collections::BTreeMap<String, String>> =
            serde_json::from_slice(&out.stdout).expect("JSON");
        targets
    };
    let (plain, attached) = tokio::task::spawn_blocking(move || (run(seed), run(patched)))
        .await
        .expect("join");
    assert_eq!(plain.len(), 1);
    assert_eq!(plain[0]["__address__"], "10.0.0.2:1777");
    assert_eq!(plain[0]["service_name"], "otel/pprof-collector");
    assert!(!plain[0].contains_key("node"));
    assert_eq!(attached.len(), 1);
    assert_eq!(attached[0]["node"], "node-1");
}
