//! End-to-end tests of the symbolizer on real programs: C and C++ built with the system
//! compilers, Go built with the system `go`, this test binary (Rust), the vDSO and the kernel.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use object::{Object, ObjectSymbol};

use super::elf::{self, ElfInfo};
use super::gopclntab::GoTable;
use super::maps::{self, Backing, MapsEntry};
use super::*;

/// Kills and reaps the child when the test ends, however it ends.
struct ChildGuard(Child);

impl ChildGuard {
    fn spawn(cmd: &mut Command) -> ChildGuard {
        ChildGuard(cmd.spawn().expect("spawn child"))
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }

    fn kill(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

fn opts(demangle: Demangle) -> Options {
    Options {
        demangle,
        kernel: false,
    }
}

fn tool_available(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Compiles `source` with `compiler` (gcc or g++) into `dir`, or skips with a reason.
fn compile(
    compiler: &str,
    dir: &Path,
    name: &str,
    ext: &str,
    source: &str,
    flags: &[&str],
) -> Option<PathBuf> {
    if !tool_available(compiler) {
        eprintln!("SKIPPED: {compiler} is not installed");
        return None;
    }
    let src = dir.join(format!("{name}.{ext}"));
    std::fs::write(&src, source).expect("write source");
    let out = dir.join(name);
    let status = Command::new(compiler)
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(&src)
        .status()
        .expect("run compiler");
    assert!(status.success(), "{compiler} failed on {}", src.display());
    Some(out)
}

/// Whether `go` can be used; panics instead of skipping when SCRAPER_REQUIRE_GO is set.
pub(super) fn go_available() -> bool {
    let required = std::env::var("SCRAPER_REQUIRE_GO").is_ok_and(|v| !v.is_empty() && v != "0");
    let ok = Command::new("go")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            !required,
            "SCRAPER_REQUIRE_GO is set but `go` cannot be run"
        );
        eprintln!("SKIPPED: `go` is not installed (set SCRAPER_REQUIRE_GO=1 to make this fatal)");
    }
    ok
}

/// Builds `dir/main.go` (GOPATH mode, no cgo) into `dir/out`.
pub(super) fn go_build(dir: &Path, out: &str, flags: &[&str]) -> PathBuf {
    let path = dir.join(out);
    let output = Command::new("go")
        .arg("build")
        .args(flags)
        .arg("-o")
        .arg(&path)
        .arg("main.go")
        .current_dir(dir)
        .env("GO111MODULE", "off")
        .env("GOCACHE", dir.join("gocache"))
        .env("GOPATH", dir.join("gopath"))
        .env("GOFLAGS", "")
        .env("CGO_ENABLED", "0")
        .output()
        .expect("run go build");
    assert!(
        output.status.success(),
        "go build {flags:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    path
}

/// Link-time address of a symbol in the file's symbol table.
fn symbol_vaddr(path: &Path, name: &str) -> u64 {
    let data = std::fs::read(path).expect("read binary");
    let file = object::read::File::parse(&*data).expect("parse binary");
    file.symbols()
        .find(|s| s.name() == Ok(name))
        .unwrap_or_else(|| panic!("{name} not in {}", path.display()))
        .address()
}

/// The run-time address of link-time `vaddr` of `binary` in process `pid`.
fn runtime_addr(pid: u32, binary: &Path, vaddr: u64) -> u64 {
    let info = elf::read_info(&std::fs::File::open(binary).expect("open binary")).expect("parse");
    let seg = info
        .loads
        .iter()
        .find(|l| vaddr >= l.vaddr && vaddr - l.vaddr < l.filesz)
        .expect("vaddr in a segment");
    let file_offset = vaddr - seg.vaddr + seg.offset;
    let want = binary.canonicalize().expect("canonical path");
    // The parent's spawn returns once exec has begun, before the new image is mapped.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut text = std::fs::read(format!("/proc/{pid}/maps")).expect("child maps");
    while Instant::now() < deadline && !maps::parse(&text).iter().any(|e| e.inode != 0) {
        std::thread::sleep(Duration::from_millis(5));
        text = std::fs::read(format!("/proc/{pid}/maps")).expect("child maps");
    }
    maps::parse(&text)
        .iter()
        .find(|e: &&MapsEntry| {
            matches!(&e.backing, Backing::File { path, .. } if *path == want)
                && file_offset >= e.offset
                && file_offset - e.offset < e.end - e.start
        })
        .map(|e| e.start + (file_offset - e.offset))
        .unwrap_or_else(|| {
            panic!(
                "{vaddr:#x} (offset {file_offset:#x}) of {} not mapped in {pid}:\n{}",
                want.display(),
                String::from_utf8_lossy(&text)
            )
        })
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .expect("file name")
        .to_string_lossy()
        .into_owned()
}

const C_PROGRAM: &str = r#"
#include <unistd.h>
volatile unsigned long sink;
__attribute__((noinline)) unsigned long hot_spin(unsigned long n) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) s += (i * i) ^ (s >> 3);
    return s;
}
__attribute__((noinline)) unsigned long cold_path(unsigned long x) { return x * 3 + 1; }
int main(void) {
    for (;;) {
        sink += hot_spin(10000);
        if (sink == 42) sink += cold_path(sink);
        usleep(10000);
    }
}
"#;

