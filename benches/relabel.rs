//! Relabel engine throughput over 10,000 pod-role targets of 60 labels each, with two rule sets:
//! the 12 rules of the seed config (`shared/alloy-corpus/profiling/seed-otel-collector.alloy`)
//! and the Pyroscope Helm chart's annotation rules (`chart_rules`: its `kubernetes_pods` block,
//! whose `labelmap` copies every pod label, chained with one per-profile-type block).
//!
//! Scenarios:
//! * `mixed`: seed rules; 2,500 pods × 4 container ports (4317, 4318, 1777, 8888); one pod in
//!   five is not a collector (dropped by rule 1), the other non-1777 ports are dropped by rule 2,
//!   the 1777 targets run all 12 rules: the realistic shape of a discovery update.
//! * `all_kept`: seed rules; 10,000 pprof-port collector targets, every target runs all 12 rules.
//! * `chart`: chart rules over the `mixed` pods annotated the chart's way
//!   (`profiles.grafana.com/memory.scrape`, `.port` = 1777, `service_name`...; one pod in five
//!   not annotated): every target runs the labelmap (15 pod labels mapped), the 1777 targets of
//!   annotated pods all 15 rules.
//!
//! Variants: `process` (in place; the input copy is made outside the timing), and
//! `clone+process` (copy of the discovered target included, which is what Prometheus' own
//! `relabel.Process` costs since it builds a new label set: the like-for-like comparison with
//! Go). Results are reported per **rule application** (rules actually run before a drop).
//!
//! Goal (issue 3): < 1 µs per rule application; issue 23: ≥ 5× faster than Prometheus 2.42's Go
//! implementation (`bench/relabel-go`, run side by side by `bench/relabel.sh`) for both rule
//! sets, with identical output (`kept` and `output_fnv`, a digest of every kept target, are
//! compared with Go's).
//! Run: `cargo bench --bench relabel`. With `RELABEL_BENCH_WORKLOAD=<path>` the workload is
//! also written as JSON for the Go program.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group};
use scraper::relabel::{Action, LabelSet, Relabeler, RuleConfig};

// The allocator the scraper binary ships with (src/main.rs): relabelling allocates a set per
// kept target, and glibc's malloc would be measuring a program we do not ship (it spent a tenth
// of the `chart` time consolidating its small-chunk bins before each set's allocation).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TARGETS: usize = 10_000;
const LABELS_PER_TARGET: usize = 60;

fn rule(action: Action, src: &[&str], target: &str) -> RuleConfig {
    RuleConfig {
        action,
        source_labels: (!src.is_empty()).then(|| src.iter().map(|s| s.to_string()).collect()),
        target_label: target.into(),
        ..RuleConfig::default()
    }
}

/// The seed config's `discovery.relabel "otel"` rules, as written there.
fn seed_rules() -> Vec<RuleConfig> {
    let mut r = vec![
        RuleConfig {
            regex: "opentelemetry-collector".into(),
            ..rule(
                Action::Keep,
                &["__meta_kubernetes_pod_label_app_kubernetes_io_component"],
                "",
            )
        },
        RuleConfig {
            regex: "1777".into(),
            ..rule(
                Action::Keep,
                &["__meta_kubernetes_pod_container_port_number"],
                "",
            )
        },
        RuleConfig {
            replacement: "1777".into(),
            ..rule(Action::Replace, &[], "__port__")
        },
        RuleConfig {
            regex: r"(.+):(\d+)".into(),
            replacement: "${1}".into(),
            ..rule(Action::Replace, &["__address__"], "__address__")
        },
        RuleConfig {
            separator: "@".into(),
            regex: r"(.+)@(\d+)".into(),
            replacement: "$1:$2".into(),
            ..rule(Action::Replace, &["__address__", "__port__"], "__address__")
        },
        rule(
            Action::Replace,
            &["__meta_kubernetes_namespace"],
            "namespace",
        ),
        rule(Action::Replace, &["__meta_kubernetes_pod_name"], "pod"),
        rule(Action::Replace, &["__meta_kubernetes_node_name"], "node"),
        rule(
            Action::Replace,
            &["__meta_kubernetes_pod_container_name"],
            "container",
        ),
        rule(
            Action::Replace,
            &["__meta_kubernetes_pod_label_app_kubernetes_io_version"],
            "service_version",
        ),
    ];
    r.push(RuleConfig {
        separator: "@".into(),
        regex: "(.*)@(.*)".into(),
        replacement: "${1}/${2}".into(),
        ..rule(
            Action::Replace,
            &[
                "__meta_kubernetes_namespace",
                "__meta_kubernetes_pod_label_app_kubernetes_io_name",
            ],
            "service_name",
        )
    });
    r.push(rule(
        Action::Replace,
        &["__meta_kubernetes_pod_annotation_opentelemetry_operator_config_sha256"],
        "config_sha",
    ));
    r
}

