//! Trimming benchmark (issue 21): a 50,000-sample heap profile (tests/support/heap_profile.rs:
//! skewed, weight of each type in different samples) fitted to Pyroscope's default limits
//! (16,000 samples), as `pyroscope.write` does before a push. Prints the median wall time of
//! each step and of the whole `Limits::fit`, and beside them ranking by one type alone (the
//! behaviour before), over `TRIM_BENCH_ROUNDS` rounds (default 15).
//!
//! Run: `cargo bench --bench trim`. Timings are for docs/PERFORMANCE.md; nothing checks them.

#[path = "../tests/support/heap_profile.rs"]
mod heap_profile;

use std::hint::black_box;
use std::time::Instant;

use prost::Message as _;
use scraper::pprof::trim::{
    COVERAGE_PERCENT, choose_samples, drop_zero_samples, keep_heaviest, keep_selected,
};
use scraper::pprof::{DEFAULT_LEVEL, Limits as DecodeLimits, decode, gzip};
use scraper::push::limits::{Fit, Limits};

const SAMPLES: usize = 50_000;
const LIMIT: usize = 16_000;

/// Median milliseconds of `rounds` runs of `f`.
fn time<T>(rounds: usize, mut f: impl FnMut() -> T) -> f64 {
    let mut ms: Vec<f64> = (0..rounds)
        .map(|_| {
            let started = Instant::now();
            black_box(f());
            started.elapsed().as_secs_f64() * 1000.0
        })
        .collect();
    ms.sort_by(f64::total_cmp);
    ms[ms.len() / 2]
}

fn main() {
    let rounds: usize = std::env::var("TRIM_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(15)
        .max(1);
    let heap = heap_profile::skewed_heap(SAMPLES, 21);
    let plain = heap.encode_to_vec();
    let raw = gzip(&plain, 1);
    println!(
        "trim: {SAMPLES} samples, {} bytes ({} gzipped) -> {LIMIT} samples, median of {rounds}",
        plain.len(),
        raw.len()
    );
    let decoded = decode(&raw, &DecodeLimits::default()).expect("decode");
    let merged = drop_zero_samples(&decoded).expect("drop zero");
    let selection = choose_samples(&merged, LIMIT, COVERAGE_PERCENT);
    let kept = keep_selected(&merged, &selection).expect("keep");
    let kept_plain = kept.encode_to_vec();
    let steps = [
        (
            "gunzip + decode",
            time(rounds, || decode(&raw, &DecodeLimits::default())),
        ),
        (
            "drop_zero_samples (merge)",
            time(rounds, || drop_zero_samples(&decoded)),
        ),
        (
            "choose_samples (every type)",
            time(rounds, || choose_samples(&merged, LIMIT, COVERAGE_PERCENT)),
        ),
        (
            "keep_selected (retain + compact)",
            time(rounds, || keep_selected(&merged, &selection)),
        ),
        (
            "encode + gzip",
            time(rounds, || gzip(&kept.encode_to_vec(), DEFAULT_LEVEL)),
        ),
        (
            "Limits::fit, whole",
            time(rounds, || match Limits::default().fit(&raw, 100) {
                Fit::Trimmed { raw, .. } => raw.len(),
                other => panic!("not trimmed: {other:?}"),
            }),
        ),
        (
            "before: keep_heaviest by one type (merge + sort + compact)",
            time(rounds, || keep_heaviest(&merged, LIMIT, 3)),
        ),
        (
            "before: the same fit ranking by one type, whole",
            time(rounds, || {
                let p = decode(&raw, &DecodeLimits::default()).expect("decode");
                let p = drop_zero_samples(&p).expect("drop zero");
                let p = keep_heaviest(&p, LIMIT, 3).expect("heaviest");
                gzip(&p.encode_to_vec(), DEFAULT_LEVEL).len()
            }),
        ),
    ];
    for (step, ms) in steps {
        println!("  {step:<60} {ms:8.2} ms");
    }
    let kept_text: Vec<String> = (0..selection.kept.len())
        .map(|t| format!("{:.1}%", selection.share(t) * 100.0))
        .collect();
    println!(
        "  kept {} samples, {} bytes; per type {}",
        kept.sample.len(),
        kept_plain.len(),
        kept_text.join(" ")
    );
}
