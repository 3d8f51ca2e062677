//! `scraper check` over the 60 real profiling configs of `../shared/alloy-corpus/profiling/`:
//! every file passes, or every error it gets is one of the reasons docs/ALLOY-COMPAT.md gives
//! (a component we do not implement, or a documentation snippet's placeholder). Modules
//! (`declare`) are supported: an error inside a custom component must name the component
//! we do not implement, like any other. A new
//! kind of failure, or fewer files passing than [`PASSING`], fails the test; the pass count is
//! printed, so raising the floor after adding a component is one edit.
//!
//! The configs read `env("...")`/`sys.env("...")` for their endpoints; the test sets those, as
//! a deployment would.

mod support;

use std::process::Command;

use support::corpus;

/// Files that pass today (issue 26: 28 before discovery.file/http/docker, 32 after, 33 with
/// pyroscope.enrich, 35 with modules; without the environment variables below, 26, 30 and 32).
const PASSING: usize = 35;

/// Components docs/ALLOY-COMPAT.md lists as not implemented, and the namespaces out of scope.
const NOT_IMPLEMENTED: &[&str] = &["pyroscope.java", "beyla.ebpf"];
const OUT_OF_SCOPE: &[&str] = &[
    "loki.",
    "prometheus.",
    "otelcol.",
    // Log file discovery, for loki.source.file.
    "local.file_match",
];

/// Errors Alloy itself would report too, in snippets cut out of documentation pages.
const SNIPPET_ERRORS: &[(&str, &str)] = &[
    // `targets = [discovery.http.x.targets]`: a list inside the list (a doc typo).
    (
        "pyroscope.scrape.md__L505",
        "discovery.http.dynamic_targets.targets should be object, got array",
    ),
    // A fragment showing one block's settings.
    (
        "pyroscope-troubleshooting.md__L31",
        "missing required attribute \"forward_to\"",
    ),
];

const ENV: &[(&str, &str)] = &[
    ("GC_URL", "http://localhost:4040"),
    ("GC_USER", "user"),
    ("GC_PASSWORD", "password"),
    ("PYROSCOPE_URL", "http://localhost:4040"),
    ("PYROSCOPE_HOST", "localhost:4040"),
    ("PYROSCOPE_USERNAME", "user"),
    ("PYROSCOPE_PASSWORD", "password"),
    ("LOKI_HOST", "localhost:3100"),
    ("TEMPO_HOST", "localhost:4317"),
    ("REMOTE_WRITE_HOST", "localhost:9009"),
];

/// Why `message` (one error of `file`) is acceptable, or `None`.
fn accepted(file: &str, message: &str) -> Option<&'static str> {
    if let Some(rest) = message
        .split("cannot find the definition of component name \"")
        .nth(1)
    {
        let name = rest.split('"').next().unwrap_or_default();
        if NOT_IMPLEMENTED.contains(&name) {
            return Some("not implemented");
        }
        if OUT_OF_SCOPE.iter().any(|p| name.starts_with(p)) {
            return Some("out of scope");
        }
        return None;
    }
    if message.contains("\"<") {
        return Some("placeholder");
    }
    SNIPPET_ERRORS
        .iter()
        .any(|(f, m)| file.contains(f) && message.contains(m))
        .then_some("documentation snippet")
}

#[test]
fn profiling_configs_pass_or_fail_for_documented_reasons() {
    let Some(root) = corpus::root() else { return };
    let mut passed = 0;
    let mut unexplained = Vec::new();
    let files = corpus::alloy_files(&root.join("profiling"));
    assert!(files.len() >= 60, "found {} files", files.len());
    for path in &files {
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let out = Command::new(env!("CARGO_BIN_EXE_scraper"))
            .arg("check")
            .arg(path)
            .envs(ENV.iter().copied())
            .output()
            .expect("run scraper check");
        if out.status.success() {
            passed += 1;
            continue;
        }
        let stderr = String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> = stderr
            .lines()
            .filter_map(|l| l.strip_prefix("error: "))
            .collect();
        if errors.is_empty() {
            unexplained.push(format!("{name}: failed without an error line:\n{stderr}"));
        }
        for e in errors {
            if accepted(&name, e).is_none() {
                unexplained.push(format!("{name}: {e}"));
            }
        }
    }
    println!(
        "scraper check: {passed} of {} profiling configs pass",
        files.len()
    );
    assert!(unexplained.is_empty(), "{}", unexplained.join("\n"));
    assert!(passed >= PASSING, "{passed} pass, fewer than {PASSING}");
}
