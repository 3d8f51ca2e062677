//! The arguments of a `pyroscope.ebpf` block: every argument Alloy accepts (spec §6.1), so that
//! Alloy configs load unchanged, with what we do with each.
//!
//! | argument | here |
//! |---|---|
//! | `targets`, `forward_to`, `collect_interval`, `targets_only` | as Alloy |
//! | `sample_rate` | as Alloy, but the default is 97 Hz (Alloy: 19): our sampler is cheap enough (spec ebpf-notes §8), and 19 Hz gives too few samples per 15 s interval for a useful per-process profile |
//! | `demangle`, `kernel_frames`, `comm`, `pid_label` | as Alloy |
//! | `off_cpu_threshold` | as Alloy: the probability (0 to 1) that a thread's switch-out is timed; > 0 adds one `offcpu` profile per process (`offcpu`/`nanoseconds`, values scaled by 1 / probability to estimate the real time; Alloy sends the sampled time unscaled; docs/EBPF.md, "Off-CPU"). Needs the BPF sampler |
//! | `off_cpu_min_block` | **ours**, not Alloy's: blocks shorter than this duration are not reported (default `0s`: every chosen block is reported, as Alloy does; `1ms` leaves out preemptions and short waits). Only used when `off_cpu_threshold > 0` |
//! | `python_enabled` | default true: CPython 3.11, 3.12 and 3.13 frames are walked at sample time (BPF sampler only) and spliced into the native stack where the interpreter runs them; other versions are reported (docs/EBPF.md, "Python") |
//! | `perl_enabled`, `php_enabled`, `hotspot_enabled`, `ruby_enabled`, `v8_enabled`, `dotnet_enabled` | accepted; interpreter unwinding is not supported, so interpreted frames show as the interpreter's native frames |
//! | `go_enabled` | accepted; Go is always symbolized (from `.gopclntab`, stripped binaries included) |
//! | `bpf_fs_root`, `obi_process_context_enabled`, `load_probe`, `probe_links`, `verbose_mode`, `lazy_mode`, `no_kernel_version_check`, `symb_cache_path`, `symb_cache_size`, `reporter_unsymbolized_stubs`, `debug_info { }` | accepted and ignored (they configure parts of the OTel profiler we do not have) |
//! | deprecated no-ops (`pid_cache_size`, `build_id_cache_size`, ...) | accepted and ignored, as in Alloy |

use serde::Deserialize;

use super::symbolize::Demangle;
use crate::profiles::Receiver;
use crate::syntax::types::{CapsuleRef, Duration};
use crate::targets::Shared;

/// Alloy's `comm` argument: where the thread name goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Comm {
    None,
    /// A `comm` sample label.
    Label,
    /// A root frame named after the thread.
    StackFrame,
    Both,
}

impl Comm {
    fn parse(s: &str) -> Result<Comm, String> {
        Ok(match s {
            "none" => Comm::None,
            "label" => Comm::Label,
            "stackframe" => Comm::StackFrame,
            "both" => Comm::Both,
            _ => {
                return Err(format!(
                    "invalid comm value {s:?}: must be one of none, label, stackframe, both"
                ));
            }
        })
    }

    pub fn label(self) -> bool {
        matches!(self, Comm::Label | Comm::Both)
    }

    pub fn frame(self) -> bool {
        matches!(self, Comm::StackFrame | Comm::Both)
    }
}

/// The decoded, validated block.
#[derive(Clone, Debug, PartialEq)]
pub struct Arguments {
    pub forward_to: Vec<CapsuleRef<Receiver>>,
    pub targets: Vec<Shared>,
    pub targets_only: bool,
    pub collect_interval: std::time::Duration,
    pub sample_rate: u64,
    pub demangle: Demangle,
    pub kernel_frames: bool,
    pub comm: Comm,
    pub pid_label: bool,
    /// `off_cpu_threshold`: the probability that a switch-out is timed; 0 turns off-CPU
    /// profiling off.
    pub off_cpu_threshold: f64,
    /// `off_cpu_min_block` (ours): shorter blocks are not reported.
    pub off_cpu_min_block: std::time::Duration,
    /// Walk CPython frames (`python_enabled`).
    pub python: bool,
    /// Arguments we accept but do not implement, for the debug info.
    pub unsupported: Vec<String>,
}