#[test]
fn c_child_resolves_and_survives_exit() {
    let dir = tempfile::tempdir().expect("temp dir");
    let flags = ["-O0", "-fno-omit-frame-pointer"];
    let Some(bin) = compile("gcc", dir.path(), "busy_c", "c", C_PROGRAM, &flags) else {
        return;
    };
    let hot = symbol_vaddr(&bin, "hot_spin");
    let main = symbol_vaddr(&bin, "main");
    let cold = symbol_vaddr(&bin, "cold_path");

    let mut child = ChildGuard::spawn(&mut Command::new(&bin));
    let pid = child.pid();
    let hot_rt = runtime_addr(pid, &bin, hot);
    let main_rt = runtime_addr(pid, &bin, main);
    let cold_rt = runtime_addr(pid, &bin, cold);

    let mut sym = Symbolizer::new(opts(Demangle::None));
    // Leaf inside hot_spin; a "return address" just past main's start resolves (addr-1) to main.
    let frames = sym.user(pid, &[hot_rt + 4, main_rt + 9]);
    let module = file_name(&bin);
    assert_eq!(&*frames[0].function, "hot_spin");
    assert_eq!(&*frames[0].module, module);
    assert_eq!(&*frames[1].function, "main");
    // A return address at a function's first byte belongs to the previous function.
    let frames = sym.user(pid, &[hot_rt, hot_rt]);
    assert_eq!(&*frames[0].function, "hot_spin");
    assert_ne!(&*frames[1].function, "hot_spin");

    child.kill();
    // Never looked up before, and the process is gone: the module's symbols must still serve.
    let frames = sym.user(pid, &[cold_rt + 2]);
    assert_eq!(&*frames[0].function, "cold_path");
    assert_eq!(&*frames[0].module, module);
    let stats = sym.stats();
    assert_eq!(stats.pids, 1);
    assert!(stats.modules >= 1);

    sym.retain_pids(&|p| p != pid);
    assert_eq!(sym.stats().pids, 0);
    let frames = sym.user(pid, &[cold_rt + 2]);
    assert_eq!(&*frames[0].function, UNKNOWN);
    assert_eq!(&*frames[0].module, UNKNOWN);
}

#[test]
fn deleted_executable_resolves_through_proc_exe() {
    let dir = tempfile::tempdir().expect("temp dir");
    let flags = ["-O0", "-fno-omit-frame-pointer"];
    let Some(bin) = compile("gcc", dir.path(), "doomed", "c", C_PROGRAM, &flags) else {
        return;
    };
    let hot = symbol_vaddr(&bin, "hot_spin");
    let child = ChildGuard::spawn(&mut Command::new(&bin));
    let pid = child.pid();
    let hot_rt = runtime_addr(pid, &bin, hot);
    std::fs::remove_file(&bin).expect("delete the running binary");

    let mut sym = Symbolizer::new(opts(Demangle::None));
    let frames = sym.user(pid, &[hot_rt + 4]);
    assert_eq!(&*frames[0].function, "hot_spin");
    assert_eq!(&*frames[0].module, "doomed");
}

