//! Faulty targets: each is marked down with a precise reason (debug info, metrics), nothing of
//! theirs is forwarded, and healthy targets next to them keep being scraped: a scrape held open
//! does not hold up the other loops, and a loop whose scrape overruns skips ticks instead of
//! overlapping scrapes. The component's health sums its targets up and turns unhealthy while
//! every target is down; a target that serves deltas under a cumulative type is forwarded as
//! received. Assertions are about what happened (requests, counters, log lines, health), never
//! about how long it took; waits have generous limits that only guard against hangs.

mod scrape_support;
mod support;

use std::time::{Duration, Instant};

use scrape_support::{
    Behavior, FaultServer, Scraper, captured, decode, eventually, free_port, metric, scaled_heap,
};
use support::pyroscope_receiver::PyroscopeReceiver;
use tokio_util::sync::CancellationToken;

/// How long any wait may take before the test fails as hung; never reached when things work.
const HANG_GUARD: Duration = Duration::from_secs(60);

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

const ONLY_GOROUTINE: &str = r#"
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

/// Polls the debug info of `component` until `done` holds for it; fails the test on the hang
/// guard with the last debug info.
async fn wait_targets(
    scraper: &Scraper,
    component: &str,
    what: &str,
    done: impl Fn(&[serde_json::Value]) -> bool,
) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + HANG_GUARD;
    let mut last = scraper.targets(component).await;
    let mut ok = done(&last);
    while !ok && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        last = scraper.targets(component).await;
        ok = done(&last);
    }
    assert!(ok, "{what}: {last:#?}\n{}", scraper.logs());
    last
}

fn find<'a>(targets: &'a [serde_json::Value], service: &str) -> &'a serde_json::Value {
    targets
        .iter()
        .find(|t| t["labels"]["service_name"] == service)
        .unwrap_or_else(|| panic!("no target {service}"))
}

