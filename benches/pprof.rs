//! pprof delta benchmark (issue 4): one scrape round = gunzip + decode NEW + delta against the
//! state kept from OLD + write + gzip, the steady state of a scraper. Reports per round the
//! median wall and CPU time, heap bytes allocated, the peak heap in use during the round, plus
//! the series state size against the raw profile size.
//!
//! Inputs: every `<name>-1.pb.gz` / `<name>-2.pb.gz` pair in `$PPROF_BENCH_DATA` (bench/pprof.sh
//! puts the large generated ones there, from bench/pprofgen, and runs the Go baselines beside
//! this), else the real goapp and Prometheus heap pairs in bench/pprof-data.
//!
//! Run: `cargo bench --bench pprof` (or bench/pprof.sh for the side-by-side comparison).
//! Output lines match bench/pprofgo's, one per pair and gzip level. Environment:
//! `PPROF_BENCH_ONLY=a,b` (pairs), `PPROF_BENCH_LEVELS=1,6` (gzip levels),
//! `PPROF_BENCH_CODEC=1` (also time gunzip and gzip of the whole profile).

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

use scraper::pprof::{DeltaEngine, DeltaOptions, DeltaOutcome, Limits, gunzip, gzip};

/// Counts heap use so a round's allocations and peak can be reported (single-threaded bench).
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static TOTAL: AtomicUsize = AtomicUsize::new(0);
static COUNT: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = CURRENT.fetch_add(n, Relaxed) + n;
    PEAK.fetch_max(now, Relaxed);
    TOTAL.fetch_add(n, Relaxed);
    COUNT.fetch_add(1, Relaxed);
}

// SAFETY: forwards every call to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        CURRENT.fetch_sub(layout.size(), Relaxed);
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        CURRENT.fetch_sub(layout.size(), Relaxed);
        grew(new_size);
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

fn rusage() -> libc::rusage {
    // SAFETY: getrusage fills the struct we pass; a zeroed rusage is a valid initial value.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut ru);
        ru
    }
}

/// Peak resident set of this process image, from /proc (getrusage's ru_maxrss would include
/// the parent's peak: Linux carries it across exec, and cargo is the parent here).
fn peak_rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn cpu_ns() -> u64 {
    let ru = rusage();
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn median(v: &mut [u64]) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn pairs() -> Vec<(String, PathBuf, PathBuf)> {
    let dir = std::env::var_os("PPROF_BENCH_DATA").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("bench/pprof-data"),
        PathBuf::from,
    );
    // One process per pair gives each its own peak RSS (bench/pprof.sh does that).
    let only = std::env::var("PPROF_BENCH_ONLY").ok();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.strip_suffix("-1.pb.gz").map(str::to_owned)
        })
        .filter(|n| dir.join(format!("{n}-2.pb.gz")).is_file())
        .filter(|n| only.as_ref().is_none_or(|o| o.split(',').any(|x| x == n)))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let (a, b) = (
                dir.join(format!("{n}-1.pb.gz")),
                dir.join(format!("{n}-2.pb.gz")),
            );
            (n, a, b)
        })
        .collect()
}

fn bench(name: &str, old: &[u8], new: &[u8], level: u32) {
    let mut engine = DeltaEngine::new(DeltaOptions {
        level,
        ..DeltaOptions::default()
    });
    let state = engine
        .apply(None, old)
        .expect("baseline")
        .state
        .expect("cumulative profile");
    let raw_len = gunzip(new, &Limits::default()).expect("gunzip").len();
    let round = |engine: &mut DeltaEngine| -> (usize, usize, usize) {
        match engine.apply(Some(&state), new).expect("delta").outcome {
            DeltaOutcome::Delta { profile, stats } => {
                (stats.samples_out, profile.len(), stats.state_bytes)
            }
            other => panic!("{name}: expected a delta, got {other:?}"),
        }
    };
    // Warm-up: the engine's buffers reach their steady-state capacity.
    round(&mut engine);
    let (mut walls, mut cpus, mut totals, mut counts, mut peaks) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut result = (0, 0, 0);
    let started = Instant::now();
    while walls.len() < 5 || (started.elapsed() < Duration::from_secs(3) && walls.len() < 1000) {
        let (t0, c0) = (TOTAL.load(Relaxed), COUNT.load(Relaxed));
        let base = CURRENT.load(Relaxed);
        PEAK.store(base, Relaxed);
        let (w0, cpu0) = (Instant::now(), cpu_ns());
        result = round(&mut engine);
        walls.push(w0.elapsed().as_nanos() as u64);
        cpus.push(cpu_ns() - cpu0);
        totals.push((TOTAL.load(Relaxed) - t0) as u64);
        counts.push((COUNT.load(Relaxed) - c0) as u64);
        peaks.push((PEAK.load(Relaxed) - base) as u64);
    }
    let n = walls.len();
    let (samples, gz, state_bytes) = result;
    let ms = |ns: u64| ns as f64 / 1e6;
    let mb = |b: u64| b as f64 / 1e6;
    println!(
        "{name} rust-l{level} n={n} wall_ms={:.2} cpu_ms={:.2} alloc_mb={:.1} allocs={} peak_heap_mb={:.1} peak_rss_mb={:.1} out_samples={samples} out_gz={gz} state_kb={:.1} raw_kb={:.1} state_pct={:.1}",
        ms(median(&mut walls)),
        ms(median(&mut cpus)),
        mb(median(&mut totals)),
        median(&mut counts),
        mb(median(&mut peaks)),
        peak_rss_mb(),
        state_bytes as f64 / 1e3,
        raw_len as f64 / 1e3,
        state_bytes as f64 * 100.0 / raw_len as f64,
    );
}

/// For context: the cost of gunzip (NEW) and of gzip at `level` (of NEW's raw bytes).
fn codec_costs(name: &str, new: &[u8]) {
    let raw = gunzip(new, &Limits::default()).expect("gunzip");
    let time = |f: &dyn Fn()| {
        let mut v: Vec<u64> = (0..5)
            .map(|_| {
                let c = cpu_ns();
                f();
                cpu_ns() - c
            })
            .collect();
        median(&mut v) as f64 / 1e6
    };
    let gunzip_ms = time(&|| {
        gunzip(new, &Limits::default()).expect("gunzip");
    });
    let gzip1 = time(&|| {
        gzip(&raw, 1);
    });
    let gzip6 = time(&|| {
        gzip(&raw, 6);
    });
    println!(
        "{name} codec gunzip_cpu_ms={gunzip_ms:.2} gzip1_cpu_ms={gzip1:.2} gzip6_cpu_ms={gzip6:.2} (whole raw profile)"
    );
}

fn main() {
    let levels: Vec<u32> = std::env::var("PPROF_BENCH_LEVELS")
        .ok()
        .map(|s| s.split(',').filter_map(|l| l.trim().parse().ok()).collect())
        // 1: the scrape path's default (DELTA_LEVEL); 6: gzip's default, what Go writes.
        .unwrap_or_else(|| vec![1, 6]);
    let codec = std::env::var("PPROF_BENCH_CODEC").is_ok_and(|v| v == "1");
    for (name, old, new) in pairs() {
        let (old, new) = (
            std::fs::read(&old).expect("read OLD"),
            std::fs::read(&new).expect("read NEW"),
        );
        for &level in &levels {
            bench(&name, &old, &new, level);
        }
        if codec {
            codec_costs(&name, &new);
        }
    }
}
