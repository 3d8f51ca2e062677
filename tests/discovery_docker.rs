//! `discovery.docker` in a real `scraper run` against the in-repo fake Docker Engine API on a
//! unix socket (`support::fake_docker`, Docker's wire format, chunked answers):
//!
//! * the targets carry exactly the labels Prometheus' docker_sd documentation lists
//!   (`__meta_docker_container_*`, `__meta_docker_network_*`, `__meta_docker_port_*`), one per
//!   TCP port, the `port` argument for a container without ports;
//! * `filter` blocks reach the daemon as Docker's `filters` JSON;
//! * a new container is picked up at the next refresh;
//! * a daemon error keeps the last good targets, makes the component unhealthy with Docker's
//!   message and counts `prometheus_sd_refresh_failures_total{mechanism="docker"}`; then it
//!   recovers.
//!
//! Waits use generous hang guards; nothing asserts a duration.

mod scrape_support;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use scrape_support::{Scraper, eventually, metric};
use support::fake_docker::FakeDocker;

const GUARD: Duration = Duration::from_secs(30);
const ID: &str = "discovery.docker.local";

type Target = BTreeMap<String, String>;

const NETWORKS: &str = r#"[
  {"Name": "shop_default", "Id": "9f1c", "Created": "2026-11-01T10:00:00Z", "Scope": "local",
   "Driver": "bridge", "EnableIPv6": false, "Internal": false, "Attachable": false,
   "Ingress": false, "Labels": {"com.docker.compose.network": "default"}}
]"#;

fn container(id: &str, name: &str, ip: &str, ports: &str) -> String {
    format!(
        r#"{{"Id": "{id}", "Names": ["/{name}"], "Image": "shop/{name}:1.0", "ImageID": "sha256:00",
  "Command": "/app", "Created": 1764000000, "Ports": {ports},
  "Labels": {{"com.docker.compose.service": "{name}", "profiles.grafana.com/cpu.scrape": "true"}},
  "State": "running", "Status": "Up 5 minutes", "HostConfig": {{"NetworkMode": "shop_default"}},
  "NetworkSettings": {{"Networks": {{"shop_default": {{"IPAMConfig": null, "Links": null,
    "Aliases": null, "NetworkID": "9f1c", "EndpointID": "e1", "Gateway": "172.30.0.1",
    "IPAddress": "{ip}", "IPPrefixLen": 16, "IPv6Gateway": "", "GlobalIPv6Address": "",
    "GlobalIPv6PrefixLen": 0, "MacAddress": "02:42:ac:1e:00:02", "DriverOpts": null}}}}}},
  "Mounts": []}}"#
    )
}

fn expected(id: &str, name: &str, ip: &str, port: Option<&str>, address: &str) -> Target {
    let mut t: Target = [
        ("__address__", address),
        ("__meta_docker_container_id", id),
        (
            "__meta_docker_container_label_com_docker_compose_service",
            name,
        ),
        (
            "__meta_docker_container_label_profiles_grafana_com_cpu_scrape",
            "true",
        ),
        ("__meta_docker_container_network_mode", "shop_default"),
        ("__meta_docker_network_id", "9f1c"),
        ("__meta_docker_network_ingress", "false"),
        ("__meta_docker_network_internal", "false"),
        ("__meta_docker_network_ip", ip),
        (
            "__meta_docker_network_label_com_docker_compose_network",
            "default",
        ),
        ("__meta_docker_network_name", "shop_default"),
        ("__meta_docker_network_scope", "local"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    t.insert("__meta_docker_container_name".into(), format!("/{name}"));
    if let Some(p) = port {
        t.insert("__meta_docker_port_private".into(), p.into());
    }
    t
}

async fn exported(s: &Scraper) -> Vec<Target> {
    let c = s.component(ID).await;
    serde_json::from_value(c["exports"]["targets"].clone())
        .unwrap_or_else(|e| panic!("targets: {e}: {c}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn docker_sd_targets_follow_the_daemon() {
    let dir = tempfile::tempdir().expect("tempdir");
    let docker = FakeDocker::start(dir.path()).await;
    let api = container(
        "a1",
        "api",
        "172.30.0.2",
        r#"[{"PrivatePort": 6060, "Type": "tcp"}, {"PrivatePort": 53, "Type": "udp"}]"#,
    );
    let worker = container("b2", "worker", "172.30.0.3", "[]");
    docker.set(&format!("[{api}, {worker}]"), NETWORKS);
    let host = docker.host();
    let s = Scraper::start(move |_| {
        format!(
            r#"
discovery.docker "local" {{
  host             = "{host}"
  port             = 4040
  refresh_interval = "1s"
  filter {{
    name   = "label"
    values = ["profiles.grafana.com/cpu.scrape=true"]
  }}
}}
"#
        )
    })
    .await;

    let want = vec![
        expected("a1", "api", "172.30.0.2", Some("6060"), "172.30.0.2:6060"),
        expected("b2", "worker", "172.30.0.3", None, "172.30.0.3:4040"),
    ];
    assert!(
        eventually(GUARD, || async { exported(&s).await == want }).await,
        "got {:#?}\n{}",
        exported(&s).await,
        s.logs()
    );
    let query = docker.queries().first().cloned().unwrap_or_default();
    let filters = scraper::gocompat::url::query_get(&query, "filters").unwrap_or_default();
    assert_eq!(
        filters,
        r#"{"label":{"profiles.grafana.com/cpu.scrape=true":true}}"#
    );

    // A new container.
    let cart = container(
        "c3",
        "cart",
        "172.30.0.4",
        r#"[{"PrivatePort": 6060, "Type": "tcp"}]"#,
    );
    docker.set(&format!("[{api}, {worker}, {cart}]"), NETWORKS);
    assert!(eventually(GUARD, || async { exported(&s).await.len() == 3 }).await);

    // The daemon fails: targets stay, the component says why.
    docker.fail(Some("layer does not exist"));
    let unhealthy = eventually(GUARD, || async {
        let c = s.component(ID).await;
        c["health"]["state"] == "unhealthy"
            && c["health"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("layer does not exist")
    })
    .await;
    assert!(unhealthy, "{}\n{}", s.component(ID).await, s.logs());
    assert_eq!(exported(&s).await.len(), 3);
    let failures = metric(
        &s.metrics().await,
        "prometheus_sd_refresh_failures_total",
        &[("component_id", ID), ("mechanism", "docker")],
    );
    assert!(failures.is_some_and(|n| n >= 1.0), "{failures:?}");

    docker.fail(None);
    docker.set(&format!("[{cart}]"), NETWORKS);
    assert!(
        eventually(GUARD, || async {
            s.component(ID).await["health"]["state"] == "healthy" && exported(&s).await.len() == 1
        })
        .await
    );
}
