//! `pyroscope.enrich` built from a block body: Alloy's `TestEnricher` cases (behaviour, ported
//! as a table), then what Alloy's code does beyond them (overwrites, `__` labels, targets
//! without the label, repeated match values, updates), its metrics and debug info.

use std::time::Duration;

use super::*;
use crate::profiles::Label;
use crate::profiles::collect::Collect;
use crate::syntax::decode::decode_source;
use crate::syntax::types::CapsuleRef;

type Pairs<'a> = &'a [(&'a str, &'a str)];

fn labels(pairs: Pairs) -> Vec<Label> {
    let mut l: Vec<Label> = pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    l.sort();
    l
}

fn labels_of(p: &Profile) -> Vec<Label> {
    p.labels
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn target(pairs: Pairs) -> String {
    let fields: Vec<String> = pairs
        .iter()
        .map(|(n, v)| format!("{n:?} = {v:?}"))
        .collect();
    format!("{{{}}}", fields.join(", "))
}

/// A block body: `targets`, then the other attributes as written.
fn body(targets: &[Pairs], rest: &str) -> String {
    let t: Vec<String> = targets.iter().map(|t| target(t)).collect();
    format!("targets = [{}]\n{rest}\nforward_to = []", t.join(", "))
}

fn decode(src: &str) -> Arguments {
    decode_source(src).unwrap_or_else(|e| panic!("{src}: {e:?}"))
}

struct Running {
    component: Enrich,
    collect: Arc<Collect>,
    to: CapsuleRef<Receiver>,
    metrics: crate::runtime::metrics::MetricsRegistry,
}

impl Running {
    fn start(src: &str) -> Running {
        let (collect, to) = Collect::receiver();
        let mut args = decode(src);
        assert!(Enrich::validate(&args).is_empty());
        args.forward_to = vec![to.clone()];
        let opts = ComponentOptions::standalone(
            "pyroscope.enrich.t",
            "pyroscope.enrich",
            Enrich::initial_exports(),
        );
        let metrics = opts.metrics.clone();
        let component = Enrich::build(opts, args).expect("build");
        Running {
            component,
            collect,
            to,
            metrics,
        }
    }

    fn update(&self, src: &str) {
        let mut args = decode(src);
        args.forward_to = vec![self.to.clone()];
        self.component.update(args).expect("update");
    }

    /// What one profile with `pairs` is forwarded as.
    fn send(&self, pairs: Pairs) -> Vec<Label> {
        self.component
            .receiver()
            .append(vec![Profile::new(labels(pairs), b"pprof".to_vec())]);
        let got = self.collect.take();
        assert_eq!(got.len(), 1, "one profile in, one out");
        assert_eq!(&got[0].raw[..], b"pprof", "the pprof is untouched");
        labels_of(&got[0])
    }

    fn info(&self, key: &str) -> serde_json::Value {
        self.component.debug_info().expect("info")[key].clone()
    }
}

/// Alloy's `TestEnricher` table, then cases read from `enrichLabels` and
/// `refreshCacheFromTargets`: (case, targets, other attributes, profile, forwarded as).
#[test]
fn labels_are_copied_like_alloy() {
    let svc: Pairs = &[
        ("service", "test-service"),
        ("env", "prod"),
        ("owner", "team-a"),
        ("foo", "bar"),
    ];
    let cases: Vec<(&str, Vec<Pairs>, &str, Pairs, Pairs)> = vec![
        (
            "alloy: labels_to_copy and profiles_match_label",
            vec![svc],
            "target_match_label = \"service\"\nprofiles_match_label = \"service_name\"\nlabels_to_copy = [\"env\", \"owner\"]",
            &[("service_name", "test-service")],
            &[
                ("service_name", "test-service"),
                ("env", "prod"),
                ("owner", "team-a"),
            ],
        ),
        (
            "alloy: no match found, forwarded as is",
            vec![&[("service", "different-service"), ("env", "prod")]],
            "target_match_label = \"service\"\nprofiles_match_label = \"service_name\"\nlabels_to_copy = [\"env\"]",
            &[("service_name", "test-service"), ("foo", "bar")],
            &[("service_name", "test-service"), ("foo", "bar")],
        ),
        (
            "alloy: all labels when labels_to_copy is unset",
            vec![&[
                ("service", "test-service"),
                ("env", "prod"),
                ("owner", "team-b"),
                ("region", "us-west"),
            ]],
            "target_match_label = \"service\"",
            &[("service", "test-service")],
            &[
                ("service", "test-service"),
                ("env", "prod"),
                ("owner", "team-b"),
                ("region", "us-west"),
            ],
        ),
        (
            "alloy: target_match_label used for profiles when profiles_match_label is unset",
            vec![&[
                ("service", "test-service"),
                ("env", "prod"),
                ("owner", "team-c"),
            ]],
            "target_match_label = \"service\"\nlabels_to_copy = [\"env\", \"owner\"]",
            &[("service", "test-service"), ("original", "label")],
            &[
                ("service", "test-service"),
                ("original", "label"),
                ("env", "prod"),
                ("owner", "team-c"),
            ],
        ),
        (
            "labels_to_copy = [] copies everything (Alloy tests len == 0)",
            vec![&[("ip", "10.0.0.1"), ("app", "a")]],
            "target_match_label = \"ip\"\nlabels_to_copy = []",
            &[("ip", "10.0.0.1")],
            &[("ip", "10.0.0.1"), ("app", "a")],
        ),
        (
            "profiles_match_label = \"\" means target_match_label (Alloy tests for \"\")",
            vec![&[("ip", "10.0.0.1"), ("app", "a")]],
            "target_match_label = \"ip\"\nprofiles_match_label = \"\"",
            &[("ip", "10.0.0.1")],
            &[("ip", "10.0.0.1"), ("app", "a")],
        ),
        (
            "target labels overwrite the profile's",
            vec![&[
                ("ip", "10.0.0.1"),
                ("env", "prod"),
                ("service_name", "from-target"),
            ]],
            "target_match_label = \"ip\"",
            &[
                ("ip", "10.0.0.1"),
                ("env", "dev"),
                ("service_name", "app"),
                ("__name__", "process_cpu"),
            ],
            &[
                ("ip", "10.0.0.1"),
                ("env", "prod"),
                ("service_name", "from-target"),
                ("__name__", "process_cpu"),
            ],
        ),
        (
            "copy all includes __address__ and __meta_ labels (write drops them later)",
            vec![&[
                ("__address__", "10.0.0.1:4040"),
                ("__meta_kubernetes_namespace", "ns"),
                ("ip", "10.0.0.1"),
            ]],
            "target_match_label = \"ip\"",
            &[("ip", "10.0.0.1")],
            &[
                ("ip", "10.0.0.1"),
                ("__address__", "10.0.0.1:4040"),
                ("__meta_kubernetes_namespace", "ns"),
            ],
        ),
        (
            "labels_to_copy can name __ labels too",
            vec![&[("__meta_kubernetes_namespace", "ns"), ("ip", "10.0.0.1")]],
            "target_match_label = \"ip\"\nlabels_to_copy = [\"__meta_kubernetes_namespace\"]",
            &[("ip", "10.0.0.1")],
            &[("ip", "10.0.0.1"), ("__meta_kubernetes_namespace", "ns")],
        ),
        (
            "a requested label the target lacks leaves the profile's own",
            vec![&[("ip", "10.0.0.1"), ("app", "a")]],
            "target_match_label = \"ip\"\nlabels_to_copy = [\"app\", \"env\", \"app\"]",
            &[("ip", "10.0.0.1"), ("env", "dev")],
            &[("ip", "10.0.0.1"), ("env", "dev"), ("app", "a")],
        ),
        (
            "a profile without the match label passes unchanged",
            vec![&[("ip", "10.0.0.1"), ("app", "a")]],
            "target_match_label = \"ip\"",
            &[("service_name", "x")],
            &[("service_name", "x")],
        ),
        (
            "a profile with no labels passes unchanged",
            vec![&[("ip", "10.0.0.1"), ("app", "a")]],
            "target_match_label = \"ip\"",
            &[],
            &[],
        ),
        (
            "a target without the match label never matches",
            vec![&[("app", "a")], &[("ip", "10.0.0.2"), ("app", "b")]],
            "target_match_label = \"ip\"\nprofiles_match_label = \"app\"",
            &[("app", "a")],
            &[("app", "a")],
        ),
        (
            "an empty target value is no value",
            vec![&[("ip", ""), ("app", "a")]],
            "target_match_label = \"ip\"",
            &[("ip", ""), ("x", "1")],
            &[("x", "1")],
        ),
        (
            "of two targets with one value the later wins",
            vec![
                &[("ip", "10.0.0.1"), ("app", "first")],
                &[("ip", "10.0.0.1"), ("app", "second")],
            ],
            "target_match_label = \"ip\"",
            &[("ip", "10.0.0.1")],
            &[("ip", "10.0.0.1"), ("app", "second")],
        ),
        (
            "matching is exact (no regex, case-sensitive)",
            vec![&[("host", "Web-1"), ("app", "a")]],
            "target_match_label = \"host\"",
            &[("host", "web-1")],
            &[("host", "web-1")],
        ),
    ];
    for (case, targets, rest, input, want) in cases {
        let r = Running::start(&body(&targets, rest));
        assert_eq!(r.send(input), labels(want), "{case}");
    }
}

#[test]
fn new_targets_and_settings_apply_to_the_next_profile() {
    let r = Running::start(&body(&[], "target_match_label = \"ip\""));
    // Before discovery delivers, profiles pass through (Alloy's documented caveat).
    assert_eq!(r.send(&[("ip", "10.0.0.1")]), labels(&[("ip", "10.0.0.1")]));

    r.update(&body(
        &[&[("ip", "10.0.0.1"), ("app", "a")]],
        "target_match_label = \"ip\"",
    ));
    assert_eq!(
        r.send(&[("ip", "10.0.0.1")]),
        labels(&[("ip", "10.0.0.1"), ("app", "a")])
    );

    // The target's labels changed, then it went away.
    r.update(&body(
        &[&[("ip", "10.0.0.1"), ("app", "b")]],
        "target_match_label = \"ip\"",
    ));
    assert_eq!(
        r.send(&[("ip", "10.0.0.1")]),
        labels(&[("ip", "10.0.0.1"), ("app", "b")])
    );
    r.update(&body(
        &[&[("ip", "10.0.0.9"), ("app", "c")]],
        "target_match_label = \"ip\"",
    ));
    assert_eq!(r.send(&[("ip", "10.0.0.1")]), labels(&[("ip", "10.0.0.1")]));

    // New match settings re-index the same targets.
    r.update(&body(
        &[&[("ip", "10.0.0.9"), ("app", "c"), ("env", "prod")]],
        "target_match_label = \"app\"\nprofiles_match_label = \"service_name\"\nlabels_to_copy = [\"env\"]",
    ));
    assert_eq!(
        r.send(&[("service_name", "c")]),
        labels(&[("service_name", "c"), ("env", "prod")])
    );
    assert_eq!(r.info("targets_matchable"), 1);
}

#[test]
fn a_repeated_name_the_target_overwrites_is_no_longer_a_duplicate() {
    let r = Running::start(&body(
        &[&[("ip", "1"), ("env", "prod")]],
        "target_match_label = \"ip\"",
    ));
    let profile = Profile::new(
        vec![
            ("ip".into(), "1".into()),
            ("env".into(), "a".into()),
            ("env".into(), "b".into()),
            ("zone".into(), "x".into()),
            ("zone".into(), "y".into()),
        ],
        b"pprof".to_vec(),
    );
    r.component.receiver().append(vec![profile]);
    let got = r.collect.take();
    assert_eq!(got[0].label("env"), Some("prod"));
    let dups: Vec<&str> = got[0].duplicate_labels.iter().map(|n| n.as_str()).collect();
    assert_eq!(
        dups,
        ["zone"],
        "only the name the target did not set stays a duplicate"
    );
}

#[test]
fn outcomes_are_counted_and_shown() {
    let r = Running::start(&body(
        &[
            &[("ip", "1"), ("app", "a")],
            &[("app", "no-ip")],
            &[("ip", "1"), ("app", "b")],
        ],
        "target_match_label = \"ip\"",
    ));
    r.send(&[("ip", "1")]);
    r.send(&[("ip", "1")]);
    r.send(&[("ip", "2")]);
    r.send(&[("other", "x")]);
    assert_eq!(r.info("profiles_matched"), 2);
    assert_eq!(r.info("profiles_without_target"), 1);
    assert_eq!(r.info("profiles_without_match_label"), 1);
    assert_eq!(r.info("targets"), 3);
    assert_eq!(r.info("targets_matchable"), 1);
    assert_eq!(r.info("targets_without_match_label"), 1);
    assert_eq!(r.info("targets_shadowed"), 1);

    let text = r.metrics.encode().expect("encode");
    for line in [
        "pyroscope_enrich_profiles_total{component_id=\"pyroscope.enrich.t\",component_path=\"/\",result=\"matched\"} 2",
        "pyroscope_enrich_profiles_total{component_id=\"pyroscope.enrich.t\",component_path=\"/\",result=\"no_target\"} 1",
        "pyroscope_enrich_profiles_total{component_id=\"pyroscope.enrich.t\",component_path=\"/\",result=\"no_match_label\"} 1",
        "pyroscope_enrich_targets{component_id=\"pyroscope.enrich.t\",component_path=\"/\"} 1",
        "pyroscope_enrich_targets_without_match_label{component_id=\"pyroscope.enrich.t\",component_path=\"/\"} 1",
    ] {
        assert!(text.contains(line), "{line} in:\n{text}");
    }
}

#[test]
fn an_empty_target_match_label_is_refused() {
    let args = decode(&body(&[], "target_match_label = \"\""));
    let invalid = Enrich::validate(&args);
    assert_eq!(invalid.len(), 1);
    assert!(
        invalid[0].message.contains("target_match_label"),
        "{:?}",
        invalid[0].message
    );
}

#[tokio::test]
async fn after_exit_profiles_are_dropped_and_series_removed() {
    let r = Running::start(&body(&[&[("ip", "1")]], "target_match_label = \"ip\""));
    let receiver = r.component.receiver();
    let component = Arc::new(r.component);
    let shutdown = CancellationToken::new();
    shutdown.cancel();
    component.clone().run(shutdown).await.expect("run");
    receiver.append(vec![Profile::new(labels(&[("ip", "1")]), b"x".to_vec())]);
    assert!(r.collect.take().is_empty());
    assert!(
        !r.metrics
            .encode()
            .expect("encode")
            .contains("pyroscope_enrich_targets{")
    );
}

/// Records each event at INFO and above: its level, message and `component_id` field.
#[derive(Clone, Default)]
struct Logged(Arc<std::sync::Mutex<Vec<(tracing::Level, String, String)>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Logged {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        #[derive(Default)]
        struct Fields(String, String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, v: &dyn std::fmt::Debug) {
                match field.name() {
                    "message" => self.0 = format!("{v:?}"),
                    "component_id" => self.1 = format!("{v:?}"),
                    _ => {}
                }
            }
        }
        let level = *event.metadata().level();
        if level <= tracing::Level::INFO {
            let mut f = Fields::default();
            event.record(&mut f);
            crate::sync::lock(&self.0).push((level, f.0, f.1));
        }
    }
}

