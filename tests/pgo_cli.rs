//! `scraper pgo` and `scraper pgo check` as the real binary over a local store, without Go:
//! bad usage exits 2 before the store is touched, a budget that cuts everything away is
//! reported as trimmed away (not as empty data), `--allow-empty -o /dev/stderr` leaves the
//! profile's bytes alone on stderr, and `pgo check` refuses a workload without function start
//! lines rather than scoring it ~0 %. tests/pgo_pipeline.rs runs the pipeline on real Go
//! programs.

mod store_support;

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, UNIX_EPOCH};

use scraper::store::Db;
use store_support::{labels, pprof, profile, t0};

/// A store with one CPU profile of `with` (start lines set) and one of `without` (none), at
/// t0 + 10 s. Each has a few seconds of CPU on call edges.
fn fill(dir: &Path) {
    let db = Db::open(dir).expect("open");
    let at = t0() + Duration::from_secs(10);
    let bytes = pprof(1, 20, 10);
    let mut stripped =
        scraper::pprof::decode(&bytes, &scraper::pprof::Limits::default()).expect("decode");
    for f in &mut stripped.function {
        f.start_line = 0;
    }
    let stripped = scraper::pprof::encode(&stripped, 6);
    let batch = [
        profile(labels("with", "10.0.0.1:6060", "process_cpu"), bytes, at),
        profile(
            labels("without", "10.0.0.2:6060", "process_cpu"),
            stripped,
            at,
        ),
    ];
    db.append(&batch).expect("append");
}

/// Runs the binary with the store and a range around t0.
fn run(store: &Path, args: &[&str]) -> Output {
    let from = t0().duration_since(UNIX_EPOCH).expect("t0").as_secs();
    let out = Command::new(env!("CARGO_BIN_EXE_scraper"))
        .args(args)
        .args([
            "--from",
            &from.to_string(),
            "--to",
            &(from + 100).to_string(),
        ])
        .arg("--store")
        .arg(store)
        .output()
        .expect("run scraper");
    eprintln!(
        "$ scraper {}\n{}{}({})",
        args.join(" "),
        text(&out.stdout),
        text(&out.stderr),
        out.status
    );
    out
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn bad_usage_exits_2_before_any_query() {
    // No store there: a usage error found only after opening it would exit 1.
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    let profile = dir.path().join("p.pgo").to_string_lossy().into_owned();
    let with = r#"{service_name="with"}"#;
    let args = |head: &[&str], extra: &[&str]| -> Vec<String> {
        head.iter().chain(extra).map(|s| s.to_string()).collect()
    };
    let (pgo, check) = (["pgo", with], ["pgo", "check", profile.as_str(), with]);
    let cases: Vec<Vec<String>> = vec![
        args(&pgo, &["--top-windows", "0"]),
        args(&pgo, &["--top-windows", "2", "--window", "0s"]),
        args(&pgo, &["--top-windows", "2", "--window", "five minutes"]),
        args(&pgo, &["--max-bytes", "12Q"]),
        args(&pgo, &["--min-kept", "NaN"]),
        args(&pgo, &["--min-kept", "150"]),
        args(&pgo, &["--min-cpu", "soon"]),
        args(&check, &["--hot-cdf", "150"]),
        args(&check, &["--min-score", "NaN"]),
    ];
    for args in cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&missing, &args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            text(&out.stderr)
        );
        assert!(
            text(&out.stderr).contains("invalid value"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}

#[test]
fn trims_stderr_output_and_missing_start_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    fill(&store);
    let out_path = dir.path().join("default.pgo");
    let out = out_path.to_string_lossy();
    let with = r#"{service_name="with"}"#;

    // A budget that keeps nothing: the data is fine, the trim is what is refused.
    let o = run(&store, &["pgo", with, "-o", &out, "--max-bytes", "1"]);
    assert_eq!(o.status.code(), Some(1));
    let stderr = text(&o.stderr);
    assert!(stderr.contains("the budget kept 0.0%"), "{stderr}");
    assert!(!stderr.contains("empty:"), "{stderr}");
    assert!(!out_path.exists());

    // Failing open onto stderr: the empty profile's bytes alone there, the warning on stdout,
    // and /dev/stderr is not "an existing file" needing --force.
    let o = run(
        &store,
        &[
            "pgo",
            with,
            "-o",
            "/dev/stderr",
            "--max-bytes",
            "1",
            "--allow-empty",
        ],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let empty = scraper::pprof::encode(
        &scraper::pprof::pgo_assess::empty_pgo(),
        scraper::pprof::DEFAULT_LEVEL,
    );
    assert_eq!(o.stderr, empty);
    assert!(text(&o.stdout).contains("warning: "), "{}", text(&o.stdout));

    // A good profile onto stderr: a valid profile alone there, the report on stdout.
    let o = run(&store, &["pgo", with, "-o", "/dev/stderr"]);
    assert_eq!(o.status.code(), Some(0));
    let written = scraper::pprof::decode(&o.stderr, &scraper::pprof::Limits::default())
        .expect("stderr holds the profile alone");
    assert!(!written.sample.is_empty());
    assert!(
        text(&o.stdout).contains("call edges"),
        "{}",
        text(&o.stdout)
    );

    // `pgo check` of a workload without start lines: exit 1 and why, not a score of ~0 %.
    let o = run(&store, &["pgo", with, "-o", &out]);
    assert_eq!(o.status.code(), Some(0));
    let o = run(
        &store,
        &["pgo", "check", &out, r#"{service_name="without"}"#],
    );
    assert_eq!(o.status.code(), Some(1));
    assert!(
        text(&o.stderr).contains("no function start lines"),
        "{}",
        text(&o.stderr)
    );
    // The same profile scores 100 % on its own workload.
    let o = run(&store, &["pgo", "check", &out, with]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        text(&o.stdout).contains("covers 100.0%"),
        "{}",
        text(&o.stdout)
    );
}
