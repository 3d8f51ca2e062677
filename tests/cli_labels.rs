//! `scraper labels`, `scraper series` and the "did you mean" of `scraper query`, run as the
//! real binary over a local store.

mod store_support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, UNIX_EPOCH};

use scraper::store::Db;
use store_support::{labels, pprof, profile, t0};

/// A store with `scraper` (CPU and memory) and `collector` (CPU) at t0 + 10 s.
fn fill(dir: &Path) {
    let db = Db::open(dir).expect("open");
    let at = t0() + Duration::from_secs(10);
    let batch = [
        ("scraper", "process_cpu"),
        ("scraper", "memory"),
        ("collector", "process_cpu"),
    ]
    .iter()
    .enumerate()
    .map(|(i, (service, name))| {
        profile(
            labels(service, "10.0.0.1:6060", name),
            pprof(i as u64, 20, 10),
            at,
        )
    })
    .collect::<Vec<_>>();
    db.append(&batch).expect("append");
}

/// Runs the binary with the store and a range around t0.
fn run(dir: &Path, args: &[&str]) -> Output {
    let from = t0().duration_since(UNIX_EPOCH).expect("t0").as_secs();
    Command::new(env!("CARGO_BIN_EXE_scraper"))
        .args(args)
        .args([
            "--from",
            &from.to_string(),
            "--to",
            &(from + 100).to_string(),
        ])
        .arg("--store")
        .arg(dir)
        .output()
        .expect("run scraper")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn labels_series_and_did_you_mean() {
    let dir = tempfile::tempdir().expect("tempdir");
    fill(dir.path());

    let out = run(dir.path(), &["labels"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains(r#"service_name (2 values): "collector", "scraper""#),
        "{stdout}"
    );
    assert!(
        stdout.contains(r#"__name__ (2 values): "memory", "process_cpu""#),
        "{stdout}"
    );

    let out = run(dir.path(), &["series"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        concat!(
            "{instance=\"10.0.0.1:6060\", service_name=\"collector\"} process_cpu\n",
            "{instance=\"10.0.0.1:6060\", service_name=\"scraper\"} memory, process_cpu\n",
        )
    );

    let out = run(
        dir.path(),
        &["series", r#"{service_name="scraper"}"#, "--type", "memory"],
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        "{instance=\"10.0.0.1:6060\", service_name=\"scraper\"} memory\n"
    );

    let output = dir.path().join("out.pb.gz");
    let out = run(
        dir.path(),
        &[
            "query",
            r#"{service_name="scrapr"}"#,
            "-o",
            output.to_str().expect("utf-8 path"),
        ],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains(r#"no process_cpu profiles match {service_name="scrapr"}"#)
            && stderr.contains(r#"did you mean service_name="scraper"?"#),
        "{stderr}"
    );

    let out = run(
        dir.path(),
        &[
            "query",
            r#"{service_name="collector"}"#,
            "--type",
            "memory",
            "-o",
            output.to_str().expect("utf-8 path"),
        ],
    );
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("the selector matches series with profile types process_cpu (not memory)"),
        "{stderr}"
    );
}
