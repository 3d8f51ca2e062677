//! The chart's scale-out and upgrade options (issue 23), rendered by the real Helm as
//! tests/helm_chart.rs does, with every object validated by `kubernetes-validate --strict`:
//!
//! * clustering (statefulset or deployment): the headless `<fullname>-cluster` Service, read-only
//!   RBAC on EndpointSlices in the release namespace, the `--cluster.*` flags with the pod's IP,
//!   `clustering { enabled = true }` in every `pyroscope.scrape` and no hash sharding; a
//!   ServiceMonitor that selects only the main Service; `shards` replicas kept when clustering
//!   is turned on for a sharded statefulset;
//! * an autoscaler that owns the replica count (with `behavior` passed through), and a
//!   PodDisruptionBudget;
//! * combinations that validate but could not run (root vs runAsNonRoot, eBPF vs a non-root
//!   container, persistence outside statefulset mode, HPA targets without requests) refused;
//! * config changes reloaded in place (`--config.watch-interval`, no `checksum/config`), the
//!   old restart kept behind `config.restartOnChange`;
//! * the DaemonSet's store on a hostPath, extra volumes, an existing ConfigMap, and security
//!   context overrides merged over the computed ones;
//! * values.yaml and values.schema.json describe the same keys, and the schema refuses an
//!   unknown key and a wrong type for each new value.

mod support;

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::{Value, json};
use support::helm::{
    Case, FULLNAME, Helm, NAMESPACE, args, assert_configs_check, assert_lints, assert_validates,
    config, container, env, of_kind, one, pod_spec, workload,
};
use support::tools;

const CLUSTER_SERVICE: &str = "demo-scraper-cluster";

const CASES: &[Case] = &[
    Case {
        name: "clustered-statefulset",
        sets: &[
            "mode=statefulset",
            "clustering.enabled=true",
            "replicas=3",
            "store.persistence.enabled=true",
        ],
    },
    Case {
        name: "clustered-deployment-hpa",
        sets: &[
            "mode=deployment",
            "clustering.enabled=true",
            "autoscaling.enabled=true",
            "autoscaling.minReplicas=2",
            "autoscaling.maxReplicas=10",
            "autoscaling.targetMemoryUtilizationPercentage=80",
            "podDisruptionBudget.enabled=true",
            "podDisruptionBudget.minAvailable=50%",
            "config.namespaces={otel,monitoring}",
        ],
    },
    Case {
        name: "clustered-statefulset-hpa-pdb",
        sets: &[
            "mode=statefulset",
            "clustering.enabled=true",
            "autoscaling.enabled=true",
            "podDisruptionBudget.enabled=true",
        ],
    },
    Case {
        name: "deployment-single",
        sets: &["mode=deployment"],
    },
    Case {
        name: "daemonset-host-path",
        sets: &["store.hostPath.enabled=true"],
    },
    Case {
        name: "daemonset-host-path-non-root",
        sets: &[
            "store.hostPath.enabled=true",
            "store.hostPath.path=/mnt/profiles",
            "store.hostPath.type=Directory",
            "podSecurityContext.runAsUser=65532",
            "podSecurityContext.runAsGroup=65532",
            "podSecurityContext.runAsNonRoot=true",
        ],
    },
    Case {
        name: "restart-on-change",
        sets: &[
            "config.restartOnChange=true",
            "podAnnotations.team=profiling",
        ],
    },
    Case {
        name: "watch-off",
        sets: &["config.watchInterval=0s"],
    },
    Case {
        name: "existing-config-map",
        sets: &["config.existingConfigMap=my-scraper-config"],
    },
    Case {
        name: "extra-volumes",
        sets: &[
            "extraVolumes[0].name=backend-ca",
            "extraVolumes[0].secret.secretName=backend-ca",
            "extraVolumeMounts[0].name=backend-ca",
            "extraVolumeMounts[0].mountPath=/etc/backend-ca",
            "extraVolumeMounts[0].readOnly=true",
            "extraArgs={--memory.limit=256MiB}",
        ],
    },
    Case {
        name: "security-overrides",
        sets: &[
            "podSecurityContext.runAsUser=1001",
            "podSecurityContext.fsGroupChangePolicy=OnRootMismatch",
            "securityContext.capabilities.add={NET_BIND_SERVICE}",
        ],
    },
    Case {
        name: "ebpf-overrides",
        sets: &[
            "ebpf.enabled=true",
            "podSecurityContext.seLinuxOptions.type=spc_t",
            "securityContext.seLinuxOptions.type=spc_t",
        ],
    },
    Case {
        name: "clustered-monitored",
        sets: &[
            "mode=statefulset",
            "clustering.enabled=true",
            "replicas=2",
            "serviceMonitor.enabled=true",
        ],
    },
    Case {
        name: "clustered-from-shards",
        sets: &["mode=statefulset", "shards=4", "clustering.enabled=true"],
    },
    Case {
        name: "hpa-behavior",
        sets: &[
            "mode=deployment",
            "clustering.enabled=true",
            "autoscaling.enabled=true",
            "autoscaling.behavior.scaleDown.stabilizationWindowSeconds=900",
            "autoscaling.behavior.scaleDown.policies[0].type=Pods",
            "autoscaling.behavior.scaleDown.policies[0].value=1",
            "autoscaling.behavior.scaleDown.policies[0].periodSeconds=300",
        ],
    },
    Case {
        name: "root-by-choice",
        sets: &["podSecurityContext.runAsUser=0"],
    },
    Case {
        name: "container-root-by-choice",
        sets: &["mode=deployment", "securityContext.runAsUser=0"],
    },
];

