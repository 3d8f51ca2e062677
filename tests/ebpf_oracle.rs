//! `pyroscope.ebpf` against independent oracles: over the same window, each hot function's
//! inclusive share in our profiles must be within 3 percentage points of what a profiler that
//! shares none of our code measured.
//!
//! * Go: a Go service serving net/http/pprof (the source is [`GO_SOURCE`]) against Go's own
//!   `/debug/pprof/profile?seconds=N`: the runtime's SIGPROF sampler, which walks goroutine
//!   stacks with the runtime's own unwinder.
//! * Native: a C program built `gcc -O2 -fomit-frame-pointer` ([`C_SOURCE`]) against
//!   `perf record --call-graph dwarf` (Debian's linux-perf), which copies 8 KiB of stack per
//!   sample in the kernel and unwinds it afterwards with elfutils' libdw: a different copier
//!   and a different DWARF unwinder. The fixture's libc frames are unwound too (Debian's libc
//!   has no frame pointers either): its memset must be at >= 5 % of perf's samples.
//!
//! Both fixtures are written into a temp dir from the sources below and built there. Their
//! work is a fixed number of loop iterations per function, so the shares are properties of the
//! code, not of timing: how busy the machine is changes how many samples arrive, not where they
//! land. Each function's contiguous run is tens of milliseconds, several sampling periods, so
//! both samplers see it (close to) systematically rather than by independent draws, which
//! keeps the statistical noise of a 15 s window well under the 3 point tolerance.
//!
//! **The window.** The scraper starts first; when its first profile of the fixture arrives (an
//! interval boundary has just passed) the oracle starts for `WINDOW` seconds, three collect
//! intervals. Each pushed profile carries its interval (`time_nanos`, `duration_nanos`); the
//! oracle's interval is its own profile's (Go) or the time around the `perf record` run
//! (native). Our profiles count when at least half of their interval lies in the oracle's: the
//! ends differ by the push latency (well under a second of 15). Both are printed.
//!
//! **What the shares are relative to.** Each share is the function's inclusive value (the value
//! of every sample whose stack holds the function at least once) divided by the total value of
//! the same profiler's samples of the fixture process in the window: all the CPU time the
//! process used, user and system, as each profiler saw it. Neither total drops anything, so a
//! sample one profiler could not unwind counts against its shares, which is what the comparison
//! is for. A function at >= 5 % in either profile is compared; the table of all of them is
//! printed before anything is asserted. Listed but not compared, because only one side can
//! have them by construction:
//!
//! * kernel frames: Go's profile holds goroutine stacks only, and between perf and ours the
//!   kernel part of a stack shows where each one's own sampling interrupt landed, not how well
//!   it unwinds (no kernel function is hot in these fixtures anyway); our `[truncated]` marker;
//! * Go's pseudo-frames for samples it could not attribute to a goroutine
//!   (`runtime._ExternalCode`, `runtime._GC`, `runtime._System`, `runtime._VDSO`);
//! * `runtime.goexit`, the return address the runtime plants at the root of every goroutine:
//!   our walk reaches it (it is how a Go stack is known to be complete), Go's CPU profiles stop
//!   below it;
//! * `runtime.asyncPreempt`: Go's profile has put up to ~10 % of this fixture's samples there,
//!   each as a leaf right on top of the function that was interrupted, while next to no CPU
//!   time is spent there: ours finds <= 0.1 %, and `perf record -F 997` on the same process
//!   during Go's profile found < 0.1 %. These are samples Go's profiler charges to a preemption in
//!   progress (the runtime preempts a goroutine that ran 10 ms with a signal); the interrupted
//!   function is still on those stacks, so the inclusive shares of the real functions agree.
//!
//! Symbol versions (`__libc_start_main@@GLIBC_2.34` in perf's output) are stripped: ours names
//! the function without them.
//!
//! Skips (printing why) without root unless `SCRAPER_REQUIRE_BPF=1`; without `go` unless
//! `SCRAPER_REQUIRE_GO` is set; without `perf` unless `SCRAPER_REQUIRE_ORACLE=1`; without gcc
//! unless `SCRAPER_REQUIRE_BPF=1`. CI sets all of them. Nothing is installed from here.

