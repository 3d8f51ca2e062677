//! Oracle tests of `scraper pprof delta` and `scraper pprof merge` against google/pprof, on
//! real profiles captured here from a Go program serving net/http/pprof (tests/go/goapp) and
//! from Debian's Prometheus: per stack (function/file/line of every frame plus labels), our
//! totals must equal what google/pprof's own code computes (tests/go/pprofcheck: OLD scaled by
//! -1 and merged into NEW, i.e. `go tool pprof -base`, with negatives clamped), and
//! `go tool pprof -raw` must read every profile we write.
//!
//! Needs `go` (Debian golang-go 1.19), golang-github-google-pprof-dev and prometheus; without
//! them the tests are skipped unless SCRAPER_REQUIRE_ORACLE=1.
//! With SCRAPER_WRITE_FIXTURES=1 the captured profiles are also copied to tests/data/pprof.

#[path = "go/harness.rs"]
mod harness;
mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use harness::*;
use scraper::pprof::{DeltaOptions, DeltaOutcome, DeltaStore, ResetReason, encode, trim};

const TYPES: [&str; 4] = ["allocs", "heap", "mutex", "block"];

/// Scrapes every type in `TYPES` twice, `gap` apart; writes `<prefix>-<type>-{1,2}.pb.gz`.
fn capture_pairs(
    addr: &str,
    dir: &Path,
    prefix: &str,
    gap: Duration,
) -> Vec<(String, PathBuf, PathBuf)> {
    let path = |t: &str, n: u32| dir.join(format!("{prefix}-{t}-{n}.pb.gz"));
    for t in TYPES {
        std::fs::write(path(t, 1), get(addr, &format!("/debug/pprof/{t}"))).expect("write");
    }
    std::thread::sleep(gap);
    for t in TYPES {
        std::fs::write(path(t, 2), get(addr, &format!("/debug/pprof/{t}"))).expect("write");
    }
    if std::env::var("SCRAPER_WRITE_FIXTURES").is_ok_and(|v| v == "1") {
        let fixtures = repo().join("tests/data/pprof");
        std::fs::create_dir_all(&fixtures).expect("fixtures dir");
        for t in TYPES {
            for n in [1, 2] {
                std::fs::copy(path(t, n), fixtures.join(format!("{prefix}-{t}-{n}.pb.gz")))
                    .expect("copy fixture");
            }
        }
    }
    TYPES
        .iter()
        .map(|t| (format!("{prefix}-{t}"), path(t, 1), path(t, 2)))
        .collect()
}

/// Runs delta and merge on each pair and checks them with pprofcheck and `go tool pprof -raw`.
/// Returns the number of samples of each delta.
fn check_pairs(pairs: &[(String, PathBuf, PathBuf)], dir: &Path, extra: &[&str]) -> Vec<usize> {
    let check = build_go("pprofcheck");
    let mut samples = Vec::new();
    for (name, old, new) in pairs {
        let out = dir.join(format!("{name}-delta.pb.gz"));
        let (_, stats) = run_ok(
            scraper()
                .args(["pprof", "delta"])
                .args(extra)
                .arg(old)
                .arg(new)
                .arg("-o")
                .arg(&out),
        );
        let mut check_cmd = std::process::Command::new(&check);
        check_cmd.arg("delta");
        if extra.contains(&"--all-types") {
            check_cmd.arg("-all");
        }
        let (verdict, _) = run_ok(check_cmd.arg(old).arg(new).arg(&out));
        assert!(verdict.starts_with("ok:"), "{name}: {verdict}");
        eprintln!("{name}: {} | pprofcheck {}", stats.trim(), verdict.trim());
        go_tool_pprof_reads(&out);
        let n = scraper::pprof::decode(&std::fs::read(&out).expect("read"), &Default::default())
            .expect("decode our delta")
            .sample
            .len();
        samples.push(n);

        let merged = dir.join(format!("{name}-merged.pb.gz"));
        run_ok(
            scraper()
                .args(["pprof", "merge"])
                .arg(old)
                .arg(new)
                .arg("-o")
                .arg(&merged),
        );
        let (verdict, _) = run_ok(
            std::process::Command::new(&check)
                .arg("merge")
                .arg(&merged)
                .arg(old)
                .arg(new),
        );
        assert!(verdict.starts_with("ok:"), "{name} merge: {verdict}");
        go_tool_pprof_reads(&merged);
        let (info, _) = run_ok(scraper().args(["pprof", "info"]).arg(new));
        assert!(info.contains("Sample types:"), "{info}");
    }
    samples
}

