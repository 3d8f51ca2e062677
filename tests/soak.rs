//! Soak: `scraper run` discovering pods from the fake API server while pods churn every few
//! seconds, scraping all five default profile types of each from the Go fixture of bench/load
//! (one port, a path prefix per pod, every pod a fresh prefix), and writing to a counting
//! receiver. At the end it checks for the failures a long run exposes:
//!
//! * leaked loops: a deleted pod's prefix is never requested after its deletion + grace, and
//!   `pyroscope_scrape_targets` comes back to exactly pods × 5 once churn stops;
//! * duplicate scrapes: no (pod, type) is ever requested twice within half an interval;
//! * missed work: every pod was scraped about as often as its lifetime allows;
//! * growth: open descriptors and threads stay flat, and (runs of 10 minutes or more) RSS has
//!   no upward trend once warm.
//!
//! `soak_short` runs in CI: 100 pods for two minutes with the debug build. The one-hour soak
//! of docs/PERFORMANCE.md is `soak`, ignored because it takes an hour; run it with the release
//! binary (bench/soak/run.sh does): `SOAK_BIN=target/release/scraper cargo test --test soak --
//! --ignored --nocapture` with SOAK_SECONDS (3600), SOAK_TARGETS (1000), SOAK_REPORT (CSV of the
//! samples).

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use scrape_support::{BIN, Scraper, metric};
use serde_json::json;
use support::fake_kube::FakeKube;
use support::go::{Proc, Require, repo, start_go, try_get};

const INTERVAL: Duration = Duration::from_secs(15);
const CHURN_EVERY: Duration = Duration::from_secs(5);
const SAMPLE_EVERY: Duration = Duration::from_secs(10);
const TYPES: usize = 5;
/// After its deletion, how long a pod may still be requested: discovery's 5 s publication
/// plus the loop noticing, with room for a slow CI machine.
const GRACE_MS: i64 = 20_000;
const NAMESPACE: &str = "soak";

struct Params {
    seconds: u64,
    targets: usize,
    bin: PathBuf,
    report: Option<PathBuf>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn soak_short() {
    run(Params {
        seconds: 120,
        targets: 100,
        bin: PathBuf::from(BIN),
        report: None,
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "an hour long: bench/soak/run.sh runs it with the release build"]
async fn soak() {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
    run(Params {
        seconds: env("SOAK_SECONDS").map_or(3600, |v| v.parse().expect("SOAK_SECONDS")),
        targets: env("SOAK_TARGETS").map_or(1000, |v| v.parse().expect("SOAK_TARGETS")),
        bin: env("SOAK_BIN").map_or_else(|| PathBuf::from(BIN), PathBuf::from),
        report: env("SOAK_REPORT").map(PathBuf::from),
    })
    .await;
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as i64
}

/// Builds the bench/load fixture and starts it with the committed profiles (it captures its own
/// goroutine and CPU profiles).
fn start_fixture(dir: &Path, targets: usize) -> Option<(Proc, String)> {
    if !Require::Go.have_go() {
        return None;
    }
    let data = dir.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    for kind in ["allocs", "block", "mutex"] {
        std::fs::copy(
            repo().join(format!("tests/data/pprof/goapp-{kind}-2.pb.gz")),
            data.join(format!("{kind}.pb.gz")),
        )
        .expect("copy profile");
    }
    let bin = dir.join("fixture");
    let out = Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&bin)
        .arg(repo().join("bench/load/fixture/main.go"))
        .env("GO111MODULE", "off")
        .env("GOPATH", "/usr/share/gocode")
        .env("GOFLAGS", "")
        .output()
        .expect("run go build");
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        Require::Go.missing(&format!(
            "the fixture does not build (golang-github-google-pprof-dev?): {err}"
        ));
        return None;
    }
    let data = data.to_string_lossy().into_owned();
    let targets = targets.to_string();
    Some(start_go(&bin, &["-data", &data, "-targets", &targets]))
}

fn pod(idx: usize, port: u16) -> serde_json::Value {
    let name = format!("app-{idx}");
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{idx}"),
            "labels": {"app": "soak"},
            "annotations": {"soak/prefix": format!("/t/{idx}")}},
        "spec": {"nodeName": "node-a",
            "containers": [{"name": "app", "image": "app:1",
                "ports": [{"name": "pprof", "containerPort": port, "protocol": "TCP"}]}]},
        "status": {"phase": "Running", "podIP": "127.0.0.1", "hostIP": "127.0.0.1",
            "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

fn config(receiver: &str) -> String {
    format!(
        r#"discovery.kubernetes "pods" {{
  role = "pod"
  namespaces {{
    names = ["{NAMESPACE}"]
  }}
}}

discovery.relabel "pods" {{
  targets = discovery.kubernetes.pods.targets
  rule {{
    source_labels = ["__meta_kubernetes_pod_annotation_soak_prefix"]
    target_label  = "__profile_path_prefix__"
  }}
  rule {{
    source_labels = ["__meta_kubernetes_pod_name"]
    target_label  = "service_name"
  }}
}}

pyroscope.scrape "pods" {{
  targets         = discovery.relabel.pods.output
  forward_to      = [pyroscope.write.out.receiver]
  scrape_interval = "15s"
  scrape_timeout  = "14s"
}}

pyroscope.write "out" {{
  endpoint {{
    url = "{receiver}"
  }}
}}
"#
    )
}

