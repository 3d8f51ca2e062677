//! `pyroscope.relabel` end to end: a component built from a block body, profiles appended to
//! its receiver, what reaches the receivers it forwards to, its metrics and debug info.

use super::args::decode_args;
use super::*;
use crate::profiles::Label;
use crate::profiles::collect::Collect;
use crate::runtime::metrics::MetricsRegistry;
use crate::syntax::decode;
use crate::syntax::types::CapsuleRef;

/// The labels of every profile collected, each set sorted.
fn labels_of(c: &Collect) -> Vec<Vec<Label>> {
    c.got()
        .iter()
        .map(|p| {
            sorted(
                p.labels
                    .iter()
                    .map(|(n, v)| (n.to_string(), v.to_string()))
                    .collect(),
            )
        })
        .collect()
}

fn sorted(mut l: Vec<Label>) -> Vec<Label> {
    l.sort();
    l
}

fn labels(pairs: &[(&str, &str)]) -> Vec<Label> {
    pairs
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

fn profile(pairs: &[(&str, &str)]) -> Profile {
    Profile::new(labels(pairs), b"pprof".to_vec())
}

struct Running {
    component: Relabel,
    exports: ExportsHandle,
    metrics: MetricsRegistry,
}

impl Running {
    fn send(&self, pairs: &[(&str, &str)]) {
        self.component.receiver().append(vec![profile(pairs)]);
    }

    fn info(&self, key: &str) -> u64 {
        self.component.debug_info().expect("info")[key]
            .as_u64()
            .unwrap_or_else(|| panic!("no {key}"))
    }
}

/// Builds the component from a block body (without `forward_to`), forwarding to `to`.
fn start(id: &str, src: &str, to: Vec<CapsuleRef<Receiver>>) -> Running {
    let mut args = decode_args(src).expect("valid arguments");
    args.forward_to = to;
    let opts = ComponentOptions::standalone(id, "pyroscope.relabel", Relabel::initial_exports());
    let (exports, metrics) = (opts.exports.clone(), opts.metrics.clone());
    let component = Relabel::build(opts, args).expect("build");
    Running {
        component,
        exports,
        metrics,
    }
}

/// What one profile becomes: `Some(labels)` forwarded, `None` dropped.
fn relabel_one(rules: &str, input: &[(&str, &str)]) -> Option<Vec<Label>> {
    let (c, r) = Collect::receiver();
    let running = start("pyroscope.relabel.one", rules, vec![r]);
    running.send(input);
    let got = labels_of(&c);
    assert!(got.len() <= 1, "{got:?}");
    let forwarded = got.into_iter().next();
    assert_eq!(running.info("profiles_processed"), 1);
    assert_eq!(
        running.info("profiles_dropped"),
        u64::from(forwarded.is_none())
    );
    assert_eq!(
        running.info("profiles_written"),
        u64::from(forwarded.is_some())
    );
    forwarded
}

type Pairs<'a> = &'a [(&'a str, &'a str)];

/// A name the producer gave twice: the rules see its last value, and the forwarded profile is
/// an ordinary one (no duplicate left for `pyroscope.write` to refuse), as when relabelling
/// turned the label list into a set itself.
#[test]
fn a_repeated_name_keeps_its_last_value_and_is_no_longer_a_duplicate() {
    let (c, r) = Collect::receiver();
    let running = start("pyroscope.relabel.dup", "", vec![r]);
    running.send(&[("service_name", "a"), ("env", "x"), ("service_name", "b")]);
    let got = c.got();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].label("service_name"), Some("b"));
    assert!(got[0].duplicate_labels.is_empty());
}

