//! A scrape target for load tests: many targets on one port (`/t/<i>/debug/pprof/allocs`), each
//! serving a synthetic Go heap profile whose cumulative values grow on every request, so the
//! scraper computes real deltas. Responses can be held until a common release instant, so
//! every target's body arrives at once: the worst case for memory.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use prost::Message as _;
use scraper::pprof::proto::{Function, Line, Location, Profile, Sample, ValueType};

/// Heap profiles of `stacks` distinct stacks (8 frames each), `versions` of them: version `v`
/// has every cumulative (`alloc_*`) value multiplied by `v + 1`; `inuse_*` stay. Gzipped.
pub fn heap_versions(stacks: usize, versions: usize) -> Vec<Bytes> {
    let functions = (stacks / 2).max(16);
    let mut strings = vec![String::new()];
    let mut intern = |s: String| {
        strings.push(s);
        (strings.len() - 1) as i64
    };
    let types = [
        ("alloc_objects", "count"),
        ("alloc_space", "bytes"),
        ("inuse_objects", "count"),
        ("inuse_space", "bytes"),
    ];
    let sample_type: Vec<ValueType> = types
        .iter()
        .map(|(t, u)| ValueType {
            r#type: intern((*t).to_string()),
            unit: intern((*u).to_string()),
        })
        .collect();
    let period_type = ValueType {
        r#type: intern("space".into()),
        unit: intern("bytes".into()),
    };
    let file = intern("/src/app/generated.go".into());
    let function: Vec<Function> = (0..functions)
        .map(|i| Function {
            id: i as u64 + 1,
            name: intern(format!("example.com/app/pkg{}.Func{i}", i % 37)),
            system_name: 0,
            filename: file,
            start_line: i as i64,
        })
        .collect();
    let location: Vec<Location> = (0..functions)
        .map(|i| Location {
            id: i as u64 + 1,
            mapping_id: 0,
            address: 0x40_0000 + 16 * i as u64,
            line: vec![Line {
                function_id: i as u64 + 1,
                line: 10 + i as i64,
                column: 0,
            }],
            is_folded: false,
        })
        .collect();
    // A deterministic pseudo-random walk: distinct stacks for distinct i (the leaf is i itself).
    let stack = |i: usize| -> Vec<u64> {
        let mut x = (i as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut ids = vec![(i % functions) as u64 + 1];
        for _ in 1..8 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ids.push(x % functions as u64 + 1);
        }
        ids
    };
    let stacks_ids: Vec<Vec<u64>> = (0..stacks).map(stack).collect();
    (0..versions)
        .map(|v| {
            let k = v as i64 + 1;
            let sample = stacks_ids
                .iter()
                .enumerate()
                .map(|(i, ids)| {
                    let objects = (i % 97) as i64 + 1;
                    Sample {
                        location_id: ids.clone(),
                        value: vec![objects * k, objects * 4096 * k, objects, objects * 4096],
                        label: vec![],
                    }
                })
                .collect();
            let p = Profile {
                sample_type: sample_type.clone(),
                sample,
                mapping: vec![],
                location: location.clone(),
                function: function.clone(),
                string_table: strings.clone(),
                drop_frames: 0,
                keep_frames: 0,
                time_nanos: 1_700_000_000_000_000_000 + v as i64,
                duration_nanos: 0,
                period_type: Some(period_type),
                period: 524_288,
                comment: vec![],
                default_sample_type: 0,
                doc_url: 0,
            };
            let raw = p.encode_to_vec();
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            std::io::Write::write_all(&mut gz, &raw).expect("gzip");
            Bytes::from(gz.finish().expect("gzip"))
        })
        .collect()
}

struct Inner {
    versions: Vec<Bytes>,
    /// Requests started, per target.
    started: Vec<AtomicU64>,
    /// 0: answer at once; else hold every answer until the next multiple of this (ms, wall).
    hold_ms: u64,
}

/// The running server.
pub struct ProfileServer {
    pub addr: SocketAddr,
    inner: Arc<Inner>,
    task: tokio::task::JoinHandle<()>,
}

impl ProfileServer {
    /// Serves `targets` targets on 127.0.0.1, each cycling through `versions`.
    pub async fn start(targets: usize, versions: Vec<Bytes>, hold: Duration) -> ProfileServer {
        let inner = Arc::new(Inner {
            versions,
            started: (0..targets).map(|_| AtomicU64::new(0)).collect(),
            hold_ms: hold.as_millis() as u64,
        });
        let app = Router::new()
            .route("/t/{i}/debug/pprof/allocs", axum::routing::get(serve))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        ProfileServer { addr, inner, task }
    }

    /// `__address__` and path prefix of target `i`.
    pub fn target(&self, i: usize) -> (String, String) {
        (self.addr.to_string(), format!("/t/{i}"))
    }

    /// Requests started for target `i`.
    pub fn started(&self, i: usize) -> u64 {
        self.inner.started[i].load(Ordering::Relaxed)
    }
}

impl Drop for ProfileServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn serve(State(inner): State<Arc<Inner>>, Path(i): Path<usize>) -> Response {
    let Some(counter) = inner.started.get(i) else {
        return StatusCode::NOT_FOUND.into_response();
    };
    let n = counter.fetch_add(1, Ordering::Relaxed);
    if inner.hold_ms > 0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis() as u64;
        let wait = inner.hold_ms - now % inner.hold_ms;
        tokio::time::sleep(Duration::from_millis(wait)).await;
    }
    let body = inner.versions[n as usize % inner.versions.len()].clone();
    ([(header::CONTENT_TYPE, "application/octet-stream")], body).into_response()
}