fn case(name: &str) -> &'static Case {
    support::helm::case(CASES, name)
}

fn cluster_args() -> [String; 2] {
    [
        "--cluster.enabled".to_owned(),
        format!("--cluster.kubernetes-service={NAMESPACE}/{CLUSTER_SERVICE}"),
    ]
}

fn named<'a>(list: &'a Value, name: &str) -> Option<&'a Value> {
    list.as_array()?.iter().find(|v| v["name"] == name)
}

fn annotations(objects: &[Value]) -> &Value {
    &workload(objects)["spec"]["template"]["metadata"]["annotations"]
}

#[test]
fn every_case_lints_validates_and_checks() {
    let Some(helm) = Helm::find() else { return };
    assert_lints(&helm, CASES);
    assert_configs_check(&helm, Path::new(env!("CARGO_BIN_EXE_scraper")), CASES);
    let Some(validator) = tools::kubernetes_validate() else {
        return;
    };
    assert_validates(&helm, &validator, CASES);
}

#[test]
fn clustering_renders_the_member_service_its_rbac_and_the_cluster_flags() {
    let Some(helm) = Helm::find() else { return };
    for name in [
        "clustered-statefulset",
        "clustered-deployment-hpa",
        "clustered-statefulset-hpa-pdb",
    ] {
        let objects = helm.objects(case(name));
        let w = workload(&objects);

        // The headless Service of ready members, on the named port the flags default to.
        let service = of_kind(&objects, "Service")
            .into_iter()
            .find(|s| s["metadata"]["name"] == CLUSTER_SERVICE)
            .unwrap_or_else(|| panic!("{name}: no {CLUSTER_SERVICE} Service"));
        assert_eq!(service["metadata"]["namespace"], NAMESPACE, "{name}");
        assert_eq!(service["spec"]["clusterIP"], "None", "{name}");
        assert_eq!(service["spec"]["publishNotReadyAddresses"], false, "{name}");
        assert_eq!(
            service["spec"]["selector"], w["spec"]["selector"]["matchLabels"],
            "{name}: the Service selects exactly the workload's pods"
        );
        assert_eq!(
            service["spec"]["ports"],
            json!([{"name": "http-metrics", "port": 12345, "targetPort": "http-metrics", "protocol": "TCP"}]),
            "{name}"
        );

        // Read-only EndpointSlices in the release namespace, bound to the pod's account.
        let role = of_kind(&objects, "Role")
            .into_iter()
            .find(|r| r["metadata"]["name"] == CLUSTER_SERVICE)
            .unwrap_or_else(|| panic!("{name}: no Role {CLUSTER_SERVICE}"));
        assert_eq!(role["metadata"]["namespace"], NAMESPACE, "{name}");
        assert_eq!(
            role["rules"],
            json!([{"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": ["get", "list", "watch"]}]),
            "{name}"
        );
        let binding = of_kind(&objects, "RoleBinding")
            .into_iter()
            .find(|b| b["metadata"]["name"] == CLUSTER_SERVICE)
            .unwrap_or_else(|| panic!("{name}: no RoleBinding {CLUSTER_SERVICE}"));
        assert_eq!(binding["metadata"]["namespace"], NAMESPACE, "{name}");
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": CLUSTER_SERVICE})
        );
        assert_eq!(
            binding["subjects"],
            json!([{"kind": "ServiceAccount", "name": pod_spec(&objects)["serviceAccountName"], "namespace": NAMESPACE}])
        );
        // Nothing anywhere beyond reading.
        for o in &objects {
            for rule in o["rules"].as_array().into_iter().flatten() {
                assert_eq!(rule["verbs"], json!(["get", "list", "watch"]), "{name}");
            }
        }

        // The flags, with the pod's IP from the downward API, from which the binary builds
        // its advertise address (bracketed for IPv6; a `$(POD_IP):port` flag would not be).
        let a = args(&objects);
        for want in cluster_args() {
            assert!(a.contains(&want), "{name}: {want} missing from {a:?}");
        }
        assert!(
            a.iter()
                .all(|a| !a.starts_with("--cluster.advertise-address")),
            "{name}: {a:?}"
        );
        assert_eq!(
            env(&objects, "POD_IP").expect("POD_IP")["valueFrom"],
            json!({"fieldRef": {"fieldPath": "status.podIP"}}),
            "{name}"
        );

        // Every scrape is clustered; no shard is kept by ordinal; discovery is cluster-wide.
        let config = config(&objects);
        let scrapes = config.matches("pyroscope.scrape \"").count();
        assert_eq!(scrapes, 5, "{name}: one per default profile type");
        assert_eq!(
            config
                .matches("  clustering {\n    enabled = true\n  }\n")
                .count(),
            scrapes,
            "{name}:\n{config}"
        );
        for absent in ["hashmod", "__tmp_shard", "POD_NAME", "spec.nodeName"] {
            assert!(!config.contains(absent), "{name}: {absent} in\n{config}");
        }

        // Reloaded, not restarted; not privileged.
        assert!(
            annotations(&objects).get("checksum/config").is_none(),
            "{name}"
        );
        assert!(
            a.contains(&"--config.watch-interval=10s".to_owned()),
            "{name}"
        );
        assert_ne!(pod_spec(&objects)["hostPID"], true, "{name}");
        assert_eq!(
            pod_spec(&objects)["securityContext"]["runAsNonRoot"],
            true,
            "{name}"
        );
    }

    // Replicas come from `replicas`, not `shards`, and persistence still gives claims.
    let objects = helm.objects(case("clustered-statefulset"));
    let sts = one(&objects, "StatefulSet");
    assert_eq!(sts["spec"]["replicas"], 3);
    assert_eq!(
        sts["spec"]["volumeClaimTemplates"][0]["metadata"]["name"],
        "data"
    );
    assert!(of_kind(&objects, "HorizontalPodAutoscaler").is_empty());

    // Without clustering: none of it.
    for sets in [
        &[][..],
        &["mode=statefulset", "shards=3"],
        &["mode=deployment"],
    ] {
        let objects = helm.objects(&Case {
            name: "plain",
            sets,
        });
        assert!(
            of_kind(&objects, "Service")
                .iter()
                .all(|s| s["metadata"]["name"] != CLUSTER_SERVICE),
            "{sets:?}"
        );
        assert!(
            of_kind(&objects, "Role")
                .iter()
                .all(|r| r["metadata"]["name"] != CLUSTER_SERVICE)
        );
        assert!(args(&objects).iter().all(|a| !a.starts_with("--cluster.")));
        assert!(env(&objects, "POD_IP").is_none());
        assert!(!config(&objects).contains("clustering {"));
    }
}

