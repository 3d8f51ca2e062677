//! pyroscope.write tells the operator what goes wrong: an outage is one warning when it starts
//! and one line when it ends, with what was queued, sent and dropped meanwhile; the component
//! is unhealthy during it; drops are logged rate-limited, with counts that add up to the
//! metrics; and delivery resumes within seconds of the backend's return, with Alloy's default
//! backoff (500 ms doubling to 5 minutes), thanks to probing.
//!
//! Log lines are captured in-process (`support::logs`) and told apart by endpoint URL.

mod support;

use std::time::{Duration, Instant};

use scraper::runtime::{Component as _, HealthState};
use support::logs;
use support::pyroscope_receiver::{Fault, PyroscopeReceiver, Writer, numbered_profile};

/// Hang guard for waits whose end does not depend on timing.
const WAIT: Duration = Duration::from_secs(30);

const FAILING: &str =
    "endpoint failing; profiles stay queued and are retried until it recovers (or they age out)";
const RECOVERED: &str = "endpoint recovered";
const QUEUE_FULL: &str = "queue full; dropped the oldest profiles";

/// The outage's duration as the recovery line writes it (`Duration`'s debug form).
fn seconds(text: &str) -> f64 {
    if let Some(ms) = text.strip_suffix("ms") {
        ms.parse::<f64>().expect("ms") / 1000.0
    } else {
        text.strip_suffix('s')
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("not a duration: {text}"))
    }
}