/// The Pyroscope Helm chart's rules (`operations/pyroscope/helm/pyroscope/rendered`,
/// `configmap-alloy`: `discovery.relabel "kubernetes_pods"` then
/// `"kubernetes_pods_memory_default_name"`), as one list: what a target goes through on its way
/// to `pyroscope.scrape "pyroscope_scrape_memory"`.
fn chart_rules() -> Vec<RuleConfig> {
    const ANN: &str = "__meta_kubernetes_pod_annotation_profiles_grafana_com_";
    let replace = |src: &str, target: &str| rule(Action::Replace, &[src], target);
    vec![
        RuleConfig {
            regex: "Pending|Succeeded|Failed|Completed".into(),
            ..rule(Action::Drop, &["__meta_kubernetes_pod_phase"], "")
        },
        RuleConfig {
            regex: "__meta_kubernetes_pod_label_(.+)".into(),
            ..rule(Action::LabelMap, &[], "")
        },
        replace("__meta_kubernetes_namespace", "namespace"),
        replace("__meta_kubernetes_pod_name", "pod"),
        replace("__meta_kubernetes_pod_container_name", "container"),
        RuleConfig {
            separator: ";".into(),
            regex: "^(?:;*)?([^;]+).*$".into(),
            replacement: "$1".into(),
            ..rule(
                Action::Replace,
                &[
                    &format!("{ANN}service_name"),
                    "__meta_kubernetes_pod_annotation_resource_opentelemetry_io_service_name",
                ],
                "service_name",
            )
        },
        replace(&format!("{ANN}service_repository"), "service_repository"),
        replace(&format!("{ANN}service_git_ref"), "service_git_ref"),
        replace(&format!("{ANN}service_root_path"), "service_root_path"),
        RuleConfig {
            regex: "true".into(),
            ..rule(Action::Keep, &[&format!("{ANN}memory_scrape")], "")
        },
        RuleConfig {
            regex: "".into(),
            ..rule(Action::Keep, &[&format!("{ANN}memory_port_name")], "")
        },
        rule(
            Action::KeepEqual,
            &["__meta_kubernetes_pod_container_port_number"],
            &format!("{ANN}memory_port"),
        ),
        RuleConfig {
            regex: "(https?)".into(),
            replacement: "$1".into(),
            ..rule(
                Action::Replace,
                &[&format!("{ANN}memory_scheme")],
                "__scheme__",
            )
        },
        RuleConfig {
            regex: "(.+)".into(),
            replacement: "$1".into(),
            ..rule(
                Action::Replace,
                &[&format!("{ANN}memory_path")],
                "__profile_path__",
            )
        },
        RuleConfig {
            separator: ";".into(),
            regex: r"(.+?)(?::\d+)?;(\d+)".into(),
            replacement: "$1:$2".into(),
            ..rule(
                Action::Replace,
                &["__address__", &format!("{ANN}memory_port")],
                "__address__",
            )
        },
    ]
}

