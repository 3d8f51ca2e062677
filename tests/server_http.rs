//! The real binary's HTTP server: lifecycle endpoints, metrics, the component API, the UI,
//! reload through HTTP and SIGHUP, self-profiling, and signal-driven shutdown.

mod server_support;

use std::time::Duration;

use server_support::Scraper;

const GOOD: &str = "logging {\n  level = \"info\"\n}\n";

async fn get(client: &reqwest::Client, url: &str) -> (u16, String) {
    let resp = client.get(url).send().await.expect("request");
    let status = resp.status().as_u16();
    (status, resp.text().await.expect("body"))
}

#[tokio::test]
async fn endpoints_reload_and_shutdown() {
    let mut s = Scraper::start(GOOD);
    let client = reqwest::Client::new();

    assert_eq!(
        get(&client, &s.url("/-/ready")).await,
        (200, "Alloy is ready.\n".to_string())
    );
    assert_eq!(
        get(&client, &s.url("/-/healthy")).await,
        (200, "All Alloy components are healthy.\n".to_string())
    );

    let resp = client.get(s.url("/metrics")).send().await.expect("metrics");
    assert_eq!(resp.status().as_u16(), 200);
    let ctype = resp.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(ctype.starts_with("application/openmetrics-text"), "{ctype}");
    let metrics = resp.text().await.expect("body");
    for want in [
        "alloy_config_last_load_successful 1",
        r#"alloy_component_controller_running_components{health_type="healthy"} 0"#,
        "# TYPE alloy_component_evaluation_seconds histogram",
        // What every Prometheus client exposes, and which build runs.
        "process_cpu_seconds_total ",
        "process_resident_memory_bytes ",
        "process_open_fds ",
        "process_start_time_seconds ",
        "scraper_build_info{version=\"",
    ] {
        assert!(metrics.contains(want), "missing {want:?} in\n{metrics}");
    }

    assert_eq!(
        get(&client, &s.url("/api/v0/web/components")).await,
        (200, "[]".to_string())
    );
    assert_eq!(
        get(&client, &s.url("/api/v0/web/components/nope.nope.x"))
            .await
            .0,
        404
    );
    let (status, html) = get(&client, &s.url("/")).await;
    assert_eq!(status, 200);
    assert!(html.contains("No components are configured."), "{html}");

    // A good reload (POST) switches the log format to JSON.
    s.write_config("logging {\n  level = \"debug\"\n  format = \"json\"\n}\n");
    let resp = client
        .post(s.url("/-/reload"))
        .send()
        .await
        .expect("reload");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(resp.text().await.expect("body"), "config reloaded\n");
    let json_line = s.wait_for_log(Duration::from_secs(5), |l| {
        (l.starts_with('{') && l.contains("config reloaded")).then(|| l.to_string())
    });
    let json_line = json_line.unwrap_or_else(|| panic!("no JSON log line:\n{}", s.logs()));
    let parsed: serde_json::Value = serde_json::from_str(&json_line).expect("valid JSON log");
    assert_eq!(parsed["level"], "INFO", "{json_line}");

    // A bad reload (GET) is refused with the error and its position; the old config stays.
    s.write_config("logging {\n  level = \"verbose\"\n}\n");
    let (status, body) = get(&client, &s.url("/-/reload")).await;
    assert_eq!(status, 400);
    let path = server_support::shown(&s.config);
    assert_eq!(
        body,
        format!(
            "{path}:2:11: unrecognized log level \"verbose\" (expected debug, info, warn or error)\n"
        )
    );
    assert_eq!(get(&client, &s.url("/-/ready")).await.0, 200);
    let metrics = get(&client, &s.url("/metrics")).await.1;
    assert!(
        metrics.contains("alloy_config_last_load_successful 0"),
        "{metrics}"
    );
    assert!(
        metrics.contains("alloy_config_load_failures_total 1"),
        "{metrics}"
    );

    // SIGHUP reloads too.
    s.write_config(GOOD);
    s.signal(libc::SIGHUP);
    let mut reloaded = false;
    for _ in 0..100 {
        let metrics = get(&client, &s.url("/metrics")).await.1;
        if metrics.contains("alloy_config_last_load_successful 1") {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reloaded, "SIGHUP did not reload; logs:\n{}", s.logs());

    // SIGTERM stops it cleanly.
    s.signal(libc::SIGTERM);
    let status = s.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "{status:?}; logs:\n{}", s.logs());
}

