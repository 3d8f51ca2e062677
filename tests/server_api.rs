//! The HTTP API over a controller running test components, served in-process: the component
//! JSON, `/-/healthy` with an unhealthy component, and the HTML overview.

mod runtime_support;

use runtime_support::{controller, pass};
use scraper::server::{AppState, serve};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const CONFIG: &str = r#"
test.pass "a" {
  input = "one"
}

test.pass "b" {
  input = test.pass.a.output
}
"#;

/// The HTTP server over a controller, on a free loopback port.
struct TestServer {
    base: String,
    stop: CancellationToken,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl TestServer {
    async fn start(c: &scraper::runtime::Controller, dir: &std::path::Path) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        let stop = CancellationToken::new();
        let state = AppState {
            controller: c.clone(),
            config_path: dir.join("unused.alloy"),
            stores: Default::default(),
            budget: scraper::budget::Budget::unlimited(),
            types: Default::default(),
            cluster: scraper::cluster::Cluster::alone("test", "127.0.0.1:0"),
        };
        let task = tokio::spawn(serve(listener, state, stop.clone()));
        TestServer { base, stop, task }
    }

    async fn stop(self) {
        self.stop.cancel();
        self.task.await.expect("join").expect("serve");
    }
}

#[tokio::test]
async fn component_api_health_and_ui() {
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    c.apply_source("cfg.alloy", CONFIG).await.expect("apply");
    c.wait_idle().await;
    let server = TestServer::start(&c, dir.path()).await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let get_json = |path: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            let resp = client
                .get(format!("{base}{path}"))
                .send()
                .await
                .expect("get");
            assert_eq!(resp.status().as_u16(), 200, "{path}");
            let text = resp.text().await.expect("body");
            serde_json::from_str::<Value>(&text).expect("json")
        }
    };

    let list = get_json("/api/v0/web/components").await;
    let items = list.as_array().expect("array");
    assert_eq!(items.len(), 2);
    let b = &items[1];
    assert_eq!(b["name"], "test.pass");
    assert_eq!(b["type"], "block");
    assert_eq!(b["localID"], "test.pass.b");
    assert_eq!(b["moduleID"], "");
    assert_eq!(b["label"], "b");
    assert_eq!(b["referencesTo"], json!(["test.pass.a"]));
    assert_eq!(b["referencedBy"], json!([]));
    assert_eq!(b["health"]["state"], "healthy");
    // The freshest of the healthy reports: started, or evaluated again since.
    let msg = b["health"]["message"].as_str().expect("message");
    assert!(
        ["started component", "component evaluated"].contains(&msg),
        "{msg}"
    );
    let updated = b["health"]["updatedTime"].as_str().expect("time");
    assert!(
        updated.len() >= 20 && updated.ends_with('Z') && &updated[10..11] == "T",
        "{updated}"
    );
    assert!(b.get("arguments").is_none(), "list view has no arguments");

    let detail = get_json("/api/v0/web/components/test.pass.b").await;
    assert_eq!(detail["arguments"], json!({ "input": "one" }));
    assert_eq!(detail["exports"], json!({ "extra": "", "output": "one" }));
    assert_eq!(detail["referencesTo"], json!(["test.pass.a"]));

    // Break b: /-/healthy names it, the UI shows it.
    pass(&c, "test.pass.a").await.set_output("drop-output");
    c.wait_idle().await;
    let resp = client
        .get(format!("{base}/-/healthy"))
        .send()
        .await
        .expect("healthy");
    assert_eq!(resp.status().as_u16(), 500);
    assert_eq!(
        resp.text().await.expect("body"),
        "unhealthy components: test.pass.b\n"
    );
    let html = client
        .get(format!("{base}/"))
        .send()
        .await
        .expect("ui")
        .text()
        .await
        .expect("body");
    assert!(
        html.contains(r#"<td class="unhealthy">unhealthy</td>"#),
        "{html}"
    );
    assert!(
        html.contains(r#"<a href="/components/test.pass.a">test.pass.a</a>"#),
        "{html}"
    );
    let metrics = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("body");
    assert!(
        metrics.contains(
            r#"alloy_component_controller_running_components{health_type="unhealthy"} 1"#
        ),
        "{metrics}"
    );

    server.stop().await;
    c.shutdown().await;
}

/// A secret given in the config, exported by a component and misused by another (assigned to a
/// plain string, which is an error) never shows up in any response the server gives.
#[tokio::test]
async fn secrets_never_leave_the_process() {
    const SECRET: &str = "hunter2-do-not-print";
    let config = format!(
        r#"
test.secret "s" {{
  password = "{SECRET}"
}}

test.pass "leak" {{
  input = test.secret.s.token
}}

test.pass "concat" {{
  input = "prefix-" + test.secret.s.token
}}
"#
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let c = controller(dir.path());
    // Misusing the secret is a load error, which must not quote the value either.
    let err = c
        .apply_source("cfg.alloy", &config)
        .await
        .expect_err("a secret assigned to a string is an error");
    let err_text = format!("{err} {err:?}");
    assert!(err_text.contains("secret"), "{err_text}");
    assert!(!err_text.contains(SECRET), "{err_text}");

    // Load only the holder and check every view of it.
    let holder_only = format!("test.secret \"s\" {{\n  password = \"{SECRET}\"\n}}\n");
    c.apply_source("cfg.alloy", &holder_only)
        .await
        .expect("apply");
    c.wait_idle().await;
    let server = TestServer::start(&c, dir.path()).await;
    let base = server.base.clone();
    let client = reqwest::Client::new();
    let mut seen = String::new();
    for path in [
        "/api/v0/web/components",
        "/api/v0/web/components/test.secret.s",
        "/",
        "/metrics",
        "/-/healthy",
    ] {
        let body = client
            .get(format!("{base}{path}"))
            .send()
            .await
            .expect("get")
            .text()
            .await
            .expect("body");
        assert!(!body.contains(SECRET), "{path} leaks the secret:\n{body}");
        seen.push_str(&body);
    }
    let detail: Value = serde_json::from_str(
        &client
            .get(format!("{base}/api/v0/web/components/test.secret.s"))
            .send()
            .await
            .expect("get")
            .text()
            .await
            .expect("body"),
    )
    .expect("json");
    assert_eq!(detail["arguments"]["password"], "(secret)");
    assert_eq!(detail["exports"]["token"], "(secret)");
    assert!(seen.contains("test.secret.s"));

    server.stop().await;
    c.shutdown().await;
}
