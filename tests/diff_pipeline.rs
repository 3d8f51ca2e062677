//! The pipeline step end to end (docs/DIFF-PIPELINE.md): `scraper run` scrapes a real Go
//! program; `scraper window --mark` records the change through the running scraper, waits for
//! the after window while the program's CPU moves from `main.alphaWork` to `main.betaWork`,
//! reads the profiles back through the scraper's own query API (the sidecar's way) and exits 3
//! because `function=~^main\.beta>5%` held. `--use-mark` then judges the same windows from the
//! store without waiting and exits 0 (alpha shrank, the total is steady). The JSON documents
//! (of `window` and of `scraper diff --format json`) are validated against
//! docs/diff-report.schema.json by the `jsonschema` crate, and the markdown is read back as
//! tables by pulldown-cmark. Usage errors exit 2 and errors 1.
//!
//! The windows are 9 s (three 2 s CPU profiles each, one every 3 s) to keep the test short.
//! Until `diff` computes statistics, the conditions are judged on the point estimates
//! (`--missing-statistics estimates`); with statistics they are judged on the verdicts.

mod scrape_support;
mod support;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use scrape_support::{BIN, Scraper, build_go, eventually, have_go, start_go};
use serde_json::Value;

const SELECTOR: &str = r#"{service_name="scrapeapp"}"#;
const MARK: &str = "switch to beta";

fn config(target: &str, store: &Path) -> String {
    let app: &[(&str, &str)] = &[("__address__", target), ("service_name", "scrapeapp")];
    support::alloy::scrape_into_store(&[app], &["process_cpu"], store)
}

fn scraper(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().expect("run scraper")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The complaints about `doc` of docs/diff-report.schema.json made strict, from the
/// `jsonschema` crate (draft 2020-12): the published schema lets later versions add fields,
/// the test lets no field through that the schema does not describe.
fn schema_errors(doc: &Value) -> Vec<String> {
    fn tighten(v: &mut Value) {
        match v {
            Value::Object(o) => {
                if o.contains_key("properties") {
                    o.insert("additionalProperties".to_string(), Value::Bool(false));
                }
                o.values_mut().for_each(tighten);
            }
            Value::Array(a) => a.iter_mut().for_each(tighten),
            _ => {}
        }
    }
    let path = support::tools::repo().join("docs/diff-report.schema.json");
    let mut schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("schema")).expect("JSON");
    tighten(&mut schema);
    let validator = jsonschema::draft202012::new(&schema).expect("compile the schema");
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

fn document(json: &str) -> Value {
    let doc: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{e}: {json}"));
    assert_eq!(schema_errors(&doc), Vec::<String>::new(), "{doc:#}");
    doc
}

/// The function column of the markdown's function table, as a GFM renderer reads it.
fn markdown_functions(md: &str) -> Vec<String> {
    use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};
    let (mut tables, mut first_cells) = (0, Vec::new());
    let mut at_row_start = false;
    let mut cell = None::<String>;
    for event in Parser::new_ext(md, Options::ENABLE_TABLES) {
        match event {
            Event::Start(Tag::Table(_)) => tables += 1,
            Event::Start(Tag::TableRow) => at_row_start = true,
            Event::Start(Tag::TableCell) if at_row_start && tables == 2 => {
                cell = Some(String::new())
            }
            Event::Code(t) | Event::Text(t) => {
                if let Some(c) = cell.as_mut() {
                    c.push_str(&t);
                }
            }
            Event::End(TagEnd::TableCell) => {
                at_row_start = false;
                first_cells.extend(cell.take());
            }
            _ => {}
        }
    }
    assert_eq!(tables, 2, "{md}");
    first_cells
}

