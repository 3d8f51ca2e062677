//! The querier API `scraper run` serves: `SelectMergeStacktraces` (flame graph, default
//! `max_nodes` 8192) over one hour of one service scraped every 15 s, i.e. 240 Go-like CPU
//! profiles. A plain `main` (`harness = false`): `cargo bench --bench querier`.
//!
//! Profiles are generated with a Go service's shape: a program (functions with package-path
//! names at call sites, some with inlined lines, in a call tree whose stacks are 8 to 64 frames
//! deep) sampled 2,000-3,000 times per 15 s profile, hot stacks more often than cold ones;
//! location and function ids are assigned per profile in first-use order as Go's runtime does.
//! Two shapes (`SHAPES`): "typical" (600 functions, samples concentrated on hot paths) and
//! "heavy" (1,500 functions, samples spread: ~1,500 distinct stacks per profile). They are written to a store, then:
//!
//! * "in process": `query::stores::Stores::tree` + the flame graph encoding + the response's
//!   protobuf encoding, i.e. what the handler runs;
//! * "end to end": the real binary (`scraper run` with a `pyroscope.store` on that store)
//!   answering `POST /querier.v1.QuerierService/SelectMergeStacktraces` over HTTP.
//!
//! Each is run `RUNS` times on a warm page cache; the median is printed (and the minimum, and
//! the profiles' sizes). Nothing is asserted: the numbers go to docs/PERFORMANCE.md.

#[path = "../tests/server_support/mod.rs"]
mod server_support;
#[path = "../tests/store_support/mod.rs"]
mod store_support;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use prost::Message as _;
use scraper::pprof::proto::{Function, Line, Location, Profile as Pprof, Sample, ValueType};
use scraper::protocols::pyroscope::proto::querier::v1 as q;
use scraper::query::flamegraph::flame_graph;
use scraper::query::selector::Selector;
use scraper::query::source::{ProfileType, Query};
use scraper::query::stores::Stores;
use scraper::store::Db;
use store_support::{Rng, labels, profile};

const PROFILES: u32 = 240;
const INTERVAL: Duration = Duration::from_secs(15);
const RUNS: usize = 7;

/// How a scenario's profiles are sampled: CPU samples per profile (a range), and how strongly
/// they prefer hot stacks (the exponent applied to a uniform draw over the program's stacks).
struct Shape {
    name: &'static str,
    /// Functions and call sites (locations) of the program.
    functions: usize,
    sites: usize,
    samples: (u64, u64),
    skew: i32,
}

const SHAPES: [Shape; 2] = [
    // A busy service: most samples in a few hot paths.
    Shape {
        name: "typical",
        functions: 600,
        sites: 1_500,
        samples: (2_000, 3_000),
        skew: 6,
    },
    // Samples spread over many paths: several times the distinct stacks, bytes and locations.
    Shape {
        name: "heavy",
        functions: 1_500,
        sites: 4_000,
        samples: (2_000, 3_000),
        skew: 3,
    },
];

/// A call site: (function, line, functions inlined into it there).
type Site = (usize, i64, Vec<usize>);

/// The program: call sites (what pprof locations are: one per address, shared by every stack
/// through it) and a call tree over them; paths from the root are stacks.
struct Program {
    sites: Vec<Site>,
    /// (parent node, site).
    nodes: Vec<(usize, usize)>,
    /// Leaf node of every stack the program can be sampled in, hottest first.
    leaves: Vec<usize>,
    names: Vec<String>,
}

fn program(rng: &mut Rng, shape: &Shape) -> Program {
    let (functions, site_count) = (shape.functions, shape.sites);
    let names: Vec<String> = (0..functions)
        .map(|i| {
            format!(
                "github.com/org{}/service/internal/pkg{}.(*Type{}).Method{i}",
                rng.below(6),
                rng.below(80),
                rng.below(30)
            )
        })
        .collect();
    let sites: Vec<Site> = (0..site_count)
        .map(|_| {
            let inlined = if rng.below(10) == 0 {
                (0..1 + rng.below(2))
                    .map(|_| rng.below(functions as u64) as usize)
                    .collect()
            } else {
                Vec::new()
            };
            (
                rng.below(functions as u64) as usize,
                1 + rng.below(3000) as i64,
                inlined,
            )
        })
        .collect();
    let mut nodes: Vec<(usize, usize)> = vec![(0, 0)];
    let mut children: Vec<Vec<usize>> = vec![Vec::new()];
    let mut leaves = Vec::new();
    for _ in 0..6_000 {
        let depth = 8 + rng.below(57) as usize;
        let mut at = 0usize;
        for _ in 0..depth {
            // Shared prefixes: mostly follow an existing call, sometimes a new one.
            let kids = &children[at];
            at = if !kids.is_empty() && rng.below(100) < 95 {
                kids[rng.below(kids.len().min(4) as u64) as usize]
            } else {
                nodes.push((at, rng.below(site_count as u64) as usize));
                children.push(Vec::new());
                let id = nodes.len() - 1;
                children[at].push(id);
                id
            };
        }
        leaves.push(at);
    }
    Program {
        sites,
        nodes,
        leaves,
        names,
    }
}

