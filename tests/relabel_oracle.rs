//! Oracle tests for the relabel engine: every case runs through a real Prometheus (Debian's
//! `prometheus` package, 2.42) and through our engine, and the results must agree.
//!
//! * What is compared: for every (rules, target) job, whether the target is kept, and if so the
//!   **complete** relabelled label set (every label, `__`-prefixed and `__meta_*` included),
//!   applied to the exact label set Prometheus relabels (file-SD labels plus `__meta_filepath`,
//!   `job`, `__scheme__`, `__metrics_path__`, `__scrape_interval__`, `__scrape_timeout__`). How
//!   the harness observes that through `/api/v1/targets` is described in
//!   `tests/data/relabel/harness.rs`.
//! * All cases run in one batch of Prometheus processes (one scrape job per target; as many
//!   jobs per process as the inotify limit allows, see the harness), so the test takes seconds.
//! * Cases where Alloy (= Prometheus 3) is documented to behave differently from Prometheus
//!   2.42 carry a `divergence` note and the Alloy result expected instead; for those the test
//!   checks our engine against that expectation and that 2.42 really differs.
//! * Without a `prometheus` binary the live test skips with a printed reason, unless
//!   `SCRAPER_REQUIRE_ORACLE=1` (CI), which makes it fail. The recorded results in
//!   `tests/data/relabel/oracle-cases.json` are replayed either way.
//!
//! Re-record after changing cases: `SCRAPER_RECORD_ORACLE=1 cargo test --test relabel_oracle`
//! (needs `prometheus`; also rewrites the random-case recording of `tests/relabel_prop.rs` when
//! that test runs with the same variable).

#[path = "data/relabel/harness.rs"]
mod harness;

use harness::{Labels, OracleJob, Recorded};
use scraper::relabel::{Action, RuleConfig};

const RECORDING: &str = "oracle-cases.json";

// ---------------------------------------------------------------------------------------------
// Case building helpers.

#[derive(Clone)]
struct B(RuleConfig);

fn rule(action: Action) -> B {
    B(RuleConfig {
        action,
        ..RuleConfig::default()
    })
}

fn replace() -> B {
    rule(Action::Replace)
}

impl B {
    fn src(mut self, s: &[&str]) -> B {
        self.0.source_labels = Some(s.iter().map(|s| s.to_string()).collect());
        self
    }
    fn sep(mut self, s: &str) -> B {
        self.0.separator = s.into();
        self
    }
    fn regex(mut self, s: &str) -> B {
        self.0.regex = s.into();
        self
    }
    fn modulus(mut self, m: u64) -> B {
        self.0.modulus = m;
        self
    }
    fn target(mut self, s: &str) -> B {
        self.0.target_label = s.into();
        self
    }
    fn repl(mut self, s: &str) -> B {
        self.0.replacement = s.into();
        self
    }
}

impl From<B> for RuleConfig {
    fn from(b: B) -> RuleConfig {
        b.0
    }
}

fn t(pairs: &[(&str, &str)]) -> Labels {
    let mut l: Labels = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    l.entry("__address__".into())
        .or_insert_with(|| "10.0.0.1:8080".into());
    l
}

/// What Alloy must produce where Prometheus 2.42 differs: dropped, or these labels (`None` =
/// must be absent).
enum Expect {
    Dropped,
    Kept(Vec<(&'static str, Option<&'static str>)>),
}

