//! Loads `bpf/offcpu.bpf.o` with aya: one program on the `sched_switch` raw tracepoint that
//! writes a STACK record (the same stacks as the CPU sampler's) when it times a thread's
//! switch-out, and an END record with the nanoseconds off CPU when that thread runs again
//! after a long enough block (a DROP record after a shorter one, which frees the waiting
//! stacks). [`super::pair`] joins them.
//!
//! The object is built by `bpf/build.sh` and committed (`bpf::tests::source_hashes_match_the_committed_objects`
//! fails when its sources changed without a rebuild).

use std::collections::HashSet;

use aya::maps::{MapData, PerCpuArray, RingBuf};
use aya::programs::RawTracePoint;
use aya::{Ebpf, EbpfLoader};

use super::super::bpf::{TargetMap, chain, frames, take_map, u32_at, u64_at};
use super::super::sample::{RawSample, UserRegs};

/// The compiled program (see `bpf/build.sh`).
pub(in crate::components::pyroscope::ebpf) static OBJECT: &[u8] =
    aya::include_bytes_aligned!(concat!(env!("CARGO_MANIFEST_DIR"), "/bpf/offcpu.bpf.o"));

const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
/// `MAX_FRAMES` in offcpu.bpf.c.
const MAX_FRAMES: usize = 127;
/// `STACK_MAX` in bpf/user_stack.h.
pub const STACK_MAX: u32 = 32 * 1024;
/// `KIND_*` in offcpu.bpf.c: every record starts with its kind.
const KIND_STACK: u32 = 1;
const KIND_END: u32 = 2;
const KIND_DROP: u32 = 3;
/// Offsets in `struct record` (offcpu.bpf.c).
const PID_AT: usize = 4;
const TID_AT: usize = 8;
const USER_LEN_AT: usize = 12;
const KERNEL_LEN_AT: usize = 16;
const STACK_LEN_AT: usize = 20;
const FLAGS_AT: usize = 24;
const COMM_AT: usize = 32;
const REGS_AT: usize = 48;
const SWITCHED_OUT_AT: usize = 72;
const USER_AT: usize = 80;
const KERNEL_AT: usize = USER_AT + MAX_FRAMES * 8;
const RECORD_HEADER: usize = KERNEL_AT + MAX_FRAMES * 8;
const RECORD_REGS: u32 = 1;
/// `struct end`: kind, tid, switch-out time, nanoseconds off CPU.
const END_LEN: usize = 24;
/// The ring: 8 MiB holds ~240 STACK records with whole stack copies, so a drain every
/// 200 ms keeps up with ~1,200 chosen switch-outs a second before records are lost (and
/// counted); `off_cpu_threshold` is the knob for busier targets.
const RING_BYTES: u32 = 8 << 20;

/// Why the off-CPU sampler could not start.
#[derive(Debug, thiserror::Error)]
pub enum OffCpuError {
    #[error("reading kernel BTF from /sys/kernel/btf/vmlinux: {0}")]
    Btf(String),
    #[error("loading the off-CPU BPF object: {0}")]
    Load(String),
    #[error("the off-CPU BPF object has no {0}")]
    Missing(&'static str),
    #[error("attaching {what}: {message}")]
    Attach { what: String, message: String },
    #[error("listing CPUs: {0}")]
    Cpus(String),
}

/// How to load the program.
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Follow only processes in the filter (`targets_only`).
    pub filter: bool,
    pub kernel_frames: bool,
    /// Bytes of user stack copied per record (at most [`STACK_MAX`]).
    pub stack_bytes: u32,
    /// `off_cpu_threshold` in (0, 1]: the probability that a switch-out is timed.
    pub probability: f64,
    /// Blocks shorter than this are dropped in the kernel.
    pub min_block_ns: u64,
}

/// The threshold the program compares a random u32 with: Alloy's `threshold * u32::MAX`.
pub fn threshold(probability: f64) -> u32 {
    (probability.clamp(0.0, 1.0) * f64::from(u32::MAX)) as u32
}

/// In-kernel counters (`enum stat` in offcpu.bpf.c), summed over CPUs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Stats {
    /// Blocks reported (END records written).
    pub blocks: u64,
    /// Switch-outs of followed threads.
    pub switches: u64,
    /// Switch-outs chosen (with probability `off_cpu_threshold`): stacks taken and timed.
    pub chosen: u64,
    /// Chosen blocks shorter than `off_cpu_min_block`, dropped (DROP records).
    pub short: u64,
    /// Records lost because the ring was full.
    pub ring_full: u64,
    /// User stack copies cut short by an unreadable page.
    pub stack_faults: u64,
    /// Switch-out times that could not be stored.
    pub times_full: u64,
    /// Switch-outs of exiting threads, never chosen (their last one has no switch-in).
    pub exiting: u64,
}