async fn marks(addr: &str) -> Vec<Value> {
    let url = format!("http://{addr}/api/v0/marks?from=0&to=99999999999999");
    let Ok(resp) = reqwest::get(&url).await else {
        return Vec::new();
    };
    let body: Value =
        serde_json::from_str(&resp.text().await.unwrap_or_default()).unwrap_or_default();
    body["marks"].as_array().cloned().unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn window_marks_waits_and_exits_with_the_verdict() {
    // Usage errors are clap's exit code 2, before anything is recorded (no Go needed).
    for args in [
        &["window", "--mark", "x", "--fail-on", "total>5"][..],
        &[
            "window",
            "--mark",
            "x",
            "--fail-on",
            r"function=~main.(beta>5%",
        ],
        &["window"],
        &["diff", "--around-mark", "x", "--format", "yaml"],
        // Typos clap cannot see are usage errors too, found before a mark is recorded or a
        // source is opened (nothing listens at --server, and there is no store).
        &["window", "{service_name=", "--mark", "x"],
        &["window", "--type", "cpu:x", "--mark", "x"],
        &["window", "--mark", "x", "--width", "30"],
        &["window", "--mark", "x", "--width", "0s"],
        &["window", "--mark", "x", "--settle", "soon"],
        &["window", "--mark", "x", "--end", "tomorrow"],
        &["window", "--mark", "x", "--end", "now-1h"],
        &["window", "--at", "now", "--end", "now-1h"],
        &["window", "--at", "noon"],
        &["window", "--at", "now", "--use-mark", "x"],
        // Spans past what the clock holds: an error, not an overflow panic.
        &["window", "--at", "now", "--width", "18446744073709551615w"],
        &["window", "--at", "now", "--settle", "18446744073709551615w"],
        &[
            "window",
            "--mark",
            "x",
            "--width",
            "18446744073709551615w9d",
        ],
        &["diff", "{a=", "--around-mark", "x"],
        &["diff", "--type", "a:b", "--around-mark", "x"],
        &["diff", "--around-mark", "x", "--width", "5"],
        &[
            "diff",
            "--before",
            "now-1h..now-2h",
            "--after",
            "now-1h..now",
        ],
    ] {
        let out = scraper(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", text(&out));
    }
    let out = scraper(&[
        "window",
        "--mark",
        "x",
        "--fail-on",
        r"function=~main.(beta>5%",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("column 11: error parsing regexp: missing closing ): `main.(beta`"),
        "{err}"
    );

    if !have_go() {
        return;
    }

    let app = build_go("scrapeapp");
    // Busy enough that a 2 s CPU profile holds ~120 samples: parts vary by ~9 %.
    let (_proc, target) = start_go(&app.bin, &["-duty", "0.6", "-fn", "alpha"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let store = dir.path().join("store");
    let s = Scraper::start(|_| config(&target, &store)).await;
    // The before window's profiles (12 s).
    tokio::time::sleep(Duration::from_secs(14)).await;

    // 1. Mark, switch, wait, judge: exit 3.
    let json_file = dir.path().join("window.json");
    let child = Command::new(BIN)
        .args([
            "window",
            SELECTOR,
            "--mark",
            MARK,
            "--server",
            &s.addr,
            "--width",
            "12s",
            // The switch below happens just after the mark: the profile that spans it mixes
            // alpha and beta, and would widen the intervals.
            "--skip",
            "3s",
            "--settle",
            "4s",
            // Judged on the statistics (no --missing-statistics): beta is new, with confidence.
            "--fail-on",
            r"function=~^main\.beta>5%",
            "--format",
            "markdown",
            "--json",
            &json_file.to_string_lossy(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start scraper window");
    let marked = eventually(Duration::from_secs(30), || async {
        marks(&s.addr).await.iter().any(|m| m["name"] == MARK)
    })
    .await;
    if !marked {
        let mut child = child;
        let _ = child.kill();
        let out = child.wait_with_output().expect("scraper window");
        panic!("the mark was not recorded: {}", text(&out));
    }
    let resp = reqwest::get(format!("http://{target}/work?fn=beta"))
        .await
        .expect("switch");
    assert!(resp.status().is_success());
    let out = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("scraper window");
    let shown = text(&out);
    eprintln!("{shown}");
    assert_eq!(out.status.code(), Some(3), "{shown}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("mark \"switch to beta\" recorded at "),
        "{shown}"
    );
    // Not a terminal: plain progress lines, no carriage returns.
    assert!(
        stderr.contains("after window [") && !stderr.contains('\r'),
        "{shown}"
    );
    assert!(
        stderr.contains(r"fail-on function=~^main\.beta>5%: HELD")
            && stderr.contains("main.betaWork"),
        "{shown}"
    );
    let functions = markdown_functions(&String::from_utf8_lossy(&out.stdout));
    assert!(
        functions.iter().any(|f| f == "main.betaWork"),
        "{functions:?}"
    );
    let doc = document(&std::fs::read_to_string(&json_file).expect("--json written"));
    assert_eq!(doc["exit_code"], 3);
    assert_eq!(doc["fail_on"]["held"], true);
    assert_eq!(doc["fail_on"]["basis"], "statistics", "{doc}");
    let triggers = doc["fail_on"]["conditions"][0]["triggers"]
        .as_array()
        .expect("triggers");
    assert!(
        triggers.iter().all(|t| t["function"] == "main.betaWork"),
        "{triggers:?}"
    );
    assert!(!triggers.is_empty());

    // 2. The same mark again, from the store, with the after window over: no waiting.
    // alpha shrank: exit 0. (The total is left a wide margin: on a loaded machine the program
    // gets less CPU in one window than in the other.)
    let at = marks(&s.addr)
        .await
        .iter()
        .find(|m| m["name"] == MARK)
        .and_then(|m| m["at"].as_u64())
        .expect("the mark's time");
    let end = (at + 9_000).to_string();
    let store_arg = store.to_string_lossy().into_owned();
    let out = scraper(&[
        "window",
        SELECTOR,
        "--use-mark",
        MARK,
        "--end",
        &end,
        "--width",
        "9s",
        // Over for as long as the first window's --settle: nothing to wait for.
        "--settle",
        "4s",
        "--store",
        &store_arg,
        "--fail-on",
        r"function=~^main\.alpha>5%",
        "--fail-on",
        "total>400%",
        "--missing-statistics",
        "estimates",
        "--format",
        "json",
    ]);
    let shown = text(&out);
    eprintln!("{shown}");
    assert_eq!(out.status.code(), Some(0), "{shown}");
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("waiting"),
        "{shown}"
    );
    let doc = document(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(
        doc["fail_on"]["basis"],
        if doc["statistics"].is_null() {
            "estimates"
        } else {
            "statistics"
        }
    );
    let conditions = doc["fail_on"]["conditions"].as_array().expect("conditions");
    assert_eq!(conditions.len(), 2);
    assert!(
        conditions.iter().all(|c| c["held"] == false),
        "{conditions:?}"
    );
    let alpha = doc["rows"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["function"] == "main.alphaWork"))
        .expect("alpha's row");
    assert!(
        alpha["cum"]["change_pct"]
            .as_f64()
            .is_some_and(|p| p < -50.0),
        "{alpha}"
    );

    // 3. `scraper diff --format json` around the mark: the same document.
    let out = scraper(&[
        "diff",
        SELECTOR,
        "--store",
        &store_arg,
        "--around-mark",
        MARK,
        "--width",
        "9s",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = document(&String::from_utf8_lossy(&out.stdout));
    assert!(
        doc["title"].as_str().is_some_and(|t| t.contains(MARK)),
        "{doc}"
    );
    assert_eq!(doc["fail_on"]["basis"], "not_evaluated");
    // Through the running scraper's query API (docs/QUERY.md): the marks come from its
    // /api/v0/marks, as a Pyroscope backend has none.
    let url = format!("http://{}", s.addr);
    let out = scraper(&[
        "diff",
        SELECTOR,
        "--url",
        &url,
        "--around-mark",
        MARK,
        "--width",
        "9s",
        "--format",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let doc = document(&String::from_utf8_lossy(&out.stdout));
    assert!(
        doc["title"].as_str().is_some_and(|t| t.contains(MARK)),
        "{doc}"
    );

    // 4. Errors are exit code 1: a selector that matches nothing (found before any mark is
    // recorded or any wait), a mark that does not exist, and conditions that need
    // statistics the report lacks (only while `diff` has none to give).
    let out = scraper(&[
        "window",
        r#"{service_name="typo"}"#,
        "--mark",
        "never recorded",
        "--server",
        &s.addr,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no process_cpu series match"),
        "{}",
        text(&out)
    );
    // The right selector with a profile type the program does not have (only CPU is
    // scraped): found as early.
    let out = scraper(&[
        "window",
        SELECTOR,
        "--type",
        "memory",
        "--mark",
        "never recorded",
        "--server",
        &s.addr,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("no memory series match")
            && err.contains("the selector matches series with profile types process_cpu:")
            && err.contains("(not memory)"),
        "{}",
        text(&out)
    );
    assert!(
        marks(&s.addr)
            .await
            .iter()
            .all(|m| m["name"] != "never recorded")
    );
    let out = scraper(&["window", "--use-mark", "no such mark", "--server", &s.addr]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no mark named \"no such mark\""));
    if doc["statistics"].is_null() {
        let out = scraper(&[
            "diff",
            SELECTOR,
            "--store",
            &store_arg,
            "--around-mark",
            MARK,
            "--width",
            "9s",
            "--fail-on",
            "total>5%",
        ]);
        assert_eq!(out.status.code(), Some(1), "{}", text(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("--fail-on needs statistics"),
            "{}",
            text(&out)
        );
    }
}