#[test]
fn an_autoscaler_owns_the_replica_count() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("clustered-deployment-hpa"));
    let deployment = one(&objects, "Deployment");
    assert!(
        deployment["spec"].get("replicas").is_none(),
        "{deployment:#}"
    );
    let hpa = one(&objects, "HorizontalPodAutoscaler");
    assert_eq!(hpa["apiVersion"], "autoscaling/v2");
    assert_eq!(
        hpa["spec"]["scaleTargetRef"],
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": FULLNAME})
    );
    assert_eq!(hpa["spec"]["minReplicas"], 2);
    assert_eq!(hpa["spec"]["maxReplicas"], 10);
    let utilization = |resource: &str, percent: u64| {
        json!({"type": "Resource", "resource": {"name": resource,
            "target": {"type": "Utilization", "averageUtilization": percent}}})
    };
    assert_eq!(
        hpa["spec"]["metrics"],
        json!([utilization("cpu", 70), utilization("memory", 80)])
    );

    let objects = helm.objects(case("clustered-statefulset-hpa-pdb"));
    assert!(
        one(&objects, "StatefulSet")["spec"]
            .get("replicas")
            .is_none()
    );
    let hpa = one(&objects, "HorizontalPodAutoscaler");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["kind"], "StatefulSet");
    assert_eq!(hpa["spec"]["metrics"], json!([utilization("cpu", 70)]));

    // A plain single-replica Deployment: no autoscaler, one replica.
    let objects = helm.objects(case("deployment-single"));
    assert_eq!(one(&objects, "Deployment")["spec"]["replicas"], 1);
    assert!(of_kind(&objects, "HorizontalPodAutoscaler").is_empty());
}

