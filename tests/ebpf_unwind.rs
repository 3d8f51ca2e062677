//! `pyroscope.ebpf` unwinds user stacks without frame pointers: `scraper run` profiles nine
//! busy programs whose hot leaf sits calls below `main`, and nearly every sample must carry
//! that whole chain.
//!
//! * `unwind_c`: tests/ebpf/unwind/chain.c, `gcc -O2 -fomit-frame-pointer`: no frame pointers,
//!   only .eh_frame.
//! * `unwind_c_libc`: tests/ebpf/unwind/chain_libc.c, built the same way, whose leaf is inside
//!   libc (Debian's, itself without frame pointers), partly in a comparator called back by qsort.
//! * `unwind_cpp`: tests/ebpf/unwind/chain.cpp, `g++ -O2` (which omits frame pointers by
//!   default): namespaced templates.
//! * `unwind_rust`: tests/ebpf/unwind/chain.rs, `rustc -C opt-level=3`: a release build without
//!   `force-frame-pointers`.
//! * `unwind_go`, `unwind_go_stripped`: tests/go/unwind/main.go, `go build`, also with
//!   `-ldflags=-s -w`. Go keeps frame pointers, but its leaf is frameless, which makes a
//!   frame-pointer walk skip the leaf's caller.
//!
//! * `unwind_signal`: tests/ebpf/unwind/signal.c, whose time is mostly in a SIGALRM handler:
//!   through the kernel's signal frame back into the interrupted code.
//! * `unwind_deep`: tests/ebpf/unwind/deep.c, a leaf 151 calls below `main` (a kernel
//!   frame-pointer walk keeps 127 frames).
//! * `unwind_vdso`: tests/ebpf/unwind/vdso.c, whose time is in the vDSO's clock_gettime, called
//!   through libc's.
//!
//! For each, over its samples weighted by value: the share whose stack holds the expected chain
//! as one contiguous run from the hot leaf up to `main` (`main.main` for Go), and the share
//! ending in the sampler's `[truncated]` marker. The acceptance bar is >= 95 % and < 2 %. The
//! table of all six is printed before anything is asserted, so one failure shows them all.
//!
//! Skips (printing why) without root, unless `SCRAPER_REQUIRE_BPF=1`; without gcc, g++ or
//! rustc, unless `SCRAPER_REQUIRE_BPF=1`; without go, unless `SCRAPER_REQUIRE_GO` is set. CI
//! sets all of them.

mod scrape_support;
mod support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use scrape_support::{Proc, Scraper, decode, have_go};
use support::ebpf::{
    Frame, build_go, compile, need_compiler, need_root, open_dir, rustc, spawn, stacks,
};
use support::pyroscope_receiver::{PyroscopeReceiver, Received};

/// Collection interval of the scraper under test.
const COLLECT: &str = "5s";
/// Profiles (collection intervals) to wait for per program.
const INTERVALS: usize = 3;
/// Samples each program must have before it is judged. At the sampler's default 97 Hz, three
/// 5 s intervals of one busy thread are ~1450 samples with a CPU to itself; six programs share
/// this machine's cores (2 in CI, with other jobs beside), which leaves each ~1/3 of a core,
/// ~480 samples. 100 keeps a 5x margin for a loaded machine while still making 1 sample worth
/// 1 %, fine enough for the 2 % bar. The test waits for more intervals while this is not met.
const MIN_SAMPLES: f64 = 100.0;
/// How long to wait for those intervals and samples before judging what arrived.
const PATIENCE: Duration = Duration::from_secs(150);
/// The acceptance bars.
const MIN_CHAIN: f64 = 0.95;
const MAX_TRUNCATED: f64 = 0.02;
/// chain_libc.c only proves anything about unwinding out of libc if its samples are mostly
/// there (a property of the fixture, checked so that it cannot silently stop being true).
const MIN_IN_LIBC: f64 = 0.5;

/// A program with several acceptable chains must have this share in its first one.
const MIN_FIRST_CHAIN: f64 = 0.2;
/// In a chain: any one frame of libc.
const LIBC: &str = "<libc>";

const TRUNCATED: &str = "[truncated]";
const KERNEL_MODULE: &str = "[kernel.kallsyms]";

