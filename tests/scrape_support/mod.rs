//! Helpers for the `scrape_*` tests: build and run the Go programs of tests/go (Debian's
//! golang-go, into a temp dir), run Debian's Prometheus, run the real `scraper` binary on a
//! config (stdout and stderr captured), read its API and metrics, and serve misbehaving
//! profiling endpoints (`FaultServer`). The Go and Prometheus pieces are tests/support/go.rs,
//! shared with the pprof oracle's tests/go/harness.rs: test binaries that include this module
//! also declare `mod support;`.
//!
//! Without `go`, Go tests print why and pass, unless `SCRAPER_REQUIRE_GO=1`, which makes a
//! missing toolchain (or Prometheus) a failure.

#![allow(dead_code)] // each test binary uses a different subset

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::support::go::{self, Require};
#[allow(unused_imports)] // each test binary uses a different subset
pub use crate::support::go::{Proc, free_port, repo, start_go, start_prometheus};

pub const BIN: &str = env!("CARGO_BIN_EXE_scraper");

/// Whether `go` runs; reports it when not.
pub fn have_go() -> bool {
    Require::Go.have_go()
}

/// Debian's Prometheus binary, when installed (`.ci/run` installs it); else why not is printed.
pub fn prometheus() -> Option<PathBuf> {
    Require::Go.prometheus()
}

/// A Go program built into its own temp dir.
pub struct GoProgram {
    pub bin: PathBuf,
    _dir: tempfile::TempDir,
}

/// Builds `tests/go/<name>/main.go` (stdlib only, GOPATH mode: no module proxy needed).
pub fn build_go(name: &str) -> GoProgram {
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join(name);
    go::build(name, &bin, &dir.path().join("gopath"));
    GoProgram { bin, _dir: dir }
}

/// `go tool pprof -raw` must read the profile; returns its output.
pub fn go_tool_pprof_raw(raw: &[u8]) -> Result<String, String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("profile.pb.gz");
    std::fs::write(&file, raw).expect("write profile");
    let out = Command::new("go")
        .args(["tool", "pprof", "-raw"])
        .arg(&file)
        .output()
        .expect("run go tool pprof");
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

// ---------------------------------------------------------------------------------------------
// The scraper binary
// ---------------------------------------------------------------------------------------------

/// `scraper run` on a config, listening on a known address; stdout and stderr are collected.
pub struct Scraper {
    child: Child,
    pub addr: String,
    pub config: PathBuf,
    pub stdout: Arc<Mutex<Vec<String>>>,
    pub stderr: Arc<Mutex<Vec<String>>>,
    client: reqwest::Client,
    _dir: tempfile::TempDir,
}

fn collect(pipe: impl std::io::Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let l = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            l.lock().expect("lock").push(line);
        }
    });
    lines
}

impl Scraper {
    /// Starts `scraper run`; `config` gets the address the scraper will listen on (for configs
    /// that scrape the scraper itself). Waits until it listens.
    pub async fn start(config: impl FnOnce(&str) -> String) -> Scraper {
        Self::start_with_env(config, &[]).await
    }

    /// [`Scraper::start`] with extra environment variables; `KUBERNETES_SERVICE_HOST` is always
    /// removed, so discovery never mistakes the test machine for a pod.
    pub async fn start_with_env(
        config: impl FnOnce(&str) -> String,
        env: &[(&str, &str)],
    ) -> Scraper {
        Self::start_as(&[], std::path::Path::new(BIN), config, env).await
    }

