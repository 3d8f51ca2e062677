//! `discovery.sample` end to end: the in-repo fake Kubernetes API serves 10 Deployments × 20
//! pods, each pod on its own loopback address with a tiny pprof server of its own; a real
//! `scraper run` chains discovery.kubernetes → discovery.sample (`max = 3` per namespace +
//! controller) → pyroscope.scrape, and the test counts requests **at the targets**:
//!
//! * exactly 3 pods of each Deployment are scraped, and they are the 3 smallest hashes of the
//!   pod identity, computed here independently (XXH3-64 of "namespace\xffpod\xff");
//! * deleting a chosen pod moves exactly one choice (the other two stay, the replacement is the
//!   next smallest hash), and no other Deployment changes;
//! * scaling a Deployment from 20 to 40 pods (one whose fresh choice would differ) keeps its
//!   chosen three, and no new pod is scraped;
//! * deleting a chosen pod of that scaled Deployment keeps the other two and adds the smallest
//!   hash not chosen among the 39 left, which differs from a fresh pick over those 39 (the
//!   deleted pod is chosen so that it does): the sampler remembers, it does not recompute.
//!
//! Also `scraper check` on bad arguments: `file:line:col` errors at the attribute or block.
//!
//! Waits use generous hang guards; nothing asserts a duration.

mod scrape_support;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::Duration;

use scrape_support::{BIN, Behavior, FaultServer, Scraper, free_port, metric, scaled_heap};
use serde_json::{Value, json};
use support::fake_kube::FakeKube;
use support::pyroscope_receiver::PyroscopeReceiver;

const NS: &str = "sample";
const DEPLOYMENTS: usize = 10;
const PODS: usize = 20;
const MAX: usize = 3;
const PATH: &str = "/debug/pprof/allocs";
/// A window in which every scraped target is requested at least once (interval 3 s).
const WINDOW: Duration = Duration::from_secs(7);
/// Hang guard for each expected state.
const GUARD: Duration = Duration::from_secs(90);

fn replicaset(d: usize) -> String {
    format!("deploy-{d}-7c9f6d")
}

fn pod_name(d: usize, i: usize) -> String {
    format!("{}-{i:03}", replicaset(d))
}

fn pod_ip(d: usize, i: usize) -> String {
    format!("127.88.{d}.{}", i + 1)
}