#[test]
fn a_disruption_budget_covers_the_replicas() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("clustered-statefulset-hpa-pdb"));
    let pdb = one(&objects, "PodDisruptionBudget");
    assert_eq!(pdb["apiVersion"], "policy/v1");
    assert_eq!(
        pdb["spec"]["selector"],
        workload(&objects)["spec"]["selector"]
    );
    assert_eq!(pdb["spec"]["maxUnavailable"], 1);
    assert!(pdb["spec"].get("minAvailable").is_none());

    let objects = helm.objects(case("clustered-deployment-hpa"));
    let pdb = one(&objects, "PodDisruptionBudget");
    assert_eq!(pdb["spec"]["minAvailable"], "50%");
    assert!(
        pdb["spec"].get("maxUnavailable").is_none(),
        "Kubernetes takes one of the two"
    );

    for name in [
        "clustered-statefulset",
        "deployment-single",
        "daemonset-host-path",
    ] {
        assert!(of_kind(&helm.objects(case(name)), "PodDisruptionBudget").is_empty());
    }
}

#[test]
fn config_changes_are_reloaded_not_restarted_by_default() {
    let Some(helm) = Helm::find() else { return };
    for name in [
        "clustered-statefulset",
        "daemonset-host-path",
        "extra-volumes",
    ] {
        let objects = helm.objects(case(name));
        assert!(
            annotations(&objects).get("checksum/config").is_none(),
            "{name}"
        );
        assert!(args(&objects).contains(&"--config.watch-interval=10s".to_owned()));
        // A subPath mount would never see the ConfigMap change.
        let mount = named(&container(&objects)["volumeMounts"], "config").expect("config mount");
        assert_eq!(
            mount,
            &json!({"name": "config", "mountPath": "/etc/scraper", "readOnly": true})
        );
    }
    let objects = helm.objects(case("watch-off"));
    assert!(args(&objects).contains(&"--config.watch-interval=0s".to_owned()));

    // The old behaviour on request: the checksum of the rendered ConfigMap, changing with it.
    let checksum = |sets: &'static [&'static str]| {
        let objects = helm.objects(&Case {
            name: "restart",
            sets,
        });
        let a = annotations(&objects);
        assert_eq!(a["team"], "profiling");
        a["checksum/config"]
            .as_str()
            .expect("checksum/config")
            .to_owned()
    };
    let base = checksum(case("restart-on-change").sets);
    assert_eq!(base.len(), 64, "sha256 hex: {base}");
    let changed = checksum(&[
        "config.restartOnChange=true",
        "podAnnotations.team=profiling",
        "config.logLevel=debug",
    ]);
    assert_ne!(base, changed);
}

