//! Faulty targets: each is marked down with a precise reason (debug info, metrics), nothing of
//! theirs is forwarded, and the scrape cadence of healthy targets next to them is unaffected
//! (measured). A slow target skips ticks instead of overlapping scrapes.

mod scrape_support;
mod support;

use std::time::{Duration, Instant};

use scrape_support::{Behavior, FaultServer, Scraper, captured, free_port, metric};
use support::pyroscope_receiver::PyroscopeReceiver;

/// (path, behaviour, expected reason, expected text in last_error)
fn faults() -> Vec<(&'static str, Behavior, &'static str, &'static str)> {
    let profile = captured("goapp-heap-1.pb.gz");
    let html =
        b"<!DOCTYPE html>\n<html><head><title>Login</title></head><body></body></html>".to_vec();
    let json = br#"{"status": "error", "error": "profiling disabled"}"#.to_vec();
    vec![
        (
            "/500",
            Behavior::Status(500, "boom\n"),
            "http_status",
            "server returned HTTP status (500) boom",
        ),
        (
            "/cpu-in-use",
            Behavior::Status(
                500,
                "Could not enable CPU profiling: cpu profiling already in use\n",
            ),
            "profiling_in_use",
            "already in use by another profiler",
        ),
        (
            "/html",
            Behavior::Typed("text/html; charset=utf-8", html.clone()),
            "content_type",
            "unexpected Content-Type text/html; charset=utf-8, expected application/octet-stream",
        ),
        (
            "/html-as-octets",
            Behavior::Typed("application/octet-stream", html),
            "not_pprof",
            "text response instead of pprof: \"<!DOCTYPE html>",
        ),
        (
            "/json",
            Behavior::Typed("application/octet-stream", json),
            "not_pprof",
            "text response instead of pprof: \"{\\\"status\\\"",
        ),
        (
            "/empty",
            Behavior::Typed("application/octet-stream", Vec::new()),
            "empty_body",
            "empty response from profiling endpoint",
        ),
        (
            "/truncated-gzip",
            Behavior::Profile(profile[..profile.len() / 2].to_vec()),
            "invalid_profile",
            "invalid profile: invalid gzip data",
        ),
        (
            "/garbage",
            Behavior::Profile(b"\xff\xfe\xfd\xfc\xfb\xfa random bytes".to_vec()),
            "invalid_profile",
            "illegal wireType 7",
        ),
        (
            "/garbage-protobuf",
            Behavior::Profile(b"\x0a\xff\xff\xff\xff\x0f\x01\x02\x03".to_vec()),
            "invalid_profile",
            "invalid profile: malformed protobuf",
        ),
        (
            "/over-limit",
            Behavior::Stream(1 << 20),
            "body_too_large",
            "exceeds body_size_limit (65536 bytes); stopped reading",
        ),
        (
            "/over-limit-declared",
            Behavior::Declared(1 << 20),
            "body_too_large",
            "response body of 1048576 bytes (Content-Length) exceeds body_size_limit",
        ),
        (
            "/never-answers",
            Behavior::Hang,
            "timeout",
            "scrape timed out after 1s",
        ),
        ("/reset", Behavior::Reset, "connection", "request failed: "),
    ]
}