/// What /proc says about the scraper process.
#[derive(Clone, Copy, Debug)]
struct Sample {
    at_s: f64,
    rss: u64,
    fds: usize,
    threads: usize,
    loops: f64,
}

fn proc_sample(pid: u32, at_s: f64, loops: f64) -> Sample {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count());
    Sample {
        at_s,
        rss: field("VmRSS:") * 1024,
        fds,
        threads: field("Threads:") as usize,
        loops,
    }
}

/// Least-squares slope of RSS over time, in MiB per hour.
fn rss_slope_mib_per_hour(samples: &[Sample]) -> f64 {
    let n = samples.len() as f64;
    let (mx, my) = samples.iter().fold((0.0, 0.0), |(x, y), s| {
        (x + s.at_s / n, y + s.rss as f64 / n)
    });
    let (num, den) = samples.iter().fold((0.0, 0.0), |(num, den), s| {
        let dx = s.at_s - mx;
        (num + dx * (s.rss as f64 - my), den + dx * dx)
    });
    if den == 0.0 {
        0.0
    } else {
        num / den * 3600.0 / (1 << 20) as f64
    }
}

/// The median of one quantity over samples: single spikes (a burst of connections, a large
/// profile in flight) are noise, a trend moves the median.
fn median(samples: &[Sample], of: fn(&Sample) -> u64) -> u64 {
    let mut v: Vec<u64> = samples.iter().map(of).collect();
    v.sort_unstable();
    v.get(v.len() / 2).copied().unwrap_or(0)
}

/// One line of the fixture's /stats.
struct Requested {
    count: i64,
    last_ms: i64,
    min_gap_ms: i64,
}

fn fixture_stats(addr: &str) -> BTreeMap<(usize, String), Requested> {
    let (status, body) = try_get(addr, "/stats").expect("fixture /stats");
    assert_eq!(status, 200);
    String::from_utf8_lossy(&body)
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let [idx, kind, count, last, gap] = f[..] else {
                return None;
            };
            Some((
                (idx.parse().ok()?, kind.to_string()),
                Requested {
                    count: count.parse().ok()?,
                    last_ms: last.parse().ok()?,
                    min_gap_ms: gap.parse().ok()?,
                },
            ))
        })
        .collect()
}

/// A pod's life, in Unix ms.
struct Life {
    created: i64,
    deleted: Option<i64>,
}

