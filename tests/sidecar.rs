//! config/sidecar: the OpenTelemetry Collector with scraper as a sidecar.
//!
//! The manifest parses and carries config/sidecar/scraper.alloy byte for byte, which
//! `scraper check` accepts; the Deployment runs the sidecar hardened, with probes, and the
//! collector serves pprof on localhost:1777; kubernetes-validate --strict accepts every object
//! (and README.md's PersistentVolumeClaim variant); and end to end, the sidecar config scrapes a
//! real Go net/http/pprof program into the local store, where README.md's own `kubectl exec`
//! commands (`scraper mark`, `diff --around-mark`, `pgo`, `query`) run as documented.

mod scrape_support;
mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant, SystemTime};

use scrape_support::{BIN, Scraper, build_go, have_go, start_go};
use serde::Deserialize as _;
use serde_json::Value;

const EXEC_PREFIX: &str = "kubectl exec deploy/otel-collector -c scraper -- ";
const POD_STORE: &str = "/var/lib/scraper/pyroscope.store.local";
const TYPES: [&str; 5] = ["process_cpu", "memory", "goroutine", "mutex", "block"];

fn sidecar_dir() -> PathBuf {
    support::tools::repo().join("config/sidecar")
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Every non-empty document of a multi-document YAML text.
fn documents(yaml: &str) -> Vec<Value> {
    serde_norway::Deserializer::from_str(yaml)
        .map(|doc| Value::deserialize(doc).expect("a YAML document"))
        .filter(|v| !v.is_null())
        .collect()
}

fn manifest() -> Vec<Value> {
    documents(&read(&sidecar_dir().join("otel-collector.yaml")))
}

fn object<'a>(docs: &'a [Value], kind: &str, name: &str) -> &'a Value {
    docs.iter()
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name} in otel-collector.yaml"))
}

fn container<'a>(deployment: &'a Value, name: &str) -> &'a Value {
    deployment["spec"]["template"]["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no container {name}"))
}

/// The pod volume a container mounts at `path`.
fn volume_at<'a>(deployment: &'a Value, container: &Value, path: &str) -> &'a Value {
    let mount = container["volumeMounts"]
        .as_array()
        .expect("volumeMounts")
        .iter()
        .find(|m| m["mountPath"] == path)
        .unwrap_or_else(|| panic!("nothing mounted at {path}"));
    deployment["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["name"] == mount["name"])
        .unwrap_or_else(|| panic!("no volume {}", mount["name"]))
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .unwrap_or_else(|| panic!("not a list: {v}"))
        .iter()
        .map(|s| s.as_str().expect("a string"))
        .collect()
}

