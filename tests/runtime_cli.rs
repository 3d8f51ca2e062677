//! The `check`, `fmt` and `version` commands of the real binary.

use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_scraper");

fn scraper(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run scraper")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn check_reports_every_error_with_position_and_caret() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.alloy");
    std::fs::write(
        &bad,
        "logging {\n  level = nope.level\n}\n\nnot.a.component \"x\" {\n}\n\ndeclare \"y\" {\n}\n",
    )
    .expect("write");
    let good = dir.path().join("good.alloy");
    std::fs::write(&good, "logging {\n  format = \"json\"\n}\n").expect("write");

    let out = scraper(&[
        "check",
        &good.display().to_string(),
        &bad.display().to_string(),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    let b = bad.display();
    for want in [
        format!("{b}:2:11: component \"nope.level\" does not exist or is out of scope"),
        format!("{b}:5:1: cannot find the definition of component name \"not.a.component\""),
        format!("{b}:8:1: custom components (declare blocks) are not supported by scraper"),
    ] {
        assert!(err.contains(&want), "missing {want:?} in\n{err}");
    }
    // Each error shows its source line with a caret under the culprit.
    assert!(err.contains("level = nope.level"), "{err}");
    assert_eq!(
        err.lines().filter(|l| l.contains('^')).count(),
        3,
        "one caret line per error:\n{err}"
    );
    assert!(err.contains("Error: 3 errors in 1 config"), "{err}");
    assert!(!err.contains("good.alloy"), "{err}");

    let out = scraper(&["check", &good.display().to_string()]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn check_reports_a_missing_file() {
    let out = scraper(&["check", "/nonexistent/scrape.alloy"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("reading /nonexistent/scrape.alloy"));
}

#[test]
fn fmt_prints_or_rewrites() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("f.alloy");
    let messy = "logging {\nlevel   =   \"debug\"\n}\n";
    std::fs::write(&file, messy).expect("write");
    let path = file.display().to_string();

    let out = scraper(&["fmt", &path]);
    assert!(out.status.success(), "{}", stderr(&out));
    let formatted = String::from_utf8(out.stdout).expect("utf8");
    assert_eq!(formatted, "logging {\n\tlevel = \"debug\"\n}\n");
    assert_eq!(std::fs::read_to_string(&file).expect("read"), messy);

    let out = scraper(&["fmt", "-w", &path]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(out.stdout.is_empty());
    assert_eq!(std::fs::read_to_string(&file).expect("read"), formatted);

    std::fs::write(&file, "logging {\n  level = \n}\n").expect("write");
    let out = scraper(&["fmt", "-w", &path]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains(&format!("{path}:3:1: ")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn version() {
    let out = scraper(&["version"]);
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("scraper, version v{}\n", env!("CARGO_PKG_VERSION"))
    );
}