/// Which annotations a pod carries: the OpenTelemetry operator's (the seed's workload), the
/// Pyroscope chart's profiling annotations, or none of those.
#[derive(Clone, Copy, PartialEq)]
enum Annotations {
    Operator,
    Chart,
    ChartUnannotated,
}

/// One pod-role target with exactly 60 labels.
fn pod_target(pod: usize, port: u16, collector: bool) -> Vec<(String, String)> {
    pod_target_annotated(pod, port, collector, Annotations::Operator)
}

fn pod_target_annotated(
    pod: usize,
    port: u16,
    collector: bool,
    annotated: Annotations,
) -> Vec<(String, String)> {
    let ns = ["otel", "observability", "default"][pod % 3];
    let name = format!("pprof-collector-7d9f8b6c5-{pod:05x}");
    let ip = format!(
        "10.{}.{}.{}",
        244 + pod / 65536,
        (pod / 256) % 256,
        pod % 256
    );
    let mut l: Vec<(String, String)> = Vec::with_capacity(LABELS_PER_TARGET);
    let mut put = |k: &str, v: String| l.push((k.to_owned(), v));
    put("__address__", format!("{ip}:{port}"));
    put("__meta_kubernetes_namespace", ns.into());
    put("__meta_kubernetes_pod_name", name.clone());
    put(
        "__meta_kubernetes_pod_uid",
        format!("3f2b9c1e-{pod:04x}-4c2a-9d7e-8a1b2c3d4e5f"),
    );
    put("__meta_kubernetes_pod_ip", ip.clone());
    put(
        "__meta_kubernetes_pod_host_ip",
        format!("192.168.{}.{}", pod % 7, pod % 200),
    );
    put(
        "__meta_kubernetes_pod_node_name",
        format!("worker-{}", pod % 40),
    );
    put("__meta_kubernetes_pod_phase", "Running".into());
    put("__meta_kubernetes_pod_ready", "true".into());
    put("__meta_kubernetes_pod_controller_kind", "ReplicaSet".into());
    put(
        "__meta_kubernetes_pod_controller_name",
        "pprof-collector-7d9f8b6c5".into(),
    );
    let component = if collector {
        "opentelemetry-collector"
    } else {
        "controller-manager"
    };
    let pod_labels: [(&str, String); 15] = [
        ("app_kubernetes_io_component", component.into()),
        ("app_kubernetes_io_name", "pprof-collector".into()),
        ("app_kubernetes_io_version", "0.98.0".into()),
        ("app_kubernetes_io_instance", format!("{ns}.pprof")),
        (
            "app_kubernetes_io_managed_by",
            "opentelemetry-operator".into(),
        ),
        ("app_kubernetes_io_part_of", "opentelemetry".into()),
        ("pod_template_hash", "7d9f8b6c5".into()),
        ("helm_sh_chart", "opentelemetry-collector-0.90.1".into()),
        ("team", format!("team-{}", pod % 12)),
        ("environment", "production".into()),
        ("tier", "backend".into()),
        ("cost_center", format!("cc-{}", pod % 30)),
        ("release", "stable".into()),
        ("track", "ga".into()),
        ("sidecar_istio_io_inject", "false".into()),
    ];
    for (k, v) in pod_labels {
        put(&format!("__meta_kubernetes_pod_label_{k}"), v);
        put(
            &format!("__meta_kubernetes_pod_labelpresent_{k}"),
            "true".into(),
        );
    }
    let operator: [(&str, String); 6] = [
        (
            "opentelemetry_operator_config_sha256",
            "5b3c4f0e9a8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a19080".into(),
        ),
        ("prometheus_io_scrape", "true".into()),
        ("prometheus_io_port", "8888".into()),
        (
            "kubectl_kubernetes_io_default_container",
            "otc-container".into(),
        ),
        (
            "cluster_autoscaler_kubernetes_io_safe_to_evict",
            "true".into(),
        ),
        (
            "checksum_config",
            format!("{:016x}", pod as u64 * 0x9e37_79b9_7f4a_7c15),
        ),
    ];
    let chart: [(&str, String); 6] = [
        ("profiles_grafana_com_memory_scrape", "true".into()),
        ("profiles_grafana_com_memory_port", "1777".into()),
        (
            "profiles_grafana_com_memory_path",
            "/debug/pprof/allocs".into(),
        ),
        (
            "profiles_grafana_com_service_name",
            format!("{ns}/pprof-collector"),
        ),
        (
            "profiles_grafana_com_service_repository",
            "https://github.com/open-telemetry/opentelemetry-collector-contrib".into(),
        ),
        ("prometheus_io_scrape", "true".into()),
    ];
    let annotations = match annotated {
        Annotations::Operator | Annotations::ChartUnannotated => operator,
        Annotations::Chart => chart,
    };
    for (k, v) in annotations {
        put(&format!("__meta_kubernetes_pod_annotation_{k}"), v);
        put(
            &format!("__meta_kubernetes_pod_annotationpresent_{k}"),
            "true".into(),
        );
    }
    put(
        "__meta_kubernetes_pod_container_name",
        "otc-container".into(),
    );
    put(
        "__meta_kubernetes_pod_container_image",
        "otel/opentelemetry-collector-contrib:0.98.0".into(),
    );
    put(
        "__meta_kubernetes_pod_container_id",
        format!("containerd://{:064x}", pod * 4 + 1),
    );
    put("__meta_kubernetes_pod_container_init", "false".into());
    put(
        "__meta_kubernetes_pod_container_port_number",
        port.to_string(),
    );
    let port_name = match port {
        4317 => "otlp-grpc",
        4318 => "otlp-http",
        1777 => "pprof",
        _ => "metrics",
    };
    put(
        "__meta_kubernetes_pod_container_port_name",
        port_name.into(),
    );
    put(
        "__meta_kubernetes_pod_container_port_protocol",
        "TCP".into(),
    );
    assert_eq!(l.len(), LABELS_PER_TARGET);
    l
}

