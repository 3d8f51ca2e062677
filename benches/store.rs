//! pyroscope.store: write throughput and query latency of the engine (`scraper::store::Db`)
//! on realistic profiles. A plain `main` (`harness = false`): `cargo bench --bench store`.
//!
//! The target workload is 100 targets × 5 profile types, one profile per series every 15 s,
//! for 24 h: 2.88 M profiles, ~80 GB at ~30 KiB each, which neither fits the default
//! `max_size` nor a benchmark's disk budget. So the benchmark builds a scaled store and
//! extrapolates linearly (write cost is per profile and per byte; queries read what they
//! select):
//!
//! * "fleet": `FLEET_TARGETS` targets × 5 types for the last hour, written as the component
//!   writes them: one transaction per scrape interval (all profiles of the interval);
//! * "long": 1 target × 5 types for 24 h; its first 23 h are written alone, one small
//!   transaction per interval (the commit-latency case of a lightly loaded store), its last
//!   hour together with the fleet's.
//!
//! Profiles come from a pool of distinct generated CPU profiles of 20-50 KiB gzipped
//! (Go-service-like names, 5-30 frame stacks). Queries run on a warm page cache (the store
//! was just written); each is repeated and the median reported. The store lives in a
//! temporary directory under `$STORE_BENCH_DIR` (default: the system temp dir), ~2.5 GB.

#[path = "../tests/store_support/mod.rs"]
mod support;

use std::time::{Duration, Instant, SystemTime};

use scraper::profiles::Profile;
use scraper::store::{Db, Series};
use support::{Rng, pprof};

const TYPES: [&str; 5] = ["process_cpu", "memory", "goroutine", "mutex", "block"];
const INTERVAL: Duration = Duration::from_secs(15);
const HOUR: Duration = Duration::from_secs(3600);
const FLEET_TARGETS: usize = 50;
const TARGET_TARGETS: usize = 100;
const POOL: usize = 48;
const RUNS: usize = 5;

type Filter<'a> = dyn Fn(&[(String, String)]) -> bool + 'a;
type Window = (SystemTime, SystemTime);
/// A named query returning (profiles, bytes).
type Query<'a> = (&'a str, &'a dyn Fn() -> (usize, u64));

fn labels(target: usize, name: &str) -> Vec<(String, String)> {
    vec![
        ("__name__".into(), name.into()),
        (
            "__address__".into(),
            format!("10.1.{}.{}:6060", target / 250, target % 250),
        ),
        ("__meta_kubernetes_namespace".into(), "shop".into()),
        ("service_name".into(), format!("shop/svc-{}", target % 20)),
        ("namespace".into(), "shop".into()),
        (
            "pod".into(),
            format!("svc-{}-7d9f8c6b5-{target:05}", target % 20),
        ),
        (
            "instance".into(),
            format!("10.1.{}.{}:6060", target / 250, target % 250),
        ),
        ("__delta__".into(), "false".into()),
    ]
}

