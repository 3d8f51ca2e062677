//! `pyroscope.ebpf` end to end: `scraper run` profiles real busy programs (C and Rust built
//! with frame pointers, Go with and without symbols) and pushes `process_cpu` profiles to the
//! recording Pyroscope receiver.
//!
//! * As root the BPF sampler runs. Without root the BPF test skips with the reason, unless
//!   `SCRAPER_REQUIRE_BPF=1` (CI runs as root and sets it) makes that a failure.
//! * The Kubernetes test puts a busy process in a cgroup named like a containerd container and
//!   serves its pod from the fake API server: `discovery.kubernetes` targets match the process
//!   by container id, so its profiles carry the pod's labels.
//! * The fallback test drops every capability with `setpriv` (uid 65534) and checks that the
//!   component says why BPF is not used, samples its same-uid target with perf_event_open, and
//!   reports exactly which capability a whole-host configuration lacks.

mod scrape_support;
mod support;

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use scrape_support::{BIN, Proc, Scraper, decode, have_go};
use serde_json::json;
use support::ebpf::{self, bpf_required, compile, need_root, open_dir, rustc, spawn};
use support::fake_kube::FakeKube;
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

fn build_c(dir: &Path) -> PathBuf {
    compile(
        "gcc",
        &["-O2", "-fno-omit-frame-pointer"],
        "tests/ebpf/busy.c",
        dir,
        "busy_c",
    )
}

fn build_rust(dir: &Path) -> PathBuf {
    compile(
        &rustc(),
        &["-O", "-C", "force-frame-pointers=yes"],
        "tests/ebpf/busy.rs",
        dir,
        "busy_rs",
    )
}

fn build_go(dir: &Path, stripped: bool) -> PathBuf {
    let name = if stripped {
        "busy_go_stripped"
    } else {
        "busy_go"
    };
    ebpf::build_go("tests/go/busyloop/main.go", dir, name, stripped)
}