fn count(t: &serde_json::Value, field: &str) -> u64 {
    t[field].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn faulty_targets_are_down_with_reasons_and_healthy_ones_keep_being_scraped() {
    let profile = captured("goapp-heap-1.pb.gz");
    let gate = CancellationToken::new();
    let mut routes: Vec<(&'static str, Behavior)> =
        faults().into_iter().map(|(p, b, _, _)| (p, b)).collect();
    routes.push(("/ok-a", Behavior::Profile(profile.clone())));
    routes.push(("/ok-b", Behavior::Profile(profile.clone())));
    routes.push(("/ok-c", Behavior::Profile(profile.clone())));
    routes.push(("/slow", Behavior::Gated(gate.clone(), profile.clone())));
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
    // The slow component's timeout is far beyond the test: its held scrape ends only when the
    // test opens the gate.
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
{ONLY_GOROUTINE}
}}

pyroscope.scrape "slow" {{
  targets         = [{slow}, {ok_c}]
  forward_to      = [pyroscope.write.rx.receiver]
  scrape_interval = "1s"
  scrape_timeout  = "600s"
{ONLY_GOROUTINE}
}}
"#,
        rx = rx.url(),
        targets = targets.join(",\n    "),
        slow = target(&addr, "/slow", "slow"),
        ok_c = target(&addr, "/ok-c", "ok-c"),
    );
    let scraper = Scraper::start(|_| config).await;

    // Every faulty target is down with its reason.
    let debug = wait_targets(
        &scraper,
        "pyroscope.scrape.faults",
        "targets not all scraped",
        |ts| {
            ts.len() == faults().len() + 3
                && ts
                    .iter()
                    .all(|t| t["health"] != "unknown" && count(t, "scrapes_total") >= 1)
        },
    )
    .await;
    for (path, _, reason, text) in faults() {
        let t = find(&debug, &path[1..]);
        assert_eq!(t["health"], "down", "{path}: {t}");
        assert_eq!(t["last_error_reason"], reason, "{path}: {t}");
        let err = t["last_error"].as_str().unwrap_or("");
        eprintln!("{path}: {reason}: {err}");
        assert!(
            err.contains(text),
            "{path}: {err:?} should contain {text:?}"
        );
    }
    let refused_t = find(&debug, "refused");
    assert_eq!(refused_t["last_error_reason"], "connection", "{refused_t}");
    assert!(
        refused_t["last_error"]
            .as_str()
            .is_some_and(|e| e.to_lowercase().contains("connection refused")),
        "{refused_t}"
    );
    for ok in ["ok-a", "ok-b"] {
        assert_eq!(find(&debug, ok)["health"], "up", "{}", find(&debug, ok));
    }

    // The component is healthy (two targets are up) and its health says how the rest fare.
    let health = &scraper.component("pyroscope.scrape.faults").await["health"];
    assert_eq!(health["state"], "healthy", "{health}");
    let message = health["message"].as_str().unwrap_or("");
    let total = faults().len() + 3;
    assert!(
        message.starts_with(&format!(
            "{total} targets: 2 up, {} down (last error: http://",
            total - 2
        )),
        "{message}"
    );

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
        .is_some_and(|d| d > 0.0)
    );

    // Healthy targets keep being scraped next to the failing ones.
    wait_targets(
        &scraper,
        "pyroscope.scrape.faults",
        "healthy targets stopped being scraped",
        |ts| {
            ["ok-a", "ok-b"]
                .iter()
                .all(|s| count(find(ts, s), "forwarded_total") >= 4)
        },
    )
    .await;

    // A scrape held open holds up no other loop: while the slow target's first scrape waits
    // for its answer, the target next to it is scraped again and again.
    assert!(
        eventually(HANG_GUARD, || async { server.in_flight("/slow").now == 1 }).await,
        "the slow target was never scraped"
    );
    let before = server.requests("/ok-c").len();
    let ok_c_scraped = eventually(HANG_GUARD, || async {
        server.requests("/ok-c").len() >= before + 5
    })
    .await;
    assert!(ok_c_scraped, "ok-c was not scraped while slow was held");
    assert_eq!(
        server.requests("/slow").len(),
        1,
        "a loop scraped again while its previous scrape was still running"
    );
    assert_eq!(server.in_flight("/slow").now, 1);

    // Released, the slow loop goes on: its scrapes never overlap, and the ticks it missed while
    // held are skipped (counted), not caught up in a burst. Five scrapes of ok-c while held
    // means the hold spanned several ticks.
    gate.cancel();
    let slow = wait_targets(
        &scraper,
        "pyroscope.scrape.slow",
        "the slow loop did not go on",
        |ts| {
            let t = find(ts, "slow");
            count(t, "forwarded_total") >= 2 && count(t, "missed_total") >= 1
        },
    )
    .await;
    assert_eq!(server.in_flight("/slow").max, 1, "overlapping scrapes");
    assert_eq!(find(&slow, "slow")["health"], "up");

    // Nothing from a faulty target reached the backend.
    let want: std::collections::BTreeSet<String> = ["ok-a", "ok-b", "ok-c", "slow"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert!(
        eventually(HANG_GUARD, || async {
            let services: std::collections::BTreeSet<String> = rx
                .received()
                .iter()
                .filter_map(|r| r.label("service_name").map(str::to_string))
                .collect();
            services == want
        })
        .await,
        "received from {:?}",
        rx.received()
            .iter()
            .filter_map(|r| r.label("service_name").map(str::to_string))
            .collect::<std::collections::BTreeSet<_>>()
    );

    // Failures are logged once when they start, not on every scrape.
    let logs = scraper.logs();
    let warned = logs
        .lines()
        .filter(|l| l.contains("scrape failed") && l.contains("/500"))
        .count();
    assert_eq!(warned, 1, "{logs}");
}

/// The component's `health` from the API.
async fn health(scraper: &Scraper, id: &str) -> serde_json::Value {
    scraper.component(id).await["health"].clone()
}

/// Polls the component's health until its state is `state`; fails on the hang guard.
async fn wait_health(scraper: &Scraper, id: &str, state: &str) -> serde_json::Value {
    let deadline = Instant::now() + HANG_GUARD;
    let mut last = health(scraper, id).await;
    while last["state"] != state && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        last = health(scraper, id).await;
    }
    let ok = last["state"] == state;
    assert!(ok, "health never {state}: {last}\n{}", scraper.logs());
    last
}

