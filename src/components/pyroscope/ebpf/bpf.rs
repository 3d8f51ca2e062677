//! The BPF sampler: loads `bpf/profile.bpf.o` with aya, attaches it to the software cpu-clock
//! event on every online CPU, and drains the ring of stack records it writes.
//!
//! The object is built from `bpf/profile.bpf.c` by `bpf/build.sh` and committed, so cargo
//! builds need no clang; `bpf::tests::source_hashes_match_the_committed_objects` fails when the C sources
//! changed without a rebuild.

use std::collections::HashSet;

use aya::maps::{HashMap as BpfHashMap, MapData, PerCpuArray, RingBuf};
use aya::programs::PerfEvent;
use aya::programs::perf_event::{PerfEventConfig, PerfEventScope, SamplePolicy, SoftwareEvent};
use aya::{Ebpf, EbpfLoader};

use super::python::PyProc;
use super::sample::{PyStack, RawSample, Sampler, SamplerError, UserRegs};

/// The compiled program (see `bpf/build.sh`).
static OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("CARGO_MANIFEST_DIR"), "/bpf/profile.bpf.o"));

/// The running kernel's BTF, which CO-RE relocations are resolved against.
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";

/// `MAX_FRAMES` in profile.bpf.c.
const MAX_FRAMES: usize = 127;
/// `STACK_MAX` in profile.bpf.c: the most user stack one record carries.
pub const STACK_MAX: u32 = 32 * 1024;
/// Offsets in `struct record` (profile.bpf.c): four u32, comm, three registers, stack length
/// and flags, two frame arrays, then the stack copy.
const REGS_AT: usize = 32;
const STACK_LEN_AT: usize = 56;
const FLAGS_AT: usize = 60;
const USER_AT: usize = 64;
const KERNEL_AT: usize = USER_AT + MAX_FRAMES * 8;
/// The CPython walk: frame count and flags, then `PY_MAX_FRAMES` (code, instruction) pairs.
const PY_LEN_AT: usize = KERNEL_AT + MAX_FRAMES * 8;
const PY_FLAGS_AT: usize = PY_LEN_AT + 4;
const PY_AT: usize = PY_LEN_AT + 8;
/// `PY_MAX_FRAMES` in profile.bpf.c.
pub const PY_MAX_FRAMES: usize = 64;
/// The record up to its stack copy: what every record carries.
const RECORD_HEADER: usize = PY_AT + PY_MAX_FRAMES * 16;
/// `RECORD_REGS` in profile.bpf.c.
const RECORD_REGS: u32 = 1;
/// Ring records carry an 8-byte header in the kernel's ring buffer.
const RING_OVERHEAD: usize = 8;

/// Why the BPF sampler could not start. The message includes the whole error chain (aya's
/// top-level errors hide the errno, e.g. "failed to create map").
#[derive(Debug, thiserror::Error)]
pub enum BpfError {
    #[error("reading kernel BTF from /sys/kernel/btf/vmlinux: {0}")]
    Btf(String),
    #[error("loading the BPF object: {0}")]
    Load(String),
    #[error("the BPF object has no {0}")]
    Missing(&'static str),
    #[error("listing online CPUs: {0}")]
    Cpus(String),
    #[error("attaching to cpu-clock on CPU {cpu}: {message}")]
    Attach { cpu: u32, message: String },
}

/// A program's `targets` map (tgid -> 1) and the pids it holds, kept in step: both samplers
/// follow the same processes this way.
pub(super) struct TargetMap {
    map: BpfHashMap<MapData, u32, u8>,
    held: HashSet<u32>,
}

impl TargetMap {
    pub(super) fn new(map: BpfHashMap<MapData, u32, u8>) -> Self {
        TargetMap {
            map,
            held: HashSet::new(),
        }
    }