const CPP_PROGRAM: &str = r#"
#include <unistd.h>
namespace app { namespace hot {
template <typename T> struct Worker {
    T state;
    T crunch(T x);
};
template <typename T> __attribute__((noinline)) T Worker<T>::crunch(T x) { state += x * 7; return state; }
template <typename T> __attribute__((noinline)) T twice(T x) { return x * 2; }
}}
volatile unsigned long sink;
int main() {
    app::hot::Worker<unsigned long> w{1};
    sink = w.crunch(3) + app::hot::twice<int>(2);
    pause();
}
"#;

#[test]
fn demangle_modes_on_cpp() {
    let dir = tempfile::tempdir().expect("temp dir");
    let flags = ["-O0", "-g", "-fno-omit-frame-pointer"];
    let Some(bin) = compile("g++", dir.path(), "busy_cpp", "cc", CPP_PROGRAM, &flags) else {
        return;
    };
    let crunch_mangled = "_ZN3app3hot6WorkerImE6crunchEm";
    let twice_mangled = "_ZN3app3hot5twiceIiEET_S2_";
    let crunch = symbol_vaddr(&bin, crunch_mangled);
    let twice = symbol_vaddr(&bin, twice_mangled);
    let child = ChildGuard::spawn(&mut Command::new(&bin));
    let pid = child.pid();
    let addrs = [
        runtime_addr(pid, &bin, crunch) + 4,
        runtime_addr(pid, &bin, twice) + 4,
    ];
    let cases: &[(Demangle, &str, &str)] = &[
        (Demangle::None, crunch_mangled, twice_mangled),
        (
            Demangle::Full,
            "app::hot::Worker<unsigned long>::crunch(unsigned long)",
            "int app::hot::twice<int>(int)",
        ),
        (
            Demangle::Templates,
            "app::hot::Worker<unsigned long>::crunch",
            "app::hot::twice<int>",
        ),
        (
            Demangle::Simplified,
            "app::hot::Worker::crunch",
            "app::hot::twice",
        ),
    ];
    for (mode, want_crunch, want_twice) in cases {
        let mut sym = Symbolizer::new(opts(*mode));
        // Both as leaves, so no addr-1 adjustment matters.
        let a = sym.user(pid, &addrs[..1]);
        let b = sym.user(pid, &addrs[1..]);
        assert_eq!(&*a[0].function, *want_crunch, "mode {mode}");
        assert_eq!(&*b[0].function, *want_twice, "mode {mode}");
        assert_eq!(&*a[0].module, "busy_cpp");
    }
}

pub trait Crunch {
    fn crunch(&self, x: u64) -> u64;
}

pub struct Lcg<T>(T);

impl<T: Copy + Into<u64>> Crunch for Lcg<T> {
    #[inline(never)]
    fn crunch(&self, x: u64) -> u64 {
        black_box(
            self.0
                .into()
                .wrapping_mul(6364136223846793005)
                .wrapping_add(x),
        )
    }
}

#[inline(never)]
fn generic_probe<T: Default>() -> T {
    black_box(T::default())
}

#[test]
fn demangle_modes_on_rust() {
    let pid = std::process::id();
    let crunch = <Lcg<u32> as Crunch>::crunch as fn(&Lcg<u32>, u64) -> u64 as usize as u64;
    let probe = generic_probe::<u64> as fn() -> u64 as usize as u64;
    assert_eq!(
        black_box(Lcg(3u32)).crunch(1),
        3u64.wrapping_mul(6364136223846793005) + 1
    );
    assert_eq!(generic_probe::<u64>(), 0);

    let raw = Symbolizer::new(opts(Demangle::None)).user(pid, &[crunch + 1, probe + 1]);
    for f in &raw {
        assert!(
            f.function.starts_with("_ZN") || f.function.starts_with("_R"),
            "mangled: {f:?}"
        );
    }
    let module = raw[0].module.clone();

    let path = "scraper::components::pyroscope::ebpf::symbolize::tests";
    for mode in [Demangle::Full, Demangle::Templates] {
        let f = Symbolizer::new(opts(mode)).user(pid, &[crunch + 1, probe + 1]);
        assert!(
            f[0].function.starts_with(&format!("<{path}::Lcg<"))
                && f[0]
                    .function
                    .ends_with(&format!(" as {path}::Crunch>::crunch")),
            "mode {mode}: {f:?}"
        );
        // Legacy mangling has no generic arguments; v0 has `::<u64>`.
        assert!(
            f[1].function.starts_with(&format!("{path}::generic_probe")),
            "mode {mode}: {f:?}"
        );
        assert!(!f[0].function.contains("::h"), "no hash: {f:?}");
        assert_eq!(f[0].module, module);
    }
    let f = Symbolizer::new(opts(Demangle::Simplified)).user(pid, &[crunch + 1, probe + 1]);
    assert_eq!(
        &*f[0].function,
        format!("<{path}::Lcg as {path}::Crunch>::crunch")
    );
    assert_eq!(&*f[1].function, format!("{path}::generic_probe"));
}

