//! CPU profile of our own process, in the same shape as Go's
//! `/debug/pprof/profile?seconds=N`: gzip-compressed `perftools.profiles`
//! with sample types `samples/count` and `cpu/nanoseconds`.
//!
//! Sampling is done by the `pprof` crate (SIGPROF + unwinding); we encode the
//! result ourselves with the project's own `profile.proto` types, so the crate
//! is used without its prost/protobuf codec features (which would pull in a
//! second, older prost).

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use flate2::Compression;
use flate2::write::GzEncoder;
use prost::Message as _;

use super::proto::{Function, Line, Location, Profile, Sample, ValueType};

/// Sampling rate. Go's runtime samples CPU at 100 Hz; matching it keeps our
/// profiles comparable with the Go targets we scrape and keeps overhead low.
pub const FREQUENCY_HZ: i32 = 100;

/// Shortest accepted capture.
pub const MIN_SECONDS: u64 = 1;

/// Longest accepted capture: bounds how long the process-wide profiler (and
/// the HTTP request waiting for it) can be held by one caller.
pub const MAX_SECONDS: u64 = 300;

/// Shared libraries whose frames are not sampled. Unwinding from a signal
/// that interrupted libc/libgcc/pthread code can deadlock inside
/// `_Unwind_Backtrace`, and vdso unwind info is wrong on some distributions
/// (both per the pprof crate's documentation).
const BLOCKLIST: [&str; 4] = ["libc", "libgcc", "pthread", "vdso"];

