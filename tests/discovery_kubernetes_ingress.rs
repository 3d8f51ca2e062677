//! `discovery.kubernetes` with `role = "ingress"` against the in-repo fake API server
//! (tests/support/fake_kube.rs) through the real kube-rs client: Prometheus' ingress labels,
//! namespaces and an ingress selector sent to the server, changes (TLS added, a path added,
//! an ingress deleted) reaching the targets, namespace metadata, and the selector roles the
//! role accepts.

mod support;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use scraper::components::discovery::kubernetes::{Arguments, Kubernetes};
use scraper::runtime::{Component, ComponentOptions, ExportsHandle};
use scraper::syntax::decode;
use scraper::syntax::eval::{Scope, eval_body};
use scraper::syntax::parser::parse_file;
use scraper::syntax::value::Value;
use serde_json::json;
use support::fake_kube::FakeKube;
use tokio_util::sync::CancellationToken;

type Target = BTreeMap<String, String>;

/// The hang guard of every wait: far beyond what any step needs, so that only a hang fails.
const WAIT: Duration = Duration::from_secs(30);

fn decode_args(src: &str) -> Result<Arguments, Vec<String>> {
    let (file, diags) = parse_file(src);
    assert!(diags.is_empty(), "{diags:?}");
    let body = eval_body(&file.body, &Scope::stdlib()).expect("eval");
    decode::from_body(&body).map_err(|d| d.into_iter().map(|d| d.message).collect())
}

