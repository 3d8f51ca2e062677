//! Real Go programs and Debian's Prometheus for the tests that run them (the pprof oracle through
//! tests/go/harness.rs, the `scrape_*` tests through tests/scrape_support): find the tools,
//! build the programs of tests/go in GOPATH mode, run them and Prometheus on 127.0.0.1 as
//! children killed on drop.
//!
//! A missing tool is reported by [`Require::missing`]: the test prints why and passes, unless
//! the test's variable (`SCRAPER_REQUIRE_ORACLE`, `SCRAPER_REQUIRE_GO`; CI sets both) turns it
//! into a failure.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Which environment variable makes a missing tool a failure rather than a skip.
#[derive(Clone, Copy, Debug)]
pub enum Require {
    /// `SCRAPER_REQUIRE_ORACLE=1` (the pprof oracle tests).
    Oracle,
    /// `SCRAPER_REQUIRE_GO` set to anything but empty or `0` (the `scrape_*` tests).
    Go,
}

impl Require {
    fn is_set(self) -> bool {
        match self {
            Require::Oracle => std::env::var("SCRAPER_REQUIRE_ORACLE").is_ok_and(|v| v == "1"),
            Require::Go => {
                std::env::var("SCRAPER_REQUIRE_GO").is_ok_and(|v| !v.is_empty() && v != "0")
            }
        }
    }

    /// Reports a missing tool: the test is skipped (the caller returns), or fails when required.
    pub fn missing(self, what: &str) {
        let install = match self {
            Require::Oracle => "golang-go golang-github-google-pprof-dev prometheus",
            Require::Go => "golang-go prometheus",
        };
        self.missing_from(what, &format!("Debian packages {install}"));
    }

    /// [`Require::missing`] for a tool that `install` (a sentence) provides.
    pub fn missing_from(self, what: &str, install: &str) {
        let set = match self {
            Require::Oracle => "SCRAPER_REQUIRE_ORACLE=1",
            Require::Go => "SCRAPER_REQUIRE_GO is set",
        };
        assert!(
            !self.is_set(),
            "{set} but {what} ({install}; .ci/run installs them)"
        );
        eprintln!("skipped: {what} ({install}; .ci/run installs them)");
    }

    /// Go 1.21 or newer (the first with `go build -pgo`), the newest found by
    /// [`find_pgo_go`]; reports it when there is none.
    pub fn pgo_go(self) -> Option<PathBuf> {
        let found = find_pgo_go();
        if found.is_none() {
            self.missing_from(
                "no Go >= 1.21 for `go build -pgo` (Debian 12's golang-go is 1.19)",
                "Debian package golang-1.23-go (or 1.21, 1.22) from bookworm-backports",
            );
        }
        found.map(|(path, _)| path)
    }

    /// Whether `go` runs; reports it when not.
    pub fn have_go(self) -> bool {
        let ok = Command::new("go")
            .arg("version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            self.missing("`go` is not installed");
        }
        ok
    }

    /// Debian's Prometheus binary; reports it when missing (tests never install anything:
    /// `.ci/run` does).
    pub fn prometheus(self) -> Option<PathBuf> {
        let found = find_prometheus();
        if found.is_none() {
            self.missing("Debian's prometheus is not installed");
        }
        found
    }
}

/// The minor version of the Go toolchain at `go` (`23` for go1.23.5), if it runs.
pub fn go_minor(go: &Path) -> Option<u32> {
    let out = Command::new(go)
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .output()
        .ok()
        .filter(|o| o.status.success())?;
    // "go version go1.23.5 linux/amd64"
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let version = text.split_whitespace().nth(2)?.strip_prefix("go1.")?;
    version
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

/// The newest Go >= 1.21 installed, with its minor version: Debian's versioned packages
/// (`/usr/lib/go-1.NN/bin/go`, from bookworm-backports on Debian 12), `go` on PATH, or
/// `/usr/local/go/bin/go`.
pub fn find_pgo_go() -> Option<(PathBuf, u32)> {
    let mut candidates = vec![PathBuf::from("go"), PathBuf::from("/usr/local/go/bin/go")];
    if let Ok(entries) = std::fs::read_dir("/usr/lib") {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("go-1.") {
                candidates.push(entry.path().join("bin/go"));
            }
        }
    }
    candidates
        .into_iter()
        .filter_map(|go| go_minor(&go).map(|minor| (go, minor)))
        .filter(|(_, minor)| *minor >= 21)
        .max_by_key(|(_, minor)| *minor)
}

/// Debian's Prometheus binary, if installed.
pub fn find_prometheus() -> Option<PathBuf> {
    ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
}

/// Builds `tests/go/<name>/main.go` into `bin` in GOPATH mode (no module proxy needed): imports
/// resolve from the standard library and `gopath`.
pub fn build(name: &str, bin: &Path, gopath: &Path) {
    build_with(Path::new("go"), name, bin, gopath);
}

/// [`build`] with the Go toolchain at `go` (e.g. a newer one from [`find_pgo_go`]: programs
/// built with Go >= 1.20 write the function start lines a PGO build needs).
pub fn build_with(go: &Path, name: &str, bin: &Path, gopath: &Path) {
    let src = repo().join("tests/go").join(name).join("main.go");
    let out = Command::new(go)
        .env("GOTOOLCHAIN", "local")
        .arg("build")
        .arg("-o")
        .arg(bin)
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", gopath)
        .env("GOFLAGS", "")
        .output()
        .expect("run go build");
    assert!(
        out.status.success(),
        "go build {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A child process, killed (by its own handle) when dropped.
pub struct Proc {
    pub child: Child,
}

impl Proc {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts a Go program that prints `listening on ADDR` first; returns it and ADDR.
pub fn start_go(bin: &Path, args: &[&str]) -> (Proc, String) {
    let name = bin.file_name().unwrap_or_default().to_string_lossy();
    let mut child = Command::new(bin)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|e| panic!("start {name}: {e}"));
    let stdout = child.stdout.take().expect("piped stdout");
    let proc = Proc { child };
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .unwrap_or_else(|e| panic!("read {name}'s address: {e}"));
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected {name} output {line:?}"))
        .to_string();
    (proc, addr)
}

/// A port free right now on 127.0.0.1 (for programs that cannot report the one they chose).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port()
}

/// Starts Prometheus on 127.0.0.1 (random port, throw-away TSDB in `dir`), scraping itself every
/// second so its heap keeps changing; returns it and its address once it is ready.
pub fn start_prometheus(bin: &Path, dir: &Path) -> (Proc, String) {
    let addr = format!("127.0.0.1:{}", free_port());
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: self\n    static_configs:\n      - targets: ['{addr}']\n"
        ),
    )
    .expect("write prometheus.yml");
    let log = std::fs::File::create(dir.join("prometheus.log")).expect("log file");
    let child = Command::new(bin)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address={addr}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start prometheus");
    let proc = Proc { child };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if try_get(&addr, "/-/ready").is_ok_and(|(status, _)| status == 200) {
            return (proc, addr);
        }
        assert!(
            Instant::now() < deadline,
            "prometheus not ready: {}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// A minimal HTTP/1.0 GET (Go answers 1.0 requests without chunking): (status, body).
pub fn try_get(addr: &str, path: &str) -> std::io::Result<(u16, Vec<u8>)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n")?;
    let mut resp = Vec::new();
    s.read_to_end(&mut resp)?;
    let split = resp
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no header end"))?;
    let head = String::from_utf8_lossy(&resp[..split]);
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    Ok((status, resp[split + 4..].to_vec()))
}
