use std::collections::HashSet;
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use super::*;

fn bpf_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("bpf")
}

/// The committed objects must be built from the committed sources: `bpf/build.sh` writes the
/// sources' sha256 next to each object, and an edit without a rebuild breaks this test.
#[test]
fn source_hashes_match_the_committed_objects() {
    let dir = bpf_dir();
    // (object, its sources in the order build.sh hashes them, the bytes compiled in)
    let objects: [(&str, &str, &[u8]); 2] = [
        (
            "profile",
            "scraper_bpf.h user_stack.h profile.bpf.c",
            OBJECT,
        ),
        (
            "offcpu",
            "scraper_bpf.h user_stack.h offcpu.bpf.c",
            crate::components::pyroscope::ebpf::offcpu::bpf::OBJECT,
        ),
    ];
    for (name, sources, embedded) in objects {
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("cat {sources} | sha256sum | cut -d' ' -f1"))
            .current_dir(&dir)
            .output()
            .expect("sha256sum runs");
        assert!(out.status.success(), "{out:?}");
        let actual = String::from_utf8_lossy(&out.stdout).trim().to_string();
        let stamp = std::fs::read_to_string(dir.join(format!("{name}.bpf.sha256"))).expect("stamp");
        assert_eq!(
            actual,
            stamp.trim(),
            "{sources} changed but bpf/{name}.bpf.o was not rebuilt: run bpf/build.sh {name}"
        );
        // The embedded object is the committed file.
        let on_disk = std::fs::read(dir.join(format!("{name}.bpf.o"))).expect("object");
        assert_eq!(on_disk, embedded, "{name}");
    }
}

#[test]
fn records_decode_and_frames_are_bounded() {
    let mut b = vec![0u8; RECORD_HEADER + 24];
    b[0..4].copy_from_slice(&42u32.to_ne_bytes());
    b[4..8].copy_from_slice(&43u32.to_ne_bytes());
    b[8..12].copy_from_slice(&2u32.to_ne_bytes());
    // A corrupt length is clamped to the array, never read past it.
    b[12..16].copy_from_slice(&1000u32.to_ne_bytes());
    b[16..20].copy_from_slice(b"spin");
    b[REGS_AT..REGS_AT + 8].copy_from_slice(&0x10u64.to_ne_bytes());
    b[REGS_AT + 8..REGS_AT + 16].copy_from_slice(&0x20u64.to_ne_bytes());
    b[REGS_AT + 16..REGS_AT + 24].copy_from_slice(&0x30u64.to_ne_bytes());
    // The stack length claims more than the record holds: cut to the 24 bytes there.
    b[STACK_LEN_AT..STACK_LEN_AT + 4].copy_from_slice(&4096u32.to_ne_bytes());
    b[FLAGS_AT..FLAGS_AT + 4].copy_from_slice(&RECORD_REGS.to_ne_bytes());
    b[USER_AT..USER_AT + 8].copy_from_slice(&0x1000u64.to_ne_bytes());
    b[USER_AT + 8..USER_AT + 16].copy_from_slice(&0x2000u64.to_ne_bytes());
    b[RECORD_HEADER] = 0xab;
    // Two Python frames; a corrupt count would be clamped to PY_MAX_FRAMES.
    b[PY_LEN_AT..PY_LEN_AT + 4].copy_from_slice(&2u32.to_ne_bytes());
    b[PY_FLAGS_AT..PY_FLAGS_AT + 4].copy_from_slice(&1u32.to_ne_bytes());
    for (i, v) in [0xc0de_u64, 0x1_0000_0042, 0xc1de, 0x42]
        .into_iter()
        .enumerate()
    {
        b[PY_AT + i * 8..PY_AT + i * 8 + 8].copy_from_slice(&v.to_ne_bytes());
    }
    let s = parse_record(&b).expect("decodes");
    assert_eq!(s.python.frames, [(0xc0de, 0x1_0000_0042), (0xc1de, 0x42)]);
    assert_eq!(s.python.flags, 1);
    assert_eq!((s.pid, s.tid), (42, 43));
    assert_eq!(s.user, [0x1000, 0x2000]);
    assert_eq!(s.kernel.len(), MAX_FRAMES);
    assert_eq!(&s.comm[..4], b"spin");
    assert_eq!(
        s.regs,
        Some(UserRegs {
            ip: 0x10,
            sp: 0x20,
            bp: 0x30
        })
    );
    assert_eq!(s.stack.len(), 24);
    assert_eq!(s.stack[0], 0xab);
    // Without the flag the registers are not trusted.
    b[FLAGS_AT..FLAGS_AT + 4].copy_from_slice(&0u32.to_ne_bytes());
    assert_eq!(parse_record(&b).expect("decodes").regs, None);
    assert!(parse_record(&b[..RECORD_HEADER - 1]).is_none());
}

