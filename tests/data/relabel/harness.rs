//! Shared oracle harness for `tests/relabel_oracle.rs` and `tests/relabel_prop.rs`: runs a real
//! Prometheus (Debian's `prometheus` package) over many relabel jobs at once and reads back what
//! it did, so our engine can be compared with Prometheus' own relabelling code.
//!
//! How a job is observed (Prometheus 2.42, the Debian bookworm build):
//! * Each (rules, target) pair is one scrape job with `file_sd_configs` pointing at its own JSON
//!   file holding the target's labels (`__address__` via `targets`, the rest as group labels),
//!   and the case's rules as `relabel_configs`. One target per job, so targets never collapse
//!   into one another and every job's fate is unambiguous.
//! * Before relabelling, Prometheus adds `__meta_filepath` (file SD) and, where absent or empty,
//!   `job`, `__scheme__`, `__metrics_path__`, `__scrape_interval__`, `__scrape_timeout__`. The
//!   input we hand our engine is exactly that set (`full_input`); a control job with no rules
//!   checks this reconstruction against Prometheus' own `discoveredLabels` (which 2.42 corrupts
//!   for jobs whose rules modify labels, so they are not used otherwise).
//! * After the case's rules, "observer" rules are appended: a `labelmap` copying every label
//!   `X` to `zz_oracle_X` (the targets API hides `__`-prefixed labels and finalisation deletes
//!   `__meta_*`), then fixed `__address__`, `__scheme__`, `__metrics_path__`,
//!   `__scrape_interval__`, `__scrape_timeout__`, so finalisation (`no address`, `/` in the
//!   address, interval parsing) can never fail and hide a target. The relabel output is then
//!   exactly `{X: v | zz_oracle_X = v}` among the active target's `labels`.
//! * A job with no active target was dropped by the case's rules; the number of such jobs
//!   must equal the number of `droppedTargets` (else some target failed, which is an error).
//! * Batching: 2.42's file SD needs one inotify instance per `file_sd_configs` entry and Linux
//!   allows 128 per user by default, so jobs are packed into as few Prometheus processes as
//!   that budget allows (one per ~110 jobs), run one after another.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use scraper::relabel::{LabelSet, Relabeler, RuleConfig};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Labels as a sorted map.
pub type Labels = BTreeMap<String, String>;

/// The prefix observer rules give copied labels.
pub const OBSERVED: &str = "zz_oracle_";

/// Scrape settings every job gets (they appear as labels in the input).
pub const SCRAPE_INTERVAL: &str = "1h";
pub const SCRAPE_TIMEOUT: &str = "10s";

/// One job: a rule list and one target's discovered labels (`__address__` included).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OracleJob {
    pub rules: Vec<RuleConfig>,
    pub target: Labels,
}

/// What Prometheus did with one job.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OracleOutcome {
    /// The full pre-relabel label set (what our engine is given).
    pub input: Labels,
    /// The relabelled labels, or `None` when the rules dropped the target.
    pub output: Option<Labels>,
}

/// `$SCRAPER_PROMETHEUS_BIN` when set (another Prometheus build; a path that does not exist
/// counts as missing), else the first `prometheus` on PATH, else Debian's `/usr/bin/prometheus`.
pub fn find_prometheus() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("SCRAPER_PROMETHEUS_BIN") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let candidates = std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join("prometheus"))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    candidates
        .into_iter()
        .chain([PathBuf::from("/usr/bin/prometheus")])
        .find(|p| p.is_file())
}

/// The Prometheus binary, or `None` with a printed reason (the test then skips). With
/// `SCRAPER_REQUIRE_ORACLE=1` a missing binary is a failure, not a skip.
pub fn prometheus_or_skip(test: &str) -> Option<PathBuf> {
    match find_prometheus() {
        Some(p) => Some(p),
        None => {
            let required = std::env::var("SCRAPER_REQUIRE_ORACLE").is_ok_and(|v| v == "1");
            assert!(
                !required,
                "{test}: SCRAPER_REQUIRE_ORACLE=1 but no `prometheus` binary was found \
                 (Debian package prometheus; .ci/run installs it)"
            );
            eprintln!(
                "SKIPPED {test}: no `prometheus` binary (Debian package prometheus; .ci/run installs it); \
                 set SCRAPER_REQUIRE_ORACLE=1 to make this a failure"
            );
            None
        }
    }
}

