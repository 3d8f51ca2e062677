//! The memory budget under a load that needs far more than it: many targets serve large heap
//! profiles (real deltas, growing cumulative values) and the fixture releases their answers at
//! the same instant, so every body arrives, and wants processing, at once.
//!
//! Without a budget the scraper's peak RSS passes 1 GiB. With `--memory.limit=256MiB` the peak
//! stays under the budget + 10 %, work is shed (lowest priority first, see `src/budget/`), and
//! every shed is counted: per target and in the budget's metric alike, and every request the
//! fixture saw is either a completed scrape or a scrape shed after its request.

mod scrape_support;
mod support;

use std::time::Duration;

use scrape_support::{Scraper, metric};
use support::profile_server::{ProfileServer, heap_versions};
use support::pyroscope_receiver::PyroscopeReceiver;

const TARGETS: usize = 250;
/// Distinct stacks per profile: ~7.7 MB of protobuf, ~4 MB gzipped.
const STACKS: usize = 100_000;
const BUDGET: u64 = 256 << 20;
/// Answers are held until the next multiple of this on the wall clock.
const HOLD: Duration = Duration::from_secs(10);

fn config(server: &ProfileServer, receiver: &str) -> String {
    let targets: String = (0..TARGETS)
        .map(|i| {
            let (addr, prefix) = server.target(i);
            format!(
                "    {{\"__address__\" = \"{addr}\", \"__profile_path_prefix__\" = \"{prefix}\", \"service_name\" = \"svc-{i}\"}},\n"
            )
        })
        .collect();
    format!(
        r#"pyroscope.scrape "load" {{
  targets = [
{targets}  ]
  forward_to      = [pyroscope.write.out.receiver]
  scrape_interval = "15s"
  scrape_timeout  = "14s"

{profiling}}}

pyroscope.write "out" {{
  endpoint {{
    url = "{receiver}"
  }}
}}
"#,
        profiling = support::alloy::profiling_config(&["memory"]),
    )
}

