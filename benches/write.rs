//! pyroscope.write: encode + send of 10,000 small profiles to the local recording receiver.
//!
//! `cargo bench --bench write`. Two groups:
//! * `write/encode`: per-profile work on the producer side and before sending (label
//!   processing, label encoding, request encoding), no I/O;
//! * `write/send_10k`: 10,000 profiles (100 series of a realistic scrape label set, ~1.6 KiB
//!   gzipped pprof each) appended one by one, until all are stored by the receiver over
//!   loopback HTTP/1.1 with the default 4 senders.
//!
//! The receiver runs on its own runtime whose threads are named `rx-*`, so the CPU time of the
//! writer side (the appending thread plus the writer runtime `wr-*`) can be told apart from
//! the receiver's, from /proc/self/task/*/stat. The CPU figures are printed after criterion's.

#[path = "../tests/support/pyroscope_receiver.rs"]
#[allow(unused_imports)]
mod receiver;

use std::hint::black_box;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use prost::Message as _;
use scraper::pprof::proto::{Function, Line, Location, Profile as Pprof, Sample, ValueType};
use scraper::profiles::Profile;
use scraper::protocols::pyroscope::{labels, wire};

const PROFILES: usize = 10_000;
const SERIES: usize = 100;

/// A target's labels as pyroscope.scrape forwards them (private ones included).
fn scrape_labels(series: usize) -> Vec<(String, String)> {
    let pod = format!("checkout-7d9f8c6b5-{series:05}");
    [
        ("__name__", "process_cpu"),
        ("__address__", "10.1.2.3:6060"),
        ("__scheme__", "http"),
        ("__profile_path__", "/debug/pprof/profile"),
        ("__meta_kubernetes_namespace", "shop"),
        ("__meta_kubernetes_pod_name", pod.as_str()),
        ("__meta_kubernetes_pod_container_name", "checkout"),
        ("namespace", "shop"),
        ("pod", pod.as_str()),
        ("container", "checkout"),
        ("service_name", "shop/checkout"),
        ("instance", "10.1.2.3:6060"),
        ("job", "pyroscope.scrape.cpu"),
    ]
    .iter()
    .map(|(n, v)| (n.to_string(), v.to_string()))
    .collect()
}

