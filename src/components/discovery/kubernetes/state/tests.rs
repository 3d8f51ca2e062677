//! Informer semantics on kube's watcher events, without a server.

use k8s_openapi::api::core::v1::Pod;
use serde_json::json;

use super::*;
use crate::protocols::kubernetes::watcher::{Failure, FailureReason};

fn pod(ns: &str, name: &str, ip: &str, port: i32) -> Object {
    Object::Pod(
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "resourceVersion": "1"},
            "spec": {"containers": [{"name": "c", "ports": [{"containerPort": port}]}]},
            "status": {"podIP": ip}
        }))
        .expect("pod"),
    )
}

fn pods_state(scopes: usize) -> State {
    let scopes = (0..scopes)
        .map(|i| Scope {
            resource: Resource::Pods,
            namespace: Some(format!("ns{i}")),
        })
        .collect();
    State::new(Role::Pod, AttachMetadata::default(), scopes)
}

fn addresses(s: &State) -> Vec<String> {
    s.targets()
        .map(|t| t.get("__address__").unwrap_or("").to_string())
        .collect()
}

fn apply(s: &mut State, watch: usize, e: WatchEvent) -> Vec<(Resource, EventKind)> {
    let mut seen = Vec::new();
    s.apply(watch, e, &mut |r, k| seen.push((r, k)));
    seen
}

#[test]
fn synced_only_after_every_watch_listed_once() {
    let mut s = pods_state(2);
    apply(&mut s, 0, WatchEvent::Init);
    apply(
        &mut s,
        0,
        WatchEvent::InitApply(pod("ns0", "a", "10.0.0.1", 80)),
    );
    assert!(addresses(&s).is_empty(), "buffered until InitDone");
    apply(&mut s, 0, WatchEvent::InitDone);
    assert!(!s.synced());
    assert_eq!(addresses(&s), ["10.0.0.1:80"]);
    apply(&mut s, 1, WatchEvent::Init);
    apply(&mut s, 1, WatchEvent::InitDone);
    assert!(s.synced());
    assert!(s.take_changed());
    assert!(!s.take_changed());
}

#[test]
fn relist_swaps_at_init_done_without_an_empty_moment_and_deletes_the_missing() {
    let mut s = pods_state(1);
    apply(&mut s, 0, WatchEvent::Init);
    for (n, ip) in [("a", "10.0.0.1"), ("b", "10.0.0.2")] {
        apply(&mut s, 0, WatchEvent::InitApply(pod("ns0", n, ip, 80)));
    }
    apply(&mut s, 0, WatchEvent::InitDone);
    s.take_changed();

    // 410 Gone: the watcher errors, then relists. `b` was deleted meanwhile, `c` added.
    apply(
        &mut s,
        0,
        WatchEvent::Error(Failure::new(
            FailureReason::Expired,
            "too old resource version",
        )),
    );
    apply(&mut s, 0, WatchEvent::Init);
    assert_eq!(addresses(&s), ["10.0.0.1:80", "10.0.0.2:80"]);
    apply(
        &mut s,
        0,
        WatchEvent::InitApply(pod("ns0", "a", "10.0.0.1", 80)),
    );
    apply(
        &mut s,
        0,
        WatchEvent::InitApply(pod("ns0", "c", "10.0.0.3", 80)),
    );
    assert_eq!(addresses(&s), ["10.0.0.1:80", "10.0.0.2:80"]);
    let events = apply(&mut s, 0, WatchEvent::InitDone);
    assert_eq!(addresses(&s), ["10.0.0.1:80", "10.0.0.3:80"]);
    assert_eq!(
        events,
        [
            (Resource::Pods, EventKind::Delete),
            (Resource::Pods, EventKind::Update),
            (Resource::Pods, EventKind::Add),
        ]
    );
    assert!(s.take_changed());
}

#[test]
fn a_relist_that_changes_nothing_is_not_a_change() {
    let mut s = pods_state(1);
    for _ in 0..2 {
        apply(&mut s, 0, WatchEvent::Init);
        apply(
            &mut s,
            0,
            WatchEvent::InitApply(pod("ns0", "a", "10.0.0.1", 80)),
        );
        apply(&mut s, 0, WatchEvent::InitDone);
        s.take_changed();
    }
    apply(&mut s, 0, WatchEvent::Init);
    apply(
        &mut s,
        0,
        WatchEvent::InitApply(pod("ns0", "a", "10.0.0.1", 80)),
    );
    apply(&mut s, 0, WatchEvent::InitDone);
    assert!(!s.take_changed());
    // A status-only update (same targets) is no change either.
    apply(
        &mut s,
        0,
        WatchEvent::Apply(pod("ns0", "a", "10.0.0.1", 80)),
    );
    assert!(!s.take_changed());
    apply(
        &mut s,
        0,
        WatchEvent::Apply(pod("ns0", "a", "10.0.0.1", 81)),
    );
    assert!(s.take_changed());
    assert_eq!(addresses(&s), ["10.0.0.1:81"]);
}