/// `scraper check` with the real binary; (success, stderr).
fn check(path: &Path, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new(BIN)
        .arg("check")
        .arg(path)
        .envs(env.iter().copied())
        .output()
        .expect("run scraper check");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn manifest_carries_the_sidecar_config_which_passes_check() {
    let docs = manifest();
    let kinds: Vec<&str> = docs.iter().map(|d| d["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["ConfigMap", "ConfigMap", "Deployment"]);

    let file = sidecar_dir().join("scraper.alloy");
    let alloy = read(&file);
    let in_map = object(&docs, "ConfigMap", "scraper-config")["data"]["config.alloy"]
        .as_str()
        .expect("scraper-config has config.alloy");
    assert!(
        in_map == alloy,
        "the ConfigMap's config.alloy differs from config/sidecar/scraper.alloy"
    );

    let (ok, err) = check(&file, &[]);
    assert!(ok, "scraper check {}: {err}", file.display());
    // Already in canonical form, so `scraper fmt -w` leaves the two copies equal.
    let out = Command::new(BIN)
        .arg("fmt")
        .arg(&file)
        .output()
        .expect("scraper fmt");
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stdout) == alloy,
        "not in `scraper fmt` form"
    );

    // The optional backend, uncommented as README.md says, is a valid config too.
    let start = alloy
        .find("// pyroscope.write \"backend\" {")
        .expect("the commented-out backend block");
    let (head, tail) = alloy.split_at(start);
    let uncommented: String = tail
        .lines()
        .map(|l| {
            let l = l.strip_prefix("//").expect("commented out");
            format!("{}\n", l.strip_prefix(' ').unwrap_or(l))
        })
        .collect();
    let forward = "\tforward_to = [pyroscope.store.local.receiver]\n\t// With a backend: ";
    assert!(head.contains(forward), "the commented-out forward_to line");
    let with_backend = format!("{}{uncommented}", head.replace(forward, "\t"));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("with-backend.alloy");
    std::fs::write(&path, &with_backend).expect("write");
    let (ok, err) = check(
        &path,
        &[
            ("PYROSCOPE_USERNAME", "123456"),
            ("PYROSCOPE_PASSWORD", "secret"),
        ],
    );
    assert!(ok, "with the backend uncommented: {err}\n{with_backend}");
    assert!(with_backend.contains(
        "forward_to = [pyroscope.store.local.receiver, pyroscope.write.backend.receiver]"
    ));
}

#[test]
fn deployment_runs_the_hardened_sidecar_next_to_the_collector_pprof_extension() {
    let docs = manifest();
    let deployment = object(&docs, "Deployment", "otel-collector");
    assert_eq!(deployment["spec"]["replicas"], 1);

    let scraper = container(deployment, "scraper");
    assert_eq!(scraper["image"], "scraper:0.1.0");
    assert_eq!(
        strings(&scraper["args"]),
        [
            "run",
            "/etc/scraper/config.alloy",
            "--server.http.listen-addr=0.0.0.0:12345",
            "--storage.path=/var/lib/scraper",
        ]
    );
    let sc = &scraper["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["runAsUser"], 65532);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    assert_eq!(sc["allowPrivilegeEscalation"], false);
    assert_eq!(strings(&sc["capabilities"]["drop"]), ["ALL"]);
    assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault");
    // Liveness is not /-/healthy, which a backend outage turns to 500 (docs/PUSH.md).
    for (probe, path) in [
        ("livenessProbe", "/-/ready"),
        ("readinessProbe", "/-/ready"),
    ] {
        assert_eq!(scraper[probe]["httpGet"]["path"], path, "{probe}");
        assert_eq!(scraper[probe]["httpGet"]["port"], 12345, "{probe}");
    }
    assert_eq!(scraper["resources"]["requests"]["cpu"], "50m");
    assert_eq!(scraper["resources"]["requests"]["memory"], "64Mi");
    assert_eq!(scraper["resources"]["limits"]["memory"], "256Mi");
    // The downward API feeds the config's sys.env("POD_NAMESPACE") / sys.env("POD_NAME").
    let env = scraper["env"].as_array().expect("env");
    for (name, field) in [
        ("POD_NAMESPACE", "metadata.namespace"),
        ("POD_NAME", "metadata.name"),
    ] {
        let var = env
            .iter()
            .find(|e| e["name"] == name)
            .unwrap_or_else(|| panic!("no env {name}"));
        assert_eq!(var["valueFrom"]["fieldRef"]["fieldPath"], field);
    }
    let config = volume_at(deployment, scraper, "/etc/scraper");
    assert_eq!(config["configMap"]["name"], "scraper-config");
    let data = volume_at(deployment, scraper, "/var/lib/scraper");
    assert!(
        data["emptyDir"]["sizeLimit"].is_string(),
        "the store's emptyDir has no sizeLimit: {data}"
    );

    // The collector serves pprof on localhost:1777, with the extension enabled in service.
    let collector = container(deployment, "otel-collector");
    let args = strings(&collector["args"]);
    let config_file = args
        .iter()
        .find_map(|a| a.strip_prefix("--config="))
        .expect("--config=FILE");
    let (dir, key) = config_file.rsplit_once('/').expect("a path");
    let volume = volume_at(deployment, collector, dir);
    let map = object(
        &docs,
        "ConfigMap",
        volume["configMap"]["name"].as_str().expect("a ConfigMap"),
    );
    let text = map["data"][key].as_str().expect("the collector's config");
    let config: Value = serde_norway::from_str(text).expect("collector config is YAML");
    assert_eq!(config["extensions"]["pprof"]["endpoint"], "localhost:1777");
    assert!(strings(&config["service"]["extensions"]).contains(&"pprof"));
    assert!(config["receivers"]["otlp"].is_object());
    assert!(config["exporters"]["debug"].is_object());
    let traces = &config["service"]["pipelines"]["traces"];
    assert_eq!(strings(&traces["receivers"]), ["otlp"]);
    assert!(strings(&traces["exporters"]).contains(&"debug"));
    let sc = &collector["securityContext"];
    assert_eq!(sc["runAsNonRoot"], true);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
}

/// The JSON array of a Dockerfile instruction such as `CMD [...]`.
fn exec_form(dockerfile: &str, instruction: &str) -> Vec<String> {
    let line = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix(instruction)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no {instruction} in the Dockerfile"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("{instruction} {line}: {e}"))
}

#[test]
fn image_defaults_match_the_sidecar() {
    let dockerfile = read(&support::tools::repo().join("Dockerfile"));
    assert_eq!(exec_form(&dockerfile, "ENTRYPOINT"), ["/usr/bin/scraper"]);
    let docs = manifest();
    let scraper = container(object(&docs, "Deployment", "otel-collector"), "scraper");
    // The image's default command is the sidecar's: the same config path, address and storage.
    assert_eq!(exec_form(&dockerfile, "CMD"), strings(&scraper["args"]));
    assert!(dockerfile.lines().any(|l| l == "USER 65532:65532"));
    assert!(dockerfile.lines().any(|l| l == "EXPOSE 12345"));
    // The embedded default config scrapes 127.0.0.1:12345, which 0.0.0.0:12345 answers.
    assert!(dockerfile.contains("COPY config/local.alloy /etc/scraper/config.alloy"));
    let local = read(&support::tools::repo().join("config/local.alloy"));
    assert!(local.contains("\"__address__\"  = \"127.0.0.1:12345\""));
}

/// README.md's YAML blocks: (complete objects, partial snippets).
fn readme_yaml() -> (Vec<Value>, Vec<Value>) {
    let readme = read(&sidecar_dir().join("README.md"));
    let mut objects = Vec::new();
    let mut snippets = Vec::new();
    for block in readme.split("```yaml\n").skip(1) {
        let body = block.split("```").next().expect("closed block");
        for doc in documents(body) {
            if doc.get("apiVersion").is_some() {
                objects.push(doc);
            } else {
                snippets.push(doc);
            }
        }
    }
    (objects, snippets)
}

#[test]
fn kubernetes_validate_accepts_every_object() {
    let Some(validator) = support::tools::kubernetes_validate() else {
        return;
    };
    let text = read(&sidecar_dir().join("otel-collector.yaml"));
    for version in ["1.30.0", "1.37.0"] {
        support::tools::validate_manifests(&validator, &text, version, "otel-collector.yaml");
    }

    // README.md's PersistentVolumeClaim, and the Deployment with README.md's snippet applied
    // (Recreate, the store's volume from the claim).
    let (objects, snippets) = readme_yaml();
    let pvc = objects
        .iter()
        .find(|o| o["kind"] == "PersistentVolumeClaim")
        .expect("README.md's PersistentVolumeClaim");
    let [patch] = snippets.as_slice() else {
        panic!("README.md should have one Deployment snippet: {snippets:?}");
    };
    let mut deployment = object(&manifest(), "Deployment", "otel-collector").clone();
    deployment["spec"]["strategy"] = patch["spec"]["strategy"].clone();
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_array_mut()
        .expect("volumes");
    for new in patch["spec"]["template"]["spec"]["volumes"]
        .as_array()
        .expect("snippet volumes")
    {
        let old = volumes
            .iter_mut()
            .find(|v| v["name"] == new["name"])
            .unwrap_or_else(|| panic!("the snippet replaces no volume: {new}"));
        *old = new.clone();
    }
    let claim = volume_at(
        &deployment,
        container(&deployment, "scraper"),
        "/var/lib/scraper",
    );
    assert_eq!(
        claim["persistentVolumeClaim"]["claimName"],
        pvc["metadata"]["name"]
    );
    assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
    let yaml = [pvc, &deployment]
        .iter()
        .map(|o| serde_json::to_string_pretty(o).expect("json"))
        .collect::<Vec<_>>()
        .join("\n---\n");
    for version in ["1.30.0", "1.37.0"] {
        support::tools::validate_manifests(&validator, &yaml, version, "README.md's PVC variant");
    }
}

/// Splits a command line the way a POSIX shell would for what README.md uses: words, '...'
/// and "..." quoting.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for c in chars.by_ref() {
                    if c == '\'' {
                        break;
                    }
                    word.push(c);
                }
            }
            '"' => {
                in_word = true;
                while let Some(c) = chars.next() {
                    match c {
                        '"' => break,
                        '\\' => word.extend(chars.next()),
                        c => word.push(c),
                    }
                }
            }
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    if in_word {
        words.push(word);
    }
    words
}

