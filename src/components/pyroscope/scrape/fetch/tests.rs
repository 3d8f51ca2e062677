//! `fetch` end to end against a small HTTP/1.1 server that records every request: what the
//! hand-written plain-HTTP path leaves to reqwest, and what it must not send twice.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use super::{FetchRequest, fetch};
use crate::budget::{Budget, Priority, Use};
use crate::components::pyroscope::scrape::error::{Reason, ScrapeError};
use crate::httpclient::{HttpClient, HttpClientConfig};

/// Serves `/a` (a redirect to `/b`), `/b` and `/auth` (404s) and `/drip` (a body a byte at a
/// time); returns its address and the requests it read, in order.
async fn server() -> (std::net::SocketAddr, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let log = log.clone();
            tokio::spawn(async move {
                let mut request = Vec::new();
                while !request.ends_with(b"\r\n\r\n") {
                    let mut b = [0u8; 1];
                    if s.read(&mut b).await.unwrap_or(0) == 0 {
                        return;
                    }
                    request.push(b[0]);
                }
                let request = String::from_utf8_lossy(&request).into_owned();
                let path = request.split(' ').nth(1).unwrap_or_default().to_string();
                log.lock().expect("log").push(request);
                let answer: &[u8] = match path.as_str() {
                    "/a" => b"HTTP/1.1 302 Found\r\nLocation: /b\r\nContent-Length: 0\r\n\r\n",
                    "/drip" => b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n",
                    _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope",
                };
                if s.write_all(answer).await.is_err() || path != "/drip" {
                    return;
                }
                for _ in 0..1000 {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    if s.write_all(b"x").await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (addr, seen)
}

async fn get(cfg: &HttpClientConfig, url: &str, timeout: Duration) -> ScrapeError {
    let client = HttpClient::new(cfg, "test/1").expect("client");
    let budget = Budget::unlimited();
    let mut memory = budget.reserve(Use::Scrape, 0);
    let url = reqwest::Url::parse(url).expect("url");
    let mut req = FetchRequest {
        memory: &mut memory,
        priority: Priority::Normal,
        client: &client,
        url: &url,
        timeout,
        body_size_limit: 0,
        size_hint: 0,
    };
    fetch(&mut req).await.expect_err("no profile here")
}

fn paths(seen: &Mutex<Vec<String>>) -> Vec<String> {
    let seen = seen.lock().expect("log");
    seen.iter()
        .map(|r| r.split(' ').nth(1).unwrap_or_default().to_string())
        .collect()
}

/// A redirect is reqwest's to follow, or the answer when redirects are not followed; either
/// way the redirected request is sent once.
#[tokio::test]
async fn redirects() {
    let long = Duration::from_secs(30);
    for (follow, want_status, want_paths) in [
        (true, "404", vec!["/a", "/a", "/b"]),
        (false, "302", vec!["/a"]),
    ] {
        let (addr, seen) = server().await;
        let cfg = HttpClientConfig {
            follow_redirects: follow,
            ..HttpClientConfig::default()
        };
        let err = get(&cfg, &format!("http://{addr}/a"), long).await;
        assert_eq!(err.reason, Reason::HttpStatus, "{follow}: {err}");
        assert!(err.to_string().contains(want_status), "{follow}: {err}");
        assert_eq!(paths(&seen), want_paths, "{follow}");
    }
}

/// Credentials in the URL reach the target as basic auth, as reqwest sends them.
#[tokio::test]
async fn url_credentials_are_sent() {
    let (addr, seen) = server().await;
    let port = addr.port();
    let url = format!("http://u:p@127.0.0.1:{port}/auth");
    let err = get(&HttpClientConfig::default(), &url, Duration::from_secs(30)).await;
    assert_eq!(err.reason, Reason::HttpStatus, "{err}");
    let seen = seen.lock().expect("log");
    assert_eq!(seen.len(), 1);
    // base64("u:p")
    assert!(
        seen[0]
            .to_ascii_lowercase()
            .contains("authorization: basic dtpw\r\n"),
        "{}",
        seen[0]
    );
}

/// A body dripped slower than the deadline is cut by it, on the hand-written path.
#[tokio::test]
async fn dripped_body_hits_the_deadline() {
    let (addr, seen) = server().await;
    let url = format!("http://{addr}/drip");
    let err = get(
        &HttpClientConfig::default(),
        &url,
        Duration::from_millis(200),
    )
    .await;
    assert_eq!(err.reason, Reason::Timeout, "{err}");
    assert_eq!(
        err.to_string(),
        "scrape timed out after 200ms without a complete answer"
    );
    assert_eq!(paths(&seen), ["/drip"]);
}