fn scenario(name: &str) -> Vec<Vec<(String, String)>> {
    match name {
        "chart" => (0..TARGETS / 4)
            .flat_map(|pod| {
                let annotated = if pod % 5 == 4 {
                    Annotations::ChartUnannotated
                } else {
                    Annotations::Chart
                };
                [4317u16, 4318, 1777, 8888]
                    .into_iter()
                    .map(move |port| pod_target_annotated(pod, port, true, annotated))
            })
            .collect(),
        "mixed" => (0..TARGETS / 4)
            .flat_map(|pod| {
                [4317u16, 4318, 1777, 8888]
                    .into_iter()
                    .map(move |port| pod_target(pod, port, pod % 5 != 4))
            })
            .collect(),
        _ => (0..TARGETS)
            .map(|pod| pod_target(pod, 1777, true))
            .collect(),
    }
}

/// Rules run per target before it is dropped (or all of them), summed: the unit of the
/// per-rule figures.
fn rule_applications(rules: &[RuleConfig], targets: &[LabelSet]) -> u64 {
    let singles: Vec<Relabeler> = rules
        .iter()
        .map(|r| Relabeler::new(std::slice::from_ref(r)).expect("seed rule loads"))
        .collect();
    let mut n = 0;
    for t in targets {
        let mut l = t.clone();
        for s in &singles {
            n += 1;
            if !s.process(&mut l) {
                break;
            }
        }
    }
    n
}

/// A target as generated: (name, value) pairs.
type RawTarget = Vec<(String, String)>;
/// The generated scenarios by name.
type RawScenarios = Vec<(&'static str, Vec<RawTarget>)>;

struct Prepared {
    name: &'static str,
    rules: Vec<RuleConfig>,
    relabeler: Relabeler,
    targets: Vec<LabelSet>,
    applications: u64,
    kept: usize,
    digest: u64,
}

/// FNV-1a 64 over the kept targets in order: each label as name, 0xff, value, 0xff in sorted
/// name order, each target closed by 0xfe. `bench/relabel-go` computes the same over
/// Prometheus' output, so equal digests mean identical output.
fn output_digest(relabeler: &Relabeler, targets: &[LabelSet]) -> (usize, u64) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    let mut kept = 0;
    for t in targets {
        let mut l = t.clone();
        if !relabeler.process(&mut l) {
            continue;
        }
        kept += 1;
        for (n, v) in l.iter() {
            eat(n.as_bytes());
            eat(&[0xff]);
            eat(v.as_bytes());
            eat(&[0xff]);
        }
        eat(&[0xfe]);
    }
    (kept, h)
}

