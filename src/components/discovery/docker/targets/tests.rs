//! Containers as the Engine API lists them, and the exact label sets Prometheus' docker SD
//! documentation and code give each.

use super::*;

const CONTAINERS: &str = r#"[
  {"Id": "aaa", "Names": ["/web"], "Ports": [{"PrivatePort": 8080, "Type": "tcp"},
      {"IP": "0.0.0.0", "PrivatePort": 6060, "PublicPort": 16060, "Type": "tcp"},
      {"PrivatePort": 53, "Type": "udp"}],
   "Labels": {"com.docker.compose.service": "web", "prometheus-job": "w"},
   "HostConfig": {"NetworkMode": "app_default"},
   "NetworkSettings": {"Networks": {"app_default": {"NetworkID": "n1", "IPAddress": "172.19.0.2"}}}},
  {"Id": "bbb", "Names": ["/noport"], "Ports": [], "Labels": {},
   "HostConfig": {"NetworkMode": "app_default"},
   "NetworkSettings": {"Networks": {"app_default": {"NetworkID": "n1", "IPAddress": "172.19.0.3"}}}},
  {"Id": "ccc", "Names": ["/hostnet"], "Ports": [],
   "HostConfig": {"NetworkMode": "host"},
   "NetworkSettings": {"Networks": {"host": {"NetworkID": "nh", "IPAddress": ""}}}},
  {"Id": "ddd", "Names": ["/sidecar"], "Ports": [{"PrivatePort": 9104, "Type": "tcp"}],
   "HostConfig": {"NetworkMode": "container:eee"},
   "NetworkSettings": {"Networks": {}}},
  {"Id": "eee", "Names": ["/multi"], "Ports": [{"PrivatePort": 3306, "Type": "tcp"}],
   "HostConfig": {"NetworkMode": "b_net"},
   "NetworkSettings": {"Networks": {"b_net": {"NetworkID": "n2", "IPAddress": "172.20.0.2"},
                                    "a_net": {"NetworkID": "n3", "IPAddress": "fd00::2"},
                                    "z_null": null}}},
  {"Id": "fff", "Names": [], "HostConfig": {"NetworkMode": "app_default"},
   "NetworkSettings": {"Networks": {"app_default": {"NetworkID": "n1", "IPAddress": "172.19.0.9"}}}}
]"#;

const NETWORKS: &str = r#"[
  {"Name": "app_default", "Id": "n1", "Scope": "local", "Internal": false, "Ingress": false,
   "Labels": {"com.docker.network.name": "app"}},
  {"Name": "host", "Id": "nh", "Scope": "local", "Internal": false, "Ingress": false, "Labels": {}},
  {"Name": "b_net", "Id": "n2", "Scope": "local", "Internal": true, "Ingress": false},
  {"Name": "a_net", "Id": "n3", "Scope": "swarm", "Internal": false, "Ingress": true, "Labels": null}
]"#;

fn run(match_first_network: bool) -> Vec<BTreeMap<String, String>> {
    let containers: Vec<Container> = serde_json::from_str(CONTAINERS).expect("containers");
    let networks: Vec<Network> = serde_json::from_str(NETWORKS).expect("networks");
    let opts = Options {
        port: 80,
        host_networking_host: "localhost".into(),
        match_first_network,
    };
    targets(&containers, &networks, &opts)
        .iter()
        .map(|t| t.to_map())
        .collect()
}

fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

const APP_NET: [(&str, &str); 6] = [
    ("__meta_docker_network_id", "n1"),
    ("__meta_docker_network_name", "app_default"),
    ("__meta_docker_network_scope", "local"),
    ("__meta_docker_network_internal", "false"),
    ("__meta_docker_network_ingress", "false"),
    ("__meta_docker_network_label_com_docker_network_name", "app"),
];

fn with(base: &[(&str, &str)], more: &[(&str, &str)]) -> BTreeMap<String, String> {
    let mut l = labels(base);
    l.extend(labels(more));
    l
}

