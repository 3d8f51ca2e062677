//! `discovery.file` in a real `scraper run`:
//!
//! * a table of target files, JSON and YAML, whose targets must carry exactly the labels
//!   Prometheus' file_sd documentation lists: `__address__` per address, the group's `labels`,
//!   and `__meta_filepath` (the file's path), a target's address beating a group's
//!   `__address__` and the meta label beating a group's copy of it;
//! * a file rewritten while running (atomically, as the Prometheus docs advise, and in place),
//!   picked up long before `refresh_interval`, and the targets flowing on through
//!   `discovery.relabel`;
//! * a broken file: its last good targets stay, the component turns unhealthy naming the file,
//!   `prometheus_sd_file_read_errors_total` counts, a warning is logged; fixed, all recovers;
//! * a deleted file takes its targets with it;
//! * `scraper check` refuses a pattern Prometheus refuses, at that element.
//!
//! Waits use generous hang guards; nothing asserts a duration.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use scrape_support::{BIN, Scraper, metric};

const GUARD: Duration = Duration::from_secs(30);
const ID: &str = "discovery.file.sd";

type Target = BTreeMap<String, String>;

fn target(pairs: &[(&str, &str)]) -> Target {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Writes beside and renames over, so a reader never sees half a file.
fn write_atomic(path: &Path, content: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, content).expect("write");
    std::fs::rename(&tmp, path).expect("rename");
}

async fn exported(s: &Scraper, id: &str, field: &str) -> Vec<Target> {
    let c = s.component(id).await;
    serde_json::from_value(c["exports"][field].clone())
        .unwrap_or_else(|e| panic!("{id}.{field}: {e}: {c}"))
}