#[test]
fn unknowns_and_vdso() {
    let pid = std::process::id();
    let mut sym = Symbolizer::new(opts(Demangle::None));
    let unknown = Frame {
        function: Arc::from(UNKNOWN),
        module: Arc::from(UNKNOWN),
        source: None,
    };
    assert_eq!(
        sym.user(pid, &[0x10, 0]),
        vec![unknown.clone(), unknown.clone()]
    );
    assert_eq!(sym.user(u32::MAX - 7, &[0x1234]), vec![unknown.clone()]);
    assert!(sym.user(pid, &[]).is_empty());

    // Our own vDSO's clock_gettime, found from its dynamic symbols.
    let text = std::fs::read("/proc/self/maps").expect("own maps");
    let vdso = maps::parse(&text)
        .into_iter()
        .find(|e| matches!(&e.backing, Backing::Special(s) if s == "[vdso]"))
        .expect("vdso mapped");
    let mut image = vec![0u8; (vdso.end - vdso.start) as usize];
    std::os::unix::fs::FileExt::read_exact_at(
        &std::fs::File::open("/proc/self/mem").expect("own memory"),
        &mut image,
        vdso.start,
    )
    .expect("read vdso");
    let info: ElfInfo = elf::parse_info(&*image).expect("vdso is ELF");
    let file = object::read::File::parse(&*image).expect("vdso parses");
    let vaddr = file
        .dynamic_symbols()
        .find(|s| s.name() == Ok("clock_gettime"))
        .expect("clock_gettime in the vdso")
        .address();
    let seg = info
        .loads
        .iter()
        .find(|l| vaddr >= l.vaddr && vaddr - l.vaddr < l.filesz)
        .expect("in a segment");
    let addr = vdso.start + (vaddr - seg.vaddr + seg.offset);
    let frames = sym.user(pid, &[addr + 1]);
    assert_eq!(&*frames[0].function, "clock_gettime");
    assert_eq!(&*frames[0].module, "[vdso]");
}

#[test]
fn kernel_symbols() {
    let mut off = Symbolizer::new(opts(Demangle::None));
    assert!(off.kernel(&[0xffff_ffff_8100_0000]).is_empty());

    let mut sym = Symbolizer::new(Options {
        demangle: Demangle::None,
        kernel: true,
    });
    let text = match std::fs::read_to_string("/proc/kallsyms") {
        Ok(t) => t,
        Err(e) => {
            eprintln!("SKIPPED: cannot read /proc/kallsyms: {e}");
            return;
        }
    };
    if !kernel::kallsyms_has_addresses("/proc/kallsyms").unwrap_or(false) {
        eprintln!("SKIPPED: /proc/kallsyms shows zero addresses (needs CAP_SYSLOG)");
        let frames = sym.kernel(&[0xffff_ffff_8100_0000]);
        assert_eq!(&*frames[0].function, UNKNOWN);
        assert_eq!(&*frames[0].module, KERNEL_MODULE);
        return;
    }
    // A core-kernel text symbol alone at its address and followed by another, so both it and
    // the byte after its start are unambiguous.
    let mut entries: Vec<(u64, &str, &str)> = text
        .lines()
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let addr = u64::from_str_radix(it.next()?, 16).ok()?;
            let kind = it.next()?;
            let name = it.next()?;
            Some((addr, kind, name))
        })
        .collect();
    entries.sort_by_key(|e| e.0);
    let preferred = ["vfs_read", "do_syscall_64", "schedule", "ksys_read"];
    let unique = |i: usize| {
        let (a, k, _) = entries[i];
        (k == "T" || k == "t")
            && (i == 0 || entries[i - 1].0 != a)
            && entries.get(i + 1).is_some_and(|n| n.0 > a + 1)
    };
    let pick = preferred
        .iter()
        .find_map(|p| (0..entries.len()).find(|&i| entries[i].2 == *p && unique(i)))
        .or_else(|| (0..entries.len()).find(|&i| unique(i)))
        .expect("some unique kernel symbol");
    let (addr, _, name) = entries[pick];
    let start = Instant::now();
    let frames = sym.kernel(&[addr + 1, addr + 2]);
    eprintln!(
        "kernel: first lookup (parses kallsyms) took {:?}",
        start.elapsed()
    );
    assert_eq!(&*frames[0].function, name);
    assert_eq!(&*frames[1].function, name);
    assert_eq!(&*frames[0].module, KERNEL_MODULE);
    assert!(sym.stats().kernel_symbols);
}

