//! The Helm chart (charts/scraper), rendered by a real Helm (v4.2.3, pinned and checksummed by
//! charts/tools/install.sh) for every mode and option combination:
//!
//! * `helm lint --strict` passes and `kubernetes-validate --strict` accepts every object, for
//!   the oldest and newest Kubernetes the chart supports;
//! * the Alloy config in each rendered ConfigMap passes `scraper check`;
//! * unit assertions on the objects: node-local discovery in daemonset mode, privileged
//!   settings only with eBPF, RBAC rules exactly as documented, shards, credentials;
//! * three replicas running the rendered statefulset config against the fake API server with
//!   300 pods scrape disjoint target sets whose union is every target.

mod scrape_support;
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use scrape_support::Scraper;
use serde_json::{Value, json};
use support::fake_kube::FakeKube;
use support::helm::{
    Case, FULLNAME, Helm, NAMESPACE, assert_configs_check, assert_lints, assert_validates, config,
    container, env, of_kind, one, parse, pod_spec,
};
use support::tools;

const CASES: &[Case] = &[
    Case {
        name: "default",
        sets: &[],
    },
    Case {
        name: "ebpf",
        sets: &["ebpf.enabled=true"],
    },
    Case {
        name: "ebpf-privileged",
        sets: &[
            "ebpf.enabled=true",
            "ebpf.privileged=true",
            "store.enabled=false",
            "backend.url=http://pyroscope.pyroscope.svc:4040",
        ],
    },
    Case {
        name: "backend-only",
        sets: &[
            "backend.url=http://pyroscope.pyroscope.svc:4040",
            "backend.tenant=team-a",
            "backend.basicAuth.existingSecret=pyroscope-auth",
            "store.enabled=false",
        ],
    },
    Case {
        name: "namespaces-and-metadata",
        sets: &[
            "config.namespaces={otel,monitoring}",
            "config.attachMetadata.node=true",
            "config.attachMetadata.namespace=true",
            "config.externalLabels.cluster=prod-eu-1",
            "config.profileTypes={cpu,memory,fgprof}",
        ],
    },
    Case {
        name: "namespaces-only",
        sets: &["config.namespaces={otel}"],
    },
    Case {
        name: "statefulset",
        sets: &["mode=statefulset", "shards=3"],
    },
    Case {
        name: "statefulset-persistent",
        sets: &[
            "mode=statefulset",
            "shards=2",
            "store.persistence.enabled=true",
            "store.persistence.storageClassName=fast",
            "serviceMonitor.enabled=true",
            "serviceMonitor.labels.release=prom",
            "backend.url=https://profiles.example.com",
        ],
    },
    Case {
        name: "no-service-no-rbac",
        sets: &[
            "service.enabled=false",
            "serviceAccount.create=false",
            "serviceAccount.name=existing",
            "rbac.create=false",
        ],
    },
    Case {
        name: "custom-config",
        sets: &["file:config.content=config/local.alloy"],
    },
];

fn case(name: &str) -> &'static Case {
    support::helm::case(CASES, name)
}

#[test]
fn chart_lints_strictly_with_every_case() {
    let Some(helm) = Helm::find() else { return };
    assert_lints(&helm, CASES);
}

#[test]
fn every_rendered_object_validates_strictly() {
    let Some(helm) = Helm::find() else { return };
    let Some(validator) = tools::kubernetes_validate() else {
        return;
    };
    assert_validates(&helm, &validator, CASES);
}

#[test]
fn every_rendered_config_passes_scraper_check() {
    let Some(helm) = Helm::find() else { return };
    assert_configs_check(&helm, Path::new(env!("CARGO_BIN_EXE_scraper")), CASES);
    // The user's own config is passed through byte for byte.
    let local = std::fs::read_to_string(tools::repo().join("config/local.alloy"))
        .expect("config/local.alloy");
    let rendered = config(&helm.objects(case("custom-config")));
    assert_eq!(rendered.trim_end(), local.trim_end());
}

