//! The upgrade-window workflow end to end: `scraper run` scrapes a real Go program into
//! `pyroscope.store`, `scraper mark` records the change, the program's CPU moves from
//! `main.alphaWork` to `main.betaWork`, and `scraper diff --around-mark` / `scraper pgo` /
//! `scraper query` read the store back.

mod scrape_support;
mod support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use scrape_support::{BIN, Scraper, build_go, go_tool_pprof_raw, have_go, start_go};

fn scraper(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(BIN).args(args).output().expect("run scraper");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn config(target: &str, store: &Path) -> String {
    let app: &[(&str, &str)] = &[("__address__", target), ("service_name", "scrapeapp")];
    support::alloy::scrape_into_store(&[app], &["process_cpu", "memory", "goroutine"], store)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_around_a_mark_shows_cpu_moving_between_functions() {
    if !have_go() {
        return;
    }
    let app = build_go("scrapeapp");
    let (_proc, target) = start_go(&app.bin, &["-duty", "0.3", "-fn", "alpha"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let s = Scraper::start(|_| config(&target, &store)).await;

    // 16 s of alpha, the mark, then the switch and 16 s of beta.
    tokio::time::sleep(Duration::from_secs(16)).await;
    let (ok, out, err) = scraper(&["mark", "switch to beta", "--server", &s.addr]);
    assert!(ok, "scraper mark failed: {out}{err}");
    assert!(out.contains("recorded"), "{out}");
    let resp = reqwest::get(format!("http://{target}/work?fn=beta"))
        .await
        .expect("switch");
    assert!(resp.status().is_success());
    tokio::time::sleep(Duration::from_secs(16)).await;
    drop(s);

    let store_arg = store.to_string_lossy().into_owned();
    let html = dir.path().join("report.html");
    let (ok, out, err) = scraper(&[
        "diff",
        r#"{service_name="scrapeapp"}"#,
        "--store",
        &store_arg,
        "--around-mark",
        "switch to beta",
        "--width",
        "14s",
        "--html",
        &html.to_string_lossy(),
    ]);
    assert!(ok, "scraper diff failed: {out}{err}");
    eprintln!("{out}");
    assert!(
        out.contains("main.alphaWork") && out.contains("main.betaWork"),
        "{out}"
    );
    // The report names the mark and reads its window's length as a duration.
    assert!(out.contains("before \"switch to beta\": "), "{out}");
    for line in out.lines().filter(|l| l.contains(" × ")) {
        // "… 8.5s × 1 instance": whole seconds or one decimal, not "8.461389095s".
        let span = line
            .split(" × ")
            .next()
            .and_then(|l| l.split_whitespace().last())
            .unwrap_or_default();
        let decimals = span.split('.').nth(1).map_or(0, |d| d.len() - 1);
        assert!(span.ends_with('s') && decimals <= 1, "{span:?} in {line}");
    }

    // Heap in use and goroutines are snapshots: averaged over the window's profiles, never
    // divided by seconds ("747 KiB/s" of heap means nothing).
    for ty in ["memory", "goroutine"] {
        let (ok, out, err) = scraper(&[
            "diff",
            r#"{service_name="scrapeapp"}"#,
            "--type",
            ty,
            "--store",
            &store_arg,
            "--around-mark",
            "switch to beta",
            "--width",
            "14s",
        ]);
        assert!(ok, "scraper diff --type {ty} failed: {out}{err}");
        eprintln!("{out}");
        let first = out.lines().next().unwrap_or_default();
        assert!(first.ends_with(", average per instance"), "{ty}: {out}");
        assert!(out.contains(" average "), "{ty}: {out}");
        assert!(!out.contains("/s "), "{ty} printed a rate: {out}");
    }

    let page = std::fs::read_to_string(&html).expect("report written");
    assert!(
        page.contains("main.betaWork") && !page.contains("http://") && !page.contains("https://")
    );

    // The magnitudes, through the same library calls the command makes.
    use scraper::query::source::{ProfileSource as _, ProfileType, Query};
    let source = scraper::query::local::LocalSource::open(&store).expect("open store");
    let marks = source
        .marks(SystemTime::UNIX_EPOCH, SystemTime::now())
        .expect("marks");
    assert_eq!(marks.len(), 1, "{marks:?}");
    let at = marks[0].at;
    let width = Duration::from_secs(14);
    let query = |from, to| Query {
        selector: scraper::query::selector::Selector::parse(r#"{service_name="scrapeapp"}"#)
            .expect("selector"),
        profile_type: ProfileType::parse("process_cpu").expect("type"),
        from,
        to,
        // Diff windows, as `scraper diff` reads them: the profile in flight at the mark
        // belongs to neither side.
        exclude_straddling: true,
    };
    let window = |from: SystemTime, to: SystemTime, label: &str| {
        let m = source
            .select_merge(&query(from, to), &mut |_, _| {})
            .expect("query")
            .expect("profiles in the window");
        scraper::diff::Window {
            seconds: m.profile.duration_nanos as f64 / 1e9 / m.series.max(1) as f64,
            instances: m.series,
            profiles: m.profiles,
            label: label.to_string(),
            profile: m.profile,
        }
    };
    let before = window(at - width, at, "before");
    let after = window(at, at + width, "after");
    let report = scraper::diff::diff(
        &before,
        &after,
        &scraper::diff::Options {
            sample_type: Some(("cpu".into(), "nanoseconds".into())),
            top: 20,
        },
    )
    .expect("diff");
    let alpha = report.row("main.alphaWork").expect("alpha row");
    let beta = report.row("main.betaWork").expect("beta row");
    eprintln!("alpha {alpha:?}\nbeta {beta:?}");
    // CPU moved: alpha lost (nearly) all of it, beta gained as much as alpha lost. The
    // profile in flight at the mark mixes both, so each side is allowed 10%.
    let shrink = alpha.cum_before - alpha.cum_after;
    let growth = beta.cum_after - beta.cum_before;
    assert!(alpha.cum_after <= 0.1 * alpha.cum_before, "{alpha:?}");
    assert!(beta.cum_before <= 0.1 * beta.cum_after, "{beta:?}");
    assert!(
        (shrink - growth).abs() <= 0.1 * shrink.max(growth),
        "alpha shrank by {shrink}, beta grew by {growth}"
    );
    assert!(
        alpha.cum_change_pct.is_some_and(|p| p <= -90.0),
        "{alpha:?}"
    );

    // The PGO export of the before window parses with Go's reader and keeps alpha's CPU.
    let pgo = dir.path().join("default.pgo");
    let from = format!(
        "{}",
        at.duration_since(SystemTime::UNIX_EPOCH)
            .expect("time")
            .as_secs()
            - 14
    );
    let to = format!(
        "{}",
        at.duration_since(SystemTime::UNIX_EPOCH)
            .expect("time")
            .as_secs()
    );
    let (ok, out, err) = scraper(&[
        "pgo",
        r#"{service_name="scrapeapp"}"#,
        "--store",
        &store_arg,
        "--from",
        &from,
        "--to",
        &to,
        "-o",
        &pgo.to_string_lossy(),
    ]);
    assert!(ok, "scraper pgo failed: {out}{err}");
    let raw = std::fs::read(&pgo).expect("pgo written");
    let text = go_tool_pprof_raw(&raw).expect("go tool pprof reads default.pgo");
    assert!(text.contains("main.alphaWork"), "{text}");

    // And `scraper query` merges a range into a pprof Go reads.
    let merged = dir.path().join("merged.pb.gz");
    let (ok, out, err) = scraper(&[
        "query",
        r#"{service_name=~"scrape.*"}"#,
        "--store",
        &store_arg,
        "--from",
        "now-5m",
        "-o",
        &merged.to_string_lossy(),
    ]);
    assert!(ok, "scraper query failed: {out}{err}");
    go_tool_pprof_raw(&std::fs::read(&merged).expect("merged")).expect("valid pprof");

    // Bad input is reported with a pointer to the problem.
    let (ok, _, err) = scraper(&[
        "query",
        "{service_name=scrapeapp}",
        "--store",
        &store_arg,
        "-o",
        "/dev/null",
    ]);
    assert!(!ok);
    assert!(err.contains("column 15") && err.contains('^'), "{err}");
}