#[test]
fn ring_is_a_power_of_two_sized_for_the_drain_period() {
    for (cpus, hz, ms, record) in [
        (1, 97, 200, RECORD_HEADER),
        (2, 97, 200, RECORD_HEADER + STACK_MAX as usize),
        (64, 97, 200, RECORD_HEADER + 16384),
        (512, 997, 1000, RECORD_HEADER),
        (1, 1, 0, RECORD_HEADER),
    ] {
        let size = ring_size(cpus, hz, ms, record);
        assert!(size.is_power_of_two(), "{size}");
        assert!((256 << 10..=64 << 20).contains(&size), "{size}");
        let per_period = cpus as u64 * hz * ms.max(1) / 1000;
        assert!(
            size as u64 >= (per_period * (record + RING_OVERHEAD) as u64).min(64 << 20),
            "{cpus} cpus {hz} Hz {ms} ms: {size}"
        );
    }
}

/// Whether a refused load must fail the test (CI runs as root and sets it).
pub(crate) fn bpf_required() -> bool {
    std::env::var("SCRAPER_REQUIRE_BPF").is_ok_and(|v| v == "1")
}

struct Busy(Child);

impl Drop for Busy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Loads and attaches the real program as root, samples a busy shell, and checks what the
/// ring delivers.
#[test]
fn samples_a_busy_process_through_the_ring() {
    let busy = Busy(
        Command::new("sh")
            .arg("-c")
            .arg("while :; do :; done")
            .spawn()
            .expect("spawn sh"),
    );
    let pid = busy.0.id();
    let mut sampler = match BpfSampler::load(Options {
        frequency: 97,
        kernel_frames: true,
        filter: true,
        drain_period_ms: 200,
        stack_bytes: 16 * 1024,
    }) {
        Ok(s) => s,
        Err(e) => {
            assert!(!bpf_required(), "SCRAPER_REQUIRE_BPF=1 but {e}");
            eprintln!(
                "skipped: BPF not permitted here (run as root or with CAP_BPF+CAP_PERFMON; SCRAPER_REQUIRE_BPF=1 makes this fatal): {e}"
            );
            return;
        }
    };
    sampler
        .set_filter(Some(&HashSet::from([pid])))
        .expect("filter");
    assert!(sampler.set_filter(None).is_err());
    let mut samples = Vec::new();
    for _ in 0..8 {
        std::thread::sleep(Duration::from_millis(200));
        sampler.drain(&mut |s| samples.push(s));
    }
    // 1.6 s at 97 Hz is ~155 ticks on an idle CPU; a loaded 2-core machine gives fewer.
    assert!(samples.len() >= 30, "only {} samples", samples.len());
    assert!(
        samples.iter().all(|s| s.pid == pid),
        "a non-target was sampled"
    );
    assert!(
        samples.iter().all(|s| !s.user.is_empty()),
        "empty user stack"
    );
    assert!(samples.iter().all(|s| s.comm.starts_with(b"sh")));
    // Every user-mode sample carries its registers and the top of its stack, which starts
    // at sp (so the copy is never empty: the page holding sp is resident).
    assert!(
        samples
            .iter()
            .all(|s| s.regs.is_some_and(|r| r.sp != 0 && r.ip != 0) && !s.stack.is_empty()),
        "a sample without registers or stack copy"
    );
    assert!(samples.iter().all(|s| s.stack.len() <= 16 * 1024));
    let stats = sampler.stats();
    assert!(stats.samples >= samples.len() as u64, "{stats:?}");
    assert_eq!(stats.ring_full, 0, "{stats:?}");

    // Removing the pid stops its sampling.
    sampler.set_filter(Some(&HashSet::new())).expect("filter");
    std::thread::sleep(Duration::from_millis(100));
    sampler.drain(&mut |_| {});
    std::thread::sleep(Duration::from_millis(400));
    let mut after = 0;
    sampler.drain(&mut |_| after += 1);
    assert_eq!(after, 0);
}
