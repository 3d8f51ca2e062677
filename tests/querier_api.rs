//! Pyroscope's query API served by `scraper run` over its `pyroscope.store`: a store filled
//! here is opened by the real binary, then read back through `/querier.v1.QuerierService/*`
//! with the generated messages, through `scraper query/labels/series --url`, and through the
//! explorer's flame graph endpoint; answers are checked against the same store read directly
//! (`scraper query --store`) and against stacks computed here from the decoded profiles.

mod server_support;
mod store_support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message as _;
use scraper::pprof::proto::Profile as Pprof;
use scraper::protocols::pyroscope::proto::querier::v1 as q;
use scraper::protocols::pyroscope::proto::types::v1 as t;
use scraper::query::flamegraph::decode_stacks;
use scraper::store::Db;
use server_support::{BIN, Scraper};
use store_support::{labels, pprof, profile};

const CPU: &str = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const SAMPLES: &str = "process_cpu:samples:count:cpu:nanoseconds";
const STEP: Duration = Duration::from_secs(15);
/// Profiles per series.
const PROFILES: u32 = 12;

/// The window the store holds: recent enough for the default retention.
struct Window {
    start: SystemTime,
    end: SystemTime,
}

fn ms(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .expect("after epoch")
        .as_millis() as i64
}

fn secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).expect("after epoch").as_secs()
}

/// A generated CPU profile whose own time says it covers the 15 s before `at`.
fn cpu_profile(seed: u64, at: SystemTime) -> Vec<u8> {
    let raw = store_support::gunzip(&pprof(seed, 60, 80));
    let mut p = Pprof::decode(raw.as_slice()).expect("decodes");
    p.time_nanos = (at - STEP)
        .duration_since(UNIX_EPOCH)
        .expect("epoch")
        .as_nanos() as i64;
    scraper::pprof::gzip(&p.encode_to_vec(), 1)
}

/// `app` on two instances and `db` on one, every 15 s.
fn fill(dir: &Path) -> Window {
    let now = secs(SystemTime::now());
    let start = UNIX_EPOCH + Duration::from_secs(now - 600);
    let db = Db::open(dir).expect("open store");
    let series = [
        ("app", "10.0.0.1:6060"),
        ("app", "10.0.0.2:6060"),
        ("db", "10.0.0.3:6060"),
    ];
    let mut seed = 1;
    for i in 0..PROFILES {
        let at = start + STEP * (i + 1);
        let batch: Vec<_> = series
            .iter()
            .map(|(service, instance)| {
                seed += 1;
                profile(
                    labels(service, instance, "process_cpu"),
                    cpu_profile(seed, at),
                    at,
                )
            })
            .collect();
        db.append(&batch).expect("append");
    }
    Window {
        start,
        end: start + STEP * (PROFILES + 1),
    }
}

/// Root-first function-name stacks with summed values of sample type `index`, computed here
/// independently of the crate's tree.
fn name_stacks(p: &Pprof, index: usize) -> BTreeMap<Vec<String>, i64> {
    let s = |i: i64| p.string_table[i as usize].clone();
    let function: BTreeMap<u64, String> = p.function.iter().map(|f| (f.id, s(f.name))).collect();
    let location: BTreeMap<u64, Vec<String>> = p
        .location
        .iter()
        .map(|l| {
            let names = if l.line.is_empty() {
                vec![format!("{:x}", l.address)]
            } else {
                l.line
                    .iter()
                    .rev()
                    .map(|line| function[&line.function_id].clone())
                    .collect()
            };
            (l.id, names)
        })
        .collect();
    let mut out = BTreeMap::new();
    for sample in &p.sample {
        let v = sample.value[index];
        if v <= 0 {
            continue;
        }
        let stack: Vec<String> = sample
            .location_id
            .iter()
            .rev()
            .flat_map(|id| location[id].clone())
            .collect();
        *out.entry(stack).or_insert(0) += v;
    }
    out
}