fn lines_with(logs: &str, texts: &[&str]) -> usize {
    logs.lines()
        .filter(|l| texts.iter().all(|t| l.contains(t)))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_component_whose_targets_are_all_down_is_unhealthy_until_one_comes_up() {
    // Two targets where nothing listens; the first will come up later.
    let (a, b) = (
        format!("127.0.0.1:{}", free_port()),
        format!("127.0.0.1:{}", free_port()),
    );
    let config = format!(
        r#"
pyroscope.scrape "down" {{
  targets         = [{a}, {b}]
  forward_to      = []
  scrape_interval = "200ms"
  scrape_timeout  = "200ms"
{ONLY_GOROUTINE}
}}
"#,
        a = target(&a, "/p", "a"),
        b = target(&b, "/p", "b"),
    );
    let scraper = Scraper::start(|_| config).await;
    let id = "pyroscope.scrape.down";

    let h = wait_health(&scraper, id, "unhealthy").await;
    let message = h["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(
            "every target down for more than two scrape intervals: 2 targets: 0 up, 2 down (last error: http://127.0.0.1:"
        ) && message.to_lowercase().contains("connection refused"),
        "{message}"
    );
    // Unhealthy only after each target failed three scrapes in a row (failures only grow).
    let targets = scraper.targets(id).await;
    for t in &targets {
        assert!(count(t, "failures_total") >= 3, "{t}");
        assert_eq!(t["health"], "down", "{t}");
    }
    assert_eq!(
        metric(
            &scraper.metrics().await,
            "pyroscope_scrape_all_targets_down",
            &[("component_id", id)]
        ),
        Some(1.0)
    );
    let warning = [
        "level=warn",
        "every target has been down for more than two scrape intervals",
    ];
    assert_eq!(
        lines_with(&scraper.logs(), &warning),
        1,
        "{}",
        scraper.logs()
    );

    // One target comes up: healthy again, saying which one is still down.
    let _server = FaultServer::start_at(
        &a,
        vec![("/p", Behavior::Profile(captured("goapp-heap-1.pb.gz")))],
    )
    .await;
    let h = wait_health(&scraper, id, "healthy").await;
    let message = h["message"].as_str().unwrap_or("");
    assert!(
        message.starts_with(&format!(
            "2 targets: 1 up, 1 down (last error: http://{b}/p"
        )),
        "{message}"
    );
    assert_eq!(
        metric(
            &scraper.metrics().await,
            "pyroscope_scrape_all_targets_down",
            &[("component_id", id)]
        ),
        Some(0.0)
    );
    let logs = scraper.logs();
    assert_eq!(
        lines_with(&logs, &["level=info", "targets are being scraped again"]),
        1,
        "{logs}"
    );
    assert_eq!(lines_with(&logs, &warning), 1, "{logs}");
}

/// `profile.memory` only, at `path`.
fn memory_at(path: &str) -> String {
    format!(
        r#"
  profiling_config {{
    profile.process_cpu {{
      enabled = false
    }}
    profile.goroutine {{
      enabled = false
    }}
    profile.mutex {{
      enabled = false
    }}
    profile.block {{
      enabled = false
    }}
    profile.memory {{
      path = "{path}"
    }}
  }}"#
    )
}