struct Running {
    exports: ExportsHandle,
    stop: CancellationToken,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl Running {
    fn start(src: &str) -> Running {
        let args = decode_args(src).expect("valid arguments");
        let opts = ComponentOptions::standalone(
            "discovery.kubernetes.ingress",
            "discovery.kubernetes",
            Kubernetes::initial_exports(),
        );
        let exports = opts.exports.clone();
        let component = Arc::new(Kubernetes::build(opts, args).expect("build"));
        let stop = CancellationToken::new();
        tokio::spawn(component.run(stop.clone()));
        Running { exports, stop }
    }

    fn targets(&self) -> Vec<Target> {
        let Value::Object(m) = self.exports.current() else {
            panic!("exports are not an object")
        };
        decode::from_value(&m["targets"]).expect("targets are list(map(string))")
    }

    /// Waits until `f` holds for the targets, and returns them.
    async fn until(&self, what: &str, f: impl Fn(&[Target]) -> bool) -> Vec<Target> {
        let start = Instant::now();
        loop {
            let t = self.targets();
            if f(&t) {
                return t;
            }
            assert!(
                start.elapsed() < WAIT,
                "{what}: not within {WAIT:?}: {t:#?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

fn ingress(ns: &str, name: &str, team: &str, paths: &[&str], tls: bool) -> serde_json::Value {
    let paths: Vec<_> = paths
        .iter()
        .map(|p| {
            json!({"path": p, "pathType": "Prefix",
            "backend": {"service": {"name": "web", "port": {"number": 80}}}})
        })
        .collect();
    let mut v = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
        "metadata": {"name": name, "namespace": ns, "labels": {"team": team},
            "annotations": {"kubernetes.io/ingress.class": "nginx"}},
        "spec": {
            "ingressClassName": "public",
            "rules": [{"host": format!("{name}.example.com"), "http": {"paths": paths}}],
        },
    });
    if tls {
        v["spec"]["tls"] = json!([{"hosts": ["*.example.com"], "secretName": "wildcard"}]);
    }
    v
}

fn target(ns: &str, name: &str, team: &str, path: &str, scheme: &str) -> Target {
    let host = format!("{name}.example.com");
    [
        ("__address__", host.as_str()),
        ("__meta_kubernetes_namespace", ns),
        ("__meta_kubernetes_ingress_name", name),
        ("__meta_kubernetes_ingress_class_name", "public"),
        ("__meta_kubernetes_ingress_label_team", team),
        ("__meta_kubernetes_ingress_labelpresent_team", "true"),
        (
            "__meta_kubernetes_ingress_annotation_kubernetes_io_ingress_class",
            "nginx",
        ),
        (
            "__meta_kubernetes_ingress_annotationpresent_kubernetes_io_ingress_class",
            "true",
        ),
        ("__meta_kubernetes_ingress_host", host.as_str()),
        ("__meta_kubernetes_ingress_path", path),
        ("__meta_kubernetes_ingress_scheme", scheme),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

#[tokio::test]
async fn ingresses_become_prometheus_targets_and_follow_changes() {
    let fake = FakeKube::start().await;
    fake.apply(ingress("web", "shop", "a", &["/", "/api"], false));
    fake.apply(ingress("web", "blog", "b", &["/"], false));
    fake.apply(ingress("other", "admin", "a", &["/"], false));
    let d = Running::start(&format!(
        r#"role = "ingress"
api_server = "{}"
publish_interval = "1s"
namespaces {{
  names = ["web"]
}}
selectors {{
  role  = "ingress"
  label = "team=a"
}}
"#,
        fake.url()
    ));
    let t = d.until("first targets", |t| t.len() == 2).await;
    assert_eq!(
        t,
        [
            target("web", "shop", "a", "/", "http"),
            target("web", "shop", "a", "/api", "http"),
        ]
    );
    let reqs = fake.requests();
    for watch in [false, true] {
        let r = reqs
            .iter()
            .find(|r| {
                r.path == "/apis/networking.k8s.io/v1/namespaces/web/ingresses"
                    && r.is_watch() == watch
            })
            .unwrap_or_else(|| panic!("no ingress request (watch: {watch}): {reqs:#?}"));
        assert_eq!(r.param("labelSelector"), Some("team=a"), "{r:?}");
    }
    assert!(
        !reqs.iter().any(|r| r.path.contains("/namespaces/other/")),
        "a namespace not asked for was read: {reqs:#?}"
    );

    // TLS for the wildcard and a third path: the scheme changes on every target.
    fake.apply(ingress("web", "shop", "a", &["/", "/api", "/v2"], true));
    let t = d
        .until("tls and the new path", |t| {
            t.len() == 3
                && t.iter()
                    .all(|t| t["__meta_kubernetes_ingress_scheme"] == "https")
        })
        .await;
    assert_eq!(t[2], target("web", "shop", "a", "/v2", "https"));

    // The blog joins the selector; then the shop is deleted.
    fake.apply(ingress("web", "blog", "a", &["/"], false));
    d.until("blog selected", |t| t.len() == 4).await;
    fake.delete("ingresses", Some("web"), "shop");
    let t = d.until("shop deleted", |t| t.len() == 1).await;
    assert_eq!(t, [target("web", "blog", "a", "/", "http")]);
}

#[tokio::test]
async fn namespace_metadata_is_attached_to_ingress_targets() {
    let fake = FakeKube::start().await;
    fake.apply(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "web", "labels": {"env": "prod"}},
    }));
    fake.apply(ingress("web", "shop", "a", &["/"], false));
    let d = Running::start(&format!(
        "role = \"ingress\"\napi_server = \"{}\"\npublish_interval = \"1s\"\nattach_metadata {{\n  namespace = true\n}}\n",
        fake.url()
    ));
    let t = d.until("targets", |t| t.len() == 1).await;
    let mut want = target("web", "shop", "a", "/", "http");
    want.insert(
        "__meta_kubernetes_namespace_label_env".into(),
        "prod".into(),
    );
    want.insert(
        "__meta_kubernetes_namespace_labelpresent_env".into(),
        "true".into(),
    );
    assert_eq!(t, [want]);

    // A namespace change reaches the ingress's targets.
    fake.apply(json!({
        "apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "web", "labels": {"env": "staging"}},
    }));
    d.until("namespace label changed", |t| {
        t.len() == 1 && t[0]["__meta_kubernetes_namespace_label_env"] == "staging"
    })
    .await;
}

#[test]
fn the_ingress_role_accepts_only_ingress_selectors() {
    assert!(
        decode_args(
            "role = \"ingress\"\nselectors {\n role = \"ingress\"\n field = \"metadata.name=a\"\n}"
        )
        .is_ok()
    );
    for (src, want) in [
        (
            "role = \"ingress\"\nselectors {\n role = \"pod\"\n}",
            "ingress role supports only ingress selectors",
        ),
        (
            "role = \"ingress\"\nattach_metadata {\n node = true\n}\nselectors {\n role = \"node\"\n}",
            "ingress role supports only ingress selectors",
        ),
        (
            "role = \"pod\"\nselectors {\n role = \"ingress\"\n}",
            "pod role supports only pod",
        ),
    ] {
        let errs = decode_args(src).err().unwrap_or_default();
        assert!(
            errs.iter().any(|e| e.contains(want)),
            "{src}: want {want:?}, got {errs:?}"
        );
    }
}