mod scrape_support;
mod support;

use std::collections::{BTreeMap, HashSet};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scrape_support::{Scraper, decode, have_go};
use scraper::pprof::proto::Profile;
use support::ebpf::{build_go, compile, need_compiler, need_root, open_dir, spawn};
use support::go::{Require, start_go};
use support::pyroscope_receiver::PyroscopeReceiver;

/// The scraper's collection interval, seconds.
const COLLECT: u64 = 5;
/// The oracle's window: three collection intervals.
const WINDOW: u64 = 3 * COLLECT;
/// Functions at or above this share in either profile are compared.
const MIN_SHARE: f64 = 0.05;
/// The acceptance bar: |ours - oracle| in percentage points (as a fraction).
const TOLERANCE: f64 = 0.03;
/// A sanity floor, not a timing assertion: at ~97-100 Hz a fixture using at least one core
/// yields ~1500 samples in 15 s; 150 (a tenth) still gives shares to within a few points on a
/// badly loaded machine, and fewer means the window or the sampler went wrong.
const MIN_SAMPLES: f64 = 150.0;

const KERNEL_MODULE: &str = "[kernel.kallsyms]";
/// Functions only one side can have (see the module comment), and why, as the table says it.
const ONE_SIDED: &[(&str, &str)] = &[
    ("[truncated]", "ours only: the stack did not reach its root"),
    ("runtime._ExternalCode", "Go only: no goroutine to walk"),
    ("runtime._GC", "Go only: no goroutine to walk"),
    ("runtime._System", "Go only: no goroutine to walk"),
    ("runtime._VDSO", "Go only: no goroutine to walk"),
    (
        "runtime.goexit",
        "goroutine root sentinel: Go's profiles stop below it",
    ),
    (
        "runtime.asyncPreempt",
        "Go's attribution of samples at a preemption",
    ),
];
/// The prefix of kernel frames' keys.
const KERNEL_KEY: &str = "[k] ";

/// The Go oracle's fixture. The main goroutine runs main.main -> main.cpuAlpha (30 ms of its
/// own, then main.cpuBeta for 30 ms) and main.cpuGamma (40 ms): on its own, inclusive shares
/// of 60, 30 and 40 %. A second goroutine runs main.cpuDelta for 20 ms, then sleeps 20 ms, so
/// the split between the two roots (runtime.main, and the goroutine's own) moves with how the
/// machine schedules them: both profilers see the same split in the same window.
///
/// The iteration counts are calibrated once at start, before any window: from then on the
/// work per function is fixed. Every function is `noinline`: our frames come from .gopclntab
/// one function per location, while Go's profile would expand inlined calls. `go background()`
/// takes no argument: for `go f(x)` the compiler makes a closure (`main.main.func2`) that
/// Go's tracebacks hide as a wrapper and ours show.
const GO_SOURCE: &str = r#"package main

import (
	"fmt"
	"net"
	"net/http"
	_ "net/http/pprof"
	"os"
	"time"
)

var (
	sinkMain, sinkDelta uint64
	// Iterations per 10 ms, set once before background starts.
	unit int
)

//go:noinline
func cpuBeta(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}

//go:noinline
func cpuAlpha(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = x*2862933555777941757 + 3037000493
	}
	x = cpuBeta(x, n)
	return x ^ x>>29
}

//go:noinline
func cpuGamma(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = x*3935559000370003845 + 2691343689449507681
	}
	return x ^ x>>31
}

//go:noinline
func cpuDelta(x uint64, n int) uint64 {
	for i := 0; i < n; i++ {
		x = x*3202034522624059733 + 4354685564936845319
	}
	return x ^ x>>27
}

//go:noinline
func background() {
	x := uint64(7)
	for {
		x = cpuDelta(x, 2*unit)
		sinkDelta = x
		time.Sleep(20 * time.Millisecond)
	}
}