impl Arguments {
    /// What a sampler restart depends on (everything else can change while running).
    pub fn sampler_key(&self) -> (bool, u64, bool, u64, std::time::Duration) {
        (
            self.targets_only,
            self.sample_rate,
            self.kernel_frames,
            self.off_cpu_threshold.to_bits(),
            self.off_cpu_min_block,
        )
    }
}

/// Defaults of the Alloy arguments.
pub const DEFAULT_SAMPLE_RATE: u64 = 97;
const DEFAULT_COLLECT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(15);
/// `off_cpu_min_block`'s default: every chosen block is reported, as Alloy (which has no such
/// argument) does; `off_cpu_threshold` alone bounds the cost.
pub const DEFAULT_OFF_CPU_MIN_BLOCK: std::time::Duration = std::time::Duration::ZERO;

fn yes() -> bool {
    true
}
fn default_interval() -> Duration {
    Duration(DEFAULT_COLLECT_INTERVAL)
}
fn default_rate() -> i64 {
    DEFAULT_SAMPLE_RATE as i64
}
fn default_min_block() -> Duration {
    Duration(DEFAULT_OFF_CPU_MIN_BLOCK)
}
fn default_demangle() -> String {
    "none".into()
}
fn default_comm() -> String {
    "none".into()
}

/// `debug_info { ... }`: accepted, not used.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[allow(dead_code)]
struct DebugInfo {
    #[serde(default)]
    upload: Option<bool>,
    #[serde(default)]
    on_target_symbolization: Option<bool>,
    #[serde(default)]
    upload_timeout: Option<Duration>,
    #[serde(default)]
    cache_path: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename = "pyroscope.ebpf")]
struct Raw {
    forward_to: Vec<CapsuleRef<Receiver>>,
    #[serde(default)]
    targets: Vec<Shared>,
    #[serde(default = "yes")]
    targets_only: bool,
    #[serde(default = "default_interval")]
    collect_interval: Duration,
    #[serde(default = "default_rate")]
    sample_rate: i64,
    #[serde(default = "default_demangle")]
    demangle: String,
    #[serde(default)]
    off_cpu_threshold: f64,
    #[serde(default = "default_min_block")]
    off_cpu_min_block: Duration,
    #[serde(default = "yes")]
    kernel_frames: bool,
    #[serde(default = "default_comm")]
    comm: String,
    #[serde(default)]
    pid_label: bool,

    // Language toggles (interpreters are not unwound; Go always is).
    #[serde(default)]
    python_enabled: Option<bool>,
    #[serde(default)]
    perl_enabled: Option<bool>,
    #[serde(default)]
    php_enabled: Option<bool>,
    #[serde(default)]
    hotspot_enabled: Option<bool>,
    #[serde(default)]
    ruby_enabled: Option<bool>,
    #[serde(default)]
    v8_enabled: Option<bool>,
    #[serde(default)]
    dotnet_enabled: Option<bool>,
    #[serde(default)]
    go_enabled: Option<bool>,

    // Settings of the OTel profiler Alloy embeds.
    #[serde(default)]
    bpf_fs_root: Option<String>,
    #[serde(default)]
    obi_process_context_enabled: Option<bool>,
    #[serde(default)]
    load_probe: Option<bool>,
    #[serde(default)]
    probe_links: Option<Vec<String>>,
    #[serde(default)]
    verbose_mode: Option<bool>,
    #[serde(default)]
    lazy_mode: Option<bool>,
    #[serde(default)]
    no_kernel_version_check: Option<bool>,
    #[serde(default)]
    symb_cache_path: Option<String>,
    #[serde(default)]
    symb_cache_size: Option<i64>,
    #[serde(default)]
    reporter_unsymbolized_stubs: Option<bool>,
    #[serde(default)]
    debug_info: Option<DebugInfo>,

