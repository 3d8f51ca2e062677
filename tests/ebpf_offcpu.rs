//! `pyroscope.ebpf` off-CPU profiles end to end: a C and a Go program block in known
//! functions (`block_long`: 50 ms sleeps; `block_short`: 50 us sleeps) and measure the time
//! they slept; `scraper run` as root, with `off_cpu_threshold = 1` (every switch-out) and
//! `off_cpu_min_block = "5ms"`, must send `offcpu` profiles in which `block_long` holds the
//! time the program measured (within 10 %) and `block_short`'s sleeps nothing, except those
//! a busy machine stretched past 5 ms (a woken thread waiting for a CPU is still off CPU): the
//! programs measure each short sleep and report the sum of those that took 5 ms or more, an
//! upper bound of what may be reported. Without the minimum all of their time is reported
//! (most of it in sleeps well under 5 ms), which fails.
//!
//! A second run at `off_cpu_threshold = 0.5` and `off_cpu_min_block = "0s"` checks the
//! sampling: the fraction of switch-outs the program chose (its own counters) is near 1/2,
//! the 1/p-scaled `block_long` time is within a wide statistical bound of the time slept, and
//! the `process_cpu` profiles hold (almost) nothing of `block_long` (off-CPU samples must not
//! leak into the CPU ones).
//!
//! The programs start blocking only when the off-CPU sampler is attached (they wait for a
//! line on stdin), and report their totals when done; the test then waits until a collection
//! after that moment has been made and every profile it counted has reached the receiver, so
//! the profiles cover every block the programs measured.
//!
//! Without root the test prints why and passes, unless `SCRAPER_REQUIRE_BPF=1`; without `go`
//! likewise unless `SCRAPER_REQUIRE_GO=1`.

mod scrape_support;
mod support;

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use scrape_support::{Scraper, decode, have_go};
use support::ebpf::{self, compile, need_compiler, need_root, open_dir};
use support::go::Proc;
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

/// Rounds each program runs: 100 x (50 ms + 20 x 50 us), a little over 5 s.
const ROUNDS: &str = "100";
const COLLECT: Duration = Duration::from_secs(2);

/// What a fixture measured around its sleeps.
#[derive(Debug, Default)]
struct Slept {
    long_ns: i64,
    short_ns: i64,
    /// Short sleeps that took at least the minimum all the same.
    short_over_ns: i64,
}

fn parse(line: &str) -> Slept {
    let mut s = Slept::default();
    for field in line.split_whitespace() {
        let (k, v) = field.split_once('=').unwrap_or_else(|| panic!("{line:?}"));
        let v: i64 = v.parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
        match k {
            "long_ns" => s.long_ns = v,
            "short_ns" => s.short_ns = v,
            "short_over_ns" => s.short_over_ns = v,
            _ => {}
        }
    }
    assert!(s.long_ns > 0 && s.short_ns > 0, "{line:?}");
    s
}

/// A fixture waiting for its start line.
struct Fixture {
    name: &'static str,
    proc: Proc,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

fn start(name: &'static str, bin: &Path) -> Fixture {
    let mut child = Command::new(bin)
        .arg(ROUNDS)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e}", bin.display()));
    let stdin = child.stdin.take().expect("stdin");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    Fixture {
        name,
        proc: Proc { child },
        stdin,
        lines,
    }
}

fn build_c(dir: &Path) -> PathBuf {
    // No frame pointers: the stacks are unwound from CFI, as the CPU sampler's.
    compile("gcc", &["-O2"], "tests/ebpf/offcpu/block.c", dir, "block_c")
}

/// `off_cpu_threshold` and `off_cpu_min_block` of one run.
#[derive(Clone, Copy)]
struct Setting {
    threshold: &'static str,
    min_block: &'static str,
}

