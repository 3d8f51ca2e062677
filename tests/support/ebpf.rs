//! Helpers shared by the `pyroscope.ebpf` end-to-end tests (tests/ebpf_profiles.rs,
//! tests/ebpf_unwind.rs): the root / tool checks that decide whether a test runs, building the
//! busy fixture programs into a temp dir, starting them, and reading their stacks back out of
//! the pprof profiles the scraper pushed.
//!
//! * Loading BPF needs root. Without it a test prints why and passes, unless
//!   `SCRAPER_REQUIRE_BPF=1` (CI runs as root and sets it) makes that a failure.
//! * The C, C++ and Rust compilers are then required too (CI installs gcc and g++); `go` follows
//!   `SCRAPER_REQUIRE_GO` ([`super::go::Require::Go`]).
//!
//! Nothing is ever installed from here.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use scraper::pprof::proto::Profile;

use super::go::{Proc, repo};

pub fn bpf_required() -> bool {
    std::env::var("SCRAPER_REQUIRE_BPF").is_ok_and(|v| v == "1")
}

pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// Whether this test may run; prints why not (and fails when BPF is required).
pub fn need_root(what: &str) -> bool {
    if is_root() {
        return true;
    }
    assert!(
        !bpf_required(),
        "SCRAPER_REQUIRE_BPF=1 but not root: {what} needs root"
    );
    eprintln!("skipped: {what} needs root (CI runs as root with SCRAPER_REQUIRE_BPF=1)");
    false
}

/// Whether `program --version` runs; prints why not (and fails when BPF is required, since the
/// BPF tests cannot do without their fixtures' compilers).
pub fn need_compiler(program: &str) -> bool {
    let ok = Command::new(program)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        assert!(
            !bpf_required(),
            "SCRAPER_REQUIRE_BPF=1 but `{program}` does not run (CI installs it)"
        );
        eprintln!("skipped: `{program}` is not installed");
    }
    ok
}

/// The Rust compiler cargo runs (`RUSTC`), else `rustc` from the PATH.
pub fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into())
}

pub fn run(cmd: &mut Command) {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A world-readable temp dir (the fallback test runs programs as another user).
pub fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
    dir
}

/// Compiles the repository file `source` with `compiler` (gcc, g++, rustc) and `flags` into
/// `dir/name`.
pub fn compile(compiler: &str, flags: &[&str], source: &str, dir: &Path, name: &str) -> PathBuf {
    let bin = dir.join(name);
    run(Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&bin)
        .arg(repo().join(source)));
    bin
}

/// Builds the Go file `source` (stdlib only, GOPATH mode: no module proxy) into `dir/name`,
/// stripped of its symbol table and DWARF (`-ldflags=-s -w`) when asked.
pub fn build_go(source: &str, dir: &Path, name: &str, stripped: bool) -> PathBuf {
    let bin = dir.join(name);
    let mut cmd = Command::new("go");
    cmd.arg("build");
    if stripped {
        cmd.arg("-ldflags=-s -w");
    }
    run(cmd
        .arg("-o")
        .arg(&bin)
        .arg(repo().join(source))
        .env("GO111MODULE", "off")
        .env("GOPATH", dir.join("gopath"))
        .env("GOFLAGS", ""));
    bin
}

/// Starts `bin` (under a wrapper command such as `setpriv ...` when given); killed on drop.
pub fn spawn(wrapper: &[&str], bin: &Path) -> Proc {
    let mut cmd = match wrapper.split_first() {
        Some((first, rest)) => {
            let mut c = Command::new(first);
            c.args(rest).arg(bin);
            c
        }
        None => Command::new(bin),
    };
    let child = cmd
        .stdout(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    Proc { child }
}

/// One frame of a sampled stack.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Frame {
    pub function: String,
    /// The mapping's file name: the binary or library the frame is in (empty for synthetic
    /// frames such as `[truncated]`).
    pub module: String,
}

/// Every sample of a profile as (frames leaf first, value).
pub fn stacks(p: &Profile) -> Vec<(Vec<Frame>, i64)> {
    let s = |i: i64| p.string_table.get(i as usize).cloned().unwrap_or_default();
    let frame = |id: u64| {
        let loc = p.location.iter().find(|l| l.id == id)?;
        let module = p
            .mapping
            .iter()
            .find(|m| m.id == loc.mapping_id)
            .map(|m| s(m.filename))
            .unwrap_or_default();
        // The sampler emits one line (one function) per location.
        let line = loc.line.first()?;
        let function = p.function.iter().find(|f| f.id == line.function_id)?;
        Some(Frame {
            function: s(function.name),
            module,
        })
    };
    p.sample
        .iter()
        .map(|sample| {
            let frames = sample
                .location_id
                .iter()
                .map(|&id| {
                    frame(id).unwrap_or_else(|| Frame {
                        function: format!("[bad location {id}]"),
                        module: String::new(),
                    })
                })
                .collect();
            (frames, sample.value.first().copied().unwrap_or(0))
        })
        .collect()
}