/// Sums a metric over all its series.
fn total(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| l.starts_with(name) && !l.starts_with('#'))
        .filter(|l| l[name.len()..].starts_with(['{', ' ']))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_256_mib_budget_holds_under_a_1_gib_load_and_counts_what_it_sheds() {
    let versions = tokio::task::spawn_blocking(|| heap_versions(STACKS, 8))
        .await
        .expect("generate profiles");
    println!("profile: {} bytes gzipped", versions[0].len());
    let receiver = PyroscopeReceiver::start().await;

    // The load without a budget: what it would need.
    let unbounded = if std::env::var_os("MEMORY_BUDGET_SKIP_UNBOUNDED").is_some() {
        2 << 30
    } else {
        let server = ProfileServer::start(TARGETS, versions.clone(), HOLD).await;
        let config = config(&server, &receiver.url());
        let s = Scraper::start_with_env(move |_| config, &[("SCRAPER_MEMORY_LIMIT", "0")]).await;
        // Two releases: every loop has had its first (baseline) and a delta scrape.
        tokio::time::sleep(Duration::from_secs(32)).await;
        s.peak_rss()
    };
    println!("peak RSS without a budget: {} MiB", unbounded >> 20);
    assert!(
        unbounded > 1 << 30,
        "the load should need more than 1 GiB without a budget, peaked at {} MiB",
        unbounded >> 20
    );

    let server = ProfileServer::start(TARGETS, versions, HOLD).await;
    let config = config(&server, &receiver.url());
    let before = receiver.count();
    let s = Scraper::start_with_env(move |_| config, &[("SCRAPER_MEMORY_LIMIT", "256MiB")]).await;
    // MEMORY_BUDGET_TRACE=1 prints RSS and the accounted bytes every second.
    let trace = std::env::var_os("MEMORY_BUDGET_TRACE").is_some();
    for _ in 0..47 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if trace {
            let m = s.metrics().await;
            let v = |n: &str| total(&m, n) as u64 >> 20;
            let status =
                std::fs::read_to_string(format!("/proc/{}/status", s.pid())).unwrap_or_default();
            let threads = status
                .lines()
                .find(|l| l.starts_with("Threads:"))
                .unwrap_or_default()
                .to_string();
            print!("{threads} ");
            println!(
                "rss {} MiB (peak {} MiB), accounted {} MiB, unaccounted {} MiB, scrape {} MiB",
                v("scraper_memory_rss_bytes"),
                s.peak_rss() >> 20,
                v("scraper_memory_accounted_bytes"),
                v("scraper_memory_unaccounted_bytes"),
                metric(&m, "scraper_memory_accounted_bytes", &[("use", "scrape")])
                    .unwrap_or_default() as u64
                    >> 20,
            );
        }
    }
    let peak = s.peak_rss();
    println!("peak RSS with a 256 MiB budget: {} MiB", peak >> 20);
    for l in s
        .metrics()
        .await
        .lines()
        .filter(|l| l.starts_with("scraper_memory"))
    {
        println!("{l}");
    }
    assert!(
        peak <= BUDGET + BUDGET / 10,
        "peak RSS {} MiB is over the 256 MiB budget + 10%",
        peak >> 20
    );

    // Every shed is counted, per target and in the budget's metric alike.
    let targets = s.targets("pyroscope.scrape.load").await;
    assert_eq!(targets.len(), TARGETS);
    let metrics = s.metrics().await;
    let field = |t: &serde_json::Value, k: &str| t[k].as_u64().unwrap_or_default();
    let shed: u64 = targets.iter().map(|t| field(t, "shed_total")).sum();
    let scrapes: u64 = targets.iter().map(|t| field(t, "scrapes_total")).sum();
    let forwarded: u64 = targets.iter().map(|t| field(t, "forwarded_total")).sum();
    println!("scrapes {scrapes}, shed {shed}, forwarded {forwarded}");
    assert!(shed > 0, "a 1 GiB load in 256 MiB must shed work");
    assert!(forwarded > 0, "some profiles must still get through");
    // Every priority's sheds of scrapes.
    let shed_metric: f64 = metrics
        .lines()
        .filter(|l| l.starts_with("scraper_memory_shed_total{use=\"scrape\","))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum();
    // The metric is read after the debug info: a shed in between may add one per loop.
    assert!(
        (shed as f64..=(shed + TARGETS as u64) as f64).contains(&shed_metric),
        "scraper_memory_shed_total {shed_metric} vs shed_total {shed}"
    );
    // The fixture saw a request for every completed scrape and every scrape shed after its
    // request; at most one per target is still in flight.
    for i in 0..TARGETS {
        let prefix = format!("/t/{i}/");
        let t = targets
            .iter()
            .find(|t| t["url"].as_str().is_some_and(|u| u.contains(&prefix)))
            .unwrap_or_else(|| panic!("no target {prefix}"));
        let seen = server.started(i);
        let accounted = field(t, "scrapes_total") + field(t, "shed_after_request_total");
        assert!(
            seen >= accounted && seen <= accounted + 1,
            "target {i}: fixture saw {seen} requests, the scraper accounts for {accounted}: {t}"
        );
    }
    assert!(total(&metrics, "scraper_memory_limit_bytes") == BUDGET as f64);

    // What was forwarded reached the backend or was counted as dropped.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let metrics = s.metrics().await;
    let dropped = total(&metrics, "pyroscope_write_dropped_profiles_total");
    let received = (receiver.count() - before) as f64;
    let forwarded: u64 = s
        .targets("pyroscope.scrape.load")
        .await
        .iter()
        .map(|t| field(t, "forwarded_total"))
        .sum();
    assert!(
        (received + dropped - forwarded as f64).abs() < 1.0,
        "forwarded {forwarded}, received {received}, dropped {dropped}"
    );
}