func main() {
	// Iterations per 10 ms on this machine (the loops all cost about the same per iteration).
	const probe = 1 << 22
	start := time.Now()
	sinkMain = cpuBeta(1, probe)
	unit = int(float64(probe) * float64(10*time.Millisecond) / float64(time.Since(start)))
	if unit < 1000 {
		unit = 1000
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() {
		if err := http.Serve(ln, nil); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}()
	go background()
	fmt.Printf("listening on %s\n", ln.Addr())
	x := uint64(1)
	for {
		x = cpuAlpha(x, 3*unit)
		x = cpuGamma(x, 4*unit)
		sinkMain = x
	}
}
"#;

/// The native oracle's fixture, `gcc -O2 -fomit-frame-pointer`: main -> oracle_a (its own loop,
/// then oracle_b) and main -> oracle_c (its own loop, then memset of a 4 MiB buffer in libc,
/// which Debian builds without frame pointers too). memset rather than memcpy: glibc's memcpy
/// is the same code as memmove under two symbols, and which one a symbolizer reports is
/// arbitrary. Only the program's own loop counts are fixed here; what they cost relative to
/// libc's memset is the machine's, which is fine: the test compares two profilers, not a
/// profiler with a plan (it only checks that libc's share stays large enough to count).
///
/// `noipa` keeps gcc from inlining, cloning or folding the functions; each caller uses its
/// callee's result after the call, so no call is a tail call. The stack stays a few hundred
/// bytes deep: perf copies 8 KiB per sample and cannot unwind what lies beyond.
const C_SOURCE: &str = r#"#include <string.h>

#define UNIT 10000000UL
#define BUF (4 << 20)

static unsigned char buf[BUF];
static volatile unsigned long sink;

__attribute__((noipa)) unsigned long oracle_b(unsigned long x)
{
	for (unsigned long i = 0; i < 3 * UNIT; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

__attribute__((noipa)) unsigned long oracle_a(unsigned long x)
{
	for (unsigned long i = 0; i < 3 * UNIT; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	x = oracle_b(x);
	return x ^ (x >> 29);
}

__attribute__((noipa)) unsigned long oracle_c(unsigned long x)
{
	for (unsigned long i = 0; i < 2 * UNIT; i++)
		x = x * 3935559000370003845UL + 2691343689449507681UL;
	for (int k = 0; k < 256; k++)
		memset(buf, (int)(x + k), BUF);
	return x + buf[x % BUF];
}

int main(void)
{
	for (;;) {
		sink = oracle_a(sink + 1);
		sink = oracle_c(sink);
	}
}
"#;

/// Nanoseconds since the Unix epoch.
fn unix_nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as i64)
        .unwrap_or(0)
}

/// A time range, Unix nanoseconds.
#[derive(Clone, Copy, Debug)]
struct Window {
    start: i64,
    end: i64,
}

impl Window {
    fn of(p: &Profile) -> Window {
        Window {
            start: p.time_nanos,
            end: p.time_nanos + p.duration_nanos,
        }
    }

    fn overlap(self, other: Window) -> i64 {
        (self.end.min(other.end) - self.start.max(other.start)).max(0)
    }

    fn secs(self, origin: i64) -> String {
        format!(
            "{:.2}..{:.2} s",
            (self.start - origin) as f64 / 1e9,
            (self.end - origin) as f64 / 1e9
        )
    }
}

/// One sampled stack: the comparison keys of its frames (leaf first) and its value.
struct Stack {
    keys: Vec<String>,
    value: f64,
    /// Whether the first user-space frame is in libc (perf's stacks only: the native fixture
    /// check).
    leaf_in_libc: bool,
}

/// Inclusive values per key over some stacks, and their total.
#[derive(Default)]
struct Shares {
    inclusive: BTreeMap<String, f64>,
    total: f64,
    /// Samples, as a count (value / period).
    samples: f64,
    /// Value of the stacks whose first user frame is in libc.
    leaf_in_libc: f64,
}

impl Shares {
    fn add(&mut self, stacks: &[Stack], period: f64) {
        for s in stacks {
            self.total += s.value;
            self.samples += s.value / period.max(1.0);
            if s.leaf_in_libc {
                self.leaf_in_libc += s.value;
            }
            // Recursion (or a function on the stack twice) counts once per sample.
            let unique: HashSet<&String> = s.keys.iter().collect();
            for k in unique {
                *self.inclusive.entry(k.clone()).or_default() += s.value;
            }
        }
    }

    fn share(&self, key: &str) -> f64 {
        self.inclusive.get(key).copied().unwrap_or(0.0) / self.total.max(1.0)
    }
}

/// The key a frame is compared by: its function name; a frame without one is named by its
/// module's file name, as either profiler may fail to name the same libc internals (Debian's
/// libc has no .symtab; names then depend on libc6-dbg being installed).
fn key(function: &str, module: &str) -> String {
    if function.is_empty() || function == "[unknown]" {
        let base = module.rsplit('/').next().unwrap_or(module);
        format!("[unknown in {base}]")
    } else {
        function.to_string()
    }
}

/// Why a key is not compared, if it is not.
fn not_compared(key: &str) -> Option<&'static str> {
    if key.starts_with(KERNEL_KEY) {
        return Some("kernel frame");
    }
    ONE_SIDED
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, why)| *why)
}

