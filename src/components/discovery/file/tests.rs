//! The component over real files in a temp dir: the first read at build, changes picked up
//! while running, a bad file keeping its last good targets, a vanished file losing them.

use std::time::Duration;

use super::*;
use crate::runtime::HealthState;
use crate::syntax::decode;

struct Fixture {
    dir: tempfile::TempDir,
    exports: ExportsHandle,
    component: Arc<File>,
}

impl Fixture {
    fn new(files: &[(&str, &str)], patterns: &[&str]) -> Fixture {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, content) in files {
            std::fs::write(dir.path().join(name), content).expect("write");
        }
        let root = dir.path().to_str().expect("utf-8");
        let list: Vec<String> = patterns.iter().map(|p| format!("\"{root}/{p}\"")).collect();
        let args: Arguments = decode::decode_source(&format!("files = [{}]", list.join(", ")))
            .unwrap_or_else(|e: Vec<String>| panic!("decode: {e:?}"));
        let opts = ComponentOptions::standalone(
            "discovery.file.t",
            "discovery.file",
            File::initial_exports(),
        );
        let exports = opts.exports.clone();
        let component = Arc::new(File::build(opts, args).expect("build"));
        Fixture {
            dir,
            exports,
            component,
        }
    }

    fn path(&self, name: &str) -> String {
        format!("{}/{name}", self.dir.path().to_str().expect("utf-8"))
    }

    fn write(&self, name: &str, content: &str) {
        // Written beside and renamed over, as the Prometheus docs advise.
        let tmp = self.dir.path().join(format!(".{name}.tmp"));
        std::fs::write(&tmp, content).expect("write");
        std::fs::rename(&tmp, self.dir.path().join(name)).expect("rename");
    }

    fn targets(&self) -> Vec<BTreeMap<String, String>> {
        let Value::Object(m) = self.exports.current() else {
            panic!("exports not an object")
        };
        decode::from_value(&m["targets"]).expect("list(map(string))")
    }

    fn addresses(&self) -> Vec<String> {
        self.targets()
            .iter()
            .map(|t| t.get("__address__").cloned().unwrap_or_default())
            .collect()
    }
}

#[test]
fn build_reads_every_matching_file_in_order() {
    let f = Fixture::new(
        &[
            (
                "b.json",
                r#"[{"targets": ["b:1", "b:2"], "labels": {"job": "b"}}]"#,
            ),
            ("a.json", r#"[{"targets": ["a:1"]}]"#),
            ("c.yaml", "- targets: ['c:1']\n  labels: {job: c}\n"),
            ("d.txt", "not matched"),
        ],
        &["*.json", "c.yaml"],
    );
    assert_eq!(f.addresses(), ["a:1", "b:1", "b:2", "c:1"]);
    let t = f.targets();
    assert_eq!(t[1]["job"], "b");
    assert_eq!(t[1][FILEPATH_LABEL], f.path("b.json"));
    assert_eq!(t[3][FILEPATH_LABEL], f.path("c.yaml"));
    assert_eq!(t[0].len(), 2, "{:?}", t[0]);
    assert!(f.component.health().is_none());
    let info = f.component.debug_info().expect("info");
    assert_eq!(info["targets"], 4);
    assert_eq!(info["files"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn changes_are_picked_up_and_bad_files_keep_their_targets() {
    let f = Fixture::new(&[("t.json", r#"[{"targets": ["a:1"]}]"#)], &["*.json"]);
    let stop = CancellationToken::new();
    let task = tokio::spawn(f.component.clone().run(stop.clone()));

    // A changed file, long before refresh_interval (5m): seen by the stamp check.
    f.write("t.json", r#"[{"targets": ["a:1", "a:2"]}]"#);
    wait_for(|| f.addresses() == ["a:1", "a:2"]).await;

    // A new file matching the pattern.
    f.write("u.json", r#"[{"targets": ["u:1"]}]"#);
    wait_for(|| f.addresses() == ["a:1", "a:2", "u:1"]).await;

    // A bad file: its last good targets stay, the component says so.
    f.write("t.json", "[{\"targets\": [\"a:3\"]");
    wait_for(|| f.component.health().is_some()).await;
    let health = f.component.health().expect("unhealthy");
    assert_eq!(health.state, HealthState::Unhealthy);
    assert!(health.message.contains(&f.path("t.json")), "{health:?}");
    assert_eq!(f.addresses(), ["a:1", "a:2", "u:1"]);

    // Fixed: healthy again with the new content.
    f.write("t.json", r#"[{"targets": ["a:3"]}]"#);
    wait_for(|| f.component.health().is_none()).await;
    assert_eq!(f.addresses(), ["a:3", "u:1"]);

    // Removed: its targets go.
    std::fs::remove_file(f.dir.path().join("t.json")).expect("rm");
    wait_for(|| f.addresses() == ["u:1"]).await;

    stop.cancel();
    task.await.expect("joins").expect("run ends cleanly");
}

#[test]
fn update_with_new_files_reads_them_at_once() {
    let f = Fixture::new(
        &[
            ("a.json", r#"[{"targets": ["a:1"]}]"#),
            ("b.yml", "- targets: [b:1]\n"),
        ],
        &["*.json"],
    );
    assert_eq!(f.addresses(), ["a:1"]);
    let args = Arguments {
        files: vec![f.path("*.yml")],
        refresh_interval: crate::syntax::types::Duration::from_secs(60),
    };
    f.component.update(args).expect("update");
    assert_eq!(f.addresses(), ["b:1"]);
}

async fn wait_for(cond: impl Fn() -> bool) {
    // A hang guard, not a timing assertion: the stamp check runs every second.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "condition not met in time");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Records each event's message at INFO and above.
#[derive(Clone, Default)]
struct Messages(Arc<std::sync::Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Messages {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Message<'a>(&'a mut String);
        impl tracing::field::Visit for Message<'_> {
            fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    *self.0 = format!("{v:?}");
                }
            }
        }
        if *event.metadata().level() <= tracing::Level::INFO {
            let mut m = String::new();
            event.record(&mut Message(&mut m));
            crate::sync::lock(&self.0).push(m);
        }
    }
}

#[test]
fn a_failing_file_that_is_deleted_says_its_failure_ended() {
    use tracing_subscriber::layer::SubscriberExt as _;
    let messages = Messages::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(messages.clone()));
    let f = Fixture::new(&[("ok.json", "[]"), ("bad.json", "[")], &["*.json"]);
    assert!(f.component.health().is_some(), "bad.json fails");
    std::fs::remove_file(f.dir.path().join("bad.json")).expect("rm");
    let patterns = vec![f.path("*.json")];
    {
        let mut st = f.component.state();
        f.component.apply(&mut st, scan::scan(&patterns));
    }
    assert!(f.component.health().is_none());
    let got = crate::sync::lock(&messages.0).clone();
    assert_eq!(
        got,
        [
            "cannot read a discovery file; keeping its last good targets",
            "failing discovery file is gone; its failure ends"
        ],
        "{got:?}"
    );
}