#[test]
fn the_daemonset_store_can_live_on_the_node() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("daemonset-host-path"));
    let pod = pod_spec(&objects);
    let data = named(&pod["volumes"], "data").expect("data volume");
    assert_eq!(
        data,
        &json!({"name": "data", "hostPath": {"path": "/var/lib/scraper/monitoring/demo", "type": "DirectoryOrCreate"}})
    );
    let mount = named(&container(&objects)["volumeMounts"], "data").expect("data mount");
    assert_eq!(mount["mountPath"], "/var/lib/scraper");
    // Root, to write to the directory kubelet creates root-owned, and nothing more.
    assert_eq!(
        pod["securityContext"],
        json!({"runAsUser": 0, "runAsGroup": 0, "seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        container(&objects)["securityContext"],
        json!({"readOnlyRootFilesystem": true, "allowPrivilegeEscalation": false,
            "capabilities": {"drop": ["ALL"]}})
    );
    assert!(pod.get("hostPID").is_none());
    // The retention that bounds the directory is the store's own.
    let config = config(&objects);
    assert!(config.contains("retention = \"24h\"") && config.contains("max_size  = \"1GiB\""));

    // A prepared directory, written as the image's non-root user.
    let objects = helm.objects(case("daemonset-host-path-non-root"));
    let pod = pod_spec(&objects);
    assert_eq!(
        named(&pod["volumes"], "data").expect("data")["hostPath"],
        json!({"path": "/mnt/profiles", "type": "Directory"})
    );
    assert_eq!(
        pod["securityContext"],
        json!({"runAsUser": 65532, "runAsGroup": 65532, "runAsNonRoot": true,
            "seccompProfile": {"type": "RuntimeDefault"}})
    );

    // The default stays an emptyDir, sized.
    let objects = helm.objects(&Case {
        name: "default",
        sets: &[],
    });
    assert_eq!(
        named(&pod_spec(&objects)["volumes"], "data").expect("data")["emptyDir"],
        json!({"sizeLimit": "2560Mi"})
    );
}

#[test]
fn extra_volumes_mounts_and_args_reach_the_pod() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("extra-volumes"));
    assert_eq!(
        named(&pod_spec(&objects)["volumes"], "backend-ca"),
        Some(&json!({"name": "backend-ca", "secret": {"secretName": "backend-ca"}}))
    );
    assert_eq!(
        named(&container(&objects)["volumeMounts"], "backend-ca"),
        Some(&json!({"name": "backend-ca", "mountPath": "/etc/backend-ca", "readOnly": true}))
    );
    let a = args(&objects);
    assert_eq!(a.last().map(String::as_str), Some("--memory.limit=256MiB"));
    // The chart's own volumes are all still there.
    let volumes: BTreeSet<&str> = pod_spec(&objects)["volumes"]
        .as_array()
        .expect("volumes")
        .iter()
        .filter_map(|v| v["name"].as_str())
        .collect();
    assert_eq!(
        volumes,
        BTreeSet::from(["backend-ca", "config", "data", "tmp"])
    );
}

#[test]
fn an_existing_config_map_is_mounted_and_none_is_rendered() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("existing-config-map"));
    assert!(of_kind(&objects, "ConfigMap").is_empty());
    assert_eq!(
        named(&pod_spec(&objects)["volumes"], "config").expect("config")["configMap"],
        json!({"name": "my-scraper-config"})
    );
    // The mounted directory is the config: each *.alloy key one of its files.
    let a = args(&objects);
    assert_eq!(&a[..2], ["run", "/etc/scraper"]);
}