/// What may come before the expected chain (leafward) in a sample.
#[derive(Clone, Copy)]
enum Leaf {
    /// Nothing but kernel frames: the chain's first frame is the hot user leaf.
    Own,
    /// Kernel frames, then libc's frames, among which the program's own `callback` (qsort's
    /// comparator, called from inside libc) may appear: the chain starts at the first of the
    /// program's frames below libc's.
    Libc { callback: &'static str },
    /// Kernel frames, then the vDSO's and libc's frames: the chain starts below them.
    Vdso,
}

struct Program {
    /// The binary's file name, which is also its `service_name`.
    name: &'static str,
    build: fn(&Path) -> PathBuf,
    /// The frames from the hot leaf to the program's `main`, leaf first, as the sampler names
    /// them with `demangle = "simplified"`; a sample must carry one of these chains. `LIBC`
    /// stands for any one frame of libc (whose names depend on its debug symbols). When there
    /// are several, the first must hold at least [`MIN_FIRST_CHAIN`] of the samples, so the
    /// fixture keeps testing what it is for.
    chains: &'static [&'static [&'static str]],
    leaf: Leaf,
}

fn programs() -> Vec<Program> {
    vec![
        Program {
            name: "unwind_c",
            build: |dir| {
                compile(
                    "gcc",
                    &["-O2", "-fomit-frame-pointer"],
                    "tests/ebpf/unwind/chain.c",
                    dir,
                    "unwind_c",
                )
            },
            chains: &[&["chain_leaf", "chain_level2", "chain_level1", "main"]],
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_c_libc",
            build: |dir| {
                compile(
                    "gcc",
                    &["-O2", "-fomit-frame-pointer"],
                    "tests/ebpf/unwind/chain_libc.c",
                    dir,
                    "unwind_c_libc",
                )
            },
            // libc's own frames (memset, memcpy, random, qsort and their internals) come first;
            // their names depend on the libc build (Debian's ships without .symtab), so the
            // chain is checked from the first frame of the program below them.
            chains: &[&["libc_leaf", "libc_level2", "libc_level1", "main"]],
            leaf: Leaf::Libc {
                callback: "cmp_u32",
            },
        },
        Program {
            name: "unwind_cpp",
            build: |dir| {
                compile(
                    "g++",
                    &["-O2"],
                    "tests/ebpf/unwind/chain.cpp",
                    dir,
                    "unwind_cpp",
                )
            },
            // `simplified` drops template arguments and parameter lists.
            chains: &[&[
                "unwind::Spinner::spin",
                "unwind::level2",
                "unwind::level1",
                "main",
            ]],
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_rust",
            build: |dir| {
                compile(
                    &rustc(),
                    &["--crate-name", "chain", "-C", "opt-level=3"],
                    "tests/ebpf/unwind/chain.rs",
                    dir,
                    "unwind_rust",
                )
            },
            // Up to the user's `chain::main`: above it are std's lang_start frames (how many,
            // and their names, change between Rust releases) and then C's `main`; whether the
            // walk reaches the root is what the truncated share measures.
            chains: &[&[
                "chain::leaf",
                "chain::level2",
                "chain::level1",
                "chain::main",
            ]],
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_go",
            build: |dir| build_go("tests/go/unwind/main.go", dir, "unwind_go", false),
            chains: &[GO_CHAIN],
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_go_stripped",
            build: |dir| build_go("tests/go/unwind/main.go", dir, "unwind_go_stripped", true),
            chains: &[GO_CHAIN],
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_signal",
            build: |dir| {
                compile(
                    "gcc",
                    &["-O2", "-fomit-frame-pointer"],
                    "tests/ebpf/unwind/signal.c",
                    dir,
                    "unwind_signal",
                )
            },
            // In the SIGALRM handler, through the signal frame (libc's __restore_rt) into the
            // interrupted loop; or in the loop itself.
            chains: &[
                &["alarm_work", "on_alarm", LIBC, "spin_main", "main"],
                &["spin_main", "main"],
            ],
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_deep",
            build: |dir| {
                compile(
                    "gcc",
                    &["-O2", "-fomit-frame-pointer"],
                    "tests/ebpf/unwind/deep.c",
                    dir,
                    "unwind_deep",
                )
            },
            chains: deep_chains(),
            leaf: Leaf::Own,
        },
        Program {
            name: "unwind_vdso",
            build: |dir| {
                compile(
                    "gcc",
                    &["-O2", "-fomit-frame-pointer"],
                    "tests/ebpf/unwind/vdso.c",
                    dir,
                    "unwind_vdso",
                )
            },
            chains: &[&["vdso_level2", "vdso_level1", "main"]],
            leaf: Leaf::Vdso,
        },
    ]
}

/// deep.c's chain: its leaf under 151 calls of `deep` (DEPTH 150 down to 0) under `main`,
/// deeper than a kernel frame-pointer walk's 127 frames.
fn deep_chains() -> &'static [&'static [&'static str]] {
    static CHAINS: std::sync::OnceLock<Vec<&'static [&'static str]>> = std::sync::OnceLock::new();
    CHAINS.get_or_init(|| {
        let mut chain = vec!["deep_leaf"];
        chain.extend(std::iter::repeat_n("deep", 151));
        chain.push("main");
        vec![chain.leak()]
    })
}

/// Up to `main.main`; `runtime.main` and `runtime.goexit` above it are the truncated share's
/// business.
const GO_CHAIN: &[&str] = &[
    "main.unwindLeaf",
    "main.unwindMid",
    "main.unwindTop",
    "main.main",
];

/// The Go fixture only tests anything if its leaf is frameless, which the compiler decides:
/// its disassembly must neither move SP nor save BP.
fn assert_go_leaf_is_frameless(bin: &Path) {
    let out = Command::new("go")
        .args(["tool", "objdump", "-s", "^main.unwindLeaf$"])
        .arg(bin)
        .output()
        .expect("go tool objdump");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("TEXT main.unwindLeaf"),
        "go tool objdump: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Instruction lines read `  main.go:24\t0x464dc0\t\t31c9\t\t\tXORL CX, CX\t`: the
    // instruction is the fourth field. Any operand SP or BP means a frame (or a BP save).
    let frame_ops: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split('\t')
                .map(str::trim)
                .filter(|f| !f.is_empty())
                .nth(3)
                .is_some_and(|insn| {
                    insn.split(|c: char| !c.is_ascii_alphanumeric())
                        .any(|reg| reg == "SP" || reg == "BP")
                })
        })
        .collect();
    assert!(
        frame_ops.is_empty(),
        "main.unwindLeaf got a frame, so tests/go/unwind/main.go no longer tests a frameless \
         leaf: {frame_ops:#?}"
    );
}

