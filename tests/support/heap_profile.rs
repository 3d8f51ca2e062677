//! A large Go-like heap profile for the trimming test and its timing: deterministic (seeded),
//! skewed, and with the weight of each sample type in different samples, as in a real heap
//! delta. Most allocation sites churn (much allocated, nearly nothing retained); a quarter
//! retain what they allocate, and allocate comparatively little; object sizes vary by site, so
//! `*_objects` and `*_space` rank the samples differently too.

use scraper::pprof::proto::{Function, Label, Line, Location, Mapping, Profile, Sample, ValueType};

/// splitmix64: a small deterministic generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1].
    fn unit(&mut self) -> f64 {
        ((self.next() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// Pareto-distributed with minimum `min` and tail index `alpha` (smaller: heavier tail).
    fn pareto(&mut self, min: f64, alpha: f64) -> i64 {
        (min / self.unit().powf(1.0 / alpha)).min(1e9) as i64
    }
}

/// Distinct locations per stack digit: three digits give 262,144 distinct leaf triples.
const DIGIT: usize = 64;
/// Shared caller frames (runtime, frameworks) above the distinct part of each stack.
const CALLERS: usize = 256;

/// A heap profile of `samples` distinct stacks (alloc_objects, alloc_space, inuse_objects,
/// inuse_space; a `bytes` numeric label per sample, as Go writes), generated from `seed`.
pub fn skewed_heap(samples: usize, seed: u64) -> Profile {
    let mut rng = Rng(seed);
    let mut p = Profile {
        string_table: vec![String::new()],
        ..Default::default()
    };
    let s = |p: &mut Profile, text: &str| {
        p.string_table.push(text.to_string());
        p.string_table.len() as i64 - 1
    };
    for (ty, unit) in [
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ] {
        let vt = ValueType {
            r#type: s(&mut p, ty),
            unit: s(&mut p, unit),
        };
        p.sample_type.push(vt);
    }
    p.period_type = Some(ValueType {
        r#type: s(&mut p, "space"),
        unit: s(&mut p, "bytes"),
    });
    p.period = 524_288;
    p.time_nanos = 1_700_000_000_000_000_000;
    let filename = s(&mut p, "/app/server");
    p.mapping.push(Mapping {
        id: 1,
        memory_start: 0x40_0000,
        memory_limit: 0x80_0000,
        filename,
        has_functions: true,
        has_filenames: true,
        has_line_numbers: true,
        ..Default::default()
    });
    let file = s(&mut p, "github.com/acme/shop/internal/server.go");
    for id in 1..=(3 * DIGIT + CALLERS) as u64 {
        let name = s(
            &mut p,
            &format!("github.com/acme/shop/internal.handler{id}"),
        );
        p.function.push(Function {
            id,
            name,
            system_name: name,
            filename: file,
            start_line: id as i64 * 10,
        });
        p.location.push(Location {
            id,
            mapping_id: 1,
            address: 0x40_0000 + id * 0x40,
            line: vec![Line {
                function_id: id,
                line: id as i64 * 10 + 3,
                column: 0,
            }],
            is_folded: false,
        });
    }
    let bytes_key = s(&mut p, "bytes");
    let bytes_unit = s(&mut p, "bytes");
    for i in 0..samples {
        // Leaf first: three frames spelling i (distinct stacks), then 2..10 shared callers.
        let mut location_id: Vec<u64> = (0..3)
            .map(|d| (d * DIGIT + (i / DIGIT.pow(d as u32)) % DIGIT) as u64 + 1)
            .collect();
        let depth = 2 + rng.next() % 9;
        for _ in 0..depth {
            location_id.push((3 * DIGIT) as u64 + 1 + rng.next() % CALLERS as u64);
        }
        let size = 16i64 << (rng.next() % 13);
        let (alloc, inuse) = if rng.next().is_multiple_of(4) {
            // Retains what it allocates: small allocation counts, most of them still live.
            let alloc = rng.pareto(1.0, 1.1);
            (alloc, alloc - alloc * (rng.next() % 50) as i64 / 100)
        } else {
            // Churns: heavy allocation, next to nothing live.
            let alloc = rng.pareto(20.0, 0.7);
            (alloc, alloc / 5_000)
        };
        p.sample.push(Sample {
            location_id,
            value: vec![alloc, alloc * size, inuse, inuse * size],
            label: vec![Label {
                key: bytes_key,
                num: size,
                num_unit: bytes_unit,
                ..Default::default()
            }],
        });
    }
    p
}
