//! CPython frames in `pyroscope.ebpf` (docs/EBPF.md, "Python"), against py-spy.
//!
//! The fixture (tests/ebpf/python/hot.py) runs `outer -> middle -> hot` (about 70 % of its
//! time), `side -> lukewarm` (about 30 %) and a little `via_c -> sorted -> cb -> clé` (a
//! Python callback run from C, with a non-ASCII name) forever, under two CPython 3.11 builds: Debian's
//! stripped `/usr/bin/python3.11` (the interpreter linked into the executable) and pyenv's
//! `/root/.pyenv/versions/3.11.7/bin/python3` (links libpython3.11.so, has debug info), and
//! pyenv's 3.12.1 and 3.13.0 when installed.
//! For each, once our first profile arrived (an interval boundary just passed), `py-spy record
//! --format raw --rate 97` samples the same process for [`WINDOW`] seconds; our profiles at least
//! half inside py-spy's window are compared with its output. py-spy pauses the process for
//! each sample (its default): read from a running interpreter its stacks tear (see [`CHAINS`]).
//!
//! * of our samples whose stack holds `hot`, >= 90 % show `hot`, `middle`, `outer` as
//!   consecutive frames in that order (leaf first) with native frames below `outer`'s caller
//!   chain (a frame that is no Python source file: the interpreter's `Py_RunMain`, `main`...);
//! * of our samples holding `clé`, >= 90 % show `clé`, `cb`, then native frames, then `via_c`;
//! * >= 90 % of those `hot` frames name hot.py and a line of `hot`'s body (11-14);
//! * no stack of ours, and at most [`MAX_ORACLE_TORN`] of py-spy's, has Python frames the
//!   fixture never nests so (a torn stack, see [`CHAINS`]);
//! * every fixture function's inclusive share (samples holding it / samples of the process)
//!   is within [`TOLERANCE`] of py-spy's.
//!
//! The comparison table is printed before anything is asserted. Skips (printing why) without
//! root unless `SCRAPER_REQUIRE_BPF=1`, and without py-spy unless `SCRAPER_REQUIRE_PYSPY=1`; an
//! interpreter that is not installed is skipped the same way. Nothing is installed from here.
//!
//! `python_frames_in_a_container` runs Debian's interpreter the way a container does: in its own
//! pid and mount namespaces (`unshare`), from a tmpfs mounted inside them, so that the host
//! reaches the executable only through `/proc/<pid>/root` and the interpreter's thread knows
//! itself by its namespace's thread id (1), not the host's. Only the chain criterion above and
//! "no torn stack of ours" are asserted there (over ~2 collection intervals, no py-spy): the
//! thread is matched by its FS base, which is the same in every namespace.
//!
//! Test-only switches: `EBPF_PYTHON_ONLY=LABEL[,LABEL]` compares only those interpreters (e.g.
//! `pyenv-3.13`); `EBPF_PYTHON_DEBUG=1` prints, for each, our stacks that hold `via_c` without
//! `cb` and those that still show a native `_PyEval_EvalFrameDefault` (an activation no Python
//! frames were spliced into), py-spy's stacks, and ours reduced to their Python frames.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use scrape_support::{Scraper, decode};
use scraper::pprof::proto::Profile;
use support::ebpf::{need_compiler, need_root, spawn};
use support::pyroscope_receiver::PyroscopeReceiver;
use support::python::{DEBIAN_3_11, PYENV_3_11, PYENV_3_12, PYENV_3_13, ebpf_config};

/// The scraper's collection interval, seconds.
const COLLECT: u64 = 5;
/// py-spy's window: six collection intervals. Ours counts on-CPU ticks, py-spy wall-clock
/// ones of a running thread; on a loaded 2-core machine the fixture gets ~half a core and we
/// see ~700 samples in 15 s, where the 70/30 split's sampling error (~2 points each side) came
/// within reach of the 5-point bar: 30 s halves the variance.
const WINDOW: u64 = 6 * COLLECT;
/// |ours - py-spy| in percentage points (as a fraction).
const TOLERANCE: f64 = 0.05;
/// Of the samples holding `hot`, the part that must show the whole call chain.
const MIN_CHAIN: f64 = 0.90;
/// A sanity floor, not a timing assertion: ~2900 samples are expected in 30 s at 97 Hz.
const MIN_SAMPLES: f64 = 150.0;
/// The fixture's Python functions, compared one by one.
const FUNCTIONS: &[&str] = &[
    "<module>", "main", "outer", "middle", "hot", "side", "lukewarm", "via_c", "cb", "clé",
];

