//! pyroscope.write configuration: what `scraper check` accepts and rejects, and what updates
//! keep (the exported receiver, queued profiles).

mod support;

use std::sync::Arc;
use std::time::Duration;

use scraper::components::builtin;
use scraper::runtime::check;
use support::pyroscope_receiver::{Fault, PyroscopeReceiver, Writer, numbered_profile};

const WAIT: Duration = Duration::from_secs(10);

fn messages(src: &str) -> Vec<String> {
    check(&builtin(), "write.alloy", src)
        .into_iter()
        .map(|d| d.message)
        .collect()
}

#[test]
fn alloy_configs_are_accepted() {
    // The Pyroscope Helm chart's writer, a Grafana Cloud one, and every attribute we know.
    let src = r#"
pyroscope.write "local" {
  endpoint {
    url = "http://pyroscope.monitoring.svc:4040"
  }
}

pyroscope.write "cloud" {
  external_labels = { "cluster" = "prod-eu", "env" = "prod" }
  endpoint {
    url = "https://profiles-prod-001.grafana.net"
    basic_auth {
      username = "123456"
      password = sys.env("GRAFANA_CLOUD_TOKEN")
    }
  }
}

pyroscope.write "everything" {
  endpoint {
    name                      = "main"
    url                       = "https://pyroscope:4040/prefix"
    remote_timeout            = "20s"
    headers                   = { "X-Scope-OrgID" = "tenant-1" }
    http_headers              = { "X-Extra" = ["a", "b"] }
    min_backoff_period        = "1s"
    max_backoff_period        = "1m"
    max_backoff_retries       = 0
    retry_on_http_429         = false
    debug_info_upload_timeout = "1m"
    bearer_token_file         = "/var/run/secrets/token"
    enable_http2              = false
    follow_redirects          = false
    proxy_url                 = "http://proxy:3128"
    no_proxy                  = "localhost,10.0.0.0/8"
    proxy_connect_header      = { "Proxy-Authorization" = ["Basic abc"] }
    tls_config {
      ca_file              = "/etc/ssl/ca.pem"
      server_name          = "pyroscope"
      insecure_skip_verify = false
      min_version          = "TLS12"
    }
    queue_config {
      max_bytes      = 134217728
      senders        = 8
      max_age        = "30m"
      flush_deadline = "10s"
    }
    limits {
      max_profile_size_bytes = 8388608
      max_profile_samples    = 0
      max_burst_bytes        = 0
    }
  }
  endpoint {
    url = "http://second:4040"
    oauth2 {
      client_id          = "id"
      client_secret_file = "/secret"
      token_url          = "https://auth/token"
      scopes             = ["a", "b"]
      endpoint_params    = { "audience" = "x" }
      tls_config {
        insecure_skip_verify = true
      }
    }
  }
  tracing {
    jaeger_propagator = false
  }
}
"#;
    assert_eq!(messages(src), Vec::<String>::new());
}