#[test]
fn daemonset_discovers_only_the_pods_of_its_own_node() {
    let Some(helm) = Helm::find() else { return };
    for name in ["default", "ebpf", "backend-only", "namespaces-and-metadata"] {
        let objects = helm.objects(case(name));
        assert_eq!(of_kind(&objects, "DaemonSet").len(), 1, "{name}");
        assert!(of_kind(&objects, "StatefulSet").is_empty(), "{name}");
        let config = config(&objects);
        let selector = "  selectors {\n    role  = \"pod\"\n    field = \"spec.nodeName=\" + sys.env(\"HOSTNAME\")\n  }";
        assert!(
            config.contains(selector),
            "{name}: no node-local selector in\n{config}"
        );
        // One discovery.kubernetes, so no component discovers cluster-wide.
        assert_eq!(
            config.matches("discovery.kubernetes \"").count(),
            1,
            "{name}"
        );
        assert_eq!(
            env(&objects, "HOSTNAME").expect("HOSTNAME env")["valueFrom"],
            json!({"fieldRef": {"fieldPath": "spec.nodeName"}}),
            "{name}"
        );
    }
    // A statefulset shard discovers everything and keeps its hash shard instead.
    let objects = helm.objects(case("statefulset"));
    assert!(!config(&objects).contains("spec.nodeName"));
    assert!(env(&objects, "HOSTNAME").is_none());
}

/// Everything in a pod spec that needs privileges, as (what, present) pairs.
fn privileges(objects: &[Value]) -> Vec<(&'static str, bool)> {
    let pod = pod_spec(objects);
    let c = container(objects);
    let sc = &c["securityContext"];
    let host_paths = pod["volumes"]
        .as_array()
        .map(|v| v.iter().any(|v| v.get("hostPath").is_some()))
        .unwrap_or(false);
    vec![
        ("hostPID", pod["hostPID"] == true),
        ("hostNetwork", pod["hostNetwork"] == true),
        ("hostIPC", pod["hostIPC"] == true),
        ("privileged", sc["privileged"] == true),
        (
            "capabilities.add",
            sc["capabilities"]["add"]
                .as_array()
                .is_some_and(|a| !a.is_empty()),
        ),
        ("hostPath volumes", host_paths),
        ("root", pod["securityContext"]["runAsUser"] == 0),
        (
            "privilege escalation",
            sc["allowPrivilegeEscalation"] != false && sc["privileged"] != false,
        ),
    ]
}