    // Deprecated no-ops in Alloy too.
    #[serde(default)]
    pid_cache_size: Option<i64>,
    #[serde(default)]
    build_id_cache_size: Option<i64>,
    #[serde(default)]
    same_file_cache_size: Option<i64>,
    #[serde(default)]
    cache_rounds: Option<i64>,
    #[serde(default)]
    go_table_fallback: Option<bool>,
    #[serde(default)]
    symbols_map_size: Option<i64>,
    #[serde(default)]
    pid_map_size: Option<i64>,
    #[serde(default)]
    collect_user_profile: Option<bool>,
    #[serde(default)]
    collect_kernel_profile: Option<bool>,
    #[serde(default)]
    container_id_cache_size: Option<i64>,
    #[serde(default)]
    u_probe_links: Option<Vec<String>>,
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = Raw::deserialize(d)?;
        Arguments::try_from(raw).map_err(serde::de::Error::custom)
    }
}

impl TryFrom<Raw> for Arguments {
    type Error = String;

    fn try_from(r: Raw) -> Result<Self, String> {
        if r.collect_interval.get().is_zero() {
            return Err("collect_interval must be greater than 0".into());
        }
        // The kernel caps perf frequencies at kernel.perf_event_max_sample_rate; 0 or negative
        // would be a perf_event_open EINVAL at attach time, far from the config line.
        if !(1..=10_000).contains(&r.sample_rate) {
            return Err(format!(
                "sample_rate must be between 1 and 10000, got {}",
                r.sample_rate
            ));
        }
        if !(0.0..=1.0).contains(&r.off_cpu_threshold) {
            return Err(format!(
                "off_cpu_threshold must be between 0 and 1, got {}",
                r.off_cpu_threshold
            ));
        }
        let demangle: Demangle = r.demangle.parse()?;
        let comm = Comm::parse(&r.comm)?;
        let mut unsupported = Vec::new();
        let interpreters = [
            ("perl_enabled", r.perl_enabled),
            ("php_enabled", r.php_enabled),
            ("hotspot_enabled", r.hotspot_enabled),
            ("ruby_enabled", r.ruby_enabled),
            ("v8_enabled", r.v8_enabled),
            ("dotnet_enabled", r.dotnet_enabled),
        ];
        for (name, v) in interpreters {
            // Default true in Alloy: only an explicit `true` is worth reporting.
            if v == Some(true) {
                unsupported.push(format!(
                    "{name}: interpreter frames are not unwound; the interpreter's own native frames are shown"
                ));
            }
        }
        let ignored = [
            ("bpf_fs_root", r.bpf_fs_root.is_some()),
            ("load_probe", r.load_probe.is_some()),
            ("probe_links", r.probe_links.is_some()),
            ("u_probe_links", r.u_probe_links.is_some()),
            (
                "obi_process_context_enabled",
                r.obi_process_context_enabled == Some(true),
            ),
            ("debug_info", r.debug_info.is_some()),
            ("symb_cache_path", r.symb_cache_path.is_some()),
        ];
        for (name, set) in ignored {
            if set {
                unsupported.push(format!("{name}: accepted and ignored"));
            }
        }
        let _ = (
            r.go_enabled,
            r.verbose_mode,
            r.lazy_mode,
            r.no_kernel_version_check,
            r.symb_cache_size,
            r.reporter_unsymbolized_stubs,
            r.pid_cache_size,
            r.build_id_cache_size,
            r.same_file_cache_size,
            r.cache_rounds,
            r.go_table_fallback,
            r.symbols_map_size,
            r.pid_map_size,
            r.collect_user_profile,
            r.collect_kernel_profile,
            r.container_id_cache_size,
        );
        Ok(Arguments {
            forward_to: r.forward_to,
            targets: r.targets,
            targets_only: r.targets_only,
            collect_interval: r.collect_interval.get(),
            sample_rate: r.sample_rate as u64,
            demangle,
            kernel_frames: r.kernel_frames,
            comm,
            pid_label: r.pid_label,
            off_cpu_threshold: r.off_cpu_threshold,
            off_cpu_min_block: r.off_cpu_min_block.get(),
            python: r.python_enabled != Some(false),
            unsupported,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::syntax::decode::decode_source;

    #[test]
    fn defaults_are_alloys_except_the_sample_rate() {
        let a: Arguments = decode_source("forward_to = []").expect("valid");
        assert_eq!(a.sample_rate, 97);
        assert_eq!(a.collect_interval, std::time::Duration::from_secs(15));
        assert!(a.targets_only && a.kernel_frames && !a.pid_label);
        assert_eq!(a.demangle, Demangle::None);
        assert_eq!(a.comm, Comm::None);
        assert!(a.targets.is_empty() && a.unsupported.is_empty());
        assert_eq!(a.off_cpu_threshold, 0.0);
        assert_eq!(a.off_cpu_min_block, std::time::Duration::ZERO);
    }

    #[test]
    fn off_cpu_settings_decode_and_restart_the_sampler() {
        let a: Arguments =
            decode_source("forward_to = []\noff_cpu_threshold = 0.25\noff_cpu_min_block = \"5ms\"")
                .expect("valid");
        assert_eq!(a.off_cpu_threshold, 0.25);
        assert_eq!(a.off_cpu_min_block, std::time::Duration::from_millis(5));
        let b: Arguments = decode_source("forward_to = []").expect("valid");
        assert_ne!(a.sampler_key(), b.sampler_key());
    }

    #[test]
    fn alloy_blocks_decode_and_unsupported_arguments_are_listed() {
        let src = r#"forward_to = []
targets = [{"__process_pid__" = "1", "service_name" = "init"}]
targets_only = false
collect_interval = "10s"
sample_rate = 19
demangle = "full"
comm = "both"
pid_label = true
python_enabled = true
perl_enabled = true
go_enabled = true
off_cpu_threshold = 0.5
reporter_unsymbolized_stubs = false
symbols_map_size = 16384
debug_info {
  upload = true
  on_target_symbolization = false
}
"#;
        let a: Arguments = decode_source(src).expect("valid");
        assert_eq!(a.targets.len(), 1);
        assert!(!a.targets_only);
        assert_eq!(a.sample_rate, 19);
        assert_eq!(a.demangle, Demangle::Full);
        assert!(a.comm.label() && a.comm.frame() && a.pid_label);
        assert!(a.python, "python_enabled is honoured, not listed");
        let listed: Vec<&str> = a
            .unsupported
            .iter()
            .filter_map(|u| u.split(':').next())
            .collect();
        assert_eq!(listed, ["perl_enabled", "debug_info"]);
    }

    #[test]
    fn bad_values_are_rejected_at_the_block() {
        let cases = [
            (
                "forward_to = []\nsample_rate = 0",
                "sample_rate must be between 1 and 10000, got 0",
            ),
            (
                "forward_to = []\ndemangle = \"pretty\"",
                "invalid demangle value \"pretty\"",
            ),
            (
                "forward_to = []\ncomm = \"x\"",
                "invalid comm value \"x\": must be one of none, label, stackframe, both",
            ),
            (
                "forward_to = []\ncollect_interval = \"0s\"",
                "collect_interval must be greater than 0",
            ),
            (
                "forward_to = []\noff_cpu_threshold = 2",
                "off_cpu_threshold must be between 0 and 1, got 2",
            ),
            ("", "missing required attribute \"forward_to\""),
            (
                "forward_to = []\nfoo = 1",
                "unrecognized attribute name \"foo\"",
            ),
        ];
        for (src, want) in cases {
            let errs = decode_source::<Arguments>(src).expect_err(src);
            assert!(errs.iter().any(|e| e.contains(want)), "{src}: {errs:?}");
        }
    }
}