/// A `kubectl exec ... -- scraper ...` command of README.md: the scraper's arguments and the
/// local file its standard error goes to (`2> FILE`).
#[derive(Debug)]
struct Documented {
    line: String,
    args: Vec<String>,
    stderr_to: Option<String>,
}

fn documented_commands() -> Vec<Documented> {
    let readme = read(&sidecar_dir().join("README.md"));
    readme
        .lines()
        .filter_map(|l| l.trim_start().strip_prefix(EXEC_PREFIX).map(|c| (l, c)))
        .map(|(line, command)| {
            let mut words = shell_words(command);
            assert_eq!(words[0], "scraper", "{line}");
            words.remove(0);
            let mut stderr_to = None;
            if let Some(i) = words.iter().position(|w| w == "2>") {
                assert_eq!(i + 2, words.len(), "`2> FILE` ends the command: {line}");
                stderr_to = words.pop();
                words.pop();
            }
            for w in &words {
                assert!(
                    !["|", ">", "&&", ";", "2>&1"].contains(&w.as_str()),
                    "unexpected shell syntax in {line}"
                );
            }
            Documented {
                line: line.trim().to_string(),
                args: words,
                stderr_to,
            }
        })
        .collect()
}

/// Runs a documented command with the store at `store` and the scraper at `server`; stderr is
/// piped as `kubectl exec` hands it over and, with `2> FILE`, saved under `dir`. Returns
/// (stdout, the saved file).
fn run_documented(
    cmd: &Documented,
    store: &Path,
    server: &str,
    dir: &Path,
) -> (String, Option<PathBuf>) {
    let mut args: Vec<String> = cmd
        .args
        .iter()
        .map(|a| {
            if a == POD_STORE {
                store.to_string_lossy().into_owned()
            } else {
                a.clone()
            }
        })
        .collect();
    if args[0] == "mark" {
        args.extend(["--server".to_string(), server.to_string()]);
    }
    let started = Instant::now();
    let out = Command::new(BIN).args(&args).output().expect("run scraper");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{}\nfailed ({:?}): {stdout}{stderr}",
        cmd.line,
        out.status
    );
    eprintln!(
        "ran in {:.1}s: {}\n{stdout}",
        started.elapsed().as_secs_f64(),
        cmd.line
    );
    let saved = cmd.stderr_to.as_ref().map(|name| {
        let path = dir.join(name);
        std::fs::write(&path, &out.stderr).expect("save stderr");
        path
    });
    if saved.is_none() {
        assert!(out.stderr.is_empty(), "{}: {stderr}", cmd.line);
    }
    (stdout, saved)
}

