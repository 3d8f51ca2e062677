//! The PGO pipeline end to end on real Go programs: `scraper run` scrapes two differently
//! loaded instances of tests/go/scrapeapp (workload `l1`: CPU in `main.alphaWork` at a 50 %
//! duty cycle; workload `l2`: `main.betaWork` at 30 %) into `pyroscope.store`, then
//!
//! * `scraper pgo --split-by workload` writes one profile per workload, and `scraper pgo check`
//!   scores each against its own workload higher than against the other (the layer-1/layer-2
//!   trap caught), with `--min-score`'s exit codes;
//! * `--top-windows`, `--max-edges` and the refusal of an empty result (exit 1, or an empty
//!   profile and exit 0 with `--allow-empty`) behave as docs/PGO.md says;
//! * Go >= 1.21 builds a program with the written profile (`go build -pgo=FILE`) and with the
//!   fail-open empty one, and `go version -m` shows `-pgo=`.
//!
//! Needs Go >= 1.21 (Debian 12's backports `golang-1.2x-go`, which `.ci/run` installs), which
//! also builds the targets; without it the test prints why and passes, unless
//! `SCRAPER_REQUIRE_GO` is set.

mod scrape_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use scrape_support::{BIN, Scraper, eventually, metric, start_go};
use scraper::pprof::pgo_edges::EdgeGraph;
use support::go::Require;

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn scraper(args: &[&str]) -> Run {
    let out = Command::new(BIN).args(args).output().expect("run scraper");
    let run = Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    eprintln!(
        "$ scraper {}\n{}{}(exit {})",
        args.join(" "),
        run.stdout,
        run.stderr,
        run.code
    );
    run
}

fn config(l1: &str, l2: &str, store: &Path) -> String {
    let target = |addr, workload| {
        [
            ("__address__", addr),
            ("service_name", "lb"),
            ("workload", workload),
        ]
    };
    let (l1, l2) = (target(l1, "l1"), target(l2, "l2"));
    support::alloy::scrape_into_store(&[&l1, &l2], &["process_cpu"], store)
}

