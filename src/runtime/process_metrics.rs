//! The `process_*` metrics every Prometheus client exposes (CPU, memory, file descriptors,
//! start time) and `scraper_build_info`, read fresh from `/proc/self` at each scrape.
//!
//! Hand-written rather than a crate: the `prometheus` crate's process collector would bring a
//! second metrics library (we use prometheus-client), and `procfs` is a large dependency for
//! four small files. The names, units and meaning follow client_golang's process collector, so
//! dashboards and alerts written for Alloy (`process_resident_memory_bytes` and friends) work.

use std::fmt;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// What `scraper_build_info` says about this binary.
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// Set by build.rs from the compiler that built us.
const RUSTC_VERSION: &str = env!("SCRAPER_RUSTC_VERSION");
/// The source revision, when the build environment names one (`SCRAPER_REVISION=$(git
/// rev-parse HEAD) cargo build`); release builds set it, a plain `cargo build` says "unknown".
const REVISION: Option<&str> = option_env!("SCRAPER_REVISION");

/// Collects the process metrics and build info on each scrape of `/metrics`.
#[derive(Debug, Default)]
pub struct ProcessCollector;

/// One reading of `/proc/self`; a field is `None` when its file could not be read or parsed
/// (another OS, or a hardened /proc), and its metric is then left out rather than reported as 0.
#[derive(Debug, Default, PartialEq)]
pub struct ProcessStats {
    pub cpu_seconds: Option<f64>,
    pub resident_bytes: Option<u64>,
    pub virtual_bytes: Option<u64>,
    pub start_time_seconds: Option<f64>,
    pub threads: Option<u64>,
    pub open_fds: Option<u64>,
    pub max_fds: Option<u64>,
    pub virtual_max_bytes: Option<u64>,
}

impl ProcessStats {
    pub fn read() -> Self {
        let ticks = clock_ticks();
        let page = page_size();
        let mut stats = std::fs::read_to_string("/proc/self/stat")
            .ok()
            .and_then(|text| parse_stat(&text, ticks, page))
            .unwrap_or_default();
        // The boot time never changes: /proc/stat (large on big machines) is read once.
        static BOOT_TIME: std::sync::OnceLock<Option<f64>> = std::sync::OnceLock::new();
        if let (Some(start), Some(boot)) =
            (stats.start_time_seconds, *BOOT_TIME.get_or_init(boot_time))
        {
            stats.start_time_seconds = Some(start + boot);
        } else {
            stats.start_time_seconds = None;
        }
        stats.open_fds = std::fs::read_dir("/proc/self/fd")
            .ok()
            .map(|dir| dir.count() as u64);
        stats.max_fds = rlimit(libc::RLIMIT_NOFILE);
        stats.virtual_max_bytes = rlimit(libc::RLIMIT_AS);
        stats
    }
}

/// Parses `/proc/self/stat`. The start time is left relative to boot (seconds); the caller adds
/// the boot time. The command name is in parentheses and may itself contain spaces and
/// parentheses, so fields are counted from the last `)`.
pub fn parse_stat(text: &str, ticks_per_second: f64, page_size: u64) -> Option<ProcessStats> {
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3 of proc(5) (state): field N is at index N - 3.
    let field = |n: usize| -> Option<u64> { fields.get(n - 3)?.parse().ok() };
    let utime = field(14)?;
    let stime = field(15)?;
    Some(ProcessStats {
        cpu_seconds: Some((utime + stime) as f64 / ticks_per_second),
        threads: field(20),
        start_time_seconds: field(22).map(|t| t as f64 / ticks_per_second),
        virtual_bytes: field(23),
        resident_bytes: field(24).map(|pages| pages.saturating_mul(page_size)),
        ..ProcessStats::default()
    })
}

/// The `btime` line of `/proc/stat`: when the machine booted, in Unix seconds.
fn boot_time() -> Option<f64> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|v| v as f64)
}

fn clock_ticks() -> f64 {
    // SAFETY: sysconf only reads a system constant.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 { t as f64 } else { 100.0 }
}

fn page_size() -> u64 {
    // SAFETY: sysconf only reads a system constant.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if p > 0 { p as u64 } else { 4096 }
}