#[test]
fn security_context_overrides_merge_over_the_computed_ones() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("security-overrides"));
    assert_eq!(
        pod_spec(&objects)["securityContext"],
        json!({"runAsNonRoot": true, "runAsUser": 1001, "runAsGroup": 65532, "fsGroup": 65532,
            "fsGroupChangePolicy": "OnRootMismatch", "seccompProfile": {"type": "RuntimeDefault"}})
    );
    assert_eq!(
        container(&objects)["securityContext"]["capabilities"],
        json!({"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]})
    );

    // eBPF keeps every privilege it needs next to an override.
    let objects = helm.objects(case("ebpf-overrides"));
    let pod = pod_spec(&objects);
    assert_eq!(pod["hostPID"], true);
    assert_eq!(pod["securityContext"]["runAsUser"], 0);
    assert_eq!(
        pod["securityContext"]["seLinuxOptions"],
        json!({"type": "spc_t"})
    );
    let sc = &container(&objects)["securityContext"];
    assert_eq!(
        sc["capabilities"],
        json!({"drop": ["ALL"], "add": ["BPF", "PERFMON", "SYS_PTRACE", "SYSLOG"]})
    );
    assert_eq!(sc["seLinuxOptions"], json!({"type": "spc_t"}));
}

#[test]
fn combinations_that_cannot_work_fail_with_a_clear_message() {
    let Some(helm) = Helm::find() else { return };
    for (sets, message) in [
        (
            &["clustering.enabled=true"][..],
            "clustering.enabled needs mode: statefulset or deployment",
        ),
        (
            &["mode=deployment", "autoscaling.enabled=true"],
            "autoscaling.enabled needs clustering.enabled",
        ),
        (
            &["mode=deployment", "replicas=3"],
            "more than one replica needs clustering.enabled",
        ),
        (
            &[
                "mode=deployment",
                "clustering.enabled=true",
                "autoscaling.enabled=true",
                "autoscaling.minReplicas=6",
            ],
            "autoscaling.minReplicas is greater than autoscaling.maxReplicas",
        ),
        (
            &[
                "mode=deployment",
                "clustering.enabled=true",
                "autoscaling.enabled=true",
                "autoscaling.targetCPUUtilizationPercentage=0",
            ],
            "needs targetCPUUtilizationPercentage or targetMemoryUtilizationPercentage above 0",
        ),
        (
            &["podDisruptionBudget.enabled=true"],
            "podDisruptionBudget.enabled needs mode: statefulset or deployment",
        ),
        (
            &[
                "mode=statefulset",
                "podDisruptionBudget.enabled=true",
                "podDisruptionBudget.maxUnavailable=",
            ],
            "podDisruptionBudget.enabled needs minAvailable or maxUnavailable",
        ),
        (
            &["mode=statefulset", "store.hostPath.enabled=true"],
            "store.hostPath.enabled needs mode: daemonset",
        ),
        (
            &["config.existingConfigMap=mine", "config.content=logging {}"],
            "set config.content or config.existingConfigMap, not both",
        ),
        (
            &[
                "config.existingConfigMap=mine",
                "config.restartOnChange=true",
            ],
            "config.restartOnChange needs the chart's own ConfigMap",
        ),
        (
            &["ebpf.enabled=true", "podSecurityContext.runAsNonRoot=true"],
            "ebpf.enabled runs the pod as root",
        ),
        (
            &["ebpf.enabled=true", "securityContext.runAsNonRoot=true"],
            "securityContext must not set runAsNonRoot or a non-zero runAsUser",
        ),
        (
            &["ebpf.enabled=true", "securityContext.runAsUser=1000"],
            "securityContext must not set runAsNonRoot or a non-zero runAsUser",
        ),
        (
            &[
                "podSecurityContext.runAsUser=0",
                "podSecurityContext.runAsNonRoot=true",
            ],
            "podSecurityContext.runAsNonRoot is true but the container runs as root",
        ),
        (
            &[
                "mode=statefulset",
                "securityContext.runAsUser=0",
                "securityContext.runAsNonRoot=true",
            ],
            "securityContext.runAsNonRoot is true but the container runs as root",
        ),
        (
            &[
                "store.hostPath.enabled=true",
                "podSecurityContext.runAsNonRoot=true",
            ],
            "podSecurityContext.runAsNonRoot is true but the container runs as root",
        ),
        (
            &["mode=deployment", "store.persistence.enabled=true"],
            "store.persistence.enabled needs mode: statefulset",
        ),
        (
            &["store.persistence.enabled=true"],
            "store.persistence.enabled needs mode: statefulset",
        ),
        (
            &[
                "mode=deployment",
                "clustering.enabled=true",
                "autoscaling.enabled=true",
                "resources.requests=null",
            ],
            "autoscaling.targetCPUUtilizationPercentage needs resources.requests.cpu",
        ),
        (
            &[
                "mode=deployment",
                "clustering.enabled=true",
                "autoscaling.enabled=true",
                "autoscaling.targetMemoryUtilizationPercentage=80",
                "resources.requests.memory=null",
            ],
            "autoscaling.targetMemoryUtilizationPercentage needs resources.requests.memory",
        ),
        (
            &["ebpf.enabled=true", "podSecurityContext.runAsUser=65532"],
            "ebpf.enabled runs the pod as root",
        ),
    ] {
        let err = helm
            .render(sets)
            .expect_err(&format!("{sets:?} should be rejected"));
        assert!(err.contains(message), "{sets:?}: {err}");
    }
}

#[test]
fn the_schema_refuses_unknown_keys_and_wrong_types_of_every_new_value() {
    let Some(helm) = Helm::find() else { return };
    for (set, at) in [
        ("mode=replicaset", "/mode"),
        ("replicas=two", "/replicas"),
        ("replicas=-1", "/replicas"),
        ("clustering.enabled=yes", "/clustering/enabled"),
        ("clustering.port=1", "/clustering"),
        ("autoscaling.enabled=1", "/autoscaling/enabled"),
        ("autoscaling.minReplicas=0", "/autoscaling/minReplicas"),
        ("autoscaling.maxReplicas=many", "/autoscaling/maxReplicas"),
        (
            "autoscaling.targetCPUUtilizationPercentage=70%",
            "/autoscaling/targetCPUUtilizationPercentage",
        ),
        (
            "autoscaling.targetMemoryUtilizationPercentage=-5",
            "/autoscaling/targetMemoryUtilizationPercentage",
        ),
        ("autoscaling.behavior=fast", "/autoscaling/behavior"),
        ("autoscaling.scaleDown.x=1", "/autoscaling"),
        (
            "config.existingConfigMap=Not_A_Name",
            "/config/existingConfigMap",
        ),
        ("config.watchInterval=10", "/config/watchInterval"),
        ("config.watchInterval=1d", "/config/watchInterval"),
        // At least a second, in whole units: the binary's 100ms floor is for tests.
        ("config.watchInterval=500ms", "/config/watchInterval"),
        ("config.watchInterval=1.5s", "/config/watchInterval"),
        ("config.watchInterval=0.5m", "/config/watchInterval"),
        (
            "config.restartOnChange=sometimes",
            "/config/restartOnChange",
        ),
        ("store.hostPath.enabled=on", "/store/hostPath/enabled"),
        ("store.hostPath.path=relative/dir", "/store/hostPath/path"),
        ("store.hostPath.type=File", "/store/hostPath/type"),
        ("store.hostPath.size=1Gi", "/store/hostPath"),
        (
            "podDisruptionBudget.enabled=1",
            "/podDisruptionBudget/enabled",
        ),
        (
            "podDisruptionBudget.minAvailable=half",
            "/podDisruptionBudget/minAvailable",
        ),
        (
            "podDisruptionBudget.maxUnavailable=-1",
            "/podDisruptionBudget/maxUnavailable",
        ),
        ("podDisruptionBudget.unhealthy=x", "/podDisruptionBudget"),
        ("podSecurityContext=root", "/podSecurityContext"),
        ("securityContext=privileged", "/securityContext"),
        ("extraVolumes=ca", "/extraVolumes"),
        ("extraVolumes[0].secret.secretName=ca", "/extraVolumes/0"),
        ("extraVolumeMounts[0].name=ca", "/extraVolumeMounts/0"),
        ("extraVolumeMounts=ca", "/extraVolumeMounts"),
        ("extraArgs=--x", "/extraArgs"),
    ] {
        let err = helm
            .render(&[set])
            .expect_err(&format!("{set} should be rejected"));
        assert!(err.contains(&format!("at '{at}'")), "{set}: {err}");
    }
}

/// Each key of `values` (from values.yaml) has a schema, and each key the schema describes
/// has a default in values.yaml (where its documentation is), recursively.
fn compare(values: &Value, schema: &Value, root: &Value, path: &str, problems: &mut Vec<String>) {
    let schema = match schema["$ref"].as_str() {
        Some(r) => &root["definitions"][r.trim_start_matches("#/definitions/")],
        None => schema,
    };
    let Some(props) = schema["properties"].as_object() else {
        return;
    };
    let Some(values) = values.as_object() else {
        problems.push(format!(
            "{path}: an object in the schema, not in values.yaml"
        ));
        return;
    };
    for (k, v) in values {
        match props.get(k) {
            Some(s) => compare(v, s, root, &format!("{path}.{k}"), problems),
            None => problems.push(format!("{path}.{k}: in values.yaml, not in the schema")),
        }
    }
    for k in props.keys() {
        // `global` is Helm's own, for subcharts.
        let known = values.contains_key(k) || (path.is_empty() && k == "global");
        if !known {
            problems.push(format!("{path}.{k}: in the schema, not in values.yaml"));
        }
    }
}

#[test]
fn values_yaml_and_the_schema_describe_the_same_keys() {
    let dir = tools::repo().join("charts/scraper");
    let values: Value = serde_norway::from_str(
        &std::fs::read_to_string(dir.join("values.yaml")).expect("values.yaml"),
    )
    .expect("values.yaml parses");
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("values.schema.json")).expect("schema"),
    )
    .expect("schema parses");
    assert_eq!(schema["additionalProperties"], false);
    let mut problems = Vec::new();
    compare(&values, &schema, &schema, "", &mut problems);
    assert!(problems.is_empty(), "{problems:#?}");
    // Every object with properties refuses unknown keys, so a misspelt key fails the install.
    fn strict(schema: &Value, path: &str, loose: &mut Vec<String>) {
        if let Some(props) = schema["properties"].as_object() {
            if schema["additionalProperties"] != false {
                loose.push(path.to_owned());
            }
            for (k, s) in props {
                strict(s, &format!("{path}.{k}"), loose);
            }
        }
    }
    let mut loose = Vec::new();
    strict(&schema, "", &mut loose);
    assert!(
        loose.is_empty(),
        "objects that accept unknown keys: {loose:?}"
    );
}