    /// [`Scraper::start_with_env`] running `bin` under a wrapper command, e.g.
    /// `["setpriv", "--reuid=65534", ...]`. The temp dir (config, storage) is world-writable
    /// so an unprivileged user can use it.
    pub async fn start_as(
        wrapper: &[&str],
        bin: &std::path::Path,
        config: impl FnOnce(&str) -> String,
        env: &[(&str, &str)],
    ) -> Scraper {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777))
            .expect("chmod temp dir");
        let addr = format!("127.0.0.1:{}", free_port());
        let path = dir.path().join("scrape.alloy");
        std::fs::write(&path, config(&addr)).expect("write config");
        let mut command = match wrapper.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(bin);
                c
            }
            None => Command::new(bin),
        };
        let mut child = command
            .arg("run")
            .arg(&path)
            .arg("--server.http.listen-addr")
            .arg(&addr)
            .arg("--storage.path")
            .arg(dir.path().join("data"))
            .env_remove("KUBERNETES_SERVICE_HOST")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn scraper");
        let stdout = collect(child.stdout.take().expect("stdout"));
        let stderr = collect(child.stderr.take().expect("stderr"));
        let s = Scraper {
            child,
            addr,
            config: path,
            stdout,
            stderr,
            client: reqwest::Client::new(),
            _dir: dir,
        };
        let loaded = s
            .wait(Duration::from_secs(20), |s| {
                s.logs().contains("config loaded")
            })
            .await;
        assert!(loaded, "scraper did not load its config:\n{}", s.logs());
        s
    }

    /// The scraper's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Peak resident memory so far (`VmHWM`), in bytes.
    pub fn peak_rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.pid()))
            .expect("/proc/<pid>/status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .expect("VmHWM")
            * 1024
    }

    pub fn logs(&self) -> String {
        self.stderr.lock().expect("lock").join("\n")
    }

    pub fn output(&self) -> String {
        self.stdout.lock().expect("lock").join("\n")
    }

    pub async fn get(&self, path: &str) -> String {
        let resp = self
            .client
            .get(format!("http://{}{path}", self.addr))
            .send()
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"));
        resp.text().await.expect("body")
    }

    /// The component's JSON from `/api/v0/web/components/<id>`.
    pub async fn component(&self, id: &str) -> serde_json::Value {
        let text = self.get(&format!("/api/v0/web/components/{id}")).await;
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{id}: {e}: {text}"))
    }

    /// The `targets` of a `pyroscope.scrape` component's debug info.
    pub async fn targets(&self, id: &str) -> Vec<serde_json::Value> {
        self.component(id).await["debugInfo"]["targets"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    pub async fn metrics(&self) -> String {
        self.get("/metrics").await
    }

    /// Polls `f` every 50 ms until it holds; false on timeout.
    pub async fn wait(&self, timeout: Duration, mut f: impl FnMut(&Scraper) -> bool) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if f(self) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls an async condition every 50 ms; false on timeout.
pub async fn eventually<F, Fut>(timeout: Duration, mut f: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if f().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The value of the series `name{labels...}` in a Prometheus text exposition (sum of matches).
pub fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (n, rest) = series.split_once('{').unwrap_or((series, ""));
        if n != name {
            continue;
        }
        if labels
            .iter()
            .all(|(k, v)| rest.contains(&format!("{k}=\"{v}\"")))
            && let Ok(v) = value.parse::<f64>()
        {
            found = Some(found.unwrap_or(0.0) + v);
        }
    }
    found
}

// ---------------------------------------------------------------------------------------------
// Fault server
// ---------------------------------------------------------------------------------------------

/// What a path of the [`FaultServer`] does.
#[derive(Clone, Debug)]
pub enum Behavior {
    /// 200 `application/octet-stream` with this body.
    Profile(Vec<u8>),
    /// This status, `text/plain`, this body.
    Status(u16, &'static str),
    /// 200 with this content type and body.
    Typed(&'static str, Vec<u8>),
    /// 200 `application/octet-stream`, no Content-Length, `n` bytes then close.
    Stream(usize),
    /// 200 `application/octet-stream` with a Content-Length of `n` (body not sent).
    Declared(usize),
    /// Read the request, never answer.
    Hang,
    /// Read the request, then reset the connection.
    Reset,
    /// Answer with this profile after a delay.
    Slow(Duration, Vec<u8>),
    /// Answer with this profile once the gate is opened (cancelled); at once after that.
    Gated(CancellationToken, Vec<u8>),
    /// The n-th request gets the n-th profile (the last one once they run out).
    Sequence(Arc<Vec<Vec<u8>>>, Arc<std::sync::atomic::AtomicUsize>),
}

impl Behavior {
    pub fn sequence(profiles: Vec<Vec<u8>>) -> Behavior {
        Behavior::Sequence(Arc::new(profiles), Arc::default())
    }
}

/// A hand-written HTTP/1.1 server: one answer per connection (`Connection: close`), behaviour
/// chosen by path, the arrival time of every request recorded per path, and how many requests
/// of a path were in progress at once.
pub struct FaultServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<HashMap<String, Vec<Instant>>>>,
    in_flight: Arc<Mutex<HashMap<String, InFlight>>>,
    stop: CancellationToken,
}

/// Requests of one path being answered now, and the most there ever were at once.
#[derive(Clone, Copy, Debug, Default)]
pub struct InFlight {
    pub now: usize,
    pub max: usize,
}

/// Counts a request in progress until dropped (the answer was written, or the server stopped).
struct Answering<'a> {
    in_flight: &'a Mutex<HashMap<String, InFlight>>,
    path: String,
}

impl<'a> Answering<'a> {
    fn start(in_flight: &'a Mutex<HashMap<String, InFlight>>, path: &str) -> Self {
        let mut m = in_flight.lock().expect("lock");
        let f = m.entry(path.to_string()).or_default();
        f.now += 1;
        f.max = f.max.max(f.now);
        Answering {
            in_flight,
            path: path.to_string(),
        }
    }
}

impl Drop for Answering<'_> {
    fn drop(&mut self) {
        if let Some(f) = self.in_flight.lock().expect("lock").get_mut(&self.path) {
            f.now -= 1;
        }
    }
}

