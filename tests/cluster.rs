//! Clustering, offline, with real processes (issue 23's Done-when line): the in-repo fake
//! Kubernetes API serves an EndpointSlice listing scraper pods on distinct loopback addresses
//! (127.0.0.2, .3, .4, later .5, one port); each is a real `scraper run --cluster.enabled
//! --cluster.kubernetes-service=default/scrapers` with the same config: 1,500 targets, two
//! profile types each (memory, cumulative; goroutine), `clustering { enabled = true }`.
//!
//! The targets are one listener on 0.0.0.0 reached at 1,500 addresses 127.20.x.y, told apart
//! by each connection's local address. Each instance sends its number in a header (the same
//! config file reads it with `sys.env`), so every scrape is counted at the target, by target,
//! type and instance, with its time.
//!
//! Phases, each judged over whole scrape intervals (aligned to the epoch, as the loops' phases
//! are): steady state (every target x type scraped by exactly one instance per interval);
//! SIGKILL one instance without touching the EndpointSlice (its targets must be scraped by
//! the others within two intervals: the peers' HTTP checks take it out); restart it (it takes
//! its share back); add a fourth to the EndpointSlice (<= 35 % of targets may move; 25 % is
//! the ideal). Double scrapes (two instances in one interval) must be zero in steady windows;
//! around changes they are counted and printed, with the moved shares and the takeover time.

mod support;

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::connect_info::{ConnectInfo, Connected};
use axum::extract::{State, connect_info::IntoMakeServiceWithConnectInfo};
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::serve::IncomingStream;
use bytes::Bytes;
use serde_json::json;
use support::fake_kube::FakeKube;

const TARGETS: usize = 1_500;
/// Seconds. The shortest that keeps three debug builds and the targets comfortable on two
/// cores (3,000 loops: 600 scrapes a second in all).
const INTERVAL: u64 = 5;
const TYPES: [&str; 2] = ["memory", "goroutine"];
const PORT_NAME: &str = "http-metrics";
/// The tests run one at a time: each is a few real processes sharing two cores.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn target_ip(i: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 20, (i / 250) as u8, (i % 250 + 1) as u8)
}

fn target_index(ip: IpAddr) -> Option<usize> {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (o[0] == 127 && o[1] == 20 && o[3] >= 1)
                .then(|| o[2] as usize * 250 + o[3] as usize - 1)
        }
        IpAddr::V6(_) => None,
    }
}

/// The address a connection arrived at: which target was asked.
#[derive(Clone, Copy, Debug)]
struct LocalAddr(SocketAddr);

impl Connected<IncomingStream<'_, tokio::net::TcpListener>> for LocalAddr {
    fn connect_info(stream: IncomingStream<'_, tokio::net::TcpListener>) -> Self {
        let local = stream
            .io()
            .local_addr()
            .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0)));
        LocalAddr(local)
    }
}

/// One scrape as the target saw it.
#[derive(Clone, Copy, Debug)]
struct Hit {
    target: u16,
    kind: u8,
    instance: u8,
    /// Seconds since the epoch.
    at: f64,
}

#[derive(Default)]
struct Targets {
    hits: Mutex<Vec<Hit>>,
    profile: Bytes,
    unknown: Mutex<u64>,
}

fn now_secs() -> f64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