fn as_map(stacks: Vec<(Vec<String>, i64)>) -> BTreeMap<Vec<String>, i64> {
    let mut out = BTreeMap::new();
    for (k, v) in stacks {
        *out.entry(k).or_insert(0) += v;
    }
    out
}

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run scraper")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A Connect call: (status, content type, content encoding, decoded body).
struct Reply {
    status: u16,
    content_type: String,
    encoding: Option<String>,
    body: Vec<u8>,
}

fn post(addr: &str, method: &str, content_type: &str, body: Vec<u8>, gzip: bool) -> Reply {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let client = reqwest::Client::new();
        let mut req = client
            .post(format!("http://{addr}/querier.v1.QuerierService/{method}"))
            .header("content-type", content_type)
            .header("connect-protocol-version", "1")
            .header("x-scope-orgid", "any-tenant");
        let body = if gzip {
            req = req
                .header("content-encoding", "gzip")
                .header("accept-encoding", "gzip");
            scraper::pprof::gzip(&body, 1)
        } else {
            body
        };
        let resp = req.body(body).send().await.expect("send");
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let content_type = header("content-type").unwrap_or_default();
        let encoding = header("content-encoding");
        let bytes = resp.bytes().await.expect("body").to_vec();
        let body = if encoding.as_deref() == Some("gzip") {
            store_support::gunzip(&bytes)
        } else {
            bytes
        };
        Reply {
            status,
            content_type,
            encoding,
            body,
        }
    })
}

fn call<Resp: prost::Message + Default>(
    addr: &str,
    method: &str,
    req: impl prost::Message,
) -> Resp {
    let reply = post(
        addr,
        method,
        "application/proto",
        req.encode_to_vec(),
        false,
    );
    assert_eq!(reply.status, 200, "{method}: {}", text(&reply.body));
    assert_eq!(reply.content_type, "application/proto");
    Resp::decode(reply.body.as_slice()).expect("decodes")
}

fn select(w: &Window, selector: &str, ty: &str) -> q::SelectMergeStacktracesRequest {
    q::SelectMergeStacktracesRequest {
        profile_type_id: ty.into(),
        label_selector: selector.into(),
        start: ms(w.start),
        end: ms(w.end) - 1,
        ..Default::default()
    }
}

/// The merged profile `scraper query` writes for `args` (then `-o FILE`).
fn query_file(dir: &Path, name: &str, args: &[&str]) -> Pprof {
    let out = dir.join(name);
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-o", out.to_str().expect("utf-8")]);
    let o = run(&all);
    assert!(o.status.success(), "{all:?}: {}", text(&o.stderr));
    let bytes = std::fs::read(&out).expect("written");
    scraper::pprof::decode(&bytes, &scraper::pprof::Limits::default()).expect("decodes")
}