/// The score `scraper pgo check` prints ("... covers 93.4% of ..."), and its exit code.
fn check(profile: &Path, workload: &str, store: &str, extra: &[&str]) -> (f64, i32) {
    let selector = format!(r#"{{service_name="lb", workload="{workload}"}}"#);
    let mut args = vec![
        "pgo",
        "check",
        profile.to_str().expect("utf-8 path"),
        &selector,
        "--store",
        store,
        "--from",
        "now-10m",
    ];
    args.extend_from_slice(extra);
    let run = scraper(&args);
    assert!(run.code == 0 || run.code == 3, "pgo check failed");
    let score = run
        .stdout
        .split(" covers ")
        .nth(1)
        .and_then(|rest| rest.split('%').next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no score in {:?}", run.stdout));
    (score, run.code)
}

fn decode(path: &Path) -> scraper::pprof::proto::Profile {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    scraper::pprof::decode(&bytes, &scraper::pprof::Limits::default()).expect("a pprof profile")
}

fn cpu(path: &Path) -> i64 {
    decode(path).sample.iter().map(|s| s.value[0]).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_profiles_score_their_own_workload_higher_and_go_builds_with_them() {
    // The targets are built with the same Go >= 1.21: Go writes the function start lines a
    // PGO build needs only since 1.20 (a profile of a 1.19 program is refused, rightly).
    let Some(go) = Require::Go.pgo_go() else {
        return;
    };
    let started = Instant::now();
    let gopath = tempfile::tempdir().expect("tempdir");
    let app = gopath.path().join("scrapeapp");
    support::go::build_with(&go, "scrapeapp", &app, &gopath.path().join("gopath"));
    eprintln!("built scrapeapp in {:?}", started.elapsed());
    let (_l1, l1) = start_go(&app, &["-fn", "alpha", "-duty", "0.5"]);
    let (_l2, l2) = start_go(&app, &["-fn", "beta", "-duty", "0.3"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let s = Scraper::start(|_| config(&l1, &l2, &store)).await;
    // Four CPU profiles per workload; the wait is a hang guard, not a pass condition.
    let stored = eventually(Duration::from_secs(60), || async {
        let text = s.metrics().await;
        metric(&text, "pyroscope_store_written_profiles_total", &[]).unwrap_or(0.0) >= 8.0
    })
    .await;
    assert!(stored, "profiles were not stored:\n{}", s.logs());
    drop(s);
    eprintln!("scraped in {:?}", started.elapsed());
    let store = store.to_string_lossy().into_owned();
    let out = dir.path().join("pgo");

    // One profile per workload.
    let template = format!("{}/{{value}}/default.pgo", out.display());
    let run = scraper(&[
        "pgo",
        r#"{service_name="lb"}"#,
        "--store",
        &store,
        "--from",
        "now-10m",
        "--split-by",
        "workload",
        "-o",
        &template,
        "--min-cpu",
        "500ms",
    ]);
    assert_eq!(run.code, 0, "scraper pgo --split-by failed");
    let profiles: Vec<PathBuf> = ["l1", "l2"]
        .iter()
        .map(|w| out.join(w).join("default.pgo"))
        .collect();
    for (p, hot) in profiles.iter().zip(["main.alphaWork", "main.betaWork"]) {
        assert!(run.stdout.contains(&*p.to_string_lossy()), "{}", run.stdout);
        let graph = EdgeGraph::from_profile(&decode(p)).expect("edges");
        assert!(
            graph.weights.keys().any(|e| e.caller == hot),
            "{}: no edge from {hot}",
            p.display()
        );
        // The call graph `check` and the budgets use is the one Go's compiler reads: Go's own
        // `go tool preprofile` (1.23+) lists the same edges, weights and order.
        if let Some(want) = go_preprofile(&go, p, dir.path()) {
            let got: Vec<(String, String, i64, i64)> = graph
                .by_weight()
                .into_iter()
                .map(|(e, w)| (e.caller, e.callee, e.offset, w))
                .collect();
            assert_eq!(got, want, "{}", p.display());
            // `pgo check` reads Go's preprocessed form too, to the same score.
            let pre = dir.path().join("preprofile.txt");
            for workload in ["l1", "l2"] {
                let (from_pprof, _) = check(p, workload, &store, &[]);
                let (from_pre, _) = check(&pre, workload, &store, &[]);
                assert_eq!(from_pre, from_pprof, "{} on {workload}", p.display());
            }
        }
    }

    // Each profile covers its own workload fully (the same data, the same edges) and the other
    // one less: l2's CPU is on betaWork -> spin, which l1's profile never saw.
    let mut scores = Vec::new();
    for (profile, own, other) in [(&profiles[0], "l1", "l2"), (&profiles[1], "l2", "l1")] {
        let (own_score, code) = check(profile, own, &store, &["--min-score", "99"]);
        assert_eq!(code, 0, "own workload at or above --min-score");
        let (other_score, code) = check(profile, other, &store, &["--min-score", "99"]);
        assert_eq!(code, 3, "the other workload below --min-score");
        assert!(own_score >= 99.9, "{own}: {own_score}");
        assert!(
            other_score < own_score,
            "{own} vs {other}: {other_score} >= {own_score}"
        );
        scores.push((own, own_score, other_score));
    }
    eprintln!("scores (profile, own, other): {scores:?}");
    let run = scraper(&[
        "pgo",
        "check",
        &profiles[0].to_string_lossy(),
        r#"{workload="l2"}"#,
        "--store",
        &store,
        "--from",
        "now-10m",
    ]);
    assert_eq!(run.code, 0, "no --min-score: no verdict");
    assert!(
        run.stdout.contains("main.betaWork (+") && run.stdout.contains("-> main.spin"),
        "the uncovered edge is listed: {}",
        run.stdout
    );

    // The busiest 3 s window holds less CPU than the whole range (its profiles, 3 s apart,
    // span more than one window).
    let top = dir.path().join("top.pgo");
    let run = scraper(&[
        "pgo",
        r#"{workload="l1"}"#,
        "--store",
        &store,
        "--from",
        "now-10m",
        "--top-windows",
        "1",
        "--window",
        "3s",
        "--min-cpu",
        "100ms",
        "-o",
        &top.to_string_lossy(),
    ]);
    assert_eq!(run.code, 0);
    assert!(run.stdout.contains("the 1 busiest of "), "{}", run.stdout);
    let (top_cpu, all_cpu) = (cpu(&top), cpu(&profiles[0]));
    assert!(0 < top_cpu && top_cpu < all_cpu, "{top_cpu} vs {all_cpu}");

    // An edge budget keeps that many edges, the hottest among them.
    let trimmed = dir.path().join("trimmed.pgo");
    let run = scraper(&[
        "pgo",
        r#"{workload="l1"}"#,
        "--store",
        &store,
        "--from",
        "now-10m",
        "--max-edges",
        "2",
        "--min-kept",
        "0",
        "--min-cpu",
        "100ms",
        "-o",
        &trimmed.to_string_lossy(),
    ]);
    assert_eq!(run.code, 0);
    let whole = EdgeGraph::from_profile(&decode(&profiles[0])).expect("edges");
    let kept = EdgeGraph::from_profile(&decode(&trimmed)).expect("edges");
    assert!(
        !kept.weights.is_empty() && kept.weights.len() <= 2,
        "{kept:?}"
    );
    let hottest = &whole.by_weight()[0].0;
    assert!(kept.weights.contains_key(hottest), "{hottest} trimmed away");

    // A size budget: the file fits, and still has the hottest edge.
    let small = dir.path().join("small.pgo");
    let run = scraper(&[
        "pgo",
        r#"{workload="l1"}"#,
        "--store",
        &store,
        "--from",
        "now-10m",
        "--max-bytes",
        "1KiB",
        "--min-kept",
        "0",
        "--min-cpu",
        "100ms",
        "-o",
        &small.to_string_lossy(),
    ]);
    assert_eq!(run.code, 0);
    let size = std::fs::metadata(&small).expect("written").len();
    assert!(size <= 1024, "{size} bytes");
    let kept = EdgeGraph::from_profile(&decode(&small)).expect("edges");
    assert!(
        kept.weights.contains_key(hottest),
        "{hottest} trimmed away in {kept:?}"
    );

    // Empty: refused with exit 1 and nothing written, or, failing open, an empty profile.
    let empty = dir.path().join("empty.pgo");
    let nothing = [
        "pgo",
        r#"{workload="l3"}"#,
        "--store",
        &store,
        "--from",
        "now-10m",
        "-o",
        &*empty.to_string_lossy(),
    ]
    .map(str::to_owned);
    let args: Vec<&str> = nothing.iter().map(String::as_str).collect();
    let run = scraper(&args);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("empty: no process_cpu profiles match")
            && run.stderr.contains("--allow-empty"),
        "{}",
        run.stderr
    );
    assert!(!empty.exists());
    let mut open = args.clone();
    open.push("--allow-empty");
    let run = scraper(&open);
    assert_eq!(run.code, 0);
    // The warning describes the file written: on stdout (the file may be stderr itself).
    assert!(run.stdout.contains("warning: "), "{}", run.stdout);
    assert!(decode(&empty).sample.is_empty());

    // Go >= 1.21 builds with both.
    for profile in [&profiles[0], &empty] {
        go_build_with(&go, profile, dir.path());
    }
    eprintln!("done in {:?}", started.elapsed());
}

/// The edges `go tool preprofile` (Go 1.23 and newer) finds in `profile`, in its order:
/// (caller, callee, call-site offset, weight). None for an older Go.
fn go_preprofile(go: &Path, profile: &Path, dir: &Path) -> Option<Vec<(String, String, i64, i64)>> {
    if support::go::go_minor(go).is_none_or(|minor| minor < 23) {
        eprintln!("no `go tool preprofile` before Go 1.23: edges not compared with Go's");
        return None;
    }
    let out_file = dir.join("preprofile.txt");
    let out = Command::new(go)
        .args(["tool", "preprofile", "-i"])
        .arg(profile)
        .arg("-o")
        .arg(&out_file)
        .env("GOTOOLCHAIN", "local")
        .output()
        .expect("run go tool preprofile");
    assert!(
        out.status.success(),
        "go tool preprofile: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&out_file).expect("preprofile output");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("GO PREPROFILE V1"), "{text}");
    let rest: Vec<&str> = lines.collect();
    Some(
        rest.chunks(3)
            .map(|c| {
                let (offset, weight) = c[2].split_once(' ').expect("offset weight");
                (
                    c[0].to_string(),
                    c[1].to_string(),
                    offset.parse().expect("offset"),
                    weight.parse().expect("weight"),
                )
            })
            .collect(),
    )
}

/// `go build -pgo=PROFILE` of a small program; `go version -m` must name the profile.
fn go_build_with(go: &Path, profile: &Path, dir: &Path) {
    let src = dir.join("prog");
    std::fs::create_dir_all(&src).expect("mkdir");
    std::fs::write(
        src.join("main.go"),
        "package main\n\nfunc main() { println(\"built with a profile\") }\n",
    )
    .expect("write main.go");
    let bin = src.join("prog");
    let go_cmd = |args: &[&str]| {
        let out = Command::new(go)
            .args(args)
            .current_dir(&src)
            .env("GO111MODULE", "off")
            .env("GOPATH", dir.join("gopath"))
            .env("GOFLAGS", "")
            .env("GOTOOLCHAIN", "local")
            .output()
            .expect("run go");
        assert!(
            out.status.success(),
            "go {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let t = Instant::now();
    let pgo = format!("-pgo={}", profile.display());
    go_cmd(&["build", &pgo, "-o", bin.to_str().expect("utf-8"), "main.go"]);
    eprintln!("go build {pgo} in {:?}", t.elapsed());
    let info = go_cmd(&["version", "-m", bin.to_str().expect("utf-8")]);
    assert!(info.contains(&pgo), "{info}");
}
