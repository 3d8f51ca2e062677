//! Secrets given to real components (backend passwords, bearer tokens, OAuth2 client secrets,
//! the Kubernetes token) never leave the process except in the requests they are for: not in
//! logs at debug level, not in the component API or the UI, not in /metrics, not after a
//! reload, and not in the errors of a failing token endpoint or a failing backend.

mod scrape_support;
mod support;

use std::time::Duration;

use base64::Engine as _;
use scrape_support::{Scraper, free_port};
use support::fake_kube::FakeKube;
use support::profile_server::{ProfileServer, heap_versions};
use support::pyroscope_receiver::{Fault, PyroscopeReceiver};

const WRITE_PASSWORD: &str = "write-pass-7f3a91";
const SCRAPE_TOKEN: &str = "scrape-token-c04e22";
const OAUTH_SECRET: &str = "oauth-secret-9b1d55";
const KUBE_TOKEN: &str = "kube-token-e8a0c3";
const FAILING_PASSWORD: &str = "failing-pass-21f6b0";

fn config(kube: &FakeKube, server: &ProfileServer, ok: &str, failing: &str, dead: u16) -> String {
    let (addr, prefix) = server.target(0);
    format!(
        r#"logging {{
  level = "debug"
}}

discovery.kubernetes "pods" {{
  role         = "pod"
  api_server   = "{kube}"
  bearer_token = "{KUBE_TOKEN}"
}}

pyroscope.scrape "app" {{
  targets    = [{{"__address__" = "{addr}", "__profile_path_prefix__" = "{prefix}", "service_name" = "app"}}]
  forward_to = [pyroscope.write.ok.receiver, pyroscope.write.failing.receiver, pyroscope.write.oauth.receiver]
  scrape_interval = "1s"
  scrape_timeout  = "900ms"

  authorization {{
    type        = "Bearer"
    credentials = "{SCRAPE_TOKEN}"
  }}

{profiling}}}

pyroscope.write "ok" {{
  endpoint {{
    url = "{ok}"
    basic_auth {{
      username = "tenant"
      password = "{WRITE_PASSWORD}"
    }}
  }}
}}

// The backend refuses the credentials: its errors are logged.
pyroscope.write "failing" {{
  endpoint {{
    url                 = "{failing}"
    max_backoff_retries = 1
    min_backoff_period  = "10ms"
    basic_auth {{
      username = "tenant"
      password = "{FAILING_PASSWORD}"
    }}
  }}
}}

// The token endpoint is down: fetching a token fails, and is logged.
pyroscope.write "oauth" {{
  endpoint {{
    url                 = "{ok}"
    max_backoff_retries = 1
    min_backoff_period  = "10ms"
    oauth2 {{
      client_id     = "scraper"
      client_secret = "{OAUTH_SECRET}"
      token_url     = "http://127.0.0.1:{dead}/token"
    }}
  }}
}}
"#,
        kube = kube.url(),
        profiling = support::alloy::profiling_config(&["memory"]),
    )
}

/// Each secret in the forms it could leak in: as is, and base64 of `user:secret` as a basic
/// auth header carries it.
fn needles() -> Vec<(String, &'static str)> {
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(format!("tenant:{s}"));
    vec![
        (WRITE_PASSWORD.to_string(), "write password"),
        (b64(WRITE_PASSWORD), "write basic auth header"),
        (SCRAPE_TOKEN.to_string(), "scrape bearer token"),
        (OAUTH_SECRET.to_string(), "oauth2 client secret"),
        (KUBE_TOKEN.to_string(), "kubernetes bearer token"),
        (FAILING_PASSWORD.to_string(), "failing write password"),
        (b64(FAILING_PASSWORD), "failing write basic auth header"),
    ]
}

