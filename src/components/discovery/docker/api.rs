//! Asking the Docker Engine API for its containers and networks: `GET /containers/json` (the
//! running ones, with the `filter` blocks as Docker's `filters` JSON) and `GET /networks`.
//!
//! `host` is the Docker CLI's: `unix:///var/run/docker.sock` is spoken here as plain HTTP/1.1
//! over the socket (one request per connection, `Connection: close`, a chunked or
//! length-delimited answer), `tcp://h:p` as `http://h:p`, and `http(s)://` through the shared
//! HTTP client with the block's client arguments (as Prometheus: only for those schemes).
//! Paths carry no API version, which the daemon answers with its own current version.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::targets::{Container, Network};
use crate::httpclient::HttpClient;
use crate::httpclient::body::read_limited;

/// The largest answer read (a host with thousands of containers lists a few MiB).
pub const BODY_LIMIT: usize = 64 << 20;

/// Where the daemon is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    Unix(String),
    /// A base URL, `http://h:p` or `https://h:p`, without a trailing `/`.
    Http(String),
}

/// `host` as the Docker client reads it.
pub fn endpoint(host: &str) -> Result<Endpoint, String> {
    if let Some(path) = host.strip_prefix("unix://") {
        if path.is_empty() {
            return Err(format!("host {host:?}: no socket path"));
        }
        return Ok(Endpoint::Unix(path.to_string()));
    }
    let url = if let Some(rest) = host.strip_prefix("tcp://") {
        format!("http://{rest}")
    } else if host.starts_with("http://") || host.starts_with("https://") {
        host.to_string()
    } else {
        return Err(format!(
            "host {host:?}: expected unix://, tcp://, http:// or https://"
        ));
    };
    let parsed = reqwest::Url::parse(&url).map_err(|e| format!("host {host:?}: {e}"))?;
    if parsed.host_str().is_none_or(str::is_empty) {
        return Err(format!("host {host:?}: no host"));
    }
    Ok(Endpoint::Http(url.trim_end_matches('/').to_string()))
}

/// Docker's `filters` query value: `{"name": {"value": true}, ...}` (the Go client's encoding).
/// Prometheus adds each value to a `filters.Args`, so a filter with no values is no key at
/// all, and with no keys left there is no query (`filters.Args.Len() == 0`).
pub fn filters_query(filters: &[(String, Vec<String>)]) -> Option<String> {
    let mut m: BTreeMap<&str, BTreeMap<&str, bool>> = BTreeMap::new();
    for (name, values) in filters {
        for v in values {
            m.entry(name.as_str()).or_default().insert(v.as_str(), true);
        }
    }
    if m.is_empty() {
        return None;
    }
    let json = serde_json::to_string(&m).ok()?;
    Some(format!(
        "filters={}",
        crate::gocompat::url::query_escape(&json)
    ))
}

/// The containers and networks, or why not.
pub async fn list(
    endpoint: &Endpoint,
    client: &HttpClient,
    filters: &[(String, Vec<String>)],
    timeout: Duration,
) -> Result<(Vec<Container>, Vec<Network>), String> {
    let containers_path = match filters_query(filters) {
        Some(q) => format!("/containers/json?{q}"),
        None => "/containers/json".to_string(),
    };
    let containers = get(endpoint, client, &containers_path, timeout).await?;
    let containers: Vec<Container> = serde_json::from_slice(&containers)
        .map_err(|e| format!("error while listing containers: {e}"))?;
    let networks = get(endpoint, client, "/networks", timeout).await?;
    let networks: Vec<Network> = serde_json::from_slice(&networks)
        .map_err(|e| format!("error while computing network labels: {e}"))?;
    Ok((containers, networks))
}

async fn get(
    endpoint: &Endpoint,
    client: &HttpClient,
    path: &str,
    timeout: Duration,
) -> Result<Vec<u8>, String> {
    match endpoint {
        Endpoint::Unix(socket) => tokio::time::timeout(timeout, unix_get(socket, path))
            .await
            .map_err(|_| format!("GET {path} on {socket}: no answer within {timeout:?}"))?,
        Endpoint::Http(base) => {
            let mut request = client
                .client()
                .get(format!("{base}{path}"))
                .header(reqwest::header::ACCEPT, "application/json")
                .timeout(timeout)
                .build()
                .map_err(|e| e.to_string())?;
            client
                .apply(request.headers_mut())
                .await
                .map_err(|e| e.to_string())?;
            let response = client
                .client()
                .execute(request)
                .await
                .map_err(|e| format!("GET {path}: {e}"))?;
            let status = response.status();
            let body = read_limited(response, BODY_LIMIT)
                .await
                .map_err(|e| format!("GET {path}: {e}"))?;
            if !status.is_success() {
                return Err(format!(
                    "GET {path}: Docker API answered {status}: {}",
                    String::from_utf8_lossy(&body).trim()
                ));
            }
            Ok(body.to_vec())
        }
    }
}

