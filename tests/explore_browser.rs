//! The built-in UI in a real browser, end to end: `scraper run` scrapes a real Go program into
//! `pyroscope.store` (CPU in `main.alphaWork`, then a mark, then in `main.betaWork`) next to a
//! target on a closed port; then Debian's Chromium, driven by Playwright (`ui/e2e/explore.e2e.mjs`,
//! playwright-core from `ui/node_modules`), opens the explorer and the targets page and checks:
//!
//! - picking the service draws a flame graph whose widest frames are the top functions by
//!   cumulative value that `scraper query --store` + `scraper pprof info` print for the same range
//!   (the independent path: the CLI reads the store directly, the page reads the HTTP API);
//! - the minutes around the mark, and then a before and an after range brushed on the timeline,
//!   show the diff, with `main.betaWork` grown and `main.alphaWork` shrunk;
//! - the targets page shows the down target and its error.
//!
//! A screenshot of each view is written to the test output folder (`$SCRAPER_TEST_OUTPUT`,
//! default `test-output/` in the repository), which CI keeps.
//!
//! Needs `go`, `node`, `ui/node_modules` (`npm ci --prefix ui`, which `.ci/run` runs) and
//! Chromium; without them the test prints why and passes, unless SCRAPER_REQUIRE_GO,
//! SCRAPER_REQUIRE_NPM or SCRAPER_REQUIRE_CHROMIUM is 1 (CI), where it fails.

mod scrape_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scrape_support::{BIN, Scraper, build_go, free_port, have_go, start_go};

/// Generous: the script loads pages, waits for queries and takes screenshots.
const SCRIPT_TIMEOUT: Duration = Duration::from_secs(180);

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

fn on_path(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

/// What the browser test needs, or why it cannot run (a failure when CI requires it).
struct Browser {
    node: PathBuf,
    chromium: PathBuf,
    script: PathBuf,
}

fn browser() -> Option<Browser> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let missing = |what: &str, var: &str, fix: &str| -> Option<Browser> {
        if required(var) {
            panic!("{var}=1 but {what} is missing ({fix})");
        }
        eprintln!("skipped: {what} is missing ({fix}; CI sets {var}=1)");
        None
    };
    let Some(chromium) = on_path("chromium").or_else(|| on_path("chromium-browser")) else {
        return missing(
            "Chromium",
            "SCRAPER_REQUIRE_CHROMIUM",
            "Debian package chromium, which .ci/run installs",
        );
    };
    let Some(node) = on_path("node") else {
        return missing("node", "SCRAPER_REQUIRE_NPM", "Node.js with npm");
    };
    if !repo.join("ui/node_modules/playwright-core").is_dir() {
        return missing(
            "ui/node_modules/playwright-core",
            "SCRAPER_REQUIRE_NPM",
            "`npm ci --prefix ui`, which .ci/run runs",
        );
    }
    Some(Browser {
        node,
        chromium,
        script: repo.join("ui/e2e/explore.e2e.mjs"),
    })
}

fn output_dir() -> PathBuf {
    let dir = std::env::var_os("SCRAPER_TEST_OUTPUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("test-output"))
        .join("explore_browser");
    std::fs::create_dir_all(&dir).expect("create the test output folder");
    dir
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).expect("after 1970").as_secs()
}

