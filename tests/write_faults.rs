//! pyroscope.write under backend faults: outages, full queues, rejected and rate-limited
//! pushes, hangs, resets; and the producer never waiting on any of it.
//!
//! Outages are simulated with short backoffs: a 3 s outage with `min_backoff_period = "5ms"`
//! and `max_backoff_period = "500ms"` puts each sender through the same number of doublings
//! (and more attempts) as a 10 minute outage with Alloy's 500ms..5m, about 200 times faster.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant, SystemTime};

use scraper::profiles::Profile;
use support::pyroscope_receiver::{Fault, PyroscopeReceiver, Writer, numbered, numbered_profile};

const WAIT: Duration = Duration::from_secs(10);

fn fast_endpoint(url: &str, extra: &str) -> String {
    format!(
        "endpoint {{\n  url = \"{url}\"\n  min_backoff_period = \"5ms\"\n  max_backoff_period = \"500ms\"\n  {extra}\n}}\n"
    )
}

/// Per series, the sequence numbers in arrival order.
fn arrival_order(rx: &PyroscopeReceiver) -> BTreeMap<String, Vec<usize>> {
    let mut out: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for r in rx.received() {
        let (series, seq) = numbered(&r.raw);
        out.entry(series).or_default().push(seq);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_with_a_large_queue_loses_nothing_and_keeps_series_order() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&fast_endpoint(&rx.url(), ""));
    let series = 10;
    let mut seq = 0;
    let mut append_for = async |d: Duration, w: &Writer| {
        let end = Instant::now() + d;
        while Instant::now() < end {
            for s in 0..series {
                w.append(vec![numbered_profile(&format!("s{s}"), seq)]);
                seq += 1;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    append_for(Duration::from_millis(200), &w).await;
    // The outage: 503 Connect errors, then resets, then plain 502s from a proxy.
    rx.set_outage(Fault::Connect("unavailable"));
    append_for(Duration::from_secs(1), &w).await;
    rx.set_outage(Fault::Reset);
    append_for(Duration::from_secs(1), &w).await;
    rx.set_outage(Fault::Status(502));
    append_for(Duration::from_secs(1), &w).await;
    let during = rx.count();
    rx.end_outage();
    append_for(Duration::from_millis(200), &w).await;
    let total = seq;

    assert!(
        rx.wait_for(total, WAIT).await,
        "{} of {total} arrived",
        rx.count()
    );
    assert!(during < total, "the outage held profiles back");
    // Nothing lost, nothing twice, series order kept.
    assert_eq!(rx.count(), total);
    for (s, seqs) in arrival_order(&rx) {
        assert!(
            seqs.windows(2).all(|p| p[0] < p[1]),
            "{s} out of order: {seqs:?}"
        );
    }
    assert!(
        w.wait(WAIT, |w| w
            .metric("pyroscope_write_sent_profiles_total", &[])
            == total as f64)
            .await
    );
    assert_eq!(w.metric("pyroscope_write_dropped_profiles_total", &[]), 0.0);
    // Many attempts during the outage, none counted against the profiles' retry budgets.
    assert!(w.metric("pyroscope_write_retries_total", &[]) > 10.0);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_queue_drops_exactly_what_never_arrived_oldest_first() {
    let rx = PyroscopeReceiver::start().await;
    // Every profile costs 8 bytes + 44 bytes of encoded labels: room for 10.
    let w = Writer::start(&fast_endpoint(
        &rx.url(),
        "queue_config {\n    max_bytes = 520\n    senders = 2\n  }",
    ));
    rx.set_outage(Fault::Connect("unavailable"));
    let n = 100;
    // The first one is in flight (being retried) before the others arrive.
    w.append(vec![numbered_profile("s", 0)]);
    assert!(rx.wait_for_requests(1, WAIT).await);
    for i in 1..n {
        w.append(vec![numbered_profile("s", i)]);
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    rx.end_outage();
    assert!(
        w.wait(WAIT, |w| {
            w.queued() == 0
                && w.metric("pyroscope_write_sent_profiles_total", &[])
                    + w.metric("pyroscope_write_dropped_profiles_total", &[])
                    == n as f64
        })
        .await
    );
    let got: Vec<usize> = rx.received().iter().map(|r| numbered(&r.raw).1).collect();
    let dropped = w.metric(
        "pyroscope_write_dropped_profiles_total",
        &[("reason", "queue_full")],
    );
    assert_eq!(dropped as usize, n - got.len());
    assert_eq!(
        w.metric(
            "pyroscope_write_dropped_bytes_total",
            &[("reason", "queue_full")]
        ) as usize,
        (n - got.len()) * 8
    );
    // What arrived: the profile in flight when the outage began, then the newest that fitted.
    assert_eq!(got[0], 0);
    let rest = &got[1..];
    assert_eq!(rest, (n - rest.len()..n).collect::<Vec<_>>().as_slice());
    assert!(rest.len() <= 10);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_argument_is_dropped_without_retry_but_plain_400_is_retried() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&fast_endpoint(&rx.url(), ""));
    rx.fail_next(1, Fault::Connect("invalid_argument"));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(
        w.wait(WAIT, |w| w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "rejected")]
        ) == 1.0)
            .await
    );
    assert_eq!(rx.request_count(), 1);
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 0.0);
    assert_eq!(
        w.metric(
            "pyroscope_write_dropped_bytes_total",
            &[("reason", "rejected")]
        ),
        8.0
    );

    // A 400 without a Connect body (a proxy) maps to `internal`, which Alloy retries.
    rx.fail_next(2, Fault::Status(400));
    w.append(vec![numbered_profile("a", 2)]);
    assert!(rx.wait_for(1, WAIT).await);
    assert_eq!(numbered(&rx.received()[0].raw).1, 2);
    assert_eq!(rx.request_count(), 4);
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 2.0);

    // Other non-retryable Connect codes.
    for code in [
        "unauthenticated",
        "permission_denied",
        "unimplemented",
        "failed_precondition",
    ] {
        rx.fail_next(1, Fault::Connect(code));
    }
    for i in 0..4 {
        w.append(vec![numbered_profile("b", i)]);
    }
    assert!(
        w.wait(WAIT, |w| w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "rejected")]
        ) == 5.0)
            .await
    );
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 2.0);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resource_exhausted_and_plain_429_follow_the_spec_table() {
    let rx = PyroscopeReceiver::start().await;

    // retry_on_http_429 = true (default): resource_exhausted is retried...
    let w = Writer::start(&fast_endpoint(&rx.url(), "max_backoff_retries = 3"));
    rx.fail_next(2, Fault::Connect("resource_exhausted"));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(rx.wait_for(1, WAIT).await);
    assert_eq!(rx.request_count(), 3);
    // ...but counts against max_backoff_retries: 3 attempts, 2 retries, then dropped.
    rx.fail_next(3, Fault::Connect("resource_exhausted"));
    w.append(vec![numbered_profile("a", 2)]);
    assert!(
        w.wait(WAIT, |w| w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "retries_exhausted")]
        ) == 1.0)
            .await
    );
    assert_eq!(rx.request_count(), 6);
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 4.0);
    w.stop().await;

    // retry_on_http_429 = false: resource_exhausted is dropped at once...
    let before = rx.request_count();
    let w = Writer::start(&fast_endpoint(&rx.url(), "retry_on_http_429 = false"));
    rx.fail_next(1, Fault::Connect("resource_exhausted"));
    w.append(vec![numbered_profile("b", 1)]);
    assert!(
        w.wait(WAIT, |w| w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "rejected")]
        ) == 1.0)
            .await
    );
    assert_eq!(rx.request_count(), before + 1);
    // ...while a plain 429 (no Connect body) is `unavailable`: retried regardless, and
    // without using up the retry budget.
    rx.fail_next(5, Fault::Status(429));
    w.append(vec![numbered_profile("b", 2)]);
    assert!(rx.wait_for(2, WAIT).await);
    assert_eq!(rx.request_count(), before + 7);
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 5.0);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resets_truncated_responses_hangs_and_slow_answers() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&fast_endpoint(&rx.url(), "remote_timeout = \"300ms\""));
    rx.fail_next(1, Fault::Reset);
    rx.fail_next(1, Fault::CloseMidBody);
    rx.fail_next(1, Fault::Hang);
    rx.fail_next(1, Fault::Slow(Duration::from_millis(50)));
    w.append(vec![numbered_profile("a", 1)]);
    assert!(rx.wait_for(1, WAIT).await);
    // reset, truncated, timed out: three retries; the slow answer is within the timeout.
    assert_eq!(rx.request_count(), 4);
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 3.0);
    assert_eq!(rx.count(), 1);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_backend_never_blocks_the_producer() {
    let rx = PyroscopeReceiver::start().await;
    rx.set_outage(Fault::Hang);
    // The backend never answers and the client waits a minute for it: an append that waited
    // on the network could not return before an attempt timed out (and counted a retry).
    // Every profile costs 8 bytes + 44 bytes of encoded labels: room for 10.
    let w = Writer::start(&fast_endpoint(
        &rx.url(),
        "remote_timeout = \"60s\"\n  queue_config {\n    max_bytes = 520\n    senders = 4\n    flush_deadline = \"1s\"\n  }",
    ));
    let receiver = w.receiver.clone();
    // A scrape loop on its own thread: 20 profiles of distinct series, so that every sender
    // takes one and hangs.
    let n = 20;
    let producer = std::thread::spawn(move || {
        for i in 0..n {
            receiver.append(vec![numbered_profile(&format!("s{i}"), i)]);
            std::thread::sleep(Duration::from_millis(20));
        }
    });
    // A hang guard only: the appends take well under a second when nothing blocks them.
    let joined = tokio::time::timeout(
        Duration::from_secs(30),
        tokio::task::spawn_blocking(move || producer.join()),
    )
    .await;
    assert!(
        matches!(joined, Ok(Ok(Ok(())))),
        "the producer did not finish: {joined:?}"
    );
    // Every append returned while no attempt had ended: none answered, none timed out.
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 0.0);
    assert_eq!(rx.count(), 0);
    // Meanwhile the senders all hang on a request each, and the queue kept the newest and
    // evicted the oldest: every profile is in one of the three places.
    assert!(rx.wait_for_requests(4, WAIT).await);
    let dropped = w.metric(
        "pyroscope_write_dropped_profiles_total",
        &[("reason", "queue_full")],
    ) as usize;
    assert_eq!(4 + w.queued() + dropped, n);
    assert!(dropped > 0);
    assert_eq!(w.metric("pyroscope_write_retries_total", &[]), 0.0);
    rx.end_outage();
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn profiles_older_than_max_age_are_dropped_not_sent() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&fast_endpoint(
        &rx.url(),
        "queue_config {\n    max_age = \"1s\"\n  }",
    ));
    let mut old = numbered_profile("a", 1);
    old.received_at = SystemTime::now() - Duration::from_secs(2 * 3600);
    w.append(vec![old, numbered_profile("a", 2)]);
    assert!(rx.wait_for(1, WAIT).await);
    assert_eq!(numbered(&rx.received()[0].raw).1, 2);
    assert_eq!(
        w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "too_old")]
        ),
        1.0
    );
    // A profile that ages out while the endpoint is down is dropped too.
    rx.set_outage(Fault::Connect("unavailable"));
    w.append(vec![numbered_profile("a", 3)]);
    assert!(
        w.wait(WAIT, |w| w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "too_old")]
        ) == 2.0)
            .await
    );
    rx.end_outage();
    assert_eq!(rx.count(), 1);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_labels_are_dropped_and_counted() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&fast_endpoint(&rx.url(), ""));
    let bad = |pairs: &[(&str, &str)]| {
        Profile::new(
            pairs
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_string()))
                .collect(),
            b"x".to_vec(),
        )
    };
    w.append(vec![
        bad(&[]),
        bad(&[("__address__", "only private labels")]),
        bad(&[("service_name", "a"), ("service_name", "b")]),
        bad(&[("service-name", "a")]),
        numbered_profile("ok", 1),
    ]);
    assert!(rx.wait_for(1, WAIT).await);
    assert_eq!(
        w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "invalid_labels")]
        ),
        4.0
    );
    assert_eq!(rx.request_count(), 1);
    w.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_flushes_then_gives_up_at_the_deadline() {
    let rx = PyroscopeReceiver::start().await;
    let w = Writer::start(&fast_endpoint(
        &rx.url(),
        "queue_config {\n    flush_deadline = \"3s\"\n  }",
    ));
    rx.set_outage(Fault::Connect("unavailable"));
    for i in 0..50 {
        w.append(vec![numbered_profile(&format!("s{}", i % 5), i)]);
    }
    let rx_handle = &rx;
    let end_outage = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        rx_handle.end_outage();
    };
    let (took, ()) = tokio::join!(w.stop(), end_outage);
    assert_eq!(
        rx.count(),
        50,
        "flushed everything once the backend was back"
    );
    // That all 50 arrived is the check that stop waited for the flush; how long it took
    // depends on the machine, so it is only printed.
    eprintln!("flushed and stopped in {took:?}");

    // A backend that never comes back: stop gives up at the deadline and drops the rest.
    let w = Writer::start(&fast_endpoint(
        &rx.url(),
        "queue_config {\n    flush_deadline = \"500ms\"\n  }",
    ));
    rx.set_outage(Fault::Hang);
    for i in 0..10 {
        w.append(vec![numbered_profile("late", i)]);
    }
    let took = w.stop().await;
    // A lower bound only: returning before the deadline would be a bug however slow the
    // machine, while how long after it stop returns depends on the machine.
    assert!(took >= Duration::from_millis(500), "{took:?}");
    assert_eq!(
        rx.count(),
        50,
        "nothing of the hung backend's share arrived"
    );
}