/// `forwarded_total` per profile type of the scrape component.
async fn forwarded(s: &Scraper) -> std::collections::HashMap<String, u64> {
    s.targets("pyroscope.scrape.otel_collector")
        .await
        .iter()
        .map(|t| {
            (
                t["profile_type"].as_str().unwrap_or_default().to_string(),
                t["forwarded_total"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

async fn wait_forwarded(
    s: &Scraper,
    timeout: Duration,
    what: &str,
    done: impl Fn(&std::collections::HashMap<String, u64>) -> bool,
) {
    let deadline = Instant::now() + timeout;
    loop {
        let f = forwarded(s).await;
        if done(&f) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for {what}: forwarded {f:?}\n{}",
            s.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn decode_pprof(path: &Path) -> scraper::pprof::proto::Profile {
    let raw = std::fs::read(path).expect("saved profile");
    scraper::pprof::decode(&raw, &scraper::pprof::Limits::default())
        .unwrap_or_else(|e| panic!("{} is not a pprof profile: {e}", path.display()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn readme_workflow_runs_against_a_go_program() {
    if !have_go() {
        return;
    }
    let test_started = Instant::now();
    let commands = documented_commands();
    let of =
        |sub: &str| -> Vec<&Documented> { commands.iter().filter(|c| c.args[0] == sub).collect() };
    assert_eq!(of("mark").len(), 1, "{commands:#?}");
    assert_eq!(of("diff").len(), 1, "{commands:#?}");
    assert_eq!(of("pgo").len(), 1, "{commands:#?}");
    assert_eq!(of("query").len(), 2, "{commands:#?}");

    // A Go net/http/pprof program stands in for the collector's pprof extension; the sidecar
    // config is used as shipped but for its port.
    let app = build_go("scrapeapp");
    let (_proc, target) = start_go(&app.bin, &["-duty", "0.2", "-fn", "alpha"]);
    let port = target.rsplit_once(':').expect("host:port").1;
    let shipped = read(&sidecar_dir().join("scraper.alloy"));
    assert!(shipped.contains(r#""__address__"  = "localhost:1777","#));
    let config = shipped.replace("localhost:1777", &format!("localhost:{port}"));
    let (namespace, pod) = ("observability", "otel-collector-6d9f7c8b5-x2k4q");
    let s = Scraper::start_with_env(
        |_| config,
        &[("POD_NAMESPACE", namespace), ("POD_NAME", pod)],
    )
    .await;
    let store = s
        .config
        .parent()
        .expect("temp dir")
        .join("data/pyroscope.store.local");
    let out_dir = tempfile::tempdir().expect("tempdir");

    // The mark right after the first CPU profile arrives, so that the next one (scraped every
    // 15 s) usually starts after it and fills the "after" window.
    wait_forwarded(&s, Duration::from_secs(40), "a CPU profile", |f| {
        f.get("process_cpu").is_some_and(|&n| n >= 1)
    })
    .await;
    let mark = of("mark")[0];
    let (out, _) = run_documented(mark, &store, &s.addr, out_dir.path());
    assert!(out.contains("recorded"), "{out}");
    wait_forwarded(&s, Duration::from_secs(45), "every profile type", |f| {
        TYPES.iter().all(|t| f.get(*t).is_some_and(|&n| n >= 1))
            && f.get("process_cpu").is_some_and(|&n| n >= 2)
    })
    .await;

    // In the store: every type, labelled with the pod's namespace and name, and a CPU profile
    // that started after the mark (what `diff --around-mark` needs in its "after" window).
    use scraper::query::source::{ProfileSource as _, ProfileType, Query};
    let selector =
        format!(r#"{{service_name="otel-collector", namespace="{namespace}", pod="{pod}"}}"#);
    let mark_name = &mark.args[1];
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let source = scraper::query::local::LocalSource::open(&store).expect("open the store");
        let far = SystemTime::now() + Duration::from_secs(60);
        let marks = source.marks(SystemTime::UNIX_EPOCH, far).expect("marks");
        let at = marks
            .iter()
            .find(|m| &m.name == mark_name)
            .unwrap_or_else(|| panic!("no mark {mark_name:?} in the store: {marks:?}"))
            .at;
        let has = |t: &str, from: SystemTime| {
            let q = Query {
                selector: scraper::query::selector::Selector::parse(&selector).expect("selector"),
                profile_type: ProfileType::parse(t).expect("type"),
                from,
                to: far,
                exclude_straddling: true,
            };
            source
                .select_merge(&q, &mut |_, _| {})
                .expect("query")
                .is_some()
        };
        let mut missing: Vec<&str> = TYPES
            .iter()
            .copied()
            .filter(|t| !has(t, SystemTime::UNIX_EPOCH))
            .collect();
        if !has("process_cpu", at) {
            missing.push("process_cpu after the mark");
        }
        if missing.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no {missing:?} profiles matching {selector} in the store"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }

    // README.md's commands, as written but for the store's path, while the scraper runs.
    let (out, report) = run_documented(of("diff")[0], &store, &s.addr, out_dir.path());
    // The table (sorted by change: the steady main.alphaWork need not be in its top rows).
    assert!(
        out.contains("FUNCTION") && out.contains("wrote /dev/stderr"),
        "{out}"
    );
    let report = read(&report.expect("the report's file"));
    assert!(
        report.trim_start().starts_with("<!DOCTYPE html") && report.contains("main.alphaWork"),
        "not the HTML report: {}",
        &report[..report.len().min(500)]
    );
    let (_, pgo) = run_documented(of("pgo")[0], &store, &s.addr, out_dir.path());
    let pgo = decode_pprof(&pgo.expect("default.pgo"));
    assert!(!pgo.sample.is_empty(), "default.pgo has no samples");
    for cmd in of("query") {
        let (_, file) = run_documented(cmd, &store, &s.addr, out_dir.path());
        let profile = decode_pprof(&file.expect("the exported window"));
        assert!(!profile.sample.is_empty());
    }
    eprintln!(
        "workflow done in {:.1}s",
        test_started.elapsed().as_secs_f64()
    );
}
