//! The explorer's JSON API (docs: the contract in `src/server/explore/mod.rs`) against the
//! real binary: two stores filled beforehand, `scraper run` serving them, every endpoint's
//! answer checked, and the downloads and the diff report (with its statistics) compared byte for
//! byte with what `scraper query -o`, `scraper pgo` and `scraper diff --html` write from the
//! same store.

mod server_support;
mod store_support;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use prost::Message as _;
use scraper::pprof::proto::{Function, Line, Location, Profile as Pprof, Sample, ValueType};
use scraper::store::Db;
use server_support::{BIN, Scraper};
use store_support::{labels, profile};

const CPU: &str = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
const SAMPLES: &str = "process_cpu:samples:count:cpu:nanoseconds";
/// CPU nanoseconds in every profile: one second of CPU per 15 s profile.
const CPU_NS: i64 = 1_000_000_000;

/// A 15 s CPU profile at `at` whose whole CPU time is in `leaf`, called by `main.main`.
fn cpu_profile(leaf: &str, at: SystemTime) -> Vec<u8> {
    let strings: Vec<String> = [
        "",
        "samples",
        "count",
        "cpu",
        "nanoseconds",
        "main.main",
        leaf,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let function = |id: u64, name: i64| Function {
        id,
        name,
        system_name: name,
        filename: 0,
        start_line: 1,
    };
    let location = |id: u64| Location {
        id,
        address: 0x1000 * id,
        line: vec![Line {
            function_id: id,
            line: 10,
            column: 0,
        }],
        ..Default::default()
    };
    let p = Pprof {
        sample_type: vec![
            ValueType { r#type: 1, unit: 2 },
            ValueType { r#type: 3, unit: 4 },
        ],
        period_type: Some(ValueType { r#type: 3, unit: 4 }),
        period: 10_000_000,
        duration_nanos: 15_000_000_000,
        time_nanos: nanos(at),
        function: vec![function(1, 5), function(2, 6)],
        location: vec![location(1), location(2)],
        sample: vec![Sample {
            location_id: vec![2, 1],
            value: vec![CPU_NS / 10_000_000, CPU_NS],
            label: vec![],
        }],
        string_table: strings,
        ..Default::default()
    };
    scraper::pprof::gzip(&p.encode_to_vec(), 6)
}

fn nanos(t: SystemTime) -> i64 {
    i64::try_from(t.duration_since(UNIX_EPOCH).expect("after 1970").as_nanos()).expect("fits")
}

fn ms(t: SystemTime) -> u64 {
    u64::try_from(
        t.duration_since(UNIX_EPOCH)
            .expect("after 1970")
            .as_millis(),
    )
    .expect("fits")
}

/// The times the test works with, recent enough for the store's default retention (24 h).
struct Times {
    /// A whole minute 30 minutes ago: the first profile.
    base: SystemTime,
    /// Four profiles of `main.alpha` from `base`, 15 s apart; the mark at +110 s; four of
    /// `main.beta` from +120 s.
    mark: SystemTime,
}

impl Times {
    fn new() -> Times {
        let now = ms(SystemTime::now()) / 1000;
        let base = UNIX_EPOCH + Duration::from_secs(now - now % 60 - 1800);
        Times {
            base,
            mark: base + Duration::from_secs(110),
        }
    }

    fn at(&self, secs: u64) -> SystemTime {
        self.base + Duration::from_secs(secs)
    }

    /// The profiles' times: before the mark, then after it.
    fn profiles(&self) -> Vec<SystemTime> {
        [0, 15, 30, 45, 120, 135, 150, 165]
            .iter()
            .map(|&s| self.at(s))
            .collect()
    }
}

/// Store `a`: service `app` (alpha before the mark, beta after) and the mark. Store `b`:
/// service `worker`, two profiles, and the same mark (as `POST /api/v0/marks` records it in
/// every store).
fn fill(a: &Path, b: &Path, t: &Times) {
    let db = Db::open(a).expect("open a");
    let batch: Vec<_> = t
        .profiles()
        .into_iter()
        .map(|at| {
            let leaf = if at < t.mark {
                "main.alpha"
            } else {
                "main.beta"
            };
            profile(
                labels("app", "10.0.0.1:6060", "process_cpu"),
                cpu_profile(leaf, at),
                at,
            )
        })
        .collect();
    db.append(&batch).expect("append a");
    db.add_mark("upgrade", t.mark).expect("mark a");
    let db = Db::open(b).expect("open b");
    let batch: Vec<_> = [t.at(0), t.at(15)]
        .into_iter()
        .map(|at| {
            profile(
                labels("worker", "10.0.0.2:6060", "process_cpu"),
                cpu_profile("main.work", at),
                at,
            )
        })
        .collect();
    db.append(&batch).expect("append b");
    db.add_mark("upgrade", t.mark).expect("mark b");
}

/// Runs the binary's offline command; panics with its stderr when it fails.
fn scraper(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run scraper");
    assert!(
        out.status.success(),
        "scraper {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

struct Client {
    http: reqwest::Client,
    scraper: Scraper,
}

impl Client {
    async fn get(&self, path: &str) -> reqwest::Response {
        self.http
            .get(self.scraper.url(path))
            .send()
            .await
            .expect("request")
    }

    /// The status and the JSON body.
    async fn json(&self, path: &str) -> (u16, serde_json::Value) {
        let resp = self.get(path).await;
        let status = resp.status().as_u16();
        let ctype = resp.headers()["content-type"]
            .to_str()
            .expect("ascii")
            .to_string();
        assert!(ctype.starts_with("application/json"), "{path}: {ctype}");
        let body = resp.bytes().await.expect("body");
        (status, serde_json::from_slice(&body).expect("JSON body"))
    }
}

const APP: &str = r#"{service_name="app"}"#;

fn enc(s: &str) -> String {
    scraper::gocompat::url::query_escape(s)
}

#[tokio::test]
async fn explore_endpoints_answer_from_every_open_store() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    let t = Times::new();
    fill(&a, &b, &t);
    let (from, to) = (ms(t.at(0)), ms(t.at(180)));
    let (before, after) = ((ms(t.at(0)), ms(t.mark)), (ms(t.mark), to));
    let store_a = a.to_str().expect("utf-8 path");

    // What the command line writes from store a, before the server holds it.
    let (pprof_file, pgo_file, html_file) = (
        dir.path().join("q.pb.gz"),
        dir.path().join("default.pgo"),
        dir.path().join("diff.html"),
    );
    let range = ["--from", &from.to_string(), "--to", &to.to_string()];
    scraper(
        &[
            &["query", APP, "--type", CPU, "--store", store_a, "-o"][..],
            &[pprof_file.to_str().expect("utf-8")],
            &range,
        ]
        .concat(),
    );
    scraper(
        &[
            &["pgo", APP, "--store", store_a, "-o"][..],
            &[pgo_file.to_str().expect("utf-8")],
            &range,
        ]
        .concat(),
    );
    let before_arg = format!("{}..{}", before.0, before.1);
    let after_arg = format!("{}..{}", after.0, after.1);
    scraper(&[
        "diff",
        APP,
        "--type",
        CPU,
        "--store",
        store_a,
        "--before",
        &before_arg,
        "--after",
        &after_arg,
        "--html",
        html_file.to_str().expect("utf-8"),
    ]);

    let config = format!(
        "pyroscope.store \"local\" {{\n  path = \"{}\"\n}}\n\npyroscope.store \"other\" {{\n  path = \"{}\"\n}}\n",
        a.display(),
        b.display()
    );
    let c = Client {
        http: reqwest::Client::new(),
        scraper: Scraper::start(&config),
    };

    // 1. The catalog, once both stores are open (they open as the components start).
    let catalog_path = format!("/api/v0/explore/catalog?from={from}&to={to}");
    let mut catalog = serde_json::Value::Null;
    for _ in 0..200 {
        let (status, body) = c.json(&catalog_path).await;
        if status == 200 && body["stores"].as_array().is_some_and(|s| s.len() == 2) {
            catalog = body;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        catalog["stores"],
        serde_json::json!(["pyroscope.store.local", "pyroscope.store.other"]),
        "{catalog}; logs:\n{}",
        c.scraper.logs()
    );
    // The types the stored profiles really have (samples/count and cpu/nanoseconds), as the
    // querier API lists them, not a table of what a `process_cpu` series usually holds.
    assert_eq!(
        catalog["profile_types"],
        serde_json::json!([
            {"id": CPU, "name": "process_cpu", "sample_type": "cpu", "sample_unit": "nanoseconds",
             "period_type": "cpu", "period_unit": "nanoseconds"},
            {"id": SAMPLES, "name": "process_cpu", "sample_type": "samples", "sample_unit": "count",
             "period_type": "cpu", "period_unit": "nanoseconds"},
        ])
    );
    assert_eq!(
        catalog["series"],
        serde_json::json!([
            {"labels": {"__delta__": "false", "__name__": "process_cpu", "instance": "10.0.0.1:6060", "service_name": "app"},
             "profile_types": [CPU, SAMPLES]},
            {"labels": {"__delta__": "false", "__name__": "process_cpu", "instance": "10.0.0.2:6060", "service_name": "worker"},
             "profile_types": [CPU, SAMPLES]},
        ])
    );
    // A range with nothing in it has no series, and is no error.
    let (status, empty) = c
        .json(&format!(
            "/api/v0/explore/catalog?from={}&to={}",
            to + 1000,
            to + 2000
        ))
        .await;
    assert_eq!((status, &empty["series"]), (200, &serde_json::json!([])));

    // 2. The timeline: one point per 15 s step, each 1 s of CPU over 15 s; the mark once,
    // though both stores hold it.
    let (status, timeline) = c
        .json(&format!(
            "/api/v0/explore/timeline?type={}&query={}&from={from}&to={to}&step=15",
            enc(CPU),
            enc(APP)
        ))
        .await;
    assert_eq!(status, 200, "{timeline}");
    let points: Vec<serde_json::Value> = t
        .profiles()
        .into_iter()
        .map(|at| serde_json::json!([ms(at), CPU_NS as f64 / 15.0]))
        .collect();
    assert_eq!(
        timeline,
        serde_json::json!({
            "unit": "nanoseconds", "measure": "per_second", "step": 15, "points": points,
            "marks": [{"name": "upgrade", "at": ms(t.mark)}],
        })
    );
    // Both services in one 60 s step: app's four alpha profiles and worker's two.
    let (_, both) = c
        .json(&format!(
            "/api/v0/explore/timeline?type=process_cpu&from={from}&to={}&step=60",
            ms(t.at(60))
        ))
        .await;
    assert_eq!(
        both["points"],
        serde_json::json!([[from, 6.0 * CPU_NS as f64 / 60.0]])
    );

    // 3. The flame graph over both stores: every profile, each store's series.
    let (status, fg) = c
        .json(&format!(
            "/api/v0/explore/flamegraph?type={}&from={from}&to={to}",
            enc(CPU)
        ))
        .await;
    assert_eq!(status, 200, "{fg}");
    assert_eq!(fg["total"], 10 * CPU_NS, "{fg}");
    assert_eq!(
        (&fg["profiles"], &fg["series"], &fg["measure"], &fg["unit"]),
        (
            &serde_json::json!(10),
            &serde_json::json!(2),
            &serde_json::json!("per_second"),
            &serde_json::json!("nanoseconds")
        )
    );

    // 4. The diff report: byte for byte what `scraper diff --html` wrote.
    let diff_path = format!(
        "/api/v0/explore/diff?type={}&query={}&before_from={}&before_to={}&after_from={}&after_to={}",
        enc(CPU),
        enc(APP),
        before.0,
        before.1,
        after.0,
        after.1
    );
    let resp = c.get(&diff_path).await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let html = resp.text().await.expect("body");
    assert!(html.contains("main.alpha") && html.contains("main.beta"));
    // With the statistics of `scraper diff`'s default parts: six scrapes per window.
    assert!(
        html.contains("<p class=\"stats\">") && html.contains("welch-bonferroni"),
        "no statistics in the explorer's report"
    );
    assert_eq!(
        html,
        std::fs::read_to_string(&html_file).expect("CLI report")
    );
    // A window with no data is a 400 naming it.
    let (status, err) = c
        .json(&format!(
            "/api/v0/explore/diff?type=process_cpu&before_from={}&before_to={}&after_from={}&after_to={}",
            to + 1000,
            to + 2000,
            after.0,
            after.1
        ))
        .await;
    assert_eq!(status, 400, "{err}");
    let message = err["error"].as_str().expect("error message");
    assert!(message.contains("the before window"), "{message}");

    // 5. The downloads: the bytes `scraper query -o` and `scraper pgo` wrote.
    for (path, file, name) in [
        (
            format!(
                "/api/v0/explore/pprof?type={}&query={}&from={from}&to={to}",
                enc(CPU),
                enc(APP)
            ),
            &pprof_file,
            "profile.pb.gz",
        ),
        (
            format!("/api/v0/explore/pgo?query={}&from={from}&to={to}", enc(APP)),
            &pgo_file,
            "default.pgo",
        ),
    ] {
        let resp = c.get(&path).await;
        assert_eq!(resp.status().as_u16(), 200, "{path}");
        assert_eq!(resp.headers()["content-type"], "application/octet-stream");
        assert_eq!(
            resp.headers()["content-disposition"],
            format!("attachment; filename=\"{name}\"").as_str()
        );
        let body = resp.bytes().await.expect("body");
        assert_eq!(
            body.as_ref(),
            std::fs::read(file).expect("CLI output").as_slice(),
            "{path}"
        );
    }
    // The download decodes, and holds both functions' CPU.
    let resp = c
        .get(&format!(
            "/api/v0/explore/pprof?type=process_cpu&query={}&from={from}&to={to}",
            enc(APP)
        ))
        .await;
    let merged = scraper::pprof::decode(
        &resp.bytes().await.expect("body"),
        &scraper::pprof::Limits::default(),
    )
    .expect("decodes");
    let total: i64 = merged.sample.iter().map(|s| s.value[0]).sum();
    assert_eq!(total, 8 * CPU_NS);

    // 6. Marks.
    let (status, marks) = c.json(&format!("/api/v0/marks?from={from}&to={to}")).await;
    assert_eq!(status, 200);
    assert_eq!(
        marks,
        serde_json::json!({"marks": [{"name": "upgrade", "at": ms(t.mark)}]})
    );

    // Bad parameters are 400s naming the parameter.
    for (path, want) in [
        (
            format!("/api/v0/explore/timeline?from={from}&to={to}"),
            "missing parameter type",
        ),
        (
            "/api/v0/explore/catalog?from=now-1h&to=now".to_string(),
            "invalid from \"now-1h\"",
        ),
        (
            format!("/api/v0/explore/pprof?type=process_cpu&query=%7Bx%3D%7D&from={from}&to={to}"),
            "invalid query",
        ),
        (
            format!(
                "/api/v0/explore/pprof?type=process_cpu&query={}&from={from}&to={to}",
                enc(r#"{service_name="ap"}"#)
            ),
            "did you mean service_name=\"app\"?",
        ),
        (
            format!("/api/v0/marks?from={to}&to={from}"),
            "to must be after from",
        ),
        (
            format!("/api/v0/explore/flamegraph?type=process_cpu&from={from}&to={to}&max_nodes=x"),
            "invalid max_nodes \"x\"",
        ),
        (
            format!("/api/v0/explore/flamegraph?type=process_cpu&from={to}&to={from}"),
            "to must be after from",
        ),
    ] {
        let (status, body) = c.json(&path).await;
        assert_eq!(status, 400, "{path}: {body}");
        let message = body["error"].as_str().expect("error message");
        assert!(message.contains(want), "{path}: {message}");
    }

    // The page and its assets.
    let resp = c.get("/explore").await;
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.headers()["content-type"], "text/html; charset=utf-8");
    let page = resp.text().await.expect("body");
    for (asset, ctype) in [
        ("explore.js", "text/javascript; charset=utf-8"),
        ("explore.css", "text/css; charset=utf-8"),
    ] {
        assert!(page.contains(&format!("/explore/assets/{asset}")), "{page}");
        let resp = c.get(&format!("/explore/assets/{asset}")).await;
        assert_eq!(resp.status().as_u16(), 200);
        assert_eq!(resp.headers()["content-type"], ctype);
        assert!(!resp.bytes().await.expect("body").is_empty());
    }
    assert_eq!(
        c.get("/explore/assets/nope.js").await.status().as_u16(),
        404
    );
}

#[tokio::test]
async fn without_a_store_the_explorer_says_so() {
    let c = Client {
        http: reqwest::Client::new(),
        scraper: Scraper::start("logging {\n  level = \"info\"\n}\n"),
    };
    for path in [
        "/api/v0/explore/catalog?from=1&to=2",
        "/api/v0/explore/timeline?type=process_cpu&from=1&to=2",
        "/api/v0/explore/flamegraph?type=process_cpu&from=1&to=2",
        "/api/v0/marks?from=1&to=2",
    ] {
        let (status, body) = c.json(path).await;
        assert_eq!(status, 404, "{path}: {body}");
        let message = body["error"].as_str().expect("error message");
        assert!(
            message.contains("no pyroscope.store is configured"),
            "{path}: {message}"
        );
    }
}