    /// Makes the map hold exactly `pids`; the error names the pid the kernel refused (the map
    /// is full, say), and the pids before it stay in.
    pub(super) fn sync(&mut self, pids: &HashSet<u32>) -> Result<(), String> {
        let gone: Vec<u32> = self.held.difference(pids).copied().collect();
        for pid in gone {
            // A missing key means it is already gone; nothing else can fail here that would
            // leave the map inconsistent with `held`.
            let _ = self.map.remove(&pid);
            self.held.remove(&pid);
        }
        for &pid in pids {
            if self.held.contains(&pid) {
                continue;
            }
            self.map
                .insert(pid, 1, 0)
                .map_err(|e| format!("adding pid {pid} to the target map: {}", chain(&e)))?;
            self.held.insert(pid);
        }
        Ok(())
    }
}

/// Takes the map `name` from a loaded object as its aya type, `missing` when the object has
/// none and `load` when it is not of that type: how both samplers (this one and
/// `offcpu::bpf`) take their maps.
pub(super) fn take_map<T, E>(
    ebpf: &mut Ebpf,
    name: &str,
    missing: E,
    load: impl Fn(String) -> E,
) -> Result<T, E>
where
    T: TryFrom<aya::maps::Map, Error = aya::maps::MapError>,
{
    let map = ebpf.take_map(name).ok_or(missing)?;
    T::try_from(map).map_err(|e| load(chain(&e)))
}

/// Renders an error with its sources, `outer: inner: errno`; shared with `offcpu::bpf`.
pub(super) fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut next = e.source();
    while let Some(inner) = next {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        next = inner.source();
    }
    s
}

/// How to load the program.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Samples per second per CPU.
    pub frequency: u64,
    /// Collect kernel stacks too.
    pub kernel_frames: bool,
    /// Sample only processes in the filter (`targets_only`); otherwise every process.
    pub filter: bool,
    /// How often the session drains the ring, in milliseconds: sizes the ring.
    pub drain_period_ms: u64,
    /// Bytes of user stack copied per sample for unwinding in user space (at most
    /// [`STACK_MAX`]); 0 keeps only the frame-pointer walk.
    pub stack_bytes: u32,
}

/// In-kernel counters (`enum stat` in profile.bpf.c), summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Records written to the ring.
    pub samples: u64,
    /// Ticks in processes that were not targets.
    pub filtered: u64,
    /// Samples lost because the ring was full.
    pub ring_full: u64,
    /// Ticks in the idle task.
    pub idle: u64,
    /// User stack copies cut short by an unreadable page (not resident, or the end of the
    /// stack's mapping).
    pub stack_faults: u64,
    /// CPython frame walks (samples of processes registered as Python).
    pub python_walks: u64,
    /// Walks that found no thread state for the sampled thread (a thread the interpreter does
    /// not know, or one in another pid namespace than its native_thread_id).
    pub python_no_thread: u64,
    /// Walks cut at `PY_MAX_FRAMES`.
    pub python_truncated: u64,
    /// Walks that met an unreadable address (wrong offsets, or memory being changed).
    pub python_faults: u64,
    /// Walks that met an activation of the interpreter loop being entered (3.11, 3.12): its
    /// frames were not set yet, so that activation shows none.
    pub python_entering: u64,
}

/// A loaded and attached sampler. Dropping it detaches the program and frees its maps.
pub struct BpfSampler {
    ring: RingBuf<MapData>,
    targets: TargetMap,
    py_procs: BpfHashMap<MapData, u32, PyProc>,
    stats: PerCpuArray<MapData, u64>,
    filter: bool,
    cpus: usize,
    /// Owns the program and its perf links; must outlive the maps' use.
    _ebpf: Ebpf,
}