fn config(addr: &str, url: &str, fixtures: &[(&str, u32)], setting: Setting) -> String {
    let targets: Vec<String> = fixtures
        .iter()
        .map(|(name, pid)| {
            format!("{{\"__process_pid__\" = \"{pid}\", \"service_name\" = \"{name}\"}}")
        })
        .collect();
    format!(
        r#"
pyroscope.ebpf "blocky" {{
  targets           = [{targets}]
  forward_to        = [pyroscope.write.out.receiver]
  collect_interval  = "{collect}s"
  off_cpu_threshold = {threshold}
  off_cpu_min_block = "{min_block}"
}}

pyroscope.write "out" {{
  endpoint {{
    url = "{url}"
  }}
}}
// {addr}
"#,
        targets = targets.join(", "),
        collect = COLLECT.as_secs(),
        threshold = setting.threshold,
        min_block = setting.min_block,
    )
}

/// The off-CPU profiles of `service`, checked for Alloy's name and sample type.
fn offcpu_profiles<'a>(received: &'a [Received], service: &str) -> Vec<&'a Received> {
    let mine: Vec<&Received> = received
        .iter()
        .filter(|r| {
            r.label("service_name") == Some(service) && r.label("__name__") == Some("offcpu")
        })
        .collect();
    for r in &mine {
        let p = decode(&r.raw);
        let s = |i: i64| p.string_table[i as usize].as_str();
        assert_eq!(p.sample_type.len(), 1);
        assert_eq!(s(p.sample_type[0].r#type), "offcpu");
        assert_eq!(s(p.sample_type[0].unit), "nanoseconds");
        assert_eq!(p.period, 1);
    }
    mine
}

/// Whether `name` is function `func` (Go names are package-qualified: `main.blockLong`).
fn is(name: &str, func: &str) -> bool {
    name == func || name.ends_with(&format!(".{func}"))
}

/// Nanoseconds (off-CPU, or CPU in a `process_cpu` profile) of the stacks through `func`;
/// with `kernel`, only those that also pass through that kernel function.
fn off_cpu_in(profiles: &[&Received], func: &str, kernel: Option<&str>) -> i64 {
    let mut total = 0;
    for r in profiles {
        for (frames, v) in ebpf::stacks(&decode(&r.raw)) {
            let through = |f: &str| frames.iter().any(|x| is(&x.function, f));
            if through(func) && kernel.is_none_or(through) {
                total += v;
            }
        }
    }
    total
}

/// Every stack of `func` in `profiles`, leaf first, for failure messages.
fn stacks_with(profiles: &[&Received], func: &str) -> String {
    let mut out = String::new();
    for r in profiles {
        for (frames, v) in ebpf::stacks(&decode(&r.raw)) {
            if frames.iter().any(|f| f.function.contains(func)) {
                let names: Vec<&str> = frames.iter().map(|f| f.function.as_str()).collect();
                out.push_str(&format!("{v}: {}\n", names.join(" <- ")));
            }
        }
    }
    out
}

/// One run: the fixtures' own accounts and what the scraper sent.
struct Run {
    fixtures: Vec<Fixture>,
    slept: Vec<Slept>,
    received: Vec<Received>,
    info: serde_json::Value,
    scraper: Scraper,
    /// Kept until the end: the receiver must outlive the scraper.
    _receiver: PyroscopeReceiver,
}

/// Runs the fixtures under a scraper with `setting`; `None` when a tool is missing (skipped).
async fn run(setting: Setting) -> Option<Run> {
    if !need_root("loading BPF") || !need_compiler("gcc") {
        return None;
    }
    let go = have_go();
    let dir = open_dir();
    let mut fixtures = vec![start("block_c", &build_c(dir.path()))];
    if go {
        let bin = ebpf::build_go("tests/go/offcpu/main.go", dir.path(), "block_go", false);
        fixtures.push(start("block_go", &bin));
    }
    let receiver = PyroscopeReceiver::start().await;
    let url = receiver.url();
    let pids: Vec<(&str, u32)> = fixtures.iter().map(|f| (f.name, f.proc.pid())).collect();
    let scraper = Scraper::start(|addr| config(addr, &url, &pids, setting)).await;

    // Hang guard only: the sampler attaches within a second or two.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let info = scraper.component("pyroscope.ebpf.blocky").await;
        let off = &info["debugInfo"]["off_cpu"];
        if off["state"] == "running" {
            break;
        }
        assert!(
            off["state"] != "failed" && Instant::now() < deadline,
            "off-CPU sampler not running: {info:#}\n{}",
            scraper.logs()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let started = Instant::now();
    for f in &mut fixtures {
        writeln!(f.stdin, "go").expect("start the fixture");
    }
    let mut slept = Vec::new();
    for f in &fixtures {
        let line = f
            .lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|e| panic!("{}: no result line: {e}", f.name));
        slept.push(parse(&line));
    }
    let window = started.elapsed();
    // Every block ended before the totals were printed. A collection made after this moment
    // (its `last_collect` differs from the one read now) drained the ring after it too; then
    // every profile the session counted must reach the receiver. Polled, with a hang guard.
    let before =
        scraper.component("pyroscope.ebpf.blocky").await["debugInfo"]["last_collect"].clone();
    let deadline = Instant::now() + COLLECT * 10 + Duration::from_secs(30);
    let info = loop {
        let info = scraper.component("pyroscope.ebpf.blocky").await;
        let status = &info["debugInfo"];
        let sent = status["profiles_total"].as_u64().unwrap_or(0) as usize;
        if status["last_collect"] != before && receiver.received().len() >= sent {
            break info;
        }
        assert!(
            Instant::now() < deadline,
            "no collection after the fixtures finished, or its profiles never arrived: {} of {sent} received\n{info:#}\n{}",
            receiver.received().len(),
            scraper.logs()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let received = receiver.received();
    eprintln!(
        "window {window:?}; off_cpu {:#}",
        info["debugInfo"]["off_cpu"]
    );
    Some(Run {
        fixtures,
        slept,
        received,
        info,
        scraper,
        _receiver: receiver,
    })
}

/// The function names of the blocking functions in fixture `name`.
fn funcs(name: &str) -> (&'static str, &'static str) {
    if name == "block_go" {
        ("blockLong", "blockShort")
    } else {
        ("block_long", "block_short")
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offcpu_profiles_hold_the_time_blocked_and_not_the_short_blocks() {
    let setting = Setting {
        threshold: "1",
        min_block: "5ms",
    };
    let Some(Run {
        fixtures,
        slept,
        received,
        info,
        scraper,
        _receiver,
    }) = run(setting).await
    else {
        return;
    };
    let mut failures = Vec::new();
    for (f, slept) in fixtures.iter().zip(&slept) {
        let (long, short) = funcs(f.name);
        let mine = offcpu_profiles(&received, f.name);
        if mine.is_empty() {
            failures.push(format!(
                "{}: no offcpu profile; got {:?}",
                f.name,
                received.iter().map(|r| &r.labels).collect::<Vec<_>>()
            ));
            continue;
        }
        let long_off = off_cpu_in(&mine, long, None);
        // The short sleeps themselves (through do_nanosleep): a thread preempted on its way
        // out of one waits on the run queue, which is off-CPU time too and reported when a
        // busy machine makes it longer than the minimum.
        let short_off = off_cpu_in(&mine, short, Some("do_nanosleep"));
        let short_all = off_cpu_in(&mine, short, None);
        let ratio = long_off as f64 / slept.long_ns as f64;
        eprintln!(
            "{}: {long} off-CPU {long_off} ns vs {} ns slept ({:.1}%); {short} sleeping off-CPU {short_off} ns (all {short_all} ns) vs {} ns slept, {} ns of it in sleeps >= 5 ms",
            f.name,
            slept.long_ns,
            ratio * 100.0,
            slept.short_ns,
            slept.short_over_ns
        );
        if !(0.9..=1.1).contains(&ratio) {
            failures.push(format!(
                "{}: {long} has {long_off} ns off CPU, the program slept {} ns there ({:.1}%)\nstacks:\n{}",
                f.name,
                slept.long_ns,
                ratio * 100.0,
                stacks_with(&mine, long)
            ));
        }
        // A reported block lasted at least 5 ms, inside a sleep the program measured at
        // 5 ms or more: their sum bounds what may be reported (1 ms slack for the clocks).
        if short_off > slept.short_over_ns + 1_000_000 {
            failures.push(format!(
                "{}: {short} has {short_off} ns off CPU sleeping, but only {} ns of its {} ns slept were in sleeps of 5 ms or more: blocks under off_cpu_min_block were reported\nstacks:\n{}",
                f.name,
                slept.short_over_ns,
                slept.short_ns,
                stacks_with(&mine, short)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n{info:#}\n{}",
        failures.join("\n"),
        scraper.logs()
    );
    drop(scraper);
}

/// The CPU profiles of `service`.
fn cpu_profiles<'a>(received: &'a [Received], service: &str) -> Vec<&'a Received> {
    received
        .iter()
        .filter(|r| {
            r.label("service_name") == Some(service) && r.label("__name__") == Some("process_cpu")
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_the_switch_outs_are_chosen_and_scaled_back_to_the_time_blocked() {
    let setting = Setting {
        threshold: "0.5",
        min_block: "0s",
    };
    let Some(Run {
        fixtures,
        slept,
        received,
        info,
        scraper,
        _receiver,
    }) = run(setting).await
    else {
        return;
    };
    let mut failures = Vec::new();
    // The program's own counters: switch-outs of followed threads, and those chosen. With
    // thousands of switch-outs the chosen fraction's standard deviation is under 1 %: 0.4 to
    // 0.6 is a bound no correct run misses.
    let bpf = &info["debugInfo"]["off_cpu"]["bpf"];
    let switches = bpf["switches"].as_u64().unwrap_or(0);
    let chosen = bpf["chosen"].as_u64().unwrap_or(0);
    let fraction = chosen as f64 / switches.max(1) as f64;
    eprintln!("chosen {chosen} of {switches} switch-outs ({fraction:.3})");
    if switches < 1000 || !(0.4..=0.6).contains(&fraction) {
        failures.push(format!(
            "chosen {chosen} of {switches} switch-outs ({fraction:.3}), want about 0.5"
        ));
    }
    for (f, slept) in fixtures.iter().zip(&slept) {
        let (long, _) = funcs(f.name);
        let mine = offcpu_profiles(&received, f.name);
        // 100 sleeps of 50 ms, each chosen with probability 1/2: the number chosen has a
        // standard deviation of 5 (10 % of the expected 50), so the scaled total lies within
        // 50 % of the time slept in all but one run in a million.
        let long_off = off_cpu_in(&mine, long, None);
        let ratio = long_off as f64 / slept.long_ns as f64;
        // CPU time in block_long: it sleeps nearly all the time, so a sample or two of its way
        // in and out of nanosleep at most. Its 100 sleeps counted as CPU samples (one period,
        // ~10 ms, each) would be 1 s, 20 % of the time slept: 5 % separates the two.
        let cpu = cpu_profiles(&received, f.name);
        let cpu_long = off_cpu_in(&cpu, long, None);
        eprintln!(
            "{}: {long} off-CPU {long_off} ns (scaled) vs {} ns slept ({:.1}%); {cpu_long} ns CPU in it",
            f.name,
            slept.long_ns,
            ratio * 100.0
        );
        if !(0.5..=1.5).contains(&ratio) {
            failures.push(format!(
                "{}: {long} has {long_off} ns off CPU scaled by 2, the program slept {} ns there ({:.1}%)\nstacks:\n{}",
                f.name,
                slept.long_ns,
                ratio * 100.0,
                stacks_with(&mine, long)
            ));
        }
        if cpu_long > slept.long_ns / 20 {
            failures.push(format!(
                "{}: the process_cpu profiles have {cpu_long} ns in {long}, which only sleeps: off-CPU samples leaked into them\nstacks:\n{}",
                f.name,
                stacks_with(&cpu, long)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{}\n{info:#}\n{}",
        failures.join("\n"),
        scraper.logs()
    );
    drop(scraper);
}
