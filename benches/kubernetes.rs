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
    loop {
        if targets_out(&client, &addr).await == Some(collectors) {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "initial sync did not finish"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let sync = start.elapsed();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (rss, _, cpu0) = proc_stats(pid);
    println!(
        "initial sync: {pods} pods -> {collectors} targets kept by the seed rules in {sync:?}; RSS {:.1} MiB after sync",
        rss as f64 / 1024.0
    );

    let mut latencies = Vec::new();
    for c in 0..changes {
        // A new collector pod: one more target survives the seed rules.
        let mut p = pod(pods + c * 20);
        p["metadata"]["name"] = json!(format!("extra-{c}"));
        let want = collectors + c as u64 + 1;
        let t = Instant::now();
        fake.apply(p);
        while targets_out(&client, &addr).await != Some(want) {
            assert!(t.elapsed() < Duration::from_secs(10), "change {c} not seen");
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        latencies.push(t.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (rss, hwm, cpu1) = proc_stats(pid);
    latencies.sort();
    let median = latencies[latencies.len() / 2];
    let max = latencies[latencies.len() - 1];
    println!(
        "one pod change -> relabel output: median {median:?}, max {max:?} over {changes} changes; scraper CPU {:.1} ms per change (incl. polling)",
        (cpu1 - cpu0) * 1000.0 / changes as f64
    );
    println!(
        "RSS {:.1} MiB now, peak {:.1} MiB",
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0
    );
    let _ = child.kill();
    let _ = child.wait();
}
