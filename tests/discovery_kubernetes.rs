//! `discovery.kubernetes` against the in-repo fake API server (tests/support/fake_kube.rs),
//! through the real kube-rs client stack: target sets, changes, relists without flapping, an
//! API server that stops answering and expired resource versions (health, logs' metrics and
//! recovery), what is sent to the server, credentials, and `scraper discover`.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scrape_support::{Behavior, FaultServer, captured};
use scraper::components::discovery::kubernetes::{Arguments, Kubernetes, Timeouts};
use scraper::components::pyroscope::scrape::profiling::ProfilingConfig;
use scraper::components::pyroscope::scrape::target::DiscoveredTarget;
use scraper::components::pyroscope::scrape::{Scrape, ScrapeOptions};
use scraper::httpclient::{HttpClientConfig, WithHttpClient};
use scraper::profiles::{Appendable, Profile, Receiver};
use scraper::runtime::health::{Health, HealthState};
use scraper::runtime::{Component, ComponentOptions, ExportsHandle};
use scraper::syntax::decode;
use scraper::syntax::eval::{Scope, eval_body};
use scraper::syntax::parser::parse_file;
use scraper::syntax::types::{CapsuleRef, Duration as AlloyDuration};
use scraper::syntax::value::Value;
use serde_json::json;
use support::fake_kube::FakeKube;
use tokio_util::sync::CancellationToken;

type Target = BTreeMap<String, String>;

/// The hang guard of every wait: far beyond what any step needs, so that only a hang fails.
const WAIT: Duration = Duration::from_secs(30);

/// Timeouts short enough to run out within a test: a request answers within 1 s, a watch ends
/// by its server after 2 s and is given up 1 s later.
const FAST: Timeouts = Timeouts {
    request: Duration::from_secs(1),
    watch: Duration::from_secs(2),
    watch_margin: Duration::from_secs(1),
    retry_initial: Duration::from_millis(50),
    retry_max: Duration::from_millis(200),
};

fn decode_args(src: &str) -> Arguments {
    let (file, diags) = parse_file(src);
    assert!(diags.is_empty(), "{diags:?}");
    let body = eval_body(&file.body, &Scope::stdlib()).expect("eval");
    decode::from_body(&body).unwrap_or_else(|d| panic!("decode: {d:?}"))
}

