//! Helpers for the tests that run real Go programs (included by tests/pprof_oracle.rs with
//! `#[path]`, beside `mod support`): find the Go toolchain and google/pprof's sources, build the
//! programs under tests/go, run them and Prometheus on 127.0.0.1 (tests/support/go.rs), fetch
//! their profiles over HTTP.
//!
//! When a tool is missing the tests print why and pass, unless `SCRAPER_REQUIRE_ORACLE=1`
//! (set it in CI, where `.ci/run` installs everything), which turns a missing tool into a
//! failure.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

use crate::support::go::{self, Require};
pub use crate::support::go::{repo, start_go, start_prometheus, try_get};

/// Where Debian's golang-github-google-pprof-dev installs its sources (GOPATH layout).
pub const GOPATH: &str = "/usr/share/gocode";

pub struct Tools {
    pub prometheus: Option<PathBuf>,
}

/// Reports a missing tool: a skip, or a failure when the oracle is required.
pub fn missing(what: &str) {
    Require::Oracle.missing(what);
}

/// The Go toolchain and google/pprof sources, or `None` (after reporting) when missing.
pub fn tools() -> Option<Tools> {
    if !Require::Oracle.have_go() {
        return None;
    }
    if !Path::new(GOPATH)
        .join("src/github.com/google/pprof/profile")
        .is_dir()
    {
        missing("google/pprof sources are not in /usr/share/gocode");
        return None;
    }
    Some(Tools {
        prometheus: go::find_prometheus(),
    })
}

/// Builds `tests/go/<name>/main.go` (GOPATH mode, so google/pprof resolves from Debian's
/// package) and returns the binary. Builds are serialized: tests run in parallel threads.
pub fn build_go(name: &str) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go-bin");
    std::fs::create_dir_all(&out_dir).expect("create go-bin");
    let bin = out_dir.join(name);
    go::build(name, &bin, Path::new(GOPATH));
    bin
}

pub fn get(addr: &str, path: &str) -> Vec<u8> {
    let (status, body) = try_get(addr, path).unwrap_or_else(|e| panic!("GET {path}: {e}"));
    assert_eq!(
        status,
        200,
        "GET {path}: {}",
        String::from_utf8_lossy(&body)
    );
    body
}

/// Runs a command; panics with its output unless it succeeds. Returns stdout and stderr.
pub fn run_ok(cmd: &mut Command) -> (String, String) {
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&stdout).into_owned(),
        String::from_utf8_lossy(&stderr).into_owned(),
    );
    assert!(
        status.success(),
        "{cmd:?} failed ({status}):\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

pub fn scraper() -> Command {
    Command::new(env!("CARGO_BIN_EXE_scraper"))
}

/// `go tool pprof -raw FILE` must parse what we wrote.
pub fn go_tool_pprof_reads(file: &Path) -> String {
    run_ok(Command::new("go").args(["tool", "pprof", "-raw"]).arg(file)).0
}