/// The fixture's Python call chains, root first: every consistent stack's Python frames are a
/// prefix of one of them. A stack that is none (`clé <- cb <- outer`) was torn: its frames were
/// read at different moments, the outer ones after the inner calls had returned and a later
/// call had reused their frame's data-stack slot.
const CHAINS: &[&[&str]] = &[
    &["<module>", "main", "outer", "middle", "hot"],
    &["<module>", "main", "side", "lukewarm"],
    &["<module>", "main", "via_c", "cb", "clé"],
];

/// The part of py-spy's samples that may be torn (see [`CHAINS`]) for it to serve as the oracle.
const MAX_ORACLE_TORN: f64 = 0.005;

/// (label, interpreter, required): the two 3.11 builds the acceptance names must be there
/// when `SCRAPER_REQUIRE_PYSPY=1`; 3.12 and 3.13 are compared when the image has them.
const PYTHONS: &[(&str, &str, bool)] = &[
    ("debian-stripped", DEBIAN_3_11, true),
    ("pyenv-shared", PYENV_3_11, true),
    ("pyenv-3.12", PYENV_3_12, false),
    ("pyenv-3.13", PYENV_3_13, false),
];

fn required(var: &str) -> bool {
    std::env::var(var).is_ok_and(|v| v == "1")
}