fn target(addr: &str, path: &str, service: &str) -> String {
    format!(
        r#"{{"__address__" = "{addr}", "__profile_path__" = "{path}", "service_name" = "{service}"}}"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_targets_are_down_with_reasons_and_healthy_ones_keep_their_cadence() {
    let profile = captured("goapp-heap-1.pb.gz");
    let mut routes: Vec<(&'static str, Behavior)> =
        faults().into_iter().map(|(p, b, _, _)| (p, b)).collect();
    routes.push(("/ok-a", Behavior::Profile(profile.clone())));
    routes.push(("/ok-b", Behavior::Profile(profile.clone())));
    routes.push((
        "/slow",
        Behavior::Slow(Duration::from_millis(2500), profile.clone()),
    ));
    let server = FaultServer::start(routes).await;
    let addr = server.addr.to_string();
    let rx = PyroscopeReceiver::start().await;

    let mut targets: Vec<String> = faults()
        .iter()
        .map(|(p, _, _, _)| target(&addr, p, &p[1..]))
        .collect();
    targets.push(target(&addr, "/ok-a", "ok-a"));
    targets.push(target(&addr, "/ok-b", "ok-b"));
    // Nothing listens there.
    let refused = format!("127.0.0.1:{}", free_port());
    targets.push(target(&refused, "/x", "refused"));
    let only_goroutine = r#"
  profiling_config {
    profile.process_cpu {
      enabled = false
    }
    profile.memory {
      enabled = false
    }
    profile.mutex {
      enabled = false
    }
    profile.block {
      enabled = false
    }
  }"#;
    let config = format!(
        r#"
pyroscope.write "rx" {{
  endpoint {{
    url = "{rx}"
  }}
}}

pyroscope.scrape "faults" {{
  targets         = [{targets}]
  forward_to      = [pyroscope.write.rx.receiver]
  scrape_interval = "1s"
  scrape_timeout  = "1s"
  body_size_limit = 65536
{only_goroutine}
}}

pyroscope.scrape "slow" {{
  targets         = [{slow}]
  forward_to      = [pyroscope.write.rx.receiver]
  scrape_interval = "1s"
  scrape_timeout  = "5s"
{only_goroutine}
}}
"#,
        rx = rx.url(),
        targets = targets.join(",\n    "),
        slow = target(&addr, "/slow", "slow"),
    );
    let started = Instant::now();
    let scraper = Scraper::start(|_| config).await;

    // Every faulty target is down with its reason.
    let deadline = Instant::now() + Duration::from_secs(10);
    let (debug, all_down) = loop {
        let debug = scraper.targets("pyroscope.scrape.faults").await;
        let done = debug.len() == faults().len() + 3
            && debug
                .iter()
                .all(|t| t["health"] != "unknown" && t["scrapes_total"].as_u64() >= Some(1));
        if done || Instant::now() > deadline {
            break (debug, done);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(all_down, "targets not all scraped: {debug:#?}");
    let find = |service: &str| {
        debug
            .iter()
            .find(|t| t["labels"]["service_name"] == service)
            .unwrap_or_else(|| panic!("no target {service}"))
    };
    for (path, _, reason, text) in faults() {
        let t = find(&path[1..]);
        assert_eq!(t["health"], "down", "{path}: {t}");
        assert_eq!(t["last_error_reason"], reason, "{path}: {t}");
        let err = t["last_error"].as_str().unwrap_or("");
        eprintln!("{path}: {reason}: {err}");
        assert!(
            err.contains(text),
            "{path}: {err:?} should contain {text:?}"
        );
    }
    let refused_t = find("refused");
    assert_eq!(refused_t["last_error_reason"], "connection", "{refused_t}");
    assert!(
        refused_t["last_error"]
            .as_str()
            .is_some_and(|e| e.to_lowercase().contains("connection refused")),
        "{refused_t}"
    );
    for ok in ["ok-a", "ok-b"] {
        assert_eq!(find(ok)["health"], "up", "{}", find(ok));
    }

    // Metrics: up per target, errors by reason.
    let m = scraper.metrics().await;
    let up = |service: &str| metric(&m, "pyroscope_scrape_up", &[("service_name", service)]);
    assert_eq!(up("ok-a"), Some(1.0), "{m}");
    assert_eq!(up("500"), Some(0.0));
    assert_eq!(up("never-answers"), Some(0.0));
    for (_, _, reason, _) in faults() {
        let n = metric(
            &m,
            "pyroscope_scrape_errors_total",
            &[
                ("component_id", "pyroscope.scrape.faults"),
                ("reason", reason),
            ],
        );
        assert!(n >= Some(1.0), "no {reason} errors counted:\n{m}");
    }
    assert!(
        metric(
            &m,
            "pyroscope_scrape_duration_seconds",
            &[("service_name", "ok-a")]
        )
        .is_some_and(|d| d > 0.0 && d < 1.0)
    );

    // Let the healthy targets run next to the faulty ones for a while, then measure.
    let measure_from = started + Duration::from_secs(3);
    let until = started + Duration::from_secs(11);
    tokio::time::sleep_until(until.into()).await;
    for ok in ["/ok-a", "/ok-b"] {
        let times: Vec<Instant> = server
            .requests(ok)
            .into_iter()
            .filter(|t| *t >= measure_from)
            .collect();
        let gaps: Vec<f64> = times
            .windows(2)
            .map(|w| (w[1] - w[0]).as_secs_f64())
            .collect();
        assert!(gaps.len() >= 6, "{ok}: too few scrapes: {gaps:?}");
        let mean = gaps.iter().sum::<f64>() / gaps.len() as f64;
        eprintln!("{ok}: {} gaps, mean {mean:.3}s: {gaps:.3?}", gaps.len());
        assert!(
            (mean - 1.0).abs() < 0.1,
            "{ok}: mean gap {mean:.3}s: {gaps:?}"
        );
        assert!(
            gaps.iter().all(|g| (0.6..1.4).contains(g)),
            "{ok}: gaps {gaps:?}"
        );
    }
    // The slow target (2.5 s per answer, interval 1 s) is never scraped twice at once: its
    // loop skips the ticks it misses.
    let slow = server.requests("/slow");
    let gaps: Vec<f64> = slow
        .windows(2)
        .map(|w| (w[1] - w[0]).as_secs_f64())
        .collect();
    assert!(!gaps.is_empty(), "slow target scraped once only");
    assert!(
        gaps.iter().all(|g| (2.45..3.6).contains(g)),
        "slow target gaps {gaps:?}"
    );

    // Nothing from a faulty target reached the backend.
    let services: std::collections::BTreeSet<String> = rx
        .received()
        .iter()
        .filter_map(|r| r.label("service_name").map(str::to_string))
        .collect();
    let want: std::collections::BTreeSet<String> = ["ok-a", "ok-b", "slow"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_eq!(services, want);

    // Failures are logged once when they start, not on every scrape.
    let logs = scraper.logs();
    let warned = logs
        .lines()
        .filter(|l| l.contains("scrape failed") && l.contains("/500"))
        .count();
    assert_eq!(warned, 1, "{logs}");
}
