//! `discovery.process` on the real `/proc`, through the controller and the builtin registry: a
//! child process shows up with its pid, executable, command line and owner, and is gone once
//! it has been killed.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use scraper::components::discovery::process::container_id_of_pid;
use scraper::runtime::{Controller, ControllerOptions, HealthState};
use serde_json::Value as Json;

const ID: &str = "discovery.process.all";

/// Kills the child if the test fails half-way.
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `sleep` as `PATH` finds it, with links resolved: what `/proc/<pid>/exe` shows.
fn resolved_sleep() -> PathBuf {
    let path = std::env::var_os("PATH").expect("PATH is set");
    std::env::split_paths(&path)
        .map(|d| d.join("sleep"))
        .find(|p| p.is_file())
        .map(|p| std::fs::canonicalize(&p).expect("canonical path"))
        .expect("sleep is on PATH")
}

fn user_name(uid: u32) -> Option<String> {
    let out = Command::new("id")
        .args(["-nu", &uid.to_string()])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|s| !s.is_empty())
}

async fn targets(c: &Controller) -> Vec<Json> {
    let info = c.component(ID).await.expect("component exists");
    let exports = info.exports.expect("exports");
    exports["targets"]
        .as_array()
        .cloned()
        .expect("targets is an array")
}

async fn target_of(c: &Controller, pid: u32) -> Option<Json> {
    let pid = pid.to_string();
    targets(c)
        .await
        .into_iter()
        .find(|t| t["__process_pid__"] == pid.as_str())
}

async fn wait_until<F, Fut>(timeout: Duration, what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let start = Instant::now();
    while !check().await {
        assert!(start.elapsed() < timeout, "{what}: not within {timeout:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn write_config(dir: &Path) -> PathBuf {
    let path = dir.join("config.alloy");
    std::fs::write(
        &path,
        "discovery.process \"all\" {\n  refresh_interval = \"1s\"\n}\n",
    )
    .expect("write config");
    path
}

#[tokio::test]
async fn a_child_process_appears_with_its_labels_and_disappears_when_killed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write_config(dir.path());
    let mut child = Reaped(
        Command::new("sleep")
            .arg("30")
            .current_dir(dir.path())
            .spawn()
            .expect("spawn sleep"),
    );
    let pid = child.0.id();

    let mut opts = ControllerOptions::new(scraper::components::builtin());
    opts.storage_path = dir.path().join("data");
    let c = Controller::new(opts);
    c.load_file(&config).await.expect("config loads");

    // The child may still be between fork and exec at the first walk, or inside exec: the
    // kernel switches /proc/PID/exe before it sets up the new argument area, so for a moment
    // the new exe is seen with an empty cmdline (CI caught that window once).
    let exe = resolved_sleep();
    let exe = exe.to_str().expect("utf-8 path");
    wait_until(Duration::from_secs(5), "child discovered", || async {
        target_of(&c, pid).await.is_some_and(|t| {
            t["__meta_process_exe"] == exe && t.get("__meta_process_commandline").is_some()
        })
    })
    .await;

    let t = target_of(&c, pid).await.expect("child target");
    assert_eq!(t["__meta_process_commandline"], "sleep 30", "{t:#}");
    let cwd = std::fs::canonicalize(dir.path()).expect("canonical tempdir");
    assert_eq!(
        t["__meta_process_cwd"],
        cwd.to_str().expect("utf-8"),
        "{t:#}"
    );
    // SAFETY: getuid has no preconditions and cannot fail.
    let uid = unsafe { libc::getuid() };
    assert_eq!(t["__meta_process_uid"], uid.to_string().as_str(), "{t:#}");
    if let Some(name) = user_name(uid) {
        assert_eq!(t["__meta_process_username"], name.as_str(), "{t:#}");
    }
    // Whatever container the test runs in (or none), the target agrees with the helper
    // pyroscope.ebpf uses.
    match container_id_of_pid(pid) {
        Some(id) => assert_eq!(t["__container_id__"], id.as_str(), "{t:#}"),
        None => assert!(t.get("__container_id__").is_none(), "{t:#}"),
    }
    assert!(
        t.get("__meta_process_cgroup_path").is_none(),
        "off by default"
    );

    // Our own process is there too; kernel threads (no executable) are not.
    let own = target_of(&c, std::process::id()).await.expect("own target");
    assert!(own.get("__meta_process_exe").is_some());
    assert!(
        targets(&c)
            .await
            .iter()
            .all(|t| t.get("__meta_process_exe").is_some()),
        "every discovered process has an executable"
    );

    let info = c.component(ID).await.expect("component");
    assert_eq!(info.health.state, HealthState::Healthy, "{:?}", info.health);
    let debug = info.debug_info.expect("debug info");
    assert!(debug["processes"].as_u64().unwrap_or(0) >= 2, "{debug:#}");
    assert_eq!(debug["last_error"], Json::Null, "{debug:#}");

    child.0.kill().expect("kill");
    child.0.wait().expect("reap");
    wait_until(Duration::from_secs(5), "child gone", || async {
        target_of(&c, pid).await.is_none()
    })
    .await;

    c.shutdown().await;
}

#[tokio::test]
async fn a_zero_refresh_interval_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = ControllerOptions::new(scraper::components::builtin());
    opts.storage_path = dir.path().join("data");
    let c = Controller::new(opts);
    let err = c
        .apply_source(
            "config.alloy",
            "discovery.process \"all\" {\n  refresh_interval = \"0s\"\n}\n",
        )
        .await
        .expect_err("invalid");
    let text = format!("{err}");
    assert!(
        text.contains("refresh_interval must be greater than 0"),
        "{text}"
    );
}