fn scraper(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run scraper");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "scraper {args:?} failed: {stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// `(function, cum)` of every row `scraper pprof info` lists, widest first.
fn top_by_cum(info: &str) -> Vec<(String, i64)> {
    let mut rows: Vec<(String, i64)> = info
        .lines()
        .skip_while(|l| !l.starts_with("Top functions"))
        .skip(2)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            match cols.as_slice() {
                [_flat, _flat_pct, cum, _cum_pct, name] => {
                    Some((name.to_string(), cum.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect();
    rows.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    rows
}

/// The total of the sample type `scraper pprof info` ranks its top functions by.
fn ranked_total(info: &str) -> Option<i64> {
    let ranked = info
        .lines()
        .find_map(|l| l.strip_prefix("Top functions by "))?
        .trim_end_matches(':');
    info.lines().find_map(|l| {
        let (ty, total) = l.trim().split_once(": total ")?;
        (ty.trim_end_matches(" (default)") == ranked).then(|| total.trim().parse().ok())?
    })
}

fn config(target: &str, down: &str, store: &Path) -> String {
    let app: &[(&str, &str)] = &[("__address__", target), ("service_name", "scrapeapp")];
    let gone: &[(&str, &str)] = &[("__address__", down), ("service_name", "gone")];
    support::alloy::scrape_into_store(&[app, gone], &["process_cpu", "memory"], store)
}

/// Runs the Playwright script; its output is printed whatever happens.
fn run_script(b: &Browser, url: &str, expect: &Path, shots: &Path) -> (bool, String) {
    let out = support::child::run(
        Command::new(&b.node)
            .arg(&b.script)
            .env("SCRAPER_URL", url)
            .env("SCRAPER_E2E_EXPECT", expect)
            .env("SCRAPER_E2E_SCREENSHOTS", shots)
            .env("CHROMIUM", &b.chromium),
        "node",
        SCRIPT_TIMEOUT,
    );
    let text = format!("{}{}", out.stdout, out.stderr);
    match out.status {
        Some(s) => (s.success(), text),
        None => (false, format!("{text}\n(killed after {SCRIPT_TIMEOUT:?})")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explorer_flame_graph_diff_and_targets_in_chromium() {
    if !have_go() {
        return;
    }
    let Some(browser) = browser() else {
        return;
    };
    let app = build_go("scrapeapp");
    let (_proc, target) = start_go(&app.bin, &["-duty", "0.3", "-fn", "alpha"]);
    // A port nothing listens on: the second target is down with "connection refused".
    let down = format!("127.0.0.1:{}", free_port());
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let s = Scraper::start(|_| config(&target, &down, &store)).await;

    let from = unix_secs(SystemTime::now());
    tokio::time::sleep(Duration::from_secs(15)).await;
    let out = scraper(&["mark", "switch to beta", "--server", &s.addr]);
    assert!(out.contains("recorded"), "{out}");
    let resp = reqwest::get(format!("http://{target}/work?fn=beta"))
        .await
        .expect("switch");
    assert!(resp.status().is_success());
    tokio::time::sleep(Duration::from_secs(15)).await;
    let to = unix_secs(SystemTime::now()) + 1;
    // The oracle and the page must read the same profiles: wait until `to` has passed and the
    // store's writer (which polls every 250 ms) has committed every profile received before it,
    // so that none arrives in the range between the oracle's read and the page's.
    let settled = UNIX_EPOCH + Duration::from_secs(to) + Duration::from_millis(1500);
    if let Ok(wait) = settled.duration_since(SystemTime::now()) {
        tokio::time::sleep(wait).await;
    }

    // The oracle: the same range read from the store by the CLI, ranked by `pprof info`.
    let merged = dir.path().join("merged.pb.gz");
    let store_arg = store.to_string_lossy().into_owned();
    scraper(&[
        "query",
        r#"{service_name="scrapeapp"}"#,
        "--store",
        &store_arg,
        "--from",
        &from.to_string(),
        "--to",
        &to.to_string(),
        "-o",
        &merged.to_string_lossy(),
    ]);
    let info = scraper(&["pprof", "info", "--top", "50", &merged.to_string_lossy()]);
    let top = top_by_cum(&info);
    let total = ranked_total(&info).unwrap_or_else(|| panic!("no total in:\n{info}"));
    // What rates are per, as `scraper diff` divides: the time the profiles cover (one instance).
    let covered = duration_of(&info).unwrap_or_else(|| panic!("no duration in:\n{info}"));
    assert!(
        top.iter().any(|(f, _)| f == "main.alphaWork")
            && top.iter().any(|(f, _)| f == "main.betaWork"),
        "both phases must be in the profile:\n{info}"
    );

    let expect = serde_json::json!({
        "service": "scrapeapp",
        "type": "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
        "from": from * 1000,
        "to": to * 1000,
        "total": total,
        "seconds": covered as f64 / 1e9,
        "top": top.iter().take(8).map(|(name, cum)| serde_json::json!({"name": name, "cum": cum})).collect::<Vec<_>>(),
        "mark": "switch to beta",
        "grown": ["main.betaWork"],
        "shrunk": ["main.alphaWork"],
        "down_target": {"address": down, "error_contains": "refused"},
    });
    let expect_file = dir.path().join("expect.json");
    std::fs::write(
        &expect_file,
        serde_json::to_vec_pretty(&expect).expect("json"),
    )
    .expect("write expectations");

    let shots = output_dir();
    let (ok, text) = run_script(
        &browser,
        &format!("http://{}", s.addr),
        &expect_file,
        &shots,
    );
    println!("{text}");
    assert!(
        ok,
        "the browser checks failed (screenshots in {}):\n{text}\n--- scraper logs ---\n{}",
        shots.display(),
        s.logs()
    );
    for view in ["explorer", "diff", "diff-brushed", "targets"] {
        let png = shots.join(format!("{view}.png"));
        let len = std::fs::metadata(&png).map_or(0, |m| m.len());
        assert!(len > 5_000, "screenshot {} has {len} bytes", png.display());
    }
}

/// The merged profile's `duration_nanos`, from `pprof info`'s "Time: ... ns, duration N ns".
fn duration_of(info: &str) -> Option<i64> {
    let line = info.lines().find(|l| l.starts_with("Time:"))?;
    let (_, rest) = line.split_once("duration ")?;
    rest.strip_suffix(" ns")?.trim().parse().ok()
}

#[test]
fn pprof_info_duration() {
    let info = "Period: 1 cpu/nanoseconds\nTime: 1795726207524048747 ns, duration 64033296343 ns\n";
    assert_eq!(duration_of(info), Some(64_033_296_343));
    assert_eq!(duration_of("Time: 5 ns\n"), None);
}

#[test]
fn pprof_info_total_of_the_ranked_type() {
    let info = "Sample types:\n  samples/count: total 7\n  cpu/nanoseconds (default): total 70\n\
                Period: 1 cpu/nanoseconds\nTop functions by cpu/nanoseconds:\n";
    assert_eq!(ranked_total(info), Some(70));
    assert_eq!(
        ranked_total("Sample types:\n  cpu/nanoseconds: total 70\n"),
        None
    );
}

#[test]
fn pprof_info_rows_are_ranked_by_cum() {
    let info = "Top functions by cpu/nanoseconds:\n          flat  flat%            cum   cum%  function\n\
                10  1.0%  30  3.0%  main.a\n   20  2.0%  50  5.0%  main.b\n";
    assert_eq!(
        top_by_cum(info),
        vec![("main.b".to_string(), 50), ("main.a".to_string(), 30)]
    );
}
