//! The explorer's front-end (`ui/`, docs/UI.md): the assets committed under
//! `src/server/explore/assets/` are what `npm run build` makes from `ui/` today, the UI's own
//! unit tests pass (`node --test`), and the page works in headless Chromium against the dev
//! server's fixture API (`ui/e2e/smoke.mjs`: flame graph drawn, hover, zoom, search, table,
//! sandwich, brushing, diff mode with a real `scraper diff --html` report in its frame, empty
//! and error messages).
//!
//! These use the already installed `ui/node_modules` (`.ci/run` runs `npm ci --prefix ui`);
//! they never install anything. Without node, npm or `ui/node_modules` (or Chromium, for the
//! browser test) a test prints why and passes, unless SCRAPER_REQUIRE_NPM=1 (CI), where it
//! fails.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use scraper::diff::{Options, Window, diff};
use scraper::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};

/// A hang guard, not a timing check: a build takes seconds, the browser run well under a minute.
const TIMEOUT: Duration = Duration::from_secs(300);

const ASSETS: [&str; 3] = ["explore.html", "explore.js", "explore.css"];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn ui() -> PathBuf {
    repo().join("ui")
}

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// `name` on PATH.
fn which(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// Whether the test can go on; otherwise prints why (or fails when `var` is set to 1).
fn have(what: Option<PathBuf>, missing: &str, var: &str) -> Option<PathBuf> {
    if what.is_some() {
        return what;
    }
    assert!(!required(var), "{var}=1 but {missing}");
    eprintln!("skipping: {missing} (CI sets {var}=1)");
    None
}

fn node() -> Option<PathBuf> {
    have(
        which("node"),
        "node is not on PATH (Debian package nodejs; the CI image has it)",
        "SCRAPER_REQUIRE_NPM",
    )
}

fn node_modules() -> Option<PathBuf> {
    let dir = ui().join("node_modules");
    have(
        dir.join("esbuild").is_dir().then_some(dir),
        "ui/node_modules is missing (`npm ci --prefix ui` installs it; .ci/run does)",
        "SCRAPER_REQUIRE_NPM",
    )
}

/// Runs `cmd` to completion; returns (success, stdout + stderr). Killed after TIMEOUT, a
/// failure.
fn run(mut cmd: Command, what: &str) -> (bool, String) {
    let out = support::child::run(&mut cmd, what, TIMEOUT);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        out.status.is_some(),
        "{what}: still running after {TIMEOUT:?}\n{text}"
    );
    (out.success(), text)
}

#[test]
fn committed_assets_match_a_fresh_build() {
    let (Some(node), Some(_)) = (node(), node_modules()) else {
        return;
    };
    let out = tempfile::tempdir().expect("temp dir");
    // `npm run build` is `node build.mjs`; calling node directly needs no npm on PATH.
    let mut cmd = Command::new(node);
    cmd.current_dir(ui())
        .arg("build.mjs")
        .arg("--out")
        .arg(out.path());
    let (ok, log) = run(cmd, "node build.mjs");
    assert!(ok, "the UI build failed:\n{log}");
    let committed = repo().join("src/server/explore/assets");
    let mut stale = Vec::new();
    for name in ASSETS {
        let fresh = std::fs::read(out.path().join(name)).expect("built asset");
        let old = std::fs::read(committed.join(name)).unwrap_or_default();
        if fresh != old {
            stale.push(name);
        }
        // Shipped inside the binary: nothing may load from elsewhere.
        let text = String::from_utf8_lossy(&fresh);
        assert!(
            !text.contains("sourceMappingURL") && !text.contains(repo().to_str().expect("path")),
            "{name} refers to a source map or an absolute path"
        );
    }
    assert!(
        stale.is_empty(),
        "{stale:?} in src/server/explore/assets/ differ from a fresh build of ui/: run \
         `npm run build --prefix ui` and commit the result"
    );
    // Deterministic: a second build is byte-identical to the first.
    let again = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(which("node").expect("node"));
    cmd.current_dir(ui())
        .arg("build.mjs")
        .env("OUT_DIR", again.path());
    let (ok, log) = run(cmd, "node build.mjs (OUT_DIR)");
    assert!(ok, "the UI build failed:\n{log}");
    for name in ASSETS {
        assert_eq!(
            std::fs::read(out.path().join(name)).expect("asset"),
            std::fs::read(again.path().join(name)).expect("asset"),
            "{name} differs between two builds"
        );
    }
}

