//! `scraper relabel` (and `scraper check` on `discovery.relabel` blocks) through the real binary.
//!
//! The snapshot runs a few pods, as `discovery.kubernetes` would produce them, through the rules
//! of `config/seed-otel-collector.alloy`: one target kept, one dropped by each `keep` rule.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Output, Stdio};

const BIN: &str = env!("CARGO_BIN_EXE_scraper");
const CONFIG: &str = "config/seed-otel-collector.alloy";
const PODS: &str = "tests/data/relabel_cli/pods.json";

/// Runs the binary from the repository root, so that paths in its output are relative.
fn scraper(args: &[&str], stdin: Option<&[u8]>) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run scraper");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().expect("stdin");
        pipe.write_all(input).expect("write stdin");
    }
    child.wait_with_output().expect("wait for scraper")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn relabel_args<'a>(targets: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "relabel",
        "--config",
        CONFIG,
        "--component",
        "discovery.relabel.otel",
        "--targets",
        targets,
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn trace_of_pods_through_the_seed_config() {
    let out = scraper(&relabel_args(PODS, &["--trace"]), None);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    // The note about errors elsewhere in the file depends on which components exist.
    let trace: String = stderr
        .lines()
        .filter(|l| !l.starts_with("note: "))
        .map(|l| format!("{l}\n"))
        .collect();
    insta::assert_snapshot!("trace", trace);
    insta::assert_snapshot!("output", stdout);

    // The output is JSON: the kept targets, keys sorted.
    let kept: Vec<serde_json::Map<String, serde_json::Value>> =
        serde_json::from_str(&stdout).expect("output is JSON");
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0]["__address__"], "10.42.0.17:1777");
    assert_eq!(kept[0]["service_name"], "otel/otel-collector");
    let keys: Vec<&String> = kept[0].keys().collect();
    assert!(keys.is_sorted(), "{keys:?}");
}

#[test]
fn targets_from_stdin_and_without_trace() {
    let pods = std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join(PODS)).expect("pods");
    let from_file = scraper(&relabel_args(PODS, &[]), None);
    let from_stdin = scraper(&relabel_args("-", &[]), Some(&pods));
    assert!(from_stdin.status.success(), "{}", text(&from_stdin.stderr));
    assert_eq!(text(&from_stdin.stdout), text(&from_file.stdout));
    // Without --trace, standard error at most has a note about the rest of the file
    // (`discovery.kubernetes`).
    let err = text(&from_stdin.stderr);
    assert!(
        err.lines()
            .all(|l| l.starts_with("note: ") && l.contains("elsewhere in")),
        "{err}"
    );
}

#[test]
fn bad_input_is_reported() {
    let out = scraper(&relabel_args("-", &[]), Some(br#"[{"a": 1}]"#));
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("standard input: expected a JSON array of targets"),
        "{err}"
    );

    let mut args = relabel_args(PODS, &[]);
    args[4] = "discovery.relabel.missing";
    let out = scraper(&args, None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("has no block discovery.relabel.missing; it has discovery.relabel.otel"),
        "{err}"
    );
}

/// Rule errors point at the offending `rule` block, in `check` and in `relabel`, and the
/// block's `targets` (a reference to a component scraper lacks) does not hide them.
#[test]
fn rule_errors_point_at_the_rule_block() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.alloy");
    let config = r#"discovery.relabel "x" {
  targets = discovery.kubernetes.pods.targets

  rule {
    action = "keep"
    regex  = "ok"
  }

  rule {
    action       = "hashmod"
    target_label = "__tmp_hash"
  }
}
"#;
    std::fs::write(&path, config).expect("write config");
    let p = path.display().to_string();
    let want = format!("{p}:9:3: relabel configuration for hashmod requires non-zero modulus");

    let out = scraper(
        &[
            "relabel",
            "--config",
            &p,
            "--component",
            "discovery.relabel.x",
            "--targets",
            "-",
        ],
        Some(b"[]"),
    );
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains(&want), "{err}");
    assert!(
        err.contains("Error: 1 error in discovery.relabel.x"),
        "{err}"
    );

    // `check` evaluates the block once its targets can be: with literal targets.
    let literal = config.replace(
        "discovery.kubernetes.pods.targets",
        r#"[{"__address__" = "a:1"}]"#,
    );
    std::fs::write(&path, literal).expect("write config");
    let out = scraper(&["check", &p], None);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(err.contains(&want), "{err}");
}

