//! Re-evaluation after exports change: only on real changes, each node once per cascade, no
//! update for equal arguments, and failures that leave the component on its last good arguments.

mod runtime_support;

use runtime_support::{controller, evaluations, pass};
use scraper::runtime::{HealthState, LoadError};

const CHAIN: &str = r#"
test.pass "a" {
  input = "one"
}

test.pass "b" {
  input = test.pass.a.output
}
"#;

#[tokio::test]
async fn dependants_follow_changed_exports_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("chain.alloy", CHAIN).await.expect("apply");
    c.wait_idle().await;
    let (a, b) = (pass(&c, "test.pass.a").await, pass(&c, "test.pass.b").await);
    let evals = evaluations(&c, "test.pass.b").await;

    // A real change reaches b, which is updated with the new value.
    assert!(a.set_output("two"));
    c.wait_idle().await;
    assert_eq!(b.last_input(), "two");
    assert_eq!(b.updates(), 1);
    assert_eq!(evaluations(&c, "test.pass.b").await, evals + 1);

    // Publishing equal exports is not a change: b is not even evaluated.
    assert!(!a.set_output("two"));
    c.wait_idle().await;
    assert_eq!(evaluations(&c, "test.pass.b").await, evals + 1);

    // A change b does not read: b is evaluated, gets equal arguments, and is not updated.
    assert!(a.set_extra("unrelated"));
    c.wait_idle().await;
    assert_eq!(evaluations(&c, "test.pass.b").await, evals + 2);
    assert_eq!(b.updates(), 1);
}

#[tokio::test]
async fn a_cascade_evaluates_each_node_once_in_order() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    // A diamond: d depends on a directly and through b and c.
    let src = r#"
test.pass "d" {
  input = test.pass.b.output + "|" + test.pass.c.output + "|" + test.pass.a.output
}

test.pass "b" {
  input = test.pass.a.output + "b"
}

test.pass "c" {
  input = test.pass.a.output + "c"
}

test.pass "a" {
  input = "x"
}
"#;
    c.apply_source("diamond.alloy", src).await.expect("apply");
    c.wait_idle().await;
    let a = pass(&c, "test.pass.a").await;
    let d = pass(&c, "test.pass.d").await;
    assert_eq!(d.last_input(), "xb|xc|x");
    let before: Vec<u64> = futures::future::join_all(
        ["test.pass.b", "test.pass.c", "test.pass.d"].map(|id| evaluations(&c, id)),
    )
    .await;

    a.set_output("y");
    c.wait_idle().await;
    let after: Vec<u64> = futures::future::join_all(
        ["test.pass.b", "test.pass.c", "test.pass.d"].map(|id| evaluations(&c, id)),
    )
    .await;
    let delta: Vec<u64> = after.iter().zip(&before).map(|(x, y)| x - y).collect();
    assert_eq!(delta, [1, 1, 1], "each dependant evaluated exactly once");
    // d saw b's and c's new exports in its single evaluation.
    assert_eq!(d.last_input(), "yb|yc|y");
    assert_eq!(d.updates(), 1);
}

#[tokio::test]
async fn failed_evaluation_keeps_last_good_arguments() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("chain.alloy", CHAIN).await.expect("apply");
    c.wait_idle().await;
    let (a, b) = (pass(&c, "test.pass.a").await, pass(&c, "test.pass.b").await);

    // a stops exporting `output`: b's block no longer evaluates.
    a.set_output("drop-output");
    c.wait_idle().await;
    let info = c.component("test.pass.b").await.expect("b");
    assert_eq!(info.health.state, HealthState::Unhealthy);
    assert!(
        info.health.message.contains("component evaluation failed"),
        "{}",
        info.health.message
    );
    assert!(
        info.health.message.contains("output"),
        "{}",
        info.health.message
    );
    // Still the same running instance, with the arguments it had.
    assert!(std::sync::Arc::ptr_eq(&b, &pass(&c, "test.pass.b").await));
    assert!(!b.stopped.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(b.last_input(), "one");
    assert_eq!(
        info.arguments,
        Some(serde_json::json!({ "input": "one" })),
        "the API shows the last good arguments"
    );
    assert_eq!(c.unhealthy_components().await, ["test.pass.b"]);

    // Recovery: the next good value is applied and health returns.
    a.set_output("three");
    c.wait_idle().await;
    assert_eq!(b.last_input(), "three");
    let info = c.component("test.pass.b").await.expect("b");
    assert_eq!(info.health.state, HealthState::Healthy);
    assert!(c.unhealthy_components().await.is_empty());
}