/// Whether a label selector (matchLabels and matchExpressions, as Kubernetes evaluates them)
/// selects an object with these labels.
fn selects(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    let by_labels = selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| label(k) == v.as_str());
    let by_expressions = selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .all(|e| {
            let key = e["key"].as_str().expect("key");
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match e["operator"].as_str().expect("operator") {
                "In" => label(key).is_some_and(|v| values.contains(&v)),
                "NotIn" => !label(key).is_some_and(|v| values.contains(&v)),
                "Exists" => label(key).is_some(),
                "DoesNotExist" => label(key).is_none(),
                other => panic!("unknown operator {other}"),
            }
        });
    by_labels && by_expressions
}

#[test]
fn the_service_monitor_selects_one_service_of_a_clustered_release() {
    let Some(helm) = Helm::find() else { return };
    // Checked against hand-made labels first, so that the evaluation itself can fail.
    let selector = json!({"matchLabels": {"a": "1"},
        "matchExpressions": [{"key": "c", "operator": "DoesNotExist"}]});
    assert!(selects(&selector, &json!({"a": "1", "b": "2"})));
    assert!(!selects(&selector, &json!({"a": "1", "c": "cluster"})));
    assert!(!selects(&selector, &json!({"a": "2"})));

    let objects = helm.objects(case("clustered-monitored"));
    let monitor = one(&objects, "ServiceMonitor");
    let services = of_kind(&objects, "Service");
    assert_eq!(services.len(), 2, "the main Service and {CLUSTER_SERVICE}");
    let selected: Vec<&Value> = services
        .iter()
        .filter(|s| selects(&monitor["spec"]["selector"], &s["metadata"]["labels"]))
        .map(|s| &s["metadata"]["name"])
        .collect();
    assert_eq!(selected, [FULLNAME], "each pod's /metrics scraped once");
    // Both still expose the port the monitor names, which is why the selector must choose.
    for s in &services {
        assert!(named(&s["spec"]["ports"], "http-metrics").is_some());
    }
}