async fn run(p: Params) {
    let dir = tempfile::tempdir().expect("tempdir");
    let churn = (p.targets / 100).max(2);
    let rounds = (p.seconds / CHURN_EVERY.as_secs()) as usize + 1;
    let capacity = p.targets + churn * rounds;
    let Some((_fixture, fixture_addr)) = start_fixture(dir.path(), capacity) else {
        return;
    };
    let port: u16 = fixture_addr
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("fixture port");
    let (_receiver, receiver_addr) = {
        let bin = dir.path().join("receiver");
        let out = Command::new("go")
            .arg("build")
            .arg("-o")
            .arg(&bin)
            .arg(repo().join("bench/load/receiver/main.go"))
            .env("GO111MODULE", "off")
            .env("GOFLAGS", "")
            .output()
            .expect("run go build");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        start_go(&bin, &[])
    };

    let fake = FakeKube::start().await;
    let mut lives: BTreeMap<usize, Life> = BTreeMap::new();
    for idx in 0..p.targets {
        fake.apply(pod(idx, port));
        lives.insert(
            idx,
            Life {
                created: unix_ms(),
                deleted: None,
            },
        );
    }
    let kubeconfig = fake.kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_string_lossy().into_owned();
    let receiver_url = format!("http://{receiver_addr}");
    let scraper = Scraper::start_as(
        &[],
        &p.bin,
        |_| config(&receiver_url),
        &[("KUBECONFIG", kubeconfig.as_str())],
    )
    .await;
    let pid = scraper.pid();
    let loops = |text: &str| metric(text, "pyroscope_scrape_targets", &[]).unwrap_or(0.0);
    let want = (p.targets * TYPES) as f64;
    let mut all_up = false;
    for _ in 0..600 {
        if loops(&scraper.metrics().await) == want {
            all_up = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(all_up, "never reached {want} loops:\n{}", scraper.logs());

    println!(
        "soak: {} pods, {churn} replaced every {CHURN_EVERY:?}, {} s, {}",
        p.targets,
        p.seconds,
        p.bin.display()
    );
    let start = Instant::now();
    let mut next_idx = p.targets;
    let mut next_churn = start + CHURN_EVERY;
    let mut next_sample = start;
    let mut samples: Vec<Sample> = Vec::new();
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    while start.elapsed() < Duration::from_secs(p.seconds) {
        let now = Instant::now();
        if now >= next_sample {
            let l = loops(&scraper.metrics().await);
            let s = proc_sample(pid, start.elapsed().as_secs_f64(), l);
            if samples.len().is_multiple_of(30) {
                println!(
                    "t={:>5.0}s rss={:.1} MiB fds={} threads={} loops={}",
                    s.at_s,
                    s.rss as f64 / (1 << 20) as f64,
                    s.fds,
                    s.threads,
                    s.loops
                );
            }
            samples.push(s);
            next_sample += SAMPLE_EVERY;
        }
        if now >= next_churn {
            let mut live: Vec<usize> = lives
                .iter()
                .filter(|(_, l)| l.deleted.is_none())
                .map(|(i, _)| *i)
                .collect();
            for _ in 0..churn {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                let victim = live.swap_remove((rng % live.len() as u64) as usize);
                fake.delete("pods", Some(NAMESPACE), &format!("app-{victim}"));
                if let Some(life) = lives.get_mut(&victim) {
                    life.deleted = Some(unix_ms());
                }
                fake.apply(pod(next_idx, port));
                lives.insert(
                    next_idx,
                    Life {
                        created: unix_ms(),
                        deleted: None,
                    },
                );
                next_idx += 1;
            }
            next_churn += CHURN_EVERY;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    // Churn stopped: the loop count must settle at exactly the live pods.
    let live = lives.values().filter(|l| l.deleted.is_none()).count();
    assert_eq!(live, p.targets);
    let mut settled = 0.0;
    for _ in 0..300 {
        settled = loops(&scraper.metrics().await);
        if settled == want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(settled, want, "scrape loops after churn stopped");
    // One more interval so every loop of the last pods has run.
    tokio::time::sleep(INTERVAL + Duration::from_secs(2)).await;
    let end_ms = unix_ms();
    let stats = fixture_stats(&fixture_addr);
    let metrics = scraper.metrics().await;

    let mut duplicates = Vec::new();
    let mut leaked = Vec::new();
    let mut missed = Vec::new();
    for (idx, life) in &lives {
        for kind in ["allocs", "block", "goroutine", "mutex", "profile"] {
            let Some(r) = stats.get(&(*idx, kind.to_string())) else {
                // A pod deleted moments after it was created may never be scraped.
                if life.deleted.unwrap_or(end_ms) - life.created > GRACE_MS + 2 * 15_000 {
                    missed.push(format!("{idx}/{kind}: never requested"));
                }
                continue;
            };
            if r.min_gap_ms >= 0 && r.min_gap_ms < INTERVAL.as_millis() as i64 / 2 {
                duplicates.push(format!("{idx}/{kind}: {} ms apart", r.min_gap_ms));
            }
            if let Some(deleted) = life.deleted
                && r.last_ms > deleted + GRACE_MS
            {
                leaked.push(format!(
                    "{idx}/{kind}: requested {} ms after deletion",
                    r.last_ms - deleted
                ));
            }
            // Discovery and the loop's first offset take up to GRACE + one interval.
            let lived = life.deleted.unwrap_or(end_ms) - life.created - GRACE_MS - 15_000;
            let expected = lived / 15_000 - 1;
            if r.count < expected {
                missed.push(format!("{idx}/{kind}: {} of ~{expected}", r.count));
            }
        }
    }

    let (status, count) = try_get(&receiver_addr, "/count").expect("receiver /count");
    assert_eq!(status, 200);
    let received: u64 = String::from_utf8_lossy(&count)
        .split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let dropped = metric(&metrics, "pyroscope_write_dropped_profiles_total", &[]).unwrap_or(0.0);
    let max_loops = samples.iter().map(|s| s.loops).fold(0.0, f64::max);

    // Growth: after a warm-up of a fifth of the run (at least one minute).
    let warm = samples
        .iter()
        .position(|s| s.at_s >= (p.seconds as f64 / 5.0).max(60.0))
        .unwrap_or(samples.len());
    let warm_samples = &samples[warm..];
    let slope = rss_slope_mib_per_hour(warm_samples);
    let half = warm_samples.len() / 2;
    let (early, late) = warm_samples.split_at(half);
    let (rss_early, rss_late) = (median(early, |s| s.rss), median(late, |s| s.rss));
    let peak = samples.iter().map(|s| s.rss).max().unwrap_or(0);
    let fds = |s: &[Sample]| median(s, |s| s.fds as u64);
    let threads = |s: &[Sample]| median(s, |s| s.threads as u64);
    let max_fds = samples.iter().map(|s| s.fds).max().unwrap_or(0);
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "soak result: pods created {next_idx} ({} replaced), received {received} profiles, \
         dropped {dropped}; loops max {max_loops}, settled {settled}; RSS peak {:.1} MiB, \
         warm median {:.1} -> {:.1} MiB, slope {slope:+.2} MiB/h; fds median {} -> {} (max \
         {max_fds}); threads median {} -> {}; duplicates {}, leaked {}, missed {}",
        next_idx - p.targets,
        mib(peak),
        mib(rss_early),
        mib(rss_late),
        fds(early),
        fds(late),
        threads(early),
        threads(late),
        duplicates.len(),
        leaked.len(),
        missed.len(),
    );
    println!("scraper log lines: {}", scraper.logs().lines().count());
    if let Some(path) = &p.report {
        let mut csv = String::from("seconds,rss_bytes,fds,threads,loops\n");
        for s in &samples {
            csv.push_str(&format!(
                "{:.0},{},{},{},{}\n",
                s.at_s, s.rss, s.fds, s.threads, s.loops
            ));
        }
        std::fs::write(path, csv).expect("write SOAK_REPORT");
    }

    assert!(duplicates.is_empty(), "duplicate scrapes: {duplicates:?}");
    assert!(leaked.is_empty(), "loops outlived their pods: {leaked:?}");
    assert!(missed.is_empty(), "scrapes missed: {missed:?}");
    assert!(
        max_loops <= ((p.targets + 4 * churn) * TYPES) as f64,
        "loops piled up during churn: max {max_loops}"
    );
    assert!(received > 0, "the receiver got nothing");
    assert_eq!(dropped, 0.0, "profiles dropped:\n{}", scraper.logs());
    // One connection per pod at most (they share an address), plus the scraper's own.
    assert!(
        max_fds <= p.targets * 5 / 4 + 64,
        "descriptors: {max_fds} open at once for {} pods",
        p.targets
    );
    assert!(
        fds(late) <= fds(early) + 16 + p.targets as u64 / 50,
        "descriptors grew: {} -> {}",
        fds(early),
        fds(late)
    );
    assert!(
        threads(late) <= threads(early) + 8,
        "threads grew: {} -> {}",
        threads(early),
        threads(late)
    );
    // A trend needs time to show; short runs only check the rest.
    if p.seconds >= 600 {
        assert!(
            rss_late as f64 <= rss_early as f64 * 1.05 + (4 << 20) as f64,
            "RSS grew: warm median {:.1} -> {:.1} MiB (slope {slope:+.2} MiB/h)",
            mib(rss_early),
            mib(rss_late)
        );
    }
}
