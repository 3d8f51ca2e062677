//! `pyroscope.scrape` in process: loops keyed by target identity survive republishes with
//! their delta state, settings changes keep them too, identity changes start over, removed
//! targets take their metric series with them, label limits keep a target from being
//! scraped, and a body the memory budget cannot hold marks its target down.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use scrape_support::{Behavior, FaultServer, captured, metric};
use scraper::budget::Budget;
use scraper::components::pyroscope::scrape::profiling::ProfilingConfig;
use scraper::components::pyroscope::scrape::target::DiscoveredTarget;
use scraper::components::pyroscope::scrape::{Arguments, Scrape, ScrapeOptions};
use scraper::httpclient::{HttpClientConfig, WithHttpClient};
use scraper::profiles::{Appendable, Profile, Receiver};
use scraper::runtime::{Component, ComponentOptions, HealthState, Services};
use scraper::syntax::types::{CapsuleRef, Duration as AlloyDuration};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
struct Collect(Arc<Mutex<Vec<Profile>>>);

impl Appendable for Collect {
    fn append(&self, profiles: Vec<Profile>) {
        self.0.lock().expect("lock").extend(profiles);
    }
}

impl Collect {
    fn of(&self, service: &str) -> Vec<Profile> {
        self.0
            .lock()
            .expect("lock")
            .iter()
            .filter(|p| p.label("service_name") == Some(service))
            .cloned()
            .collect()
    }
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn memory_only() -> ProfilingConfig {
    let mut pc = ProfilingConfig::default();
    pc.process_cpu.enabled = false;
    pc.goroutine.enabled = false;
    pc.mutex.enabled = false;
    pc.block.enabled = false;
    pc
}

fn args(targets: Vec<BTreeMap<String, String>>, rx: &Arc<Receiver>, interval: u64) -> Arguments {
    WithHttpClient {
        inner: ScrapeOptions {
            targets: targets.iter().map(DiscoveredTarget::from).collect(),
            forward_to: vec![CapsuleRef(rx.clone())],
            job_name: String::new(),
            params: BTreeMap::new(),
            scrape_interval: AlloyDuration::from_secs(interval),
            scrape_timeout: AlloyDuration::from_secs(1),
            delta_profiling_duration: AlloyDuration::from_secs(14),
            scheme: "http".into(),
            profiling_config: memory_only(),
            clustering: None,
            body_size_limit: 64 << 20,
            label_limit: 0,
            label_name_length_limit: 0,
            label_value_length_limit: 0,
        },
        http: HttpClientConfig::default(),
    }
}

struct Running {
    component: Arc<Scrape>,
    metrics: scraper::runtime::MetricsRegistry,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<Result<(), scraper::runtime::BoxError>>,
}

fn start(a: Arguments) -> Running {
    start_with(a, Services::default())
}

fn start_with(a: Arguments, services: Services) -> Running {
    let opts = ComponentOptions {
        services,
        ..ComponentOptions::standalone(
            "pyroscope.scrape.test",
            "pyroscope.scrape",
            Scrape::initial_exports(),
        )
    };
    let metrics = opts.metrics.clone();
    let component = Arc::new(Scrape::build(opts, a).expect("build"));
    let shutdown = CancellationToken::new();
    let task = tokio::spawn(component.clone().run(shutdown.clone()));
    Running {
        component,
        metrics,
        shutdown,
        task,
    }
}

impl Running {
    fn targets(&self) -> Vec<Value> {
        self.component.debug_info().expect("debug info")["targets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    fn target(&self, service: &str) -> Option<Value> {
        self.targets()
            .into_iter()
            .find(|t| t["labels"]["service_name"] == service)
    }

    fn scrapes(&self, service: &str) -> u64 {
        self.target(service)
            .and_then(|t| t["scrapes_total"].as_u64())
            .unwrap_or(0)
    }

    async fn wait(&self, timeout: Duration, f: impl Fn(&Running) -> bool) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while !f(self) {
            if std::time::Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        true
    }

    fn metrics(&self) -> String {
        self.metrics.encode().expect("encode")
    }

    async fn stop(self) {
        self.shutdown.cancel();
        self.task.await.expect("join").expect("run");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn loops_and_delta_state_follow_target_identity() {
    let server = FaultServer::start(vec![
        (
            "/seq",
            Behavior::sequence(vec![
                captured("goapp-heap-1.pb.gz"),
                captured("goapp-heap-2.pb.gz"),
            ]),
        ),
        ("/other", Behavior::Profile(captured("goapp-heap-1.pb.gz"))),
    ])
    .await;
    let addr = server.addr.to_string();
    let collect = Collect::default();
    let rx = Arc::new(Receiver::new(collect.clone()));
    let a = |extra: &[(&str, &str)]| {
        let mut l = labels(&[
            ("__address__", &addr),
            ("__profile_path__", "/seq"),
            ("service_name", "a"),
        ]);
        l.extend(labels(extra));
        l
    };
    let b = labels(&[
        ("__address__", &addr),
        ("__profile_path__", "/other"),
        ("service_name", "b"),
    ]);
    let run = start(args(vec![a(&[("__meta_x", "1")])], &rx, 1));
    let wait = Duration::from_secs(5);

    // First scrape: the baseline, nothing forwarded.
    assert!(run.wait(wait, |r| r.scrapes("a") >= 1).await);
    let t = run.target("a").expect("a");
    assert!(
        t["last_outcome"]
            .as_str()
            .is_some_and(|o| o.starts_with("baseline")),
        "{t}"
    );
    assert_eq!(t["forwarded_total"], 0);
    assert!(collect.of("a").is_empty());

    // Republished with a changed private label and a new target: same loop, same state.
    let before = run.scrapes("a");
    run.component
        .update(args(vec![a(&[("__meta_x", "2")]), b.clone()], &rx, 1))
        .expect("update");
    assert!(run.scrapes("a") >= before, "loop was restarted");
    assert_eq!(run.target("a").expect("a")["labels"]["__meta_x"], "2");
    assert!(run.wait(wait, |r| r.scrapes("a") > before).await);
    let t = run.target("a").expect("a");
    assert_eq!(t["last_outcome"], "forwarded", "delta state was kept: {t}");
    let sent = collect.of("a");
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].label("__delta__"), Some("false"));
    assert_eq!(sent[0].label("__meta_x"), Some("2"));
    assert_eq!(server.requests("/seq").len() as u64, run.scrapes("a"));

    // A new interval re-phases the loops but keeps them and their state.
    let before = run.scrapes("a");
    run.component
        .update(args(vec![a(&[("__meta_x", "2")]), b.clone()], &rx, 2))
        .expect("update");
    assert!(run.wait(wait, |r| r.scrapes("a") > before).await);
    assert_eq!(run.target("a").expect("a")["last_outcome"], "forwarded");

    // A public label change is another identity: a new loop, a new baseline.
    run.component
        .update(args(vec![a(&[("team", "x")]), b.clone()], &rx, 1))
        .expect("update");
    let t = run.target("a").expect("a");
    assert_eq!(t["scrapes_total"], 0, "a new loop: {t}");
    assert_eq!(t["health"], "unknown");
    assert!(run.wait(wait, |r| r.scrapes("a") >= 1).await);
    assert!(
        run.target("a").expect("a")["last_outcome"]
            .as_str()
            .is_some_and(|o| o.starts_with("baseline"))
    );
    assert_eq!(run.targets().len(), 2);
    let m = run.metrics();
    assert_eq!(
        metric(&m, "pyroscope_scrape_up", &[("service_name", "a")]),
        Some(1.0)
    );
    assert_eq!(
        metric(&m, "pyroscope_scrape_targets", &[]),
        Some(2.0),
        "{m}"
    );
    assert!(metric(&m, "pyroscope_scrape_delta_state_bytes", &[]).is_some_and(|b| b > 0.0));
    assert!(metric(&m, "pyroscope_forwarded_entries_total", &[]).is_some_and(|n| n >= 2.0));

    // Removed targets stop and take their series with them.
    run.component
        .update(args(vec![b.clone()], &rx, 1))
        .expect("update");
    assert_eq!(run.targets().len(), 1);
    let m = run.metrics();
    assert_eq!(
        metric(&m, "pyroscope_scrape_up", &[("service_name", "a")]),
        None,
        "{m}"
    );
    // b, left in place with the same interval, is the clock: two more of its scrapes are two
    // intervals in which a's loop would have scraped had it survived.
    let n = server.requests("/seq").len();
    let b_before = run.scrapes("b");
    assert!(run.wait(wait, |r| r.scrapes("b") >= b_before + 2).await);
    assert_eq!(
        server.requests("/seq").len(),
        n,
        "a removed loop kept scraping"
    );

    run.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_over_a_label_limit_are_down_and_not_scraped() {
    let server = FaultServer::start(vec![
        ("/p", Behavior::Profile(captured("goapp-heap-1.pb.gz"))),
        ("/w", Behavior::Profile(captured("goapp-heap-1.pb.gz"))),
    ])
    .await;
    let addr = server.addr.to_string();
    let rx = Arc::new(Receiver::new(Collect::default()));
    let target = labels(&[
        ("__address__", &addr),
        ("__profile_path__", "/p"),
        ("service_name", "wide"),
        ("a", "1"),
        ("b", "2"),
        ("c", "3"),
    ]);
    // A target within the limit, scraped on the same interval: the clock for "not scraped".
    let witness = labels(&[
        ("__address__", &addr),
        ("__profile_path__", "/w"),
        ("service_name", "narrow"),
    ]);
    // Every label counts, private ones included: the witness has 6, the wide target 9.
    let mut a = args(vec![target.clone(), witness.clone()], &rx, 1);
    a.inner.label_limit = 7;
    let run = start(a);
    let t = run.target("wide").expect("target listed");
    assert_eq!(t["health"], "down");
    assert_eq!(t["last_error_reason"], "label_limit");
    assert!(
        t["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("9 labels exceed label_limit (7)")),
        "{t}"
    );
    let m = run.metrics();
    assert_eq!(
        metric(&m, "pyroscope_scrape_up", &[("service_name", "wide")]),
        Some(0.0)
    );
    assert_eq!(
        metric(
            &m,
            "pyroscope_scrape_errors_total",
            &[("reason", "label_limit")]
        ),
        Some(1.0)
    );
    assert!(
        run.wait(Duration::from_secs(10), |r| r.scrapes("narrow") >= 2)
            .await
    );
    assert!(
        server.requests("/p").is_empty(),
        "over-limit target scraped"
    );

    // Raising the limit lets it be scraped.
    let mut a = args(vec![target, witness], &rx, 1);
    a.inner.label_limit = 10;
    run.component.update(a).expect("update");
    assert!(
        run.wait(Duration::from_secs(5), |r| r
            .target("wide")
            .is_some_and(|t| t["health"] == "up"))
            .await
    );
    run.stop().await;
}

#[tokio::test]
async fn nothing_is_scraped_before_run() {
    let server = FaultServer::start(vec![
        ("/p", Behavior::Profile(captured("goapp-heap-1.pb.gz"))),
        ("/w", Behavior::Profile(captured("goapp-heap-1.pb.gz"))),
    ])
    .await;
    let rx = Arc::new(Receiver::new(Collect::default()));
    let target = labels(&[
        ("__address__", &server.addr.to_string()),
        ("__profile_path__", "/p"),
    ]);
    let opts = ComponentOptions::standalone(
        "pyroscope.scrape.idle",
        "pyroscope.scrape",
        Scrape::initial_exports(),
    );
    let c = Scrape::build(opts, args(vec![target], &rx, 1)).expect("build");
    assert_eq!(c.loops(), 1);
    // A second component, running, on the same interval is the clock: two of its scrapes
    // are two intervals in which the built-but-not-run one would have scraped.
    let witness = start(args(
        vec![labels(&[
            ("__address__", &server.addr.to_string()),
            ("__profile_path__", "/w"),
            ("service_name", "w"),
        ])],
        &rx,
        1,
    ));
    assert!(
        witness
            .wait(Duration::from_secs(10), |r| r.scrapes("w") >= 2)
            .await
    );
    assert!(server.requests("/p").is_empty());
    witness.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_memory_budget_marks_its_target_down() {
    // 16 MiB of body against a 4 MiB budget: the read stops when the budget refuses to grow
    // the buffer, every time.
    let server = FaultServer::start(vec![("/big", Behavior::Stream(16 << 20))]).await;
    let rx = Arc::new(Receiver::new(Collect::default()));
    let target = labels(&[
        ("__address__", &server.addr.to_string()),
        ("__profile_path__", "/big"),
        ("service_name", "big"),
    ]);
    let run = start_with(
        args(vec![target], &rx, 1),
        Services::default().with(Budget::new(4 << 20)),
    );
    assert!(
        run.wait(Duration::from_secs(60), |r| r.target("big").is_some_and(
            |t| t["failures_total"] == 0 && t["shed_after_request_total"].as_u64() >= Some(3)
        ))
        .await,
        "{:?}",
        run.target("big")
    );
    let t = run.target("big").expect("big");
    assert_eq!(t["health"], "down", "{t}");
    assert_eq!(t["last_error_reason"], "memory_budget", "{t}");
    let err = t["last_error"].as_str().unwrap_or("");
    assert!(
        err.starts_with("the response body exceeds the memory budget"),
        "{err}"
    );
    assert_eq!(
        metric(
            &run.metrics(),
            "pyroscope_scrape_up",
            &[("service_name", "big")]
        ),
        Some(0.0)
    );
    // Three sheds in a row: the only target has been down for more than two intervals.
    assert!(
        run.wait(Duration::from_secs(60), |r| r
            .component
            .health()
            .is_some_and(|h| h.state == HealthState::Unhealthy))
            .await
    );
    let health = run.component.health().expect("health");
    assert!(
        health.message.starts_with(&format!(
            "every target down for more than two scrape intervals: 1 target: 0 up, 1 down (last error: http://{}/big: the response body exceeds the memory budget",
            server.addr
        )),
        "{}",
        health.message
    );
    run.stop().await;
}