/// Distinct profiles of 20-50 KiB gzipped, sizes spread evenly over the range.
fn pool() -> Vec<Vec<u8>> {
    let mut rng = Rng::new(42);
    (0..POOL)
        .map(|i| {
            let want = 20 * 1024 + (30 * 1024 * i) / (POOL - 1);
            // About 1 KiB per 10 functions + 8 samples: aim, then correct once.
            let mut functions = want / 130;
            let mut p = pprof(rng.next(), functions, functions * 8 / 10);
            for _ in 0..4 {
                let ratio = want as f64 / p.len() as f64;
                if (0.95..1.05).contains(&ratio) {
                    break;
                }
                functions = ((functions as f64) * ratio) as usize;
                p = pprof(rng.next(), functions, functions * 8 / 10);
            }
            p
        })
        .collect()
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

struct Writes {
    profiles: u64,
    bytes: u64,
    elapsed: Duration,
    commits: Vec<Duration>,
}

fn write(db: &Db, batches: impl Iterator<Item = Vec<Profile>>) -> Writes {
    let mut w = Writes {
        profiles: 0,
        bytes: 0,
        elapsed: Duration::ZERO,
        commits: Vec::new(),
    };
    for batch in batches {
        let started = Instant::now();
        let a = db.append(&batch).expect("append");
        let took = started.elapsed();
        w.elapsed += took;
        w.commits.push(took);
        w.profiles += a.profiles as u64;
        w.bytes += a.bytes;
    }
    w.commits.sort();
    w
}

/// Median of `RUNS` runs of `query`, which returns (profiles, bytes).
fn time_query(mut query: impl FnMut() -> (usize, u64)) -> (Duration, usize, u64) {
    let mut times = Vec::new();
    let mut last = (0, 0);
    for _ in 0..RUNS {
        let started = Instant::now();
        last = query();
        times.push(started.elapsed());
    }
    times.sort();
    (percentile(&times, 0.5), last.0, last.1)
}

fn main() {
    let base = std::env::var_os("STORE_BENCH_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    let dir = tempfile::tempdir_in(base).expect("tempdir");
    let db = Db::open(dir.path()).expect("open");
    let pool = pool();
    let sizes: Vec<usize> = pool.iter().map(Vec::len).collect();
    let avg = sizes.iter().sum::<usize>() as f64 / sizes.len() as f64;
    println!(
        "profile pool: {} distinct gzipped CPU profiles, {:.1}-{:.1} KiB, mean {:.1} KiB",
        pool.len(),
        *sizes.iter().min().unwrap_or(&0) as f64 / 1024.0,
        *sizes.iter().max().unwrap_or(&0) as f64 / 1024.0,
        avg / 1024.0
    );

    let now = SystemTime::now();
    let start = now - 24 * HOUR;
    let intervals_per_hour = (HOUR.as_secs() / INTERVAL.as_secs()) as u32;
    let mut pick = Rng::new(7);
    let mut next_profile = || pool[pick.below(pool.len() as u64) as usize].clone();
    let long = FLEET_TARGETS; // the long-lived target's index, after the fleet's

    // The long target alone for 23 h: 5 profiles per commit.
    let small = write(
        &db,
        (0..23 * intervals_per_hour).map(|k| {
            let at = start + INTERVAL * k;
            TYPES
                .iter()
                .map(|t| Profile {
                    received_at: at,
                    ..Profile::new(labels(long, t), next_profile())
                })
                .collect()
        }),
    );
    // The last hour: the fleet and the long target, one commit per interval.
    let fleet = write(
        &db,
        (23 * intervals_per_hour..24 * intervals_per_hour).map(|k| {
            let at = start + INTERVAL * k;
            (0..=FLEET_TARGETS)
                .flat_map(|target| TYPES.iter().map(move |t| (target, *t)))
                .map(|(target, t)| Profile {
                    received_at: at + Duration::from_millis(target as u64),
                    ..Profile::new(labels(target, t), next_profile())
                })
                .collect()
        }),
    );
    let stats = db.stats().expect("stats");

    println!();
    println!("| write | profiles | MB | s | profiles/s | MB/s | commit p50 | commit p99 |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for (name, w) in [
        ("1 target × 5 types, 23 h, 5 per commit", &small),
        (
            &*format!(
                "{} targets × 5 types, 1 h, {} per commit",
                FLEET_TARGETS + 1,
                (FLEET_TARGETS + 1) * 5
            ),
            &fleet,
        ),
    ] {
        let s = w.elapsed.as_secs_f64();
        println!(
            "| {name} | {} | {:.0} | {:.1} | {:.0} | {:.1} | {} | {} |",
            w.profiles,
            mb(w.bytes),
            s,
            w.profiles as f64 / s,
            mb(w.bytes) / s,
            ms(percentile(&w.commits, 0.5)),
            ms(percentile(&w.commits, 0.99)),
        );
    }
    let rate = fleet.profiles as f64 / fleet.elapsed.as_secs_f64();
    let needed = (TARGET_TARGETS * TYPES.len()) as f64 / INTERVAL.as_secs_f64();
    let per_day = needed * 86_400.0;
    println!();
    println!(
        "extrapolated: {TARGET_TARGETS} targets × 5 types every 15 s = {needed:.1} profiles/s = {:.2} MB/s at the pool's mean size; \
         the writer sustains {rate:.0} profiles/s ({:.1}% busy); 24 h = {:.2} M profiles, {:.0} GB, {:.0} s of writing",
        needed * avg / 1e6,
        100.0 * needed / rate,
        per_day / 1e6,
        per_day * avg / 1e9,
        per_day / rate,
    );
    println!(
        "store: {} series, {} profiles, {:.0} MB stored, {:.0} MB in pages (max_size counts these), {:.0} MB file ({:.1}% over stored)",
        stats.series,
        stats.profiles,
        mb(stats.bytes),
        mb(stats.data_bytes),
        mb(stats.file_bytes),
        100.0 * (stats.file_bytes as f64 / stats.bytes as f64 - 1.0),
    );

    let all = |_: &[(String, String)]| true;
    let one = |l: &[(String, String)]| {
        l.iter()
            .any(|(k, v)| k == "pod" && v.ends_with(&format!("-{long:05}")))
            && l.iter().any(|(k, v)| k == "__name__" && v == "process_cpu")
    };
    let last_hour = (now - HOUR, now + HOUR);
    let day = (start, now + HOUR);
    let select = |filter: &Filter<'_>, (from, to): Window| {
        let mut bytes = 0u64;
        let n = db
            .select(filter, from, to, &mut |_: &Series, _, b| {
                bytes += b.len() as u64;
                Ok(())
            })
            .expect("select");
        (n, bytes)
    };
    let count =
        |filter: &Filter<'_>, (from, to): Window| (db.count(filter, from, to).expect("count"), 0);

    println!();
    println!("| query (warm cache, median of {RUNS}) | profiles | MB | latency | MB/s |");
    println!("|---|---:|---:|---:|---:|");
    let queries: [Query<'_>; 6] = [
        ("count: one series, 1 h", &|| count(&one, last_hour)),
        ("select: one series, 1 h", &|| select(&one, last_hour)),
        ("count: all series, 1 h", &|| count(&all, last_hour)),
        ("select: all series, 1 h", &|| select(&all, last_hour)),
        ("count: one series, 24 h", &|| count(&one, day)),
        ("select: one series, 24 h", &|| select(&one, day)),
    ];
    for (name, q) in queries {
        let (t, n, bytes) = time_query(q);
        let rate = if bytes > 0 {
            format!("{:.0}", mb(bytes) / t.as_secs_f64())
        } else {
            "-".to_string()
        };
        println!("| {name} | {n} | {:.1} | {} | {rate} |", mb(bytes), ms(t));
    }
    println!(
        "all series over 1 h for {TARGET_TARGETS} targets: ~{:.1}× the bytes above (latency scales with bytes read)",
        (TARGET_TARGETS + 1) as f64 / (FLEET_TARGETS + 1) as f64
    );

    println!();
    println!("| maintenance | result | time |");
    println!("|---|---|---:|");
    let started = Instant::now();
    let integrity = db.check_integrity().expect("check");
    println!(
        "| check_integrity (redb + decode every profile) | {} profiles, {} problems | {} |",
        integrity.profiles,
        integrity.problem_count,
        ms(started.elapsed())
    );
    let started = Instant::now();
    let removed = db
        .enforce_retention(now, 24 * HOUR, 1 << 30)
        .expect("retention");
    println!(
        "| retention to max_size 1 GiB | {} profiles, {:.0} MB deleted | {} |",
        removed.profiles(),
        mb(removed.bytes),
        ms(started.elapsed())
    );
    let file_mb = mb(db.stats().map(|s| s.file_bytes).unwrap_or(0));
    let db = std::sync::Arc::new(db);
    let serving = std::thread::spawn({
        let db = db.clone();
        move || {
            for _ in 0..200 {
                if db.serve_snapshot_requests().expect("serve") > 0 {
                    return;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    });
    let started = Instant::now();
    let snapshot = Db::open_read_only(dir.path()).expect("snapshot");
    let took = started.elapsed();
    serving.join().expect("serving thread");
    println!(
        "| open_read_only while the writer runs (copies the {file_mb:.0} MB file) | {:?} | {} |",
        snapshot.mode(),
        ms(took)
    );
    drop(snapshot);
    drop(db);
    let started = Instant::now();
    let reopened = Db::open(dir.path()).expect("reopen");
    println!(
        "| reopen (clean) | {} series | {} |",
        reopened.series().map(|s| s.len()).unwrap_or(0),
        ms(started.elapsed())
    );
}