#[test]
fn ui_unit_tests_pass() {
    let Some(node) = node() else {
        return;
    };
    let mut cmd = Command::new(node);
    cmd.current_dir(ui()).args(["--test", "src/"]);
    let (ok, log) = run(cmd, "node --test src/");
    assert!(ok, "the UI's unit tests failed:\n{log}");
    assert!(log.contains("# fail 0"), "no test summary:\n{log}");
    let summary: Vec<&str> = log
        .lines()
        .filter(|l| l.starts_with("# tests") || l.starts_with("# pass") || l.starts_with("# fail"))
        .collect();
    eprintln!("{}", summary.join("\n"));
}

fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| which("chromium"))
        .or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file()));
    if found.is_some() {
        return found;
    }
    assert!(
        !required("SCRAPER_REQUIRE_CHROMIUM"),
        "SCRAPER_REQUIRE_CHROMIUM=1 but no chromium on PATH (Debian package chromium; .ci/run installs it)"
    );
    eprintln!("skipping: chromium is not installed (Debian package chromium; .ci/run installs it)");
    None
}

/// A cpu profile of `main.main` calling each `(leaf, nanoseconds)`.
fn cpu_profile(samples: &[(&str, i64)]) -> Profile {
    let mut p = Profile {
        string_table: vec![String::new(), "cpu".into(), "nanoseconds".into()],
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        ..Profile::default()
    };
    let add = |p: &mut Profile, name: &str| -> u64 {
        p.string_table.push(name.to_string());
        let id = p.function.len() as u64 + 1;
        p.function.push(Function {
            id,
            name: p.string_table.len() as i64 - 1,
            ..Function::default()
        });
        p.location.push(Location {
            id,
            address: 0x1000 * id,
            line: vec![Line {
                function_id: id,
                line: 1,
                column: 0,
            }],
            ..Location::default()
        });
        id
    };
    let main = add(&mut p, "main.main");
    for (leaf, ns) in samples {
        let leaf = add(&mut p, leaf);
        p.sample.push(Sample {
            location_id: vec![leaf, main],
            value: vec![*ns],
            label: vec![],
        });
    }
    p
}

/// The HTML `scraper diff --html` writes for two small windows: what the diff endpoint
/// answers and the page shows in its frame.
fn diff_report() -> String {
    let window = |label: &str, samples: &[(&str, i64)]| Window {
        profile: cpu_profile(samples),
        seconds: 60.0,
        instances: 1,
        profiles: 1,
        label: label.into(),
    };
    let before = window(
        "before",
        &[("main.alpha", 600_000_000), ("main.beta", 100_000_000)],
    );
    let after = window(
        "after",
        &[("main.alpha", 200_000_000), ("main.beta", 500_000_000)],
    );
    diff(&before, &after, &Options::default())
        .expect("diff")
        .render_html("cpu: before vs after")
}

#[test]
fn explorer_works_in_chromium() {
    let (Some(node), Some(_), Some(chromium)) = (node(), node_modules(), chromium()) else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let report = dir.path().join("diff.html");
    std::fs::write(&report, diff_report()).expect("write report");
    // The committed assets, as the binary serves them, against the dev server's fixture API.
    let mut cmd = Command::new(node);
    cmd.current_dir(ui())
        .arg("e2e/smoke.mjs")
        .env("CHROMIUM", chromium)
        .env("ASSETS_DIR", repo().join("src/server/explore/assets"))
        .env("DIFF_HTML", &report);
    let (ok, log) = run(cmd, "node e2e/smoke.mjs");
    eprintln!("{log}");
    assert!(ok, "the explorer failed in Chromium:\n{log}");
    assert!(log.contains("all checks passed"), "{log}");
    assert!(
        log.contains("the diff report drew its flame graph"),
        "the real report was not checked:\n{log}"
    );
}