/// The soft limit of `resource`; `None` when unlimited. client_golang reports the raw value,
/// but "unlimited" as 2^64-1 only breaks graphs and ratios, so the series is left out instead.
fn rlimit(resource: libc::__rlimit_resource_t) -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    let rc = unsafe { libc::getrlimit(resource, &mut lim) };
    (rc == 0 && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

fn gauge<N: prometheus_client::encoding::EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: Option<N>,
) -> fmt::Result {
    if let Some(v) = value {
        let metric = ConstGauge::new(v);
        metric.encode(encoder.encode_descriptor(name, help, None, metric.metric_type())?)?;
    }
    Ok(())
}

impl Collector for ProcessCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let s = ProcessStats::read();
        if let Some(cpu) = s.cpu_seconds {
            let metric = ConstCounter::new(cpu);
            // The encoder appends `_total` to counters.
            metric.encode(encoder.encode_descriptor(
                "process_cpu_seconds",
                "Total user and system CPU time spent in seconds.",
                None,
                metric.metric_type(),
            )?)?;
        }
        let gauges = [
            (
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
                s.resident_bytes,
            ),
            (
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
                s.virtual_bytes,
            ),
            (
                "process_virtual_memory_max_bytes",
                "Maximum amount of virtual memory available in bytes.",
                s.virtual_max_bytes,
            ),
            (
                "process_open_fds",
                "Number of open file descriptors.",
                s.open_fds,
            ),
            (
                "process_max_fds",
                "Maximum number of open file descriptors.",
                s.max_fds,
            ),
            (
                "process_threads",
                "Number of OS threads in the process.",
                s.threads,
            ),
        ];
        for (name, help, value) in gauges {
            // Gauges are i64; nothing here comes near 2^63.
            gauge(&mut encoder, name, help, value.map(|v| v as i64))?;
        }
        gauge(
            &mut encoder,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            s.start_time_seconds,
        )?;
        // Alloy's `alloy_build_info` is a gauge of 1 with the build as labels; ours matches, so
        // "which version runs where" is one query in either.
        let labels = [
            ("version", VERSION),
            ("revision", REVISION.unwrap_or("unknown")),
            ("rustversion", RUSTC_VERSION),
            ("goos", std::env::consts::OS),
            ("goarch", std::env::consts::ARCH),
        ];
        let info = ConstGauge::new(1i64);
        let mut family = encoder.encode_descriptor(
            "scraper_build_info",
            "A metric with a constant '1' value labeled by version, revision, rustversion, \
             goos and goarch from which scraper was built.",
            None,
            MetricType::Gauge,
        )?;
        info.encode(family.encode_family(&labels.as_slice())?)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_by_position() {
        // A command name with spaces and a `)` must not shift the fields.
        let text = "4242 (my (weird) cmd) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 150 0 0 \
                    20 0 7 0 12345 104857600 2560 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 \
                    0 17 1 0 0 0 0 0";
        let s = parse_stat(text, 100.0, 4096).expect("parses");
        assert_eq!(s.cpu_seconds, Some(4.0));
        assert_eq!(s.threads, Some(7));
        assert_eq!(s.start_time_seconds, Some(123.45));
        assert_eq!(s.virtual_bytes, Some(104_857_600));
        assert_eq!(s.resident_bytes, Some(2560 * 4096));
        for bad in ["", "1 (x", "1 (x) S 1 2"] {
            assert_eq!(parse_stat(bad, 100.0, 4096), None, "{bad:?}");
        }
    }

    #[test]
    fn own_process_reads() {
        let s = ProcessStats::read();
        assert!(s.resident_bytes.is_some_and(|v| v > 0), "{s:?}");
        assert!(s.open_fds.is_some_and(|v| v > 0), "{s:?}");
        assert!(s.cpu_seconds.is_some(), "{s:?}");
        let start = s.start_time_seconds.expect("start time");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        // Started in the past, after 2020: the boot-time arithmetic is right.
        assert!(start <= now + 1.0 && start > 1_577_836_800.0, "{start}");
    }

    #[test]
    fn exposition_has_process_metrics_and_build_info() {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(ProcessCollector));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encode");
        for want in [
            "# TYPE process_cpu_seconds counter",
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_start_time_seconds ",
            "process_open_fds ",
            "scraper_build_info{version=\"",
        ] {
            assert!(out.contains(want), "{want:?} missing in:\n{out}");
        }
    }
}
