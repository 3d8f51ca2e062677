//! `scraper::pprof::pgo::to_pgo` on a real Go CPU profile, checked with Go's own pprof: a tiny
//! program spins in two functions for about a second under `runtime/pprof`, its profile is
//! converted, and `go tool pprof` must read the result and attribute the same flat CPU time to
//! every function as in the input.
//!
//! Skipped (with the reason printed) when `go` is missing, unless `SCRAPER_REQUIRE_GO` is set
//! to something other than empty or `0`.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use scraper::pprof::pgo::{PgoOptions, to_pgo};
use support::go::Require;

const PROGRAM: &str = r#"package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"time"
)

var sink uint64

//go:noinline
func spinA(n int) uint64 {
	x := uint64(1)
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func spinB(n int) uint64 {
	x := uint64(7)
	for i := 0; i < n; i++ {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
	}
	return x
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	deadline := time.Now().Add(1200 * time.Millisecond)
	for time.Now().Before(deadline) {
		sink += spinA(200000)
		sink += spinB(100000)
	}
	pprof.StopCPUProfile()
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
"#;

fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn go(dir: &Path) -> Command {
    let mut cmd = Command::new("go");
    cmd.current_dir(dir)
        .env("GO111MODULE", "off")
        .env("GOPATH", dir.join("gopath"))
        .env("GOFLAGS", "")
        .env("PPROF_TMPDIR", dir);
    cmd
}

/// Flat CPU nanoseconds per function, from `go tool pprof -top` (rows with flat 0 left out:
/// they only carry cumulative time, which truncating stacks changes on purpose).
fn flat_by_function(dir: &Path, profile: &Path) -> BTreeMap<String, i64> {
    let text = run(
        go(dir)
            .args([
                "tool",
                "pprof",
                "-top",
                "-nodecount=100000",
                "-nodefraction=0",
            ])
            .args([
                "-edgefraction=0",
                "-unit=ns",
                "-sample_index=cpu",
                "-symbolize=none",
            ])
            .arg(profile),
        "go tool pprof -top",
    );
    let mut rows = BTreeMap::new();
    let mut in_table = false;
    for line in text.lines() {
        if line.trim_start().starts_with("flat") {
            in_table = true;
            continue;
        }
        if !in_table {
            continue;
        }
        // flat flat% sum% cum cum% name...
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 {
            continue;
        }
        let flat: i64 = fields[0]
            .trim_end_matches("ns")
            .parse()
            .unwrap_or_else(|e| panic!("flat in {line:?}: {e}"));
        if flat != 0 {
            rows.insert(fields[5..].join(" "), flat);
        }
    }
    assert!(!rows.is_empty(), "no rows in:\n{text}");
    rows
}

#[test]
fn go_reads_the_pgo_profile_with_the_same_flat_times() {
    if !Require::Go.have_go() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let dir = dir.path();
    std::fs::write(dir.join("main.go"), PROGRAM).expect("write main.go");
    run(go(dir).args(["build", "-o", "spin", "main.go"]), "go build");
    let input_path = dir.join("cpu.pprof");
    run(
        Command::new(dir.join("spin")).arg(&input_path),
        "the spinning program",
    );

    let bytes = std::fs::read(&input_path).expect("read profile");
    let input =
        scraper::pprof::decode(&bytes, &scraper::pprof::Limits::default()).expect("Go's profile");
    let (pgo, summary) = to_pgo(&input, &PgoOptions::default()).expect("to_pgo");
    assert_eq!(summary.sample_type, ("cpu".into(), "nanoseconds".into()));
    assert_eq!(summary.total, summary.input_total);
    assert!(summary.total > 0);
    let output_path = dir.join("default.pgo");
    std::fs::write(
        &output_path,
        scraper::pprof::encode(&pgo, scraper::pprof::DEFAULT_LEVEL),
    )
    .expect("write pgo");

    // Go parses it, and sees the header we set.
    let raw = run(
        go(dir)
            .args(["tool", "pprof", "-raw", "-symbolize=none"])
            .arg(&output_path),
        "go tool pprof -raw",
    );
    assert!(raw.contains("PeriodType: cpu nanoseconds"), "{raw}");
    assert!(raw.contains("Period: 1000000000"), "{raw}");

    let want = flat_by_function(dir, &input_path);
    let got = flat_by_function(dir, &output_path);
    assert_eq!(got, want);
    for f in ["main.spinA", "main.spinB"] {
        assert!(want.contains_key(f), "{f} not sampled: {want:?}");
    }

    // Whatever start lines Go wrote survive.
    let start_lines = |p: &scraper::pprof::proto::Profile| -> BTreeMap<String, i64> {
        p.function
            .iter()
            .map(|f| (p.string_table[f.name as usize].clone(), f.start_line))
            .collect()
    };
    let before = start_lines(&input);
    for (name, line) in start_lines(&pgo) {
        assert_eq!(before.get(&name), Some(&line), "{name}");
    }
    // Stacks are at most 5 frames deep.
    assert!(pgo.sample.iter().all(|s| s.location_id.len() <= 5));
}