/// `--trace` shows the rules that did nothing because a source label is missing, with a hint
/// for the labels only `attach_metadata` adds, and only the labels each rule changed.
#[test]
fn trace_shows_rules_that_miss_a_source_label() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("missing.alloy");
    let config = r#"discovery.relabel "x" {
  targets = []

  rule {
    source_labels = ["__meta_kubernetes_node_name"]
    target_label  = "node"
  }

  rule {
    source_labels = ["__meta_kubernetes_namespace_label_team"]
    target_label  = "team"
  }

  rule {
    source_labels = ["app", "version"]
    separator     = "@"
    target_label  = "release"
  }

  rule {
    source_labels = ["__meta_kubernetes_pod_name"]
    target_label  = "pod"
  }
}
"#;
    std::fs::write(&path, config).expect("write config");
    let p = path.display().to_string();
    let targets = br#"[
  {"__meta_kubernetes_pod_name": "web-1", "__meta_kubernetes_pod_node_name": "node-a", "app": "web"},
  {"__meta_kubernetes_pod_name": "web-2", "__meta_kubernetes_node_name": "node-b",
   "__meta_kubernetes_namespace_label_team": "blue", "app": "web", "version": "2"}
]"#;
    let out = scraper(
        &[
            "relabel",
            "--config",
            &p,
            "--component",
            "discovery.relabel.x",
            "--targets",
            "-",
            "--trace",
        ],
        Some(targets),
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let (first, second) = err.split_once("target[1]").expect("two targets");
    let cases: &[(&str, &str, bool)] = &[
        // (trace of the target, line, present)
        (
            first,
            "target[0]\n    __meta_kubernetes_pod_name=\"web-1\"\n",
            true,
        ),
        (
            first,
            &format!(
                "  rule[0] {p}:4 replace: did nothing, source label __meta_kubernetes_node_name is missing\n    hint: __meta_kubernetes_node_* labels are only on targets of a discovery.kubernetes block with attach_metadata {{ node = true }} (pod targets always have __meta_kubernetes_pod_node_name, here \"node-a\")\n"
            ),
            true,
        ),
        (
            first,
            &format!(
                "  rule[1] {p}:9 replace: did nothing, source label __meta_kubernetes_namespace_label_team is missing\n    hint: __meta_kubernetes_namespace_* labels are only on targets of a discovery.kubernetes block with attach_metadata {{ namespace = true }}\n"
            ),
            true,
        ),
        // A rule that ran with a label missing says so; other labels than Kubernetes' get no
        // hint.
        (
            first,
            &format!(
                "  rule[2] {p}:14 replace\n    + release=\"web@\"\n    note: source label version is missing, taken as \"\"\n  rule[3] {p}:20 replace\n    + pod=\"web-1\"\n  => output[0]\n"
            ),
            true,
        ),
        // With the labels there, every rule acts and shows only what it changed.
        (second, "did nothing", false),
        (second, "hint:", false),
        (second, "note:", false),
        (
            second,
            &format!(
                "  rule[0] {p}:4 replace\n    + node=\"node-b\"\n  rule[1] {p}:9 replace\n    + team=\"blue\"\n  rule[2] {p}:14 replace\n    + release=\"web@2\"\n"
            ),
            true,
        ),
    ];
    for (trace, line, present) in cases {
        assert_eq!(trace.contains(line), *present, "{line:?} in\n{trace}");
    }
}
