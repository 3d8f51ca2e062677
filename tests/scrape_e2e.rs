//! `pyroscope.scrape` end to end: the real `scraper` binary scrapes real Go programs (stdlib
//! net/http/pprof, built here with Debian's golang-go) and Debian's Prometheus, and pushes
//! through `pyroscope.write` to the recording receiver. Also the example configs in config/.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scrape_support::{
    Scraper, build_go, cum_of, decode, eventually, go_tool_pprof_raw, have_go, prometheus,
    start_go, start_prometheus, total_of,
};
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

const TYPES: [&str; 5] = ["process_cpu", "memory", "goroutine", "mutex", "block"];

fn config(rx: &str, targets: &str) -> String {
    format!(
        r#"
pyroscope.write "rx" {{
  external_labels = {{ "cluster" = "test" }}
  endpoint {{
    url = "{rx}"
  }}
}}

pyroscope.scrape "e2e" {{
  targets                  = {targets}
  forward_to               = [pyroscope.write.rx.receiver]
  job_name                 = "e2e"
  scrape_interval          = "3s"
  delta_profiling_duration = "2s"
}}
"#
    )
}

fn of_type<'a>(rx: &'a [Received], service: &str, name: &str) -> Vec<&'a Received> {
    rx.iter()
        .filter(|r| r.label("service_name") == Some(service) && r.label("__name__") == Some(name))
        .collect()
}

/// Exactly the labels spec §2.5 says reach the backend: public target labels, service_name,
/// instance, job, __name__, __delta__ (cumulative types), the otel.scope labels, and the
/// writer's external labels.
fn expected_labels(
    name: &str,
    instance: &str,
    service: &str,
    extra: &[(&str, &str)],
) -> BTreeMap<String, String> {
    let mut want: BTreeMap<String, String> = [
        ("__name__", name),
        ("cluster", "test"),
        ("instance", instance),
        ("job", "e2e"),
        ("otel.scope.name", "com.grafana.alloy/pyroscope.scrape"),
        ("otel.scope.version", env!("CARGO_PKG_VERSION")),
        ("service_name", service),
    ]
    .iter()
    .chain(extra)
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    if matches!(name, "memory" | "mutex" | "block") {
        want.insert("__delta__".into(), "false".into());
    }
    want
}

fn labels(r: &Received) -> BTreeMap<String, String> {
    r.labels.iter().cloned().collect()
}

async fn wait_for_types(rx: &PyroscopeReceiver, service: &str, timeout: Duration) -> bool {
    eventually(timeout, || async {
        let got = rx.received();
        TYPES.iter().all(|t| !of_type(&got, service, t).is_empty())
    })
    .await
}