#[test]
fn goapp_deltas_and_merges_match_google_pprof() {
    if tools().is_none() {
        return;
    }
    let goapp = build_go("goapp");
    let dir = tempfile::tempdir().expect("tempdir");
    let (_app, addr) = start_go(&goapp, &[]);
    std::thread::sleep(Duration::from_secs(1));
    let pairs = capture_pairs(&addr, dir.path(), "goapp", Duration::from_millis(1500));
    let samples = check_pairs(&pairs, dir.path(), &[]);
    // goapp allocates, contends and blocks all the time: every delta has something in it.
    assert!(samples.iter().all(|&n| n > 0), "{samples:?}");
    // The plain pprof -base semantics too (every type subtracted, inuse_* included).
    check_pairs(&pairs[..2], dir.path(), &["--all-types"]);

    // The trimming helpers' output, encoded, is read by Go as well.
    let heap = scraper::pprof::decode(
        &std::fs::read(&pairs[1].2).expect("read"),
        &Default::default(),
    )
    .expect("decode");
    let trimmed = [
        trim::truncate_stacks(&heap, 3, trim::Keep::Root),
        trim::truncate_stacks(&heap, 2, trim::Keep::Leaf),
        trim::keep_heaviest(&heap, 10, trim::default_value_index(&heap)),
        trim::keep_selected(
            &heap,
            &trim::choose_samples(&heap, 10, trim::COVERAGE_PERCENT),
        ),
        trim::drop_zero_samples(&heap),
    ];
    for (i, t) in trimmed.into_iter().enumerate() {
        let path = dir.path().join(format!("trimmed-{i}.pb.gz"));
        std::fs::write(&path, encode(&t.expect("trim"), 6)).expect("write");
        go_tool_pprof_reads(&path);
    }
}

#[test]
fn prometheus_deltas_and_merges_match_google_pprof() {
    let Some(tools) = tools() else {
        return;
    };
    let Some(bin) = tools.prometheus else {
        missing("prometheus is not installed");
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (_prom, addr) = start_prometheus(&bin, dir.path());
    std::thread::sleep(Duration::from_secs(2));
    let pairs = capture_pairs(&addr, dir.path(), "prometheus", Duration::from_secs(3));
    let samples = check_pairs(&pairs, dir.path(), &[]);
    // Prometheus allocates constantly (it scrapes itself every second); it does not enable
    // mutex and block profiling, whose profiles are valid but empty.
    assert!(samples[0] > 0 && samples[1] > 0, "{samples:?}");
}

#[test]
fn restarted_target_resets_the_baseline() {
    if tools().is_none() {
        return;
    }
    let goapp = build_go("goapp");
    let mut store = DeltaStore::new(DeltaOptions::default());
    let (app, addr) = start_go(&goapp, &[]);
    std::thread::sleep(Duration::from_secs(1));
    let first = store
        .observe("goapp/allocs", &get(&addr, "/debug/pprof/allocs"))
        .expect("first");
    assert!(matches!(first, DeltaOutcome::Baseline { .. }), "{first:?}");
    std::thread::sleep(Duration::from_secs(3));
    match store
        .observe("goapp/allocs", &get(&addr, "/debug/pprof/allocs"))
        .expect("second")
    {
        DeltaOutcome::Delta { stats, profile } => {
            assert!(stats.samples_out > 0, "{stats:?}");
            // What the scrape path would send (level 1) is what Go reads too.
            let dir = tempfile::tempdir().expect("tempdir");
            let path = dir.path().join("scrape-delta.pb.gz");
            std::fs::write(&path, &profile).expect("write");
            go_tool_pprof_reads(&path);
        }
        other => panic!("expected a delta, got {other:?}"),
    }
    drop(app);

    // The same binary again: a fresh process whose counters start from zero.
    let (_app, addr) = start_go(&goapp, &[]);
    std::thread::sleep(Duration::from_millis(700));
    match store
        .observe("goapp/allocs", &get(&addr, "/debug/pprof/allocs"))
        .expect("restarted")
    {
        DeltaOutcome::Reset(ResetReason::CountersDecreased { stacks }) => assert!(stacks > 0),
        other => panic!("expected a reset, got {other:?}"),
    }
    std::thread::sleep(Duration::from_secs(1));
    match store
        .observe("goapp/allocs", &get(&addr, "/debug/pprof/allocs"))
        .expect("after")
    {
        DeltaOutcome::Delta { stats, .. } => assert!(stats.samples_out > 0, "{stats:?}"),
        other => panic!("expected a delta after the reset, got {other:?}"),
    }
}
