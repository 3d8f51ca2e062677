//! TLS verification must give Go's verdict, since Alloy users' `tls_config` blocks were written
//! against Go's client. Each case is tried by scraper's HTTP client and by a real Go client
//! (tests/go/tlsclient) against the same test server, and the two must agree; then a
//! `pyroscope.write` delivers through a self-signed certificate given as `ca_file`, which
//! rustls alone refuses (`CaUsedAsEndEntity`) and Go accepts.
//!
//! Without Go the matrix is skipped with a message (`SCRAPER_REQUIRE_GO=1` makes that a
//! failure); the delivery test needs no Go.

mod support;

use std::time::Duration;

use scraper::httpclient::{HttpClient, HttpClientConfig, TlsConfig};
use support::go::{self, Require};
use support::pyroscope_receiver::{
    Issued, PyroscopeReceiver, SelfSigned, TestCa, Writer, numbered, numbered_profile, self_signed,
    tls_server_config,
};

const WAIT: Duration = Duration::from_secs(20);

/// scraper's verdict: does a GET over TLS trusting `ca_file` get an HTTP answer?
async fn scraper_verdict(url: &str, ca_file: &str, server_name: &str) -> Result<(), String> {
    let cfg = HttpClientConfig {
        tls_config: TlsConfig {
            ca_file: ca_file.to_string(),
            server_name: server_name.to_string(),
            ..TlsConfig::default()
        },
        ..HttpClientConfig::default()
    };
    let client = HttpClient::new(&cfg, "tls-test").map_err(|e| e.to_string())?;
    client
        .client()
        .get(url)
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            // reqwest's Display stops at "error sending request": the TLS reason is a source.
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                text = format!("{text}: {s}");
                source = s.source();
            }
            text
        })
}

/// Go's verdict, from tests/go/tlsclient.
fn go_verdict(
    bin: &std::path::Path,
    url: &str,
    ca_file: &str,
    server_name: &str,
) -> Result<(), String> {
    let out = std::process::Command::new(bin)
        .args(["-ca", ca_file, "-server-name", server_name, url])
        .output()
        .expect("run tlsclient");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if text == "ok" { Ok(()) } else { Err(text) }
}

struct Case {
    name: &'static str,
    /// The certificate the server presents.
    server: Issued,
    /// What `ca_file` holds.
    ca_pem: String,
    server_name: &'static str,
    /// Go's verdict, written down so a wrong oracle run cannot pass silently either.
    accepted: bool,
}

fn cases() -> Vec<Case> {
    let names = ["127.0.0.1", "localhost"];
    let mut out = Vec::new();
    let mut pinned = |name, server: Issued, server_name, accepted| {
        let ca_pem = server.cert_pem.clone();
        out.push(Case {
            name,
            server,
            ca_pem,
            server_name,
            accepted,
        });
    };
    pinned(
        "self-signed CA:TRUE",
        self_signed(&names, SelfSigned::Ca),
        "",
        true,
    );
    pinned(
        "self-signed leaf",
        self_signed(&names, SelfSigned::Leaf),
        "",
        true,
    );
    pinned(
        "self-signed for another host",
        self_signed(&["pyroscope.internal"], SelfSigned::Ca),
        "",
        false,
    );
    pinned(
        "self-signed for another host, server_name set",
        self_signed(&["pyroscope.internal"], SelfSigned::Ca),
        "pyroscope.internal",
        true,
    );
    pinned(
        "self-signed, expired",
        self_signed(&names, SelfSigned::Expired),
        "",
        false,
    );
    pinned(
        "self-signed, client auth only",
        self_signed(&names, SelfSigned::ClientAuthOnly),
        "",
        false,
    );
    let ca = TestCa::new("scraper test CA");
    out.push(Case {
        name: "leaf issued by the CA",
        server: ca.issue(&names),
        ca_pem: ca.cert_pem.clone(),
        server_name: "",
        accepted: true,
    });
    out.push(Case {
        name: "another self-signed certificate in ca_file",
        server: self_signed(&names, SelfSigned::Ca),
        ca_pem: self_signed(&names, SelfSigned::Ca).cert_pem,
        server_name: "",
        accepted: false,
    });
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verification_agrees_with_go() {
    if !Require::Go.have_go() {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = dir.path().join("tlsclient");
    go::build("tlsclient", &bin, &dir.path().join("gopath"));
    let mut disagreements = Vec::new();
    for (i, case) in cases().into_iter().enumerate() {
        let rx = PyroscopeReceiver::start_tls(tls_server_config(&case.server, None)).await;
        let ca_file = dir.path().join(format!("ca-{i}.pem"));
        std::fs::write(&ca_file, &case.ca_pem).expect("write ca");
        let ca_file = ca_file.display().to_string();
        let url = rx.url();
        let ours = scraper_verdict(&url, &ca_file, case.server_name).await;
        let (bin, u, c, n) = (bin.clone(), url.clone(), ca_file.clone(), case.server_name);
        let go = tokio::task::spawn_blocking(move || go_verdict(&bin, &u, &c, n))
            .await
            .expect("go client");
        println!(
            "{:<48} go: {:<60} scraper: {}",
            case.name,
            format!("{go:?}"),
            match &ours {
                Ok(()) => "Ok".to_string(),
                Err(e) => format!("Err({e})"),
            }
        );
        if go.is_ok() != case.accepted {
            disagreements.push(format!("{}: Go's verdict changed: {go:?}", case.name));
        }
        if ours.is_ok() != go.is_ok() {
            disagreements.push(format!("{}: go {go:?}, scraper {ours:?}", case.name));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_delivers_through_a_self_signed_ca_file() {
    let server = self_signed(&["127.0.0.1", "localhost"], SelfSigned::Ca);
    let rx = PyroscopeReceiver::start_tls(tls_server_config(&server, None)).await;
    let dir = tempfile::tempdir().expect("tempdir");
    let ca_file = dir.path().join("server.pem");
    std::fs::write(&ca_file, &server.cert_pem).expect("write");
    let w = Writer::start(&format!(
        "endpoint {{\n  url = \"{}\"\n  tls_config {{\n    ca_file = \"{}\"\n  }}\n}}\n",
        rx.url(),
        ca_file.display()
    ));
    w.append(vec![numbered_profile("self-signed", 1)]);
    assert!(rx.wait_for(1, WAIT).await, "nothing delivered");
    assert_eq!(
        numbered(&rx.received()[0].raw),
        ("self-signed".to_string(), 1)
    );
    w.stop().await;
}