impl Logged {
    /// Starts recording on this thread until the guard drops.
    fn start() -> (Logged, tracing::subscriber::DefaultGuard) {
        use tracing_subscriber::layer::SubscriberExt as _;
        let logged = Logged::default();
        let guard =
            tracing::subscriber::set_default(tracing_subscriber::registry().with(logged.clone()));
        (logged, guard)
    }

    /// What was logged since the last call, as (level, message), each from this component.
    fn take(&self) -> Vec<(tracing::Level, String)> {
        std::mem::take(&mut *crate::sync::lock(&self.0))
            .into_iter()
            .map(|(level, message, id)| {
                assert_eq!(id, "pyroscope.enrich.t", "{message}: component_id");
                (level, message)
            })
            .collect()
    }
}

const NO_TARGET_MATCHABLE: &str =
    "pyroscope.enrich: no target has the match label; profiles pass through unchanged";
const TARGETS_MATCHABLE: &str =
    "pyroscope.enrich: targets without the match label are gone; profiles can be enriched again";

/// Each discovery publish is an update; the warning and its end are logged once per failure,
/// and health follows the state.
#[test]
fn targets_without_the_match_label_warn_once_and_say_when_it_ends() {
    use tracing::Level;
    let (logged, _guard) = Logged::start();
    let ok: &[Pairs] = &[&[("ip", "1"), ("app", "a")]];
    let bad: &[Pairs] = &[&[("app", "a")], &[("app", "b")]];
    let label = "target_match_label = \"ip\"";
    let r = Running::start(&body(ok, label));
    assert_eq!(logged.take(), []);
    assert!(r.component.health().is_none());

    // (case, targets, logged, unhealthy)
    type Step<'a> = (&'a str, &'a [Pairs<'a>], Vec<(Level, String)>, bool);
    let warn = (Level::WARN, NO_TARGET_MATCHABLE.to_string());
    let info = (Level::INFO, TARGETS_MATCHABLE.to_string());
    let steps: Vec<Step> = vec![
        ("targets lose the label", bad, vec![warn.clone()], true),
        ("discovery publishes again, still bad", bad, vec![], true),
        ("and again, other bad targets", &bad[..1], vec![], true),
        ("a target has it again", ok, vec![info.clone()], false),
        ("still fine", ok, vec![], false),
        ("a second failure", bad, vec![warn], true),
        (
            "no targets at all: nothing without the label",
            &[],
            vec![info],
            false,
        ),
        ("no targets, again", &[], vec![], false),
    ];
    for (case, targets, want, unhealthy) in steps {
        r.update(&body(targets, label));
        assert_eq!(logged.take(), want, "{case}");
        let health = r.component.health();
        assert_eq!(health.is_some(), unhealthy, "{case}: {health:?}");
    }
}