struct Case {
    name: String,
    rules: Vec<RuleConfig>,
    targets: Vec<Labels>,
    divergence: Option<(&'static str, Vec<Expect>)>,
}

fn case(name: &str, rules: Vec<B>, targets: Vec<Labels>) -> Case {
    Case {
        name: name.into(),
        rules: rules.into_iter().map(Into::into).collect(),
        targets,
        divergence: None,
    }
}

fn diverges(mut c: Case, why: &'static str, expect: Vec<Expect>) -> Case {
    assert_eq!(
        expect.len(),
        c.targets.len(),
        "{}: one expectation per target",
        c.name
    );
    c.divergence = Some((why, expect));
    c
}

// ---------------------------------------------------------------------------------------------
// Realistic pod-role targets (discovery.kubernetes role = "pod", spec part C).

struct Container {
    name: &'static str,
    image: &'static str,
    /// (port, name, protocol)
    ports: &'static [(u16, &'static str, &'static str)],
    init: bool,
}

struct Pod {
    namespace: &'static str,
    name: &'static str,
    ip: &'static str,
    node: &'static str,
    labels: &'static [(&'static str, &'static str)],
    annotations: &'static [(&'static str, &'static str)],
    controller: (&'static str, &'static str),
    containers: &'static [Container],
    /// attach_metadata { node = true }
    node_meta: bool,
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn host_port(ip: &str, port: u16) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

fn pod_targets(p: &Pod) -> Vec<Labels> {
    let mut group = Labels::new();
    let mut put = |k: String, v: String| {
        group.insert(k, v);
    };
    put("__meta_kubernetes_namespace".into(), p.namespace.into());
    put("__meta_kubernetes_pod_name".into(), p.name.into());
    put(
        "__meta_kubernetes_pod_uid".into(),
        format!(
            "3f2b9c1e-{:04x}-4c2a-9d7e-8a1b2c3d4e5f",
            p.name.len() * 7919 % 65536
        ),
    );
    put("__meta_kubernetes_pod_ip".into(), p.ip.into());
    put(
        "__meta_kubernetes_pod_host_ip".into(),
        "192.168.49.2".into(),
    );
    put("__meta_kubernetes_pod_node_name".into(), p.node.into());
    put("__meta_kubernetes_pod_phase".into(), "Running".into());
    put("__meta_kubernetes_pod_ready".into(), "true".into());
    put(
        "__meta_kubernetes_pod_controller_kind".into(),
        p.controller.0.into(),
    );
    put(
        "__meta_kubernetes_pod_controller_name".into(),
        p.controller.1.into(),
    );
    for (k, v) in p.labels {
        let n = sanitize(k);
        put(format!("__meta_kubernetes_pod_label_{n}"), (*v).into());
        put(
            format!("__meta_kubernetes_pod_labelpresent_{n}"),
            "true".into(),
        );
    }
    for (k, v) in p.annotations {
        let n = sanitize(k);
        put(format!("__meta_kubernetes_pod_annotation_{n}"), (*v).into());
        put(
            format!("__meta_kubernetes_pod_annotationpresent_{n}"),
            "true".into(),
        );
    }
    if p.node_meta {
        put("__meta_kubernetes_node_name".into(), p.node.into());
        put(
            "__meta_kubernetes_node_label_kubernetes_io_hostname".into(),
            p.node.into(),
        );
        put(
            "__meta_kubernetes_node_labelpresent_kubernetes_io_hostname".into(),
            "true".into(),
        );
        put(
            "__meta_kubernetes_node_label_topology_kubernetes_io_zone".into(),
            "eu-west-1a".into(),
        );
        put(
            "__meta_kubernetes_node_labelpresent_topology_kubernetes_io_zone".into(),
            "true".into(),
        );
    }
    let mut out = Vec::new();
    for (ci, c) in p.containers.iter().enumerate() {
        let mut base = group.clone();
        base.insert("__meta_kubernetes_pod_container_name".into(), c.name.into());
        base.insert(
            "__meta_kubernetes_pod_container_image".into(),
            c.image.into(),
        );
        base.insert(
            "__meta_kubernetes_pod_container_id".into(),
            format!(
                "containerd://{:064x}",
                (p.name.len() * 31 + ci) as u128 * 0x9e3779b97f4a7c15
            ),
        );
        base.insert(
            "__meta_kubernetes_pod_container_init".into(),
            c.init.to_string(),
        );
        if c.ports.is_empty() {
            let mut t = base.clone();
            t.insert("__address__".into(), p.ip.into());
            out.push(t);
        }
        for (port, name, proto) in c.ports {
            let mut t = base.clone();
            t.insert("__address__".into(), host_port(p.ip, *port));
            t.insert(
                "__meta_kubernetes_pod_container_port_number".into(),
                port.to_string(),
            );
            if !name.is_empty() {
                t.insert(
                    "__meta_kubernetes_pod_container_port_name".into(),
                    (*name).into(),
                );
            }
            t.insert(
                "__meta_kubernetes_pod_container_port_protocol".into(),
                (*proto).into(),
            );
            out.push(t);
        }
    }
    out
}

const COLLECTOR_PORTS: &[(u16, &str, &str)] = &[
    (4317, "otlp-grpc", "TCP"),
    (4318, "otlp-http", "TCP"),
    (1777, "pprof", "TCP"),
    (8888, "metrics", "TCP"),
];

const OTC: Container = Container {
    name: "otc-container",
    image: "otel/opentelemetry-collector-contrib:0.98.0",
    ports: COLLECTOR_PORTS,
    init: false,
};

fn pods() -> Vec<Pod> {
    vec![
        Pod {
            namespace: "otel",
            name: "pprof-collector-7d9f8b6c5-x2k4q",
            ip: "10.244.1.17",
            node: "worker-1",
            labels: &[
                ("app.kubernetes.io/component", "opentelemetry-collector"),
                ("app.kubernetes.io/name", "pprof-collector"),
                ("app.kubernetes.io/version", "0.98.0"),
                ("app.kubernetes.io/instance", "otel.pprof"),
                ("app.kubernetes.io/managed-by", "opentelemetry-operator"),
                ("app.kubernetes.io/part-of", "opentelemetry"),
                ("pod-template-hash", "7d9f8b6c5"),
            ],
            annotations: &[
                (
                    "opentelemetry-operator-config/sha256",
                    "5b3c4f0e9a8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a19080",
                ),
                ("prometheus.io/scrape", "true"),
                ("kubectl.kubernetes.io/default-container", "otc-container"),
            ],
            controller: ("ReplicaSet", "pprof-collector-7d9f8b6c5"),
            containers: &[
                OTC,
                // A port-less sidecar: one target with the bare pod IP.
                Container {
                    name: "config-reloader",
                    image: "ghcr.io/example/config-reloader:v1.2.3",
                    ports: &[],
                    init: false,
                },
            ],
            node_meta: false,
        },
        Pod {
            namespace: "otel",
            name: "pprof-collector-7d9f8b6c5-m8n2z",
            ip: "10.244.2.9",
            node: "worker-2",
            labels: &[
                ("app.kubernetes.io/component", "opentelemetry-collector"),
                ("app.kubernetes.io/name", "pprof-collector"),
                ("app.kubernetes.io/version", "0.98.0"),
                ("pod-template-hash", "7d9f8b6c5"),
            ],
            annotations: &[(
                "opentelemetry-operator-config/sha256",
                "5b3c4f0e9a8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a19080",
            )],
            controller: ("ReplicaSet", "pprof-collector-7d9f8b6c5"),
            containers: &[OTC],
            // With attach_metadata.node the `node` label appears.
            node_meta: true,
        },
        Pod {
            // IPv6 pod: `[fd00::2]:1777` survives the `(.+):(\d+)` rewrite intact.
            namespace: "otel",
            name: "pprof-collector-v6-0",
            ip: "fd00::2",
            node: "worker-3",
            labels: &[
                ("app.kubernetes.io/component", "opentelemetry-collector"),
                ("app.kubernetes.io/name", "pprof-collector"),
                ("statefulset.kubernetes.io/pod-name", "pprof-collector-v6-0"),
            ],
            annotations: &[],
            controller: ("StatefulSet", "pprof-collector-v6"),
            containers: &[OTC],
            node_meta: false,
        },
        Pod {
            // No app name label: service_name = "otel/"; no version or sha.
            namespace: "otel",
            name: "adhoc-collector",
            ip: "10.244.3.4",
            node: "worker-3",
            labels: &[("app.kubernetes.io/component", "opentelemetry-collector")],
            annotations: &[],
            controller: ("", ""),
            containers: &[OTC],
            node_meta: false,
        },
        Pod {
            // Gateway collectors expose no pprof port: dropped.
            namespace: "otel",
            name: "gateway-collector-5f6d7c8b9-abcde",
            ip: "10.244.1.30",
            node: "worker-1",
            labels: &[
                ("app.kubernetes.io/component", "opentelemetry-collector"),
                ("app.kubernetes.io/name", "gateway-collector"),
                ("app.kubernetes.io/version", "0.98.0"),
            ],
            annotations: &[],
            controller: ("ReplicaSet", "gateway-collector-5f6d7c8b9"),
            containers: &[Container {
                name: "otc-container",
                image: "otel/opentelemetry-collector-contrib:0.98.0",
                ports: &[
                    (4317, "otlp-grpc", "TCP"),
                    (4318, "otlp-http", "TCP"),
                    (8888, "metrics", "TCP"),
                ],
                init: false,
            }],
            node_meta: false,
        },
        Pod {
            // The operator: wrong component, dropped.
            namespace: "otel",
            name: "opentelemetry-operator-6b8c9d7f4-qwert",
            ip: "10.244.2.40",
            node: "worker-2",
            labels: &[
                ("app.kubernetes.io/component", "controller-manager"),
                ("app.kubernetes.io/name", "opentelemetry-operator"),
            ],
            annotations: &[("kubectl.kubernetes.io/default-container", "manager")],
            controller: ("ReplicaSet", "opentelemetry-operator-6b8c9d7f4"),
            containers: &[
                Container {
                    name: "manager",
                    image: "ghcr.io/open-telemetry/opentelemetry-operator/opentelemetry-operator:0.98.0",
                    ports: &[(9443, "webhook-server", "TCP"), (8080, "metrics", "TCP")],
                    init: false,
                },
                Container {
                    name: "kube-rbac-proxy",
                    image: "quay.io/brancz/kube-rbac-proxy:v0.15.0",
                    ports: &[(8443, "https", "TCP")],
                    init: false,
                },
            ],
            node_meta: false,
        },
        Pod {
            // Another namespace, no component label at all: dropped by the first rule.
            namespace: "kube-system",
            name: "coredns-5dd5756b68-7xk9p",
            ip: "10.244.0.3",
            node: "control-plane",
            labels: &[("k8s-app", "kube-dns"), ("pod-template-hash", "5dd5756b68")],
            annotations: &[],
            controller: ("ReplicaSet", "coredns-5dd5756b68"),
            containers: &[Container {
                name: "coredns",
                image: "registry.k8s.io/coredns/coredns:v1.11.1",
                ports: &[
                    (53, "dns", "UDP"),
                    (53, "dns-tcp", "TCP"),
                    (9153, "metrics", "TCP"),
                ],
                init: false,
            }],
            node_meta: false,
        },
        Pod {
            // An init container with the pprof port: init containers are targets too.
            namespace: "otel",
            name: "pprof-collector-init-demo",
            ip: "10.244.4.8",
            node: "worker-4",
            labels: &[
                ("app.kubernetes.io/component", "opentelemetry-collector"),
                ("app.kubernetes.io/name", "pprof-collector"),
                ("app.kubernetes.io/version", "0.99.0-rc.1"),
            ],
            annotations: &[],
            controller: ("Job", "pprof-collector-init-demo"),
            containers: &[Container {
                name: "warmup",
                image: "busybox:1.36",
                ports: &[(1777, "", "TCP")],
                init: true,
            }],
            node_meta: false,
        },
    ]
}

/// The 12 rules of `shared/alloy-corpus/profiling/seed-otel-collector.alloy`'s
/// `discovery.relabel "otel"`, as written there.
fn seed_rules() -> Vec<B> {
    vec![
        rule(Action::Keep)
            .src(&["__meta_kubernetes_pod_label_app_kubernetes_io_component"])
            .regex("opentelemetry-collector"),
        rule(Action::Keep)
            .src(&["__meta_kubernetes_pod_container_port_number"])
            .regex("1777"),
        replace().target("__port__").repl("1777"),
        replace()
            .src(&["__address__"])
            .target("__address__")
            .regex(r"(.+):(\d+)")
            .repl("${1}"),
        replace()
            .src(&["__address__", "__port__"])
            .target("__address__")
            .sep("@")
            .regex(r"(.+)@(\d+)")
            .repl("$1:$2"),
        replace()
            .src(&["__meta_kubernetes_namespace"])
            .target("namespace"),
        replace().src(&["__meta_kubernetes_pod_name"]).target("pod"),
        replace()
            .src(&["__meta_kubernetes_node_name"])
            .target("node"),
        replace()
            .src(&["__meta_kubernetes_pod_container_name"])
            .target("container"),
        replace()
            .src(&["__meta_kubernetes_pod_label_app_kubernetes_io_version"])
            .target("service_version"),
        replace()
            .src(&[
                "__meta_kubernetes_namespace",
                "__meta_kubernetes_pod_label_app_kubernetes_io_name",
            ])
            .target("service_name")
            .sep("@")
            .regex("(.*)@(.*)")
            .repl("${1}/${2}"),
        replace()
            .src(&["__meta_kubernetes_pod_annotation_opentelemetry_operator_config_sha256"])
            .target("config_sha"),
    ]
}

fn all_pod_targets() -> Vec<Labels> {
    pods().iter().flat_map(pod_targets).collect()
}

// ---------------------------------------------------------------------------------------------
// The cases.

#[allow(clippy::vec_init_then_push)]
fn cases() -> Vec<Case> {
    use Action::*;
    let mut v = Vec::new();

    // Control: no rules. Also checks the harness' reconstruction of Prometheus' input.
    v.push(case(
        "control/no-rules",
        vec![],
        vec![t(&[("__meta_oracle_control", "1"), ("a", "1")])],
    ));

    // --- replace ---------------------------------------------------------------------------
    v.push(case(
        "replace/copy",
        vec![replace().src(&["a"]).target("b")],
        vec![t(&[("a", "x")])],
    ));
    v.push(case(
        "replace/missing-source-deletes-target",
        vec![replace().src(&["a"]).target("b")],
        vec![t(&[("b", "old")]), t(&[])],
    ));
    v.push(case(
        "replace/no-match-keeps-target",
        vec![replace().src(&["a"]).regex(".+").target("b")],
        vec![t(&[("b", "old")]), t(&[("a", "new"), ("b", "old")])],
    ));
    v.push(case(
        "replace/join-two-sources",
        vec![replace().src(&["a", "b"]).target("c")],
        vec![
            t(&[("a", "1"), ("b", "2")]),
            t(&[("a", "1")]),
            t(&[("b", "2")]),
            t(&[]),
        ],
    ));
    v.push(case(
        "replace/empty-separator",
        vec![replace().src(&["a", "b"]).sep("").target("c")],
        vec![t(&[("a", "1"), ("b", "2")]), t(&[])],
    ));
    v.push(case(
        "replace/multichar-separator",
        vec![replace().src(&["a", "b", "c"]).sep("::").target("d")],
        vec![t(&[("a", "x"), ("c", "z")])],
    ));
    v.push(case(
        "replace/constant-no-sources",
        vec![replace().target("env").repl("production")],
        vec![t(&[]), t(&[("env", "staging")])],
    ));
    v.push(case(
        "replace/empty-replacement-deletes",
        vec![replace().src(&["a"]).target("b").repl("")],
        vec![t(&[("a", "1"), ("b", "2")])],
    ));
    v.push(case(
        "replace/overwrites-existing",
        vec![replace().src(&["a"]).target("b")],
        vec![t(&[("a", "new"), ("b", "old")])],
    ));
    v.push(case(
        "replace/anchored-no-partial-match",
        vec![replace().src(&["a"]).regex("foo").target("b").repl("hit")],
        vec![
            t(&[("a", "foobar")]),
            t(&[("a", "foo")]),
            t(&[("a", "xfoo")]),
        ],
    ));
    v.push(case(
        "replace/alternation-inside-group",
        vec![replace().src(&["a"]).regex("a|ab").target("b").repl("hit")],
        vec![t(&[("a", "ab")]), t(&[("a", "abc")])],
    ));
    v.push(case(
        "replace/unbalanced-paren-quirk",
        vec![
            replace()
                .src(&["a"])
                .regex("api)|(web")
                .target("b")
                .repl("[$1]"),
        ],
        vec![
            t(&[("a", "api-gateway")]),
            t(&[("a", "my-web")]),
            t(&[("a", "x")]),
        ],
    ));
    v.push(case(
        "replace/chain-reads-earlier-result",
        vec![
            replace().target("__tmp_x").repl("v1"),
            replace().src(&["__tmp_x", "a"]).sep("-").target("b"),
        ],
        vec![t(&[("a", "z")])],
    ));
    v.push(case(
        "replace/unicode-values",
        vec![
            replace()
                .src(&["a"])
                .regex("(.)(.*)")
                .target("b")
                .repl("$2$1"),
        ],
        vec![t(&[("a", "☕üñ日本")]), t(&[("a", "ü")])],
    ));
    // Template expansion (spec §5 table).
    for (i, tpl) in [
        "$1x",
        "${1}x",
        "$$1",
        "$$1=$1",
        "cost$",
        "$-$.$1",
        "${1",
        "${a-b}$1",
        "<$01>",
        "[$1é]",
        "a$2b${7}c${nope}d",
        "pre-$1_suf",
        "$0",
        "${0}",
        "$",
        "$$$1",
        "${}",
        "$1٣",
        "$1ⅷ",
        "x${1}y${1}z",
        "$100000000",
    ]
    .into_iter()
    .enumerate()
    {
        v.push(case(
            &format!("template/{i:02}"),
            vec![replace().src(&["a"]).target("out").repl(tpl)],
            vec![t(&[("a", "v"), ("out", "old")])],
        ));
    }
    v.push(case(
        "template/named-groups",
        vec![
            replace()
                .src(&["a"])
                .regex(r"(?P<host>[^:]+):(?P<port>\d+)")
                .target("b")
                .repl("$host-$port/${port}_$1"),
        ],
        vec![t(&[("a", "h:80")])],
    ));
    v.push(case(
        "template/group-named-1x",
        vec![
            replace()
                .src(&["a"])
                .regex("(?P<1x>a)(b)")
                .target("b")
                .repl("[$1x][${1}x]"),
        ],
        vec![t(&[("a", "ab")])],
    ));
    v.push(case(
        "template/duplicate-names-first-participating",
        vec![
            replace()
                .src(&["a"])
                .regex("(?P<n>a)|(?P<n>b)")
                .target("b")
                .repl("<$n>"),
        ],
        vec![t(&[("a", "a")]), t(&[("a", "b")])],
    ));
    v.push(case(
        "template/non-participating-group",
        vec![
            replace()
                .src(&["a"])
                .regex("(x)?(.*)")
                .target("b")
                .repl("[$1][$2]"),
        ],
        vec![t(&[("a", "yz")]), t(&[("a", "xyz")])],
    ));
    v.push(case(
        "template/target-from-groups",
        vec![
            replace()
                .src(&["a"])
                .regex("(.*)-(.*)")
                .target("${2}_${1}")
                .repl("$0"),
        ],
        vec![t(&[("a", "left-right")])],
    ));
    v.push(case(
        "template/target-prefix-suffix",
        vec![
            replace()
                .src(&["a"])
                .regex("([a-z]+).*")
                .target("x_${1}_y")
                .repl("v"),
        ],
        vec![t(&[("a", "abc123")])],
    ));
    v.push(case(
        "template/target-$1abc-is-group-1abc",
        vec![replace().src(&["a"]).target("$1abc").repl("v")],
        vec![t(&[("a", "q")])],
    ));
    v.push(case(
        "template/target-expands-empty-noop",
        vec![
            replace()
                .src(&["a"])
                .regex("(x)?.*")
                .target("${1}")
                .repl("v"),
        ],
        vec![t(&[("a", "yyy"), ("b", "keep")])],
    ));
    v.push(case(
        "replace/address-to-annotated-port",
        vec![
            replace()
                .src(&[
                    "__address__",
                    "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_port",
                ])
                .regex(r"(.+?)(?::\d+)?;(\d+)")
                .repl("$1:$2")
                .target("__address__"),
        ],
        vec![
            t(&[
                ("__address__", "10.0.0.5:8080"),
                (
                    "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_port",
                    "6060",
                ),
            ]),
            t(&[
                ("__address__", "10.0.0.5"),
                (
                    "__meta_kubernetes_pod_annotation_profiles_grafana_com_cpu_port",
                    "6060",
                ),
            ]),
            t(&[("__address__", "10.0.0.5:8080")]),
        ],
    ));
    // Regex syntax: Go meaning (spec §6), checked on values without newlines so the 2.x
    // `^(?:…)$` wrapper and the 3.x `^(?s:…)$` wrapper agree.
    let regex_cases: &[(&str, &str, &[&str])] = &[
        ("digits-ascii", r"(\d+)", &["123", "١٢٣", "12a"]),
        ("word-ascii", r"(\w+)", &["abc_9", "é", "Ab"]),
        ("space-no-vt", r"a\sb", &["a b", "a\u{b}b", "a\tb"]),
        ("posix-space-has-vt", r"a[[:space:]]b", &["a\u{b}b"]),
        ("not-digit", r"\D+", &["٣٣", "ab", "1"]),
        ("word-boundary-ascii", r".*\bb.*", &["éb", "a b", "ab"]),
        ("quote-escape", r"\Qa.b\E", &["a.b", "axb"]),
        ("octal-escape", r"\101\0628", &["A28", "A\u{32}8", "Aa"]),
        ("hex-escapes", r"\x41\x{1F600}", &["A😀", "A"]),
        (
            "class-no-intersection",
            r"[a-z&&[^c]]+",
            &["c]", "&&]", "x"],
        ),
        ("class-dash-range", r"[a-z--c]+", &["-", "b", "+"]),
        ("class-nested-bracket", r"[[a]]", &["a]", "[]", "a"]),
        ("class-close-first", r"[]a]+", &["]a", "b"]),
        ("brace-literal", r"a{,5}", &["a{,5}", "aaaaa"]),
        ("brace-literal-x", r"a{x}|b{", &["a{x}", "b{"]),
        ("repeat-counts", r"a{2,3}", &["a", "aa", "aaa", "aaaa"]),
        ("fold-kelvin", r"(?i)k", &["K", "k", "K"]),
        ("fold-long-s", r"(?i)s+", &["sſS"]),
        ("fold-negated-class", r"(?i)[^k]", &["K", "x"]),
        ("fold-perl-word", r"(?i)\w", &["K", "ſ"]),
        ("fold-scope-alternation", r"(?i)a|b", &["B", "A"]),
        ("fold-scope-group", r"(?:(?i)a)b", &["AB", "Ab"]),
        ("fold-scoped-flag", r"(?i:a)b", &["Ab", "AB"]),
        ("empty-flags", r"(?)a", &["a"]),
        ("unicode-letter", r"\pL+", &["héllo", "h3"]),
        ("unicode-greek", r"\p{Greek}+", &["αβγ", "abc"]),
        ("unicode-not-greek", r"\p{^Greek}+", &["abc", "α"]),
        (
            "unicode-other-no-unassigned",
            r"\pC",
            &["\u{378}", "\u{7}", "\u{ad}"],
        ),
        ("unicode-any", r"\p{Any}+", &["x☕"]),
        ("unicode-class-in-brackets", r"[\p{Nd}x]+", &["x٣", "y"]),
        ("non-greedy-flag", r"(?U)(a+)(a*)", &["aaa"]),
        ("repeat-after-flag-group", r"a(?i)*", &["aaa", ""]),
        ("repeat-of-assertion", r"^*a", &["a"]),
        ("empty-regex", r"", &["", "a"]),
        ("surrogate-escape", r"\x{D800}|a", &["a"]),
        ("dollar-end-only", r"(a)$", &["a"]),
        ("multiline-no-dot", r"(?m)(a)$\n^(b)", &["a\nb", "ab"]),
    ];
    for (name, re, values) in regex_cases {
        v.push(case(
            &format!("regex/{name}"),
            vec![replace().src(&["a"]).regex(re).target("m").repl("<$0|$1>")],
            values.iter().map(|val| t(&[("a", val)])).collect(),
        ));
    }

    // --- keep / drop -----------------------------------------------------------------------
    v.push(case(
        "keep/literal",
        vec![rule(Keep).src(&["a"]).regex("foo")],
        vec![t(&[("a", "foo")]), t(&[("a", "foobar")]), t(&[])],
    ));
    v.push(case(
        "keep/prefix",
        vec![rule(Keep).src(&["a"]).regex("foo.*")],
        vec![t(&[("a", "foobar")]), t(&[("a", "barfoo")])],
    ));
    v.push(case(
        "keep/missing-label-default-regex-keeps",
        vec![rule(Keep).src(&["a"])],
        vec![t(&[])],
    ));
    v.push(case(
        "keep/missing-label-nonempty-regex-drops",
        vec![rule(Keep).src(&["a"]).regex(".+")],
        vec![t(&[]), t(&[("a", "x")])],
    ));
    v.push(case(
        "drop/no-sources-drops-everything",
        vec![rule(Drop)],
        vec![t(&[("a", "1")]), t(&[])],
    ));
    v.push(case(
        "drop/empty-regex-drops-missing",
        vec![rule(Drop).src(&["a"]).regex("")],
        vec![t(&[]), t(&[("a", "1")])],
    ));
    v.push(case(
        "keep/multi-source",
        vec![rule(Keep).src(&["a", "b"]).regex("x;.*")],
        vec![
            t(&[("a", "x"), ("b", "y")]),
            t(&[("a", "x")]),
            t(&[("b", "x")]),
        ],
    ));
    v.push(case(
        "keep/unbalanced-paren-quirk",
        vec![rule(Keep).src(&["app"]).regex("api)|(web")],
        vec![
            t(&[("app", "api-gateway")]),
            t(&[("app", "my-web")]),
            t(&[("app", "x")]),
        ],
    ));
    v.push(case(
        "drop/case-insensitive",
        vec![rule(Drop).src(&["env"]).regex("(?i)prod")],
        vec![
            t(&[("env", "PROD")]),
            t(&[("env", "Prod")]),
            t(&[("env", "dev")]),
        ],
    ));
    v.push(case(
        "drop/stops-processing",
        vec![
            rule(Drop).src(&["a"]).regex("x"),
            replace().target("after").repl("1"),
        ],
        vec![t(&[("a", "x")]), t(&[("a", "y")])],
    ));
    v.push(case(
        "keep/phase-running",
        vec![
            rule(Keep)
                .src(&["__meta_kubernetes_pod_phase"])
                .regex("Pending|Running"),
        ],
        vec![
            t(&[("__meta_kubernetes_pod_phase", "Running")]),
            t(&[("__meta_kubernetes_pod_phase", "Succeeded")]),
        ],
    ));

    // --- keepequal / dropequal -------------------------------------------------------------
    v.push(case(
        "keepequal/port-match",
        vec![
            replace()
                .src(&["__meta_kubernetes_pod_annotation_profiles_port"])
                .target("__tmp_port"),
            rule(KeepEqual)
                .src(&["__meta_kubernetes_pod_container_port_number"])
                .target("__tmp_port"),
        ],
        vec![
            t(&[
                ("__meta_kubernetes_pod_container_port_number", "4317"),
                ("__meta_kubernetes_pod_annotation_profiles_port", "1777"),
            ]),
            t(&[
                ("__meta_kubernetes_pod_container_port_number", "1777"),
                ("__meta_kubernetes_pod_annotation_profiles_port", "1777"),
            ]),
            t(&[]),
        ],
    ));
    v.push(case(
        "keepequal/joined",
        vec![rule(KeepEqual).src(&["a", "b"]).target("c")],
        vec![
            t(&[("a", "1"), ("b", "2"), ("c", "1;2")]),
            t(&[("a", "1"), ("c", "1")]),
        ],
    ));
    v.push(case(
        "dropequal/basic",
        vec![rule(DropEqual).src(&["a"]).target("b")],
        vec![
            t(&[("a", "1"), ("b", "1")]),
            t(&[("a", "1"), ("b", "2")]),
            t(&[]),
        ],
    ));

    // --- hashmod ---------------------------------------------------------------------------
    for (i, (val, m)) in [
        ("10.1.2.3:8080", 8u64),
        ("10.1.2.3:8080", 1_000_000_007),
        ("10.1.2.3:8080", u64::MAX),
        ("", 1000),
        ("☕ü", 65536),
        ("x", 1),
    ]
    .into_iter()
    .enumerate()
    {
        v.push(case(
            &format!("hashmod/{i}"),
            vec![rule(HashMod).src(&["a"]).modulus(m).target("h")],
            vec![t(&[("a", val)])],
        ));
    }
    v.push(case(
        "hashmod/joined",
        vec![
            rule(HashMod)
                .src(&["x", "y"])
                .sep("/")
                .modulus(997)
                .target("h"),
        ],
        vec![t(&[("x", "x"), ("y", "y")])],
    ));
    v.push(case(
        "hashmod/sharding",
        vec![
            rule(HashMod)
                .src(&["__address__"])
                .modulus(4)
                .target("__tmp_hash"),
            rule(Keep).src(&["__tmp_hash"]).regex("2"),
        ],
        (0..12)
            .map(|i| t(&[("__address__", &format!("10.0.0.{i}:8080"))]))
            .collect(),
    ));

    // --- labelmap --------------------------------------------------------------------------
    v.push(case(
        "labelmap/pod-labels",
        vec![rule(LabelMap).regex("__meta_kubernetes_pod_label_(.+)")],
        vec![t(&[
            ("__meta_kubernetes_pod_label_app_kubernetes_io_name", "web"),
            ("__meta_kubernetes_pod_label_tier", "frontend"),
            ("__meta_kubernetes_pod_labelpresent_tier", "true"),
        ])],
    ));
    v.push(case(
        "labelmap/collision-last-sorted-wins",
        vec![rule(LabelMap).regex("[ab]_(x)")],
        vec![t(&[("a_x", "1"), ("b_x", "2")])],
    ));
    v.push(case(
        "labelmap/snapshot",
        vec![rule(LabelMap).regex("(.*)").repl("x_$1")],
        vec![t(&[("a", "1")])],
    ));
    v.push(case(
        "labelmap/overwrites",
        vec![rule(LabelMap).regex("src_(.*)")],
        vec![t(&[("src_a", "new"), ("a", "old")])],
    ));
    v.push(case(
        "labelmap/prefix-replacement",
        vec![
            rule(LabelMap)
                .regex("__meta_kubernetes_(pod)_label_(.+)")
                .repl("k8s_${1}_$2"),
        ],
        vec![t(&[("__meta_kubernetes_pod_label_app", "x")])],
    ));
    v.push(case(
        "labelmap/identity",
        vec![rule(LabelMap).regex("(a)")],
        vec![t(&[("a", "1")])],
    ));
    v.push(case(
        "labelmap/unbalanced-quirk-replace-all",
        vec![rule(LabelMap).regex("zz)|(b").repl("m_${1}")],
        vec![t(&[("zzb", "1"), ("ab", "2")])],
    ));
    v.push(case(
        "labelmap/to-empty-name",
        vec![rule(LabelMap).regex("q(.*)").repl("$1_x")],
        vec![t(&[("q1", "v")])],
    ));
    v.push(case(
        "labelmap/sees-earlier-rules",
        vec![
            replace().target("__tmp_copy_me").repl("v"),
            rule(LabelMap).regex("__tmp_(.*)"),
        ],
        vec![t(&[])],
    ));

    // --- labeldrop / labelkeep -------------------------------------------------------------
    v.push(case(
        "labeldrop/anchored",
        vec![rule(LabelDrop).regex("tmp")],
        vec![t(&[("tmp", "1"), ("tmp_x", "2")])],
    ));
    v.push(case(
        "labeldrop/everything",
        vec![rule(LabelDrop)],
        vec![t(&[("a", "1")])],
    ));
    v.push(case(
        "labeldrop/empty-regex-drops-nothing",
        vec![rule(LabelDrop).regex("")],
        vec![t(&[("a", "1")])],
    ));
    v.push(case(
        "labeldrop/meta",
        vec![rule(LabelDrop).regex("__meta_.*")],
        vec![pod_targets(&pods()[0]).remove(0)],
    ));
    v.push(case(
        "labelkeep/some",
        vec![rule(LabelKeep).regex("a|__address__|job")],
        vec![t(&[("a", "1"), ("b", "2")])],
    ));
    v.push(case(
        "labelkeep/empty-regex-keeps-nothing",
        vec![rule(LabelKeep).regex("")],
        vec![t(&[("a", "1")])],
    ));
    v.push(case(
        "labelkeep/case-insensitive",
        vec![rule(LabelKeep).regex("(?i)A.*|__.*")],
        vec![t(&[("abc", "1"), ("Abd", "2"), ("b", "3")])],
    ));
    v.push(case(
        "labeldrop/then-keep-sees-result",
        vec![rule(LabelDrop).regex("a"), rule(Keep).src(&["a"]).regex("")],
        vec![t(&[("a", "1")])],
    ));

    // Empty input values are absent labels (Alloy's target builder; 2.42's file SD agrees).
    v.push(case(
        "input/empty-value-is-absent",
        vec![
            rule(LabelMap).regex("x_(.*)"),
            rule(Keep).src(&["x_b"]).regex(""),
        ],
        vec![t(&[("x_a", ""), ("a", "keep"), ("x_b", "")])],
    ));

    // --- lowercase / uppercase -------------------------------------------------------------
    v.push(case(
        "lowercase/ascii-and-greek",
        vec![rule(Lowercase).src(&["a"]).target("b")],
        vec![
            t(&[("a", "HeLLo ΟΔΟΣ")]),
            t(&[("a", "İx")]),
            t(&[("a", "K")]),
        ],
    ));
    v.push(case(
        "uppercase/special-casing-is-not-applied",
        vec![rule(Uppercase).src(&["a"]).target("b")],
        vec![
            t(&[("a", "straße")]),
            t(&[("a", "ﬁx")]),
            t(&[("a", "ᾳ")]),
            t(&[("a", "ǆ")]),
        ],
    ));
    v.push(case(
        "lowercase/missing-source-deletes-target",
        vec![rule(Lowercase).src(&["a"]).target("b")],
        vec![t(&[("b", "x")])],
    ));
    v.push(case(
        "uppercase/joined",
        vec![rule(Uppercase).src(&["a", "b"]).sep("-").target("c")],
        vec![t(&[("a", "x"), ("b", "y")])],
    ));

    // --- realistic: the seed config on pod-role targets ------------------------------------
    v.push(case(
        "seed-otel-collector/pods",
        seed_rules(),
        all_pod_targets(),
    ));
    // The Pyroscope Helm chart's per-profile idiom on the same pods.
    v.push(case(
        "helm-idiom/annotation-driven",
        vec![
            rule(Keep)
                .src(&["__meta_kubernetes_pod_annotation_prometheus_io_scrape"])
                .regex("true"),
            rule(Drop)
                .src(&["__meta_kubernetes_pod_phase"])
                .regex("Pending|Succeeded|Failed|Completed"),
            rule(LabelMap).regex("__meta_kubernetes_pod_label_(.+)"),
            replace()
                .src(&["__meta_kubernetes_namespace"])
                .target("namespace"),
            replace().src(&["__meta_kubernetes_pod_name"]).target("pod"),
            replace()
                .src(&["__meta_kubernetes_pod_container_name"])
                .target("container"),
            replace()
                .src(&[
                    "__meta_kubernetes_namespace",
                    "__meta_kubernetes_pod_container_name",
                ])
                .sep("/")
                .target("service_name"),
            rule(LabelDrop).regex("pod_template_hash"),
        ],
        all_pod_targets(),
    ));

    // --- documented divergences between Prometheus 2.42 and Alloy ---------------------------
    v.push(diverges(
        case(
            "divergence/dot-matches-newline",
            vec![replace().src(&["a"]).target("b")],
            vec![t(&[("a", "x\ny")])],
        ),
        "Alloy/Prometheus 3 wrap with (?s:...), 2.42 with (?:...): `.` matches \\n only in 3.x",
        vec![Expect::Kept(vec![("b", Some("x\ny"))])],
    ));
    v.push(diverges(
        case(
            "divergence/keep-dot-newline",
            vec![rule(Keep).src(&["a"]).regex("x.y")],
            vec![t(&[("a", "x\ny")])],
        ),
        "(?s) wrapper: 3.x keeps, 2.42 drops",
        vec![Expect::Kept(vec![("a", Some("x\ny"))])],
    ));
    v.push(diverges(
        case(
            "divergence/utf8-target-name",
            vec![replace().src(&["a"]).target("$1").repl("v")],
            vec![t(&[("a", "9lives")]), t(&[("a", "foo-bar")])],
        ),
        "UTF-8 label names: 3.x/Alloy set `9lives` and `foo-bar`, 2.42 skips non-legacy names",
        vec![
            Expect::Kept(vec![("9lives", Some("v"))]),
            Expect::Kept(vec![("foo-bar", Some("v"))]),
        ],
    ));
    v.push(diverges(
        case(
            "divergence/empty-value-deletes-expanded-target",
            vec![replace().src(&["a"]).regex("(.*)").target("${1}").repl("")],
            vec![t(&[("a", "b"), ("b", "1")])],
        ),
        "3.x deletes the expanded target `b`; 2.42 deletes the literal `${1}` (no-op)",
        vec![Expect::Kept(vec![("b", None), ("a", Some("b"))])],
    ));
    v.push(diverges(
        case(
            "divergence/drop-dot-newline",
            vec![rule(Drop).src(&["a"]).regex("x.y")],
            vec![t(&[("a", "x\ny")])],
        ),
        "(?s) wrapper: 3.x drops, 2.42 keeps",
        vec![Expect::Dropped],
    ));
    v
}

fn jobs_of(cases: &[Case]) -> Vec<(usize, OracleJob)> {
    cases
        .iter()
        .enumerate()
        .flat_map(|(ci, c)| {
            c.targets.iter().map(move |t| {
                (
                    ci,
                    OracleJob {
                        rules: c.rules.clone(),
                        target: t.clone(),
                    },
                )
            })
        })
        .collect()
}

#[test]
fn there_are_enough_cases() {
    let cases = cases();
    let jobs = jobs_of(&cases);
    assert!(cases.len() >= 100, "{} cases", cases.len());
    // Every action is exercised.
    for a in Action::ALL {
        assert!(
            cases.iter().any(|c| c.rules.iter().any(|r| r.action == a)),
            "no case uses {a}"
        );
    }
    // Every case's rules load in our engine.
    for c in &cases {
        if let Err(e) = scraper::relabel::Relabeler::new(&c.rules) {
            panic!("{}: {e}", c.name);
        }
    }
    eprintln!("{} cases, {} jobs", cases.len(), jobs.len());
}

/// Checks Alloy expectations of the divergence cases against our engine (no Prometheus needed).
#[test]
fn divergence_cases_follow_alloy() {
    let cases = cases();
    for c in &cases {
        let Some((why, expect)) = &c.divergence else {
            continue;
        };
        for (t, e) in c.targets.iter().zip(expect) {
            let input = harness::full_input(t, "job", "/sd.json");
            let ours = harness::engine(&c.rules, &input).expect("rules load");
            match (e, &ours) {
                (Expect::Dropped, None) => {}
                (Expect::Kept(pairs), Some(l)) => {
                    for (k, v) in pairs {
                        assert_eq!(
                            l.get(*k).map(String::as_str),
                            *v,
                            "{} ({why}): label {k} in {l:?}",
                            c.name
                        );
                    }
                }
                _ => panic!("{} ({why}): got {ours:?}", c.name),
            }
        }
    }
}

#[test]
fn live_prometheus_agrees() {
    let Some(prom) = harness::prometheus_or_skip("live_prometheus_agrees") else {
        return;
    };
    let version = harness::prometheus_version(&prom);
    let cases = cases();
    let jobs = jobs_of(&cases);
    let plain: Vec<OracleJob> = jobs.iter().map(|(_, j)| j.clone()).collect();
    let started = std::time::Instant::now();
    let outcomes = harness::run_oracle(&prom, "scraper-relabel-oracle-cases", &plain)
        .unwrap_or_else(|e| panic!("running {version}: {e}"));
    eprintln!(
        "{version}: {} cases, {} jobs in {:.1}s",
        cases.len(),
        jobs.len(),
        started.elapsed().as_secs_f64()
    );
    let mut failures = Vec::new();
    let mut recorded = Vec::new();
    for ((ci, job), outcome) in jobs.iter().zip(&outcomes) {
        let c = &cases[*ci];
        let ours = harness::engine(&job.rules, &outcome.input).expect("rules load");
        match &c.divergence {
            None => {
                if ours != outcome.output {
                    failures.push(format!(
                        "{}:\n  input      {:?}\n  prometheus {:?}\n  ours       {ours:?}",
                        c.name, outcome.input, outcome.output
                    ));
                }
            }
            Some((why, _)) => {
                if harness::is_prometheus_2(&version) && ours == outcome.output {
                    failures.push(format!(
                        "{}: documented divergence ({why}) did not show: both gave {ours:?}",
                        c.name
                    ));
                }
            }
        }
        recorded.push(Recorded {
            case: c.name.clone(),
            rules: job.rules.clone(),
            input: outcome.input.clone(),
            prometheus: outcome.output.clone(),
            divergence: c.divergence.as_ref().map(|(w, _)| w.to_string()),
        });
    }
    assert!(
        failures.is_empty(),
        "{} of {} jobs differ from {version}:\n{}",
        failures.len(),
        jobs.len(),
        failures.join("\n")
    );
    if harness::recording_requested() {
        harness::write_recording(RECORDING, &recorded);
        eprintln!("rewrote tests/data/relabel/{RECORDING}");
    }
}

/// Config validation: for rules where Prometheus 2.42 and Alloy share the rule and the wording,
/// our loader must accept/refuse exactly like `promtool check config`, with the same message.
/// (Where they differ — UTF-8 target names, `(?<name>…)`, keepequal's backticks, explicit
/// `regex = "(.*)"` on keepequal, action-name case — `rule.rs` tests pin Alloy's behaviour.)
#[test]
fn config_validation_matches_promtool() {
    use Action::*;
    let Some(prom) = harness::prometheus_or_skip("config_validation_matches_promtool") else {
        return;
    };
    let promtool = prom.with_file_name("promtool");
    if !promtool.is_file() {
        eprintln!(
            "SKIPPED config_validation_matches_promtool: no promtool beside {}",
            prom.display()
        );
        return;
    }
    let cases: Vec<B> = vec![
        replace().src(&["a"]).target("b"),
        replace().src(&["a"]),
        rule(HashMod).src(&["a"]).target("h"),
        rule(HashMod).src(&["a"]).modulus(3),
        rule(HashMod).src(&["a"]).modulus(3).target("h"),
        rule(Lowercase).src(&["a"]),
        rule(Lowercase).src(&["a"]).target("b").repl("x"),
        rule(Uppercase).src(&["a"]).target("b").repl(""),
        rule(KeepEqual).src(&["a"]),
        rule(DropEqual).src(&["a"]).target("b").repl("x"),
        rule(LabelMap).regex("(.*)").repl("1abc"),
        rule(LabelMap).regex("(.*)").repl("a-${1}"),
        rule(LabelMap).regex("(.*)").repl("k_${1}"),
        rule(LabelDrop).regex("x").target("b"),
        rule(LabelDrop).regex("x").src(&["a"]),
        rule(LabelKeep).regex("x").sep(","),
        rule(LabelKeep).regex("x").modulus(2),
        rule(LabelKeep).regex("x").repl("y"),
        replace().src(&["a"]).target("${1}-x"),
        replace().src(&["a"]).target("0${3}"),
        replace().src(&["a"]).target("x_${1}_y"),
        replace().src(&["a"]).target("$1abc"),
        rule(Keep).src(&["a"]).regex("a{1001}"),
        rule(Keep).src(&["a"]).regex(r"\Z"),
        rule(Keep).src(&["a"]).regex(r"\C"),
        rule(Keep).src(&["a"]).regex("a**"),
        rule(Keep).src(&["a"]).regex("a{2}{3}"),
        rule(Keep).src(&["a"]).regex("[z-a]"),
        rule(Keep).src(&["a"]).regex("(?x)a"),
        rule(Keep).src(&["a"]).regex("(?!a)"),
        rule(Keep).src(&["a"]).regex(r"(a)\1"),
        rule(Keep).src(&["a"]).regex(r"\p{Foo}"),
        rule(Keep).src(&["a"]).regex("[[:foo:]]"),
        rule(Keep).src(&["a"]).regex(r"\Qa.b\E|\101|[a-z&&b]|a{,5}"),
        rule(Drop).target("ignored").modulus(4),
    ];
    let dir = std::env::temp_dir().join("scraper-relabel-oracle-validation");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let mut failures = Vec::new();
    for b in cases {
        let rc: RuleConfig = b.into();
        let theirs = harness::promtool_check(&promtool, &dir, std::slice::from_ref(&rc));
        let ours = scraper::relabel::Relabeler::new(std::slice::from_ref(&rc))
            .map(|_| ())
            .map_err(|e| e.to_string());
        if ours != theirs {
            failures.push(format!(
                "{rc:?}\n  promtool {theirs:?}\n  ours     {ours:?}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "validation differs:\n{}",
        failures.join("\n")
    );
}

/// Replays the recorded Prometheus results (works without Prometheus), and checks the
/// recording still covers exactly the current cases.
#[test]
fn recorded_prometheus_results_replay() {
    let recorded = harness::read_recording(RECORDING);
    let cases = cases();
    let jobs = jobs_of(&cases);
    let current: Vec<(String, Vec<RuleConfig>)> = jobs
        .iter()
        .map(|(ci, j)| (cases[*ci].name.clone(), j.rules.clone()))
        .collect();
    let stored: Vec<(String, Vec<RuleConfig>)> = recorded
        .iter()
        .map(|r| (r.case.clone(), r.rules.clone()))
        .collect();
    assert!(
        current == stored,
        "tests/data/relabel/{RECORDING} is stale: re-record with \
         `SCRAPER_RECORD_ORACLE=1 cargo test --test relabel_oracle` (needs prometheus)"
    );
    let failures = harness::replay(&recorded);
    assert!(
        failures.is_empty(),
        "{} recorded jobs differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