impl Drop for FaultServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl FaultServer {
    pub async fn start(routes: Vec<(&'static str, Behavior)>) -> FaultServer {
        Self::start_at("127.0.0.1:0", routes).await
    }

    /// [`FaultServer::start`] on a given address, e.g. a port that refused connections until
    /// now (from [`free_port`]).
    pub async fn start_at(addr: &str, routes: Vec<(&'static str, Behavior)>) -> FaultServer {
        let listener = TcpListener::bind(addr).await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let routes: Arc<HashMap<String, Behavior>> = Arc::new(
            routes
                .into_iter()
                .map(|(p, b)| (p.to_string(), b))
                .collect(),
        );
        let requests: Arc<Mutex<HashMap<String, Vec<Instant>>>> = Arc::default();
        let in_flight: Arc<Mutex<HashMap<String, InFlight>>> = Arc::default();
        let stop = CancellationToken::new();
        let (r, q, f, st) = (
            routes.clone(),
            requests.clone(),
            in_flight.clone(),
            stop.clone(),
        );
        tokio::spawn(async move {
            loop {
                let (sock, _) = tokio::select! {
                    _ = st.cancelled() => return,
                    c = listener.accept() => match c { Ok(c) => c, Err(_) => continue },
                };
                let (r, q, f, st) = (r.clone(), q.clone(), f.clone(), st.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = st.cancelled() => {}
                        _ = serve(sock, &r, &q, &f) => {}
                    }
                });
            }
        });
        FaultServer {
            addr,
            requests,
            in_flight,
            stop,
        }
    }

    /// Requests of `path` in progress now, and the most at once so far.
    pub fn in_flight(&self, path: &str) -> InFlight {
        self.in_flight
            .lock()
            .expect("lock")
            .get(path)
            .copied()
            .unwrap_or_default()
    }

    /// Arrival times of the requests for `path`.
    pub fn requests(&self, path: &str) -> Vec<Instant> {
        self.requests
            .lock()
            .expect("lock")
            .get(path)
            .cloned()
            .unwrap_or_default()
    }
}

async fn serve(
    mut sock: TcpStream,
    routes: &HashMap<String, Behavior>,
    requests: &Mutex<HashMap<String, Vec<Instant>>>,
    in_flight: &Mutex<HashMap<String, InFlight>>,
) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    let path = target.split('?').next().unwrap_or("/").to_string();
    requests
        .lock()
        .expect("lock")
        .entry(path.clone())
        .or_default()
        .push(Instant::now());
    let _answering = Answering::start(in_flight, &path);
    let behavior = routes
        .get(&path)
        .cloned()
        .unwrap_or(Behavior::Status(404, "404 page not found\n"));
    let head = |status: &str, ct: &str, len: Option<usize>| {
        let mut h = format!("HTTP/1.1 {status}\r\nContent-Type: {ct}\r\nConnection: close\r\n");
        if let Some(l) = len {
            h.push_str(&format!("Content-Length: {l}\r\n"));
        }
        h.push_str("\r\n");
        h.into_bytes()
    };
    let mut out = Vec::new();
    match behavior {
        Behavior::Profile(body) => {
            out.extend(head("200 OK", "application/octet-stream", Some(body.len())));
            out.extend(body);
        }
        Behavior::Status(code, body) => {
            out.extend(head(
                &format!("{code} Status"),
                "text/plain; charset=utf-8",
                Some(body.len()),
            ));
            out.extend(body.as_bytes());
        }
        Behavior::Typed(ct, body) => {
            out.extend(head("200 OK", ct, Some(body.len())));
            out.extend(body);
        }
        Behavior::Stream(n) => {
            let _ = sock
                .write_all(&head("200 OK", "application/octet-stream", None))
                .await;
            let chunk = vec![0x0au8; 64 << 10];
            let mut sent = 0;
            while sent < n {
                let k = chunk.len().min(n - sent);
                if sock.write_all(&chunk[..k]).await.is_err() {
                    return;
                }
                sent += k;
            }
            return;
        }
        Behavior::Declared(n) => {
            out.extend(head("200 OK", "application/octet-stream", Some(n)));
        }
        Behavior::Hang => {
            // Hold the connection open until the server stops.
            std::future::pending::<()>().await;
        }
        Behavior::Reset => {
            let _ = sock.set_zero_linger();
            drop(sock);
            return;
        }
        Behavior::Sequence(profiles, next) => {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let body = &profiles[i.min(profiles.len() - 1)];
            out.extend(head("200 OK", "application/octet-stream", Some(body.len())));
            out.extend(body);
        }
        Behavior::Slow(delay, body) => {
            tokio::time::sleep(delay).await;
            out.extend(head("200 OK", "application/octet-stream", Some(body.len())));
            out.extend(body);
        }
        Behavior::Gated(gate, body) => {
            gate.cancelled().await;
            out.extend(head("200 OK", "application/octet-stream", Some(body.len())));
            out.extend(body);
        }
    }
    let _ = sock.write_all(&out).await;
    let _ = sock.shutdown().await;
}