/// The pod as the API serves it: owned by its ReplicaSet (so discovery sets
/// `__meta_kubernetes_pod_controller_kind/name`), one container port.
fn pod(d: usize, i: usize, port: u16) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": pod_name(d, i), "namespace": NS, "uid": format!("uid-{d}-{i}"),
            "labels": {"app": format!("deploy-{d}")},
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": replicaset(d),
                "uid": format!("rs-{d}"), "controller": true
            }]
        },
        "spec": {"nodeName": "node-a", "containers": [{
            "name": "app", "image": "app:1",
            "ports": [{"name": "pprof", "containerPort": port, "protocol": "TCP"}]
        }]},
        "status": {"phase": "Running", "podIP": pod_ip(d, i), "hostIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// The stable hash discovery.sample documents (XXH3-64 of each key value followed by a 0xff
/// byte), computed here from that definition rather than by the component's code.
fn hash(pod: &str) -> u64 {
    let mut bytes = Vec::new();
    for v in [NS, pod] {
        bytes.extend_from_slice(v.as_bytes());
        bytes.push(0xff);
    }
    xxhash_rust::xxh3::xxh3_64(&bytes)
}

/// The `n` pods of `pods` with the smallest hashes.
fn smallest(pods: impl IntoIterator<Item = String>, n: usize) -> BTreeSet<String> {
    let mut v: Vec<(u64, String)> = pods.into_iter().map(|p| (hash(&p), p)).collect();
    v.sort();
    v.into_iter().take(n).map(|(_, p)| p).collect()
}

/// What the sampler keeps after `victim` (one of `chosen`) is deleted from `all`: the other
/// chosen pods and the smallest hash not chosen.
fn sticky_after(chosen: &BTreeSet<String>, all: &[String], victim: &str) -> BTreeSet<String> {
    let mut next: BTreeSet<String> = chosen.iter().filter(|p| *p != victim).cloned().collect();
    let unchosen = all
        .iter()
        .filter(|p| *p != victim && !chosen.contains(*p))
        .cloned();
    next.extend(smallest(unchosen, 1));
    next
}

/// What a sampler without memory would keep after `victim` is deleted from `all`.
fn fresh_after(all: &[String], victim: &str) -> BTreeSet<String> {
    smallest(all.iter().filter(|p| *p != victim).cloned(), MAX)
}

/// A chosen pod whose deletion gives a different choice with memory than without.
fn distinguishing_victim(chosen: &BTreeSet<String>, all: &[String]) -> Option<String> {
    chosen
        .iter()
        .find(|v| sticky_after(chosen, all, v) != fresh_after(all, v))
        .cloned()
}

fn config(receiver: &str) -> String {
    format!(
        r#"discovery.kubernetes "pods" {{
  role = "pod"
  namespaces {{
    names = ["{NS}"]
  }}
}}

discovery.sample "pods" {{
  targets  = discovery.kubernetes.pods.targets
  max      = {MAX}
  group_by = ["__meta_kubernetes_namespace", "__meta_kubernetes_pod_controller_name"]
}}

pyroscope.scrape "pods" {{
  targets                  = discovery.sample.pods.output
  forward_to               = [pyroscope.write.out.receiver]
  scrape_interval          = "3s"
  delta_profiling_duration = "2s"
  profiling_config {{
    profile.process_cpu {{
      enabled = false
    }}
    profile.goroutine {{
      enabled = false
    }}
    profile.block {{
      enabled = false
    }}
    profile.mutex {{
      enabled = false
    }}
  }}
}}

pyroscope.write "out" {{
  endpoint {{
    url = "{receiver}"
  }}
}}
"#
    )
}

/// One pprof server per pod, on the pod's own loopback address.
struct Fleet {
    port: u16,
    servers: BTreeMap<(usize, usize), FaultServer>,
}

impl Fleet {
    async fn add(&mut self, d: usize, i: usize) {
        let addr = format!("{}:{}", pod_ip(d, i), self.port);
        let server =
            FaultServer::start_at(&addr, vec![(PATH, Behavior::Profile(scaled_heap(1)))]).await;
        self.servers.insert((d, i), server);
    }

    /// Requests so far, per pod name.
    fn counts(&self) -> BTreeMap<String, usize> {
        self.servers
            .iter()
            .map(|(&(d, i), s)| (pod_name(d, i), s.requests(PATH).len()))
            .collect()
    }

    /// The pods requested during one window, by Deployment.
    async fn scraped_in_window(&self) -> BTreeMap<usize, BTreeSet<String>> {
        let before = self.counts();
        tokio::time::sleep(WINDOW).await;
        let after = self.counts();
        let mut out: BTreeMap<usize, BTreeSet<String>> = BTreeMap::new();
        for &(d, i) in self.servers.keys() {
            let p = pod_name(d, i);
            if after.get(&p) > before.get(&p) {
                out.entry(d).or_default().insert(p);
            }
        }
        out
    }
}

/// Waits (hang guard [`GUARD`]) until two consecutive windows both scrape exactly `want`;
/// returns the last window seen.
async fn settle(
    fleet: &Fleet,
    want: &BTreeMap<usize, BTreeSet<String>>,
) -> BTreeMap<usize, BTreeSet<String>> {
    let deadline = tokio::time::Instant::now() + GUARD;
    let mut good = 0;
    loop {
        let seen = fleet.scraped_in_window().await;
        good = if seen == *want { good + 1 } else { 0 };
        if good == 2 || tokio::time::Instant::now() > deadline {
            return seen;
        }
    }
}

