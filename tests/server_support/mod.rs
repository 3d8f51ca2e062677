//! Runs the real `scraper` binary for the `server_*` tests: start it on a temp config with an
//! OS-chosen port, learn the port from its log, talk HTTP to it, stop it with a signal.

#![allow(dead_code)] // each test binary uses a different subset

use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_scraper");

pub struct Scraper {
    child: Child,
    pub addr: String,
    pub config: PathBuf,
    /// Every stderr line so far (logs), collected by a reader thread.
    pub stderr: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Scraper {
    /// Starts `scraper run` on `config_text`; panics if it does not listen within 20 s.
    pub fn start(config_text: &str) -> Scraper {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = dir.path().join("scrape.alloy");
        std::fs::write(&config, config_text).expect("write config");
        Scraper::start_with(dir, config, &[])
    }

    /// Starts `scraper run CONFIG ARGS...` on a config already in place (a file, a directory or
    /// a symlink) inside `dir`, which also holds the storage path and lives as long as the
    /// process.
    pub fn start_with(dir: tempfile::TempDir, config: PathBuf, args: &[&str]) -> Scraper {
        let mut child = Command::new(BIN)
            .arg("run")
            .arg(&config)
            .arg("--server.http.listen-addr")
            .arg("127.0.0.1:0")
            .arg("--storage.path")
            .arg(dir.path().join("data"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn scraper");
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let pipe = child.stderr.take().expect("stderr pipe");
        let lines = stderr.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines() {
                let Ok(line) = line else { break };
                lines.lock().expect("lock").push(line);
            }
        });
        let mut s = Scraper {
            child,
            addr: String::new(),
            config,
            stderr,
            _dir: dir,
        };
        s.addr = s
            .wait_for_log(Duration::from_secs(20), |l| {
                l.contains("now listening for http traffic")
                    .then(|| listen_addr(l))
                    .flatten()
            })
            .unwrap_or_else(|| panic!("no listen address in logs:\n{}", s.logs()));
        s
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn write_config(&self, text: &str) {
        std::fs::write(&self.config, text).expect("write config");
    }

    pub fn logs(&self) -> String {
        self.stderr.lock().expect("lock").join("\n")
    }

    /// Polls the collected logs until `f` returns something.
    pub fn wait_for_log<T>(
        &self,
        timeout: Duration,
        mut f: impl FnMut(&str) -> Option<T>,
    ) -> Option<T> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(found) = self.stderr.lock().expect("lock").iter().find_map(|l| f(l)) {
                return Some(found);
            }
            if Instant::now() > deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub fn signal(&self, sig: libc::c_int) {
        let pid = libc::pid_t::try_from(self.child.id()).expect("pid fits");
        // SAFETY: kill(2) on our own child's pid; no memory is involved.
        let rc = unsafe { libc::kill(pid, sig) };
        assert_eq!(rc, 0, "kill({pid}, {sig})");
    }

    /// Waits for the process to exit (bounded); returns its status.
    pub fn wait_exit(&mut self, timeout: Duration) -> ExitStatus {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("scraper did not exit in time; logs:\n{}", self.logs());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Scraper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `addr=127.0.0.1:4567` from a logfmt line.
fn listen_addr(line: &str) -> Option<String> {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix("addr="))
        .map(|a| a.trim_matches('"').to_string())
}

/// A file's path as the binary prints it in messages.
pub fn shown(path: &Path) -> String {
    path.display().to_string()
}