#[tokio::test]
async fn a_bad_initial_config_exits_with_the_errors() {
    let mut s = Scraper::start("logging {\n  format = \"xml\"\n}\n");
    let status = s.wait_exit(Duration::from_secs(15));
    assert_eq!(status.code(), Some(1));
    let logs = s.logs();
    let path = server_support::shown(&s.config);
    assert!(
        logs.contains(&format!("{path}:2:12: unrecognized log format \"xml\"")),
        "{logs}"
    );
    assert!(logs.contains("^^^^^"), "caret missing:\n{logs}");
    assert!(
        logs.contains("could not perform the initial load successfully"),
        "{logs}"
    );
}

#[tokio::test]
async fn serves_a_cpu_profile_of_itself_and_stops_on_sigint() {
    let mut s = Scraper::start(GOOD);
    let client = reqwest::Client::new();
    let resp = client
        .get(s.url("/debug/pprof/profile?seconds=1"))
        .send()
        .await
        .expect("profile");
    assert_eq!(resp.status().as_u16(), 200);
    let body = resp.bytes().await.expect("body");
    assert_eq!(&body[..2], &[0x1f, 0x8b], "gzip");

    // The index lists what is served; Go's allocs profile says why it is not.
    let (status, index) = get(&client, &s.url("/debug/pprof/")).await;
    assert_eq!(status, 200);
    assert!(index.contains("href=\"profile?seconds=30\""), "{index}");
    assert!(index.contains("href=\"goroutine?debug=1\""), "{index}");
    assert!(index.contains("allocs</td><td>not served"), "{index}");
    for name in ["allocs", "mutex"] {
        let (status, text) = get(&client, &s.url(&format!("/debug/pprof/{name}"))).await;
        assert_eq!(status, 404, "{name}");
        assert!(text.contains("scraper is a Rust program"), "{name}: {text}");
    }
    // goroutine: the live tasks by name, as pprof and as text; the HTTP server's task is one.
    let frames = |p: &scraper::pprof::proto::Profile| -> Vec<String> {
        p.function
            .iter()
            .map(|f| p.string_table[f.name as usize].clone())
            .collect()
    };
    let bytes = client
        .get(s.url("/debug/pprof/goroutine"))
        .send()
        .await
        .expect("goroutine")
        .bytes()
        .await
        .expect("body");
    let p = scraper::pprof::decode(&bytes, &Default::default()).expect("a valid profile");
    assert!(frames(&p).iter().any(|f| f == "server"), "{:?}", frames(&p));
    let (status, text) = get(&client, &s.url("/debug/pprof/goroutine?debug=1")).await;
    assert_eq!(status, 200);
    assert!(text.contains("@ server (async)"), "{text}");
    // heap: resident memory by account, adding up to the resident size.
    let bytes = client
        .get(s.url("/debug/pprof/heap"))
        .send()
        .await
        .expect("heap")
        .bytes()
        .await
        .expect("body");
    let p = scraper::pprof::decode(&bytes, &Default::default()).expect("a valid profile");
    let total: i64 = p.sample.iter().map(|x| x.value[0]).sum();
    assert!(total > 1 << 20, "resident memory of {total} bytes");
    assert!(
        frames(&p).iter().any(|f| f == "unaccounted"),
        "{:?}",
        frames(&p)
    );
    let (status, text) = get(&client, &s.url("/debug/pprof/heap?debug=1")).await;
    assert_eq!(status, 200);
    assert!(text.contains("resident"), "{text}");

    s.signal(libc::SIGINT);
    let status = s.wait_exit(Duration::from_secs(15));
    assert!(status.success(), "{status:?}");
}