#[test]
fn health_names_the_label_and_the_targets() {
    let r = Running::start(&body(
        &[&[("app", "a")], &[("app", "b")], &[("app", "c")]],
        "target_match_label = \"pod_ip\"",
    ));
    let health = r.component.health().expect("unhealthy");
    assert_eq!(health.state, crate::runtime::HealthState::Unhealthy);
    assert_eq!(
        health.message,
        "none of the 3 targets has the match label \"pod_ip\": profiles pass through unchanged"
    );
    // The settings change to a label the targets have: healthy again.
    r.update(&body(&[&[("app", "a")]], "target_match_label = \"app\""));
    assert_eq!(r.component.health(), None);
}

/// A misspelt `profiles_match_label`, then values no target has: one warning each after a
/// window of unenriched profiles (not one per batch), and an info line at the next match.
#[test]
fn profiles_that_are_never_enriched_warn_once_per_window_problem() {
    use tracing::Level;
    let (logged, _guard) = Logged::start();
    let r = Running::start(&body(
        &[&[("ip", "1"), ("app", "a")]],
        "target_match_label = \"ip\"\nprofiles_match_label = \"pod_ip\"",
    ));
    let t0 = Instant::now();
    let send_at = |secs: u64, pairs: Pairs| {
        r.component.shared.append_at(
            t0 + Duration::from_secs(secs),
            vec![
                Profile::new(labels(pairs), b"pprof".to_vec()),
                Profile::new(labels(pairs), b"pprof".to_vec()),
            ],
        );
        assert_eq!(r.collect.take().len(), 2, "forwarded either way");
    };
    let no_label = (
        Level::WARN,
        "pyroscope.enrich: no profile received carries the profiles match label; they pass through unchanged".to_string(),
    );
    let no_target = (
        Level::WARN,
        "pyroscope.enrich: no profile received has a match value any target has; they pass through unchanged".to_string(),
    );
    let again = (
        Level::INFO,
        "pyroscope.enrich: profiles are enriched again".to_string(),
    );
    let secs = WINDOW.as_secs();

    for s in [1, 15, 30] {
        send_at(s, &[("ip", "1")]);
    }
    assert_eq!(logged.take(), [], "within the first window");
    send_at(secs + 1, &[("ip", "1")]);
    assert_eq!(logged.take(), [no_label]);
    assert_eq!(r.info("profiles_problem"), "no_match_label");
    for s in [secs + 2, 2 * secs + 5, 4 * secs] {
        send_at(s, &[("ip", "1")]);
    }
    assert_eq!(logged.take(), [], "still failing: not logged again");

    // The label is fixed by a reload: the first enriched profile ends it.
    r.update(&body(
        &[&[("ip", "1"), ("app", "a")]],
        "target_match_label = \"ip\"",
    ));
    send_at(4 * secs + 1, &[("ip", "1")]);
    send_at(4 * secs + 2, &[("ip", "1")]);
    assert_eq!(logged.take(), std::slice::from_ref(&again));
    assert_eq!(r.info("profiles_problem"), serde_json::Value::Null);

    // Values no target has for a whole window.
    send_at(6 * secs, &[("ip", "2")]);
    send_at(7 * secs + 1, &[("ip", "2")]);
    send_at(8 * secs + 2, &[("ip", "2")]);
    assert_eq!(logged.take(), [no_target]);
    assert_eq!(r.info("profiles_problem"), "no_target");
    send_at(8 * secs + 3, &[("ip", "1")]);
    assert_eq!(logged.take(), [again]);
    assert_eq!(r.info("profiles_matched"), 6);
    assert_eq!(r.info("profiles_without_match_label"), 14);
    assert_eq!(r.info("profiles_without_target"), 6);
}