#[test]
fn clustering_a_sharded_statefulset_keeps_its_replicas() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("clustered-from-shards"));
    assert_eq!(one(&objects, "StatefulSet")["spec"]["replicas"], 4);
    // An explicit count wins, in either mode; a Deployment defaults to one.
    for (sets, kind, want) in [
        (
            &[
                "mode=statefulset",
                "shards=4",
                "clustering.enabled=true",
                "replicas=2",
            ][..],
            "StatefulSet",
            2,
        ),
        (&["mode=statefulset", "shards=4"], "StatefulSet", 4),
        (&["mode=deployment"], "Deployment", 1),
        (
            &["mode=deployment", "clustering.enabled=true", "replicas=3"],
            "Deployment",
            3,
        ),
    ] {
        let objects = helm.objects(&Case {
            name: "replicas",
            sets,
        });
        assert_eq!(one(&objects, kind)["spec"]["replicas"], want, "{sets:?}");
    }
}

#[test]
fn the_autoscaler_takes_the_behavior_as_given() {
    let Some(helm) = Helm::find() else { return };
    let objects = helm.objects(case("hpa-behavior"));
    assert_eq!(
        one(&objects, "HorizontalPodAutoscaler")["spec"]["behavior"],
        json!({"scaleDown": {"stabilizationWindowSeconds": 900,
            "policies": [{"type": "Pods", "value": 1, "periodSeconds": 300}]}})
    );
    let objects = helm.objects(case("clustered-statefulset-hpa-pdb"));
    assert!(
        one(&objects, "HorizontalPodAutoscaler")["spec"]
            .get("behavior")
            .is_none()
    );
}

#[test]
fn a_root_user_of_your_own_drops_the_computed_run_as_non_root() {
    let Some(helm) = Helm::find() else { return };
    for name in ["root-by-choice", "container-root-by-choice"] {
        let objects = helm.objects(case(name));
        let pod = &pod_spec(&objects)["securityContext"];
        let c = &container(&objects)["securityContext"];
        assert!(pod.get("runAsNonRoot").is_none(), "{name}: {pod:#}");
        assert!(c.get("runAsNonRoot").is_none(), "{name}: {c:#}");
    }
    // A non-root user of your own keeps it, even with a hostPath store.
    let objects = helm.objects(case("daemonset-host-path-non-root"));
    assert_eq!(container(&objects)["securityContext"]["runAsNonRoot"], true);
    assert_eq!(pod_spec(&objects)["securityContext"]["runAsNonRoot"], true);
}