#[test]
fn relist_of_one_namespace_leaves_the_others_alone() {
    let mut s = pods_state(2);
    for (w, ns) in [(0, "ns0"), (1, "ns1")] {
        apply(&mut s, w, WatchEvent::Init);
        apply(
            &mut s,
            w,
            WatchEvent::InitApply(pod(
                ns,
                "a",
                if w == 0 { "10.0.0.1" } else { "10.0.1.1" },
                80,
            )),
        );
        apply(&mut s, w, WatchEvent::InitDone);
    }
    apply(&mut s, 0, WatchEvent::Init);
    apply(&mut s, 0, WatchEvent::InitDone);
    assert_eq!(addresses(&s), ["10.0.1.1:80"]);
    assert_eq!(s.target_count(), 1);
}

#[test]
fn delete_and_losing_the_ip_remove_targets() {
    let mut s = pods_state(1);
    apply(&mut s, 0, WatchEvent::Init);
    apply(&mut s, 0, WatchEvent::InitDone);
    apply(
        &mut s,
        0,
        WatchEvent::Apply(pod("ns0", "a", "10.0.0.1", 80)),
    );
    apply(
        &mut s,
        0,
        WatchEvent::Apply(pod("ns0", "b", "10.0.0.2", 80)),
    );
    assert_eq!(s.target_count(), 2);
    let e = apply(
        &mut s,
        0,
        WatchEvent::Delete(pod("ns0", "a", "10.0.0.1", 80)),
    );
    assert_eq!(e, [(Resource::Pods, EventKind::Delete)]);
    // Evicted: the pod stays but loses its IP.
    apply(&mut s, 0, WatchEvent::Apply(pod("ns0", "b", "", 80)));
    assert!(addresses(&s).is_empty());
    assert_eq!(s.target_count(), 0);
    assert_eq!(s.group_count(), 0);
    // Deleting an unknown object is not an event.
    assert!(
        apply(
            &mut s,
            0,
            WatchEvent::Delete(pod("ns0", "zzz", "1.1.1.1", 1))
        )
        .is_empty()
    );
}

#[test]
fn node_changes_rebuild_the_pods_on_that_node() {
    let scopes = vec![
        Scope {
            resource: Resource::Pods,
            namespace: None,
        },
        Scope {
            resource: Resource::Nodes,
            namespace: None,
        },
    ];
    let attach = AttachMetadata {
        node: true,
        namespace: false,
    };
    let mut s = State::new(Role::Pod, attach, scopes);
    let on_node = |name: &str, node: &str| {
        let mut p: Pod = serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "d"},
            "spec": {"nodeName": node, "containers": [{"name": "c"}]},
            "status": {"podIP": "10.0.0.1"}
        }))
        .expect("pod");
        p.metadata.resource_version = Some("1".into());
        Object::Pod(p)
    };
    let node = |zone: &str| {
        Object::Node(
            serde_json::from_value(json!({"metadata": {"name": "n1", "labels": {"zone": zone}}}))
                .expect("node"),
        )
    };
    apply(&mut s, 0, WatchEvent::Init);
    apply(&mut s, 0, WatchEvent::InitApply(on_node("p1", "n1")));
    apply(&mut s, 0, WatchEvent::InitApply(on_node("p2", "n2")));
    apply(&mut s, 0, WatchEvent::InitDone);
    assert_eq!(s.target_count(), 0, "nodes not known yet");
    apply(&mut s, 1, WatchEvent::Init);
    apply(&mut s, 1, WatchEvent::InitApply(node("a")));
    apply(&mut s, 1, WatchEvent::InitDone);
    assert_eq!(s.target_count(), 1);
    s.take_changed();
    apply(&mut s, 1, WatchEvent::Apply(node("b")));
    assert!(s.take_changed());
    let t = s.targets().next().expect("one target");
    assert_eq!(t.get("__meta_kubernetes_node_label_zone"), Some("b"));
}