/// One file per case: its name, its content, and the targets it must give (the path is
/// added to each as `__meta_filepath`).
#[allow(clippy::type_complexity)]
fn table() -> Vec<(
    &'static str,
    &'static str,
    Vec<Vec<(&'static str, &'static str)>>,
)> {
    vec![
        (
            "01-groups.json",
            r#"[
                {"targets": ["10.0.0.1:9100", "10.0.0.2:9100"], "labels": {"env": "prod", "job": "node"}},
                {"targets": ["10.0.0.3:6060"]}
            ]"#,
            vec![
                vec![
                    ("__address__", "10.0.0.1:9100"),
                    ("env", "prod"),
                    ("job", "node"),
                ],
                vec![
                    ("__address__", "10.0.0.2:9100"),
                    ("env", "prod"),
                    ("job", "node"),
                ],
                vec![("__address__", "10.0.0.3:6060")],
            ],
        ),
        (
            "02-precedence.json",
            r#"[{"targets": ["a:1"], "labels": {"__address__": "group:0", "__meta_filepath": "forged", "__scheme__": "https"}}]"#,
            vec![vec![("__address__", "a:1"), ("__scheme__", "https")]],
        ),
        (
            "03-groups.yaml",
            "- targets: ['app:6060']\n  labels:\n    service_name: app\n    port: 6060\n- targets: []\n  labels: {x: y}\n",
            vec![vec![
                ("__address__", "app:6060"),
                ("port", "6060"),
                ("service_name", "app"),
            ]],
        ),
        ("04-empty.yml", "", vec![]),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn file_sd_targets_follow_the_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().to_str().expect("utf-8 temp dir").to_string();
    let mut want: Vec<Target> = Vec::new();
    for (name, content, targets) in table() {
        let path = dir.path().join(name);
        std::fs::write(&path, content).expect("write");
        for t in targets {
            let mut t = target(&t);
            t.insert(
                "__meta_filepath".into(),
                path.to_str().expect("utf-8").into(),
            );
            want.push(t);
        }
    }
    std::fs::write(dir.path().join("ignored.txt"), "[]").expect("write");

    let s = Scraper::start(|_| {
        format!(
            r#"
discovery.file "sd" {{
  files = ["{root}/*.json", "{root}/*.yaml", "{root}/*.yml"]
}}

discovery.relabel "keep_node" {{
  targets = discovery.file.sd.targets
  rule {{
    source_labels = ["job"]
    regex         = "node"
    action        = "keep"
  }}
}}
"#
        )
    })
    .await;

    // The table, in pattern then file order.
    assert_eq!(exported(&s, ID, "targets").await, want);
    assert_eq!(
        exported(&s, "discovery.relabel.keep_node", "output")
            .await
            .len(),
        2
    );

    // Rewritten atomically: a third node target, long before the 5m refresh_interval.
    let groups = dir.path().join("01-groups.json");
    write_atomic(
        &groups,
        r#"[{"targets": ["10.0.0.1:9100", "10.0.0.2:9100", "10.0.0.9:9100"], "labels": {"job": "node"}}]"#,
    );
    let picked_up = scrape_support::eventually(GUARD, || async {
        exported(&s, "discovery.relabel.keep_node", "output")
            .await
            .len()
            == 3
    })
    .await;
    assert!(picked_up, "rewrite not seen:\n{}", s.logs());
    let now = exported(&s, ID, "targets").await;
    assert_eq!(now[2]["__address__"], "10.0.0.9:9100");
    assert_eq!(now[2]["__meta_filepath"], groups.to_str().expect("utf-8"));
    assert!(!now[0].contains_key("env"), "old labels gone: {:?}", now[0]);

    // Written in place (no rename).
    std::fs::write(
        &groups,
        r#"[{"targets": ["10.0.0.1:9100"], "labels": {"job": "node"}}]"#,
    )
    .expect("write");
    assert!(
        scrape_support::eventually(GUARD, || async {
            exported(&s, "discovery.relabel.keep_node", "output")
                .await
                .len()
                == 1
        })
        .await,
        "in-place edit not seen"
    );
    let before_break = exported(&s, ID, "targets").await;

    // Broken: the last good targets stay, and it is loud.
    write_atomic(&groups, r#"[{"targets": ["10.0.0.1:9100"]"#);
    let unhealthy = scrape_support::eventually(GUARD, || async {
        s.component(ID).await["health"]["state"] == "unhealthy"
    })
    .await;
    assert!(
        unhealthy,
        "a broken file must make the component unhealthy:\n{}",
        s.logs()
    );
    let c = s.component(ID).await;
    let message = c["health"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains(groups.to_str().expect("utf-8")),
        "{message}"
    );
    assert_eq!(exported(&s, ID, "targets").await, before_break);
    let errors = metric(
        &s.metrics().await,
        "prometheus_sd_file_read_errors_total",
        &[("component_id", ID)],
    );
    assert!(errors.is_some_and(|n| n >= 1.0), "{errors:?}");
    assert!(
        s.logs().contains("cannot read a discovery file"),
        "{}",
        s.logs()
    );
    assert!(s.get("/-/healthy").await.contains(ID));

    // Fixed.
    write_atomic(
        &groups,
        r#"[{"targets": ["10.0.0.5:9100"], "labels": {"job": "node"}}]"#,
    );
    let healthy = scrape_support::eventually(GUARD, || async {
        s.component(ID).await["health"]["state"] == "healthy"
    })
    .await;
    assert!(healthy, "{}", s.component(ID).await);
    assert_eq!(
        exported(&s, "discovery.relabel.keep_node", "output").await[0]["__address__"],
        "10.0.0.5:9100"
    );

    // Deleted: its targets go, the others stay.
    std::fs::remove_file(&groups).expect("rm");
    assert!(
        scrape_support::eventually(GUARD, || async {
            exported(&s, "discovery.relabel.keep_node", "output")
                .await
                .is_empty()
        })
        .await
    );
    let left = exported(&s, ID, "targets").await;
    assert_eq!(left.len(), 2, "{left:?}");
    let mtime = metric(
        &s.metrics().await,
        "prometheus_sd_file_mtime_seconds",
        &[("component_id", ID)],
    );
    assert!(mtime.is_some_and(|t| t > 0.0), "{mtime:?}");
}

#[test]
fn check_refuses_only_patterns_alloy_cannot_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("c.alloy");
    std::fs::write(
        &path,
        "discovery.file \"sd\" {\n  files = [\"ok/*.json\", \"targets.txt\"]\n}\n",
    )
    .expect("write");
    let out = Command::new(BIN)
        .arg("check")
        .arg(&path)
        .output()
        .expect("run check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("path name \"targets.txt\" is not valid for file discovery"),
        "{stderr}"
    );
    // At the element: line 2, the column of "targets.txt".
    let col = "  files = [\"ok/*.json\", ".len() + 1;
    assert!(stderr.contains(&format!("c.alloy:2:{col}")), "{stderr}");

    // Alloy does not apply Prometheus' file name pattern: any case of the extension and a
    // `*` in a directory are run.
    std::fs::write(
        &path,
        "discovery.file \"sd\" {\n  files = [\"sd/t.Json\", \"/etc/*/targets.json\", \"x/*.YmL\"]\n}\n",
    )
    .expect("write");
    let out = Command::new(BIN)
        .arg("check")
        .arg(&path)
        .output()
        .expect("run check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
}