async fn wait_for_line(url: &str, message: &str) -> serde_json::Value {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(l) = logs::matching("endpoint", url, Some(message)).pop() {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "no {message:?} line for {url}:\n{}",
            logs::dump()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// With one sender, how soon delivery resumes depends on probing alone: without it, the
/// sender's next attempt after a 25 s outage would come anywhere from 0 to 40 s after the
/// backend's return. With the default four, it also takes waking the others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_is_one_warning_one_recovery_line_and_delivery_resumes_within_seconds() {
    outage_with(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_with_the_default_four_senders() {
    outage_with(4).await;
}

async fn outage_with(senders: usize) {
    logs::capture();
    let rx = PyroscopeReceiver::start().await;
    let url = rx.url();
    // Alloy's default backoff: min_backoff_period 500ms doubling to max_backoff_period 5m.
    // Few retries, to show that probing uses up none of them.
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{url}\"\n  max_backoff_retries = 3\n  queue_config {{\n    senders = {senders}\n  }}\n}}\n"
    ));
    let unhealthy = |w: &Writer| {
        w.component
            .health()
            .filter(|h| h.state == HealthState::Unhealthy)
    };

    w.append(vec![numbered_profile("before", 0)]);
    assert!(rx.wait_for(1, WAIT).await);
    assert!(unhealthy(&w).is_none());

    // The backend goes down (503, Connect `unavailable`). The first failed push starts the
    // outage; everything queued from then on is the outage's.
    rx.set_outage(Fault::Connect("unavailable"));
    w.append(vec![numbered_profile("s0", 0)]);
    let warning = wait_for_line(&url, FAILING).await;
    assert_eq!(warning["level"], "WARN");
    assert!(
        warning["err"]
            .as_str()
            .is_some_and(|e| e.contains("unavailable"))
    );
    assert_eq!(w.metric("pyroscope_write_endpoint_failing", &[]), 1.0);

    // Profiles keep coming for 25 s, longer than the backoff needs to grow past 10 s.
    let outage = Duration::from_secs(25);
    let (series, mut appended) = (5, 0);
    let started = Instant::now();
    let mut health_messages = Vec::new();
    while started.elapsed() < outage {
        for s in 0..series {
            w.append(vec![numbered_profile(
                &format!("s{s}"),
                1 + appended / series,
            )]);
            appended += 1;
        }
        health_messages.push(unhealthy(&w).map(|h| h.message));
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let faulted = rx.request_count() - 1;
    assert_eq!(rx.count(), 1, "nothing got through the outage");
    for m in &health_messages {
        let m = m.as_deref().expect("unhealthy throughout the outage");
        assert!(m.contains(&url) && m.contains("failing"), "{m}");
    }

    rx.end_outage();
    let back = Instant::now();
    let total = 2 + appended;
    assert!(
        rx.wait_for(total, WAIT).await,
        "{} of {total} arrived",
        rx.count()
    );
    let first = rx.received()[1].at;
    let resumed = first.saturating_duration_since(back);
    eprintln!(
        "{senders} sender(s): delivery resumed {resumed:?} after the receiver came back; {faulted} requests during the {outage:?} outage"
    );
    assert!(
        resumed < Duration::from_secs(10),
        "delivery resumed only {resumed:?} after the backend came back"
    );

    let recovered = wait_for_line(&url, RECOVERED).await;
    assert_eq!(recovered["level"], "INFO");
    assert_eq!(logs::number(&recovered, "queued"), appended as u64);
    assert_eq!(logs::number(&recovered, "dropped"), 0);
    let sent = logs::number(&recovered, "sent");
    assert!(
        (1..=appended as u64 + 1).contains(&sent),
        "sent {sent} of {}",
        appended + 1
    );
    let reported = seconds(recovered["outage"].as_str().expect("outage"));
    assert!(
        reported >= outage.as_secs_f64(),
        "outage reported as {reported}s"
    );
    // One line each, whatever the number of retries; nothing dropped, nothing else said.
    let ours = logs::matching("endpoint", &url, None);
    let messages: Vec<&str> = ours.iter().filter_map(|l| l["message"].as_str()).collect();
    assert_eq!(messages, [FAILING, RECOVERED], "{}", logs::dump());

    assert!(unhealthy(&w).is_none(), "{:?}", w.component.health());
    assert_eq!(w.metric("pyroscope_write_endpoint_failing", &[]), 0.0);
    assert!(
        w.wait(WAIT, |w| w
            .metric("pyroscope_write_sent_profiles_total", &[])
            == total as f64)
            .await
    );
    // The prober's profile was tried more than max_backoff_retries times (once every 3 s at
    // the least), yet an unavailable endpoint uses up no profile's retries: nothing dropped.
    assert_eq!(w.metric("pyroscope_write_dropped_profiles_total", &[]), 0.0);
    assert!(
        faulted > 3 * senders,
        "{faulted} requests during the outage"
    );
    // Probing is one request every 1 to 3 s, plus the other senders' backoff: no flood.
    assert!(faulted <= 100, "{faulted} requests during the outage");
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_full_drops_are_logged_rate_limited_and_add_up_to_the_metric() {
    logs::capture();
    let rx = PyroscopeReceiver::start().await;
    let url = rx.url();
    // Every profile costs 8 bytes + 44 bytes of encoded labels: room for 10. One sender, so
    // one profile is in flight while the outage lasts.
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{url}\"\n  queue_config {{\n    max_bytes = 520\n    senders = 1\n  }}\n}}\n"
    ));
    rx.set_outage(Fault::Connect("unavailable"));
    w.append(vec![numbered_profile("s", 0)]);
    wait_for_line(&url, FAILING).await;
    let n = 100;
    for i in 1..=n {
        w.append(vec![numbered_profile("s", i)]);
    }
    let dropped = n - 10;
    assert_eq!(
        w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "queue_full")]
        ),
        dropped as f64
    );
    // The first eviction is logged at once; the others wait for the interval to pass.
    let lines = logs::matching("endpoint", &url, Some(QUEUE_FULL));
    assert_eq!(lines.len(), 1, "{}", logs::dump());
    assert_eq!(lines[0]["level"], "WARN");
    assert_eq!(lines[0]["reason"], "queue_full");
    assert_eq!(logs::number(&lines[0], "profiles"), 1);
    assert_eq!(logs::number(&lines[0], "bytes"), 8);
    let health = w.component.health().expect("unhealthy");
    assert_eq!(health.state, HealthState::Unhealthy);
    assert!(health.message.contains("queue_full"), "{}", health.message);

    rx.end_outage();
    assert!(rx.wait_for(11, WAIT).await, "{} arrived", rx.count());
    let recovered = wait_for_line(&url, RECOVERED).await;
    assert_eq!(logs::number(&recovered, "queued"), n as u64);
    assert_eq!(logs::number(&recovered, "dropped"), dropped as u64);
    assert_eq!(
        recovered["dropped_by_reason"],
        format!("queue_full={dropped}")
    );
    // Recovered, but the drops keep the component unhealthy for the rest of the interval.
    assert!(
        w.component.health().is_some_and(
            |h| !h.message.contains("failing") && h.message.contains("dropped profiles")
        )
    );

    // The rest is summed up in one line at exit: the lines add up to the metric.
    w.stop().await;
    let lines = logs::matching("endpoint", &url, Some(QUEUE_FULL));
    let counts: Vec<u64> = lines.iter().map(|l| logs::number(l, "profiles")).collect();
    assert_eq!(counts, [1, dropped as u64 - 1], "{}", logs::dump());
    let bytes: u64 = lines.iter().map(|l| logs::number(l, "bytes")).sum();
    assert_eq!(bytes, dropped as u64 * 8);
}
