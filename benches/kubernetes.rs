//! Kubernetes discovery at cluster scale: 10,000 pods in the fake API server
//! (tests/support/fake_kube.rs), `scraper run` on the seed config's `discovery.kubernetes` and
//! `discovery.relabel` blocks (its 12 rules), measured from outside the process:
//!
//! * initial sync: wall time from start to the first complete relabel output, and RSS then;
//! * one pod change: wall time from the API event to the changed relabel output (with the
//!   publication interval set to 10 ms, so the figure is processing, not throttling), and the
//!   scraper's CPU time per change (utime + stime from /proc, including the HTTP polling);
//! * peak RSS over the whole run.
//!
//! Side by side, when the installed `prometheus` has Kubernetes discovery: Prometheus with a
//! `kubernetes_sd_configs` pod job carrying the same 12 rules, against the same fake server;
//! its RSS once the targets are in and its CPU per pod change. (Prometheus throttles target
//! updates to 5 s, so its latency is not comparable and not reported.) Debian's build has no
//! Kubernetes discovery (it is built without client-go): the bench then says so and skips it.
//!
//! Run: `cargo bench --bench kubernetes` (`-- --pods N --changes M` to vary). Figures are
//! recorded in docs/PERFORMANCE.md. Not a pass/fail test.

#[path = "../tests/support/fake_kube.rs"]
#[allow(dead_code)]
mod fake_kube;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use fake_kube::FakeKube;
use serde_json::json;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A realistic pod: 3 containers (one collector-like with 4 ports in 1 of 20 pods), 8 labels,
/// 4 annotations, container statuses, managed fields, env and volumes the slim cache drops.
fn pod(i: usize) -> serde_json::Value {
    let ns = format!("ns-{}", i % 50);
    let collector = i.is_multiple_of(20);
    let ns = if collector { "otel".to_string() } else { ns };
    let component = if collector {
        "opentelemetry-collector"
    } else {
        "web"
    };
    let ports: Vec<serde_json::Value> = if collector {
        [4317, 4318, 1777, 8888]
            .iter()
            .map(|p| json!({"name": format!("p{p}"), "containerPort": p, "protocol": "TCP"}))
            .collect()
    } else {
        vec![json!({"name": "http", "containerPort": 8080, "protocol": "TCP"})]
    };
    let env: Vec<serde_json::Value> = (0..15)
        .map(|e| json!({"name": format!("ENV_{e}"), "value": "x".repeat(40)}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("pod-{i:05}"), "namespace": ns, "uid": format!("00000000-0000-0000-0000-{i:012}"),
            "labels": {
                "app.kubernetes.io/component": component,
                "app.kubernetes.io/name": format!("app-{}", i % 300),
                "app.kubernetes.io/version": "1.2.3",
                "app.kubernetes.io/instance": format!("inst-{}", i % 300),
                "app.kubernetes.io/part-of": "platform",
                "pod-template-hash": "5d8f7c9b4",
                "team": format!("team-{}", i % 12),
                "tier": "backend"
            },
            "annotations": {
                "opentelemetry-operator-config/sha256": "4f2a9c0d1e7b3a5c6d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c",
                "prometheus.io/scrape": "true",
                "kubectl.kubernetes.io/restartedAt": "2026-11-01T10:00:00Z",
                "profiles.grafana.com/cpu.scrape": "true"
            },
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("app-{}-5d8f7c9b4", i % 300), "uid": "u", "controller": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update",
                "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}}, "f:spec": {"f:containers": {}}}}]
        },
        "spec": {
            "nodeName": format!("node-{}", i % 100),
            "containers": [
                {"name": "app", "image": "registry.example.com/app:1.2.3", "ports": ports, "env": env},
                {"name": "istio-proxy", "image": "istio/proxyv2:1.20", "ports": [{"name": "http-envoy-prom", "containerPort": 15090, "protocol": "TCP"}]},
                {"name": "log-shipper", "image": "fluent-bit:2"}
            ],
            "initContainers": [{"name": "istio-init", "image": "istio/proxyv2:1.20"}],
            "volumes": [{"name": "config", "configMap": {"name": "cfg"}}, {"name": "token", "projected": {"sources": []}}]
        },
        "status": {
            "phase": "Running", "podIP": format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255),
            "hostIP": format!("192.168.{}.{}", (i % 100) / 250, i % 100),
            "conditions": [
                {"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
                {"type": "ContainersReady", "status": "True"}, {"type": "PodScheduled", "status": "True"}
            ],
            "containerStatuses": [
                {"name": "app", "containerID": format!("containerd://{i:064x}"), "image": "i", "imageID": "x", "ready": true, "restartCount": 0},
                {"name": "istio-proxy", "containerID": format!("containerd://{:064x}", i + 1), "image": "i", "imageID": "x", "ready": true, "restartCount": 0}
            ]
        }
    })
}

const CONFIG: &str = r#"
discovery.kubernetes "pods" {
  role             = "pod"
  publish_interval = "10ms"
}
"#;