impl BpfSampler {
    /// Loads, verifies and attaches the program on every online CPU.
    pub fn load(opts: Options) -> Result<Self, BpfError> {
        // EbpfLoader::new() parses the kernel BTF itself (a ~25 MB transient parse of the 5 MB
        // /sys/kernel/btf/vmlinux) but silently carries on without it, which would turn the
        // CO-RE read into garbage: check it is there first. Parsing our own copy for `.btf()`
        // would double the peak memory.
        if let Err(e) = std::fs::metadata(KERNEL_BTF) {
            return Err(BpfError::Btf(e.to_string()));
        }
        let cpus =
            aya::util::online_cpus().map_err(|(what, e)| BpfError::Cpus(format!("{what}: {e}")))?;
        let stack_bytes = opts.stack_bytes.min(STACK_MAX);
        let ring_bytes = ring_size(
            cpus.len(),
            opts.frequency,
            opts.drain_period_ms,
            RECORD_HEADER + stack_bytes as usize,
        );
        // The scratch array is indexed by CPU id, which can exceed the online count.
        let possible = aya::util::nr_cpus()
            .map_err(|(what, e)| BpfError::Cpus(format!("{what}: {e}")))?
            .max(1) as u32;
        let filter = u8::from(opts.filter);
        let kernel = u8::from(opts.kernel_frames);
        let mut ebpf = EbpfLoader::new()
            .override_global("filter_targets", &filter, true)
            .override_global("kernel_frames", &kernel, true)
            .override_global("stack_bytes", &stack_bytes, true)
            .map_max_entries("records", ring_bytes)
            .map_max_entries("scratch", possible)
            .load(OBJECT)
            .map_err(|e| BpfError::Load(chain(&e)))?;
        let program: &mut PerfEvent = ebpf
            .program_mut("sample_cpu")
            .ok_or(BpfError::Missing("program sample_cpu"))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| BpfError::Load(chain(&e)))?;
        program.load().map_err(|e| BpfError::Load(chain(&e)))?;
        for &cpu in &cpus {
            program
                .attach(
                    PerfEventConfig::Software(SoftwareEvent::CpuClock),
                    PerfEventScope::AllProcessesOneCpu { cpu },
                    SamplePolicy::Frequency(opts.frequency),
                    false,
                )
                .map_err(|e| BpfError::Attach {
                    cpu,
                    message: chain(&e),
                })?;
        }
        let ring = take_map(
            &mut ebpf,
            "records",
            BpfError::Missing("map records"),
            BpfError::Load,
        )?;
        let targets = take_map(
            &mut ebpf,
            "targets",
            BpfError::Missing("map targets"),
            BpfError::Load,
        )?;
        let py_procs = take_map(
            &mut ebpf,
            "py_procs",
            BpfError::Missing("map py_procs"),
            BpfError::Load,
        )?;
        let stats = take_map(
            &mut ebpf,
            "stats",
            BpfError::Missing("map stats"),
            BpfError::Load,
        )?;
        tracing::info!(
            cpus = cpus.len(),
            frequency = opts.frequency,
            ring_bytes,
            filter = opts.filter,
            stack_bytes,
            "BPF sampler attached"
        );
        Ok(BpfSampler {
            ring,
            targets: TargetMap::new(targets),
            py_procs,
            stats,
            filter: opts.filter,
            cpus: cpus.len(),
            _ebpf: ebpf,
        })
    }

    /// The in-kernel counters.
    pub fn stats(&self) -> Stats {
        let read = |i: u32| -> u64 {
            self.stats
                .get(&i, 0)
                .map(|per_cpu| per_cpu.iter().sum())
                .unwrap_or(0)
        };
        Stats {
            samples: read(0),
            filtered: read(1),
            ring_full: read(2),
            idle: read(3),
            stack_faults: read(4),
            python_walks: read(5),
            python_no_thread: read(6),
            python_truncated: read(7),
            python_faults: read(8),
            python_entering: read(9),
        }
    }

    /// CPUs the program is attached to.
    pub fn cpus(&self) -> usize {
        self.cpus
    }
}

/// Ring bytes for `cpus` CPUs sampled at `frequency` and drained every `drain_ms`, with
/// records of at most `record` bytes: four periods' worth of records, so a late drain loses
/// nothing, as a power of two (the kernel requires it) between 256 KiB and 64 MiB.
fn ring_size(cpus: usize, frequency: u64, drain_ms: u64, record: usize) -> u32 {
    let per_period = (cpus as u64)
        .saturating_mul(frequency)
        .saturating_mul(drain_ms.max(1))
        / 1000
        + 1;
    let bytes = per_period
        .saturating_mul(4)
        .saturating_mul((record + RING_OVERHEAD) as u64);
    bytes.clamp(256 << 10, 64 << 20).next_power_of_two() as u32
}