/// One `GET` over the daemon's socket.
async fn unix_get(socket: &str, path: &str) -> Result<Vec<u8>, String> {
    let fail = |e: std::io::Error| format!("GET {path} on {socket}: {e}");
    let mut stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(fail)?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: docker\r\nUser-Agent: {}\r\nAccept: application/json\r\nConnection: close\r\n\r\n",
        crate::httpclient::USER_AGENT
    );
    stream.write_all(request.as_bytes()).await.map_err(fail)?;
    let mut raw = Vec::new();
    let mut chunk = vec![0u8; 64 * 1024];
    loop {
        let n = stream.read(&mut chunk).await.map_err(fail)?;
        if n == 0 {
            break;
        }
        if raw.len() + n > BODY_LIMIT {
            return Err(format!("GET {path}: answer exceeds {BODY_LIMIT} bytes"));
        }
        raw.extend_from_slice(&chunk[..n]);
    }
    let (status, chunked, body) = parse_response(&raw).map_err(|e| format!("GET {path}: {e}"))?;
    let body = if chunked {
        dechunk(body).map_err(|e| format!("GET {path}: {e}"))?
    } else {
        body.to_vec()
    };
    if !(200..300).contains(&status) {
        return Err(format!(
            "GET {path}: Docker API answered {status}: {}",
            String::from_utf8_lossy(&body).trim()
        ));
    }
    Ok(body)
}

/// The status, whether the body is chunked, and the body's bytes.
fn parse_response(raw: &[u8]) -> Result<(u16, bool, &[u8]), String> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut response = httparse::Response::new(&mut headers);
    let head = match response.parse(raw) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Err("the answer ended inside its headers".into()),
        Err(e) => return Err(format!("malformed answer: {e}")),
    };
    let status = response.code.unwrap_or(0);
    let chunked = response.headers.iter().any(|h| {
        h.name.eq_ignore_ascii_case("transfer-encoding")
            && String::from_utf8_lossy(h.value)
                .to_ascii_lowercase()
                .contains("chunked")
    });
    let mut body = &raw[head..];
    if !chunked
        && let Some(len) = response
            .headers
            .iter()
            .find(|h| h.name.eq_ignore_ascii_case("content-length"))
            .and_then(|h| {
                std::str::from_utf8(h.value)
                    .ok()?
                    .trim()
                    .parse::<usize>()
                    .ok()
            })
    {
        body = body
            .get(..len)
            .ok_or("the answer is shorter than its Content-Length")?;
    }
    Ok((status, chunked, body))
}

/// A chunked body's data.
fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("a chunk size line without its end")?;
        let line =
            std::str::from_utf8(&body[..line_end]).map_err(|_| "a chunk size that is not text")?;
        let size_text = line.split(';').next().unwrap_or("").trim();
        let size = usize::from_str_radix(size_text, 16)
            .map_err(|_| format!("bad chunk size {size_text:?}"))?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        let data = body.get(..size).ok_or("the answer ended inside a chunk")?;
        out.extend_from_slice(data);
        body = body
            .get(size + 2..)
            .ok_or("the answer ended after a chunk")?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_as_the_docker_client_reads_them() {
        assert_eq!(
            endpoint("unix:///var/run/docker.sock"),
            Ok(Endpoint::Unix("/var/run/docker.sock".into()))
        );
        assert_eq!(
            endpoint("tcp://10.0.0.1:2375"),
            Ok(Endpoint::Http("http://10.0.0.1:2375".into()))
        );
        assert_eq!(
            endpoint("https://docker.example:2376/"),
            Ok(Endpoint::Http("https://docker.example:2376".into()))
        );
        assert!(endpoint("/var/run/docker.sock").is_err());
        assert!(endpoint("unix://").is_err());
        assert!(endpoint("tcp://").is_err());
    }

    #[test]
    fn filters_are_dockers_json() {
        assert_eq!(filters_query(&[]), None);
        let q = filters_query(&[
            ("label".into(), vec!["a=b".into(), "c".into()]),
            ("name".into(), vec!["web".into()]),
        ])
        .expect("query");
        let json = crate::gocompat::url::query_unescape(q.trim_start_matches("filters="))
            .expect("escaped");
        assert_eq!(
            json,
            r#"{"label":{"a=b":true,"c":true},"name":{"web":true}}"#
        );
        // Filters without values are not sent, as Go's filters.Args drops them.
        assert_eq!(filters_query(&[("label".into(), vec![])]), None);
        let q = filters_query(&[
            ("label".into(), vec![]),
            ("name".into(), vec!["web".into()]),
        ])
        .expect("query");
        let json = crate::gocompat::url::query_unescape(q.trim_start_matches("filters="))
            .expect("escaped");
        assert_eq!(json, r#"{"name":{"web":true}}"#);
    }

    #[test]
    fn answers_chunked_or_not() {
        let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n[]";
        assert_eq!(parse_response(plain), Ok((200, false, &b"[]"[..])));
        let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n[1,\r\n2;x=y\r\n2]\r\n0\r\n\r\n";
        let (status, is_chunked, body) = parse_response(chunked).expect("parses");
        assert_eq!((status, is_chunked), (200, true));
        assert_eq!(dechunk(body), Ok(b"[1,2]".to_vec()));
        assert!(dechunk(b"5\r\nab").is_err());
        assert!(parse_response(b"HTTP/1.1 200").is_err());
    }
}