fn assert_clean(what: &str, text: &str) {
    for (needle, name) in needles() {
        assert!(
            !text.contains(&needle),
            "{what} contains the {name}:\n{}",
            text.lines()
                .filter(|l| l.contains(&needle))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_never_appear_in_logs_api_ui_or_metrics() {
    let kube = FakeKube::start().await;
    kube.set_required_token(Some(KUBE_TOKEN));
    let server = ProfileServer::start(1, heap_versions(50, 4), Duration::ZERO).await;
    let ok = PyroscopeReceiver::start().await;
    let failing = PyroscopeReceiver::start().await;
    failing.set_outage(Fault::Status(401));
    let dead = free_port();
    let cfg = config(&kube, &server, &ok.url(), &failing.url(), dead);
    let s = Scraper::start(move |_| cfg).await;

    // The secrets were used: profiles arrived with the write credentials, discovery listed
    // with its token, the failing backend and the token endpoint failed.
    assert!(
        ok.wait_for(2, Duration::from_secs(20)).await,
        "{}",
        s.logs()
    );
    let auth = ok.received()[0].header("authorization").map(str::to_owned);
    let want = base64::engine::general_purpose::STANDARD.encode(format!("tenant:{WRITE_PASSWORD}"));
    assert_eq!(auth, Some(format!("Basic {want}")));
    assert!(failing.wait_for_requests(2, Duration::from_secs(20)).await);
    assert!(
        kube.requests()
            .iter()
            .any(|r| r.header("authorization") == Some(&format!("Bearer {KUBE_TOKEN}"))),
        "discovery did not use its token"
    );
    let logged = s
        .wait(Duration::from_secs(20), |s| {
            let l = s.logs();
            l.contains("401") && l.contains("token")
        })
        .await;
    assert!(logged, "expected the failures to be logged:\n{}", s.logs());

    // Every view of the running process.
    let mut pages = vec![
        "/".to_string(),
        "/metrics".to_string(),
        "/api/v0/web/components".to_string(),
    ];
    for id in [
        "discovery.kubernetes.pods",
        "pyroscope.scrape.app",
        "pyroscope.write.ok",
        "pyroscope.write.failing",
        "pyroscope.write.oauth",
    ] {
        pages.push(format!("/api/v0/web/components/{id}"));
        pages.push(format!("/components/{id}"));
    }
    for page in &pages {
        let body = s.get(page).await;
        assert_clean(page, &body);
    }
    // Arguments are shown, with the secrets masked.
    let write = s.get("/api/v0/web/components/pyroscope.write.ok").await;
    assert!(write.contains("(secret)"), "{write}");
    let page = s.get("/components/pyroscope.write.ok").await;
    assert!(
        page.contains("<tr><th>password</th><td>(secret)</td></tr>"),
        "{page}"
    );

    // A reload (same config, then a broken one) logs nothing more.
    let client = reqwest::Client::new();
    let _ = client
        .post(format!("http://{}/-/reload", s.addr))
        .send()
        .await;
    let broken = std::fs::read_to_string(&s.config)
        .expect("config")
        .replace("scrape_timeout  = \"900ms\"", "scrape_timeout  = 900");
    std::fs::write(&s.config, broken).expect("write config");
    let reload = client
        .post(format!("http://{}/-/reload", s.addr))
        .send()
        .await
        .expect("reload");
    assert!(!reload.status().is_success());
    assert_clean("the reload error", &reload.text().await.expect("body"));
    // The failed load's error is now shown on the overview and on every component page
    // (quoting the config around the fault): each is read again and checked.
    for page in pages
        .iter()
        .filter(|p| *p == "/" || p.starts_with("/components/"))
    {
        let body = s.get(page).await;
        assert!(
            body.contains("<span class=\"unhealthy\">failed</span>"),
            "{page} should show the failed reload:\n{body}"
        );
        assert_clean(&format!("{page} after the broken reload"), &body);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;

    assert_clean("the logs", &s.logs());
    assert_clean("standard output", &s.output());
    // The check can fail: the config file itself holds every secret in plain text.
    let config = std::fs::read_to_string(&s.config).expect("config");
    for secret in [
        WRITE_PASSWORD,
        SCRAPE_TOKEN,
        OAUTH_SECRET,
        KUBE_TOKEN,
        FAILING_PASSWORD,
    ] {
        assert!(config.contains(secret));
    }
    assert!(
        s.logs().lines().count() > 20,
        "debug logging produced little:
{}",
        s.logs()
    );
}