#[tokio::test]
async fn the_targets_page_shows_a_down_target_and_its_error() {
    // A port nothing listens on: the target is down with a connection error.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr")
        .port();
    let config = format!(
        r#"pyroscope.debug "sink" {{}}

pyroscope.scrape "app" {{
  targets         = [{{"__address__" = "127.0.0.1:{port}", "service_name" = "down-app"}}]
  forward_to      = [pyroscope.debug.sink.receiver]
  scrape_interval = "1s"

  profiling_config {{
    profile.process_cpu {{
      enabled = false
    }}
    profile.goroutine {{
      enabled = false
    }}
    profile.mutex {{
      enabled = false
    }}
    profile.block {{
      enabled = false
    }}
  }}
}}
"#
    );
    let s = Scraper::start(&config);
    let client = reqwest::Client::new();
    let mut page = String::new();
    // A hang guard, not a timing: the first scrape fails within a second or two.
    for _ in 0..300 {
        page = get(&client, &s.url("/targets?health=down")).await.1;
        if page.contains("down-app") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(page.contains("<h2>pyroscope.scrape.app"), "{page}");
    assert!(page.contains("<td class=\"down\">down</td>"), "{page}");
    assert!(page.contains("service_name=&quot;down-app&quot;"), "{page}");
    assert!(
        page.to_lowercase().contains("refused"),
        "the connection error is shown: {page}\nlogs:\n{}",
        s.logs()
    );
    let up = get(&client, &s.url("/targets?health=up")).await.1;
    assert!(up.contains("(0 of 1 shown)"), "{up}");
    let (status, index) = get(&client, &s.url("/")).await;
    assert_eq!(status, 200);
    assert!(index.contains("href=\"/targets\""), "{index}");
}

/// `/` draws the graph and links every component's page; a page shows the component's
/// arguments as tables with secrets redacted, its references as links, and the latest load.
#[tokio::test]
async fn component_pages_and_the_graph() {
    const PASSWORD: &str = "page-pass-5e1c07";
    let config = format!(
        r#"pyroscope.write "backend" {{
  endpoint {{
    url = "http://127.0.0.1:9/<push>"
    basic_auth {{
      username = "tenant"
      password = "{PASSWORD}"
    }}
  }}
}}

pyroscope.scrape "app" {{
  targets    = []
  forward_to = [pyroscope.write.backend.receiver]
}}
"#
    );
    let s = Scraper::start(&config);
    let client = reqwest::Client::new();
    // The server listens before the config is loaded (as Alloy does): the page shows the load's
    // result once `/-/ready` says it is done.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while get(&client, &s.url("/-/ready")).await.0 != 200 {
        assert!(
            std::time::Instant::now() < deadline,
            "never ready:\n{}",
            s.logs()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let (status, index) = get(&client, &s.url("/")).await;
    assert_eq!(status, 200);
    for want in [
        "<svg ",
        // The write is left of the scrape that references it, and the arrow joins them.
        "<a href=\"/components/pyroscope.write.backend\"><title>pyroscope.write.backend: ",
        "<a href=\"/components/pyroscope.scrape.app\"><title>pyroscope.scrape.app: ",
        "<line class=\"edge\" x1=\"240\" y1=\"27\" x2=\"310\" y2=\"27\"",
        "<a href=\"/explore\">",
        "<a href=\"/targets\">",
        "<span class=\"healthy\">ok</span>",
    ] {
        assert!(index.contains(want), "missing {want:?} in\n{index}");
    }

    let (status, page) = get(&client, &s.url("/components/pyroscope.write.backend")).await;
    assert_eq!(status, 200);
    for want in [
        "<h1>pyroscope.write.backend</h1>",
        "<tr><th>password</th><td>(secret)</td></tr>",
        "<tr><th>url</th><td>http://127.0.0.1:9/&lt;push&gt;</td></tr>",
        "<tr><th>Referenced by</th><td><a href=\"/components/pyroscope.scrape.app\">pyroscope.scrape.app</a></td></tr>",
        "<h2>Exports</h2>\n<table><tr><th>receiver</th>",
        "<span class=\"healthy\">ok</span>",
    ] {
        assert!(page.contains(want), "missing {want:?} in\n{page}");
    }
    assert!(!page.contains(PASSWORD), "{page}");
    assert!(!page.contains("<push>"), "{page}");

    // A failed reload shows on every page with its error; the graph keeps running.
    s.write_config(&config.replace("targets    = []", "targets    = 5"));
    let (status, _) = get(&client, &s.url("/-/reload")).await;
    assert_eq!(status, 400);
    let (_, page) = get(&client, &s.url("/components/pyroscope.scrape.app")).await;
    assert!(
        page.contains("<span class=\"unhealthy\">failed</span><pre>"),
        "{page}"
    );
    assert!(
        page.contains("<a href=\"/components/pyroscope.write.backend\">"),
        "{page}"
    );

    let (status, missing) = get(&client, &s.url("/components/nope.nope.x")).await;
    assert_eq!(status, 404);
    assert!(
        missing.contains("No component nope.nope.x is running"),
        "{missing}"
    );
}