// ---------------------------------------------------------------------------------------------
// Profiles
// ---------------------------------------------------------------------------------------------

/// A real profile captured from a Go program (tests/data/pprof).
pub fn captured(name: &str) -> Vec<u8> {
    std::fs::read(repo().join("tests/data/pprof").join(name)).expect("captured profile")
}

/// Sum of sample type `type_name` over samples with function `func` anywhere on the stack.
pub fn cum_of(profile: &scraper::pprof::proto::Profile, type_name: &str, func: &str) -> i64 {
    let s = |i: i64| profile.string_table[i as usize].as_str();
    let Some(idx) = profile
        .sample_type
        .iter()
        .position(|t| s(t.r#type) == type_name)
    else {
        return 0;
    };
    let fn_names: HashMap<u64, &str> = profile.function.iter().map(|f| (f.id, s(f.name))).collect();
    let loc_fns: HashMap<u64, Vec<&str>> = profile
        .location
        .iter()
        .map(|l| {
            (
                l.id,
                l.line
                    .iter()
                    .filter_map(|ln| fn_names.get(&ln.function_id).copied())
                    .collect(),
            )
        })
        .collect();
    profile
        .sample
        .iter()
        .filter(|smp| {
            smp.location_id
                .iter()
                .flat_map(|id| loc_fns.get(id).into_iter().flatten())
                .any(|f| *f == func)
        })
        .map(|smp| smp.value[idx])
        .sum()
}

/// Total of sample type `type_name`.
pub fn total_of(profile: &scraper::pprof::proto::Profile, type_name: &str) -> i64 {
    let s = |i: i64| profile.string_table[i as usize].as_str();
    let Some(idx) = profile
        .sample_type
        .iter()
        .position(|t| s(t.r#type) == type_name)
    else {
        return 0;
    };
    profile.sample.iter().map(|smp| smp.value[idx]).sum()
}

/// A real Go heap profile (goapp's, tests/data/pprof) with every sample value multiplied by
/// `factor`, gzipped: what a target that serves per-interval values (godeltaprof) sends when
/// its allocation rate changes by that factor. A falling factor makes counters go down.
pub fn scaled_heap(factor: i64) -> Vec<u8> {
    let mut p = decode(&captured("goapp-heap-1.pb.gz"));
    for s in &mut p.sample {
        for v in &mut s.value {
            *v *= factor;
        }
    }
    scraper::pprof::encode(&p, 6)
}

pub fn decode(raw: &[u8]) -> scraper::pprof::proto::Profile {
    scraper::pprof::decode(raw, &scraper::pprof::Limits::default()).expect("valid profile")
}

/// Pushes one committed heap profile (`captured("goapp-heap-1.pb.gz")`) with `labels` to a
/// `pyroscope.receive_http` at `base` over Push (Connect unary), and asserts it was accepted.
pub async fn push_heap(base: &str, labels: &[(&str, &str)]) {
    use prost::Message as _;
    use scraper::protocols::pyroscope::proto::push::v1::{
        PushRequest, RawProfileSeries, RawSample,
    };
    use scraper::protocols::pyroscope::proto::types::v1::LabelPair;
    let body = PushRequest {
        series: vec![RawProfileSeries {
            labels: labels
                .iter()
                .map(|(n, v)| LabelPair {
                    name: n.to_string(),
                    value: v.to_string(),
                })
                .collect(),
            samples: vec![RawSample {
                raw_profile: captured("goapp-heap-1.pb.gz").into(),
                id: String::new(),
            }],
            annotations: vec![],
        }],
    }
    .encode_to_vec();
    let resp = reqwest::Client::new()
        .post(format!("{base}/push.v1.PusherService/Push"))
        .header("content-type", "application/proto")
        .header("connect-protocol-version", "1")
        .body(body)
        .send()
        .await
        .expect("push");
    assert_eq!(resp.status().as_u16(), 200);
}