/// Heap profiles a target serves, scrape after scrape (the last one forever after), as
/// factors of one real Go heap profile's values (see `scaled_heap`).
fn heaps(factors: &[i64]) -> Vec<Vec<u8>> {
    factors.iter().map(|&f| scaled_heap(f)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn targets_that_serve_deltas_are_forwarded_as_received_and_restarts_are_reported() {
    // godeltaprof's path, with per-interval values that go up and down.
    let by_path = heaps(&[3, 1, 2, 1, 4]);
    // A path that says nothing, with values that keep going down: the first decrease looks
    // like a restart, the second gives the endpoint away.
    let by_values = heaps(&[4, 2, 1, 3, 1, 2, 1]);
    // A cumulative endpoint whose process restarts once: one restart, deltas around it.
    let restarting = heaps(&[1, 2, 1, 2, 3]);
    let server = FaultServer::start(vec![
        (
            "/debug/pprof/delta_heap",
            Behavior::sequence(by_path.clone()),
        ),
        ("/custom/heap", Behavior::sequence(by_values.clone())),
        ("/restarting/heap", Behavior::sequence(restarting.clone())),
    ])
    .await;
    let addr = server.addr.to_string();
    let rx = PyroscopeReceiver::start().await;
    let scrape = |name: &str, path: &str, service: &str| {
        format!(
            r#"
pyroscope.scrape "{name}" {{
  targets         = [{{"__address__" = "{addr}", "service_name" = "{service}"}}]
  forward_to      = [pyroscope.write.rx.receiver]
  scrape_interval = "200ms"
{config}
}}
"#,
            config = memory_at(path),
        )
    };
    let config = format!(
        r#"
pyroscope.write "rx" {{
  endpoint {{
    url = "{rx}"
  }}
}}
{path}{values}{restarting}"#,
        rx = rx.url(),
        path = scrape("path", "/debug/pprof/delta_heap", "by-path"),
        values = scrape("values", "/custom/heap", "by-values"),
        restarting = scrape("restarting", "/restarting/heap", "restarting"),
    );
    let scraper = Scraper::start(|_| config).await;

    let of = |service: &str| -> Vec<bytes::Bytes> {
        rx.received()
            .iter()
            .filter(|r| r.label("service_name") == Some(service))
            .map(|r| r.raw.clone())
            .collect()
    };
    // Every body served, then the last one again; the restarting target's four deltas.
    let enough = eventually(HANG_GUARD, || async {
        of("by-path").len() > by_path.len()
            && of("by-values").len() > by_values.len() - 2
            && of("restarting").len() >= 4
    })
    .await;
    assert!(enough, "not enough profiles received\n{}", scraper.logs());

    // Served deltas arrive as they were served, byte for byte: every scrape of the godeltaprof
    // path; from the detecting (third) scrape on for the other.
    let expect = |served: &[Vec<u8>], skip: usize, got: &[bytes::Bytes]| {
        for (i, raw) in got.iter().enumerate() {
            let want = &served[(skip + i).min(served.len() - 1)];
            assert_eq!(
                decode(raw).sample,
                decode(want).sample,
                "profile {i}: sample values differ from what was served"
            );
            assert_eq!(raw.as_ref(), want.as_slice(), "profile {i} was changed");
        }
    };
    expect(&by_path, 0, &of("by-path"));
    expect(&by_values, 2, &of("by-values"));

    // The restarting target's deltas: 2-1, then (after the restart at 1) 2-1 and 3-2, then
    // nothing new (empty deltas) — all sent as deltas, never as received.
    let one = decode(&scaled_heap(1));
    let total = |p: &scraper::pprof::proto::Profile| scrape_support::total_of(p, "alloc_space");
    let deltas: Vec<i64> = of("restarting").iter().map(|r| total(&decode(r))).collect();
    assert_eq!(&deltas[..3], [total(&one); 3], "{deltas:?}");
    assert!(deltas[3..].iter().all(|&d| d == 0), "{deltas:?}");

    // One warning per target that serves deltas, saying what was done; one restart line for
    // the restart (and for the first decrease of the endpoint found by its values).
    let logs = scraper.logs();
    let path_warning = ["level=warn", "a godeltaprof path", "forwarded as received"];
    let values_warning = [
        "level=warn",
        "counters keep going down",
        "forwarded as received",
    ];
    assert_eq!(lines_with(&logs, &path_warning), 1, "{logs}");
    assert_eq!(lines_with(&logs, &values_warning), 1, "{logs}");
    assert_eq!(lines_with(&logs, &["by-path", "forwarded as received"]), 1);
    assert_eq!(
        lines_with(&logs, &["by-values", "forwarded as received"]),
        1
    );
    let restarted = |service: &str| {
        lines_with(
            &logs,
            &[
                "level=info",
                "target restarted",
                &format!("service_name=\\\"{service}\\\""),
            ],
        )
    };
    assert_eq!(restarted("restarting"), 1, "{logs}");
    assert_eq!(restarted("by-values"), 1, "{logs}");
    assert_eq!(restarted("by-path"), 0, "{logs}");

    let m = scraper.metrics().await;
    let changes = |id: &str, cause: &str| {
        metric(
            &m,
            "pyroscope_scrape_delta_mode_changes_total",
            &[
                ("component_id", id),
                ("mode", "as_received"),
                ("cause", cause),
            ],
        )
    };
    assert_eq!(changes("pyroscope.scrape.path", "path"), Some(1.0), "{m}");
    assert_eq!(
        changes("pyroscope.scrape.values", "values"),
        Some(1.0),
        "{m}"
    );
    let restarts = |id: &str| {
        metric(
            &m,
            "pyroscope_scrape_target_restarts_total",
            &[("component_id", id), ("reason", "counters_decreased")],
        )
    };
    assert_eq!(restarts("pyroscope.scrape.restarting"), Some(1.0), "{m}");
    assert_eq!(restarts("pyroscope.scrape.values"), Some(1.0), "{m}");
    for (id, service) in [("path", "by-path"), ("values", "by-values")] {
        let t = &scraper.targets(&format!("pyroscope.scrape.{id}")).await;
        assert_eq!(find(t, service)["delta_mode"], "as_received", "{t:?}");
    }
    let t = &scraper.targets("pyroscope.scrape.restarting").await;
    assert_eq!(find(t, "restarting")["delta_mode"], "subtracted");
}