/// Our samples: every location's every line (one per location in our profiles).
fn our_stacks(p: &Profile) -> Vec<Stack> {
    let s = |i: i64| p.string_table.get(i as usize).cloned().unwrap_or_default();
    let frames = |id: u64| -> Vec<String> {
        let Some(loc) = p.location.iter().find(|l| l.id == id) else {
            return vec![format!("[bad location {id}]")];
        };
        let module = p
            .mapping
            .iter()
            .find(|m| m.id == loc.mapping_id)
            .map(|m| s(m.filename))
            .unwrap_or_default();
        let mut keys: Vec<String> = loc
            .line
            .iter()
            .filter_map(|line| p.function.iter().find(|f| f.id == line.function_id))
            .map(|f| key(&s(f.name), &module))
            .collect();
        if keys.is_empty() {
            keys.push(key("", &module));
        }
        if module == KERNEL_MODULE {
            keys = keys.into_iter().map(kernel_key).collect();
        }
        keys
    };
    let mut out = Vec::new();
    for sample in &p.sample {
        let keys: Vec<String> = sample
            .location_id
            .iter()
            .flat_map(|&id| frames(id))
            .collect();
        out.push(Stack {
            keys,
            value: sample.value.first().copied().unwrap_or(0) as f64,
            leaf_in_libc: false,
        });
    }
    out
}

/// Kernel frames get a prefix so that no kernel function is ever confused with a user one of
/// the same name (and so that they are recognised as kernel frames from their key).
fn kernel_key(k: String) -> String {
    format!("{KERNEL_KEY}{k}")
}

