//! Shared by the `store_*` tests: realistic pprof profiles and label sets.

#![allow(dead_code)]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message as _;
use scraper::pprof::proto::{Function, Line, Location, Profile as Pprof, Sample, ValueType};
use scraper::profiles::Profile;

/// xorshift64*: deterministic, dependency-free.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A valid CPU profile shaped like a Go service's: `functions` functions with package-path
/// names, `samples` stacks 5 to 30 frames deep, gzipped. About 1 KiB gzipped per 10
/// functions plus 8 samples.
pub fn pprof(seed: u64, functions: usize, samples: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut strings: Vec<String> = ["", "samples", "count", "cpu", "nanoseconds"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let functions = functions.max(1);
    let mut function = Vec::with_capacity(functions);
    let mut location = Vec::with_capacity(functions);
    for i in 0..functions {
        let name = format!(
            "github.com/org{}/service/internal/pkg{}.(*Type{}).Method{}",
            rng.below(8),
            rng.below(60),
            rng.below(40),
            rng.below(100_000)
        );
        let file = format!(
            "/src/github.com/org/service/internal/pkg{}/file{}.go",
            rng.below(60),
            rng.below(500)
        );
        strings.push(name);
        strings.push(file);
        let id = i as u64 + 1;
        function.push(Function {
            id,
            name: strings.len() as i64 - 2,
            system_name: strings.len() as i64 - 2,
            filename: strings.len() as i64 - 1,
            start_line: rng.below(2000) as i64,
        });
        location.push(Location {
            id,
            address: 0x40_0000 + rng.below(1 << 24),
            line: vec![Line {
                function_id: id,
                line: rng.below(3000) as i64 + 1,
                column: 0,
            }],
            ..Default::default()
        });
    }
    let sample = (0..samples)
        .map(|_| {
            let depth = 5 + rng.below(26) as usize;
            let count = 1 + rng.below(50) as i64;
            Sample {
                location_id: (0..depth)
                    .map(|_| 1 + rng.below(functions as u64))
                    .collect(),
                value: vec![count, count * 10_000_000],
                label: vec![],
            }
        })
        .collect();
    let p = Pprof {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        period_type: Some(ValueType { r#type: 3, unit: 4 }),
        period: 10_000_000,
        duration_nanos: 15_000_000_000,
        time_nanos: 1_700_000_000_000_000_000 + seed as i64,
        function,
        location,
        sample,
        string_table: strings,
        ..Default::default()
    };
    scraper::pprof::gzip(&p.encode_to_vec(), 6)
}

/// The labels `pyroscope.scrape` gives a profile: private ones included.
pub fn labels(service: &str, instance: &str, name: &str) -> Vec<(String, String)> {
    vec![
        ("service_name".into(), service.into()),
        ("instance".into(), instance.into()),
        ("__name__".into(), name.into()),
        ("__address__".into(), instance.into()),
        ("__meta_kubernetes_pod_name".into(), "pod-1".into()),
        ("__delta__".into(), "false".into()),
        ("empty".into(), String::new()),
    ]
}

pub fn profile(labels: Vec<(String, String)>, raw: Vec<u8>, at: SystemTime) -> Profile {
    Profile {
        received_at: at,
        ..Profile::new(labels, raw)
    }
}

/// A fixed, round instant: tests never depend on the clock except for retention's "now".
pub fn t0() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_750_000_000)
}

pub fn gunzip(b: &[u8]) -> Vec<u8> {
    scraper::pprof::gunzip(b, &scraper::pprof::Limits::default()).expect("gunzips")
}

pub fn label<'a>(labels: &'a [(String, String)], name: &str) -> Option<&'a str> {
    labels
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}