/// One ring record.
#[derive(Debug, PartialEq, Eq)]
pub enum Record {
    /// The stacks of a thread whose switch-out was chosen, taken as it left the CPU.
    Stack {
        switched_out: u64,
        sample: RawSample,
    },
    /// That thread ran again after `off_ns`, at least `off_cpu_min_block`.
    End {
        tid: u32,
        switched_out: u64,
        off_ns: u64,
    },
    /// That thread ran again after a block shorter than `off_cpu_min_block`: its stacks go.
    Drop { tid: u32, switched_out: u64 },
}

/// A loaded and attached off-CPU sampler; dropping it detaches the programs.
pub struct OffCpuSampler {
    ring: RingBuf<MapData>,
    targets: TargetMap,
    stats: PerCpuArray<MapData, u64>,
    filter: bool,
    _ebpf: Ebpf,
}

impl OffCpuSampler {
    /// Loads, verifies and attaches both programs.
    pub fn load(opts: Options) -> Result<Self, OffCpuError> {
        if let Err(e) = std::fs::metadata(KERNEL_BTF) {
            return Err(OffCpuError::Btf(e.to_string()));
        }
        let possible = aya::util::nr_cpus()
            .map_err(|(what, e)| OffCpuError::Cpus(format!("{what}: {e}")))?
            .max(1) as u32;
        let filter = u8::from(opts.filter);
        let kernel = u8::from(opts.kernel_frames);
        let stack_bytes = opts.stack_bytes.min(STACK_MAX);
        let threshold = threshold(opts.probability);
        let min_block_ns = opts.min_block_ns;
        let mut ebpf = EbpfLoader::new()
            .override_global("filter_targets", &filter, true)
            .override_global("kernel_frames", &kernel, true)
            .override_global("stack_bytes", &stack_bytes, true)
            .override_global("threshold", &threshold, true)
            .override_global("min_block_ns", &min_block_ns, true)
            .map_max_entries("records", RING_BYTES)
            .map_max_entries("scratch", possible)
            .load(OBJECT)
            .map_err(|e| OffCpuError::Load(chain(&e)))?;
        // A raw tracepoint is attached by name: no tracefs needed.
        let tp: &mut RawTracePoint = ebpf
            .program_mut("offcpu_sched_switch")
            .ok_or(OffCpuError::Missing("program offcpu_sched_switch"))?
            .try_into()
            .map_err(|e: aya::programs::ProgramError| OffCpuError::Load(chain(&e)))?;
        tp.load().map_err(|e| OffCpuError::Load(chain(&e)))?;
        tp.attach("sched_switch").map_err(|e| OffCpuError::Attach {
            what: "the sched_switch raw tracepoint".into(),
            message: chain(&e),
        })?;
        let ring = take_map(
            &mut ebpf,
            "records",
            OffCpuError::Missing("map records"),
            OffCpuError::Load,
        )?;
        let targets = take_map(
            &mut ebpf,
            "targets",
            OffCpuError::Missing("map targets"),
            OffCpuError::Load,
        )?;
        let stats = take_map(
            &mut ebpf,
            "stats",
            OffCpuError::Missing("map stats"),
            OffCpuError::Load,
        )?;
        tracing::info!(
            probability = opts.probability,
            min_block_ns,
            filter = opts.filter,
            "off-CPU sampler attached"
        );
        Ok(OffCpuSampler {
            ring,
            targets: TargetMap::new(targets),
            stats,
            filter: opts.filter,
            _ebpf: ebpf,
        })
    }

    pub fn stats(&self) -> Stats {
        let read = |i: u32| -> u64 {
            self.stats
                .get(&i, 0)
                .map(|per_cpu| per_cpu.iter().sum())
                .unwrap_or(0)
        };
        Stats {
            blocks: read(0),
            switches: read(1),
            chosen: read(2),
            short: read(3),
            ring_full: read(4),
            stack_faults: read(5),
            times_full: read(6),
            exiting: read(7),
        }
    }