const GO_PROGRAM: &str = r#"package main

import "fmt"

//go:noinline
func hotSpin(n int) int {
	s := 0
	for i := 0; i < n; i++ {
		s += (i * i) ^ (s >> 3)
	}
	return s
}

func main() {
	x := 0
	for {
		x += hotSpin(1 << 20)
		if x == 42 {
			fmt.Println(x)
		}
	}
}
"#;

#[test]
fn go_function_table_in_stripped_binaries() {
    if !go_available() {
        return;
    }
    let dir = tempfile::tempdir().expect("temp dir");
    std::fs::write(dir.path().join("main.go"), GO_PROGRAM).expect("write main.go");
    // (unstripped, stripped) pairs built the same way otherwise. PIE puts the table in
    // `.data.rel.ro.gopclntab`. (A zero textStart is covered by the synthetic tables in
    // gopclntab.rs: Go 1.19's internal linker writes the link address even for PIE.)
    let builds: &[(&str, &[&str], &[&str])] = &[
        ("exe", &[], &["-ldflags=-s -w"]),
        (
            "pie",
            &["-buildmode=pie"],
            &["-buildmode=pie", "-ldflags=-s -w"],
        ),
    ];
    for (kind, full_flags, stripped_flags) in builds {
        let full = go_build(dir.path(), &format!("busy_go_{kind}"), full_flags);
        let stripped = go_build(
            dir.path(),
            &format!("busy_go_{kind}_stripped"),
            stripped_flags,
        );
        let hot = symbol_vaddr(&full, "main.hotSpin");

        let stripped_data = std::fs::read(&stripped).expect("read stripped");
        let stripped_file = object::read::File::parse(&*stripped_data).expect("parse stripped");
        assert_eq!(
            stripped_file.symbols().count(),
            0,
            "{kind}: stripped has no symbols"
        );

        for bin in [&full, &stripped] {
            let file = std::fs::File::open(bin).expect("open");
            let info = elf::read_info(&file).expect("parse");
            let section = info.gopclntab.expect("Go function table present");
            let table = GoTable::load(&file, section, info.text_addr).expect("table loads");
            assert!(
                table.functions() > 100,
                "{kind}: {} functions",
                table.functions()
            );
            let cases: &[(u64, Option<&str>)] =
                &[(hot, Some("main.hotSpin")), (hot + 8, Some("main.hotSpin"))];
            for (addr, want) in cases {
                let got = table.lookup(&file, *addr).expect("lookup");
                assert_eq!(got.as_deref(), *want, "{kind} {}: {addr:#x}", bin.display());
            }
            let main = table
                .lookup(&file, symbol_vaddr(&full, "main.main") + 1)
                .expect("lookup");
            assert_eq!(main.as_deref(), Some("main.main"));
        }
    }

    // End to end: running stripped binaries, symbolized through their maps, then after exit.
    for kind in ["exe", "pie"] {
        let stripped = dir.path().join(format!("busy_go_{kind}_stripped"));
        let full = dir.path().join(format!("busy_go_{kind}"));
        let hot = symbol_vaddr(&full, "main.hotSpin");
        let main = symbol_vaddr(&full, "main.main");
        let mut child = ChildGuard::spawn(&mut Command::new(&stripped));
        let pid = child.pid();
        let hot_rt = runtime_addr(pid, &stripped, hot);
        let main_rt = runtime_addr(pid, &stripped, main);
        let mut sym = Symbolizer::new(opts(Demangle::Simplified));
        let frames = sym.user(pid, &[hot_rt + 3]);
        assert_eq!(&*frames[0].function, "main.hotSpin", "{kind}");
        assert_eq!(&*frames[0].module, file_name(&stripped));
        assert_eq!(sym.stats().go_modules, 1);
        child.kill();
        let frames = sym.user(pid, &[main_rt + 5]);
        assert_eq!(&*frames[0].function, "main.main", "{kind}");
    }
}