#[test]
fn rules_apply_to_profile_labels() {
    let base: &[(&str, &str)] = &[
        ("__name__", "process_cpu"),
        ("service_name", "checkout"),
        ("env", "prod"),
        ("region", "us-1"),
    ];
    // (case, rules, input, expected labels or None when dropped)
    let cases: Vec<(&str, &str, Pairs, Option<Pairs>)> = vec![
        ("no rules: as received", "", base, Some(base)),
        (
            "no rules: empty values disappear",
            "",
            &[("service_name", "a"), ("pod", "")],
            Some(&[("service_name", "a")]),
        ),
        (
            "keep matching",
            "rule {\n source_labels = [\"env\"]\n regex = \"prod\"\n action = \"keep\"\n}",
            base,
            Some(base),
        ),
        (
            "keep not matching",
            "rule {\n source_labels = [\"env\"]\n regex = \"staging\"\n action = \"keep\"\n}",
            base,
            None,
        ),
        (
            "drop matching",
            "rule {\n source_labels = [\"env\", \"region\"]\n regex = \"prod;us-.*\"\n action = \"drop\"\n}",
            base,
            None,
        ),
        (
            "drop not matching",
            "rule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"drop\"\n}",
            base,
            Some(base),
        ),
        (
            "drop on the profile type",
            "rule {\n source_labels = [\"__name__\"]\n regex = \"process_cpu\"\n action = \"drop\"\n}",
            base,
            None,
        ),
        (
            "replace into a new label",
            "rule {\n source_labels = [\"region\"]\n regex = \"us-(.+)\"\n target_label = \"zone\"\n replacement = \"zone-$1\"\n}",
            base,
            Some(&[
                ("__name__", "process_cpu"),
                ("service_name", "checkout"),
                ("env", "prod"),
                ("region", "us-1"),
                ("zone", "zone-1"),
            ]),
        ),
        (
            "replace service_name",
            "rule {\n source_labels = [\"env\", \"service_name\"]\n regex = \"(.+);(.+)\"\n target_label = \"service_name\"\n replacement = \"$1/$2\"\n}",
            base,
            Some(&[
                ("__name__", "process_cpu"),
                ("service_name", "prod/checkout"),
                ("env", "prod"),
                ("region", "us-1"),
            ]),
        ),
        (
            "replace with an empty value deletes",
            "rule {\n target_label = \"region\"\n replacement = \"\"\n}",
            base,
            Some(&[
                ("__name__", "process_cpu"),
                ("service_name", "checkout"),
                ("env", "prod"),
            ]),
        ),
        (
            "labeldrop",
            "rule {\n regex = \"env|region\"\n action = \"labeldrop\"\n}",
            base,
            Some(&[("__name__", "process_cpu"), ("service_name", "checkout")]),
        ),
        (
            "labelkeep keeps only matching names, __name__ included",
            "rule {\n regex = \"__name__|service_name\"\n action = \"labelkeep\"\n}",
            base,
            Some(&[("__name__", "process_cpu"), ("service_name", "checkout")]),
        ),
        (
            "labelmap",
            "rule {\n regex = \"(env|region)\"\n replacement = \"k8s_$1\"\n action = \"labelmap\"\n}",
            &[("service_name", "a"), ("env", "prod")],
            Some(&[("service_name", "a"), ("env", "prod"), ("k8s_env", "prod")]),
        ),
        (
            // Alloy's test: "prod" hashes to 1 with modulus 2 (so that profile is dropped).
            "hashmod then drop on the hash (Alloy's documented sampling)",
            "rule {\n source_labels = [\"env\"]\n target_label = \"__tmp_hash\"\n modulus = 2\n action = \"hashmod\"\n}\nrule {\n source_labels = [\"__tmp_hash\"]\n regex = \"^1$\"\n action = \"drop\"\n}",
            base,
            None,
        ),
        (
            // "dev" hashes to 0: kept, and the temporary label travels on (write drops it).
            "hashmod keeps the other half with its __tmp_hash",
            "rule {\n source_labels = [\"env\"]\n target_label = \"__tmp_hash\"\n modulus = 2\n action = \"hashmod\"\n}\nrule {\n source_labels = [\"__tmp_hash\"]\n regex = \"^1$\"\n action = \"drop\"\n}",
            &[("service_name", "a"), ("env", "dev")],
            Some(&[("service_name", "a"), ("env", "dev"), ("__tmp_hash", "0")]),
        ),
        (
            // Alloy's "multiple rules" test case.
            "rename via replace then labeldrop",
            "rule {\n source_labels = [\"env\"]\n target_label = \"environment\"\n}\nrule {\n regex = \"^env$\"\n action = \"labeldrop\"\n}",
            &[("env", "prod"), ("region", "us-1")],
            Some(&[("environment", "prod"), ("region", "us-1")]),
        ),
        (
            "no labels left: dropped (Alloy's documented behaviour)",
            "rule {\n regex = \".*\"\n action = \"labeldrop\"\n}",
            base,
            None,
        ),
        (
            "no labels at all: forwarded untouched, rules not run",
            "rule {\n source_labels = [\"env\"]\n regex = \"prod\"\n action = \"keep\"\n}",
            &[],
            Some(&[]),
        ),
    ];
    for (name, rules, input, want) in cases {
        let got = relabel_one(rules, input);
        let want = want.map(|w| sorted(labels(w)));
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn dropped_profiles_are_counted_and_the_rest_forwarded_to_every_receiver() {
    let (a, ra) = Collect::receiver();
    let (b, rb) = Collect::receiver();
    let running = start(
        "pyroscope.relabel.fan",
        "rule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"drop\"\n}",
        vec![ra, rb],
    );
    running.component.receiver().append(vec![
        profile(&[("service_name", "a"), ("env", "prod")]),
        profile(&[("service_name", "b"), ("env", "dev")]),
        profile(&[("service_name", "c")]),
        profile(&[]),
    ]);
    let want = vec![
        sorted(labels(&[("service_name", "a"), ("env", "prod")])),
        labels(&[("service_name", "c")]),
        Vec::new(),
    ];
    assert_eq!(labels_of(&a), want);
    assert_eq!(labels_of(&b), want);
    // The profile bytes are shared between the receivers, not copied.
    let (pa, pb) = (a.got()[0].raw.clone(), b.got()[0].raw.clone());
    assert_eq!(pa.as_ptr(), pb.as_ptr());

    let text = running.metrics.encode().expect("encode");
    let id = r#"{component_id="pyroscope.relabel.fan",component_path="/"}"#;
    for line in [
        format!("pyroscope_relabel_profiles_processed{id} 4"),
        format!("pyroscope_relabel_profiles_written{id} 3"),
        format!("pyroscope_relabel_profiles_dropped{id} 1"),
        // The profile without labels never reaches the cache.
        format!("pyroscope_relabel_cache_misses{id} 3"),
        format!("pyroscope_relabel_cache_hits{id} 0"),
        format!("pyroscope_relabel_cache_size{id} 3"),
        "# TYPE pyroscope_relabel_profiles_processed unknown".to_string(),
        "# HELP pyroscope_relabel_profiles_dropped Total number of profiles dropped by relabeling rules.".to_string(),
        "# TYPE pyroscope_relabel_cache_size gauge".to_string(),
    ] {
        assert!(text.contains(&line), "missing {line:?} in:\n{text}");
    }
    assert!(
        !text.contains("pyroscope_relabel_profiles_processed_total"),
        "{text}"
    );
}

#[test]
fn cache_hits_give_the_same_result() {
    let (c, r) = Collect::receiver();
    let running = start(
        "pyroscope.relabel.cache",
        "rule {\n source_labels = [\"env\"]\n regex = \"(.+)\"\n target_label = \"environment\"\n replacement = \"staging\"\n}\nrule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"drop\"\n}",
        vec![r],
    );
    let kept = [("service_name", "a"), ("env", "prod")];
    let kept_reordered = [("env", "prod"), ("service_name", "a")];
    let dropped = [("service_name", "b"), ("env", "dev")];
    let plain = [("service_name", "c")];
    for input in [&kept[..], &dropped, &plain] {
        running.send(input);
    }
    assert_eq!(running.info("cache_misses"), 3);
    assert_eq!(running.info("cache_hits"), 0);
    let first = labels_of(&c);
    // Again, with one label set in another order: all three are hits, same results.
    for input in [&kept_reordered[..], &dropped, &plain] {
        running.send(input);
    }
    assert_eq!(running.info("cache_misses"), 3);
    assert_eq!(running.info("cache_hits"), 3);
    assert_eq!(running.info("cache_size"), 3);
    assert_eq!(running.info("profiles_dropped"), 2);
    let all = labels_of(&c);
    assert_eq!(all.len(), 4);
    assert_eq!(all[2..], first[..]);
    assert_eq!(
        first,
        [
            sorted(labels(&[
                ("service_name", "a"),
                ("env", "prod"),
                ("environment", "staging")
            ])),
            labels(&[("service_name", "c")]),
        ]
    );
}

#[test]
fn update_applies_new_rules_to_the_next_profile_and_empties_the_cache() {
    let (c, r) = Collect::receiver();
    let keep_prod = "rule {\n source_labels = [\"env\"]\n regex = \"prod\"\n action = \"keep\"\n}";
    let keep_dev = "rule {\n source_labels = [\"env\"]\n regex = \"dev\"\n action = \"keep\"\n}";
    let running = start("pyroscope.relabel.update", keep_prod, vec![r.clone()]);
    let prod = [("service_name", "a"), ("env", "prod")];
    let dev = [("service_name", "a"), ("env", "dev")];
    running.send(&prod);
    running.send(&dev);
    assert_eq!(labels_of(&c).len(), 1);
    assert_eq!(running.info("cache_size"), 2);

    let mut args = decode_args(keep_dev).expect("valid");
    args.forward_to = vec![r.clone()];
    running.component.update(args).expect("update");
    assert_eq!(running.info("cache_size"), 0);
    let misses = running.info("cache_misses");
    running.send(&prod);
    running.send(&dev);
    // Both were recomputed with the new rules, not served from the old cache.
    assert_eq!(running.info("cache_misses"), misses + 2);
    let got = labels_of(&c);
    assert_eq!(got.len(), 2);
    assert_eq!(got[1], sorted(labels(&dev)));

    // The rules export follows.
    let Value::Object(m) = running.exports.current() else {
        panic!("exports")
    };
    let rules: Vec<RuleConfig> = decode::from_value(&m["rules"]).expect("rules decode");
    assert_eq!(rules[0].regex, "dev");
    assert!(matches!(m["receiver"], Value::Capsule(_)));

    // Only forward_to changes: the cache is kept.
    let (other, r2) = Collect::receiver();
    let mut args = decode_args(keep_dev).expect("valid");
    args.forward_to = vec![r2];
    running.component.update(args).expect("update");
    assert_eq!(running.info("cache_size"), 2);
    running.send(&dev);
    assert_eq!(labels_of(&other), [sorted(labels(&dev))]);
    assert_eq!(labels_of(&c).len(), 2);

    // Invalid rules cannot get past decoding; a failing compile would keep the old rules.
    assert!(decode_args("rule {\n action = \"hashmod\"\n target_label = \"x\"\n}").is_err());
}

#[test]
fn the_cache_holds_at_most_max_cache_size_label_sets() {
    let (_c, r) = Collect::receiver();
    let running = start(
        "pyroscope.relabel.bound",
        "max_cache_size = 2",
        vec![r.clone()],
    );
    let (a, b, c) = (
        [("service_name", "a")],
        [("service_name", "b")],
        [("service_name", "c")],
    );
    running.send(&a);
    running.send(&b);
    running.send(&a); // hit: `b` is now the least recently used
    running.send(&c); // evicts `b`
    assert_eq!(running.info("cache_size"), 2);
    assert_eq!(
        (running.info("cache_hits"), running.info("cache_misses")),
        (1, 3)
    );
    running.send(&a);
    running.send(&c);
    assert_eq!(running.info("cache_hits"), 3);
    running.send(&b); // evicted earlier: a miss, evicting `a`
    assert_eq!(running.info("cache_misses"), 4);
    assert_eq!(running.info("cache_size"), 2);

    // Shrinking evicts the least recently used; the gauge follows.
    let mut args = decode_args("max_cache_size = 1").expect("valid");
    args.forward_to = vec![r];
    running.component.update(args).expect("update");
    assert_eq!(running.info("cache_size"), 1);
    assert_eq!(running.info("max_cache_size"), 1);
    running.send(&b);
    assert_eq!(running.info("cache_hits"), 4);
    for i in 0..50 {
        let name = i.to_string();
        running.send(&[("service_name", name.as_str())]);
    }
    assert_eq!(running.info("cache_size"), 1);
    let text = running.metrics.encode().expect("encode");
    assert!(
        text.contains(
            r#"pyroscope_relabel_cache_size{component_id="pyroscope.relabel.bound",component_path="/"} 1"#
        ),
        "{text}"
    );
}

#[test]
fn initial_exports_and_exit() {
    let Value::Object(m) = Relabel::initial_exports() else {
        panic!("exports")
    };
    assert_eq!(m["rules"], Value::Array(Vec::new()));
    assert!(matches!(m["receiver"], Value::Capsule(_)));

    let (c, r) = Collect::receiver();
    let running = start("pyroscope.relabel.exit", "", vec![r]);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("runtime");
    let shutdown = CancellationToken::new();
    shutdown.cancel();
    let component = Arc::new(running.component);
    runtime
        .block_on(component.clone().run(shutdown))
        .expect("run");
    component
        .receiver()
        .append(vec![profile(&[("service_name", "a")])]);
    assert!(labels_of(&c).is_empty());
    let text = running.metrics.encode().expect("encode");
    assert!(!text.contains("pyroscope.relabel.exit"), "{text}");
}