fn seed_relabel() -> String {
    let seed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/seed-otel-collector.alloy"
    ))
    .expect("config/seed-otel-collector.alloy");
    let start = seed
        .find("discovery.relabel \"otel\"")
        .expect("relabel block");
    let end = seed.find("pyroscope.write").expect("write block");
    seed[start..end].to_string()
}

/// (RSS KiB, peak RSS KiB, CPU seconds) of a process.
fn proc_stats(pid: u32) -> (u64, u64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib = |key: &str| {
        status
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let after = stat.rsplit_once(')').map(|(_, s)| s).unwrap_or("");
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of /proc/pid/stat, i.e. 11 and 12 after the name.
    let cpu = (ticks(11) + ticks(12)) / 100.0;
    (kib("VmRSS:"), kib("VmHWM:"), cpu)
}

/// `alloy_component_evaluation_seconds` count and sum: the controller observes it after each
/// block evaluation (for `discovery.relabel`: decoding its targets and relabelling them). Cheap
/// to poll, unlike the component detail view, which serialises every target.
async fn evaluations(client: &reqwest::Client, addr: &str) -> Option<(u64, f64)> {
    let body = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    let value = |name: &str| {
        body.lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
    };
    Some((
        value("alloy_component_evaluation_seconds_count")? as u64,
        value("alloy_component_evaluation_seconds_sum")?,
    ))
}

/// Pods added, from `prometheus_sd_kubernetes_events_total{role="pod",event="add"}`.
async fn pod_adds(client: &reqwest::Client, addr: &str) -> Option<u64> {
    let body = client
        .get(format!("http://{addr}/metrics"))
        .send()
        .await
        .ok()?
        .text()
        .await
        .ok()?;
    body.lines()
        .find(|l| {
            l.starts_with("prometheus_sd_kubernetes_events_total")
                && l.contains("role=\"pod\"")
                && l.contains("event=\"add\"")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok())
        .map(|v| v as u64)
}

async fn targets_out(client: &reqwest::Client, addr: &str) -> Option<u64> {
    let body = client
        .get(format!(
            "http://{addr}/api/v0/web/components/discovery.relabel.otel"
        ))
        .send()
        .await
        .ok()?
        .bytes()
        .await
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
    v["debugInfo"]["targets_out"].as_u64()
}

#[tokio::main]
async fn main() {
    let pods = arg("--pods", 10_000);
    let changes = arg("--changes", 20);
    let fake = FakeKube::start().await;
    let t = Instant::now();
    for i in 0..pods {
        fake.apply(pod(i));
    }
    let collectors = pods.div_ceil(20) as u64;
    println!("fake API server: {pods} pods loaded in {:?}", t.elapsed());

    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("bench.alloy");
    std::fs::write(&cfg, format!("{CONFIG}\n{}", seed_relabel())).expect("write config");
    let kubeconfig = fake.kubeconfig(dir.path());
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_scraper"))
        .arg("run")
        .arg(&cfg)
        .args(["--server.http.listen-addr", &addr, "--storage.path"])
        .arg(dir.path().join("data"))
        .env("KUBECONFIG", &kubeconfig)
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start scraper");
    let pid = child.id();
    let client = reqwest::Client::new();
    // Sync is detected from /metrics only: the component detail view would serialise all
    // 40,000 targets on every poll and dominate the memory being measured.
    loop {
        if pod_adds(&client, &addr)
            .await
            .is_some_and(|n| n >= pods as u64)
        {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "initial list did not finish"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Then until the relabel evaluation that follows the first publication is done.
    let mut last = evaluations(&client, &addr).await.expect("metrics").0;
    let mut settled_at = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = evaluations(&client, &addr).await.expect("metrics").0;
        if now != last {
            last = now;
            settled_at = Instant::now();
        } else if settled_at.elapsed() > Duration::from_millis(500) {
            break;
        }
    }
    let sync = settled_at - start;
    let (rss, _, cpu0) = proc_stats(pid);
    println!(
        "initial sync: {pods} pods listed and relabelled in {sync:?}; RSS {:.1} MiB after sync",
        rss as f64 / 1024.0
    );

    let mut latencies = Vec::new();
    let mut eval_seconds = 0.0;
    for c in 0..changes {
        // A new collector pod: one more target survives the seed rules.
        let mut p = pod(pods + c * 20);
        p["metadata"]["name"] = json!(format!("extra-{c}"));
        let (count0, sum0) = evaluations(&client, &addr).await.expect("metrics");
        let t = Instant::now();
        fake.apply(p);
        loop {
            let (count, sum) = evaluations(&client, &addr).await.expect("metrics");
            if count > count0 {
                latencies.push(t.elapsed());
                eval_seconds += sum - sum0;
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "change {c} not seen");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let (rss, hwm, cpu1) = proc_stats(pid);
    // Read after the memory figures: this serialises every target once.
    let kept = targets_out(&client, &addr).await;
    assert_eq!(
        kept,
        Some(collectors + changes as u64),
        "relabel output after the changes"
    );
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let max = latencies[latencies.len() - 1];
    println!(
        "one pod change -> relabel output: median {median:?}, max {max:?} over {changes} changes; relabel evaluation {:.1} ms; scraper CPU {:.1} ms per change (all threads, incl. /metrics polling)",
        eval_seconds * 1000.0 / changes as f64,
        (cpu1 - cpu0) * 1000.0 / changes as f64
    );
    println!(
        "RSS {:.1} MiB now, peak {:.1} MiB",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let _ = child.kill();
    let _ = child.wait();

    prometheus_side_by_side(
        &fake,
        pods,
        changes,
        collectors + changes as u64,
        dir.path(),
    )
    .await;
}

/// The seed rules as Prometheus `relabel_configs`.
const PROMETHEUS_RULES: &str = r#"
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_component]
        regex: opentelemetry-collector
        action: keep
      - source_labels: [__meta_kubernetes_pod_container_port_number]
        regex: "1777"
        action: keep
      - target_label: __port__
        replacement: "1777"
      - source_labels: [__address__]
        target_label: __address__
        regex: (.+):(\d+)
        replacement: ${1}
      - source_labels: [__address__, __port__]
        target_label: __address__
        separator: "@"
        regex: (.+)@(\d+)
        replacement: $1:$2
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
      - source_labels: [__meta_kubernetes_node_name]
        target_label: node
      - source_labels: [__meta_kubernetes_pod_container_name]
        target_label: container
      - source_labels: [__meta_kubernetes_pod_label_app_kubernetes_io_version]
        target_label: service_version
      - source_labels: [__meta_kubernetes_namespace, __meta_kubernetes_pod_label_app_kubernetes_io_name]
        target_label: service_name
        separator: "@"
        regex: (.*)@(.*)
        replacement: ${1}/${2}
      - source_labels: [__meta_kubernetes_pod_annotation_opentelemetry_operator_config_sha256]
        target_label: config_sha
"#;

async fn active_targets(client: &reqwest::Client, addr: &str) -> Option<u64> {
    let body = client
        .get(format!("http://{addr}/api/v1/targets?state=active"))
        .send()
        .await
        .ok()?
        .bytes()
        .await
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&body).ok()?;
    v["data"]["activeTargets"]
        .as_array()
        .map(|a| a.len() as u64)
}

async fn prometheus_side_by_side(
    fake: &FakeKube,
    pods: usize,
    changes: usize,
    mut want: u64,
    dir: &std::path::Path,
) {
    let Ok(bin) = which("prometheus") else {
        println!("prometheus: not installed (apt-get install prometheus); side-by-side skipped");
        return;
    };
    let cfg = dir.join("prometheus.yml");
    let yaml = format!(
        "global:\n  scrape_interval: 1h\nscrape_configs:\n  - job_name: otel\n    kubernetes_sd_configs:\n      - role: pod\n        api_server: {}\n{PROMETHEUS_RULES}",
        fake.url()
    );
    std::fs::write(&cfg, yaml).expect("write prometheus.yml");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let start = Instant::now();
    let mut child = Command::new(bin)
        .arg(format!("--config.file={}", cfg.display()))
        .arg(format!("--web.listen-address={addr}"))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .stdout(Stdio::null())
        .stderr(
            std::fs::File::create(std::env::temp_dir().join("bench-kubernetes-prometheus.log"))
                .map(Stdio::from)
                .unwrap_or_else(|_| Stdio::null()),
        )
        .spawn()
        .expect("start prometheus");
    let pid = child.id();
    let client = reqwest::Client::new();
    while active_targets(&client, &addr).await != Some(want) {
        if let Ok(Some(status)) = child.try_wait() {
            // Debian builds Prometheus without client-go, so without kubernetes_sd_configs.
            let log = std::fs::read_to_string(
                std::env::temp_dir().join("bench-kubernetes-prometheus.log"),
            )
            .unwrap_or_default();
            let reason = log
                .lines()
                .find(|l| l.contains("level=error"))
                .unwrap_or("");
            println!("prometheus: exited ({status}) before discovering anything: {reason}");
            return;
        }
        if start.elapsed() > Duration::from_secs(120) {
            println!("prometheus: targets did not reach {want} within 120 s");
            let _ = child.kill();
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sync = start.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss, _, cpu0) = proc_stats(pid);
    println!(
        "prometheus: {pods} pods -> {want} targets in {sync:?} (includes its 5 s update throttle); RSS {:.1} MiB after sync",
        rss as f64 / 1024.0
    );
    for c in 0..changes {
        let mut p = pod(pods + (changes + c) * 20);
        p["metadata"]["name"] = json!(format!("extra-prom-{c}"));
        fake.apply(p);
        want += 1;
        let t = Instant::now();
        while active_targets(&client, &addr).await != Some(want) {
            if t.elapsed() > Duration::from_secs(20) {
                println!("prometheus: change {c} not seen within 20 s");
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let (rss, hwm, cpu1) = proc_stats(pid);
    println!(
        "prometheus: CPU {:.1} ms per pod change (incl. polling); RSS {:.1} MiB now, peak {:.1} MiB",
        (cpu1 - cpu0) * 1000.0 / changes as f64,
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let _ = child.kill();
    let _ = child.wait();
}

fn which(name: &str) -> Result<std::path::PathBuf, ()> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join(name))
        .find(|p| p.is_file())
        .ok_or(())
}
