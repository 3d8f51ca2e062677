//! Locates the deployment tools the chart and manifest tests drive: a real Helm and
//! kubernetes-validate, installed at pinned versions by `charts/tools/install.sh` into `.tools/`.
//!
//! Without them a test prints why and returns early, unless `SCRAPER_REQUIRE_HELM=1` (CI sets
//! it after installing them), which turns a missing tool into a failure.

use std::path::{Path, PathBuf};

/// The repository root.
pub fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn required() -> bool {
    std::env::var("SCRAPER_REQUIRE_HELM").is_ok_and(|v| v == "1")
}

fn find(name: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SCRAPER_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".tools"));
    let path = dir.join("bin").join(name);
    // `exists` follows symlinks, so a dangling venv link counts as missing.
    if path.exists() {
        return Some(path);
    }
    if required() {
        panic!(
            "SCRAPER_REQUIRE_HELM=1 but {} is missing: run charts/tools/install.sh",
            path.display()
        );
    }
    eprintln!(
        "skipping: {} is missing (run charts/tools/install.sh; CI sets SCRAPER_REQUIRE_HELM=1)",
        path.display()
    );
    None
}

/// The python of the venv `.tools/<venv>/venv` (or under `$SCRAPER_TOOLS`) when it can
/// `import <module>`; otherwise `None` with the reason printed, or a panic when the environment
/// variable `require` is `1` (CI sets it after running `installer`).
pub fn venv_python(venv: &str, module: &str, require: &str, installer: &str) -> Option<PathBuf> {
    let dir = std::env::var_os("SCRAPER_TOOLS")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo().join(".tools"));
    let python = dir.join(venv).join("venv/bin/python");
    let ok = python.exists()
        && std::process::Command::new(&python)
            .args(["-c", &format!("import {module}")])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
    if ok {
        return Some(python);
    }
    if std::env::var(require).is_ok_and(|v| v == "1") {
        panic!(
            "{require}=1 but {} (with {module}) is missing: run {installer}",
            python.display()
        );
    }
    eprintln!(
        "skipping: {} (with {module}) is missing (run {installer}; CI sets {require}=1)",
        python.display()
    );
    None
}

/// The pinned `helm` binary, or `None` (with the reason printed) when it is not installed.
pub fn helm() -> Option<PathBuf> {
    find("helm")
}

/// The pinned `kubernetes-validate` entry point, or `None` when it is not installed.
pub fn kubernetes_validate() -> Option<PathBuf> {
    find("kubernetes-validate")
}

/// Validates multi-document YAML with `kubernetes-validate --strict` against Kubernetes
/// `version`, panicking with the validator's report when any object fails.
pub fn validate_manifests(validator: &Path, yaml: &str, version: &str, what: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("manifests.yaml");
    std::fs::write(&file, yaml).expect("write manifests");
    let out = std::process::Command::new(validator)
        .args(["--strict", "--kubernetes-version", version])
        .arg(&file)
        .output()
        .expect("run kubernetes-validate");
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && !report.contains("ERROR"),
        "kubernetes-validate --strict -k {version} rejected {what}:\n{report}\n--- manifests ---\n{yaml}"
    );
    // The validator only warns about kinds it has no schema for, so an object it could not
    // check would pass silently. The one such kind we render is prometheus-operator's
    // ServiceMonitor (a CRD), whose shape the chart tests assert themselves.
    let unchecked: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("Couldn't find schema") && !l.contains("kind ServiceMonitor "))
        .collect();
    assert!(
        unchecked.is_empty(),
        "kubernetes-validate could not check some objects of {what}:\n{}",
        unchecked.join("\n")
    );
    let passed = report.matches("passed for resource").count();
    assert!(
        passed > 0,
        "kubernetes-validate checked nothing in {what}:\n{report}"
    );
}