async fn serve(
    ConnectInfo(LocalAddr(local)): ConnectInfo<LocalAddr>,
    State(t): State<Arc<Targets>>,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    let kind = match uri.path() {
        "/debug/pprof/allocs" => 0,
        "/debug/pprof/goroutine" => 1,
        _ => return StatusCode::NOT_FOUND.into_response(),
    };
    let instance = headers
        .get("x-scraper-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u8>().ok());
    match (target_index(local.ip()), instance) {
        (Some(target), Some(instance)) if target < TARGETS => t.hits.lock().unwrap().push(Hit {
            target: target as u16,
            kind,
            instance,
            at: now_secs(),
        }),
        _ => *t.unknown.lock().unwrap() += 1,
    }
    (
        [("content-type", "application/octet-stream")],
        t.profile.clone(),
    )
        .into_response()
}

fn config(port: u16) -> String {
    let mut targets = String::new();
    for i in 0..TARGETS {
        targets.push_str(&format!(
            "    {{\"__address__\" = \"{}:{port}\", \"target\" = \"t{i}\", \"__meta_test_status\" = \"x\"}},\n",
            target_ip(i)
        ));
    }
    format!(
        r#"pyroscope.scrape "cluster" {{
  targets = [
{targets}  ]
  forward_to      = []
  scrape_interval = "{INTERVAL}s"
  scrape_timeout  = "{}s"
  http_headers    = {{ "X-Scraper-Id" = [sys.env("SCRAPER_ID")] }}
  clustering {{
    enabled = true
  }}
  profiling_config {{
    profile.process_cpu {{
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
"#,
        INTERVAL - 1
    )
}

fn slice(ips: &[u8], port: u16) -> serde_json::Value {
    let endpoints: Vec<serde_json::Value> = ips
        .iter()
        .map(|n| {
            json!({
                "addresses": [format!("127.0.0.{n}")],
                "conditions": {"ready": true},
                "targetRef": {"kind": "Pod", "namespace": "default", "name": format!("scraper-{n}")}
            })
        })
        .collect();
    json!({
        "apiVersion": "discovery.k8s.io/v1",
        "kind": "EndpointSlice",
        "metadata": {
            "name": "scrapers-abcde",
            "namespace": "default",
            "labels": {"kubernetes.io/service-name": "scrapers"}
        },
        "addressType": "IPv4",
        "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}],
        "endpoints": endpoints
    })
}

/// A running `scraper run` on 127.0.0.`n`; killed when dropped.
struct Instance {
    n: u8,
    child: Child,
    log: PathBuf,
}

impl Instance {
    /// `membership`: the flags that say where the peers come from (and the kubeconfig).
    fn start(
        n: u8,
        port: u16,
        dir: &Path,
        config: &Path,
        membership: &[String],
        kubeconfig: Option<&Path>,
    ) -> Instance {
        // A copy taken at the test's start: the shared target directory's binary may be
        // rebuilt from another checkout while the test runs for minutes.
        let binary = dir.join("scraper");
        if !binary.exists() {
            std::fs::copy(env!("CARGO_BIN_EXE_scraper"), &binary).expect("copy the binary");
        }
        let addr = format!("127.0.0.{n}:{port}");
        let log = dir.join(format!("scraper-{n}-{}.log", now_secs() as u64));
        let out = std::fs::File::create(&log).expect("log file");
        let err = out.try_clone().expect("log file");
        let mut command = Command::new(&binary);
        if let Some(k) = kubeconfig {
            command.env("KUBECONFIG", k);
        }
        let child = command
            .arg("run")
            .arg(config)
            .arg(format!("--server.http.listen-addr={addr}"))
            .arg(format!(
                "--storage.path={}",
                dir.join(format!("data-{n}")).display()
            ))
            .arg("--memory.limit=0")
            .arg("--cluster.enabled")
            .args(membership)
            .arg(format!("--cluster.advertise-address={addr}"))
            .arg(format!("--cluster.node-name=scraper-{n}"))
            .env("SCRAPER_ID", n.to_string())
            .env_remove("KUBERNETES_SERVICE_HOST")
            .env_remove("POD_IP")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .expect("spawn scraper run");
        Instance { n, child, log }
    }

    fn url(&self, port: u16, path: &str) -> String {
        format!("http://127.0.0.{}:{port}{path}", self.n)
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (hang guard: 90 s) until every instance answers ready and sees `members` members.
async fn wait_members(http: &reqwest::Client, instances: &[&Instance], port: u16, members: usize) {
    let deadline = Instant::now() + Duration::from_secs(90);
    for inst in instances {
        loop {
            let view: Option<serde_json::Value> =
                match http.get(inst.url(port, "/api/v0/web/peers")).send().await {
                    Ok(r) if r.status().is_success() => r
                        .text()
                        .await
                        .ok()
                        .and_then(|t| serde_json::from_str(&t).ok()),
                    _ => None,
                };
            let seen = view
                .as_ref()
                .and_then(|v| v["members"].as_array())
                .map(Vec::len);
            let ready = matches!(http.get(inst.url(port, "/-/ready")).send().await, Ok(r) if r.status().is_success());
            if ready && seen == Some(members) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "instance {} never saw {members} members (saw {seen:?}); log:\n{}",
                inst.n,
                inst.log_tail()
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

async fn wait_intervals(n: u64) {
    tokio::time::sleep(Duration::from_secs(INTERVAL * n)).await;
}

/// The hits so far, read a moment after `now` so that scrapes started before it are in.
async fn hits_settled(targets: &Targets) -> Vec<Hit> {
    tokio::time::sleep(Duration::from_secs(1)).await;
    targets.hits.lock().unwrap().clone()
}

/// Each target x type's scrapes in `[from, to)`, in time order.
fn series(hits: &[Hit], from: f64, to: f64) -> HashMap<(u16, u8), Vec<(f64, u8)>> {
    let mut out: HashMap<(u16, u8), Vec<(f64, u8)>> = HashMap::new();
    for h in hits.iter().filter(|h| h.at >= from && h.at < to) {
        out.entry((h.target, h.kind))
            .or_default()
            .push((h.at, h.instance));
    }
    for v in out.values_mut() {
        v.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    out
}

/// Scrapes of one target x type less than half an interval after the previous one by another
/// instance: two instances scraping it in the same interval (one loop scrapes once per
/// interval, at a fixed phase that is the same on every instance). Two close scrapes by one
/// instance (a late scrape, then an on-time one) are lateness, not a double; a target split
/// between instances in a steady window still fails `steady`'s ownership check.
fn doubles(hits: &[Hit], from: f64, to: f64) -> usize {
    let half = INTERVAL as f64 / 2.0;
    series(hits, from, to)
        .values()
        .map(|v| {
            v.windows(2)
                .filter(|w| w[1].1 != w[0].1 && w[1].0 - w[0].0 < half)
                .count()
        })
        .sum()
}

#[test]
fn a_double_is_two_instances_not_one_late_scrape() {
    let hit = |at: f64, instance: u8| Hit {
        target: 0,
        kind: 0,
        instance,
        at,
    };
    let i = INTERVAL as f64;
    // One instance: late (0.9 i), then on time (1.0 i): no double.
    let late = [
        hit(0.0, 1),
        hit(0.9 * i, 1),
        hit(1.0 * i, 1),
        hit(2.0 * i, 1),
    ];
    assert_eq!(doubles(&late, 0.0, 3.0 * i), 0);
    // Two instances in one interval: a double; the hand-over a whole interval apart is not.
    let two = [
        hit(0.0, 1),
        hit(0.1 * i, 2),
        hit(1.0 * i, 2),
        hit(2.0 * i, 1),
    ];
    assert_eq!(doubles(&two, 0.0, 3.0 * i), 1);
}

/// Checks a steady period: every target x type scraped, by one instance only, never twice in
/// one interval (gaps over 1.5 intervals are counted and printed). Returns each target's owner.
fn steady(name: &str, hits: &[Hit], from: f64, to: f64) -> HashMap<u16, u8> {
    let i = INTERVAL as f64;
    assert!(to - from >= 2.0 * i, "{name}: period too short");
    let s = series(hits, from, to);
    let mut owners: HashMap<u16, u8> = HashMap::new();
    let (mut missing, mut gaps, mut split) = (0usize, 0usize, 0usize);
    for t in 0..TARGETS as u16 {
        for k in 0..TYPES.len() as u8 {
            let Some(v) = s.get(&(t, k)) else {
                missing += 1;
                continue;
            };
            let mut times: Vec<f64> = vec![from];
            times.extend(v.iter().map(|h| h.0));
            times.push(to);
            gaps += times.windows(2).filter(|w| w[1] - w[0] > 1.5 * i).count();
            for (_, who) in v {
                if *owners.entry(t).or_insert(*who) != *who {
                    split += 1;
                }
            }
        }
    }
    let double = doubles(hits, from, to);
    let mut per: BTreeMap<u8, usize> = BTreeMap::new();
    for o in owners.values() {
        *per.entry(*o).or_default() += 1;
    }
    println!(
        "{name}: {:.1} s, targets per instance {per:?}, never scraped {missing}, gaps over 1.5 intervals {gaps}, double scrapes {double}, scraped by two instances {split}",
        to - from
    );
    assert_eq!(missing, 0, "{name}: target x types never scraped");
    // Gaps are printed, not asserted: an overloaded machine misses scrapes whoever owns the
    // target (the scrape tests and the soak judge lateness); ownership is what is judged here.
    assert_eq!(
        double, 0,
        "{name}: target x types scraped twice in one interval"
    );
    assert_eq!(
        split, 0,
        "{name}: targets scraped by more than one instance"
    );
    assert_eq!(owners.len(), TARGETS, "{name}: targets never scraped");
    owners
}

fn moved(before: &HashMap<u16, u8>, after: &HashMap<u16, u8>) -> f64 {
    let n = before
        .iter()
        .filter(|(t, o)| after.get(t) != Some(o))
        .count();
    n as f64 / TARGETS as f64 * 100.0
}

fn free_port(ip: [u8; 4]) -> u16 {
    let l = std::net::TcpListener::bind(SocketAddr::from((ip, 0))).expect("bind for a free port");
    l.local_addr().expect("addr").port()
}

/// The 1,500 targets: one listener on 0.0.0.0, its port, and its task.
async fn start_targets() -> (Arc<Targets>, u16, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0")
        .await
        .expect("bind targets");
    let tport = listener.local_addr().expect("addr").port();
    let profile = support::profile_server::heap_versions(4, 1)
        .into_iter()
        .next()
        .expect("a profile");
    let targets = Arc::new(Targets {
        profile,
        ..Default::default()
    });
    let app = Router::new().fallback(serve).with_state(targets.clone());
    let make: IntoMakeServiceWithConnectInfo<Router, LocalAddr> =
        app.into_make_service_with_connect_info::<LocalAddr>();
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, make).await;
    });

    (targets, tport, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_are_shared_by_the_live_peers_and_move_minimally() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = FakeKube::start().await;
    let kubeconfig = fake.kubeconfig(dir.path());

    let (targets, tport, server) = start_targets().await;
    let config_path = dir.path().join("cluster.alloy");
    std::fs::write(&config_path, config(tport)).expect("write config");
    let port = free_port([127, 0, 0, 2]);
    fake.apply(slice(&[2, 3, 4], port));
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .expect("client");
    let membership = [
        "--cluster.kubernetes-service=default/scrapers".to_string(),
        format!("--cluster.kubernetes-port-name={PORT_NAME}"),
    ];
    let start = |n: u8| {
        Instance::start(
            n,
            port,
            dir.path(),
            &config_path,
            &membership,
            Some(&kubeconfig),
        )
    };

    // 1. Three peers, steady state.
    let mut a = start(2);
    let b = start(3);
    let c = start(4);
    wait_members(&http, &[&a, &b, &c], port, 3).await;
    wait_intervals(2).await;
    let t0 = now_secs();
    wait_intervals(3).await;
    let t1 = now_secs();
    let three = steady("three peers", &hits_settled(&targets).await, t0, t1);

    // 2. SIGKILL one; the EndpointSlice still lists it as ready.
    let killed = a.n;
    let _ = a.child.kill();
    let _ = a.child.wait();
    let t_kill = now_secs();
    wait_intervals(4).await;
    let t_after = now_secs();
    let all = hits_settled(&targets).await;
    let mut takeover: f64 = 0.0;
    let mut late = 0usize;
    for (t, owner) in &three {
        if *owner != killed {
            continue;
        }
        for k in 0..TYPES.len() as u8 {
            let first = all
                .iter()
                .filter(|h| h.target == *t && h.kind == k && h.at >= t_kill && h.instance != killed)
                .map(|h| h.at)
                .fold(f64::INFINITY, f64::min);
            if !first.is_finite() {
                late += 1;
                continue;
            }
            takeover = takeover.max(first - t_kill);
        }
    }
    let kill_doubles = doubles(&all, t_kill, t_after);
    let orphaned = three.values().filter(|o| **o == killed).count();
    println!(
        "kill: {orphaned} targets orphaned, all taken over within {takeover:.2} s ({:.2} intervals), never taken over {late}, double scrapes {kill_doubles}",
        takeover / INTERVAL as f64
    );
    assert_eq!(
        late, 0,
        "targets of the killed instance never scraped again"
    );
    assert!(
        takeover <= 2.0 * INTERVAL as f64,
        "takeover took {takeover:.2} s, more than two intervals"
    );
    let t2 = now_secs();
    wait_intervals(2).await;
    let t2e = now_secs();
    let two = steady(
        "two peers after the kill",
        &hits_settled(&targets).await,
        t2,
        t2e,
    );

    // 3. The killed pod comes back (as Kubernetes would restart it).
    let t_back = now_secs();
    a = start(killed);
    wait_members(&http, &[&a, &b, &c], port, 3).await;
    wait_intervals(2).await;
    let t3 = now_secs();
    wait_intervals(2).await;
    let t3e = now_secs();
    let all = hits_settled(&targets).await;
    let back = steady("three peers again", &all, t3, t3e);
    let back_doubles = doubles(&all, t_back, t3);
    println!(
        "restart: {:.1} % of targets moved, double scrapes around it {back_doubles}",
        moved(&two, &back)
    );

    // 4. A fourth pod is added to the EndpointSlice.
    let t_add = now_secs();
    let d = start(5);
    fake.apply(slice(&[2, 3, 4, 5], port));
    wait_members(&http, &[&a, &b, &c, &d], port, 4).await;
    wait_intervals(2).await;
    let t4 = now_secs();
    wait_intervals(2).await;
    let t4e = now_secs();
    let all = hits_settled(&targets).await;
    let four = steady("four peers", &all, t4, t4e);
    let add_doubles = doubles(&all, t_add, t4);
    let moved_add = moved(&back, &four);
    println!(
        "add a fourth: {moved_add:.1} % of targets moved (ideal 25 %), double scrapes around it {add_doubles}"
    );
    assert!(moved_add <= 35.0, "{moved_add:.1} % of targets moved");

    // The peers view and the moves are visible on every instance.
    let view: serde_json::Value = serde_json::from_str(
        &http
            .get(d.url(port, "/api/v0/web/peers"))
            .send()
            .await
            .expect("peers")
            .text()
            .await
            .expect("body"),
    )
    .expect("json");
    assert_eq!(view["members"].as_array().map(Vec::len), Some(4), "{view}");
    let owned = view["components"][0]["owned"].as_u64().unwrap_or(0);
    let owned_by_d = four.values().filter(|o| **o == d.n).count() as u64;
    assert_eq!(owned, owned_by_d, "{view}");
    let page = http
        .get(d.url(port, "/cluster"))
        .send()
        .await
        .expect("cluster page")
        .text()
        .await
        .expect("body");
    assert!(
        page.contains("Members (4)")
            && page.contains("scraper-3")
            && page.contains("pyroscope.scrape.cluster"),
        "{page}"
    );
    let metrics = http
        .get(b.url(port, "/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let rebaselines: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("pyroscope_scrape_rebaselines_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    println!(
        "instance {}: pyroscope_scrape_rebaselines_total {rebaselines}",
        b.n
    );
    assert!(
        rebaselines > 0.0,
        "the killed instance's memory series re-baselined elsewhere"
    );
    assert_eq!(
        *targets.unknown.lock().unwrap(),
        0,
        "scrapes not attributable"
    );
    server.abort();
    drop((a, b, c, d));
}

/// Static membership (`--cluster.join-addresses`), no Kubernetes: two instances split the
/// targets; one killed, the other takes them all within two intervals.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_static_peer_list_shares_targets_and_survives_a_kill() {
    let _serial = SERIAL.lock().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let (targets, tport, server) = start_targets().await;
    let config_path = dir.path().join("cluster.alloy");
    std::fs::write(&config_path, config(tport)).expect("write config");
    let port = free_port([127, 0, 0, 6]);
    let membership = [format!(
        "--cluster.join-addresses=127.0.0.6:{port},127.0.0.7:{port}"
    )];
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .no_proxy()
        .build()
        .expect("client");
    let start = |n: u8| Instance::start(n, port, dir.path(), &config_path, &membership, None);
    let mut a = start(6);
    let b = start(7);
    wait_members(&http, &[&a, &b], port, 2).await;
    wait_intervals(2).await;
    let t0 = now_secs();
    wait_intervals(2).await;
    let t1 = now_secs();
    let two = steady("static: two peers", &hits_settled(&targets).await, t0, t1);
    assert_eq!(
        two.values().filter(|o| **o == a.n).count() + two.values().filter(|o| **o == b.n).count(),
        TARGETS
    );
    let _ = a.child.kill();
    let _ = a.child.wait();
    let t_kill = now_secs();
    wait_intervals(2).await;
    let t2 = now_secs();
    wait_intervals(2).await;
    let t3 = now_secs();
    let all = hits_settled(&targets).await;
    let one = steady("static: one peer after the kill", &all, t2, t3);
    assert!(one.values().all(|o| *o == b.n));
    let mut takeover: f64 = 0.0;
    for (t, owner) in &two {
        if *owner != a.n {
            continue;
        }
        for k in 0..TYPES.len() as u8 {
            let first = all
                .iter()
                .filter(|h| h.target == *t && h.kind == k && h.at >= t_kill && h.instance == b.n)
                .map(|h| h.at)
                .fold(f64::INFINITY, f64::min);
            takeover = takeover.max(first - t_kill);
        }
    }
    println!("static: the killed peer's targets taken over within {takeover:.2} s");
    assert!(
        takeover <= 2.0 * INTERVAL as f64,
        "takeover took {takeover:.2} s"
    );
    server.abort();
    drop((a, b));
}
