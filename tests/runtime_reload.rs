//! Reloading: a bad file changes nothing; a good one stops removed components, keeps unchanged
//! ones (same instance, state and all) and adds new ones.

mod runtime_support;

use std::sync::Arc;
use std::sync::atomic::Ordering;

use runtime_support::{controller, pass};
use scraper::runtime::LoadError;

const V1: &str = r#"
test.pass "a" {
  input = "one"
}

test.pass "b" {
  input = test.pass.a.output
}

test.pass "gone" {
  input = "bye"
}
"#;

#[tokio::test]
async fn a_bad_reload_keeps_the_running_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    assert_eq!(c.last_load(), None);
    c.apply_source("cfg.alloy", V1).await.expect("apply");
    let ok = c.last_load().expect("a load");
    assert_eq!(ok.error, None);
    c.wait_idle().await;
    let a = pass(&c, "test.pass.a").await;
    let before: Vec<String> = c
        .components()
        .await
        .into_iter()
        .map(|i| i.local_id)
        .collect();

    let bad_files = [
        // syntax error
        "test.pass \"a\" {\n  input = \n}\n",
        // a good change to a, plus an unknown component
        "test.pass \"a\" {\n  input = \"two\"\n}\nnope.nope \"x\" {\n}\n",
        // a good change to a, plus an evaluation error elsewhere
        "test.pass \"a\" {\n  input = \"two\"\n}\ntest.pass \"b\" {\n  input = test.pass.a.nothing\n}\n",
        // a cycle
        "test.pass \"a\" {\n  input = test.pass.b.output\n}\ntest.pass \"b\" {\n  input = test.pass.a.output\n}\n",
    ];
    for bad in bad_files {
        let err = c.apply_source("cfg.alloy", bad).await.expect_err(bad);
        assert!(matches!(err, LoadError::Invalid(_)), "{bad}: {err:?}");
        // The UI's "last config load" says when and why, as `/-/reload` answered.
        let failed = c.last_load().expect("a load");
        assert_eq!(failed.error, Some(err.to_string()), "{bad}");
        assert!(failed.at >= ok.at);
        let after: Vec<String> = c
            .components()
            .await
            .into_iter()
            .map(|i| i.local_id)
            .collect();
        assert_eq!(after, before, "{bad}");
        assert!(Arc::ptr_eq(&a, &pass(&c, "test.pass.a").await), "{bad}");
        assert_eq!(a.updates(), 0, "{bad}: nothing was applied");
        assert!(!a.stopped.load(Ordering::SeqCst));
    }
    assert!(c.is_ready(), "still serving the old graph");
}

#[tokio::test]
async fn reload_keeps_unchanged_components_and_their_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("cfg.alloy", V1).await.expect("apply");
    c.wait_idle().await;
    let a = pass(&c, "test.pass.a").await;
    let b = pass(&c, "test.pass.b").await;
    let gone = pass(&c, "test.pass.gone").await;
    // State the component built up at run time, which a rebuild would lose.
    a.set_extra("accumulated");
    c.wait_idle().await;

    // Same a and b, gone removed, new added; comments and formatting changed too.
    let v2 = r#"
// reformatted, a and b unchanged
test.pass "b" {
  input   =   test.pass.a.output
}
test.pass "a" { input = "one" }
test.pass "new" {
  input = test.pass.b.output + "!"
}
"#;
    c.apply_source("cfg.alloy", v2).await.expect("reload");
    c.wait_idle().await;
    assert!(Arc::ptr_eq(&a, &pass(&c, "test.pass.a").await));
    assert!(Arc::ptr_eq(&b, &pass(&c, "test.pass.b").await));
    assert_eq!(
        (a.updates(), b.updates()),
        (0, 0),
        "equal arguments: no update"
    );
    assert_eq!(*a.extra.lock().expect("lock"), "accumulated");
    assert!(
        gone.stopped.load(Ordering::SeqCst),
        "removed component was stopped"
    );
    assert!(c.component("test.pass.gone").await.is_none());
    assert_eq!(pass(&c, "test.pass.new").await.last_input(), "one!");

    // Changing a's arguments updates the same instance, and the change cascades.
    let v3 = v2.replace(r#"input = "one""#, r#"input = "two""#);
    c.apply_source("cfg.alloy", &v3).await.expect("reload");
    c.wait_idle().await;
    assert!(Arc::ptr_eq(&a, &pass(&c, "test.pass.a").await));
    assert_eq!(a.updates(), 1);
    assert_eq!(b.last_input(), "two");
    assert_eq!(pass(&c, "test.pass.new").await.last_input(), "two!");
}

#[tokio::test]
async fn shutdown_stops_every_component() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("cfg.alloy", V1).await.expect("apply");
    let all = [
        pass(&c, "test.pass.a").await,
        pass(&c, "test.pass.b").await,
        pass(&c, "test.pass.gone").await,
    ];
    c.shutdown().await;
    for p in all {
        assert!(p.stopped.load(Ordering::SeqCst));
    }
}