/// Why [`capture`] produced no profile.
#[derive(Debug, thiserror::Error)]
pub enum SelfProfileError {
    /// Another capture is running. The text mirrors Go's runtime error so the
    /// HTTP handler can answer like net/http/pprof does (500, "Could not
    /// enable CPU profiling: cpu profiling already in use").
    #[error("cpu profiling already in use")]
    InUse,
    /// `seconds` outside `MIN_SECONDS..=MAX_SECONDS`.
    #[error("profile duration must be between {MIN_SECONDS} and {MAX_SECONDS} seconds, got {0}")]
    InvalidDuration(u64),
    /// The pprof crate failed to start or to collect the samples.
    #[error("cpu profiler: {0}")]
    Profiler(#[source] ::pprof::Error),
    /// gzip compression failed (writing to memory; not expected in practice).
    #[error("compressing profile: {0}")]
    Compress(#[source] std::io::Error),
    /// The blocking profiler task panicked or was cancelled at shutdown.
    #[error("profiler task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

impl From<::pprof::Error> for SelfProfileError {
    fn from(err: ::pprof::Error) -> Self {
        match err {
            // The crate's profiler is process-global: if something else in
            // the process started it, report it the same way as our own lock.
            ::pprof::Error::Running => SelfProfileError::InUse,
            other => SelfProfileError::Profiler(other),
        }
    }
}

/// Samples this process's CPU usage for `seconds` and returns the profile as
/// gzip-compressed protobuf, ready to serve as `/debug/pprof/profile`.
///
/// Only one capture can run at a time (the profiler is process-wide, driven
/// by SIGPROF); a concurrent call fails immediately with
/// [`SelfProfileError::InUse`]. The wait happens on the tokio timer and the
/// slow parts (starting the profiler, symbolizing) run on the blocking pool,
/// so runtime worker threads are never blocked. Dropping the returned future
/// during the wait stops the profiler.
pub async fn capture(seconds: u64) -> Result<Vec<u8>, SelfProfileError> {
    if !(MIN_SECONDS..=MAX_SECONDS).contains(&seconds) {
        return Err(SelfProfileError::InvalidDuration(seconds));
    }
    // Taken before the first await, so of two calls polled one after the
    // other the second always sees the first one's claim.
    let busy = BusyGuard::acquire()?;

    let session = tokio::task::spawn_blocking(move || Session::start(busy)).await??;
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    tokio::task::spawn_blocking(move || session.finish()).await?
}

/// Set while a capture holds the profiler.
static BUSY: AtomicBool = AtomicBool::new(false);

/// Claim on [`BUSY`]; released on drop, including on cancellation or panic.
struct BusyGuard(());

impl BusyGuard {
    fn acquire() -> Result<Self, SelfProfileError> {
        BUSY.compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .map(|_| BusyGuard(()))
            .map_err(|_| SelfProfileError::InUse)
    }
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        BUSY.store(false, Ordering::Release);
    }
}

/// A running profiler plus our claim on it. Field order matters: fields drop
/// in declaration order, so the profiler is stopped before the claim is
/// released and a new capture can never find the crate's profiler running.
struct Session {
    profiler: ::pprof::ProfilerGuard<'static>,
    _busy: BusyGuard,
}

impl Session {
    /// Blocking: the first start resolves a backtrace (loads debug info) and
    /// the blocklist walks the loaded shared libraries.
    fn start(busy: BusyGuard) -> Result<Self, SelfProfileError> {
        let profiler = ::pprof::ProfilerGuardBuilder::default()
            .frequency(FREQUENCY_HZ)
            .blocklist(&BLOCKLIST)
            .build()?;
        Ok(Session {
            profiler,
            _busy: busy,
        })
    }

    /// Blocking: symbolizes every sampled stack, then encodes and compresses.
    fn finish(self) -> Result<Vec<u8>, SelfProfileError> {
        let report = self.profiler.report().build()?;
        // The samples are now copied out: stop SIGPROF and release the claim
        // before encoding, so the next capture can start and the encoding
        // does not keep taking signals it has no use for.
        drop(self);

        let timing = &report.timing;
        let meta = ProfileMeta {
            frequency_hz: timing.frequency,
            start: timing.start_time,
            duration: timing.duration,
        };
        let profile = build_profile(
            report.data.iter().map(|(frames, count)| (frames, *count)),
            &meta,
        );
        gzip(&profile.encode_to_vec())
    }
}

/// Header data of a capture, separate from the pprof crate's `ReportTiming`
/// (which cannot be named or built outside that crate) so the encoder can be
/// tested with synthetic stacks.
struct ProfileMeta {
    frequency_hz: i32,
    start: SystemTime,
    duration: Duration,
}

/// Interns strings for `Profile.string_table`; index 0 is always "".
struct StringTable {
    strings: Vec<String>,
    index: HashMap<String, i64>,
}

impl StringTable {
    fn new() -> Self {
        let mut table = StringTable {
            strings: Vec::new(),
            index: HashMap::new(),
        };
        table.intern("");
        table
    }

    fn intern(&mut self, s: &str) -> i64 {
        if let Some(&i) = self.index.get(s) {
            return i;
        }
        // A profile has far fewer than i64::MAX strings; saturating keeps
        // this total without an unwrap.
        let i = i64::try_from(self.strings.len()).unwrap_or(i64::MAX);
        self.strings.push(s.to_owned());
        self.index.insert(s.to_owned(), i);
        i
    }
}

/// Builds the pprof message from aggregated stacks (`frames` leaf first, each
/// frame's symbols innermost inlined function first, as the pprof crate
/// resolves them) and their sample counts.
fn build_profile<'a>(
    stacks: impl Iterator<Item = (&'a ::pprof::Frames, isize)>,
    meta: &ProfileMeta,
) -> Profile {
    let frequency = if meta.frequency_hz > 0 {
        meta.frequency_hz
    } else {
        FREQUENCY_HZ
    };
    let period = 1_000_000_000 / i64::from(frequency);

    let mut strings = StringTable::new();
    let samples_count = ValueType {
        r#type: strings.intern("samples"),
        unit: strings.intern("count"),
    };
    let cpu_nanos = ValueType {
        r#type: strings.intern("cpu"),
        unit: strings.intern("nanoseconds"),
    };

    // Dedup keys: a function is (name, system name, file) as in pprof's own
    // merge; a location is its exact list of (function, line) pairs, since
    // the pprof crate does not hand out instruction addresses.
    let mut functions: Vec<Function> = Vec::new();
    let mut function_ids: HashMap<(i64, i64, i64), u64> = HashMap::new();
    let mut locations: Vec<Location> = Vec::new();
    let mut location_ids: HashMap<Vec<(u64, i64)>, u64> = HashMap::new();
    let mut samples = Vec::new();

    for (stack, count) in stacks {
        let frames = without_profiler_frames(&stack.frames);
        let mut location_id = Vec::with_capacity(frames.len());
        for frame in frames {
            let mut lines = Vec::with_capacity(frame.len());
            for symbol in frame {
                // Demangled by the pprof crate; for Rust it prints the
                // alternate form, which drops the legacy `::h<hash>` suffix
                // that changes with every build and would otherwise split one
                // function into several names across versions in Pyroscope.
                let name = strings.intern(&symbol.name());
                let system_name = match &symbol.name {
                    Some(raw) => strings.intern(&String::from_utf8_lossy(raw)),
                    None => 0,
                };
                let filename = match &symbol.filename {
                    Some(path) => strings.intern(&path.to_string_lossy()),
                    None => 0,
                };
                let next_id = next_id(functions.len());
                let function_id = *function_ids
                    .entry((name, system_name, filename))
                    .or_insert_with(|| {
                        functions.push(Function {
                            id: next_id,
                            name,
                            system_name,
                            filename,
                            // Not known from the symbolizer; 0 means unset.
                            start_line: 0,
                        });
                        next_id
                    });
                lines.push(Line {
                    function_id,
                    line: symbol.lineno.map(i64::from).unwrap_or(0),
                    column: 0,
                });
            }
            if lines.is_empty() {
                continue;
            }
            let key: Vec<(u64, i64)> = lines.iter().map(|l| (l.function_id, l.line)).collect();
            let next_id = next_id(locations.len());
            let id = *location_ids.entry(key).or_insert_with(|| {
                locations.push(Location {
                    id: next_id,
                    // No mapping: we only have resolved symbols, not
                    // addresses, so there is nothing for pprof to re-symbolize.
                    mapping_id: 0,
                    address: 0,
                    line: lines,
                    is_folded: false,
                });
                next_id
            });
            location_id.push(id);
        }
        if location_id.is_empty() {
            continue;
        }
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        samples.push(Sample {
            location_id,
            value: vec![count, count.saturating_mul(period)],
            // No thread-name label: Pyroscope promotes string sample labels
            // to series labels, and unnamed threads would label by thread id,
            // giving unbounded series cardinality. Go's CPU profiles carry no
            // such label either.
            label: Vec::new(),
        });
    }

    let time_nanos = meta
        .start
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|d| i64::try_from(d.as_nanos()).ok())
        .unwrap_or(0);
    let duration_nanos = i64::try_from(meta.duration.as_nanos()).unwrap_or(i64::MAX);
    let default_sample_type = cpu_nanos.r#type;

    Profile {
        sample_type: vec![samples_count, cpu_nanos],
        sample: samples,
        mapping: Vec::new(),
        location: locations,
        function: functions,
        string_table: strings.strings,
        drop_frames: 0,
        keep_frames: 0,
        time_nanos,
        duration_nanos,
        period_type: Some(cpu_nanos),
        period,
        comment: Vec::new(),
        default_sample_type,
        doc_url: 0,
    }
}

/// Drops the sampler's own frames from the leaf end of a stack.
///
/// The pprof crate unwinds from inside its SIGPROF handler and removes only
/// the handler frame and the signal trampoline; in unoptimized builds the
/// unwinder (`backtrace::...`, `<pprof::backtrace::...>::trace`) stays as
/// separate leaf frames and would show up as the hottest code. (When they are
/// inlined into the handler the crate already removes them.) Only a leaf
/// prefix is dropped, so application frames are never affected except the
/// rare sample taken while the application itself is inside `backtrace::`
/// leaf code, which is then attributed to its caller.
fn without_profiler_frames(frames: &[Vec<::pprof::Symbol>]) -> &[Vec<::pprof::Symbol>] {
    let internal = frames
        .iter()
        .take_while(|frame| {
            !frame.is_empty()
                && frame.iter().all(|symbol| {
                    let name = symbol.name();
                    name.starts_with("backtrace::")
                        || name.starts_with("pprof::")
                        || name.starts_with("<pprof::")
                })
        })
        .count();
    frames.get(internal..).unwrap_or_default()
}

/// Ids are 1-based table positions (0 is reserved for "none" in pprof).
fn next_id(len: usize) -> u64 {
    u64::try_from(len).unwrap_or(u64::MAX).saturating_add(1)
}

fn gzip(bytes: &[u8]) -> Result<Vec<u8>, SelfProfileError> {
    let mut encoder = GzEncoder::new(Vec::with_capacity(bytes.len() / 2), Compression::default());
    encoder
        .write_all(bytes)
        .map_err(SelfProfileError::Compress)?;
    encoder.finish().map_err(SelfProfileError::Compress)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::hint::black_box;
    use std::io::Read as _;
    use std::path::PathBuf;
    use std::process::Command;
    use std::sync::Arc;

    use flate2::read::GzDecoder;

    use super::*;

    /// The profiler is process-global and tests run on parallel threads:
    /// captures in different tests must not overlap or they would see
    /// `InUse` from each other.
    static CAPTURE_LOCK: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

    fn decode(gz: &[u8]) -> Profile {
        let mut raw = Vec::new();
        GzDecoder::new(gz)
            .read_to_end(&mut raw)
            .expect("capture output is gzip");
        Profile::decode(raw.as_slice()).expect("capture output is a Profile")
    }

    fn string(p: &Profile, i: i64) -> &str {
        let i = usize::try_from(i).expect("string index is non-negative");
        p.string_table.get(i).expect("string index in range")
    }

    /// The structural checks pprof's `CheckValid` and Pyroscope's validation
    /// apply (spec §4.4, §5.2).
    fn assert_valid(p: &Profile) {
        assert_eq!(p.string_table.first().map(String::as_str), Some(""));
        let types: Vec<(&str, &str)> = p
            .sample_type
            .iter()
            .map(|t| (string(p, t.r#type), string(p, t.unit)))
            .collect();
        assert_eq!(types, [("samples", "count"), ("cpu", "nanoseconds")]);
        let period_type = p.period_type.expect("period_type set");
        assert_eq!(
            (string(p, period_type.r#type), string(p, period_type.unit)),
            ("cpu", "nanoseconds")
        );
        assert_eq!(p.period, 1_000_000_000 / i64::from(FREQUENCY_HZ));
        assert_eq!(string(p, p.default_sample_type), "cpu");

        let function_ids: HashSet<u64> = p.function.iter().map(|f| f.id).collect();
        assert_eq!(function_ids.len(), p.function.len(), "function ids unique");
        assert!(!function_ids.contains(&0));
        for f in &p.function {
            string(p, f.name);
            string(p, f.system_name);
            string(p, f.filename);
        }
        let location_ids: HashSet<u64> = p.location.iter().map(|l| l.id).collect();
        assert_eq!(location_ids.len(), p.location.len(), "location ids unique");
        assert!(!location_ids.contains(&0));
        for l in &p.location {
            assert!(!l.line.is_empty(), "location {} has lines", l.id);
            for line in &l.line {
                assert!(function_ids.contains(&line.function_id));
            }
        }
        for s in &p.sample {
            assert_eq!(s.value.len(), p.sample_type.len());
            assert_eq!(s.value[1], s.value[0] * p.period);
            assert!(s.value[0] > 0);
            assert!(!s.location_id.is_empty());
            for id in &s.location_id {
                assert!(location_ids.contains(id), "sample refers to location {id}");
            }
        }
    }

    /// Function names along each sample, leaf first (inlined frames first).
    fn stacks(p: &Profile) -> Vec<Vec<String>> {
        let functions: HashMap<u64, &Function> = p.function.iter().map(|f| (f.id, f)).collect();
        let locations: HashMap<u64, &Location> = p.location.iter().map(|l| (l.id, l)).collect();
        p.sample
            .iter()
            .map(|s| {
                s.location_id
                    .iter()
                    .flat_map(|id| &locations[id].line)
                    .map(|line| string(p, functions[&line.function_id].name).to_owned())
                    .collect()
            })
            .collect()
    }

    #[inline(never)]
    fn burn_cpu(stop: &AtomicBool) -> u64 {
        let mut x = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for i in 0..10_000u64 {
                x = black_box(x.wrapping_mul(6364136223846793005).wrapping_add(i));
            }
        }
        x
    }

    /// Runs `burn_cpu` on its own thread until the returned flag is set.
    fn spawn_burner() -> (Arc<AtomicBool>, std::thread::JoinHandle<u64>) {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("cpu-burner".into())
            .spawn(move || burn_cpu(&flag))
            .expect("spawn burner thread");
        (stop, handle)
    }

    async fn capture_while_burning(seconds: u64) -> Vec<u8> {
        let (stop, burner) = spawn_burner();
        let result = capture(seconds).await;
        stop.store(true, Ordering::Relaxed);
        burner.join().expect("burner thread");
        result.expect("capture succeeds")
    }

    #[tokio::test]
    async fn capture_samples_own_cpu() {
        let _lock = CAPTURE_LOCK.lock().await;
        let gz = capture_while_burning(1).await;
        assert_eq!(gz.get(..2), Some(&[0x1f, 0x8b][..]), "gzip magic");
        let p = decode(&gz);
        assert_valid(&p);
        assert!(!p.sample.is_empty(), "at least one sample");
        assert!(p.time_nanos > 0);
        assert!(
            p.duration_nanos >= 1_000_000_000,
            "duration {}",
            p.duration_nanos
        );
        let stacks = stacks(&p);
        for s in &stacks {
            let leaf = s.first().map(String::as_str).unwrap_or_default();
            assert!(
                !leaf.starts_with("backtrace::") && !leaf.contains("pprof::backtrace"),
                "profiler frame left at the leaf: {s:?}"
            );
        }
        // Symbolization and demangling work: the burner shows up by its
        // Rust path, without the legacy symbol hash.
        assert!(
            stacks
                .iter()
                .flatten()
                .any(|f| f.ends_with("self_profile::tests::burn_cpu")),
            "burn_cpu not among sampled functions: {:?}",
            &stacks[..stacks.len().min(3)]
        );
    }

    #[tokio::test]
    async fn concurrent_capture_is_rejected() {
        let _lock = CAPTURE_LOCK.lock().await;
        // join! polls the first future first, so it claims the profiler and
        // the second one must fail straight away.
        let (first, second) = tokio::join!(capture(1), capture(1));
        assert!(first.is_ok(), "first capture: {first:?}");
        let err = second.expect_err("second capture must fail");
        assert!(matches!(err, SelfProfileError::InUse), "{err:?}");
        assert_eq!(err.to_string(), "cpu profiling already in use");
        // The claim is released afterwards.
        assert!(BusyGuard::acquire().is_ok());
    }

    #[tokio::test]
    async fn out_of_range_seconds_are_rejected() {
        for seconds in [0, MAX_SECONDS + 1] {
            let err = capture(seconds).await.expect_err("invalid duration");
            assert!(
                matches!(err, SelfProfileError::InvalidDuration(s) if s == seconds),
                "{err:?}"
            );
        }
    }

    fn symbol(name: &str, file: Option<&str>, line: Option<u32>) -> ::pprof::Symbol {
        ::pprof::Symbol {
            name: Some(name.as_bytes().to_vec()),
            addr: None,
            lineno: line,
            filename: file.map(PathBuf::from),
        }
    }

    fn frames(frames: Vec<Vec<::pprof::Symbol>>) -> ::pprof::Frames {
        ::pprof::Frames {
            frames,
            thread_name: "worker".into(),
            thread_id: 1,
            sample_timestamp: UNIX_EPOCH,
        }
    }

    #[test]
    fn encoder_dedups_and_keeps_inline_order() {
        // Rust legacy mangling of `app::leaf`, `app::inlined`, `app::main`.
        let leaf = "_ZN3app4leaf17h0123456789abcdefE";
        let inlined = "_ZN3app7inlined17hfedcba9876543210E";
        let main = "_ZN3app4main17h0011223344556677E";
        let stack_a = frames(vec![
            vec![symbol(leaf, Some("src/app.rs"), Some(10))],
            // One frame holding an inlined call: callee first, then caller.
            vec![
                symbol(inlined, Some("src/app.rs"), Some(20)),
                symbol(main, Some("src/main.rs"), Some(5)),
            ],
        ]);
        let stack_b = frames(vec![
            vec![symbol(leaf, Some("src/app.rs"), Some(11))],
            vec![
                symbol(inlined, Some("src/app.rs"), Some(20)),
                symbol(main, Some("src/main.rs"), Some(5)),
            ],
        ]);
        // A frame without symbol name or file still gets a function.
        let stack_c = frames(vec![vec![::pprof::Symbol {
            name: None,
            addr: None,
            lineno: None,
            filename: None,
        }]]);
        let meta = ProfileMeta {
            frequency_hz: 100,
            start: UNIX_EPOCH + Duration::from_secs(7),
            duration: Duration::from_millis(1500),
        };
        let p = build_profile(
            [(&stack_a, 3), (&stack_b, 2), (&stack_c, 1)].into_iter(),
            &meta,
        );
        assert_valid(&p);
        assert_eq!(p.time_nanos, 7_000_000_000);
        assert_eq!(p.duration_nanos, 1_500_000_000);
        // leaf, (inlined+main), leaf@11, unknown.
        assert_eq!(p.location.len(), 4);
        // leaf, inlined, main, unknown: leaf is one function at two lines.
        assert_eq!(p.function.len(), 4);
        assert_eq!(p.sample[0].location_id[1], p.sample[1].location_id[1]);
        assert_eq!(
            stacks(&p),
            [
                vec!["app::leaf", "app::inlined", "app::main"],
                vec!["app::leaf", "app::inlined", "app::main"],
                vec!["Unknown"],
            ]
        );
        assert_eq!(p.sample[0].value, [3, 30_000_000]);
        let f = &p.function[0];
        assert_eq!(string(&p, f.system_name), leaf);
        assert_eq!(string(&p, f.filename), "src/app.rs");
        let unknown = &p.function[3];
        assert_eq!((unknown.system_name, unknown.filename), (0, 0));
        // Round trip through the wire format.
        let gz = gzip(&p.encode_to_vec()).expect("gzip");
        assert_eq!(decode(&gz), p);
    }

    #[test]
    fn unwinder_frames_are_dropped_from_the_leaf_only() {
        let stack = frames(vec![
            vec![symbol(
                "_ZN9backtrace9backtrace9libunwind5trace17h0123456789abcdefE",
                None,
                None,
            )],
            vec![symbol(
                "_ZN81_$LT$pprof..backtrace..backtrace_rs..Trace$u20$as$u20$pprof..backtrace..Trace$GT$5trace17h0123456789abcdefE",
                None,
                None,
            )],
            vec![symbol("_ZN3app4work17h0123456789abcdefE", None, None)],
            // Not a leaf prefix any more: kept.
            vec![symbol(
                "_ZN9backtrace7capture17h0123456789abcdefE",
                None,
                None,
            )],
        ]);
        let meta = ProfileMeta {
            frequency_hz: 100,
            start: UNIX_EPOCH,
            duration: Duration::from_secs(1),
        };
        let p = build_profile([(&stack, 1)].into_iter(), &meta);
        assert_valid(&p);
        assert_eq!(stacks(&p), [vec!["app::work", "backtrace::capture"]]);
    }

    /// Validates a real capture with Go's own parser, the reference reader
    /// Pyroscope and `go tool pprof` users rely on.
    #[tokio::test]
    async fn go_tool_pprof_reads_capture() {
        let go_available = Command::new("go")
            .arg("version")
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if !go_available {
            eprintln!("skipped: `go` is not installed, cannot run `go tool pprof -raw`");
            return;
        }
        let _lock = CAPTURE_LOCK.lock().await;
        let gz = capture_while_burning(1).await;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("cpu.pb.gz");
        std::fs::write(&path, &gz).expect("write profile");
        let out = Command::new("go")
            .args(["tool", "pprof", "-raw"])
            .arg(&path)
            .output()
            .expect("run go tool pprof");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "go tool pprof failed: {stderr}");
        assert!(
            stdout.contains("samples/count cpu/nanoseconds"),
            "unexpected -raw output:\n{stdout}"
        );
        assert!(stdout.contains("burn_cpu"), "burn_cpu missing:\n{stdout}");
    }
}
