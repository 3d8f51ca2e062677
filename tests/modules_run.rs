//! `scraper run` with a custom component instantiated twice: each instance's own
//! `pyroscope.scrape` scrapes its own local target, with its own service name, and forwards to
//! the receiver another custom component exports (a `pyroscope.relabel` in front of a
//! `pyroscope.write`), which pushes to a recording Pyroscope receiver. The API lists both
//! instances' components under distinct IDs, and their metrics do not collide.

mod scrape_support;
mod support;

use std::time::Duration;

use scrape_support::Scraper;
use support::profile_server::{ProfileServer, heap_versions};
use support::pyroscope_receiver::PyroscopeReceiver;

fn config(server: &ProfileServer, receiver: &str) -> String {
    let (addr0, prefix0) = server.target(0);
    let (addr1, prefix1) = server.target(1);
    let profiling = support::alloy::profiling_config(&["memory"]);
    format!(
        r#"
declare "sink" {{
  argument "url" {{ }}

  pyroscope.write "out" {{
    endpoint {{
      url = argument.url.value
    }}
  }}

  pyroscope.relabel "tag" {{
    forward_to = [pyroscope.write.out.receiver]
    rule {{
      target_label = "via"
      replacement  = "sink"
    }}
  }}

  export "receiver" {{
    value = pyroscope.relabel.tag.receiver
  }}
}}

declare "app" {{
  argument "address" {{ }}
  argument "prefix" {{ }}
  argument "service" {{ }}
  argument "forward_to" {{ comment = "Where profiles go." }}

  pyroscope.scrape "app" {{
    targets = [{{
      "__address__"             = argument.address.value,
      "__profile_path_prefix__" = argument.prefix.value,
      "service_name"            = argument.service.value,
    }}]
    forward_to      = argument.forward_to.value
    scrape_interval = "1s"
    scrape_timeout  = "900ms"
{profiling}  }}
}}

sink "main" {{
  url = "{receiver}"
}}

app "one" {{
  address    = "{addr0}"
  prefix     = "{prefix0}"
  service    = "svc-one"
  forward_to = [sink.main.receiver]
}}

app "two" {{
  address    = "{addr1}"
  prefix     = "{prefix1}"
  service    = "svc-two"
  forward_to = [sink.main.receiver]
}}
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_component_twice_scrapes_two_targets_into_an_exported_receiver() {
    let server = ProfileServer::start(2, heap_versions(20, 4), Duration::ZERO).await;
    let receiver = PyroscopeReceiver::start().await;
    let cfg = config(&server, &receiver.url());
    let s = Scraper::start(move |_| cfg).await;

    let both = s
        .wait(Duration::from_secs(30), |_| {
            let rx = receiver.received();
            ["svc-one", "svc-two"].iter().all(|svc| {
                rx.iter()
                    .any(|r| r.label("service_name") == Some(svc) && r.label("via") == Some("sink"))
            })
        })
        .await;
    assert!(
        both,
        "profiles of both instances via the sink:\n{}",
        s.logs()
    );
    assert!(server.started(0) > 0 && server.started(1) > 0);

    // Distinct, readable IDs in the API, each one reachable.
    let list = s.get("/api/v0/web/components").await;
    for id in [
        "app.one/pyroscope.scrape.app",
        "app.two/pyroscope.scrape.app",
        "sink.main/pyroscope.relabel.tag",
        "sink.main/pyroscope.write.out",
    ] {
        assert!(list.contains(&format!("\"{id}\"")), "{id} listed:\n{list}");
        let one = s.component(id).await;
        assert_eq!(one["localID"], id, "{one}");
    }
    let inner = s.component("app.one/pyroscope.scrape.app").await;
    assert_eq!(inner["moduleID"], "app.one", "{inner}");
    let page = s.get("/components/app.two/pyroscope.scrape.app").await;
    assert!(page.contains("svc-two"), "{page}");

    // Each instance's scrape metrics are its own series, labelled as Alloy labels them: the
    // ID local to the module and the module's path.
    let metrics = s.metrics().await;
    for module in ["app.one", "app.two"] {
        let labels = format!("component_id=\"pyroscope.scrape.app\",component_path=\"/{module}\"");
        assert!(metrics.contains(&labels), "series for {module}: {metrics}");
    }
}

/// The module of [`import_file_reload_and_broken_module`]: a scrape wrapper whose profiles get
/// `version`.
fn module(version: &str, profiling: &str) -> String {
    format!(
        r#"declare "app" {{
  argument "address" {{ }}
  argument "prefix" {{ }}
  argument "forward_to" {{ }}

  pyroscope.relabel "version" {{
    forward_to = argument.forward_to.value
    rule {{
      target_label = "version"
      replacement  = "{version}"
    }}
  }}

  pyroscope.scrape "app" {{
    targets = [{{
      "__address__"             = argument.address.value,
      "__profile_path_prefix__" = argument.prefix.value,
      "service_name"            = "imported",
    }}]
    forward_to      = [pyroscope.relabel.version.receiver]
    scrape_interval = "1s"
    scrape_timeout  = "900ms"
{profiling}  }}
}}
"#
    )
}