/// Not an assertion of speed: prints first-use and warm costs and the RSS growth of
/// symbolizing a system library, for the memory budget.
#[test]
fn measure_costs() {
    fn status_kb(field: &str) -> u64 {
        std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with(field))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    }
    let rss_kb = || (status_kb("RssAnon:"), status_kb("RssFile:"));
    let pid = std::process::id();
    let text = std::fs::read("/proc/self/maps").expect("own maps");
    let Some(libc) = maps::parse(&text).into_iter().find(|e| {
        matches!(&e.backing, Backing::File { path, .. } if path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("libc.so")))
    }) else {
        eprintln!("SKIPPED: no libc mapped");
        return;
    };
    let n = 2000u64;
    let step = ((libc.end - libc.start) / n).max(1);
    let addrs: Vec<u64> = (0..n).map(|i| libc.start + i * step + 1).collect();

    let mut sym = Symbolizer::new(opts(Demangle::Full));
    let rss0 = rss_kb();
    let t0 = Instant::now();
    let frames: Vec<Frame> = addrs.iter().flat_map(|&a| sym.user(pid, &[a])).collect();
    let cold = t0.elapsed();
    let t1 = Instant::now();
    for &a in &addrs {
        black_box(sym.user(pid, &[a]));
    }
    let warm = t1.elapsed();
    let resolved = frames.iter().filter(|f| &*f.function != UNKNOWN).count();
    let rss1 = rss_kb();
    eprintln!(
        "libc: {n} addresses, cold {cold:?} ({resolved} resolved), warm {warm:?}, RssAnon +{} kB, RssFile +{} kB, stats {:?}",
        rss1.0.saturating_sub(rss0.0),
        rss1.1.saturating_sub(rss0.1),
        sym.stats()
    );

    // This test binary: large, with uncompressed DWARF.
    let exe = maps::parse(&text)
        .into_iter()
        .find(|e| {
            let here = measure_costs as fn() as usize as u64;
            e.start <= here && here < e.end
        })
        .expect("own code mapped");
    let step = ((exe.end - exe.start) / n).max(1);
    let addrs: Vec<u64> = (0..n).map(|i| exe.start + i * step + 1).collect();
    let rss0 = rss_kb();
    let t0 = Instant::now();
    let frames: Vec<Frame> = addrs.iter().flat_map(|&a| sym.user(pid, &[a])).collect();
    let cold = t0.elapsed();
    let rss1 = rss_kb();
    let resolved = frames.iter().filter(|f| &*f.function != UNKNOWN).count();
    eprintln!(
        "own executable: {n} addresses, cold {cold:?} ({resolved} resolved), RssAnon +{} kB, RssFile +{} kB",
        rss1.0.saturating_sub(rss0.0),
        rss1.1.saturating_sub(rss0.1),
    );
    assert!(
        resolved * 2 > frames.len(),
        "most libc text resolves: {resolved}/{}",
        frames.len()
    );
    assert!(warm < cold.max(Duration::from_millis(1)) * 4);
}

#[test]
fn stats_serialize() {
    let sym = Symbolizer::new(Options::default());
    let v = serde_json::to_value(sym.stats()).expect("serializes");
    for key in [
        "pids",
        "modules",
        "go_modules",
        "cached_addresses",
        "maps_reads",
        "kernel_symbols",
    ] {
        assert!(v.get(key).is_some(), "{key} in {v}");
    }
}
