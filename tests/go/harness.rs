//! Helpers for the tests that run real Go programs (included by tests/pprof_*.rs with
//! `#[path]`): find the Go toolchain and google/pprof's sources, build the programs under
//! tests/go, run them and Prometheus on 127.0.0.1, fetch their profiles over HTTP.
//!
//! When a tool is missing the tests print why and pass, unless `SCRAPER_REQUIRE_ORACLE=1`
//! (set it in CI, where `.ci/run` installs everything), which turns a missing tool into a
//! failure.
#![allow(dead_code)]

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Where Debian's golang-github-google-pprof-dev installs its sources (GOPATH layout).
pub const GOPATH: &str = "/usr/share/gocode";

pub struct Tools {
    pub prometheus: Option<PathBuf>,
}

fn required() -> bool {
    std::env::var("SCRAPER_REQUIRE_ORACLE").is_ok_and(|v| v == "1")
}

/// Reports a missing tool: a skip, or a failure when the oracle is required.
pub fn missing(what: &str) {
    assert!(
        !required(),
        "SCRAPER_REQUIRE_ORACLE=1 but {what} (apt-get install -y golang-go golang-github-google-pprof-dev prometheus)"
    );
    eprintln!("skipped: {what}");
}

/// The Go toolchain and google/pprof sources, or `None` (after reporting) when missing.
pub fn tools() -> Option<Tools> {
    let go_ok = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !go_ok {
        missing("`go` is not installed");
        return None;
    }
    if !Path::new(GOPATH)
        .join("src/github.com/google/pprof/profile")
        .is_dir()
    {
        missing("google/pprof sources are not in /usr/share/gocode");
        return None;
    }
    let prometheus = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.is_file());
    Some(Tools { prometheus })
}

pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Builds `tests/go/<name>/main.go` (GOPATH mode, so google/pprof resolves from Debian's
/// package) and returns the binary. Builds are serialized: tests run in parallel threads.
pub fn build_go(name: &str) -> PathBuf {
    static LOCK: Mutex<()> = Mutex::new(());
    let _guard = LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let out_dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("go-bin");
    std::fs::create_dir_all(&out_dir).expect("create go-bin");
    let bin = out_dir.join(name);
    let src = repo().join("tests/go").join(name).join("main.go");
    let out = Command::new("go")
        .arg("build")
        .arg("-o")
        .arg(&bin)
        .arg(&src)
        .env("GO111MODULE", "off")
        .env("GOPATH", GOPATH)
        .env("GOFLAGS", "")
        .output()
        .expect("run go build");
    assert!(
        out.status.success(),
        "go build {}: {}",
        src.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    bin
}

/// A child process killed (by its own handle) when dropped.
pub struct Proc {
    child: Child,
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

/// Starts goapp; returns it and its address.
pub fn start_goapp(bin: &Path) -> (Proc, String) {
    let mut child = Command::new(bin)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start goapp");
    let stdout = child.stdout.take().expect("piped stdout");
    let proc = Proc { child };
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("read goapp's address");
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap_or_else(|| panic!("unexpected goapp output {line:?}"))
        .to_string();
    (proc, addr)
}

/// A port free right now on 127.0.0.1 (for programs that cannot report the one they chose).
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Starts Debian's Prometheus on 127.0.0.1 with a throw-away TSDB in `dir`, scraping itself
/// every second so its heap keeps changing; returns it once it is ready.
pub fn start_prometheus(bin: &Path, dir: &Path) -> (Proc, String) {
    let port = free_port();
    let addr = format!("127.0.0.1:{port}");
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
