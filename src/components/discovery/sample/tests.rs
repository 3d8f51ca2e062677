//! The component over decoded arguments: grouping, keys, whole pods, shared capsules.

use super::*;
use crate::syntax::decode;
use crate::targets::Shared;

fn pod(ns: &str, deploy: &str, i: usize, container: &str, port: u16) -> LabelSet {
    let name = format!("{deploy}-{i}");
    [
        ("__address__", format!("10.0.{i}.1:{port}")),
        ("__meta_kubernetes_namespace", ns.to_string()),
        ("__meta_kubernetes_pod_name", name),
        ("__meta_kubernetes_pod_controller_kind", "ReplicaSet".into()),
        ("__meta_kubernetes_pod_controller_name", deploy.to_string()),
        (
            "__meta_kubernetes_pod_container_name",
            container.to_string(),
        ),
    ]
    .into_iter()
    .collect()
}

fn args(targets: Vec<LabelSet>, max: i64) -> Arguments {
    let mut a: Arguments =
        decode::decode_source(&format!("targets = []\nmax = {max}\n")).expect("valid arguments");
    a.targets = targets.into_iter().map(Shared::from).collect();
    a
}

fn output(exports: &Value) -> Vec<Shared> {
    let Value::Object(m) = exports else {
        panic!("exports not an object")
    };
    decode::from_value(&m["output"]).expect("output is a list of targets")
}

fn build(a: Arguments) -> (Sample, ExportsHandle) {
    let opts = ComponentOptions::standalone(
        "discovery.sample.t",
        "discovery.sample",
        Sample::initial_exports(),
    );
    let exports = opts.exports.clone();
    (Sample::build(opts, a).expect("build"), exports)
}

/// The pod names in `out` per deployment.
fn chosen_pods(out: &[Shared]) -> BTreeMap<String, BTreeSet<String>> {
    let mut m: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for t in out {
        let d =
            t.0.get("__meta_kubernetes_pod_controller_name")
                .unwrap_or("");
        let p = t.0.get("__meta_kubernetes_pod_name").unwrap_or("");
        m.entry(d.to_string()).or_default().insert(p.to_string());
    }
    m
}

#[test]
fn keeps_whole_pods_per_group_as_shared_capsules() {
    // Three deployments of 2, 5 and 10 pods, each pod with two containers (two targets).
    let mut targets = Vec::new();
    for (d, n) in [("a", 2), ("b", 5), ("c", 10)] {
        for i in 0..n {
            targets.push(pod("ns", d, i, "app", 8080));
            targets.push(pod("ns", d, i, "sidecar", 6060));
        }
    }
    let a = args(targets, 3);
    let (c, exports) = build(a.clone());
    let out = output(&exports.current());
    let chosen = chosen_pods(&out);
    let sizes: Vec<(&str, usize)> = chosen.iter().map(|(d, p)| (d.as_str(), p.len())).collect();
    assert_eq!(sizes, [("a", 2), ("b", 3), ("c", 3)]);
    // Every target of a chosen pod is kept: two per pod.
    assert_eq!(out.len(), 2 * (2 + 3 + 3));
    // In input order, and the very same label sets that came in.
    let positions: Vec<usize> = out
        .iter()
        .map(|o| {
            a.targets
                .iter()
                .position(|t| Arc::ptr_eq(&t.0, &o.0))
                .expect("an input capsule")
        })
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");

    let info = c.debug_info().expect("debug info");
    let groups = info["groups"].as_array().expect("groups");
    assert_eq!(groups.len(), 3);
    assert_eq!(groups[2]["group"], "ns/ReplicaSet/c");
    assert_eq!(groups[2]["targets"], 20);
    assert_eq!(groups[2]["kept"], 6);
    assert_eq!(groups[2]["keys"], 10);
    assert_eq!(groups[2]["limit"], 3);
    assert_eq!(groups[2]["chosen"].as_array().map(Vec::len), Some(3));
}