/// Go's CPU profile: stacks with every inlined line expanded, valued in CPU nanoseconds.
fn go_stacks(p: &Profile) -> Vec<Stack> {
    let s = |i: i64| p.string_table.get(i as usize).cloned().unwrap_or_default();
    let cpu = p
        .sample_type
        .iter()
        .position(|t| s(t.r#type) == "cpu")
        .expect("Go's CPU profile has a cpu sample type");
    p.sample
        .iter()
        .map(|sample| {
            let keys = sample
                .location_id
                .iter()
                .filter_map(|&id| p.location.iter().find(|l| l.id == id))
                .flat_map(|loc| loc.line.iter())
                .filter_map(|line| p.function.iter().find(|f| f.id == line.function_id))
                .map(|f| key(&s(f.name), ""))
                .collect();
            Stack {
                keys,
                value: sample.value[cpu] as f64,
                leaf_in_libc: false,
            }
        })
        .collect()
}

/// One compared (or listed) function.
struct Row {
    key: String,
    ours: f64,
    oracle: f64,
    skip: Option<&'static str>,
}

fn rows(ours: &Shares, oracle: &Shares) -> Vec<Row> {
    let keys: HashSet<&String> = ours
        .inclusive
        .keys()
        .chain(oracle.inclusive.keys())
        .collect();
    let mut rows: Vec<Row> = keys
        .into_iter()
        .map(|k| Row {
            key: k.clone(),
            ours: ours.share(k),
            oracle: oracle.share(k),
            skip: not_compared(k),
        })
        .filter(|r| r.ours >= MIN_SHARE || r.oracle >= MIN_SHARE)
        .collect();
    rows.sort_by(|a, b| {
        b.oracle
            .max(b.ours)
            .total_cmp(&a.oracle.max(a.ours))
            .then_with(|| a.key.cmp(&b.key))
    });
    rows
}

fn table(oracle_name: &str, ours: &Shares, oracle: &Shares, rows: &[Row]) -> String {
    let mut out = format!(
        "{:<36} {:>8} {:>8} {:>7}\n",
        "function (inclusive share)", "ours", oracle_name, "diff"
    );
    for r in rows {
        out.push_str(&format!(
            "{:<36} {:>7.1}% {:>7.1}% {:>+7.1}{}\n",
            r.key,
            r.ours * 100.0,
            r.oracle * 100.0,
            (r.ours - r.oracle) * 100.0,
            r.skip
                .map(|w| format!("   not compared: {w}"))
                .unwrap_or_default()
        ));
    }
    out.push_str(&format!(
        "{:<36} {:>8.0} {:>8.0}\n",
        "samples", ours.samples, oracle.samples
    ));
    out
}

/// The failures among the compared rows, and the sanity floor.
fn verdict(oracle_name: &str, ours: &Shares, oracle: &Shares, rows: &[Row]) -> Vec<String> {
    let mut failed = Vec::new();
    for (name, s) in [("ours", ours), (oracle_name, oracle)] {
        if s.samples < MIN_SAMPLES {
            failed.push(format!(
                "{name}: {:.0} samples in the window, fewer than {MIN_SAMPLES}",
                s.samples
            ));
        }
    }
    for r in rows.iter().filter(|r| r.skip.is_none()) {
        if (r.ours - r.oracle).abs() > TOLERANCE {
            failed.push(format!(
                "{}: ours {:.1}% vs {oracle_name} {:.1}%: more than {:.0} points apart",
                r.key,
                r.ours * 100.0,
                r.oracle * 100.0,
                TOLERANCE * 100.0
            ));
        }
    }
    failed
}

fn config(addr: &str, pid: u32, service: &str, receiver: &str) -> String {
    format!(
        r#"
pyroscope.ebpf "oracle" {{
  targets          = [{{"__process_pid__" = "{pid}", "service_name" = "{service}"}}]
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "{COLLECT}s"
  demangle         = "simplified"
}}

pyroscope.write "out" {{
  endpoint {{
    url = "{receiver}"
  }}
}}
// {addr}
"#
    )
}

/// Our decoded profiles of `service`, in arrival order.
fn ours(receiver: &PyroscopeReceiver, service: &str) -> Vec<Profile> {
    receiver
        .received()
        .iter()
        .filter(|r| r.label("service_name") == Some(service))
        .map(|r| decode(&r.raw))
        .collect()
}

/// Waits (up to `timeout`) for a profile of `service` satisfying `f`.
async fn wait_profile(
    scraper: &Scraper,
    receiver: &PyroscopeReceiver,
    service: &str,
    timeout: Duration,
    f: impl Fn(&Profile) -> bool,
) -> bool {
    scraper
        .wait(timeout, |_| ours(receiver, service).iter().any(&f))
        .await
}

/// Waits for the first profile of `service`: an interval has just ended, so the oracle's
/// window can start now.
async fn wait_first(scraper: &Scraper, receiver: &PyroscopeReceiver, service: &str) {
    // Discovery is by pid (no walk to wait for); the first interval still has to end.
    let got = wait_profile(
        scraper,
        receiver,
        service,
        Duration::from_secs(4 * COLLECT),
        |_| true,
    )
    .await;
    let info = scraper.component("pyroscope.ebpf.oracle").await;
    assert_eq!(
        info["debugInfo"]["mode"],
        "bpf",
        "{info:#}\n{}",
        scraper.logs()
    );
    assert!(
        got,
        "no profile of {service} in {}s\n{info:#}\n{}",
        4 * COLLECT,
        scraper.logs()
    );
}

/// Waits until our profiles cover the end of `window`, then sums those at least half inside
/// it. Prints which were used.
async fn ours_in(
    scraper: &Scraper,
    receiver: &PyroscopeReceiver,
    service: &str,
    window: Window,
) -> Shares {
    let covered = wait_profile(
        scraper,
        receiver,
        service,
        Duration::from_secs(3 * COLLECT),
        |p| Window::of(p).end >= window.end,
    )
    .await;
    assert!(
        covered,
        "no profile of {service} covers the end of the window\n{}",
        scraper.logs()
    );
    let mut shares = Shares::default();
    let mut used = 0;
    for p in ours(receiver, service) {
        let w = Window::of(&p);
        let inside = 2 * w.overlap(window) >= w.end - w.start;
        eprintln!(
            "  ours {} {}",
            w.secs(window.start),
            if inside { "used" } else { "outside" }
        );
        if inside {
            shares.add(&our_stacks(&p), p.period as f64);
            used += 1;
        }
    }
    eprintln!(
        "  window {} (the oracle's); {} of our profiles used",
        window.secs(window.start),
        used
    );
    shares
}

/// Only one oracle test at a time: each runs a busy fixture and a scraper, and two at once on
/// a 2-core machine would starve each other's samples.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn go_inclusive_shares_match_gos_own_cpu_profile() {
    if !need_root("loading BPF") {
        return;
    }
    if !have_go() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let dir = open_dir();
    let src = dir.path().join("oracle_go.go");
    std::fs::write(&src, GO_SOURCE).expect("write Go source");
    // An absolute source path: the helpers join it to the repository, which keeps it as is.
    let src = src.to_str().expect("utf-8 temp path");
    let bin = build_go(src, dir.path(), "oracle_go", false);
    let (app, app_addr) = start_go(&bin, &[]);
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let service = "oracle_go";
    let scraper = Scraper::start(|addr| config(addr, app.pid(), service, &url)).await;
    wait_first(&scraper, &receiver, service).await;

    // Go's own CPU profile over the next WINDOW seconds.
    let go = reqwest::Client::new()
        .get(format!(
            "http://{app_addr}/debug/pprof/profile?seconds={WINDOW}"
        ))
        .timeout(Duration::from_secs(WINDOW + 30))
        .send()
        .await
        .expect("GET /debug/pprof/profile");
    assert!(go.status().is_success(), "{}", go.status());
    let go = decode(&go.bytes().await.expect("Go's profile"));
    let window = Window::of(&go);
    let mut oracle = Shares::default();
    oracle.add(&go_stacks(&go), go.period as f64);

    eprintln!("\nGo: {}", bin.display());
    let ours = ours_in(&scraper, &receiver, service, window).await;
    drop(app);
    let rows = rows(&ours, &oracle);
    eprintln!("{}", table("go", &ours, &oracle, &rows));
    let failed = verdict("go", &ours, &oracle, &rows);
    assert!(
        failed.is_empty(),
        "{}\n\n{}\nscraper log:\n{}",
        failed.join("\n"),
        table("go", &ours, &oracle, &rows),
        scraper.logs()
    );
}

/// Whether `perf` runs; reports it when not.
fn have_perf() -> bool {
    let ok = Command::new("perf")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        Require::Oracle.missing("`perf` is not installed (Debian: linux-perf)");
    }
    ok
}