fn wall_nanos() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_nanos() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_program_end_to_end() {
    if !have_go() {
        return;
    }
    let prog = build_go("scrapeapp");
    let (_app, addr) = start_go(&prog.bin, &["-fn", "alpha"]);
    let rx = PyroscopeReceiver::start().await;
    let targets = format!(
        r#"[{{"__address__" = "{addr}", "service_name" = "scrapeapp", "team" = "profiling", "__meta_source" = "static"}}]"#
    );
    let scraper = Scraper::start(|_| config(&rx.url(), &targets)).await;

    assert!(
        wait_for_types(&rx, "scrapeapp", Duration::from_secs(20)).await,
        "not every profile type arrived; got {:?}\nlogs:\n{}",
        rx.received()
            .iter()
            .map(|r| r.label("__name__").unwrap_or("").to_string())
            .collect::<Vec<_>>(),
        scraper.logs()
    );
    let got = rx.received();

    // Labels: exactly the spec's list; private ones (__address__, __meta_*...) stripped by
    // pyroscope.write.
    for t in TYPES {
        for r in of_type(&got, "scrapeapp", t) {
            assert_eq!(
                labels(r),
                expected_labels(t, &addr, "scrapeapp", &[("team", "profiling")]),
                "{t}"
            );
        }
    }

    // CPU: a profile over the `seconds` window (delta_profiling_duration = 2s).
    let cpu = decode(&of_type(&got, "scrapeapp", "process_cpu")[0].raw);
    assert!(
        (1_500_000_000..3_500_000_000).contains(&cpu.duration_nanos),
        "CPU profile duration {} ns, want about 2 s",
        cpu.duration_nanos
    );
    assert!(total_of(&cpu, "cpu") > 0, "CPU profile has no samples");

    // Memory: the first scrape is only a baseline; what is sent is a delta (much less than the
    // cumulative total since the program started).
    let debug = scraper.targets("pyroscope.scrape.e2e").await;
    let mem_loop = debug
        .iter()
        .find(|t| t["profile_type"] == "memory")
        .expect("memory loop");
    let scrapes = mem_loop["scrapes_total"].as_u64().expect("scrapes");
    let forwarded = mem_loop["forwarded_total"].as_u64().expect("forwarded");
    assert_eq!(
        forwarded,
        scrapes - 1,
        "memory: the first scrape must not be sent ({mem_loop})"
    );
    assert!(mem_loop["last_outcome"] == "forwarded", "{mem_loop}");
    assert!(mem_loop["delta_state_bytes"].as_u64().expect("bytes") > 0);
    let cpu_loop = debug
        .iter()
        .find(|t| t["profile_type"] == "process_cpu")
        .expect("cpu loop");
    assert_eq!(
        cpu_loop["url"],
        format!("http://{addr}/debug/pprof/profile?seconds=2")
    );
    for t in &debug {
        assert_eq!(t["health"], "up", "{t}");
        assert_eq!(t["job"], "e2e");
    }
    // Two deltas or more: their sum is what was allocated between the baseline and the last
    // scrape, less than the cumulative total now (summed cumulative profiles would exceed it).
    assert!(
        eventually(Duration::from_secs(10), || async {
            of_type(&rx.received(), "scrapeapp", "memory").len() >= 2
        })
        .await,
        "fewer than two memory profiles"
    );
    let got = rx.received();
    let mem = of_type(&got, "scrapeapp", "memory");
    let cumulative = decode(
        &reqwest::get(format!("http://{addr}/debug/pprof/allocs"))
            .await
            .expect("allocs")
            .bytes()
            .await
            .expect("body"),
    );
    let deltas: Vec<i64> = mem
        .iter()
        .map(|r| total_of(&decode(&r.raw), "alloc_space"))
        .collect();
    let c = total_of(&cumulative, "alloc_space");
    assert!(
        deltas.iter().all(|d| *d > 0) && deltas.iter().sum::<i64>() < c,
        "memory deltas {deltas:?} must be positive and sum to less than the cumulative {c}"
    );
    let delta = decode(&mem.last().expect("memory").raw);
    assert!(
        total_of(&delta, "inuse_space") > 0,
        "gauges pass through the delta"
    );

    // Every profile parses with Go's own reader.
    for r in &got {
        if let Err(e) = go_tool_pprof_raw(&r.raw) {
            panic!("go tool pprof -raw rejects {:?}: {e}", r.labels);
        }
    }

    // Workload change: CPU moves from alphaWork to betaWork; the next CPU profile collected
    // after the switch shows it.
    let before = cpu;
    assert!(
        cum_of(&before, "cpu", "main.alphaWork") > 0
            && cum_of(&before, "cpu", "main.betaWork") == 0,
        "before the switch: alpha {} beta {}",
        cum_of(&before, "cpu", "main.alphaWork"),
        cum_of(&before, "cpu", "main.betaWork")
    );
    let switched_at = wall_nanos();
    let resp = reqwest::get(format!("http://{addr}/work?fn=beta"))
        .await
        .expect("switch");
    assert!(resp.status().is_success());
    let mut after = None;
    let found = eventually(Duration::from_secs(12), || {
        let cpus: Vec<_> = of_type(&rx.received(), "scrapeapp", "process_cpu")
            .into_iter()
            .map(|r| decode(&r.raw))
            .filter(|p| p.time_nanos > switched_at)
            .collect();
        after = cpus.into_iter().next();
        std::future::ready(after.is_some())
    })
    .await;
    assert!(found, "no CPU profile started after the switch");
    let after = after.expect("profile");
    let (alpha, beta) = (
        cum_of(&after, "cpu", "main.alphaWork"),
        cum_of(&after, "cpu", "main.betaWork"),
    );
    assert!(
        beta > 0 && alpha == 0,
        "after the switch: alpha {alpha} beta {beta}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_as_a_third_party_target() {
    if !have_go() {
        return;
    }
    let Some(bin) = prometheus() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (_prom, addr) = start_prometheus(&bin, dir.path());
    let rx = PyroscopeReceiver::start().await;
    let targets = format!(r#"[{{"__address__" = "{addr}", "service_name" = "prometheus"}}]"#);
    let scraper = Scraper::start(|_| config(&rx.url(), &targets)).await;
    assert!(
        wait_for_types(&rx, "prometheus", Duration::from_secs(25)).await,
        "not every profile type arrived from Prometheus; logs:\n{}",
        scraper.logs()
    );
    let got = rx.received();
    for t in TYPES {
        for r in of_type(&got, "prometheus", t) {
            assert_eq!(
                labels(r),
                expected_labels(t, &addr, "prometheus", &[]),
                "{t}"
            );
            if let Err(e) = go_tool_pprof_raw(&r.raw) {
                panic!("go tool pprof -raw rejects Prometheus' {t}: {e}");
            }
        }
    }
    // Prometheus does not enable mutex/block profiling: valid profiles without samples, whose
    // deltas are empty but still sent.
    let block = decode(&of_type(&got, "prometheus", "block")[0].raw);
    assert!(block.sample.is_empty());
    let heap = decode(&of_type(&got, "prometheus", "memory")[0].raw);
    assert!(total_of(&heap, "inuse_space") > 0);
    let goroutines = decode(&of_type(&got, "prometheus", "goroutine")[0].raw);
    assert!(total_of(&goroutines, "goroutine") > 5);
    for t in scraper.targets("pyroscope.scrape.e2e").await {
        assert_eq!(t["health"], "up", "{t}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_config_prints_our_own_profiles() {
    let text = std::fs::read_to_string(scrape_support::repo().join("config/local.alloy"))
        .expect("config/local.alloy");
    assert!(text.contains("127.0.0.1:12345"));
    let scraper = Scraper::start(|addr| text.replace("127.0.0.1:12345", addr)).await;
    let printed = scraper
        .wait(Duration::from_secs(25), |s| {
            let out = s.output();
            ["process_cpu", "memory", "goroutine"]
                .iter()
                .all(|t| out.contains(&format!(" {t} service_name=\"scraper\"")))
        })
        .await;
    assert!(
        printed,
        "not every profile type printed; stdout:\n{}\nlogs:\n{}",
        scraper.output(),
        scraper.logs()
    );
    let out = scraper.output();
    assert!(out.contains("  sample types: samples/count"), "{out}");
    assert!(out.contains("__name__=\"process_cpu\""), "{out}");
    // Our tasks by name and our memory by account (src/server/self_profiles.rs).
    assert!(out.contains("  sample types: goroutine/count"), "{out}");
    assert!(out.contains("  sample types: inuse_space/bytes"), "{out}");
    let debug = scraper.component("pyroscope.debug.console").await;
    assert!(
        debug["debugInfo"]["printed_total"].as_u64() >= Some(3),
        "{debug}"
    );
    let targets = scraper.targets("pyroscope.scrape.self").await;
    let mut urls: Vec<&str> = targets.iter().filter_map(|t| t["url"].as_str()).collect();
    urls.sort();
    assert_eq!(
        urls.len(),
        3,
        "cpu, memory and goroutine are enabled: {targets:?}"
    );
    for (url, path) in urls.iter().zip([
        "/debug/pprof/goroutine",
        "/debug/pprof/heap",
        "/debug/pprof/profile?seconds=4",
    ]) {
        assert!(url.ends_with(path), "{url} should end with {path}");
    }
    for t in &targets {
        assert_eq!(t["health"], "up", "{t}");
    }
}

/// The seed config passes `scraper check` unchanged (it runs end to end in
/// tests/seed_pipeline.rs), in an environment that sets the variables it reads, as a
/// deployment does (tests/runtime_cli.rs checks the message when `PYROSCOPE_URL` is unset).
#[test]
fn seed_config_is_accepted() {
    let path = scrape_support::repo().join("config/seed-otel-collector.alloy");
    let src = std::fs::read_to_string(&path).expect("seed config");
    let corpus =
        scrape_support::repo().join("../shared/alloy-corpus/profiling/seed-otel-collector.alloy");
    if let Ok(original) = std::fs::read_to_string(corpus) {
        assert_eq!(src, original, "config/ copy differs from the corpus file");
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_scraper"))
        .arg("check")
        .arg(&path)
        .env("PYROSCOPE_URL", "http://pyroscope:4040")
        .env("PYROSCOPE_USERNAME", "user")
        .env("PYROSCOPE_PASSWORD", "secret")
        .output()
        .expect("run scraper check");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