#[test]
fn the_running_scraper_serves_its_store_as_a_pyroscope_querier() {
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let w = fill(&store);
    let scraper = Scraper::start(&format!(
        "pyroscope.store \"local\" {{\n  path = {:?}\n}}\n",
        store.to_str().expect("utf-8")
    ));
    let addr = scraper.addr.clone();
    let url = format!("http://{addr}");

    // The store opens in the background; ProfileTypes answers once it is.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let types: q::ProfileTypesResponse = loop {
        let req = q::ProfileTypesRequest {
            start: ms(w.start),
            end: ms(w.end),
        };
        let reply = post(
            &addr,
            "ProfileTypes",
            "application/proto",
            req.encode_to_vec(),
            false,
        );
        if reply.status == 200 {
            break q::ProfileTypesResponse::decode(reply.body.as_slice()).expect("decodes");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "store never opened: {} {}\n{}",
            reply.status,
            text(&reply.body),
            scraper.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let ids: Vec<&str> = types.profile_types.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, [CPU, SAMPLES]);
    assert_eq!(
        (
            types.profile_types[0].name.as_str(),
            types.profile_types[0].sample_type.as_str(),
            types.profile_types[0].period_unit.as_str()
        ),
        ("process_cpu", "cpu", "nanoseconds")
    );

    // `scraper query --url` against the scraper = `scraper query --store` on the same store.
    let (from, to) = (secs(w.start).to_string(), secs(w.end).to_string());
    let range = ["--from", from.as_str(), "--to", to.as_str()];
    let sel = r#"{service_name="app"}"#;
    let mut remote_args = vec!["query", sel, "--url", url.as_str()];
    remote_args.extend(range);
    let remote = query_file(dir.path(), "remote.pb.gz", &remote_args);
    let store_arg = store.to_str().expect("utf-8");
    let mut local_args = vec!["query", sel, "--store", store_arg];
    local_args.extend(range);
    let local = query_file(dir.path(), "local.pb.gz", &local_args);
    let cpu_index = |p: &Pprof| {
        p.sample_type
            .iter()
            .position(|vt| p.string_table[vt.r#type as usize] == "cpu")
            .expect("cpu samples")
    };
    let app = name_stacks(&local, cpu_index(&local));
    assert!(app.len() > 100, "{} stacks", app.len());
    assert_eq!(name_stacks(&remote, cpu_index(&remote)), app);
    let app_total: i64 = app.values().sum();

    // The flame graph decodes to the same stacks; gzip both ways.
    let req = q::SelectMergeStacktracesRequest {
        max_nodes: Some(1_000_000),
        ..select(&w, sel, CPU)
    };
    let reply = post(
        &addr,
        "SelectMergeStacktraces",
        "application/proto",
        req.encode_to_vec(),
        true,
    );
    assert_eq!(reply.status, 200, "{}", text(&reply.body));
    assert_eq!(reply.encoding.as_deref(), Some("gzip"));
    let fg = q::SelectMergeStacktracesResponse::decode(reply.body.as_slice())
        .expect("decodes")
        .flamegraph
        .expect("flame graph");
    assert_eq!(fg.names[0], "total");
    assert_eq!(fg.total, app_total);
    let levels: Vec<Vec<i64>> = fg.levels.iter().map(|l| l.values.clone()).collect();
    let stacks = as_map(decode_stacks(&fg.names, &levels, 4, 0, 2).expect("decodes"));
    assert_eq!(stacks, app);

    // The default max_nodes (8192) bounds the nodes; the total stays.
    let small: q::SelectMergeStacktracesResponse = call(
        &addr,
        "SelectMergeStacktraces",
        q::SelectMergeStacktracesRequest {
            max_nodes: Some(50),
            ..select(&w, sel, CPU)
        },
    );
    let small = small.flamegraph.expect("flame graph");
    let count = |levels: &[q::Level]| levels.iter().map(|l| l.values.len() / 4).sum::<usize>();
    // Ties at the cut and one "other" per parent may add some, never many.
    assert!(count(&small.levels) < 200, "{} nodes", count(&small.levels));
    assert!(count(&small.levels) < count(&fg.levels) / 4);
    assert_eq!(small.total, app_total);
    assert!(small.names.iter().any(|n| n == "other"));

    // PGO through the selector: the leaf-most 5 frames at most.
    let pgo: q::SelectMergeStacktracesResponse = call(
        &addr,
        "SelectMergeStacktraces",
        q::SelectMergeStacktracesRequest {
            format: q::ProfileFormat::Pprof as i32,
            stack_trace_selector: Some(t::StackTraceSelector {
                call_site: vec![],
                go_pgo: Some(t::GoPgo {
                    keep_locations: 5,
                    aggregate_callees: true,
                }),
            }),
            ..select(&w, sel, CPU)
        },
    );
    let pgo = Pprof::decode(pgo.pprof.expect("pprof").profile.as_slice()).expect("pprof");
    assert!(pgo.sample.iter().all(|s| s.location_id.len() <= 5));
    assert_eq!(
        pgo.sample.iter().map(|s| s.value[0]).sum::<i64>(),
        app_total
    );

    // Series, labels and values, as Pyroscope labels them.
    let series: q::SeriesResponse = call(
        &addr,
        "Series",
        q::SeriesRequest {
            matchers: vec![format!(
                r#"{{service_name="app", __profile_type__="{CPU}"}}"#
            )],
            label_names: vec![],
            start: ms(w.start),
            end: ms(w.end),
        },
    );
    assert_eq!(series.labels_set.len(), 2);
    for set in &series.labels_set {
        let get = |k: &str| {
            set.labels
                .iter()
                .find(|l| l.name == k)
                .map(|l| l.value.as_str())
        };
        assert_eq!(get("__profile_type__"), Some(CPU));
        assert_eq!(get("service_name"), Some("app"));
        assert_eq!(get("__delta__"), None);
    }
    let names: t::LabelNamesResponse = call(
        &addr,
        "LabelNames",
        t::LabelNamesRequest {
            matchers: vec![],
            start: ms(w.start),
            end: ms(w.end),
        },
    );
    for want in ["__name__", "__profile_type__", "instance", "service_name"] {
        assert!(
            names.names.iter().any(|n| n == want),
            "{want} in {:?}",
            names.names
        );
    }
    let values: t::LabelValuesResponse = call(
        &addr,
        "LabelValues",
        t::LabelValuesRequest {
            name: "service_name".into(),
            matchers: vec![],
            start: ms(w.start),
            end: ms(w.end),
        },
    );
    assert_eq!(values.names, ["app", "db"]);

    // SelectSeries: per instance, 60 s steps; the points add up to the merged total.
    let sum: q::SelectSeriesResponse = call(
        &addr,
        "SelectSeries",
        q::SelectSeriesRequest {
            profile_type_id: CPU.into(),
            label_selector: sel.into(),
            start: ms(w.start),
            end: ms(w.end) - 1,
            group_by: vec!["instance".into()],
            step: 60.0,
            ..Default::default()
        },
    );
    assert_eq!(sum.series.len(), 2);
    let points: f64 = sum
        .series
        .iter()
        .flat_map(|s| &s.points)
        .map(|p| p.value)
        .sum();
    assert_eq!(points as i64, app_total);
    for s in &sum.series {
        assert_eq!(s.labels.len(), 1);
        assert_eq!(s.labels[0].name, "instance");
        assert!(
            s.points
                .windows(2)
                .all(|p| p[1].timestamp - p[0].timestamp >= 60_000)
        );
        assert!(
            s.points
                .iter()
                .all(|p| (p.timestamp - ms(w.start)) % 60_000 == 0)
        );
    }
    let avg: q::SelectSeriesResponse = call(
        &addr,
        "SelectSeries",
        q::SelectSeriesRequest {
            profile_type_id: CPU.into(),
            label_selector: sel.into(),
            start: ms(w.start),
            end: ms(w.end) - 1,
            step: 60.0,
            aggregation: Some(t::TimeSeriesAggregationType::Average as i32),
            ..Default::default()
        },
    );
    assert_eq!(avg.series.len(), 1);
    assert!(avg.series[0].labels.is_empty());

    // Diff: app on the left, db on the right.
    let db_sel = r#"{service_name="db"}"#;
    let diff: q::DiffResponse = call(
        &addr,
        "Diff",
        q::DiffRequest {
            left: Some(select(&w, sel, CPU)),
            right: Some(select(&w, db_sel, CPU)),
        },
    );
    let diff = diff.flamegraph.expect("diff");
    assert_eq!(diff.left_ticks, app_total);
    let db_local = query_file(dir.path(), "db.pb.gz", &{
        let mut a = vec!["query", db_sel, "--store", store_arg];
        a.extend(range);
        a
    });
    let db_total: i64 = name_stacks(&db_local, cpu_index(&db_local)).values().sum();
    assert_eq!(diff.right_ticks, db_total);
    assert_eq!(diff.total, app_total + db_total);
    let levels: Vec<Vec<i64>> = diff.levels.iter().map(|l| l.values.clone()).collect();
    let right = as_map(decode_stacks(&diff.names, &levels, 7, 3, 5).expect("decodes"));
    assert_eq!(right.values().sum::<i64>(), db_total);

    // `scraper labels` and `scraper series` against the scraper.
    let mut args = vec!["labels", "--url", url.as_str()];
    args.extend(range);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(
        out.contains(r#"service_name (2 values): "app", "db""#),
        "{out}"
    );
    let mut args = vec!["series", r#"{service_name="app"}"#, "--url", url.as_str()];
    args.extend(range);
    let o = run(&args);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert_eq!(
        text(&o.stdout),
        format!(
            "{{instance=\"10.0.0.1:6060\", service_name=\"app\"}} {CPU}, {SAMPLES}\n{{instance=\"10.0.0.2:6060\", service_name=\"app\"}} {CPU}, {SAMPLES}\n"
        )
    );

    // The explorer's flame graph: the same graph, with what the UI normalises by.
    let explore = format!(
        "http://{addr}/api/v0/explore/flamegraph?type={CPU}&query=%7Bservice_name%3D%22app%22%7D&from={}&to={}&max_nodes=1000000",
        ms(w.start),
        ms(w.end)
    );
    let json: serde_json::Value = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(async {
            let body = reqwest::get(&explore)
                .await
                .expect("get")
                .bytes()
                .await
                .expect("body");
            serde_json::from_slice(&body).expect("json")
        });
    assert_eq!(json["total"], app_total);
    assert_eq!(json["names"][0], "total");
    assert_eq!(json["unit"], "nanoseconds");
    assert_eq!(json["measure"], "per_second");
    assert_eq!(json["profiles"], 2 * PROFILES);
    assert_eq!(json["series"], 2);
    assert_eq!(
        json["levels"].as_array().map(Vec::len),
        Some(fg.levels.len())
    );

    // Errors, as Connect JSON.
    let bad = post(
        &addr,
        "SelectMergeStacktraces",
        "application/proto",
        select(&w, "{service_name=", CPU).encode_to_vec(),
        false,
    );
    assert_eq!(bad.status, 400);
    let err: serde_json::Value = serde_json::from_slice(&bad.body).expect("json error");
    assert_eq!(err["code"], "invalid_argument");
    assert!(
        err["message"]
            .as_str()
            .unwrap_or("")
            .contains("label selector"),
        "{err}"
    );
    let unknown = post(
        &addr,
        "NoSuchMethod",
        "application/proto",
        Vec::new(),
        false,
    );
    assert_eq!(unknown.status, 404);
    let err: serde_json::Value = serde_json::from_slice(&unknown.body).expect("json error");
    assert_eq!(err["code"], "unimplemented");
    let json_codec = post(
        &addr,
        "ProfileTypes",
        "application/json",
        b"{}".to_vec(),
        false,
    );
    assert_eq!(json_codec.status, 415);
    let tree = post(
        &addr,
        "SelectMergeStacktraces",
        "application/proto",
        q::SelectMergeStacktracesRequest {
            format: q::ProfileFormat::Tree as i32,
            ..select(&w, sel, CPU)
        }
        .encode_to_vec(),
        false,
    );
    assert_eq!(tree.status, 501, "{}", text(&tree.body));
    // A span selector is refused whatever the format (pprof output used to drop it).
    let spans = post(
        &addr,
        "SelectMergeStacktraces",
        "application/proto",
        q::SelectMergeStacktracesRequest {
            format: q::ProfileFormat::Pprof as i32,
            span_selector: vec!["00f067aa0ba902b7".into()],
            ..select(&w, sel, CPU)
        }
        .encode_to_vec(),
        false,
    );
    assert_eq!(spans.status, 501, "{}", text(&spans.body));
    // max_nodes above upstream's ceiling is refused with upstream's message, not capped.
    let too_many = post(
        &addr,
        "SelectMergeStacktraces",
        "application/proto",
        q::SelectMergeStacktracesRequest {
            max_nodes: Some(2_000_000),
            ..select(&w, sel, CPU)
        }
        .encode_to_vec(),
        false,
    );
    assert_eq!(too_many.status, 400, "{}", text(&too_many.body));
    let err: serde_json::Value = serde_json::from_slice(&too_many.body).expect("json error");
    assert_eq!(err["code"], "invalid_argument");
    assert_eq!(
        err["message"],
        "max flamegraph nodes limit 2000000 is greater than allowed 1048576"
    );
}