/// A running component and a handle on its exports.
struct Running {
    exports: ExportsHandle,
    metrics: scraper::runtime::metrics::MetricsRegistry,
    component: Arc<Kubernetes>,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Running {
    fn start(src: &str) -> Running {
        Running::start_with(src, Timeouts::default())
    }

    fn start_with(src: &str, timeouts: Timeouts) -> Running {
        let mut args = decode_args(src);
        args.inner.timeouts = timeouts;
        let opts = ComponentOptions::standalone(
            "discovery.kubernetes.test",
            "discovery.kubernetes",
            Kubernetes::initial_exports(),
        );
        let exports = opts.exports.clone();
        let metrics = opts.metrics.clone();
        let component = Arc::new(Kubernetes::build(opts, args).expect("build"));
        let stop = CancellationToken::new();
        tokio::spawn(component.clone().run(stop.clone()));
        Running {
            exports,
            metrics,
            component,
            stop,
        }
    }

    fn targets(&self) -> Vec<Target> {
        let Value::Object(m) = self.exports.current() else {
            panic!("exports are not an object")
        };
        decode::from_value(&m["targets"]).expect("targets are list(map(string))")
    }

    fn addresses(&self) -> Vec<String> {
        self.targets()
            .iter()
            .map(|t| t["__address__"].clone())
            .collect()
    }

    fn debug(&self) -> serde_json::Value {
        self.component.debug_info().expect("debug info")
    }

    fn publications(&self) -> u64 {
        self.debug()["publications"].as_u64().expect("publications")
    }

    /// Waits until the component reports `state`, and returns that report.
    async fn until_health(&self, state: HealthState) -> Health {
        let start = Instant::now();
        loop {
            if let Some(h) = self.component.health().filter(|h| h.state == state) {
                return h;
            }
            assert!(
                start.elapsed() < WAIT,
                "not {state} within {WAIT:?}: {:?}\ndebug: {:#}",
                self.component.health(),
                self.debug()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Waits until `n` publications have been made.
    async fn until_publications(&self, n: u64) {
        let start = Instant::now();
        while self.publications() < n {
            assert!(
                start.elapsed() < WAIT,
                "no publication {n}: {:#}",
                self.debug()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A series of this component's `discovery_kubernetes_*` / `prometheus_sd_*` metrics.
    fn metric(&self, name: &str, extra: &str) -> f64 {
        let text = self.metrics.encode().expect("metrics");
        let series = format!(
            "{name}{{component_id=\"discovery.kubernetes.test\",component_path=\"/\"{extra}}} "
        );
        text.lines()
            .find_map(|l| l.strip_prefix(&series))
            .map_or(0.0, |v| v.trim().parse().expect("a number"))
    }

    fn failures(&self, reason: &str) -> f64 {
        self.metric(
            "discovery_kubernetes_failures_total",
            &format!(",reason=\"{reason}\""),
        )
    }

    /// Waits until `f` holds for the targets; returns how long that took.
    async fn until(&self, timeout: Duration, f: impl Fn(&[Target]) -> bool) -> Duration {
        let start = Instant::now();
        loop {
            if f(&self.targets()) {
                return start.elapsed();
            }
            if start.elapsed() > timeout {
                panic!(
                    "condition not met within {timeout:?}; targets: {:#?}\ndebug: {:#?}",
                    self.addresses(),
                    self.component.debug_info()
                );
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn pod(
    ns: &str,
    name: &str,
    ip: &str,
    labels: serde_json::Value,
    ports: &[i32],
) -> serde_json::Value {
    let ports: Vec<_> = ports
        .iter()
        .map(|p| json!({"containerPort": p, "protocol": "TCP"}))
        .collect();
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": format!("uid-{name}"), "labels": labels},
        "spec": {"nodeName": "node-a", "containers": [{"name": "app", "image": "app:1", "ports": ports}]},
        "status": {"phase": "Running", "podIP": ip, "hostIP": "192.168.0.1",
            "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

fn config(fake: &FakeKube, extra: &str) -> String {
    format!(
        "role = \"pod\"\napi_server = \"{}\"\npublish_interval = \"1s\"\n{extra}\n",
        fake.url()
    )
}

#[tokio::test]
async fn realistic_pods_become_prometheus_targets() {
    let fake = FakeKube::start().await;
    fake.apply(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "collector-0", "namespace": "otel", "uid": "u-1",
            "labels": {"app.kubernetes.io/name": "collector"},
            "annotations": {"opentelemetry-operator-config/sha256": "abc"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "collector",
                "uid": "s", "controller": true}]},
        "spec": {"nodeName": "node-a",
            "containers": [
                {"name": "otc", "image": "otel:1", "ports": [
                    {"name": "pprof", "containerPort": 1777, "protocol": "TCP"},
                    {"name": "metrics", "containerPort": 8888, "protocol": "TCP"}]},
                {"name": "sidecar", "image": "busybox"}],
            "initContainers": [{"name": "init", "image": "busybox"}]},
        "status": {"phase": "Running", "podIP": "fd00::5", "hostIP": "192.168.0.1",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [{"name": "otc", "containerID": "containerd://abc", "image": "otel:1",
                "imageID": "x", "ready": true, "restartCount": 0}]}
    }));
    fake.apply(pod("otel", "pending", "", json!({}), &[80]));
    let d = Running::start(&config(&fake, ""));
    d.until(Duration::from_secs(10), |t| t.len() == 4).await;
    let t = d.targets();
    let group = [
        ("__meta_kubernetes_namespace", "otel"),
        ("__meta_kubernetes_pod_name", "collector-0"),
        ("__meta_kubernetes_pod_ip", "fd00::5"),
        ("__meta_kubernetes_pod_ready", "true"),
        ("__meta_kubernetes_pod_phase", "Running"),
        ("__meta_kubernetes_pod_node_name", "node-a"),
        ("__meta_kubernetes_pod_host_ip", "192.168.0.1"),
        ("__meta_kubernetes_pod_uid", "u-1"),
        ("__meta_kubernetes_pod_controller_kind", "StatefulSet"),
        ("__meta_kubernetes_pod_controller_name", "collector"),
        (
            "__meta_kubernetes_pod_label_app_kubernetes_io_name",
            "collector",
        ),
        (
            "__meta_kubernetes_pod_labelpresent_app_kubernetes_io_name",
            "true",
        ),
        (
            "__meta_kubernetes_pod_annotation_opentelemetry_operator_config_sha256",
            "abc",
        ),
        (
            "__meta_kubernetes_pod_annotationpresent_opentelemetry_operator_config_sha256",
            "true",
        ),
    ];
    let with = |extra: &[(&str, &str)]| -> Target {
        group
            .iter()
            .chain(extra)
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let otc = [
        ("__meta_kubernetes_pod_container_name", "otc"),
        ("__meta_kubernetes_pod_container_id", "containerd://abc"),
        ("__meta_kubernetes_pod_container_image", "otel:1"),
        ("__meta_kubernetes_pod_container_init", "false"),
        ("__meta_kubernetes_pod_container_port_protocol", "TCP"),
    ];
    let port = |addr, name, number| {
        let mut l = otc.to_vec();
        l.extend([
            ("__address__", addr),
            ("__meta_kubernetes_pod_container_port_name", name),
            ("__meta_kubernetes_pod_container_port_number", number),
        ]);
        with(&l)
    };
    let want = vec![
        port("[fd00::5]:1777", "pprof", "1777"),
        port("[fd00::5]:8888", "metrics", "8888"),
        with(&[
            ("__address__", "fd00::5"),
            ("__meta_kubernetes_pod_container_name", "sidecar"),
            ("__meta_kubernetes_pod_container_image", "busybox"),
            ("__meta_kubernetes_pod_container_init", "false"),
        ]),
        with(&[
            ("__address__", "fd00::5"),
            ("__meta_kubernetes_pod_container_name", "init"),
            ("__meta_kubernetes_pod_container_image", "busybox"),
            ("__meta_kubernetes_pod_container_init", "true"),
        ]),
    ];
    assert_eq!(t, want);
}

/// Each change (add, modify, delete) reaches the targets as one publication, with Alloy's
/// 5 s publication interval. Waiting is on the publication itself; the time it takes is only
/// bounded by the hang guard.
#[tokio::test]
async fn pod_changes_reach_targets_one_publication_each() {
    let fake = FakeKube::start().await;
    fake.apply(pod(
        "default",
        "a",
        "10.0.0.1",
        json!({"app": "x"}),
        &[8080],
    ));
    let src = format!("role = \"pod\"\napi_server = \"{}\"\n", fake.url());
    let d = Running::start(&src);
    d.until_publications(1).await;
    assert_eq!(d.addresses(), ["10.0.0.1:8080"]);

    // Nothing else changes between the steps, so each change is exactly one publication,
    // and the targets are read after it (exports are published before it is counted).
    fake.apply(pod(
        "default",
        "b",
        "10.0.0.2",
        json!({"app": "x"}),
        &[8080],
    ));
    d.until_publications(2).await;
    assert_eq!(d.addresses(), ["10.0.0.1:8080", "10.0.0.2:8080"]);

    fake.apply(pod(
        "default",
        "b",
        "10.0.0.2",
        json!({"app": "y"}),
        &[8080],
    ));
    d.until_publications(3).await;
    let targets = d.targets();
    let labels: Vec<&str> = targets
        .iter()
        .map(|t| t["__meta_kubernetes_pod_label_app"].as_str())
        .collect();
    assert_eq!(labels, ["x", "y"]);

    fake.delete("pods", Some("default"), "a");
    d.until_publications(4).await;
    assert_eq!(d.addresses(), ["10.0.0.2:8080"]);
    assert_eq!(d.publications(), 4, "one publication per change");
}

#[tokio::test]
async fn a_burst_of_events_is_one_publication() {
    let fake = FakeKube::start().await;
    let d = Running::start(&config(&fake, ""));
    d.until(Duration::from_secs(10), |t| t.is_empty()).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let before = d.component.debug_info().expect("debug")["publications"]
        .as_u64()
        .expect("n");
    for i in 0..50 {
        fake.apply(pod(
            "default",
            &format!("p{i}"),
            &format!("10.0.1.{i}"),
            json!({}),
            &[80],
        ));
    }
    d.until(Duration::from_secs(5), |t| t.len() == 50).await;
    let after = d.component.debug_info().expect("debug")["publications"]
        .as_u64()
        .expect("n");
    assert!(
        after - before <= 2,
        "{} publications for one burst",
        after - before
    );
}

/// Samples the targets every 10 ms until `done`, failing if they were ever empty.
async fn never_empty(d: &Running, timeout: Duration, done: impl Fn(&[Target]) -> bool) {
    let start = Instant::now();
    loop {
        let t = d.targets();
        assert!(
            !t.is_empty(),
            "targets were empty {:?} into the outage",
            start.elapsed()
        );
        if done(&t) {
            return;
        }
        assert!(
            start.elapsed() < timeout,
            "not recovered: {:?}",
            d.addresses()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn gone_410_relists_without_an_empty_target_set() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    fake.apply(pod("default", "b", "10.0.0.2", json!({}), &[80]));
    let d = Running::start(&config(&fake, ""));
    d.until(Duration::from_secs(10), |t| t.len() == 2).await;
    let lists_before = fake.requests().iter().filter(|r| !r.is_watch()).count();

    // While the watch is expired, `b` goes and `c` comes: only a relist can tell.
    fake.expire_watches();
    fake.delete("pods", Some("default"), "b");
    fake.apply(pod("default", "c", "10.0.0.3", json!({}), &[80]));
    fake.expire_watches();
    never_empty(&d, Duration::from_secs(15), |t| {
        let a: Vec<&str> = t.iter().map(|t| t["__address__"].as_str()).collect();
        a == ["10.0.0.1:80", "10.0.0.3:80"]
    })
    .await;
    let lists_after = fake.requests().iter().filter(|r| !r.is_watch()).count();
    assert!(lists_after > lists_before, "no relist after 410 Gone");
    let text = d.metrics.encode().expect("metrics");
    let has = |needle: &str| text.lines().any(|l| l.contains(needle));
    assert!(
        has(
            r#"prometheus_sd_kubernetes_events_total{component_id="discovery.kubernetes.test",component_path="/",role="pod",event="add"} 3"#
        ),
        "{text}"
    );
    assert!(
        has(
            r#"prometheus_sd_kubernetes_events_total{component_id="discovery.kubernetes.test",component_path="/",role="pod",event="delete"} 1"#
        ),
        "{text}"
    );
    assert!(
        text.lines().any(
            |l| l.starts_with("prometheus_sd_kubernetes_failures_total{") && !l.ends_with(" 0")
        ),
        "the 410 is counted as a failure: {text}"
    );
}

#[tokio::test]
async fn a_dropped_connection_rewatches_without_an_empty_target_set() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    let d = Running::start(&config(&fake, ""));
    d.until(Duration::from_secs(10), |t| t.len() == 1).await;
    let watches_before = fake.requests().iter().filter(|r| r.is_watch()).count();
    fake.drop_watches();
    fake.apply(pod("default", "b", "10.0.0.2", json!({}), &[80]));
    never_empty(&d, Duration::from_secs(15), |t| t.len() == 2).await;
    let watches_after = fake.requests().iter().filter(|r| r.is_watch()).count();
    assert!(
        watches_after > watches_before,
        "no new watch after the drop"
    );
}

#[tokio::test]
async fn api_errors_back_off_keep_the_last_targets_and_clear_on_recovery() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    let quick_retries = Timeouts {
        retry_initial: Duration::from_millis(50),
        retry_max: Duration::from_millis(200),
        ..Timeouts::default()
    };
    let d = Running::start_with(&config(&fake, ""), quick_retries);
    d.until(WAIT, |t| t.len() == 1).await;
    fake.fail_next(500, 3);
    fake.expire_watches();
    // The relist fails three times; targets stay until it succeeds.
    fake.apply(pod("default", "b", "10.0.0.2", json!({}), &[80]));
    never_empty(&d, WAIT, |t| t.len() == 2).await;
    // The failures are counted by reason; with the list done, nothing is failing any more.
    assert_eq!(d.failures("expired"), 1.0);
    assert_eq!(d.failures("list"), 3.0);
    assert_eq!(d.metric("prometheus_sd_kubernetes_failures_total", ""), 4.0);
    assert_eq!(d.metric("discovery_kubernetes_watches_failing", ""), 0.0);
    let info = d.debug();
    assert!(info["last_error"].is_null(), "{info}");
    let health = d.component.health().expect("a report");
    assert_eq!(health.state, HealthState::Healthy, "{health:?}");
}

/// Profiles arriving at a `pyroscope.scrape` receiver, dropped: the test reads the scrape
/// component's own status.
struct Discard;

impl Appendable for Discard {
    fn append(&self, _: Vec<Profile>) {}
}

/// Runs `pyroscope.scrape` on `targets` as discovery exported them (the test stands in for the
/// controller's wiring) and waits until the one at `instance` has been scraped successfully.
async fn scrape_until_up(targets: &[Target], instance: &str) {
    let mut profiling = ProfilingConfig::default();
    profiling.process_cpu.enabled = false;
    profiling.goroutine.enabled = false;
    profiling.mutex.enabled = false;
    profiling.block.enabled = false;
    let args = WithHttpClient {
        inner: ScrapeOptions {
            targets: targets.iter().map(DiscoveredTarget::from).collect(),
            forward_to: vec![CapsuleRef(Arc::new(Receiver::new(Discard)))],
            job_name: "kubernetes".into(),
            params: BTreeMap::new(),
            scrape_interval: AlloyDuration::from_secs(1),
            scrape_timeout: AlloyDuration::from_secs(1),
            delta_profiling_duration: AlloyDuration::from_secs(14),
            scheme: "http".into(),
            profiling_config: profiling,
            clustering: None,
            body_size_limit: 64 << 20,
            label_limit: 0,
            label_name_length_limit: 0,
            label_value_length_limit: 0,
        },
        http: HttpClientConfig::default(),
    };
    let opts = ComponentOptions::standalone(
        "pyroscope.scrape.test",
        "pyroscope.scrape",
        Scrape::initial_exports(),
    );
    let scrape = Arc::new(Scrape::build(opts, args).expect("build scrape"));
    let stop = CancellationToken::new();
    tokio::spawn(scrape.clone().run(stop.clone()));
    let up = |scrape: &Scrape| {
        let info = scrape.debug_info().expect("scrape debug info");
        info["targets"].as_array().is_some_and(|ts| {
            ts.iter()
                .any(|t| t["labels"]["instance"] == instance && t["health"] == "up")
        })
    };
    let start = Instant::now();
    while !up(&scrape) {
        assert!(
            start.elapsed() < WAIT,
            "{instance} not scraped: {:#}",
            scrape.debug_info().unwrap_or_default()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.cancel();
}

/// The watch connection stops answering (a hung API server, a proxy that lost its state):
/// the open watch goes silent and new watch requests are accepted and never answered. The
/// silent watch is given up at its bound, every new request at the request timeout; the
/// component is unhealthy meanwhile, keeps its targets, and once the server answers again it
/// recovers within one timeout period and finds the pod added meanwhile, which is then scraped.
#[tokio::test]
async fn a_watch_that_stops_answering_recovers_within_one_timeout_period() {
    // Pod `b` is served by a profiling endpoint on 127.0.0.1.
    let server = FaultServer::start(vec![(
        "/debug/pprof/allocs",
        Behavior::Profile(captured("goapp-heap-1.pb.gz")),
    )])
    .await;
    let b_port = i32::from(server.addr.port());
    let b_address = format!("127.0.0.1:{b_port}");
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    let d = Running::start_with(&config(&fake, ""), FAST);
    d.until(WAIT, |t| t.len() == 1).await;
    d.until_health(HealthState::Healthy).await;

    fake.stall_watches();
    fake.apply(pod("default", "b", "127.0.0.1", json!({}), &[b_port]));
    let stuck = d.until_health(HealthState::Unhealthy).await;
    assert!(
        stuck.message.contains("1 of 1 watches failing")
            && stuck.message.contains("pod (all namespaces): timeout: "),
        "{stuck:?}"
    );
    assert_eq!(d.addresses(), ["10.0.0.1:80"], "targets are kept");
    assert_eq!(d.metric("discovery_kubernetes_watches_failing", ""), 1.0);
    let info = d.debug();
    assert!(
        info["last_error"]
            .as_str()
            .is_some_and(|e| e.starts_with("pod (all namespaces): timeout: ")),
        "{info}"
    );

    fake.unstall();
    // Read after the stall is lifted: from here, only a request the fake was already holding
    // can still time out (one per watch); the next one is answered. So "within one timeout
    // period" is: at most one more timeout before recovery.
    let timeouts = d.failures("timeout");
    assert!(timeouts >= 1.0);
    d.until(WAIT, |t| t.len() == 2).await;
    assert_eq!(
        d.addresses(),
        ["10.0.0.1:80".to_string(), b_address.clone()]
    );
    d.until_health(HealthState::Healthy).await;
    assert!(
        d.failures("timeout") <= timeouts + 1.0,
        "recovery took more than one timeout: {} then {}",
        timeouts,
        d.failures("timeout")
    );
    assert_eq!(d.metric("discovery_kubernetes_watches_failing", ""), 0.0);
    let info = d.debug();
    assert!(info["last_error"].is_null(), "{info}");
    assert_eq!(info["failing_watches"], json!([]), "{info}");

    scrape_until_up(&d.targets(), &b_address).await;
}

/// A list that is accepted and never answered times out; before the first list the component
/// is unhealthy waiting for it, and once lists answer it syncs.
#[tokio::test]
async fn a_list_that_never_answers_times_out_and_is_retried() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    fake.stall_lists();
    let d = Running::start_with(&config(&fake, ""), FAST);
    let waiting = d.until_health(HealthState::Unhealthy).await;
    assert!(
        waiting
            .message
            .starts_with("waiting for the initial list: ")
            && waiting
                .message
                .contains("timeout: list not answered within 1s"),
        "{waiting:?}"
    );
    assert!(d.targets().is_empty());
    fake.unstall();
    d.until(WAIT, |t| t.len() == 1).await;
    d.until_health(HealthState::Healthy).await;
    assert!(d.failures("timeout") >= 1.0);
    assert!(d.debug()["last_error"].is_null());
}

/// A watch restarted from a resource version the server has compacted away is answered 410
/// Gone: as the HTTP status of the watch request (`as_status`), or as 200 with an `ERROR`
/// event. Either way discovery relists, and the relist reconciles the cache: the pod deleted
/// while it was not watching goes, the one added appears. A 410 is routine, not an outage.
async fn watch_restart_on_an_expired_version_relists(as_status: bool) {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    fake.apply(pod("default", "b", "10.0.0.2", json!({}), &[80]));
    let d = Running::start(&config(&fake, ""));
    d.until(WAIT, |t| t.len() == 2).await;
    let lists = |fake: &FakeKube| fake.requests().iter().filter(|r| !r.is_watch()).count();
    let lists_before = lists(&fake);

    // The watch goes silent so that it misses the changes, the log is compacted past them, and
    // the connection is cut: the client must resume from a version that is gone.
    fake.stall_watches();
    fake.delete("pods", Some("default"), "b");
    fake.apply(pod("default", "c", "10.0.0.3", json!({}), &[80]));
    fake.compact();
    let compacted = fake.resource_version();
    fake.set_expired_as_status(as_status);
    fake.unstall();
    fake.drop_watches();

    never_empty(&d, WAIT, |t| {
        let a: Vec<&str> = t.iter().map(|t| t["__address__"].as_str()).collect();
        a == ["10.0.0.1:80", "10.0.0.3:80"]
    })
    .await;
    assert!(lists(&fake) > lists_before, "no relist after 410 Gone");
    assert_eq!(d.failures("expired"), 1.0);
    // The first watch, and its resumption after the cut, from the version now compacted away.
    let from_old_version = fake
        .requests()
        .iter()
        .filter(|r| r.is_watch())
        .filter_map(|r| r.param("resourceVersion")?.parse::<u64>().ok())
        .filter(|v| *v < compacted)
        .count();
    assert!(
        from_old_version >= 2,
        "the watch was not resumed from its old version"
    );
    d.until_health(HealthState::Healthy).await;
    assert!(d.debug()["last_error"].is_null());
}

#[tokio::test]
async fn gone_as_the_http_status_of_a_watch_restart_relists() {
    watch_restart_on_an_expired_version_relists(true).await;
}

#[tokio::test]
async fn gone_as_an_error_event_of_a_watch_restart_relists() {
    watch_restart_on_an_expired_version_relists(false).await;
}

#[tokio::test]
async fn namespaces_and_selectors_are_sent_to_the_server() {
    let fake = FakeKube::start().await;
    fake.apply(pod("otel", "a", "10.0.0.1", json!({"app": "c"}), &[80]));
    fake.apply(pod("otel", "b", "10.0.0.2", json!({"app": "other"}), &[80]));
    fake.apply(pod(
        "kube-system",
        "c",
        "10.0.0.3",
        json!({"app": "c"}),
        &[80],
    ));
    let mut on_other_node = pod("otel", "d", "10.0.0.4", json!({"app": "c"}), &[80]);
    on_other_node["spec"]["nodeName"] = json!("node-b");
    fake.apply(on_other_node);
    let extra = r#"
namespaces {
  names = ["otel", "monitoring"]
}
selectors {
  role  = "pod"
  label = "app=c"
  field = "spec.nodeName=node-a"
}
"#;
    let d = Running::start(&config(&fake, extra));
    d.until(Duration::from_secs(10), |t| t.len() == 1).await;
    assert_eq!(d.addresses(), ["10.0.0.1:80"]);
    let reqs = fake.requests();
    for ns in ["otel", "monitoring"] {
        let path = format!("/api/v1/namespaces/{ns}/pods");
        for watch in [false, true] {
            let r = reqs
                .iter()
                .find(|r| r.path == path && r.is_watch() == watch)
                .unwrap_or_else(|| {
                    panic!(
                        "no {} of {path}: {reqs:#?}",
                        if watch { "watch" } else { "list" }
                    )
                });
            assert_eq!(r.param("labelSelector"), Some("app=c"), "{r:?}");
            assert_eq!(
                r.param("fieldSelector"),
                Some("spec.nodeName=node-a"),
                "{r:?}"
            );
        }
    }
    assert!(
        !reqs.iter().any(|r| r.path == "/api/v1/pods"),
        "an all-namespaces request was made"
    );
}

#[tokio::test]
async fn credentials_from_the_http_client_and_from_a_kubeconfig() {
    let fake = FakeKube::start().await;
    fake.apply(pod("default", "a", "10.0.0.1", json!({}), &[80]));
    let d = Running::start(&config(&fake, "bearer_token = \"s3cret\""));
    d.until(Duration::from_secs(10), |t| t.len() == 1).await;
    let auth: Vec<_> = fake
        .requests()
        .iter()
        .map(|r| r.header("authorization").map(str::to_string))
        .collect();
    assert!(
        auth.iter().all(|a| a.as_deref() == Some("Bearer s3cret")),
        "{auth:?}"
    );
    drop(d);

    fake.clear_requests();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = fake.kubeconfig(dir.path());
    let src = format!(
        "role = \"pod\"\nkubeconfig_file = \"{}\"\npublish_interval = \"1s\"\n",
        kubeconfig.display()
    );
    let d = Running::start(&src);
    d.until(Duration::from_secs(10), |t| t.len() == 1).await;
    let reqs = fake.requests();
    assert!(
        reqs.iter()
            .any(|r| r.header("authorization") == Some("Bearer fake-token")),
        "{reqs:#?}"
    );
}

#[test]
fn invalid_arguments_are_rejected_with_prometheus_messages() {
    let cases = [
        (
            "role = \"ingresses\"",
            "unknown Kubernetes SD role \"ingresses\"",
        ),
        (
            "role = \"pod\"\napi_server = \"http://a\"\nkubeconfig_file = \"/k\"",
            "cannot use 'kubeconfig_file' and 'api_server' simultaneously",
        ),
        (
            "role = \"pod\"\nselectors {\n role = \"service\"\n}",
            "pod role supports only pod selectors",
        ),
        (
            "role = \"pod\"\nselectors {\n role = \"pod\"\n}\nselectors {\n role = \"pod\"\n}",
            "duplicated selector role: pod",
        ),
    ];
    for (src, want) in cases {
        let (file, diags) = parse_file(src);
        assert!(diags.is_empty());
        let body = eval_body(&file.body, &Scope::stdlib()).expect("eval");
        let errs = decode::from_body::<Arguments>(&body)
            .err()
            .unwrap_or_default();
        assert!(
            errs.iter().any(|d| d.message.contains(want)),
            "{src}: want {want:?}, got {errs:?}"
        );
    }
    // HTTP client settings without api_server would be ignored: refused at build.
    let args = decode_args("role = \"pod\"\nbearer_token = \"x\"");
    let opts =
        ComponentOptions::standalone("d", "discovery.kubernetes", Kubernetes::initial_exports());
    let err = Kubernetes::build(opts, args)
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.contains("provide the 'api_server' URL explicitly"),
        "{err}"
    );
}

#[tokio::test]
async fn discover_command_prints_targets_and_what_relabel_keeps() {
    let fake = FakeKube::start().await;
    fake.apply(pod(
        "otel",
        "keep",
        "10.0.0.1",
        json!({"app": "c"}),
        &[1777, 8888],
    ));
    fake.apply(pod(
        "otel",
        "drop",
        "10.0.0.2",
        json!({"app": "other"}),
        &[1777],
    ));
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("c.alloy");
    std::fs::write(
        &cfg,
        format!(
            r#"discovery.kubernetes "pods" {{
  role       = "pod"
  api_server = "{}"
}}
discovery.relabel "keep" {{
  targets = discovery.kubernetes.pods.targets
  rule {{
    source_labels = ["__meta_kubernetes_pod_label_app"]
    regex         = "c"
    action        = "keep"
  }}
}}
"#,
            fake.url()
        ),
    )
    .expect("write config");
    let cfg2 = cfg.clone();
    let run = move |extra: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_scraper"))
            .args(["discover", "--config"])
            .arg(&cfg2)
            .args([
                "--component",
                "discovery.kubernetes.pods",
                "--timeout",
                "10",
            ])
            .args(extra)
            .env_remove("KUBERNETES_SERVICE_HOST")
            .output()
            .expect("run scraper discover");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let targets: Vec<Target> = serde_json::from_slice(&out.stdout).expect("JSON targets");
        (targets, String::from_utf8_lossy(&out.stderr).into_owned())
    };
    let (all, summary) = tokio::task::spawn_blocking(move || {
        let all = run(&[]);
        let kept = run(&["--relabel", "discovery.relabel.keep"]);
        (all, kept)
    })
    .await
    .expect("join");
    assert_eq!(all.0.len(), 3, "{}", all.1);
    assert_eq!(summary.0.len(), 2, "{}", summary.1);
    assert!(summary.1.contains("kept 2 of 3"), "{}", summary.1);

    // A forbidden list names the problem instead of printing nothing.
    fake.fail_next(403, 1000);
    let out = tokio::task::spawn_blocking({
        let cfg = cfg.clone();
        move || {
            Command::new(env!("CARGO_BIN_EXE_scraper"))
                .args(["discover", "--config"])
                .arg(&cfg)
                .args(["--component", "discovery.kubernetes.pods", "--timeout", "3"])
                .output()
                .expect("run")
        }
    })
    .await
    .expect("join");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("did not complete") && err.contains("403"),
        "{err}"
    );
}