/// Waits until the sampler reports `targets` for Deployment `d` (discovery has caught up).
async fn wait_for_group(s: &Scraper, d: usize, targets: f64) {
    let group = format!("{NS}/{}", replicaset(d));
    let labels = [
        ("component_id", "discovery.sample.pods"),
        ("group", group.as_str()),
    ];
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        let text = s.metrics().await;
        let seen = metric(&text, "discovery_sample_targets", &labels);
        let kept = metric(&text, "discovery_sample_kept", &labels);
        if seen == Some(targets) {
            assert_eq!(kept, Some(MAX as f64), "{group}: kept");
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{group}: discovery_sample_targets {seen:?}, want {targets}"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

fn describe(m: &BTreeMap<usize, BTreeSet<String>>) -> String {
    m.iter()
        .map(|(d, p)| format!("deploy-{d}: {p:?}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_pods_per_deployment_sticky_through_deletes_and_scaling() {
    let port = free_port();
    let mut fleet = Fleet {
        port,
        servers: BTreeMap::new(),
    };
    let fake = FakeKube::start().await;
    for d in 0..DEPLOYMENTS {
        for i in 0..PODS {
            fleet.add(d, i).await;
            fake.apply(pod(d, i, port));
        }
    }
    let rx = PyroscopeReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = fake.kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_string_lossy().into_owned();
    let receiver = rx.url();
    let s = Scraper::start_with_env(
        move |_| config(&receiver),
        &[("KUBECONFIG", kubeconfig.as_str())],
    )
    .await;

    // 1. Exactly three per Deployment: the three smallest hashes.
    let mut want: BTreeMap<usize, BTreeSet<String>> = (0..DEPLOYMENTS)
        .map(|d| (d, smallest((0..PODS).map(|i| pod_name(d, i)), MAX)))
        .collect();
    let seen = settle(&fleet, &want).await;
    assert_eq!(
        seen,
        want,
        "scraped pods per Deployment:\n{}\nwant:\n{}\n{}",
        describe(&seen),
        describe(&want),
        s.logs()
    );
    for d in 0..DEPLOYMENTS {
        wait_for_group(&s, d, PODS as f64).await;
    }
    // Pods never chosen were never requested at all.
    let counts = fleet.counts();
    let chosen: BTreeSet<&String> = want.values().flatten().collect();
    let stray: Vec<(&String, &usize)> = counts
        .iter()
        .filter(|(p, n)| **n > 0 && !chosen.contains(p))
        .collect();
    assert!(stray.is_empty(), "unchosen pods were scraped: {stray:?}");

    // 2. Delete a chosen pod of deploy-0: exactly one choice moves, to the next smallest hash.
    let victim = want[&0].iter().next().cloned().expect("three chosen");
    let victim_i = (0..PODS)
        .find(|&i| pod_name(0, i) == victim)
        .expect("victim index");
    fake.delete("pods", Some(NS), &victim).expect("pod existed");
    let remaining: Vec<String> = (0..PODS)
        .filter(|&i| i != victim_i)
        .map(|i| pod_name(0, i))
        .collect();
    let before = want[&0].clone();
    want.insert(0, smallest(remaining, MAX));
    wait_for_group(&s, 0, (PODS - 1) as f64).await;
    let seen = settle(&fleet, &want).await;
    assert_eq!(seen, want, "after deleting {victim}:\n{}", describe(&seen));
    let stayed = before.intersection(&want[&0]).count();
    assert_eq!(stayed, MAX - 1, "exactly one choice moves");

    // 3. Scale a Deployment whose fresh choice over 40 pods would differ from 20 to 40 pods:
    //    its chosen three stay.
    //    (Also one where step 4 below can tell a sticky sampler from a memoryless one.)
    let d = (1..DEPLOYMENTS)
        .find(|&d| {
            let chosen = smallest((0..PODS).map(|i| pod_name(d, i)), MAX);
            let all40: Vec<String> = (0..2 * PODS).map(|i| pod_name(d, i)).collect();
            smallest(all40.iter().cloned(), MAX) != chosen
                && distinguishing_victim(&chosen, &all40).is_some()
        })
        .expect("some Deployment gains smaller hashes when scaled (names are fixed)");
    for i in PODS..2 * PODS {
        fleet.add(d, i).await;
        fake.apply(pod(d, i, port));
    }
    wait_for_group(&s, d, (2 * PODS) as f64).await;
    let seen = settle(&fleet, &want).await;
    assert_eq!(seen, want, "after scaling deploy-{d}:\n{}", describe(&seen));
    let counts = fleet.counts();
    let new_scraped: Vec<String> = (PODS..2 * PODS)
        .map(|i| pod_name(d, i))
        .filter(|p| counts.get(p).copied().unwrap_or(0) > 0)
        .collect();
    assert!(new_scraped.is_empty(), "new pods scraped: {new_scraped:?}");

    // 4. Delete a chosen pod of the scaled Deployment: the two others stay and the replacement
    //    is the smallest hash not chosen among the 39 left. That is not what a sampler without
    //    memory would pick (the three smallest of the 39, which include new pods hashing below
    //    the chosen ones): the victim is picked here so that the two differ.
    let kept_before = want[&d].clone();
    let all40: Vec<String> = (0..2 * PODS).map(|i| pod_name(d, i)).collect();
    let victim = distinguishing_victim(&kept_before, &all40)
        .expect("chosen when scaling: a victim that tells sticky from memoryless choosing");
    let victim_i = (0..2 * PODS)
        .find(|&i| pod_name(d, i) == victim)
        .expect("victim index");
    fake.delete("pods", Some(NS), &victim).expect("pod existed");
    let expected = sticky_after(&kept_before, &all40, &victim);
    assert_ne!(expected, fresh_after(&all40, &victim));
    assert_eq!(expected.intersection(&kept_before).count(), MAX - 1);
    want.insert(d, expected);
    wait_for_group(&s, d, (2 * PODS - 1) as f64).await;
    let seen = settle(&fleet, &want).await;
    assert_eq!(
        seen,
        want,
        "after deleting {victim} (#{victim_i}) of scaled deploy-{d}:\n{}",
        describe(&seen)
    );

    // The component page lists the groups with their chosen pods.
    let info = s.component("discovery.sample.pods").await;
    let text = info.to_string();
    for p in &want[&d] {
        assert!(
            text.contains(p.as_str()),
            "{p} not on the component page: {text}"
        );
    }
}

/// `scraper check` refuses bad arguments with `file:line:col` at the value at fault (or the
/// block, when an argument is missing).
#[test]
fn check_reports_bad_arguments_with_positions() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "targets = []\n",
            "1:1",
            "discovery.sample needs \"max\" or \"fraction\"",
        ),
        (
            "targets = []\n  fraction = 1.5\n",
            "3:14",
            "fraction must be in (0, 1], got 1.5",
        ),
        (
            "targets = []\n  fraction = 0\n",
            "3:14",
            "fraction must be in (0, 1], got 0",
        ),
        (
            "targets = []\n  max = 0\n",
            "3:9",
            "max must be at least 1, got 0",
        ),
        (
            "targets = []\n  max = 3\n  group_by = \"app\"\n",
            "4:",
            "group_by",
        ),
        (
            "targets = []\n  max = 3\n  maximum = 3\n",
            "4:3",
            "unrecognized attribute name \"maximum\"",
        ),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let mut failures = Vec::new();
    for (n, (body, at, message)) in cases.iter().enumerate() {
        let path = dir.path().join(format!("case{n}.alloy"));
        std::fs::write(&path, format!("discovery.sample \"s\" {{\n  {body}}}\n")).expect("write");
        let out = Command::new(BIN)
            .arg("check")
            .arg(&path)
            .output()
            .expect("run scraper check");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let located = format!("{}:{at}", path.display());
        if out.status.code() != Some(1) || !stderr.contains(&located) || !stderr.contains(message) {
            failures.push(format!(
                "{body:?}: want {located} {message:?}, got:\n{stderr}"
            ));
        }
    }
    // And a good one passes.
    let path = dir.path().join("good.alloy");
    std::fs::write(
        &path,
        "discovery.sample \"s\" {\n  targets = []\n  max = 3\n  fraction = 0.5\n}\n",
    )
    .expect("write");
    let out = Command::new(BIN)
        .arg("check")
        .arg(&path)
        .output()
        .expect("run");
    if !out.status.success() {
        failures.push(format!(
            "good config refused: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