/// Parses `perf script -F pid,period,ip,sym,dso` output: a header line (`PID PERIOD:`), then
/// one indented line per frame, leaf first (`ADDR SYM[+OFF] (DSO)`), then a blank line.
fn perf_stacks(text: &str, pid: u32) -> (Vec<Stack>, f64) {
    let mut out = Vec::new();
    let mut period = 0.0;
    // The sample being read, if it is the fixture's.
    let mut current: Option<Stack> = None;
    let mut first_user_dso: Option<String> = None;
    let mut finish = |current: &mut Option<Stack>, first_user_dso: &mut Option<String>| {
        if let Some(mut stack) = current.take() {
            stack.leaf_in_libc = first_user_dso.take().is_some_and(|d| is_libc(&d));
            out.push(stack);
        }
        *first_user_dso = None;
    };
    for line in text.lines() {
        if line.trim().is_empty() {
            finish(&mut current, &mut first_user_dso);
        } else if !line.starts_with('\t') {
            // A header: perf right-aligns the pid, so a short pid starts with spaces; frame
            // lines start with a tab.
            finish(&mut current, &mut first_user_dso);
            let mut fields = line.split_whitespace();
            let sample_pid: u32 = fields.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            let value: f64 = fields
                .next()
                .and_then(|p| p.trim_end_matches(':').parse().ok())
                .unwrap_or(0.0);
            period = value;
            current = (sample_pid == pid).then(|| Stack {
                keys: Vec::new(),
                value,
                leaf_in_libc: false,
            });
        } else if let Some(stack) = current.as_mut() {
            let line = line.trim();
            let (rest, dso) = match line.rfind(" (") {
                Some(i) => (&line[..i], line[i + 2..].trim_end_matches(')')),
                None => (line, ""),
            };
            // `ADDR SYM+0xOFF`: the symbol is what follows the address.
            let sym = rest.split_once(' ').map(|(_, s)| s).unwrap_or("");
            let sym = match sym.rfind("+0x") {
                Some(i) => &sym[..i],
                None => sym,
            };
            // Symbol versions (`__libc_start_main@@GLIBC_2.34`) are perf's: ours has none.
            let sym = sym.split('@').next().unwrap_or(sym);
            let k = key(sym, dso);
            if dso == KERNEL_MODULE {
                stack.keys.push(kernel_key(k));
            } else {
                first_user_dso.get_or_insert_with(|| dso.to_string());
                stack.keys.push(k);
            }
        }
    }
    finish(&mut current, &mut first_user_dso);
    (out, period)
}