    /// Follows these processes (`None`: every process, which needs a program loaded without
    /// the filter).
    pub fn set_filter(&mut self, pids: Option<&HashSet<u32>>) -> Result<(), String> {
        let Some(pids) = pids else {
            return if self.filter {
                Err("the off-CPU program was loaded to follow target processes only".into())
            } else {
                Ok(())
            };
        };
        if !self.filter {
            return Ok(());
        }
        self.targets
            .sync(pids)
            .map_err(|e| format!("the off-CPU program: {e}"))
    }

    /// Hands every record since the last call to `each`.
    pub fn drain(&mut self, each: &mut dyn FnMut(Record)) {
        while let Some(item) = self.ring.next() {
            if let Some(record) = parse_record(&item) {
                each(record);
            }
        }
    }
}

/// Decodes one ring record; `None` for one shorter than its kind's header or of an unknown
/// kind (a program/loader mismatch, which the stamp test should have caught).
fn parse_record(b: &[u8]) -> Option<Record> {
    if b.len() < 4 {
        return None;
    }
    match u32_at(b, 0) {
        KIND_END if b.len() >= END_LEN => Some(Record::End {
            tid: u32_at(b, 4),
            switched_out: u64_at(b, 8),
            off_ns: u64_at(b, 16),
        }),
        KIND_DROP if b.len() >= END_LEN => Some(Record::Drop {
            tid: u32_at(b, 4),
            switched_out: u64_at(b, 8),
        }),
        KIND_STACK if b.len() >= RECORD_HEADER => {
            let mut comm = [0u8; 16];
            comm.copy_from_slice(&b[COMM_AT..COMM_AT + 16]);
            let regs = (u32_at(b, FLAGS_AT) & RECORD_REGS != 0).then(|| UserRegs {
                ip: u64_at(b, REGS_AT),
                sp: u64_at(b, REGS_AT + 8),
                bp: u64_at(b, REGS_AT + 16),
            });
            let stack_len = (u32_at(b, STACK_LEN_AT) as usize).min(b.len() - RECORD_HEADER);
            Some(Record::Stack {
                switched_out: u64_at(b, SWITCHED_OUT_AT),
                sample: RawSample {
                    pid: u32_at(b, PID_AT),
                    tid: u32_at(b, TID_AT),
                    comm,
                    user: frames(b, USER_AT, u32_at(b, USER_LEN_AT)),
                    kernel: frames(b, KERNEL_AT, u32_at(b, KERNEL_LEN_AT)),
                    regs,
                    stack: b[RECORD_HEADER..RECORD_HEADER + stack_len].to_vec(),
                    // The off-CPU program walks no Python frames: blocked Python threads show
                    // the interpreter's native frames.
                    python: Default::default(),
                },
            })
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_and_end_records_decode() {
        let mut b = vec![0u8; RECORD_HEADER + 16];
        b[0..4].copy_from_slice(&KIND_STACK.to_ne_bytes());
        b[PID_AT..PID_AT + 4].copy_from_slice(&42u32.to_ne_bytes());
        b[TID_AT..TID_AT + 4].copy_from_slice(&43u32.to_ne_bytes());
        b[USER_LEN_AT..USER_LEN_AT + 4].copy_from_slice(&2u32.to_ne_bytes());
        // Past MAX_FRAMES: cut.
        b[KERNEL_LEN_AT..KERNEL_LEN_AT + 4].copy_from_slice(&500u32.to_ne_bytes());
        // Longer than what was sent: cut to it.
        b[STACK_LEN_AT..STACK_LEN_AT + 4].copy_from_slice(&64u32.to_ne_bytes());
        b[FLAGS_AT..FLAGS_AT + 4].copy_from_slice(&RECORD_REGS.to_ne_bytes());
        b[COMM_AT..COMM_AT + 5].copy_from_slice(b"sleep");
        b[REGS_AT..REGS_AT + 8].copy_from_slice(&0x1000u64.to_ne_bytes());
        b[REGS_AT + 8..REGS_AT + 16].copy_from_slice(&0x7ff0u64.to_ne_bytes());
        b[SWITCHED_OUT_AT..SWITCHED_OUT_AT + 8].copy_from_slice(&777u64.to_ne_bytes());
        b[USER_AT..USER_AT + 8].copy_from_slice(&0x401000u64.to_ne_bytes());
        b[USER_AT + 8..USER_AT + 16].copy_from_slice(&0x401100u64.to_ne_bytes());
        let Some(Record::Stack {
            switched_out,
            sample: s,
        }) = parse_record(&b)
        else {
            panic!("a stack record");
        };
        assert_eq!(switched_out, 777);
        assert_eq!((s.pid, s.tid), (42, 43));
        assert_eq!(&s.comm[..6], b"sleep\0");
        assert_eq!(s.user, [0x401000, 0x401100]);
        assert_eq!(s.kernel.len(), MAX_FRAMES);
        assert_eq!(s.regs.map(|r| (r.ip, r.sp)), Some((0x1000, 0x7ff0)));
        assert_eq!(s.stack.len(), 16);
        assert!(parse_record(&b[..RECORD_HEADER - 1]).is_none());

        let mut e = vec![0u8; END_LEN];
        e[0..4].copy_from_slice(&KIND_END.to_ne_bytes());
        e[4..8].copy_from_slice(&43u32.to_ne_bytes());
        e[8..16].copy_from_slice(&777u64.to_ne_bytes());
        e[16..24].copy_from_slice(&50_000_123u64.to_ne_bytes());
        assert_eq!(
            parse_record(&e),
            Some(Record::End {
                tid: 43,
                switched_out: 777,
                off_ns: 50_000_123
            })
        );
        assert!(parse_record(&e[..END_LEN - 1]).is_none());
        e[0..4].copy_from_slice(&KIND_DROP.to_ne_bytes());
        assert_eq!(
            parse_record(&e),
            Some(Record::Drop {
                tid: 43,
                switched_out: 777
            })
        );
        e[0..4].copy_from_slice(&9u32.to_ne_bytes());
        assert!(parse_record(&e).is_none(), "unknown kind");
    }

    /// A process (one thread) that blocks a few times and exits: every chosen switch-out of it
    /// is followed by its END (or DROP), and its last one, in do_task_dead, is never chosen (it
    /// has no switch-in: its STACK record would wait for a reuse of the thread id).
    #[test]
    fn an_exiting_thread_leaves_no_stack_without_an_end_as_root() {
        // SAFETY: geteuid has no preconditions and cannot fail.
        if unsafe { libc::geteuid() } != 0 {
            eprintln!("skipping: loading the off-CPU program needs root");
            return;
        }
        let mut sampler = OffCpuSampler::load(Options {
            filter: true,
            kernel_frames: false,
            stack_bytes: 0,
            probability: 1.0,
            min_block_ns: 0,
        })
        .expect("load the off-CPU program");
        // A child process, not a thread of this one: the filter follows a whole process, and
        // this test binary's other threads (tests run in parallel) would fill the ring. The
        // child waits for a line before it blocks three times and exits, so that it is
        // followed from before its first chosen switch-out.
        let mut child = match std::process::Command::new("sh")
            .args(["-c", "read x; sleep 0.005; sleep 0.005; sleep 0.005"])
            .stdin(std::process::Stdio::piped())
            .spawn()
        {
            Ok(c) => c,
            Err(e) => {
                eprintln!("skipping: no sh to run: {e}");
                return;
            }
        };
        let tid = child.id();
        sampler
            .set_filter(Some(&HashSet::from([tid])))
            .expect("follow the child");
        if let Some(mut stdin) = child.stdin.take() {
            use std::io::Write as _;
            stdin.write_all(b"go\n").expect("write to the child");
        }
        assert!(child.wait().expect("wait for the child").success());
        // The exited process's last switch-out has happened once wait returned; a pause lets
        // its records reach the ring.
        std::thread::sleep(std::time::Duration::from_millis(50));
        let mut stacks = Vec::new();
        let mut ends = Vec::new();
        sampler.drain(&mut |r| match r {
            Record::Stack {
                switched_out,
                sample,
            } if sample.tid == tid => stacks.push(switched_out),
            Record::End {
                tid: t,
                switched_out,
                ..
            }
            | Record::Drop {
                tid: t,
                switched_out,
            } if t == tid => ends.push(switched_out),
            _ => {}
        });
        assert!(
            stacks.len() >= 3,
            "the child's waits were chosen: {stacks:?}"
        );
        assert_eq!(stacks, ends, "every chosen switch-out of the worker ended");
        assert!(sampler.stats().exiting >= 1, "{:?}", sampler.stats());
    }

    #[test]
    fn thresholds_are_alloys_probability_times_u32_max() {
        assert_eq!(threshold(1.0), u32::MAX);
        assert_eq!(threshold(0.0), 0);
        assert_eq!(threshold(0.5), u32::MAX / 2);
        assert_eq!(threshold(7.0), u32::MAX);
    }
}