/// `prometheus --version`'s first line.
pub fn prometheus_version(prom: &Path) -> String {
    Command::new(prom)
        .arg("--version")
        .output()
        .ok()
        .map(|o| {
            let all = [o.stdout, o.stderr].concat();
            String::from_utf8_lossy(&all)
                .lines()
                .next()
                .unwrap_or("")
                .to_owned()
        })
        .unwrap_or_default()
}

/// `promtool check config` on a config with one job using `rules`: `Ok(())` when accepted,
/// else the error message (after promtool's `FAILED: parsing YAML file …: ` prefix).
pub fn promtool_check(promtool: &Path, dir: &Path, rules: &[RuleConfig]) -> Result<(), String> {
    let config = json!({
        "scrape_configs": [{
            "job_name": "check",
            "static_configs": [{ "targets": ["127.0.0.1:9"] }],
            "relabel_configs": rules.iter().map(prom_rule).collect::<Vec<_>>(),
        }],
    });
    let path = dir.join("check.yml");
    std::fs::write(&path, config.to_string()).map_err(|e| format!("writing config: {e}"))?;
    let out = Command::new(promtool)
        .arg("check")
        .arg("config")
        .arg(&path)
        .output()
        .map_err(|e| format!("running promtool: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let text = String::from_utf8_lossy(&[out.stdout, out.stderr].concat()).into_owned();
    let prefix = format!("parsing YAML file {}: ", path.display());
    let msg = text
        .lines()
        .find_map(|l| l.split_once(&prefix).map(|(_, m)| m.to_owned()))
        .unwrap_or(text);
    Err(msg)
}

/// True for a 2.x Prometheus (legacy label names, `^(?:…)$` regex wrapper).
pub fn is_prometheus_2(version: &str) -> bool {
    version.contains("version 2.")
}

/// The label set Prometheus relabels for `target` in job `job` with SD file `file`.
pub fn full_input(target: &Labels, job: &str, file: &str) -> Labels {
    let mut l: Labels = target
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // File SD's group label: always set by Prometheus (the group's own value is overwritten).
    l.insert("__meta_filepath".into(), file.into());
    for (k, v) in [
        ("job", job),
        ("__scrape_interval__", SCRAPE_INTERVAL),
        ("__scrape_timeout__", SCRAPE_TIMEOUT),
        ("__metrics_path__", "/metrics"),
        ("__scheme__", "http"),
    ] {
        l.entry(k.into()).or_insert_with(|| v.into());
    }
    l
}

/// Our engine on `input`: `None` = dropped.
pub fn engine(rules: &[RuleConfig], input: &Labels) -> Result<Option<Labels>, String> {
    let r = Relabeler::new(rules).map_err(|e| format!("rule {}: {e}", e.index()))?;
    let mut l = LabelSet::from(input);
    Ok(r.process(&mut l).then(|| l.to_map()))
}

/// A rule as Prometheus YAML (emitted as JSON, which YAML reads). Fields at their default are
/// omitted: Prometheus refuses e.g. an explicit `regex` on keepequal.
pub fn prom_rule(r: &RuleConfig) -> Value {
    let mut m = serde_json::Map::new();
    m.insert("action".into(), json!(r.action.as_str()));
    if let Some(src) = &r.source_labels
        && !src.is_empty()
    {
        m.insert("source_labels".into(), json!(src));
    }
    if r.separator != ";" {
        m.insert("separator".into(), json!(r.separator));
    }
    if r.regex != "(.*)" {
        m.insert("regex".into(), json!(r.regex));
    }
    if r.modulus != 0 {
        m.insert("modulus".into(), json!(r.modulus));
    }
    if !r.target_label.is_empty() {
        m.insert("target_label".into(), json!(r.target_label));
    }
    if r.replacement != "$1" {
        m.insert("replacement".into(), json!(r.replacement));
    }
    Value::Object(m)
}

fn observer_rules() -> Vec<Value> {
    let mut v = vec![json!({
        "action": "labelmap",
        "regex": "(.*)",
        "replacement": format!("{OBSERVED}${{1}}"),
    })];
    for (t, val) in [
        ("__address__", "127.0.0.1:9"),
        ("__scheme__", "http"),
        ("__metrics_path__", "/metrics"),
        ("__scrape_interval__", SCRAPE_INTERVAL),
        ("__scrape_timeout__", SCRAPE_TIMEOUT),
    ] {
        v.push(json!({"action": "replace", "target_label": t, "replacement": val}));
    }
    v
}

struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// Minimal HTTP/1.0 GET (no client crate needed; Go answers 1.0 without chunking).
fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(|e| e.to_string())?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf).map_err(|e| e.to_string())?;
    let text = String::from_utf8(buf).map_err(|e| e.to_string())?;
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| "malformed HTTP response".to_string())?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line in {head:?}"))?;
    Ok((status, body.to_owned()))
}