#[test]
fn labels_match_prometheus_docker_sd() {
    let web = [
        ("__meta_docker_container_id", "aaa"),
        ("__meta_docker_container_name", "/web"),
        ("__meta_docker_container_network_mode", "app_default"),
        (
            "__meta_docker_container_label_com_docker_compose_service",
            "web",
        ),
        ("__meta_docker_container_label_prometheus_job", "w"),
        ("__meta_docker_network_ip", "172.19.0.2"),
    ];
    let multi = [
        ("__meta_docker_container_id", "eee"),
        ("__meta_docker_container_name", "/multi"),
        ("__meta_docker_container_network_mode", "b_net"),
        ("__meta_docker_port_private", "3306"),
    ];
    let a_net = [
        ("__meta_docker_network_id", "n3"),
        ("__meta_docker_network_name", "a_net"),
        ("__meta_docker_network_scope", "swarm"),
        ("__meta_docker_network_internal", "false"),
        ("__meta_docker_network_ingress", "true"),
        ("__meta_docker_network_ip", "fd00::2"),
    ];
    let b_net = [
        ("__meta_docker_network_id", "n2"),
        ("__meta_docker_network_name", "b_net"),
        ("__meta_docker_network_scope", "local"),
        ("__meta_docker_network_internal", "true"),
        ("__meta_docker_network_ingress", "false"),
        ("__meta_docker_network_ip", "172.20.0.2"),
    ];
    let first = vec![
        // Each TCP port; the UDP one is not a target.
        with(&web, &APP_NET)
            .into_iter()
            .chain(labels(&[
                ("__address__", "172.19.0.2:8080"),
                ("__meta_docker_port_private", "8080"),
            ]))
            .collect(),
        with(&web, &APP_NET)
            .into_iter()
            .chain(labels(&[
                ("__address__", "172.19.0.2:6060"),
                ("__meta_docker_port_private", "6060"),
                ("__meta_docker_port_public", "16060"),
                ("__meta_docker_port_public_ip", "0.0.0.0"),
            ]))
            .collect(),
        // No ports: the `port` argument.
        with(
            &[
                ("__meta_docker_container_id", "bbb"),
                ("__meta_docker_container_name", "/noport"),
                ("__meta_docker_container_network_mode", "app_default"),
                ("__meta_docker_network_ip", "172.19.0.3"),
                ("__address__", "172.19.0.3:80"),
            ],
            &APP_NET,
        ),
        // Host networking: `host_networking_host`; the empty IP is no label.
        labels(&[
            ("__meta_docker_container_id", "ccc"),
            ("__meta_docker_container_name", "/hostnet"),
            ("__meta_docker_container_network_mode", "host"),
            ("__meta_docker_network_id", "nh"),
            ("__meta_docker_network_name", "host"),
            ("__meta_docker_network_scope", "local"),
            ("__meta_docker_network_internal", "false"),
            ("__meta_docker_network_ingress", "false"),
            ("__address__", "localhost"),
        ]),
        // Sharing eee's network: eee's first network (a_net, IPv6 in brackets), its own port.
        with(
            &[
                ("__meta_docker_container_id", "ddd"),
                ("__meta_docker_container_name", "/sidecar"),
                ("__meta_docker_container_network_mode", "container:eee"),
                ("__meta_docker_port_private", "9104"),
                ("__address__", "[fd00::2]:9104"),
            ],
            &a_net,
        ),
        with(&multi, &a_net)
            .into_iter()
            .chain(labels(&[("__address__", "[fd00::2]:3306")]))
            .collect(),
    ];
    assert_eq!(run(true), first);

    // Every network when match_first_network is off: b_net's targets too.
    let all = run(false);
    assert_eq!(all.len(), first.len() + 2, "{all:#?}");
    assert!(
        all.contains(
            &with(&multi, &b_net)
                .into_iter()
                .chain(labels(&[("__address__", "172.20.0.2:3306")]))
                .collect()
        )
    );
    assert!(all.iter().any(|t| t["__address__"] == "172.20.0.2:9104"));
}

#[test]
fn label_names_are_sanitised() {
    let cases = [
        ("com.docker.compose.service", "com_docker_compose_service"),
        ("a-b/c", "a_b_c"),
        ("ok_1", "ok_1"),
        ("é", "_"),
    ];
    for (input, want) in cases {
        assert_eq!(sanitize(input), want);
    }
}

/// Go's encoding/json leaves a field at its zero value for `null`, and Prometheus counts a
/// `null` network entry as a network (`len(networks) == 0` decides whether to borrow another
/// container's). Each row: containers, then the addresses expected.
#[test]
fn nulls_are_read_as_go_reads_them() {
    let net =
        r#""NetworkSettings": {"Networks": {"n": {"NetworkID": "n1", "IPAddress": "10.0.0.1"}}}"#;
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "null names: skipped like no names",
            format!(r#"[{{"Id": "a", "Names": null, "Ports": null, {net}}}]"#),
            vec![],
        ),
        (
            "null ports: the fallback port",
            format!(r#"[{{"Id": "a", "Names": ["/a"], "Ports": null, {net}}}]"#),
            vec!["10.0.0.1:80"],
        ),
        (
            "null fields of a port, labels, host config and settings",
            r#"[{"Id": "a", "Names": ["/a"], "Labels": null, "HostConfig": null,
                "Ports": [{"IP": null, "PrivatePort": 9, "PublicPort": null, "Type": "tcp"}],
                "NetworkSettings": {"Networks": {"n": {"NetworkID": null, "IPAddress": "10.0.0.2"}}}},
               {"Id": "b", "Names": ["/b"], "NetworkSettings": null}]"#
                .to_string(),
            vec!["10.0.0.2:9"],
        ),
        (
            "only a null network: no targets, and the shared container's are not borrowed",
            format!(
                r#"[{{"Id": "a", "Names": ["/a"], "HostConfig": {{"NetworkMode": "container:b"}},
                     "NetworkSettings": {{"Networks": {{"x": null}}}}}},
                    {{"Id": "b", "Names": ["/b"], {net}}}]"#
            ),
            vec!["10.0.0.1:80"],
        ),
        (
            "the chain stops at a container whose only network is null",
            format!(
                r#"[{{"Id": "a", "Names": ["/a"], "HostConfig": {{"NetworkMode": "container:b"}},
                     "NetworkSettings": {{"Networks": {{}}}}}},
                    {{"Id": "b", "Names": ["/b"], "HostConfig": {{"NetworkMode": "container:c"}},
                     "NetworkSettings": {{"Networks": {{"x": null}}}}}},
                    {{"Id": "c", "Names": ["/c"], {net}}}]"#
            ),
            vec!["10.0.0.1:80"],
        ),
        (
            "match_first_network skips null entries",
            r#"[{"Id": "a", "Names": ["/a"], "NetworkSettings": {"Networks": {"a": null,
                "b": {"IPAddress": "10.0.0.3"}, "c": {"IPAddress": "10.0.0.4"}}}}]"#
                .to_string(),
            vec!["10.0.0.3:80"],
        ),
    ];
    let opts = Options {
        port: 80,
        host_networking_host: "localhost".into(),
        match_first_network: true,
    };
    for (name, json, want) in cases {
        let containers: Vec<Container> =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        let got: Vec<String> = targets(&containers, &[], &opts)
            .iter()
            .map(|t| t.get("__address__").unwrap_or("").to_string())
            .collect();
        assert_eq!(got, want, "{name}");
    }
}