/// Self samples per leaf function over all `profiles`, and their total.
fn leaf_shares(profiles: &[&Received]) -> (HashMap<String, i64>, i64) {
    let mut by_leaf: HashMap<String, i64> = HashMap::new();
    let mut total = 0;
    for r in profiles {
        let p = decode(&r.raw);
        let s = |i: i64| p.string_table[i as usize].clone();
        assert_eq!(s(p.sample_type[0].r#type), "cpu");
        assert_eq!(s(p.sample_type[0].unit), "nanoseconds");
        for sample in &p.sample {
            let v = sample.value[0];
            total += v;
            let leaf = sample
                .location_id
                .first()
                .and_then(|&id| p.location.iter().find(|l| l.id == id))
                .and_then(|l| l.line.first())
                .and_then(|line| p.function.iter().find(|f| f.id == line.function_id))
                .map(|f| s(f.name))
                .unwrap_or_default();
            *by_leaf.entry(leaf).or_default() += v;
        }
    }
    (by_leaf, total)
}

/// The heaviest leaf function and its share.
fn top(profiles: &[&Received]) -> (String, f64, usize) {
    let (by_leaf, total) = leaf_shares(profiles);
    let (name, v) = by_leaf
        .into_iter()
        .max_by_key(|(_, v)| *v)
        .unwrap_or_default();
    let samples = profiles
        .iter()
        .map(|r| {
            decode(&r.raw)
                .sample
                .iter()
                .map(|s| s.value[0])
                .sum::<i64>()
        })
        .sum::<i64>();
    (name, v as f64 / total.max(1) as f64, samples as usize)
}

/// A relabel rule copying label `source` into `target`.
fn copy_rule(source: &str, target: &str) -> String {
    format!(
        "  rule {{\n    source_labels = [\"{source}\"]\n    target_label  = \"{target}\"\n  }}\n"
    )
}

/// The `pyroscope.write "out"` block every test forwards to, plus the harness's address (which
/// these configs do not otherwise use) as a comment.
fn write_block(url: &str, addr: &str) -> String {
    format!("pyroscope.write \"out\" {{\n  endpoint {{\n    url = \"{url}\"\n  }}\n}}\n// {addr}\n")
}

fn config(addr: &str, dir: &Path, receiver: &str, collect: &str) -> String {
    format!(
        r#"
discovery.process "all" {{
  refresh_interval = "1s"
}}

discovery.relabel "busy" {{
  targets = discovery.process.all.targets
  rule {{
    source_labels = ["__meta_process_exe"]
    regex         = "{dir}/busy_.*"
    action        = "keep"
  }}
  rule {{
    source_labels = ["__meta_process_exe"]
    regex         = ".*/(busy_.*)"
    target_label  = "service_name"
  }}
{pid_rule}}}

pyroscope.ebpf "busy" {{
  targets          = discovery.relabel.busy.output
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "{collect}"
  demangle         = "full"
}}

{write}"#,
        dir = dir.display(),
        pid_rule = copy_rule("__process_pid__", "pid"),
        write = write_block(receiver, addr),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bpf_profiles_name_the_hot_function_of_c_rust_and_go() {
    if !need_root("loading BPF") {
        return;
    }
    if !have_go() {
        return;
    }
    let dir = open_dir();
    let programs = [
        (build_c(dir.path()), "hot_c_spin"),
        (build_rust(dir.path()), "hot_rust_spin"),
        (build_go(dir.path(), false), "main.hotGoSpin"),
        (build_go(dir.path(), true), "main.hotGoSpin"),
    ];
    let receiver = PyroscopeReceiver::start().await;
    let procs: Vec<Proc> = programs.iter().map(|(bin, _)| spawn(&[], bin)).collect();
    let url = receiver.url();
    let scraper = Scraper::start(|addr| config(addr, dir.path(), &url, "10s")).await;

    // 20 s of profiling: two collection intervals.
    tokio::time::sleep(Duration::from_secs(21)).await;
    let info = scraper.component("pyroscope.ebpf.busy").await;
    assert_eq!(
        info["debugInfo"]["mode"],
        "bpf",
        "{info:#}\n{}",
        scraper.logs()
    );
    let received = receiver.received();
    for ((bin, hot), proc) in programs.iter().zip(&procs) {
        let service = bin.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let mine: Vec<&Received> = received
            .iter()
            .filter(|r| r.label("service_name") == Some(service))
            .collect();
        assert!(
            !mine.is_empty(),
            "no profile for {service}; got {:?}\n{info:#}\n{}",
            received.iter().map(|r| &r.labels).collect::<Vec<_>>(),
            scraper.logs()
        );
        for r in &mine {
            assert_eq!(r.label("__name__"), Some("process_cpu"), "{:?}", r.labels);
            assert_eq!(
                r.label("pid"),
                Some(proc.pid().to_string().as_str()),
                "per-process label: {:?}",
                r.labels
            );
        }
        let (name, share, _) = top(&mine);
        eprintln!(
            "{service}: top {name} {:.1}% over {} profiles",
            share * 100.0,
            mine.len()
        );
        assert!(
            name.contains(hot),
            "{service}: top function {name}, expected {hot}"
        );
        assert!(
            share > 0.8,
            "{service}: {name} has only {:.1}%",
            share * 100.0
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_capabilities_the_perf_fallback_profiles_same_uid_targets() {
    if !need_root("dropping to an unprivileged user") {
        return;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        assert!(!bpf_required(), "setpriv (util-linux) is missing");
        eprintln!("skipped: setpriv is missing");
        return;
    }
    let dir = open_dir();
    let busy = build_c(dir.path());
    // The scraper binary may live under a directory uid 65534 cannot enter.
    let bin = dir.path().join("scraper");
    std::fs::copy(BIN, &bin).expect("copy scraper");
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let nobody = [
        "setpriv",
        "--reuid=65534",
        "--regid=65534",
        "--clear-groups",
    ];
    let target = spawn(&nobody, &busy);
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let pid = target.pid();
    let scraper = Scraper::start_as(
        &nobody,
        &bin,
        |addr| {
            format!(
                r#"
pyroscope.ebpf "mine" {{
  targets          = [{{"__process_pid__" = "{pid}", "service_name" = "fallback"}}]
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "4s"
}}

pyroscope.ebpf "host" {{
  targets_only = false
  forward_to   = [pyroscope.write.out.receiver]
}}

{}"#,
                write_block(&url, addr)
            )
        },
        &[],
    )
    .await;
    let got = scraper
        .wait(Duration::from_secs(20), |_| {
            receiver
                .received()
                .iter()
                .any(|r| r.label("service_name") == Some("fallback"))
        })
        .await;
    let mine = scraper.component("pyroscope.ebpf.mine").await;
    assert!(got, "no fallback profile\n{mine:#}\n{}", scraper.logs());
    assert_eq!(mine["debugInfo"]["mode"], "perf", "{mine:#}");
    let reason = mine["debugInfo"]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("missing CAP_BPF and CAP_PERFMON"),
        "{reason}"
    );
    let received = receiver.received();
    let profiles: Vec<&Received> = received
        .iter()
        .filter(|r| r.label("service_name") == Some("fallback"))
        .collect();
    let (name, share, _) = top(&profiles);
    assert_eq!(name, "hot_c_spin", "{share}");

    // The whole-host component cannot run unprivileged, and says exactly why; the other
    // component kept working.
    let host = scraper.component("pyroscope.ebpf.host").await;
    assert_eq!(host["debugInfo"]["mode"], "failed", "{host:#}");
    let error = host["debugInfo"]["error"].as_str().unwrap_or_default();
    assert!(error.contains("CAP_PERFMON"), "{error}");
    assert_eq!(host["health"]["state"], "unhealthy", "{host:#}");
    drop(target);
}

/// A cgroup v2 leaf named like containerd's, holding one process; removed on drop.
struct ContainerCgroup {
    dir: PathBuf,
}

impl ContainerCgroup {
    fn new(id: &str, pid: u32) -> ContainerCgroup {
        let root = ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"]
            .iter()
            .map(PathBuf::from)
            .find(|p| p.join("cgroup.procs").exists())
            .expect("a cgroup v2 hierarchy");
        let parent = root.join(format!("scraper-test-{}", std::process::id()));
        let dir = parent.join(format!("cri-containerd-{id}.scope"));
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        std::fs::write(dir.join("cgroup.procs"), pid.to_string())
            .unwrap_or_else(|e| panic!("moving {pid} into {}: {e}", dir.display()));
        ContainerCgroup { dir }
    }
}

impl Drop for ContainerCgroup {
    fn drop(&mut self) {
        // The process is killed first (it is dropped before this); an empty cgroup can go.
        for _ in 0..50 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(parent) = self.dir.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_targets_label_the_profiles_of_their_containers() {
    if !need_root("creating cgroups and loading BPF") {
        return;
    }
    let dir = open_dir();
    let busy = build_c(dir.path());
    let id = "5d41402abc4b2a76b9719d911017c5925d41402abc4b2a76b9719d911017c592";
    let target = spawn(&[], &busy);
    let cgroup = ContainerCgroup::new(id, target.pid());
    let cgroup_file =
        std::fs::read_to_string(format!("/proc/{}/cgroup", target.pid())).expect("cgroup file");
    assert!(cgroup_file.contains(id), "{cgroup_file}");

    let fake = FakeKube::start().await;
    fake.apply(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "collector-0", "namespace": "otel", "uid": "uid-collector-0",
            "labels": {"app.kubernetes.io/name": "collector"}},
        "spec": {"nodeName": "node-1", "containers": [
            {"name": "otc-container", "image": "otel/opentelemetry-collector:0.112.0"}
        ]},
        "status": {"phase": "Running", "podIP": "10.1.2.3", "hostIP": "192.168.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "otc-container", "ready": true, "restartCount": 0,
                "image": "otel/opentelemetry-collector:0.112.0", "imageID": "",
                "containerID": format!("containerd://{id}")}]}
    }));
    // A pod whose container runs nowhere on this host: matches no process.
    fake.apply(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "other-0", "namespace": "otel", "uid": "uid-other-0"},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "x"}]},
        "status": {"phase": "Running", "podIP": "10.1.2.4",
            "containerStatuses": [{"name": "c", "ready": true, "restartCount": 0, "image": "x",
                "imageID": "", "containerID": format!("containerd://{}", "e".repeat(64))}]}
    }));
    let kubeconfig = fake.kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_string_lossy().into_owned();
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let scraper = Scraper::start_with_env(
        |addr| {
            format!(
                r#"
discovery.kubernetes "pods" {{
  role = "pod"
}}

// What seed configs do with the k8sattributes processor: pod metadata as profile labels.
discovery.relabel "pods" {{
  targets = discovery.kubernetes.pods.targets
{}{}{}}}

pyroscope.ebpf "pods" {{
  targets          = discovery.relabel.pods.output
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "3s"
}}

{}"#,
                copy_rule("__meta_kubernetes_namespace", "namespace"),
                copy_rule("__meta_kubernetes_pod_name", "pod"),
                copy_rule("__meta_kubernetes_pod_container_name", "container"),
                write_block(&url, addr)
            )
        },
        &[("KUBECONFIG", kubeconfig.as_str())],
    )
    .await;
    let got = scraper
        .wait(Duration::from_secs(25), |_| {
            receiver
                .received()
                .iter()
                .any(|r| r.label("pod") == Some("collector-0"))
        })
        .await;
    let info = scraper.component("pyroscope.ebpf.pods").await;
    assert!(got, "no profile for the pod\n{info:#}\n{}", scraper.logs());
    let received = receiver.received();
    let mine: Vec<&Received> = received
        .iter()
        .filter(|r| r.label("pod") == Some("collector-0"))
        .collect();
    for r in &mine {
        assert_eq!(r.label("namespace"), Some("otel"), "{:?}", r.labels);
        assert_eq!(
            r.label("container"),
            Some("otc-container"),
            "{:?}",
            r.labels
        );
        assert_eq!(
            r.label("service_name"),
            Some("ebpf/otel/otc-container"),
            "{:?}",
            r.labels
        );
        assert_eq!(r.label("__name__"), Some("process_cpu"));
    }
    let (name, _, _) = top(&mine);
    assert_eq!(name, "hot_c_spin");
    assert!(
        received
            .iter()
            .all(|r| r.label("pod") == Some("collector-0")),
        "only the pod's process is profiled: {:?}",
        received.iter().map(|r| &r.labels).collect::<Vec<_>>()
    );
    drop(scraper);
    drop(target);
    drop(cgroup);
}