#[tokio::test]
async fn failed_update_keeps_the_component_running() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("chain.alloy", CHAIN).await.expect("apply");
    c.wait_idle().await;
    let (a, b) = (pass(&c, "test.pass.a").await, pass(&c, "test.pass.b").await);

    a.set_output("fail-update");
    c.wait_idle().await;
    let info = c.component("test.pass.b").await.expect("b");
    assert_eq!(info.health.state, HealthState::Unhealthy);
    assert!(
        info.health
            .message
            .contains("updating component: refused to update"),
        "{}",
        info.health.message
    );
    assert_eq!(b.last_input(), "one");
    assert_eq!(info.arguments, Some(serde_json::json!({ "input": "one" })));

    // The same failing arguments are retried on the next evaluation, not remembered as applied.
    a.set_output("four");
    c.wait_idle().await;
    assert_eq!(b.last_input(), "four");
    assert_eq!(
        c.component("test.pass.b").await.expect("b").health.state,
        HealthState::Healthy
    );
}

#[tokio::test]
async fn failed_build_is_retried_when_inputs_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    let src = CHAIN.replace("\"one\"", "\"fail-build\"");
    let err = c
        .apply_source("chain.alloy", &src)
        .await
        .expect_err("a fails");
    assert!(
        matches!(&err, LoadError::Components(f) if f.len() == 1 && f[0].to_string().starts_with("test.pass.a: ")),
        "{err:?}"
    );
    assert!(c.is_ready(), "the file itself was valid and is running");
    c.wait_idle().await;
    // a failed to build; b was built against a's initial exports.
    assert!(
        c.instance::<runtime_support::Pass>("test.pass.a")
            .await
            .is_none()
    );
    let info = c.component("test.pass.a").await.expect("a");
    assert_eq!(info.health.state, HealthState::Unhealthy);
    assert!(
        info.health
            .message
            .contains("building component: refused to build")
    );
    assert_eq!(pass(&c, "test.pass.b").await.last_input(), "");

    // Fixing the file builds it.
    c.apply_source("chain.alloy", CHAIN).await.expect("apply");
    c.wait_idle().await;
    assert_eq!(pass(&c, "test.pass.b").await.last_input(), "one");
}

#[tokio::test]
async fn metrics_count_components_by_health() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("chain.alloy", CHAIN).await.expect("apply");
    c.wait_idle().await;
    pass(&c, "test.pass.a").await.set_output("drop-output");
    c.wait_idle().await;
    c.refresh_metrics().await;
    let text = c.metrics().encode().expect("encode");
    for line in [
        r#"alloy_component_controller_running_components{health_type="healthy"} 1"#,
        r#"alloy_component_controller_running_components{health_type="unhealthy"} 1"#,
        "alloy_config_last_load_successful 1",
        "alloy_component_evaluation_seconds_count",
    ] {
        assert!(text.contains(line), "missing {line:?} in\n{text}");
    }
}

#[tokio::test]
async fn a_component_whose_run_returns_is_exited() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("exit.alloy", "test.pass \"a\" {\n  input = \"exit\"\n}\n")
        .await
        .expect("apply");
    let mut info = c.component("test.pass.a").await.expect("a");
    for _ in 0..200 {
        if info.health.state == HealthState::Exited {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        info = c.component("test.pass.a").await.expect("a");
    }
    assert_eq!(info.health.state, HealthState::Exited);
    assert_eq!(
        info.health.message,
        "component shut down with error: asked to exit"
    );
    // Exited is not unhealthy: `/-/healthy` only reports evaluation failures.
    assert!(c.unhealthy_components().await.is_empty());
}