/// A small gzipped CPU profile: 40 stacks of depth 8 over 60 functions.
fn small_pprof() -> Vec<u8> {
    let mut p = Pprof {
        sample_type: vec![ValueType { r#type: 1, unit: 2 }],
        period_type: Some(ValueType { r#type: 1, unit: 2 }),
        period: 10_000_000,
        string_table: vec![String::new(), "cpu".into(), "nanoseconds".into()],
        duration_nanos: 14_000_000_000,
        ..Default::default()
    };
    for f in 0..60u64 {
        p.string_table.push(format!(
            "github.com/acme/shop/checkout.(*Service).Handler{f}"
        ));
        p.function.push(Function {
            id: f + 1,
            name: p.string_table.len() as i64 - 1,
            ..Default::default()
        });
        p.location.push(Location {
            id: f + 1,
            address: 0x4000 + f * 64,
            line: vec![Line {
                function_id: f + 1,
                line: 100 + f as i64,
                column: 0,
            }],
            ..Default::default()
        });
    }
    for s in 0..40u64 {
        p.sample.push(Sample {
            location_id: (0..8).map(|d| (s * 7 + d * 13) % 60 + 1).collect(),
            value: vec![((s + 1) * 10_000_000) as i64],
            label: Vec::new(),
        });
    }
    scraper::pprof::gzip(&p.encode_to_vec(), 6)
}

/// CPU seconds of this process's threads whose name starts with one of `prefixes`.
fn thread_cpu(prefixes: &[&str]) -> f64 {
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let mut total = 0.0;
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0.0;
    };
    for t in tasks.flatten() {
        let Ok(stat) = std::fs::read_to_string(t.path().join("stat")) else {
            continue;
        };
        // pid (comm) state ... utime(14) stime(15)
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else {
            continue;
        };
        let comm = &stat[open + 1..close];
        if !prefixes.iter().any(|p| comm.starts_with(p)) {
            continue;
        }
        let fields: Vec<&str> = stat[close + 2..].split(' ').collect();
        let utime: f64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        let stime: f64 = fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0.0);
        total += (utime + stime) / ticks;
    }
    total
}

fn bench(c: &mut Criterion) {
    let raw = bytes::Bytes::from(small_pprof());
    let all_labels: Vec<Vec<(String, String)>> = (0..SERIES).map(scrape_labels).collect();
    let external = vec![("cluster".to_string(), "prod-eu-1".to_string())];

    let mut g = c.benchmark_group("write");
    g.throughput(Throughput::Elements(1));
    g.bench_function("encode", |b| {
        let mut i = 0;
        b.iter(|| {
            i += 1;
            let l = labels::prepare(&all_labels[i % SERIES], &external).expect("labels");
            let encoded = wire::encode_labels(&l);
            black_box(wire::encode_push_request(&encoded, &raw))
        })
    });

    // The receiver on its own runtime and threads.
    let rx_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .thread_name("rx-worker")
        .enable_all()
        .build()
        .expect("rx runtime");
    let rx = rx_rt.block_on(receiver::PyroscopeReceiver::start());
    let wr_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("wr-worker")
        .enable_all()
        .build()
        .expect("writer runtime");
    let writer = wr_rt.block_on(async {
        receiver::Writer::start(&format!(
            "external_labels = {{ \"cluster\" = \"prod-eu-1\" }}\nendpoint {{\n  url = \"{}\"\n}}\n",
            rx.url()
        ))
    });

    let stats = Arc::new(Mutex::new((0usize, 0.0f64, 0.0f64, Duration::ZERO)));
    g.throughput(Throughput::Elements(PROFILES as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(20));
    let st = stats.clone();
    g.bench_function("send_10k", |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                let target = rx.count() + PROFILES;
                let profiles: Vec<Profile> = (0..PROFILES)
                    .map(|i| Profile::new(all_labels[i % SERIES].clone(), raw.clone()))
                    .collect();
                let wr0 = thread_cpu(&["wr-"]);
                let rx0 = thread_cpu(&["rx-"]);
                let main0 = thread_cpu(&["write-"]);
                let started = Instant::now();
                // Appended one at a time from this thread, as scrape loops do.
                for p in profiles {
                    writer.receiver.append(vec![p]);
                }
                let appended = started.elapsed();
                rx_rt.block_on(async {
                    assert!(rx.wait_for(target, Duration::from_secs(60)).await);
                });
                let took = started.elapsed();
                elapsed += took;
                let mut s = st.lock().expect("lock");
                s.0 += PROFILES;
                s.1 += thread_cpu(&["wr-"]) - wr0 + (thread_cpu(&["write-"]) - main0);
                s.2 += thread_cpu(&["rx-"]) - rx0;
                s.3 += appended;
            }
            elapsed
        })
    });
    g.finish();

    let (n, wr_cpu, rx_cpu, appending) = *stats.lock().expect("lock");
    if n > 0 {
        let n_f = n as f64;
        println!(
            "write/send_10k: {n} profiles; writer CPU {:.1} µs/profile (senders + appending thread), receiver CPU {:.1} µs/profile, append {:.2} µs/profile (wall, producer thread)",
            wr_cpu / n_f * 1e6,
            rx_cpu / n_f * 1e6,
            appending.as_secs_f64() / n_f * 1e6,
        );
        println!(
            "write/send_10k: payload {} bytes gzipped pprof, {} labels per series before processing",
            raw.len(),
            all_labels[0].len()
        );
    }
    let _ = wr_rt.block_on(writer.stop());
}

criterion_group!(benches, bench);
criterion_main!(benches);