/// `scraper run` with an `import.file` module: an edit of the module is picked up without
/// touching the main file (profiles change label), and a broken edit is reported with its
/// position in the module while the running pipeline carries on unchanged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_file_reload_and_broken_module() {
    let server = ProfileServer::start(1, heap_versions(20, 4), Duration::ZERO).await;
    let receiver = PyroscopeReceiver::start().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let lib = dir.path().join("lib.alloy");
    let profiling = support::alloy::profiling_config(&["memory"]);
    std::fs::write(&lib, module("v1", &profiling)).expect("write module");
    let (addr, prefix) = server.target(0);
    let cfg = format!(
        r#"
import.file "lib" {{
  filename       = "{lib}"
  detector       = "poll"
  poll_frequency = "100ms"
}}

pyroscope.write "rx" {{
  endpoint {{
    url = "{url}"
  }}
}}

lib.app "one" {{
  address    = "{addr}"
  prefix     = "{prefix}"
  forward_to = [pyroscope.write.rx.receiver]
}}
"#,
        lib = lib.display(),
        url = receiver.url(),
    );
    let s = Scraper::start(move |_| cfg).await;
    let has = |version: &str| {
        receiver.received().iter().any(|r| {
            r.label("version") == Some(version) && r.label("service_name") == Some("imported")
        })
    };
    assert!(
        s.wait(Duration::from_secs(30), |_| has("v1")).await,
        "{}",
        s.logs()
    );

    std::fs::write(&lib, module("v2", &profiling)).expect("write module");
    assert!(
        s.wait(Duration::from_secs(30), |_| has("v2")).await,
        "the module edit was not applied:\n{}",
        s.logs()
    );
    assert!(s.logs().contains("imported module changed"), "{}", s.logs());

    // A syntax error on line 6 of the module (`pyroscope.relabel "version" = {`).
    let broken = module("v3", &profiling).replacen(
        "  pyroscope.relabel \"version\" {",
        "  pyroscope.relabel \"version\" = {",
        1,
    );
    std::fs::write(&lib, broken).expect("write module");
    let position = format!("{}:6:", lib.display());
    assert!(
        s.wait(Duration::from_secs(30), |s| s.logs().contains(&position))
            .await,
        "the broken module's error, at its position in the module:\n{}",
        s.logs()
    );
    let before = receiver.count();
    assert!(
        s.wait(Duration::from_secs(30), |_| receiver.count() > before + 1)
            .await,
        "the running pipeline stopped:\n{}",
        s.logs()
    );
    assert!(!has("v3"));
    let listed = s.get("/api/v0/web/components").await;
    assert!(
        listed.contains("lib.app.one/pyroscope.scrape.app"),
        "{listed}"
    );
}