/// Whether a module path is libc.
fn is_libc(path: &str) -> bool {
    let base = path.rsplit('/').next().unwrap_or(path);
    base.starts_with("libc.so") || base.starts_with("libc-")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_inclusive_shares_match_perf_dwarf_unwinding() {
    if !need_root("loading BPF") {
        return;
    }
    if !need_compiler("gcc") {
        return;
    }
    if !have_perf() {
        return;
    }
    let _serial = SERIAL.lock().await;
    let dir = open_dir();
    let src = dir.path().join("oracle_c.c");
    std::fs::write(&src, C_SOURCE).expect("write C source");
    let src = src.to_str().expect("utf-8 temp path");
    let bin = compile(
        "gcc",
        &["-O2", "-fomit-frame-pointer"],
        src,
        dir.path(),
        "oracle_c",
    );
    let app = spawn(&[], &bin);
    let pid = app.pid();
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let service = "oracle_c";
    let scraper = Scraper::start(|addr| config(addr, pid, service, &url)).await;
    wait_first(&scraper, &receiver, service).await;

    // perf over the next WINDOW seconds, on the same clock as ours (cpu-clock, 97 Hz).
    let data = dir.path().join("perf.data");
    let started = SystemTime::now();
    let record = tokio::task::spawn_blocking({
        let data = data.clone();
        move || {
            Command::new("perf")
                // -N: no copies of the fixture and libc in ~/.debug on every run.
                .args(["record", "-N", "-e", "cpu-clock", "-F", "97", "-g"])
                .args(["--call-graph", "dwarf", "-p", &pid.to_string(), "-o"])
                .arg(&data)
                .args(["--", "sleep", &WINDOW.to_string()])
                .output()
        }
    })
    .await
    .expect("join")
    .expect("run perf record");
    let window = Window {
        start: unix_nanos(started),
        end: unix_nanos(SystemTime::now()),
    };
    assert!(
        record.status.success(),
        "perf record: {}",
        String::from_utf8_lossy(&record.stderr)
    );
    let script = Command::new("perf")
        // One function per frame, as ours: perf would otherwise expand inlined calls from
        // DWARF (for libc, when its debug file is installed).
        .args(["script", "--no-inline", "-F", "pid,period,ip,sym,dso", "-i"])
        .arg(&data)
        .output()
        .expect("run perf script");
    assert!(
        script.status.success(),
        "perf script: {}",
        String::from_utf8_lossy(&script.stderr)
    );
    let (stacks, period) = perf_stacks(&String::from_utf8_lossy(&script.stdout), pid);
    let mut oracle = Shares::default();
    oracle.add(&stacks, period);

    eprintln!("\nnative: {}", bin.display());
    let ours = ours_in(&scraper, &receiver, service, window).await;
    drop(app);
    let rows = rows(&ours, &oracle);
    let in_libc = oracle.leaf_in_libc / oracle.total.max(1.0);
    eprintln!(
        "{}leaf in libc (perf): {:.1}%\n",
        table("perf", &ours, &oracle, &rows),
        in_libc * 100.0
    );
    let mut failed = verdict("perf", &ours, &oracle, &rows);
    // A property of the fixture, checked so that it cannot silently stop being true (on a
    // machine whose memset is much faster): the comparison covers unwinding out of libc only
    // if libc's share is large enough to be compared.
    if in_libc < MIN_SHARE {
        failed.push(format!(
            "the fixture spends only {:.1}% in libc (perf), under the {:.0}% compared: raise \
             oracle_c's memset rounds",
            in_libc * 100.0,
            MIN_SHARE * 100.0
        ));
    }
    assert!(
        failed.is_empty(),
        "{}\n\n{}\nscraper log:\n{}",
        failed.join("\n"),
        table("perf", &ours, &oracle, &rows),
        scraper.logs()
    );
}

#[test]
fn perf_script_stacks_parse() {
    let text = "\
1234 10309278:
\t    5555555551a9 oracle_b+0x19 (/tmp/x/oracle_c)
\t    5555555551e0 oracle_a+0x30 (/tmp/x/oracle_c)
\t    7ffff7dcd24a __libc_start_call_main+0x7a (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    7ffff7dcd305 __libc_start_main@@GLIBC_2.34 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    7ffff7ea0000 [unknown] (/usr/lib/x86_64-linux-gnu/libc.so.6)

  99   10309278 
\t    5555555551a9 other+0x19 (/tmp/x/other)

 1234 10309278:
\tffffffff81000000 asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
\t    5555555551a9 oracle_c (/tmp/x/oracle_c)

1234 10309278:
\tffffffff81000000 asm_sysvec_apic_timer_interrupt+0x16 ([kernel.kallsyms])
\t    7ffff7f12345 __memset_avx2_unaligned_erms+0x45 (/usr/lib/x86_64-linux-gnu/libc.so.6)
\t    5555555551a9 oracle_c (/tmp/x/oracle_c)
";
    let (stacks, period) = perf_stacks(text, 1234);
    assert_eq!(period, 10309278.0);
    let in_libc: Vec<bool> = stacks.iter().map(|s| s.leaf_in_libc).collect();
    assert_eq!(in_libc, [false, false, true], "kernel frames are skipped");
    assert_eq!(stacks.len(), 3, "the other pid's sample is dropped");
    assert_eq!(
        stacks[0].keys,
        [
            "oracle_b",
            "oracle_a",
            "__libc_start_call_main",
            "__libc_start_main",
            "[unknown in libc.so.6]"
        ]
    );
    assert_eq!(
        stacks[1].keys,
        ["[k] asm_sysvec_apic_timer_interrupt", "oracle_c"]
    );
}
