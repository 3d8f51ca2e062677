//! `scraper run --config.watch-interval`: a config changed on disk is reloaded without a signal,
//! whether rewritten in place or replaced the way kubelet updates a mounted ConfigMap (a new
//! timestamped directory, then the `..data` symlink renamed over the old one); a broken or
//! missing config keeps the running one and says why.

mod server_support;

use std::path::Path;
use std::time::{Duration, Instant};

use server_support::Scraper;

const V1: &str = "logging {\n  level = \"info\"\n}\n";
const V2: &str = "discovery.relabel \"added\" {\n  targets = [{\"__address__\" = \"a:1\"}]\n}\n";
const BROKEN: &str = "discovery.relabel \"added\" {\n  targets = [{\"__address__\" = }]\n}\n";
const V3: &str = "discovery.relabel \"added\" {\n  targets = [{\"__address__\" = \"a:1\"}]\n}\n\ndiscovery.relabel \"second\" {\n  targets = discovery.relabel.added.output\n}\n";

/// Hang guard: the watch reads every 200 ms, so anything past this is a failure, not slowness.
const GUARD: Duration = Duration::from_secs(30);

/// Kubelet's atomic update of a ConfigMap volume: the files go to a fresh directory, a
/// temporary symlink points at it and is renamed over `..data`, and the old directory goes.
fn kubelet_swap(dir: &Path, version: u32, text: &str) {
    let target = format!("..2026_11_26_{version}");
    std::fs::create_dir(dir.join(&target)).expect("mkdir");
    std::fs::write(dir.join(&target).join("config.alloy"), text).expect("write");
    let old = std::fs::read_link(dir.join("..data")).ok();
    std::os::unix::fs::symlink(&target, dir.join("..data_tmp")).expect("symlink");
    std::fs::rename(dir.join("..data_tmp"), dir.join("..data")).expect("rename");
    if let Some(old) = old {
        std::fs::remove_dir_all(dir.join(old)).expect("remove the old version");
    }
}

async fn get(client: &reqwest::Client, s: &Scraper, path: &str) -> (u16, String) {
    let resp = client.get(s.url(path)).send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

async fn components(client: &reqwest::Client, s: &Scraper) -> Vec<String> {
    let (status, body) = get(client, s, "/api/v0/web/components").await;
    assert_eq!(status, 200, "{body}");
    let list: serde_json::Value = serde_json::from_str(&body).expect("json");
    let mut ids: Vec<String> = list
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["localID"].as_str().unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    ids
}

/// Polls until the component list is `want`; panics with the logs past the guard.
async fn wait_for_components(client: &reqwest::Client, s: &Scraper, want: &[&str]) {
    let deadline = Instant::now() + GUARD;
    loop {
        let got = components(client, s).await;
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "components {got:?}, want {want:?}; logs:\n{}",
            s.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn count(s: &Scraper, needle: &str) -> usize {
    s.logs().matches(needle).count()
}

/// Polls the logs until `needle` is in `n` lines; panics with the logs past the guard.
fn wait_for_count(s: &Scraper, needle: &str, n: usize) {
    let deadline = Instant::now() + GUARD;
    while count(s, needle) < n {
        assert!(
            Instant::now() < deadline,
            "fewer than {n} lines with {needle:?}; logs:\n{}",
            s.logs()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[tokio::test]
async fn a_changed_config_is_reloaded_and_a_broken_one_keeps_the_running_graph() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mount = dir.path().join("etc");
    std::fs::create_dir(&mount).expect("mkdir");
    kubelet_swap(&mount, 1, V1);
    std::os::unix::fs::symlink("..data/config.alloy", mount.join("config.alloy")).expect("link");
    let config = mount.join("config.alloy");
    let s = Scraper::start_with(dir, config, &["--config.watch-interval=200ms"]);
    let client = reqwest::Client::new();
    wait_for_components(&client, &s, &[]).await;
    wait_for_count(&s, "watching the config for changes", 1);

    // A ConfigMap update: the new component appears, with no signal sent.
    kubelet_swap(&mount, 2, V2);
    wait_for_components(&client, &s, &["discovery.relabel.added"]).await;
    wait_for_count(&s, "config reloaded", 1);
    assert_eq!(count(&s, "reload requested: the config changed"), 1);

    // A broken update: the error is logged and the metric says so; the graph keeps running.
    kubelet_swap(&mount, 3, BROKEN);
    wait_for_count(&s, "failed to reload config", 1);
    let line = s
        .logs()
        .lines()
        .find(|l| l.contains("failed to reload config"))
        .map(str::to_owned)
        .expect("line");
    assert!(
        line.contains("config.alloy:2:"),
        "the error's position: {line}"
    );
    let (_, metrics) = get(&client, &s, "/metrics").await;
    assert!(
        metrics.contains("alloy_config_last_load_successful 0"),
        "{metrics}"
    );
    assert_eq!(get(&client, &s, "/-/ready").await.0, 200);
    assert_eq!(components(&client, &s).await, ["discovery.relabel.added"]);
    // Unchanged, it is not retried every tick.
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(count(&s, "failed to reload config"), 1, "{}", s.logs());

    // The file vanishes (a warning, once) and comes back as a plain in-place rewrite.
    std::fs::remove_file(mount.join("..data")).expect("unlink ..data");
    wait_for_count(&s, "cannot read the watched config", 1);
    let target = std::fs::read_dir(&mount)
        .expect("ls")
        .filter_map(Result::ok)
        .map(|e| e.file_name())
        .find(|n| n.to_string_lossy().starts_with("..2026"))
        .expect("the version directory");
    std::os::unix::fs::symlink(&target, mount.join("..data")).expect("relink");
    std::fs::write(mount.join("..data").join("config.alloy"), V3).expect("rewrite");
    wait_for_components(
        &client,
        &s,
        &["discovery.relabel.added", "discovery.relabel.second"],
    )
    .await;
    wait_for_count(&s, "config reloaded", 2);
    let (_, metrics) = get(&client, &s, "/metrics").await;
    assert!(
        metrics.contains("alloy_config_last_load_successful 1"),
        "{metrics}"
    );
    assert_eq!(
        count(&s, "cannot read the watched config"),
        1,
        "{}",
        s.logs()
    );
}

#[tokio::test]
async fn without_the_flag_a_changed_config_waits_for_a_reload() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("config.alloy");
    std::fs::write(&config, V1).expect("write");
    let s = Scraper::start_with(dir, config.clone(), &[]);
    let client = reqwest::Client::new();
    wait_for_components(&client, &s, &[]).await;
    std::fs::write(&config, V2).expect("write");
    // Long enough for many ticks of the watch above; nothing may change.
    std::thread::sleep(Duration::from_millis(1000));
    assert_eq!(components(&client, &s).await, Vec::<String>::new());
    assert_eq!(count(&s, "watching the config"), 0);
    s.signal(libc::SIGHUP);
    wait_for_components(&client, &s, &["discovery.relabel.added"]).await;
}