fn prepare() -> (Vec<Prepared>, RawScenarios) {
    let mut raw = Vec::new();
    let mut prepared = Vec::new();
    for name in ["mixed", "all_kept", "chart"] {
        let rules = if name == "chart" {
            chart_rules()
        } else {
            seed_rules()
        };
        let relabeler = Relabeler::new(&rules).expect("bench rules load");
        let targets_raw = scenario(name);
        let targets: Vec<LabelSet> = targets_raw
            .iter()
            .map(|t| t.iter().cloned().collect())
            .collect();
        let applications = rule_applications(&rules, &targets);
        let (kept, digest) = output_digest(&relabeler, &targets);
        prepared.push(Prepared {
            name,
            rules,
            relabeler,
            targets,
            applications,
            kept,
            digest,
        });
        raw.push((name, targets_raw));
    }
    (prepared, raw)
}

fn write_workload(prepared: &[Prepared], raw: &RawScenarios) {
    let Ok(path) = std::env::var("RELABEL_BENCH_WORKLOAD") else {
        return;
    };
    let scenarios: Vec<serde_json::Value> = raw
        .iter()
        .zip(prepared)
        .map(|((name, targets), p)| {
            let targets: Vec<serde_json::Map<String, serde_json::Value>> = targets
                .iter()
                .map(|t| {
                    t.iter()
                        .map(|(k, v)| (k.clone(), v.clone().into()))
                        .collect()
                })
                .collect();
            serde_json::json!({ "name": name, "rules": p.rules, "targets": targets })
        })
        .collect();
    let doc = serde_json::json!({ "scenarios": scenarios });
    if let Err(e) = std::fs::write(&path, doc.to_string()) {
        eprintln!("writing workload {path}: {e}");
    }
}

fn bench(c: &mut Criterion) {
    let (prepared, _) = prepare();
    let mut g = c.benchmark_group("relabel");
    g.sample_size(20).measurement_time(Duration::from_secs(5));
    for p in &prepared {
        let relabeler = &p.relabeler;
        g.throughput(Throughput::Elements(p.applications));
        g.bench_function(format!("{}/process", p.name), |b| {
            b.iter_batched_ref(
                || p.targets.clone(),
                |targets| {
                    for t in targets.iter_mut() {
                        black_box(relabeler.process(t));
                    }
                },
                BatchSize::LargeInput,
            )
        });
        g.bench_function(format!("{}/clone+process", p.name), |b| {
            b.iter(|| {
                for t in &p.targets {
                    let mut l = t.clone();
                    black_box(relabeler.process(&mut l));
                }
            })
        });
    }
    g.finish();
}

/// CPU time this process has used (user + system, all threads): on a shared machine, wall time
/// also counts the time spent waiting for a core, which other jobs decide.
fn cpu_time() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Runs `round` until `at_least` of wall time has passed; wall and CPU ns per round.
fn per_round(at_least: Duration, mut round: impl FnMut()) -> (f64, f64) {
    let (wall, cpu) = (Instant::now(), cpu_time());
    let mut rounds = 0u32;
    while wall.elapsed() < at_least {
        round();
        rounds += 1;
    }
    let n = f64::from(rounds);
    (
        wall.elapsed().as_nanos() as f64 / n,
        (cpu_time() - cpu).as_nanos() as f64 / n,
    )
}