impl Sampler for BpfSampler {
    fn set_filter(&mut self, pids: Option<&HashSet<u32>>) -> Result<(), SamplerError> {
        let Some(pids) = pids else {
            return if self.filter {
                Err(SamplerError::Unsupported(
                    "the BPF program was loaded to sample target processes only".into(),
                ))
            } else {
                Ok(())
            };
        };
        if !self.filter {
            return Ok(());
        }
        self.targets
            .sync(pids)
            .map_err(|e| SamplerError::Unsupported(format!("the BPF sampler: {e}")))
    }

    fn set_python(&mut self, pid: u32, proc: Option<&PyProc>) -> Result<(), SamplerError> {
        let result = match proc {
            Some(p) => self.py_procs.insert(pid, *p, 0),
            // Already gone is fine: the process may never have been registered.
            None => {
                let _ = self.py_procs.remove(&pid);
                Ok(())
            }
        };
        result.map_err(|e| {
            SamplerError::Unsupported(format!(
                "adding pid {pid} to the BPF Python map: {}",
                chain(&e)
            ))
        })
    }

    fn drain(&mut self, each: &mut dyn FnMut(RawSample)) {
        while let Some(item) = self.ring.next() {
            if let Some(sample) = parse_record(&item) {
                each(sample);
            }
        }
    }
}

/// A native-endian u32 of a ring record at `at` (the caller checked the length); shared with
/// the off-CPU records' decoder.
pub(super) fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_ne_bytes(w)
}

pub(super) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[at..at + 8]);
    u64::from_ne_bytes(w)
}

/// A record's frame array at `at`, its length clamped to `MAX_FRAMES` (both programs' bound).
pub(super) fn frames(b: &[u8], at: usize, len: u32) -> Vec<u64> {
    let len = (len as usize).min(MAX_FRAMES);
    (0..len).map(|i| u64_at(b, at + i * 8)).collect()
}

/// The CPython frames of a record (its length clamped to the array).
fn python(b: &[u8]) -> PyStack {
    let len = (u32_at(b, PY_LEN_AT) as usize).min(PY_MAX_FRAMES);
    PyStack {
        frames: (0..len)
            .map(|i| (u64_at(b, PY_AT + i * 16), u64_at(b, PY_AT + i * 16 + 8)))
            .collect(),
        flags: u32_at(b, PY_FLAGS_AT),
    }
}

/// Decodes one `struct record`; `None` for a record shorter than its header (a
/// program/loader mismatch, which the stamp test should have caught). A stack length past
/// the record's end is cut to what is there.
fn parse_record(b: &[u8]) -> Option<RawSample> {
    if b.len() < RECORD_HEADER {
        return None;
    }
    let mut comm = [0u8; 16];
    comm.copy_from_slice(&b[16..32]);
    let regs = (u32_at(b, FLAGS_AT) & RECORD_REGS != 0).then(|| UserRegs {
        ip: u64_at(b, REGS_AT),
        sp: u64_at(b, REGS_AT + 8),
        bp: u64_at(b, REGS_AT + 16),
    });
    let stack_len = (u32_at(b, STACK_LEN_AT) as usize).min(b.len() - RECORD_HEADER);
    Some(RawSample {
        pid: u32_at(b, 0),
        tid: u32_at(b, 4),
        comm,
        user: frames(b, USER_AT, u32_at(b, 8)),
        kernel: frames(b, KERNEL_AT, u32_at(b, 12)),
        regs,
        stack: b[RECORD_HEADER..RECORD_HEADER + stack_len].to_vec(),
        python: python(b),
    })
}

#[cfg(test)]
mod tests;
