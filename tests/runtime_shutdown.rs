//! Shutdown stops components that reference others before the ones they reference, so that a
//! producer (`pyroscope.ebpf`, `pyroscope.scrape`) can hand what it still holds to a receiver
//! (`pyroscope.write`) that still accepts it.

mod runtime_support;

use std::sync::atomic::Ordering;

use runtime_support::{controller, pass};

#[tokio::test]
async fn shutdown_stops_dependants_before_what_they_reference() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    // a <- b <- c, and d alone.
    let config = r#"
test.pass "a" {
  input = "one"
}

test.pass "b" {
  input = test.pass.a.output
}

test.pass "c" {
  input = test.pass.b.output
}

test.pass "d" {
  input = "alone"
}
"#;
    c.apply_source("cfg.alloy", config).await.expect("apply");
    c.wait_idle().await;
    let [a, b, cc, d] = [
        pass(&c, "test.pass.a").await,
        pass(&c, "test.pass.b").await,
        pass(&c, "test.pass.c").await,
        pass(&c, "test.pass.d").await,
    ];
    c.shutdown().await;
    let seq = |p: &runtime_support::Pass| p.stop_seq.load(Ordering::SeqCst);
    for p in [&a, &b, &cc, &d] {
        assert!(p.stopped.load(Ordering::SeqCst));
    }
    assert!(
        seq(&cc) < seq(&b) && seq(&b) < seq(&a),
        "c {} b {} a {}",
        seq(&cc),
        seq(&b),
        seq(&a)
    );
    // Nothing references d: it stops with the first wave.
    assert!(seq(&d) < seq(&b), "d {} b {}", seq(&d), seq(&b));
}