/// py-spy where `tests/pyspy/install.sh` puts it (`.tools/py-spy/venv`, what `.ci/run` runs),
/// else from PATH.
fn py_spy() -> Option<PathBuf> {
    let installed = Path::new(env!("CARGO_MANIFEST_DIR")).join(".tools/py-spy/venv/bin/py-spy");
    if installed.exists() {
        return Some(installed);
    }
    Command::new("sh")
        .args(["-c", "command -v py-spy"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
}

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ebpf/python/hot.py")
}

fn config(pid: u32, service: &str, receiver: &str, python: bool) -> String {
    ebpf_config(&[(pid, service)], receiver, COLLECT, python)
}

/// Samples of one profiler: stacks of function names, leaf first, with their weights.
#[derive(Default)]
struct Stacks {
    stacks: Vec<(Vec<String>, Vec<bool>, f64)>,
    /// Samples by the (file, line) our profiles give `hot`'s frame.
    hot_lines: BTreeMap<(String, i64), f64>,
}

impl Stacks {
    fn total(&self) -> f64 {
        self.stacks.iter().map(|s| s.2).sum()
    }

    fn share(&self, function: &str) -> f64 {
        let total = self.total().max(1.0);
        let with: f64 = self
            .stacks
            .iter()
            .filter(|(names, _, _)| names.iter().any(|n| n == function))
            .map(|s| s.2)
            .sum();
        with / total
    }

    /// The weight of the stacks whose Python frames are no prefix of a [`CHAINS`] chain, and
    /// the heaviest of them (leaf first).
    fn torn(&self) -> (f64, Vec<(String, f64)>) {
        let mut by: BTreeMap<String, f64> = BTreeMap::new();
        for (names, native, w) in &self.stacks {
            // Leaf first, then root first.
            let mut python: Vec<&str> = names
                .iter()
                .enumerate()
                .filter(|&(i, _)| !native.get(i).copied().unwrap_or(false))
                .map(|(_, name)| name.as_str())
                .collect();
            let leaf_first = python.join(" <- ");
            python.reverse();
            if !CHAINS.iter().any(|c| c.starts_with(&python)) {
                *by.entry(leaf_first).or_default() += w;
            }
        }
        // + 0.0: an empty sum is -0.0.
        let total = by.values().sum::<f64>() + 0.0;
        let mut heaviest: Vec<_> = by.into_iter().collect();
        heaviest.sort_by(|a, b| b.1.total_cmp(&a.1));
        heaviest.truncate(5);
        (total, heaviest)
    }

    /// Of the samples holding `hot`: the part where `hot, middle, outer` are consecutive and a
    /// native frame follows further down.
    fn chain(&self) -> (f64, f64) {
        let mut with_hot = 0.0;
        let mut whole = 0.0;
        for (names, native, w) in &self.stacks {
            let Some(at) = names.iter().position(|n| n == "hot") else {
                continue;
            };
            with_hot += w;
            let ordered = names
                .get(at..at + 3)
                .is_some_and(|c| c == ["hot", "middle", "outer"]);
            let below = native.iter().skip(at + 3).any(|&n| n);
            if ordered && below {
                whole += w;
            }
        }
        (whole, with_hot)
    }

    /// Of the samples holding `clé` (run by a callback from C): the part where `clé, cb` are
    /// consecutive, then native frames (sorted's C code), then `via_c`: the callback's
    /// activation and the outer one each got their own frames.
    fn callback_chain(&self) -> (f64, f64) {
        let mut with_leaf = 0.0;
        let mut whole = 0.0;
        for (names, native, w) in &self.stacks {
            let Some(at) = names.iter().position(|n| n == "clé") else {
                continue;
            };
            with_leaf += w;
            let ordered = names.get(at..at + 2).is_some_and(|c| c == ["clé", "cb"]);
            let outer = names.iter().skip(at + 2).position(|n| n == "via_c");
            let c_between = outer.is_some_and(|o| native[at + 2..at + 2 + o].iter().any(|&n| n));
            if ordered && c_between {
                whole += w;
            }
        }
        (whole, with_leaf)
    }
}

fn unix_nanos(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Our profile's stacks: names leaf first, and which frames are native (not a `.py` file).
fn our_stacks(p: &Profile, into: &mut Stacks) {
    let s = |i: i64| p.string_table[i as usize].clone();
    for sample in &p.sample {
        let weight = sample.value[0] as f64 / p.period as f64;
        let mut names = Vec::new();
        let mut native = Vec::new();
        for &id in &sample.location_id {
            let loc = &p.location[id as usize - 1];
            let f = &p.function[loc.line[0].function_id as usize - 1];
            let module = p
                .mapping
                .get(loc.mapping_id as usize - 1)
                .map(|m| s(m.filename))
                .unwrap_or_default();
            if s(f.name) == "hot" {
                let at = (s(f.filename), loc.line[0].line);
                *into.hot_lines.entry(at).or_default() += weight;
            }
            names.push(s(f.name));
            native.push(!module.ends_with(".py") && !module.is_empty());
        }
        into.stacks.push((names, native, weight));
    }
}

/// py-spy's raw output: `root;...;leaf count`, frames `function (file:line)`.
fn py_spy_stacks(text: &str) -> Stacks {
    let mut out = Stacks::default();
    for line in text.lines() {
        let Some((stack, count)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(count) = count.parse::<f64>() else {
            continue;
        };
        let names: Vec<String> = stack
            .split(';')
            .rev()
            .map(|f| f.split(" (").next().unwrap_or(f).to_string())
            .collect();
        let native = vec![false; names.len()];
        out.stacks.push((names, native, count));
    }
    out
}

/// Runs the comparison for one interpreter; returns the failures.
async fn compare(label: &str, python: &str, spy: &Path) -> Vec<String> {
    let fixture_proc = spawn(&[python], &fixture());
    let pid = fixture_proc.pid();
    let receiver = PyroscopeReceiver::start().await;
    let service = format!("py-{label}");
    let url = receiver.url();
    let scraper = Scraper::start(|_| config(pid, &service, &url, true)).await;
    let ours = |r: &PyroscopeReceiver| -> Vec<Profile> {
        r.received()
            .iter()
            .filter(|x| x.label("service_name") == Some(service.as_str()))
            .map(|x| decode(&x.raw))
            .collect()
    };
    let first = scraper
        .wait(Duration::from_secs(4 * COLLECT), |_| {
            !ours(&receiver).is_empty()
        })
        .await;
    let info = scraper.component("pyroscope.ebpf.py").await;
    assert!(
        first,
        "no profile in {}s\n{info:#}\n{}",
        4 * COLLECT,
        scraper.logs()
    );
    assert_eq!(info["debugInfo"]["mode"], "bpf", "{info:#}");
    let dir = tempfile::tempdir().expect("temp dir");
    let out = dir.path().join("py-spy.txt");
    let start = unix_nanos(SystemTime::now());
    let status = tokio::task::spawn_blocking({
        let spy = spy.to_path_buf();
        let out = out.clone();
        move || {
            Command::new(spy)
                // Not --nonblocking: py-spy then reads the frame chain of a running
                // interpreter, and on 3.13 ~1.5 % of its samples (up to 5 % when loaded) were
                // torn (`clé <- cb <- outer`: the outer frame read after via_c had returned
                // and outer reused its data-stack slot), which moved via_c's share to outer.
                // Paused, the process spends no CPU, so our on-CPU shares are not changed.
                .args(["record", "--format", "raw", "--rate", "97"])
                .arg("--duration")
                .arg(WINDOW.to_string())
                .arg("--pid")
                .arg(pid.to_string())
                .arg("-o")
                .arg(&out)
                .output()
        }
    })
    .await
    .expect("join")
    .expect("py-spy runs");
    let end = unix_nanos(SystemTime::now());
    assert!(
        status.status.success(),
        "py-spy: {}",
        String::from_utf8_lossy(&status.stderr)
    );
    let spy_stacks = py_spy_stacks(&std::fs::read_to_string(&out).expect("py-spy output"));
    let covered = scraper
        .wait(Duration::from_secs(3 * COLLECT), |_| {
            ours(&receiver)
                .iter()
                .any(|p| p.time_nanos + p.duration_nanos >= end)
        })
        .await;
    assert!(
        covered,
        "no profile covers the window's end\n{}",
        scraper.logs()
    );
    let mut our = Stacks::default();
    let mut used = 0;
    for p in ours(&receiver) {
        let (s, e) = (p.time_nanos, p.time_nanos + p.duration_nanos);
        let overlap = (e.min(end) - s.max(start)).max(0);
        if 2 * overlap >= e - s {
            our_stacks(&p, &mut our);
            used += 1;
        }
    }
    let info = scraper.component("pyroscope.ebpf.py").await;
    drop(fixture_proc);
    eprintln!(
        "\n{label} ({python}, pid {pid}): {used} of our profiles in py-spy's {WINDOW} s window"
    );
    print_counters_and_heaviest(&info, &our);
    if required("EBPF_PYTHON_DEBUG") {
        debug_stacks(&our, &spy_stacks);
    }
    let mut failures = Vec::new();
    let (whole, with_hot) = our.chain();
    eprintln!(
        "  samples: ours {:.0}, py-spy {:.0}; hot with outer->middle->hot and native below: {:.0}/{:.0} = {:.1} %",
        our.total(),
        spy_stacks.total(),
        whole,
        with_hot,
        100.0 * whole / with_hot.max(1.0)
    );
    eprintln!(
        "  {:<10} {:>7} {:>7} {:>7}",
        "function", "ours", "py-spy", "diff"
    );
    let mut rows = BTreeMap::new();
    for f in FUNCTIONS {
        let (o, s) = (our.share(f), spy_stacks.share(f));
        eprintln!(
            "  {:<10} {:>6.1}% {:>6.1}% {:>+6.1}",
            f,
            100.0 * o,
            100.0 * s,
            100.0 * (o - s)
        );
        rows.insert(*f, (o, s));
    }
    if our.total() < MIN_SAMPLES || spy_stacks.total() < MIN_SAMPLES {
        failures.push(format!(
            "{label}: too few samples (ours {}, py-spy {})",
            our.total(),
            spy_stacks.total()
        ));
    }
    if whole < MIN_CHAIN * with_hot || with_hot == 0.0 {
        failures.push(format!(
            "{label}: only {whole:.0} of {with_hot:.0} samples with hot show outer->middle->hot above native frames"
        ));
    }
    let (cb_whole, cb_with) = our.callback_chain();
    eprintln!("  clé with cb, C frames, then via_c: {cb_whole:.0}/{cb_with:.0}");
    for (who, stacks) in [("ours", &our), ("py-spy's", &spy_stacks)] {
        let (torn, heaviest) = stacks.torn();
        eprintln!("  torn stacks in {who}: {torn:.0} {heaviest:?}");
    }
    let (torn, heaviest) = our.torn();
    if torn > 0.0 {
        failures.push(format!(
            "{label}: {torn:.0} of our samples have Python frames the fixture never nests so: {heaviest:?}"
        ));
    }
    let (spy_torn, heaviest) = spy_stacks.torn();
    if spy_torn > MAX_ORACLE_TORN * spy_stacks.total() {
        failures.push(format!(
            "{label}: {spy_torn:.0} of py-spy's samples are torn, it is no oracle: {heaviest:?}"
        ));
    }
    if cb_whole < MIN_CHAIN * cb_with || cb_with == 0.0 {
        failures.push(format!(
            "{label}: only {cb_whole:.0} of {cb_with:.0} samples with clé show clé <- cb <- (C) <- via_c"
        ));
    }
    // `hot`'s body is lines 11-14 of hot.py (py-spy reports 12 and 13, the loop).
    eprintln!("  hot's file:line in ours: {:?}", our.hot_lines);
    let in_body: f64 = our
        .hot_lines
        .iter()
        .filter(|((file, line), _)| file.ends_with("/hot.py") && (11..=14).contains(line))
        .map(|(_, w)| w)
        .sum();
    if in_body < MIN_CHAIN * with_hot {
        failures.push(format!(
            "{label}: only {in_body:.0} of {with_hot:.0} hot frames name hot.py:11-14"
        ));
    }
    for (f, (o, s)) in rows {
        if (o - s).abs() > TOLERANCE {
            failures.push(format!(
                "{label}: {f} at {:.1} % in ours, {:.1} % in py-spy's",
                100.0 * o,
                100.0 * s
            ));
        }
    }
    failures
}

/// `EBPF_PYTHON_DEBUG=1`: the stacks behind a `via_c` share that differs from py-spy's.
/// The component's Python and BPF counters and our heaviest stack holding `hot`: printed by
/// both tests before anything is asserted, so a failure shows what the walk saw.
fn print_counters_and_heaviest(info: &serde_json::Value, our: &Stacks) {
    eprintln!("python debug info: {:#}", info["debugInfo"]["python"]);
    eprintln!("bpf counters: {}", info["debugInfo"]["bpf"]);
    if let Some((names, _, w)) = our
        .stacks
        .iter()
        .filter(|s| s.0.iter().any(|n| n == "hot"))
        .max_by(|a, b| a.2.total_cmp(&b.2))
    {
        eprintln!(
            "  our heaviest stack with hot ({w:.0} samples), leaf first: {}",
            names.join(" <- ")
        );
    }
}

fn debug_stacks(our: &Stacks, spy: &Stacks) {
    let show = |what: &str, s: &Stacks, keep: &dyn Fn(&[String]) -> bool| {
        let mut by: BTreeMap<String, f64> = BTreeMap::new();
        for (names, _, w) in &s.stacks {
            if keep(names) {
                *by.entry(names.join(" <- ")).or_default() += w;
            }
        }
        let mut v: Vec<_> = by.into_iter().collect();
        v.sort_by(|a, b| b.1.total_cmp(&a.1));
        eprintln!("  debug: {what}: {} stacks", v.len());
        for (stack, w) in v.iter().take(25) {
            eprintln!("    {w:>5.0}  {stack}");
        }
    };
    let has = |names: &[String], f: &str| names.iter().any(|n| n == f);
    show("ours with via_c, without cb", our, &|n| {
        has(n, "via_c") && !has(n, "cb")
    });
    show("ours with a native _PyEval_EvalFrameDefault", our, &|n| {
        n.iter().any(|n| n.starts_with("_PyEval_EvalFrameDefault"))
    });
    show("py-spy's with via_c", spy, &|n| has(n, "via_c"));
    show("py-spy's, all", spy, &|_| true);
    // Ours reduced to the Python frames, as py-spy shows them.
    let python_only = Stacks {
        stacks: our
            .stacks
            .iter()
            .map(|(names, native, w)| {
                let py: Vec<String> = names
                    .iter()
                    .zip(native)
                    .filter(|&(_, &n)| !n)
                    .map(|(name, _)| name.clone())
                    .collect();
                (py, vec![false; 0], *w)
            })
            .collect(),
        hot_lines: BTreeMap::new(),
    };
    show("ours' Python frames, all", &python_only, &|_| true);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_frames_match_py_spy() {
    if !need_root("loading BPF") {
        return;
    }
    let Some(spy) = py_spy() else {
        assert!(
            !required("SCRAPER_REQUIRE_PYSPY"),
            "py-spy not found and SCRAPER_REQUIRE_PYSPY=1"
        );
        eprintln!("skipped: py-spy not found (tests/pyspy/install.sh installs it)");
        return;
    };
    let only = std::env::var("EBPF_PYTHON_ONLY").ok();
    let mut failures = Vec::new();
    for &(label, python, needed) in PYTHONS {
        if let Some(only) = &only
            && !only.split(',').any(|l| l == label)
        {
            eprintln!("skipped {label}: not in EBPF_PYTHON_ONLY={only}");
            continue;
        }
        if !Path::new(python).exists() {
            assert!(
                !(needed && required("SCRAPER_REQUIRE_PYSPY")),
                "{python} missing and SCRAPER_REQUIRE_PYSPY=1"
            );
            eprintln!("skipped {label}: {python} not installed");
            continue;
        }
        failures.extend(compare(label, python, &spy).await);
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The container test's interpreter (CI installs it) and the shell that starts it inside the
/// namespaces: a tmpfs on `$1` (private to the new mount namespace, `unshare`'s default
/// propagation), the interpreter `$2` copied there and exec'd on the fixture `$3`, so that it
/// is the namespace's pid 1.
const CONTAINED_PYTHON: &str = DEBIAN_3_11;
const CONTAINER_SHELL: &str =
    r#"mount -t tmpfs scraper-py "$1" && cp "$2" "$1/python3.11" && exec "$1/python3.11" "$3""#;
/// Profiles the container test reads: its first (a partial interval) and a whole one.
const CONTAINER_PROFILES: usize = 2;
/// A sanity floor: ~480 samples are expected in two intervals at half a core.
const CONTAINER_MIN_SAMPLES: f64 = 50.0;

/// The host pid of the child of `parent` (`unshare`) once it runs the executable `exe` (the
/// shell exec'd it); `None` when `parent` exits first or 10 s pass.
fn contained_pid(parent: &mut std::process::Child, exe: &Path) -> Option<u32> {
    let ppid = format!("PPid:\t{}", parent.id());
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if !matches!(parent.try_wait(), Ok(None)) {
            return None;
        }
        let procs = std::fs::read_dir("/proc").ok()?;
        for pid in procs.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok()) {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
            if status.lines().any(|l| l == ppid)
                && std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|l| l == exe)
            {
                return Some(pid);
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    None
}

/// `NSpid` of `/proc/<pid>/status`: the process's pid in each namespace, the host's first.
fn ns_pids(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix("NSpid:"))
        .map(|l| {
            l.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Python frames of an interpreter in a container: another pid namespace (its thread's
/// `native_thread_id` is the namespace's id, which the BPF program never sees) and another
/// mount namespace (its executable is on a tmpfs the host does not see).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_frames_in_a_container() {
    if !need_root("loading BPF and entering new namespaces")
        || !need_compiler("unshare")
        || !need_compiler(CONTAINED_PYTHON)
    {
        return;
    }
    let mount = tempfile::tempdir().expect("temp dir");
    let exe = mount.path().join("python3.11");
    let mount_arg = mount.path().to_str().expect("temp dir is UTF-8");
    let mut fixture_proc = spawn(
        &[
            "unshare",
            "--pid",
            "--fork",
            "--kill-child",
            "--mount",
            "--mount-proc",
            "sh",
            "-c",
            CONTAINER_SHELL,
            "sh",
            mount_arg,
            CONTAINED_PYTHON,
        ],
        &fixture(),
    );
    let pid = contained_pid(&mut fixture_proc.child, &exe)
        .unwrap_or_else(|| panic!("no child of unshare runs {}", exe.display()));
    // The premises: pid 1 of its own namespace, run from a file the host sees only through
    // the process's root.
    let ns = ns_pids(pid);
    assert_eq!(ns, [pid, 1], "NSpid of {pid}");
    assert!(!exe.exists(), "the host sees {}", exe.display());
    let via_root =
        Path::new(&format!("/proc/{pid}/root")).join(exe.strip_prefix("/").unwrap_or(&exe));
    assert!(via_root.exists(), "{} missing", via_root.display());

    let receiver = PyroscopeReceiver::start().await;
    let service = "py-container";
    let url = receiver.url();
    let scraper = Scraper::start(|_| config(pid, service, &url, true)).await;
    let ours = |r: &PyroscopeReceiver| -> Vec<Profile> {
        r.received()
            .iter()
            .filter(|x| x.label("service_name") == Some(service))
            .map(|x| decode(&x.raw))
            .collect()
    };
    let timeout = Duration::from_secs((CONTAINER_PROFILES as u64 + 3) * COLLECT);
    let arrived = scraper
        .wait(timeout, |_| ours(&receiver).len() >= CONTAINER_PROFILES)
        .await;
    let info = scraper.component("pyroscope.ebpf.py").await;
    drop(fixture_proc);
    assert!(
        arrived,
        "fewer than {CONTAINER_PROFILES} profiles in {timeout:?}\n{info:#}\n{}",
        scraper.logs()
    );
    assert_eq!(info["debugInfo"]["mode"], "bpf", "{info:#}");
    let mut our = Stacks::default();
    for p in ours(&receiver) {
        our_stacks(&p, &mut our);
    }
    let (whole, with_hot) = our.chain();
    let (torn, heaviest) = our.torn();
    eprintln!(
        "\ncontainer ({CONTAINED_PYTHON} run as {}, host pid {pid}, NSpid {ns:?})",
        exe.display()
    );
    print_counters_and_heaviest(&info, &our);
    eprintln!(
        "  samples: {:.0}; hot with outer->middle->hot and native below: {whole:.0}/{with_hot:.0} = {:.1} %; hot share {:.1} %; torn {torn:.0} {heaviest:?}",
        our.total(),
        100.0 * whole / with_hot.max(1.0),
        100.0 * our.share("hot")
    );
    let mut failures = Vec::new();
    if our.total() < CONTAINER_MIN_SAMPLES {
        failures.push(format!("too few samples: {}", our.total()));
    }
    if whole < MIN_CHAIN * with_hot || with_hot == 0.0 {
        failures.push(format!(
            "only {whole:.0} of {with_hot:.0} samples with hot show outer->middle->hot above native frames"
        ));
    }
    if torn > 0.0 {
        failures.push(format!(
            "{torn:.0} samples have Python frames the fixture never nests so: {heaviest:?}"
        ));
    }
    assert!(failures.is_empty(), "{failures:#?}\n{}", scraper.logs());
}

#[test]
fn py_spy_raw_output_parses() {
    let text = "<module> (hot.py:45);main (hot.py:41);outer (hot.py:20);middle (hot.py:16);hot (hot.py:10) 59\n\
                <module> (hot.py:45);main (hot.py:42);side (hot.py:31);lukewarm (hot.py:26) 41\n";
    let s = py_spy_stacks(text);
    assert_eq!(s.total(), 100.0);
    assert_eq!(s.stacks[0].0[..3], ["hot", "middle", "outer"]);
    assert!((s.share("hot") - 0.59).abs() < 1e-9);
    assert!((s.share("main") - 1.0).abs() < 1e-9);
    // py-spy's stacks have no native frames, so its own chain check finds none whole.
    assert_eq!(s.chain(), (0.0, 59.0));
}

#[test]
fn torn_stacks_are_found() {
    // py-spy's stacks: one torn (cb's caller read after via_c had returned and outer reused
    // its slot), the others prefixes of the fixture's chains.
    let text = "<module> (hot.py:62);main (hot.py:57);outer (hot.py:20);cb (hot.py:44);clé (hot.py:39) 3\n\
                <module> (hot.py:62);main (hot.py:57);via_c (hot.py:48);cb (hot.py:44);clé (hot.py:39) 5\n\
                <module> (hot.py:62);main (hot.py:57);outer (hot.py:20) 1\n";
    let (torn, heaviest) = py_spy_stacks(text).torn();
    assert_eq!(torn, 3.0);
    assert_eq!(heaviest[0].0, "clé <- cb <- outer <- main <- <module>");
    // Ours: native frames (sorted's C code) between cb and via_c are not Python frames.
    let ours = |names: &[&str], native: &[bool]| Stacks {
        stacks: vec![(
            names.iter().map(|n| n.to_string()).collect(),
            native.to_vec(),
            1.0,
        )],
        hot_lines: BTreeMap::new(),
    };
    let whole = ours(
        &[
            "clé",
            "cb",
            "list_sort",
            "via_c",
            "main",
            "<module>",
            "main",
        ],
        &[false, false, true, false, false, false, true],
    );
    assert_eq!(whole.torn().0, 0.0);
    let torn = ours(
        &[
            "clé",
            "cb",
            "list_sort",
            "outer",
            "main",
            "<module>",
            "main",
        ],
        &[false, false, true, false, false, false, true],
    );
    assert_eq!(torn.torn().0, 1.0);
}