fn config(addr: &str, dir: &Path, receiver: &str) -> String {
    format!(
        r#"
discovery.process "all" {{
  refresh_interval = "1s"
}}

discovery.relabel "unwind" {{
  targets = discovery.process.all.targets
  rule {{
    source_labels = ["__meta_process_exe"]
    regex         = "{dir}/unwind_.*"
    action        = "keep"
  }}
  rule {{
    source_labels = ["__meta_process_exe"]
    regex         = ".*/(unwind_.*)"
    target_label  = "service_name"
  }}
}}

pyroscope.ebpf "unwind" {{
  targets          = discovery.relabel.unwind.output
  forward_to       = [pyroscope.write.out.receiver]
  collect_interval = "{COLLECT}"
  demangle         = "simplified"
}}

pyroscope.write "out" {{
  endpoint {{
    url = "{receiver}"
  }}
}}
// {addr}
"#,
        dir = dir.display(),
    )
}

/// One program's samples, judged.
#[derive(Default)]
struct Verdict {
    profiles: usize,
    /// Sample count (value / period).
    samples: f64,
    /// Shares of the total value.
    chain: f64,
    /// Share carrying the first of the program's chains.
    first_chain: f64,
    truncated: f64,
    /// Share whose first user frame is in libc (reported for every program, checked for the
    /// libc one).
    in_libc: f64,
    /// The heaviest stacks that fail (lack the chain, or are truncated): share, frames.
    failures: Vec<(f64, Vec<String>)>,
}

fn is_libc(f: &Frame) -> bool {
    f.module.starts_with("libc.so") || f.module.starts_with("libc-")
}

fn is_vdso(f: &Frame) -> bool {
    f.module == "[vdso]"
}