/// Plain timing loop for the summary lines (`bench/relabel.sh` parses them): best of several
/// ~0.5 s rounds, in ns per rule application, by the wall clock and in CPU time.
fn summary() {
    let (prepared, raw) = prepare();
    write_workload(&prepared, &raw);
    let only = std::env::var("RELABEL_BENCH_ONLY").ok();
    for p in &prepared {
        if only.as_deref().is_some_and(|o| o != p.name) {
            continue;
        }
        let relabeler = &p.relabeler;
        let mut best_process = f64::MAX;
        let (mut best_clone, mut best_clone_cpu) = (f64::MAX, f64::MAX);
        let mut best_copy_only = f64::MAX;
        for _ in 0..5 {
            // process only: the copies are made before the clock starts
            let mut total = Duration::ZERO;
            let mut rounds = 0u32;
            while total < Duration::from_millis(500) {
                let mut targets: Vec<LabelSet> = p.targets.clone();
                for t in &mut targets {
                    // A real copy (not a shared clone), so the timed loop only processes.
                    t.set("__bench_unshare__", "1");
                    t.remove("__bench_unshare__");
                }
                let start = Instant::now();
                for t in targets.iter_mut() {
                    black_box(relabeler.process(t));
                }
                total += start.elapsed();
                rounds += 1;
            }
            best_process = best_process.min(total.as_nanos() as f64 / f64::from(rounds));
            // clone + process
            let (wall, cpu) = per_round(Duration::from_millis(500), || {
                for t in &p.targets {
                    let mut l = t.clone();
                    black_box(relabeler.process(&mut l));
                }
            });
            best_clone = best_clone.min(wall);
            best_clone_cpu = best_clone_cpu.min(cpu);
            // clone only
            let (wall, _) = per_round(Duration::from_millis(200), || {
                for t in &p.targets {
                    black_box(t.clone());
                }
            });
            best_copy_only = best_copy_only.min(wall);
        }
        let per = |ns: f64| ns / p.applications as f64;
        println!(
            "RESULT rust {} targets={} rule_applications={} kept={} output_fnv={:016x} process_ns_per_rule={:.1} clone_process_ns_per_rule={:.1} clone_process_cpu_ns_per_rule={:.1} clone_only_ns_per_target={:.1}",
            p.name,
            p.targets.len(),
            p.applications,
            p.kept,
            p.digest,
            per(best_process),
            per(best_clone),
            per(best_clone_cpu),
            best_copy_only / p.targets.len() as f64,
        );
    }
}

/// The clone + process loop alone, in a function of its own so that a profiler can be told to
/// count only it (`valgrind --tool=callgrind --toggle-collect='*profile_rounds*'`).
#[inline(never)]
fn profile_rounds(p: &Prepared, rounds: u32) {
    for _ in 0..rounds {
        for t in &p.targets {
            let mut l = t.clone();
            black_box(p.relabeler.process(&mut l));
        }
    }
}

criterion_group!(benches, bench);

fn main() {
    // `cargo test --benches` runs bench binaries with `--bench` absent: keep that quick.
    let bench_mode = std::env::args().any(|a| a == "--bench");
    if !bench_mode {
        let (prepared, _) = prepare();
        for p in &prepared {
            assert!(p.kept > 0, "{}: nothing kept", p.name);
        }
        return;
    }
    // For profilers (perf, callgrind): only the clone + process loop, `rounds` times over each
    // scenario (`RELABEL_BENCH_ONLY` picks one), with no timing or setup copies around it.
    if let Some(rounds) = std::env::var("RELABEL_BENCH_PROFILE_ROUNDS")
        .ok()
        .and_then(|r| r.parse::<u32>().ok())
    {
        let only = std::env::var("RELABEL_BENCH_ONLY").ok();
        let (prepared, _) = prepare();
        for p in prepared
            .iter()
            .filter(|p| only.as_deref().is_none_or(|o| o == p.name))
        {
            profile_rounds(p, rounds);
        }
        return;
    }
    if std::env::var_os("RELABEL_BENCH_SUMMARY_ONLY").is_none() {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    summary();
}