#[test]
fn updates_are_sticky_and_fallback_keys_by_address() {
    let mut targets: Vec<LabelSet> = (0..20).map(|i| pod("ns", "d", i, "app", 80)).collect();
    let (c, exports) = build(args(targets.clone(), 3));
    let first = chosen_pods(&output(&exports.current()))["d"].clone();

    // Growing to 40: the same three.
    let more: Vec<LabelSet> = (0..40).map(|i| pod("ns", "d", i, "app", 80)).collect();
    c.update(args(more, 3)).expect("update");
    assert_eq!(chosen_pods(&output(&exports.current()))["d"], first);

    // One chosen pod deleted: two stay, one new.
    let gone = first.iter().next().cloned().expect("chosen");
    targets.retain(|t| t.get("__meta_kubernetes_pod_name") != Some(gone.as_str()));
    c.update(args(targets, 3)).expect("update");
    let now = chosen_pods(&output(&exports.current()))["d"].clone();
    assert_eq!(now.len(), 3);
    assert_eq!(now.intersection(&first).count(), 2);
    assert!(!now.contains(&gone));

    // Targets without any key_by label are keyed (and kept) by address: one group of five
    // addresses, two kept; the same address twice counts as one key.
    let plain: Vec<LabelSet> = ["a:1", "b:1", "c:1", "d:1", "e:1", "a:1"]
        .iter()
        .map(|addr| [("__address__", *addr)].into_iter().collect())
        .collect();
    c.update(args(plain, 2)).expect("update");
    let out = output(&exports.current());
    let addrs: BTreeSet<&str> = out.iter().filter_map(|t| t.0.get("__address__")).collect();
    assert_eq!(addrs.len(), 2);
    assert!(out.len() == 2 || out.len() == 3, "{}", out.len());
    let info = c.debug_info().expect("debug info");
    assert_eq!(info["groups"][0]["group"], "//");
    assert_eq!(info["groups"][0]["keys"], 5);
}

#[test]
fn invalid_arguments_are_refused_at_build_and_update() {
    let mut bad = args(Vec::new(), 3);
    bad.max = None;
    let opts = ComponentOptions::standalone(
        "discovery.sample.t",
        "discovery.sample",
        Sample::initial_exports(),
    );
    assert!(Sample::build(opts, bad.clone()).is_err());
    let (c, _) = build(args(Vec::new(), 3));
    bad.fraction = Some(2.0);
    assert!(c.update(bad.clone()).is_err());
    assert_eq!(Sample::validate(&bad).len(), 1);
    assert_eq!(
        Sample::validate(&bad)[0].at.len(),
        1,
        "placed at the attribute"
    );
}

/// Targets lacking any `key_by` label are keyed by `__address__`: a namespace without a pod
/// name must not give every such target one shared key (which kept the whole group).
#[test]
fn a_partial_key_falls_back_to_the_address() {
    let ns_only: Vec<LabelSet> = ["a:1", "b:1", "c:1", "d:1", "e:1"]
        .iter()
        .map(|addr| {
            [
                ("__address__", *addr),
                ("__meta_kubernetes_namespace", "ns"),
            ]
            .into_iter()
            .collect()
        })
        .collect();
    let (c, exports) = build(args(ns_only.clone(), 2));
    assert_eq!(output(&exports.current()).len(), 2);
    assert_eq!(c.debug_info().expect("debug info")["groups"][0]["keys"], 5);

    // An empty key_by keys every target by its address too.
    let mut a = args(ns_only, 2);
    a.key_by = Vec::new();
    c.update(a).expect("update");
    assert_eq!(output(&exports.current()).len(), 2);

    // Targets with the whole key are still keyed by it: two targets of one pod are one key.
    let whole = vec![
        pod("ns", "d", 0, "app", 80),
        pod("ns", "d", 0, "sidecar", 81),
    ];
    c.update(args(whole, 1)).expect("update");
    assert_eq!(output(&exports.current()).len(), 2);
}

#[test]
fn joined_values_escape_the_separator() {
    let v = |s: &[&str]| -> Vec<String> { s.iter().map(|x| x.to_string()).collect() };
    let cases: &[(&[&str], &str)] = &[
        (&["ns", "ReplicaSet", "api"], "ns/ReplicaSet/api"),
        (&["a/b", "c"], "a\\/b/c"),
        (&["a", "b/c"], "a/b\\/c"),
        (&["a\\", "b"], "a\\\\/b"),
        (&["a", "\\b"], "a/\\\\b"),
        (&["", "", ""], "//"),
    ];
    let mut seen = BTreeSet::new();
    for (values, want) in cases {
        let got = join_values(&v(values));
        assert_eq!(got, *want, "{values:?}");
        assert!(seen.insert(got), "{values:?} collides");
    }
}
