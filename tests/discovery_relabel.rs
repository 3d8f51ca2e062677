//! `discovery.relabel` in a running controller: its output follows its input targets, dependants
//! see only real changes, and a bad rule on reload leaves it on its last good rules.

mod runtime_support;

use std::collections::BTreeMap;

use runtime_support::{evaluations, pass};
use scraper::components::discovery::relabel::Relabel;
use scraper::runtime::{Controller, ControllerOptions, HealthState, LoadError, Registration};

type Targets = Vec<BTreeMap<String, String>>;

/// `test.pass.pods` stands in for a discovery component (its output is JSON text; empty before
/// it is built); the sink receives the relabelled targets back as JSON.
const CONFIG: &str = r#"
test.pass "pods" {
  input = `[{"__address__": "10.0.0.1:4100", "app": "api"}]`
}

discovery.relabel "r" {
  targets = encoding.from_json(coalesce(test.pass.pods.output, "[]"))

  rule {
    source_labels = ["app"]
    regex         = "api|web"
    action        = "keep"
  }

  rule {
    source_labels = ["__address__"]
    regex         = "(.+):\\d+"
    target_label  = "host"
  }
}

test.pass "sink" {
  input = encoding.to_json({targets = discovery.relabel.r.output})
}
"#;

fn controller(storage: &std::path::Path) -> Controller {
    let registry =
        runtime_support::registry().with(Registration::new::<Relabel>("discovery.relabel"));
    let mut opts = ControllerOptions::new(registry);
    opts.storage_path = storage.to_path_buf();
    Controller::new(opts)
}

fn target(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

async fn sink_targets(c: &Controller) -> Targets {
    #[derive(serde::Deserialize)]
    struct Sink {
        targets: Targets,
    }
    let json = pass(c, "test.pass.sink").await.last_input();
    let sink: Sink =
        serde_json::from_str(&json).unwrap_or_else(|e| panic!("sink input {json:?}: {e}"));
    sink.targets
}

#[tokio::test]
async fn output_follows_input_targets() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("relabel.alloy", CONFIG)
        .await
        .expect("apply");
    c.wait_idle().await;
    assert_eq!(
        sink_targets(&c).await,
        [target(&[
            ("__address__", "10.0.0.1:4100"),
            ("app", "api"),
            ("host", "10.0.0.1"),
        ])]
    );

    // New pods upstream: the component is updated and re-publishes, the sink follows.
    let pods = pass(&c, "test.pass.pods").await;
    let sink = pass(&c, "test.pass.sink").await;
    assert!(pods.set_output(
        r#"[{"__address__": "10.0.0.1:4100", "app": "api"},
            {"__address__": "10.0.0.2:4100", "app": "web"},
            {"__address__": "10.0.0.3:4100", "app": "batch"}]"#
    ));
    c.wait_idle().await;
    let hosts: Vec<String> = sink_targets(&c)
        .await
        .iter()
        .map(|t| t["host"].clone())
        .collect();
    assert_eq!(hosts, ["10.0.0.1", "10.0.0.2"]);
    assert_eq!(sink.updates(), 1);

    // A new target that the rules drop changes the input but not the output: the runtime does
    // not re-evaluate the sink.
    let sink_evals = evaluations(&c, "test.pass.sink").await;
    let relabel_evals = evaluations(&c, "discovery.relabel.r").await;
    assert!(pods.set_output(
        r#"[{"__address__": "10.0.0.1:4100", "app": "api"},
            {"__address__": "10.0.0.2:4100", "app": "web"},
            {"__address__": "10.0.0.4:4100", "app": "cron"}]"#
    ));
    c.wait_idle().await;
    assert_eq!(
        evaluations(&c, "discovery.relabel.r").await,
        relabel_evals + 1
    );
    assert_eq!(evaluations(&c, "test.pass.sink").await, sink_evals);
    assert_eq!(sink.updates(), 1);

    // The exports as the API shows them: `output` and the rules with their defaults.
    let info = c.component("discovery.relabel.r").await.expect("component");
    let exports = info.exports.expect("exports");
    assert_eq!(exports["output"].as_array().map(Vec::len), Some(2));
    assert_eq!(exports["rules"][1]["replacement"], "$1");
    assert_eq!(exports["rules"][0]["action"], "keep");
    assert_eq!(
        info.debug_info,
        Some(serde_json::json!({"rules": 2, "targets_in": 3, "targets_out": 2}))
    );
    assert_eq!(info.health.state, HealthState::Healthy);
    c.shutdown().await;
}

#[tokio::test]
async fn a_bad_rule_is_reported_at_its_block_and_changes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("relabel.alloy", CONFIG)
        .await
        .expect("apply");
    c.wait_idle().await;
    let before = sink_targets(&c).await;

    let bad = CONFIG.replace(r#"regex         = "api|web""#, r#"regex = "api|(web""#);
    let err = c
        .apply_source("relabel.alloy", &bad)
        .await
        .expect_err("invalid regex");
    assert!(matches!(err, LoadError::Invalid(_)), "{err}");
    // The first `rule` block of discovery.relabel.r is at line 9, column 3.
    let text = err.to_string();
    assert!(
        text.contains("relabel.alloy:9:3: error parsing regexp: missing closing )"),
        "{text}"
    );
    c.wait_idle().await;
    assert_eq!(sink_targets(&c).await, before);
    c.shutdown().await;
}
