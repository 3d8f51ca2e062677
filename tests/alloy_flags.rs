//! `scraper run` with the arguments Alloy's own Helm chart passes `alloy run` (and a few more
//! of Alloy's run flags): it starts and loads the config, naming each flag that has no effect
//! here exactly once; `--config.format` with another format is refused before anything starts.

use std::io::{BufRead as _, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_scraper");
/// Hang guard for startup.
const GUARD: Duration = Duration::from_secs(30);

#[test]
fn alloy_helm_arguments_start_scraper() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.alloy");
    std::fs::write(&config, "livedebugging {\n  enabled = true\n}\n").expect("write");
    let mut child = Command::new(BIN)
        .arg("run")
        .arg(&config)
        .arg(format!(
            "--storage.path={}",
            dir.path().join("data").display()
        ))
        .arg("--server.http.listen-addr=127.0.0.1:0")
        .arg("--server.http.ui-path-prefix=/")
        .arg("--disable-reporting")
        .arg("--cluster.enabled=false")
        .arg("--stability.level=generally-available")
        .arg("--cluster.name=prod")
        .arg("--server.http.enable-pprof=true")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn scraper");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines = Vec::new();
    let loaded = loop {
        match rx.recv_timeout(GUARD) {
            Ok(line) => {
                let done = line.contains("config loaded");
                lines.push(line);
                if done {
                    break true;
                }
            }
            Err(_) => break false,
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    let log = lines.join("\n");
    assert!(loaded, "scraper did not load its config:\n{log}");
    let ignored: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("Alloy flag accepted but has no effect"))
        .collect();
    assert_eq!(ignored.len(), 2, "{log}");
    assert!(ignored[0].contains("flag=--stability.level"), "{log}");
    assert!(ignored[1].contains("flag=--cluster.name"), "{log}");
    assert!(
        lines.iter().any(|l| l.contains("livedebugging")),
        "the livedebugging block is accepted with a warning:\n{log}"
    );
}

#[test]
fn other_config_formats_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("prometheus.yml");
    std::fs::write(&config, "scrape_configs: []\n").expect("write");
    let out = Command::new(BIN)
        .arg("run")
        .arg("--config.format=prometheus")
        .arg(&config)
        .arg("--server.http.listen-addr=127.0.0.1:0")
        .output()
        .expect("run scraper");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("scraper reads only Alloy configuration files"),
        "{stderr}"
    );
}