#[test]
fn invalid_configs_get_alloy_messages() {
    let cases: &[(&str, &str)] = &[
        (
            "endpoint {\n  url = \"http://a\"\n  bearer_token = \"x\"\n  basic_auth {\n    username = \"u\"\n  }\n}",
            "at most one of basic_auth, authorization, oauth2, bearer_token & bearer_token_file must be configured",
        ),
        (
            "endpoint {\n  url = \"http://a\"\n  tls_config {\n    cert_file = \"/c\"\n  }\n}",
            "exactly one of key_pem or key_file must be configured when a client certificate is configured",
        ),
        (
            "endpoint {\n  url = \"http://a\"\n  remote_timout = \"1s\"\n}",
            r#"unrecognized attribute name "remote_timout""#,
        ),
        (
            "endpoint {\n  name = \"x\"\n}",
            r#"missing required attribute "url""#,
        ),
        (
            "endpoint {\n  url = \"http://a\"\n  queue_config {\n    senders = 0\n  }\n}",
            "queue_config senders must be between 1 and 256, got 0",
        ),
        (
            "endpoint {\n  url = \"http://a\"\n  min_backoff_period = \"5\"\n}",
            "time: missing unit in duration \"5\"",
        ),
    ];
    for (body, want) in cases {
        let src = format!("pyroscope.write \"x\" {{\n{body}\n}}\n");
        let got = messages(&src);
        assert!(
            got.iter().any(|m| m.contains(want)),
            "{src}\nwant {want:?}\ngot {got:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_keep_the_receiver_and_the_queued_profiles() {
    let rx = PyroscopeReceiver::start().await;
    let body = |backoff: &str| {
        format!(
            "endpoint {{\n  url = \"{}\"\n  min_backoff_period = \"{backoff}\"\n  max_backoff_period = \"100ms\"\n}}\n",
            rx.url()
        )
    };
    let w = Writer::start(&body("5ms"));
    rx.set_outage(Fault::Connect("unavailable"));
    for i in 0..20 {
        w.append(vec![numbered_profile(&format!("s{}", i % 4), i)]);
    }
    assert!(rx.wait_for_requests(2, WAIT).await);
    w.update(&body("10ms")).expect("update");
    // Same receiver object: dependants are not re-evaluated.
    assert!(Arc::ptr_eq(&w.receiver, &w.component.receiver()));
    // A bad update changes nothing.
    assert!(
        w.update("endpoint {\n  url = \"::nonsense\"\n}\n")
            .unwrap_err()
            .contains("invalid")
    );
    rx.end_outage();
    assert!(rx.wait_for(20, WAIT).await);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(rx.count(), 20, "each profile exactly once");
    assert_eq!(w.metric("pyroscope_write_dropped_profiles_total", &[]), 0.0);

    // Removing the endpoint drops what was queued for it, counted as `reload`.
    rx.set_outage(Fault::Connect("unavailable"));
    for i in 0..5 {
        w.append(vec![numbered_profile("late", i)]);
    }
    assert!(rx.wait_for_requests(rx.request_count() + 1, WAIT).await);
    w.update("").expect("update");
    assert!(
        w.wait(WAIT, |w| w.metric(
            "pyroscope_write_dropped_profiles_total",
            &[("reason", "reload")]
        ) == 5.0)
            .await
    );
    rx.end_outage();
    w.stop().await;
}

mod graph {
    //! The hand-off through a real component graph: a producer whose `forward_to` names two
    //! `pyroscope.write` receivers.

    use std::sync::Arc;

    use scraper::profiles::{FanOut, Receiver};
    use scraper::runtime::{
        BoxError, Component, ComponentOptions, Controller, ControllerOptions, Registration,
        Registry,
    };
    use scraper::syntax::types::CapsuleRef;
    use serde::Deserialize;
    use tokio_util::sync::CancellationToken;

    use super::WAIT;
    use super::support::pyroscope_receiver::{PyroscopeReceiver, numbered_profile};

    #[derive(Deserialize)]
    struct ProducerArgs {
        forward_to: Vec<CapsuleRef<Receiver>>,
        count: usize,
    }

    /// Appends `count` profiles to its `forward_to` receivers when built.
    struct Producer {
        fan: FanOut,
    }

    impl Component for Producer {
        type Arguments = ProducerArgs;

        fn build(_opts: ComponentOptions, args: ProducerArgs) -> Result<Self, BoxError> {
            let fan = FanOut::new(args.forward_to);
            for i in 0..args.count {
                scraper::profiles::Appendable::append(&fan, vec![numbered_profile("graph", i)]);
            }
            Ok(Producer { fan })
        }

        fn update(&self, args: ProducerArgs) -> Result<(), BoxError> {
            self.fan.set(args.forward_to);
            Ok(())
        }

        async fn run(self: Arc<Self>, shutdown: CancellationToken) -> Result<(), BoxError> {
            shutdown.cancelled().await;
            Ok(())
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn producers_forward_to_write_receivers_through_the_graph() {
        let (a, b) = (
            PyroscopeReceiver::start().await,
            PyroscopeReceiver::start().await,
        );
        let registry = Registry::new()
            .with(Registration::new::<
                scraper::components::pyroscope::write::Write,
            >("pyroscope.write"))
            .with(Registration::new::<Producer>("test.producer"));
        let dir = tempfile::tempdir().expect("tempdir");
        let mut opts = ControllerOptions::new(registry);
        opts.storage_path = dir.path().to_path_buf();
        let c = Controller::new(opts);
        let src = format!(
            r#"
test.producer "p" {{
  forward_to = [pyroscope.write.a.receiver, pyroscope.write.b.receiver]
  count      = 25
}}
pyroscope.write "a" {{
  endpoint {{
    url = "{}"
  }}
}}
pyroscope.write "b" {{
  external_labels = {{ "via" = "b" }}
  endpoint {{
    url = "{}"
  }}
}}
"#,
            a.url(),
            b.url()
        );
        c.apply_source("graph.alloy", &src).await.expect("apply");
        assert!(a.wait_for(25, WAIT).await);
        assert!(b.wait_for(25, WAIT).await);
        assert_eq!(a.received()[0].label("via"), None);
        assert_eq!(b.received()[0].label("via"), Some("b"));
        c.shutdown().await;
    }
}