#[test]
fn privileged_settings_appear_only_with_ebpf() {
    let Some(helm) = Helm::find() else { return };
    for case in CASES.iter().filter(|c| !c.name.starts_with("ebpf")) {
        let objects = helm.objects(case);
        for (what, present) in privileges(&objects) {
            assert!(!present, "{}: {what} without ebpf.enabled", case.name);
        }
        let pod = pod_spec(&objects);
        let sc = &container(&objects)["securityContext"];
        assert_eq!(
            pod["securityContext"]["runAsNonRoot"], true,
            "{}",
            case.name
        );
        assert_eq!(pod["securityContext"]["runAsUser"], 65532, "{}", case.name);
        assert_eq!(sc["runAsNonRoot"], true, "{}", case.name);
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{}", case.name);
        assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]), "{}", case.name);
        assert!(
            !config(&objects).contains("pyroscope.ebpf"),
            "{}",
            case.name
        );
    }

    let objects = helm.objects(case("ebpf"));
    let pod = pod_spec(&objects);
    let sc = &container(&objects)["securityContext"];
    assert_eq!(pod["hostPID"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 0);
    assert_eq!(
        sc["capabilities"]["add"],
        json!(["BPF", "PERFMON", "SYS_PTRACE", "SYSLOG"])
    );
    assert_eq!(sc["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(sc["privileged"], Value::Null);
    assert_eq!(sc["readOnlyRootFilesystem"], true);
    let debugfs = pod["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .find(|v| v["hostPath"]["path"] == "/sys/kernel/debug")
        .expect("/sys/kernel/debug volume");
    let mount = container(&objects)["volumeMounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["name"] == debugfs["name"])
        .expect("debugfs mount");
    assert_eq!(mount["readOnly"], true);
    let config = config(&objects);
    assert!(config.contains("pyroscope.ebpf \"node\""), "{config}");

    let objects = helm.objects(case("ebpf-privileged"));
    assert_eq!(container(&objects)["securityContext"]["privileged"], true);
    assert_eq!(pod_spec(&objects)["hostPID"], true);
}

fn read_only_pods() -> Value {
    json!({"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]})
}

fn rules(object: &Value) -> Vec<Value> {
    object["rules"].as_array().cloned().unwrap_or_default()
}

/// Every binding grants the role of the release's name, in its own namespace, to `account`.
fn assert_bindings(objects: &[Value], binding: &str, role: &str, account: &str) {
    for b in of_kind(objects, binding) {
        assert_eq!(
            b["subjects"],
            json!([{"kind": "ServiceAccount", "name": account, "namespace": NAMESPACE}])
        );
        assert_eq!(
            b["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": role, "name": FULLNAME})
        );
        let ns = &b["metadata"]["namespace"];
        assert!(
            of_kind(objects, role)
                .iter()
                .any(|r| &r["metadata"]["namespace"] == ns),
            "{binding} in {ns} has no {role} beside it"
        );
    }
}

#[test]
fn rbac_rules_are_exactly_the_documented_ones() {
    let Some(helm) = Helm::find() else { return };
    // Cluster-wide discovery: read-only pods, nothing else.
    for name in ["default", "statefulset", "ebpf", "backend-only"] {
        let objects = helm.objects(case(name));
        let roles = of_kind(&objects, "ClusterRole");
        assert_eq!(roles.len(), 1, "{name}");
        assert_eq!(rules(roles[0]), vec![read_only_pods()], "{name}");
        assert!(of_kind(&objects, "Role").is_empty(), "{name}");
        assert_eq!(of_kind(&objects, "ClusterRoleBinding").len(), 1, "{name}");
        assert_bindings(&objects, "ClusterRoleBinding", "ClusterRole", FULLNAME);
    }

    // Listed namespaces: pods per namespace; nodes and namespaces cluster-wide because
    // metadata is attached.
    let objects = helm.objects(case("namespaces-and-metadata"));
    let cluster = one(&objects, "ClusterRole");
    assert_eq!(
        rules(cluster),
        vec![
            json!({"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}),
            json!({"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]}),
        ]
    );
    let roles = of_kind(&objects, "Role");
    let namespaces: BTreeSet<&str> = roles
        .iter()
        .map(|r| r["metadata"]["namespace"].as_str().expect("namespace"))
        .collect();
    assert_eq!(namespaces, BTreeSet::from(["monitoring", "otel"]));
    for r in &roles {
        assert_eq!(rules(r), vec![read_only_pods()]);
    }
    assert_eq!(of_kind(&objects, "RoleBinding").len(), 2);
    assert_bindings(&objects, "RoleBinding", "Role", FULLNAME);
    assert_bindings(&objects, "ClusterRoleBinding", "ClusterRole", FULLNAME);
    let config = config(&objects);
    assert!(
        config.contains("names = [\"otel\",\"monitoring\"]"),
        "{config}"
    );
    assert!(config.contains("node      = true") && config.contains("namespace = true"));

    // Namespaces without metadata: no cluster-wide grant at all.
    let objects = helm.objects(case("namespaces-only"));
    assert!(of_kind(&objects, "ClusterRole").is_empty());
    assert!(of_kind(&objects, "ClusterRoleBinding").is_empty());
    assert_eq!(rules(one(&objects, "Role")), vec![read_only_pods()]);

    // rbac.create=false and an existing account: no RBAC objects, the account is used.
    let objects = helm.objects(case("no-service-no-rbac"));
    for kind in [
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "ServiceAccount",
        "Service",
    ] {
        assert!(of_kind(&objects, kind).is_empty(), "{kind}");
    }
    assert_eq!(pod_spec(&objects)["serviceAccountName"], "existing");

    // No verb anywhere beyond reading.
    for case in CASES {
        for o in helm.objects(case) {
            for rule in rules(&o) {
                assert_eq!(
                    rule["verbs"],
                    json!(["get", "list", "watch"]),
                    "{}",
                    case.name
                );
            }
        }
    }
}

#[test]
fn statefulset_replicas_shard_by_their_ordinal() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("statefulset"));
    let sts = one(&objects, "StatefulSet");
    assert_eq!(sts["spec"]["replicas"], 3);
    assert_eq!(sts["metadata"]["name"], FULLNAME);
    let service = one(&objects, "Service");
    assert_eq!(sts["spec"]["serviceName"], service["metadata"]["name"]);
    assert_eq!(service["spec"]["clusterIP"], "None");
    assert_eq!(
        env(&objects, "POD_NAME").expect("POD_NAME")["valueFrom"],
        json!({"fieldRef": {"fieldPath": "metadata.name"}})
    );
    let config = config(&objects);
    assert!(config.contains("modulus       = 3"), "{config}");
    assert!(
        config.contains(&format!(
            "regex         = string.trim_prefix(sys.env(\"POD_NAME\"), \"{FULLNAME}-\")"
        )),
        "{config}"
    );

    // Persistence: one claim per replica, mounted as the data volume.
    let objects = helm.objects(case("statefulset-persistent"));
    let sts = one(&objects, "StatefulSet");
    let claims = sts["spec"]["volumeClaimTemplates"]
        .as_array()
        .expect("claims");
    assert_eq!(claims.len(), 1);
    assert_eq!(claims[0]["metadata"]["name"], "data");
    assert_eq!(claims[0]["spec"]["storageClassName"], "fast");
    let volumes = pod_spec(&objects)["volumes"].as_array().expect("volumes");
    assert!(volumes.iter().all(|v| v["name"] != "data"), "{volumes:#?}");
}

#[test]
fn backend_credentials_come_from_the_secret() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("backend-only"));
    for (var, key) in [
        ("PYROSCOPE_USERNAME", "username"),
        ("PYROSCOPE_PASSWORD", "password"),
    ] {
        assert_eq!(
            env(&objects, var).expect(var)["valueFrom"],
            json!({"secretKeyRef": {"name": "pyroscope-auth", "key": key}})
        );
    }
    let config = config(&objects);
    for needle in [
        "url = \"http://pyroscope.pyroscope.svc:4040\"",
        "\"X-Scope-OrgID\" = \"team-a\"",
        "username = sys.env(\"PYROSCOPE_USERNAME\")",
        "password = sys.env(\"PYROSCOPE_PASSWORD\")",
        "forward_to      = [pyroscope.write.backend.receiver]",
    ] {
        assert!(config.contains(needle), "{needle} missing from\n{config}");
    }
    assert!(!config.contains("pyroscope.store"));
    // No secret material is rendered into any object.
    assert!(of_kind(&objects, "Secret").is_empty());

    // The default keeps profiles in the local store only.
    let config = self::config(&helm.objects(case("default")));
    assert!(config.contains("forward_to      = [pyroscope.store.local.receiver]"));
    assert!(!config.contains("pyroscope.write"));
}

#[test]
fn probes_service_and_service_monitor_point_at_the_http_server() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("statefulset-persistent"));
    let c = container(&objects);
    // Not /-/healthy: a backend outage or targets down must not restart the pod (it would lose
    // the queue and the delta baselines and fix nothing).
    assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/-/ready");
    assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/-/ready");
    assert_eq!(c["ports"][0]["name"], "http-metrics");
    assert_eq!(c["ports"][0]["containerPort"], 12345);
    assert!(
        c["args"]
            .as_array()
            .expect("args")
            .contains(&json!("--server.http.listen-addr=0.0.0.0:12345"))
    );
    let service = one(&objects, "Service");
    assert_eq!(service["spec"]["ports"][0]["targetPort"], "http-metrics");
    let monitor = one(&objects, "ServiceMonitor");
    assert_eq!(monitor["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(monitor["metadata"]["labels"]["release"], "prom");
    // The monitor selects exactly the labels the service carries, on its named port.
    let selector = monitor["spec"]["selector"]["matchLabels"]
        .as_object()
        .expect("matchLabels");
    for (k, v) in selector {
        assert_eq!(&service["metadata"]["labels"][k], v, "{k}");
    }
    assert_eq!(
        monitor["spec"]["endpoints"],
        json!([{"port": "http-metrics", "path": "/metrics", "interval": "30s"}])
    );
    // Resources are set by default (sized in docs/PERFORMANCE.md).
    assert_eq!(c["resources"]["requests"]["memory"], "128Mi");
    assert_eq!(c["resources"]["limits"]["memory"], "512Mi");
}

#[test]
fn bad_values_fail_with_a_clear_message() {
    let Some(helm) = Helm::find() else { return };
    for (sets, message) in [
        (
            &["mode=cluster"][..],
            "at '/mode': value must be one of 'daemonset', 'statefulset', 'deployment'",
        ),
        (
            &["config.typo=1"],
            "additional properties 'typo' not allowed",
        ),
        (&["shards=0"], "at '/shards'"),
        (
            &["config.profileTypes={cpu,heap}"],
            "at '/config/profileTypes/1'",
        ),
        (
            &["mode=statefulset", "ebpf.enabled=true"],
            "ebpf.enabled needs mode: daemonset",
        ),
        (
            &["store.enabled=false"],
            "set backend.url, store.enabled, or both",
        ),
        (
            &["backend.basicAuth.existingSecret=auth"],
            "backend.basicAuth.existingSecret is set but backend.url is empty",
        ),
    ] {
        let err = helm
            .render(sets)
            .expect_err(&format!("{sets:?} should be rejected"));
        assert!(err.contains(message), "{sets:?}: {err}");
    }
}

/// A pod opted in for cpu by port number and, every third one, for memory by port name.
fn annotated_pod(i: usize) -> Value {
    let mut annotations = json!({
        "profiles.grafana.com/cpu.scrape": "true",
        "profiles.grafana.com/cpu.port": "6060",
    });
    if i.is_multiple_of(3) {
        annotations["profiles.grafana.com/memory.scrape"] = json!("true");
        annotations["profiles.grafana.com/memory.port_name"] = json!("http-pprof");
    }
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("app-{i}"), "namespace": format!("team-{}", i % 5),
            "uid": format!("uid-{i}"), "labels": {"app": "demo"}, "annotations": annotations
        },
        "spec": {"nodeName": format!("node-{}", i % 7), "containers": [{
            "name": "app", "image": "demo:1",
            "ports": [{"name": "http-pprof", "containerPort": 6060, "protocol": "TCP"}]
        }]},
        // Loopback addresses with nothing listening: scrapes fail fast, targets stay.
        "status": {"phase": "Running", "podIP": format!("127.77.{}.{}", i / 250, i % 250 + 1),
            "conditions": [{"type": "Ready", "status": "True"}]}
    })
}

/// (profile type, url) of every target a scraper has, with the pod each belongs to.
async fn scrape_targets(s: &Scraper) -> BTreeMap<(String, String), String> {
    let mut all = BTreeMap::new();
    for ty in ["cpu", "memory"] {
        for t in s.targets(&format!("pyroscope.scrape.{ty}")).await {
            let key = (
                t["profile_type"].as_str().unwrap_or_default().to_owned(),
                t["url"].as_str().unwrap_or_default().to_owned(),
            );
            let pod = format!(
                "{}/{}",
                t["labels"]["namespace"].as_str().unwrap_or_default(),
                t["labels"]["pod"].as_str().unwrap_or_default()
            );
            all.insert(key, pod);
        }
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharded_statefulset_replicas_split_all_targets() {
    let Some(helm) = Helm::find() else { return };
    const SHARDS: usize = 3;
    const PODS: usize = 300;
    let objects = parse(
        &helm
            .render(&[
                "mode=statefulset",
                "shards=3",
                "config.profileTypes={cpu,memory}",
            ])
            .expect("render"),
    );
    let config = config(&objects);

    let fake = FakeKube::start().await;
    for i in 0..PODS {
        fake.apply(annotated_pod(i));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = fake.kubeconfig(dir.path());
    let kubeconfig = kubeconfig.to_string_lossy().into_owned();

    let mut replicas = Vec::new();
    for ordinal in 0..SHARDS {
        let pod_name = format!("{FULLNAME}-{ordinal}");
        let config = config.clone();
        replicas.push(
            Scraper::start_with_env(
                move |_| config,
                &[
                    ("KUBECONFIG", kubeconfig.as_str()),
                    ("POD_NAME", pod_name.as_str()),
                ],
            )
            .await,
        );
    }

    // Every pod has a cpu target; every third also a memory one.
    let expected: BTreeSet<(String, String)> = (0..PODS)
        .flat_map(|i| {
            let url = |path: &str| format!("http://127.77.{}.{}:6060{path}", i / 250, i % 250 + 1);
            let mut v = vec![(
                "process_cpu".to_owned(),
                url("/debug/pprof/profile?seconds=14"),
            )];
            if i.is_multiple_of(3) {
                v.push(("memory".to_owned(), url("/debug/pprof/allocs")));
            }
            v
        })
        .collect();

    let mut shards: Vec<BTreeMap<(String, String), String>> = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(45);
    loop {
        shards.clear();
        for r in &replicas {
            shards.push(scrape_targets(r).await);
        }
        let total: usize = shards.iter().map(BTreeMap::len).sum();
        if total >= expected.len() || tokio::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }

    let union: BTreeSet<(String, String)> = shards.iter().flat_map(|s| s.keys().cloned()).collect();
    let sizes: Vec<usize> = shards.iter().map(BTreeMap::len).collect();
    assert_eq!(
        sizes.iter().sum::<usize>(),
        union.len(),
        "shards overlap: sizes {sizes:?}, union {}",
        union.len()
    );
    let missing: Vec<_> = expected.difference(&union).take(5).collect();
    let extra: Vec<_> = union.difference(&expected).take(5).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "union differs from all targets: missing {missing:?}, extra {extra:?} (sizes {sizes:?})"
    );
    // Sharding is by pod: all of a pod's targets are on one replica, and each replica has a
    // fair share (300 pods over 3 shards: ~100 each).
    let mut owner: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, shard) in shards.iter().enumerate() {
        for pod in shard.values() {
            let prev = owner.insert(pod.as_str(), i);
            assert!(
                prev.is_none() || prev == Some(i),
                "{pod} on shards {prev:?} and {i}"
            );
        }
    }
    assert_eq!(owner.len(), PODS);
    for (i, shard) in shards.iter().enumerate() {
        let pods: BTreeSet<&String> = shard.values().collect();
        assert!(
            (50..=150).contains(&pods.len()),
            "shard {i} has {} pods",
            pods.len()
        );
    }
    println!("targets per shard: {sizes:?}");
}