fn labels_of(v: &Value) -> Labels {
    v.as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// How many file-SD jobs one Prometheus may run: 2.42's file SD takes one inotify instance per
/// `file_sd_configs` entry, and Linux limits instances per user
/// (`fs.inotify.max_user_instances`, 128 by default; Prometheus logs "too many open files"
/// and silently drops the job's targets beyond it). We leave room for instances already in
/// use by other processes of this user.
pub fn jobs_per_prometheus() -> usize {
    let max: usize = std::fs::read_to_string("/proc/sys/fs/inotify/max_user_instances")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(128);
    let in_use = std::fs::read_dir("/proc")
        .map(|procs| {
            procs
                .flatten()
                .filter_map(|p| std::fs::read_dir(p.path().join("fd")).ok())
                .flat_map(|fds| fds.flatten())
                .filter(|fd| {
                    std::fs::read_link(fd.path())
                        .is_ok_and(|l| l.to_string_lossy() == "anon_inode:inotify")
                })
                .count()
        })
        .unwrap_or(0);
    max.saturating_sub(in_use + 8).clamp(8, 2000)
}

/// Runs every job through Prometheus and returns the outcomes in job order. Jobs go into as
/// few Prometheus processes as the inotify budget allows (usually one per ~100 jobs), run one
/// after another. `dir_name` is a fixed directory under the temp dir (fixed so
/// `__meta_filepath`, which is part of every input, is the same from run to run and
/// recordings are stable).
pub fn run_oracle(
    prom: &Path,
    dir_name: &str,
    jobs: &[OracleJob],
) -> Result<Vec<OracleOutcome>, String> {
    let dir = std::env::temp_dir().join(dir_name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sd")).map_err(|e| e.to_string())?;
    let per_run = jobs_per_prometheus();
    let mut out = Vec::with_capacity(jobs.len());
    for (b, chunk) in jobs.chunks(per_run).enumerate() {
        let first = b * per_run;
        out.extend(run_batch(prom, &dir, first, chunk)?);
    }
    Ok(out)
}

fn run_batch(
    prom: &Path,
    dir: &Path,
    first: usize,
    jobs: &[OracleJob],
) -> Result<Vec<OracleOutcome>, String> {
    let mut scrape_configs = Vec::new();
    let mut inputs = Vec::new();
    let mut names = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let name = format!("j{:04}", first + i);
        let file = dir.join("sd").join(format!("{name}.json"));
        let file_str = file.to_string_lossy().into_owned();
        let address = job.target.get("__address__").cloned().unwrap_or_default();
        let group_labels: Labels = job
            .target
            .iter()
            .filter(|(k, _)| *k != "__address__")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let sd = json!([{ "targets": [address], "labels": group_labels }]);
        std::fs::write(&file, sd.to_string()).map_err(|e| e.to_string())?;
        let mut rules: Vec<Value> = job.rules.iter().map(prom_rule).collect();
        rules.extend(observer_rules());
        scrape_configs.push(json!({
            "job_name": name,
            "file_sd_configs": [{ "files": [file_str], "refresh_interval": "1h" }],
            "relabel_configs": rules,
        }));
        inputs.push(full_input(&job.target, &name, &file_str));
        names.push(name);
    }
    let config = json!({
        "global": {
            "scrape_interval": SCRAPE_INTERVAL,
            "scrape_timeout": SCRAPE_TIMEOUT,
            "evaluation_interval": "1h",
        },
        "scrape_configs": scrape_configs,
    });
    let config_path = dir.join(format!("prometheus-{first}.yml"));
    std::fs::write(&config_path, config.to_string()).map_err(|e| e.to_string())?;
    let data = dir.join(format!("data-{first}"));
    let log_path = dir.join(format!("prometheus-{first}.log"));

    let mut last_err = String::new();
    // A free port can be taken between our probe and Prometheus' bind: retry a few times.
    for _ in 0..3 {
        let port = free_port()?;
        let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
        let child = Command::new(prom)
            .arg(format!("--config.file={}", config_path.display()))
            .arg(format!("--storage.tsdb.path={}", data.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .arg("--log.level=warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .map_err(|e| format!("starting {}: {e}", prom.display()))?;
        let mut running = Running { child };
        match collect(&mut running, port, &names, &inputs) {
            Ok(out) => return Ok(out),
            Err(e) => {
                let log = std::fs::read_to_string(&log_path).unwrap_or_default();
                last_err = format!("{e}\n--- prometheus log (tail) ---\n{}", tail(&log, 40));
                if running.child.try_wait().ok().flatten().is_none() {
                    // Prometheus is up but the result is wrong: retrying will not help.
                    return Err(last_err);
                }
            }
        }
    }
    Err(last_err)
}

fn tail(s: &str, n: usize) -> String {
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

fn collect(
    running: &mut Running,
    port: u16,
    names: &[String],
    inputs: &[Labels],
) -> Result<Vec<OracleOutcome>, String> {
    let njobs = names.len();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(Some(status)) = running.child.try_wait() {
            return Err(format!("prometheus exited early: {status}"));
        }
        if Instant::now() > deadline {
            return Err("timed out waiting for Prometheus to report every target".into());
        }
        std::thread::sleep(Duration::from_millis(250));
        let Ok((200, body)) = http_get(port, "/api/v1/targets?state=any") else {
            continue;
        };
        let v: Value = serde_json::from_str(&body).map_err(|e| e.to_string())?;
        let active = v["data"]["activeTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let dropped = v["data"]["droppedTargets"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if active.len() + dropped.len() < njobs {
            continue;
        }
        let mut outputs: Vec<Option<Labels>> = vec![None; njobs];
        let mut seen = vec![false; njobs];
        for t in &active {
            let pool = t["scrapePool"].as_str().unwrap_or_default();
            let idx = names
                .iter()
                .position(|n| n == pool)
                .ok_or_else(|| format!("unexpected scrape pool {pool:?}"))?;
            if seen[idx] {
                return Err(format!("job {pool} has more than one active target"));
            }
            seen[idx] = true;
            let labels = labels_of(&t["labels"]);
            outputs[idx] = Some(
                labels
                    .iter()
                    .filter_map(|(k, v)| {
                        k.strip_prefix(OBSERVED).map(|k| (k.to_owned(), v.clone()))
                    })
                    .collect(),
            );
            // Check our reconstruction of the input where 2.42 leaves it intact (no rules
            // before the observers: they only add labels, which does not corrupt it).
            let disc = labels_of(&t["discoveredLabels"]);
            if disc.contains_key("__meta_oracle_control") && disc != inputs[idx] {
                return Err(format!(
                    "input reconstruction differs for control job {pool}:\n prometheus {disc:?}\n ours       {:?}",
                    inputs[idx]
                ));
            }
        }
        let not_active = seen.iter().filter(|s| !**s).count();
        if not_active != dropped.len() {
            return Err(format!(
                "{not_active} jobs have no active target but Prometheus reports {} dropped targets",
                dropped.len()
            ));
        }
        return Ok(inputs
            .iter()
            .zip(outputs)
            .map(|(input, output)| OracleOutcome {
                input: input.clone(),
                output,
            })
            .collect());
    }
}

/// A recorded comparison: one job, what Prometheus did, and whether Alloy is documented to
/// differ there (then `prometheus` is informational).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Recorded {
    pub case: String,
    pub rules: Vec<RuleConfig>,
    pub input: Labels,
    /// Prometheus' output (`null` = dropped).
    pub prometheus: Option<Labels>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub divergence: Option<String>,
}

/// Path of a recording under `tests/data/relabel/`.
pub fn recording_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/relabel")
        .join(name)
}

/// True when the recordings should be rewritten from a live Prometheus.
pub fn recording_requested() -> bool {
    std::env::var("SCRAPER_RECORD_ORACLE").is_ok_and(|v| v == "1")
}

/// Writes a recording as pretty JSON, one entry per job.
pub fn write_recording(name: &str, entries: &[Recorded]) {
    let text = serde_json::to_string_pretty(entries).expect("recording serialises");
    std::fs::write(recording_path(name), text + "\n").expect("writing the recording");
}

/// Reads a recording.
pub fn read_recording(name: &str) -> Vec<Recorded> {
    let path = recording_path(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Compares our engine with recorded Prometheus outputs; returns one message per mismatch.
pub fn replay(entries: &[Recorded]) -> Vec<String> {
    let mut failures = Vec::new();
    for e in entries.iter().filter(|e| e.divergence.is_none()) {
        match engine(&e.rules, &e.input) {
            Ok(ours) if ours == e.prometheus => {}
            Ok(ours) => failures.push(format!(
                "{}: ours {ours:?}\n  prometheus {:?}\n  rules {:?}\n  input {:?}",
                e.case, e.prometheus, e.rules, e.input
            )),
            Err(err) => failures.push(format!("{}: rules refused: {err}", e.case)),
        }
    }
    failures
}