/// Whether a stack (leaf first) holds `chain` of `p` as one contiguous run starting where `p`'s
/// own code starts.
fn has_chain(p: &Program, chain: &[&str], frames: &[Frame]) -> bool {
    let user = frames
        .iter()
        .skip_while(|f| f.module == KERNEL_MODULE)
        .collect::<Vec<_>>();
    let from = match p.leaf {
        Leaf::Own => 0,
        Leaf::Libc { callback } => user
            .iter()
            .position(|f| !(is_libc(f) || f.function == callback))
            .unwrap_or(user.len()),
        Leaf::Vdso => user
            .iter()
            .position(|f| !(is_libc(f) || is_vdso(f)))
            .unwrap_or(user.len()),
    };
    let rest = &user[from..];
    rest.len() >= chain.len()
        && rest
            .iter()
            .zip(chain)
            .all(|(f, want)| f.function == *want || (*want == LIBC && is_libc(f)))
}

fn judge(p: &Program, profiles: &[&Received]) -> Verdict {
    let mut v = Verdict {
        profiles: profiles.len(),
        ..Verdict::default()
    };
    let (mut total, mut chain, mut first, mut truncated, mut in_libc) =
        (0i64, 0i64, 0i64, 0i64, 0i64);
    let mut failing: HashMap<Vec<String>, i64> = HashMap::new();
    for r in profiles {
        let profile = decode(&r.raw);
        let period = profile.period.max(1);
        for (frames, value) in stacks(&profile) {
            total += value;
            v.samples += value as f64 / period as f64;
            let whole = p.chains.iter().any(|c| has_chain(p, c, &frames));
            if p.chains.first().is_some_and(|c| has_chain(p, c, &frames)) {
                first += value;
            }
            let cut = frames.iter().any(|f| f.function == TRUNCATED);
            if whole {
                chain += value;
            }
            if cut {
                truncated += value;
            }
            if frames
                .iter()
                .find(|f| f.module != KERNEL_MODULE)
                .is_some_and(|f| is_libc(f) || is_vdso(f))
            {
                in_libc += value;
            }
            if !whole || cut {
                let names = frames.into_iter().map(|f| f.function).collect();
                *failing.entry(names).or_default() += value;
            }
        }
    }
    let share = |x: i64| x as f64 / total.max(1) as f64;
    v.chain = share(chain);
    v.first_chain = share(first);
    v.truncated = share(truncated);
    v.in_libc = share(in_libc);
    let mut failing: Vec<(Vec<String>, i64)> = failing.into_iter().collect();
    failing.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v.failures = failing
        .into_iter()
        .take(3)
        .map(|(frames, value)| (share(value), frames))
        .collect();
    v
}

/// Profiles per service name.
fn by_service(received: &[Received]) -> HashMap<&str, Vec<&Received>> {
    let mut out: HashMap<&str, Vec<&Received>> = HashMap::new();
    for r in received {
        if let Some(service) = r.label("service_name") {
            out.entry(service).or_default().push(r);
        }
    }
    out
}

/// Sample count of some profiles.
fn sample_count(profiles: &[&Received]) -> f64 {
    profiles
        .iter()
        .map(|r| {
            let p = decode(&r.raw);
            let values: i64 = p.sample.iter().filter_map(|s| s.value.first()).sum();
            values as f64 / p.period.max(1) as f64
        })
        .sum()
}

/// A stack for printing, leaf first, with runs of one frame shown once with their count.
fn compact<S: AsRef<str>>(frames: &[S]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < frames.len() {
        let name = frames[i].as_ref();
        let run = frames[i..]
            .iter()
            .take_while(|f| f.as_ref() == name)
            .count();
        out.push(if run > 1 {
            format!("{name} x{run}")
        } else {
            name.to_string()
        });
        i += run;
    }
    out.join(" <- ")
}