/// One 15 s CPU profile of `program`, gzipped, as Go writes it (ids in first-use order).
fn cpu_profile(program: &Program, shape: &Shape, rng: &mut Rng, end: SystemTime) -> Vec<u8> {
    let mut strings: Vec<String> = ["", "samples", "count", "cpu", "nanoseconds"]
        .map(String::from)
        .to_vec();
    let mut string_ids: HashMap<String, i64> = HashMap::new();
    let mut string = |s: &str, strings: &mut Vec<String>| -> i64 {
        *string_ids.entry(s.to_string()).or_insert_with(|| {
            strings.push(s.to_string());
            strings.len() as i64 - 1
        })
    };
    let mut function_ids: HashMap<usize, u64> = HashMap::new();
    let mut functions: Vec<Function> = Vec::new();
    let mut location_ids: HashMap<usize, u64> = HashMap::new();
    let mut locations: Vec<Location> = Vec::new();
    let mut stacks: HashMap<usize, i64> = HashMap::new();
    let distinct = (shape.samples.0 + rng.below(shape.samples.1 - shape.samples.0)) as usize;
    for _ in 0..distinct {
        // Hot stacks are sampled far more often than cold ones.
        let r = rng.below(1 << 20) as f64 / (1 << 20) as f64;
        let leaf = program.leaves[(r.powi(shape.skew) * program.leaves.len() as f64) as usize];
        *stacks.entry(leaf).or_insert(0) += 1 + rng.below(20) as i64;
    }
    let mut samples = Vec::with_capacity(stacks.len());
    for (leaf, count) in stacks {
        let mut ids = Vec::new();
        let mut at = leaf;
        while at != 0 {
            let site = program.nodes[at].1;
            let next = location_ids.len() as u64 + 1;
            let id = *location_ids.entry(site).or_insert(next);
            if id == next {
                let (f, line, inlined) = &program.sites[site];
                let mut lines = Vec::new();
                for &g in inlined.iter().chain(std::iter::once(f)) {
                    let next_f = function_ids.len() as u64 + 1;
                    let fid = *function_ids.entry(g).or_insert(next_f);
                    if fid == next_f {
                        let name = string(&program.names[g], &mut strings);
                        let file = string(&format!("/src/pkg{}/file.go", g % 80), &mut strings);
                        functions.push(Function {
                            id: fid,
                            name,
                            system_name: name,
                            filename: file,
                            start_line: 10,
                        });
                    }
                    lines.push(Line {
                        function_id: fid,
                        line: *line,
                        column: 0,
                    });
                }
                locations.push(Location {
                    id,
                    address: 0x40_0000 + site as u64 * 16,
                    line: lines,
                    ..Default::default()
                });
            }
            ids.push(id);
            at = program.nodes[at].0;
        }
        samples.push(Sample {
            location_id: ids,
            value: vec![count, count * 10_000_000],
            label: vec![],
        });
    }
    let p = Pprof {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        period_type: Some(ValueType { r#type: 3, unit: 4 }),
        period: 10_000_000,
        duration_nanos: INTERVAL.as_nanos() as i64,
        time_nanos: (end - INTERVAL)
            .duration_since(UNIX_EPOCH)
            .expect("epoch")
            .as_nanos() as i64,
        sample: samples,
        location: locations,
        function: functions,
        string_table: strings,
        ..Default::default()
    };
    scraper::pprof::gzip(&p.encode_to_vec(), 6)
}

fn median(mut times: Vec<Duration>) -> (Duration, Duration) {
    times.sort();
    (times[times.len() / 2], times[0])
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

fn main() {
    let mut rng = Rng::new(11);
    for shape in &SHAPES {
        let program = program(&mut rng, shape);
        scenario(&program, shape, &mut rng);
    }
}

fn scenario(program: &Program, shape: &Shape, rng: &mut Rng) {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    // Recent enough for the store's default retention when the binary opens it.
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("epoch")
        .as_secs();
    let start = UNIX_EPOCH + Duration::from_secs(now - 2 * 3600);
    let db = Db::open(&store).expect("open");
    let mut bytes = 0usize;
    for i in 0..PROFILES {
        let at = start + INTERVAL * (i + 1);
        let raw = cpu_profile(program, shape, rng, at);
        bytes += raw.len();
        db.append(&[profile(
            labels("bench", "10.0.0.1:6060", "process_cpu"),
            raw,
            at,
        )])
        .expect("append");
    }
    let end = start + INTERVAL * (PROFILES + 1);
    println!(
        "{}: {PROFILES} CPU profiles of one service, mean {:.1} KiB gzipped",
        shape.name,
        bytes as f64 / f64::from(PROFILES) / 1024.0
    );

    // Where the time goes, single-threaded: reading the store, then decoding too.
    let all = |_: &[(String, String)]| true;
    let t = Instant::now();
    let mut read = 0usize;
    db.select(&all, start, end, &mut |_, _, b| {
        read += b.len();
        Ok(())
    })
    .expect("select");
    let read_time = t.elapsed();
    let limits = scraper::pprof::Limits::default();
    let t = Instant::now();
    let mut raw_bytes = 0usize;
    db.select(&all, start, end, &mut |_, _, b| {
        raw_bytes += scraper::pprof::gunzip(b, &limits).expect("gunzips").len();
        Ok(())
    })
    .expect("select");
    let gunzip_time = t.elapsed();
    let t = Instant::now();
    let mut samples = 0usize;
    let mut stacks = scraper::pprof::stacks::RawStacks::new();
    db.select(&all, start, end, &mut |_, _, b| {
        stacks.load(b, &limits).expect("loads");
        for i in 0..stacks.sample_count() {
            stacks.read_sample(i).expect("sample");
        }
        samples += stacks.sample_count();
        Ok(())
    })
    .expect("select");
    let walk_time = t.elapsed();
    println!(
        "  one thread: reading {:.1} MB {}; + gunzip to {:.1} MB {}; + parsing and reading {} samples {}",
        read as f64 / 1e6,
        ms(read_time),
        raw_bytes as f64 / 1e6,
        ms(gunzip_time),
        samples,
        ms(walk_time)
    );

    let query = Query {
        selector: Selector::parse(r#"{service_name="bench"}"#).expect("selector"),
        profile_type: ProfileType::parse("process_cpu:cpu:nanoseconds:cpu:nanoseconds")
            .expect("type"),
        from: start,
        to: end,
        exclude_straddling: false,
    };
    let stores = Stores::new(vec![("pyroscope.store.bench".to_string(), Arc::new(db))]);
    let mut times = Vec::new();
    let mut shape = (0, 0, 0);
    for _ in 0..RUNS {
        let t = Instant::now();
        let mut s = stores.tree(&query, &[]).expect("tree").expect("profiles");
        let fg = flame_graph(&mut s.tree, 8192);
        let nodes: usize = fg.levels.iter().map(|l| l.len() / 4).sum();
        let message = q::FlameGraph {
            names: fg.names,
            levels: fg
                .levels
                .into_iter()
                .map(|values| q::Level { values })
                .collect(),
            total: fg.total,
            max_self: fg.max_self,
        }
        .encode_to_vec();
        times.push(t.elapsed());
        shape = (s.tree.len(), nodes, message.len());
    }
    let (med, min) = median(times);
    println!(
        "  in process: tree of {} nodes, flame graph of {} nodes ({} KiB): median {}, min {}",
        shape.0,
        shape.1,
        shape.2 / 1024,
        ms(med),
        ms(min)
    );
    drop(stores);

    // End to end through the real binary.
    let scraper = server_support::Scraper::start(&format!(
        "pyroscope.store \"local\" {{\n  path = {:?}\n}}\n",
        store.to_str().expect("utf-8")
    ));
    let request = q::SelectMergeStacktracesRequest {
        profile_type_id: "process_cpu:cpu:nanoseconds:cpu:nanoseconds".into(),
        label_selector: r#"{service_name="bench"}"#.into(),
        start: start.duration_since(UNIX_EPOCH).expect("epoch").as_millis() as i64,
        end: end.duration_since(UNIX_EPOCH).expect("epoch").as_millis() as i64 - 1,
        ..Default::default()
    }
    .encode_to_vec();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let url = scraper.url("/querier.v1.QuerierService/SelectMergeStacktraces");
    let client = reqwest::Client::new();
    let call = || {
        rt.block_on(async {
            let resp = client
                .post(&url)
                .header("content-type", "application/proto")
                .body(request.clone())
                .send()
                .await
                .expect("send");
            let status = resp.status().as_u16();
            let body = resp.bytes().await.expect("body");
            (status, body.len())
        })
    };
    // The store opens in the background.
    let deadline = Instant::now() + Duration::from_secs(30);
    while call().0 != 200 {
        assert!(
            Instant::now() < deadline,
            "store never opened:\n{}",
            scraper.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..RUNS {
        let t = Instant::now();
        let (status, len) = call();
        times.push(t.elapsed());
        assert_eq!(status, 200);
        size = len;
    }
    let (med, min) = median(times);
    println!(
        "  end to end (HTTP, scraper run): response {} KiB: median {}, min {}",
        size / 1024,
        ms(med),
        ms(min)
    );
}
