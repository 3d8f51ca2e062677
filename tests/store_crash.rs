//! Crash safety of the store: a child process appends batches as fast as it can and prints a
//! line after each committed one; we `kill -9` it at a random moment, reopen the store, and
//! check that it is intact and holds every batch the child reported, with at most the batch
//! in flight lost (and that one entirely or not at all). Several rounds on one store.
//!
//! The child is this test binary run again with `STORE_CRASH_DIR` set, executing only
//! `child_writer`, ignored in a normal test run.

mod store_support;

use std::collections::HashSet;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use scraper::profiles::Profile;
use scraper::store::{Db, RedbCheck};
use store_support::{Rng, labels, pprof, profile};

const DIR_ENV: &str = "STORE_CRASH_DIR";
const ROUND_ENV: &str = "STORE_CRASH_ROUND";
const ROUNDS: u64 = 6;
const PER_BATCH: u64 = 16;
const SERIES: u64 = 4;
/// Distinct profile bodies, generated once per process (pprof generation is slow in debug
/// builds and would otherwise dominate the child's loop).
const TEMPLATES: usize = 6;

fn templates() -> Vec<Vec<u8>> {
    (0..TEMPLATES)
        .map(|i| pprof(i as u64, 60 + i * 100, 120))
        .collect()
}

/// When profile `i` of batch `batch` of round `round` was taken: unique per profile, so the
/// parent can tell exactly which are stored.
fn at(round: u64, batch: u64, i: u64) -> SystemTime {
    UNIX_EPOCH
        + Duration::from_secs(1_750_000_000 + round * 1_000_000 + batch)
        + Duration::from_millis(i)
}

fn series_name(i: u64) -> String {
    format!("svc{}", i % SERIES)
}

fn batch(templates: &[Vec<u8>], round: u64, batch: u64) -> Vec<Profile> {
    (0..PER_BATCH)
        .map(|i| {
            let body = &templates[((batch + i) as usize) % templates.len()];
            profile(
                labels(&series_name(i), "10.0.0.1:6060", "process_cpu"),
                body.clone(),
                at(round, batch, i),
            )
        })
        .collect()
}

#[test]
#[ignore = "the child process of killed_writer_loses_at_most_the_batch_in_flight, which runs it"]
fn child_writer() {
    let Ok(dir) = std::env::var(DIR_ENV) else {
        return;
    };
    let round: u64 = std::env::var(ROUND_ENV)
        .ok()
        .and_then(|r| r.parse().ok())
        .expect("round");
    let templates = templates();
    let db = Db::open(Path::new(&dir)).expect("child opens the store");
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").expect("stdout");
    out.flush().expect("flush");
    for n in 0.. {
        db.append(&batch(&templates, round, n)).expect("append");
        writeln!(out, "committed {n}").expect("stdout");
        out.flush().expect("flush");
    }
}

/// Which profiles of `round` batch `n` are in the store.
fn present(stored: &HashSet<(String, u128)>, round: u64, n: u64) -> usize {
    (0..PER_BATCH)
        .filter(|&i| {
            let t = at(round, n, i)
                .duration_since(UNIX_EPOCH)
                .expect("after epoch")
                .as_nanos();
            stored.contains(&(series_name(i), t))
        })
        .count()
}

#[test]
fn killed_writer_loses_at_most_the_batch_in_flight() {
    let dir = tempfile::tempdir().expect("tempdir");
    let templates = templates();
    // A new seed each run explores new kill points; printed (and settable) so a failure can be
    // replayed: `SCRAPER_CRASH_SEED=<seed> cargo test --test store_crash`.
    let seed = std::env::var("SCRAPER_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
    eprintln!("store_crash seed {seed} (replay with SCRAPER_CRASH_SEED={seed})");
    let mut rng = Rng::new(seed);
    let mut reported: Vec<u64> = Vec::new();
    let mut in_flight_lost = 0;
    for round in 0..ROUNDS {
        let mut child = Command::new(std::env::current_exe().expect("test binary"))
            .args([
                "child_writer",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIR_ENV, dir.path())
            .env(ROUND_ENV, round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn child");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = mpsc::channel();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if line == "ready" || line.starts_with("committed ") {
                    let _ = tx.send(line);
                }
            }
        });
        // Let it commit a random number of batches, then kill it at a random instant.
        let wait_for = 2 + rng.below(12);
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut seen = 0;
        while seen < wait_for {
            let line = rx
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("child makes progress");
            if line.starts_with("committed ") {
                seen += 1;
            }
        }
        std::thread::sleep(Duration::from_micros(rng.below(30_000)));
        // SAFETY: kill(2) on our own child's pid, which has not been reaped yet.
        let rc = unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGKILL) };
        assert_eq!(rc, 0, "kill failed");
        let status = child.wait().expect("wait");
        assert!(!status.success(), "the child was killed, not finished");
        reader.join().expect("reader");
        let committed: Vec<u64> = rx
            .try_iter()
            .filter_map(|l| l.strip_prefix("committed ").and_then(|n| n.parse().ok()))
            .collect();
        let last = committed.last().copied().unwrap_or(seen - 1).max(seen - 1);
        reported.push(last);

        let opened = Instant::now();
        let db = Db::open(dir.path()).expect("reopens after kill -9");
        let reopen_ms = opened.elapsed().as_millis();
        let integrity = db.check_integrity().expect("integrity check runs");
        assert!(integrity.is_ok(), "round {round}: {integrity:?}");
        assert_eq!(integrity.redb, RedbCheck::Clean, "round {round}");

        let mut stored = HashSet::new();
        db.select(
            &|_| true,
            UNIX_EPOCH,
            UNIX_EPOCH + Duration::from_secs(1 << 40),
            &mut |s, at, bytes| {
                assert!(
                    templates.iter().any(|t| t.as_slice() == bytes),
                    "stored bytes differ from what was appended"
                );
                let t = at
                    .duration_since(UNIX_EPOCH)
                    .expect("after epoch")
                    .as_nanos();
                stored.insert((s.label("service_name").unwrap_or("").to_string(), t));
                Ok(())
            },
        )
        .expect("select");
        // Every round so far: all reported batches complete; the next one all or nothing;
        // nothing beyond it.
        let mut expected = 0;
        for (r, &last) in reported.iter().enumerate() {
            let r = r as u64;
            for n in 0..=last {
                assert_eq!(
                    present(&stored, r, n),
                    PER_BATCH as usize,
                    "round {r} batch {n} was reported committed"
                );
            }
            expected += (last + 1) * PER_BATCH;
            let next = present(&stored, r, last + 1);
            assert!(
                next == 0 || next == PER_BATCH as usize,
                "round {r}: the batch in flight is partly stored ({next} of {PER_BATCH})"
            );
            if next > 0 {
                expected += PER_BATCH;
            } else if r == round {
                in_flight_lost += 1;
            }
            assert_eq!(
                present(&stored, r, last + 2),
                0,
                "round {r}: batches never appended"
            );
        }
        assert_eq!(
            stored.len() as u64,
            expected,
            "round {round}: nothing else stored"
        );
        assert_eq!(integrity.profiles, expected);
        eprintln!(
            "round {round}: killed after batch {last} was reported; reopened in {reopen_ms} ms; {} profiles stored",
            stored.len()
        );
        drop(db);
    }
    eprintln!(
        "{in_flight_lost} of {ROUNDS} kills lost the batch in flight (the rest had committed it unreported)"
    );
}