fn table(programs: &[Program], verdicts: &[Verdict]) -> String {
    let mut out = format!(
        "{:<20} {:>8} {:>8} {:>12} {:>11} {:>9}\n",
        "binary", "profiles", "samples", "whole chain", "truncated", "in libc"
    );
    for (p, v) in programs.iter().zip(verdicts) {
        out.push_str(&format!(
            "{:<20} {:>8} {:>8.0} {:>11.1}% {:>10.1}% {:>8.1}%\n",
            p.name,
            v.profiles,
            v.samples,
            v.chain * 100.0,
            v.truncated * 100.0,
            v.in_libc * 100.0
        ));
        for (share, frames) in &v.failures {
            out.push_str(&format!(
                "    failing {:>5.1}%: {}\n",
                share * 100.0,
                compact(frames)
            ));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bpf_unwinds_programs_without_frame_pointers_to_main() {
    if !need_root("loading BPF") {
        return;
    }
    let rustc = rustc();
    for compiler in ["gcc", "g++", rustc.as_str()] {
        if !need_compiler(compiler) {
            return;
        }
    }
    if !have_go() {
        return;
    }
    let dir = open_dir();
    let programs = programs();
    let bins: Vec<PathBuf> = programs.iter().map(|p| (p.build)(dir.path())).collect();
    for bin in &bins {
        if bin.ends_with("unwind_go") {
            assert_go_leaf_is_frameless(bin);
        }
    }
    let receiver = PyroscopeReceiver::start().await;
    let procs: Vec<Proc> = bins.iter().map(|bin| spawn(&[], bin)).collect();
    let url = receiver.url();
    let scraper = Scraper::start(|addr| config(addr, dir.path(), &url)).await;

    // Wait until every program has INTERVALS profiles and MIN_SAMPLES samples (more intervals
    // on a loaded machine), or PATIENCE is up; then judge whatever arrived.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let received = receiver.received();
        let services = by_service(&received);
        let ready = programs.iter().all(|p| {
            services.get(p.name).is_some_and(|profiles| {
                profiles.len() >= INTERVALS && sample_count(profiles) >= MIN_SAMPLES
            })
        });
        if ready || Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    let info = scraper.component("pyroscope.ebpf.unwind").await;
    assert_eq!(
        info["debugInfo"]["mode"],
        "bpf",
        "{info:#}\n{}",
        scraper.logs()
    );
    let received = receiver.received();
    let services = by_service(&received);
    let verdicts: Vec<Verdict> = programs
        .iter()
        .map(|p| judge(p, services.get(p.name).map_or(&[][..], |v| &v[..])))
        .collect();
    drop(procs);
    eprintln!(
        "\nstacks leaf first; expected chains:\n{}\n{}",
        programs
            .iter()
            .map(|p| {
                let chains: Vec<String> = p.chains.iter().map(|c| compact(c)).collect();
                format!("    {:<20} {}", p.name, chains.join("\n    {:<20} or "))
            })
            .collect::<Vec<_>>()
            .join("\n"),
        table(&programs, &verdicts)
    );

    let mut failed = Vec::new();
    for (p, v) in programs.iter().zip(&verdicts) {
        if v.samples < MIN_SAMPLES {
            failed.push(format!(
                "{}: {:.0} samples in {} profiles, fewer than {MIN_SAMPLES}",
                p.name, v.samples, v.profiles
            ));
            continue;
        }
        if v.chain < MIN_CHAIN {
            failed.push(format!(
                "{}: {:.1}% of samples carry the whole chain, want >= {:.0}%",
                p.name,
                v.chain * 100.0,
                MIN_CHAIN * 100.0
            ));
        }
        if v.truncated >= MAX_TRUNCATED {
            failed.push(format!(
                "{}: {:.1}% of samples are truncated, want < {:.0}%",
                p.name,
                v.truncated * 100.0,
                MAX_TRUNCATED * 100.0
            ));
        }
        if p.chains.len() > 1 && v.first_chain < MIN_FIRST_CHAIN {
            failed.push(format!(
                "{}: only {:.1}% of samples carry its first chain, so the fixture no longer \
                 tests it (want >= {:.0}%)",
                p.name,
                v.first_chain * 100.0,
                MIN_FIRST_CHAIN * 100.0
            ));
        }
        if matches!(p.leaf, Leaf::Libc { .. } | Leaf::Vdso) && v.in_libc < MIN_IN_LIBC {
            failed.push(format!(
                "{}: only {:.1}% of samples are inside libc, so the fixture no longer tests \
                 unwinding out of libc (want >= {:.0}%)",
                p.name,
                v.in_libc * 100.0,
                MIN_IN_LIBC * 100.0
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "{}\n\n{}\nscraper log:\n{}",
        failed.join("\n"),
        table(&programs, &verdicts),
        scraper.logs()
    );
}
