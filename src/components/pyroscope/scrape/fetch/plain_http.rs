//! A scrape over plain HTTP/1.1 written by hand on a tokio `TcpStream`, for the common case: an
//! `http://` target at an IP address, no proxy, one request per connection (`Connection: close`,
//! see `super::keeps_connection`).
//!
//! Why not reqwest here: a CPU scrape sends ~150 bytes and then waits 14 s for its answer. Through
//! reqwest and hyper that wait held ~42 KiB per target at 8,000 targets (heaptrack at 1,000
//! targets, docs/PERFORMANCE.md "Load: the single-instance ceiling"): hyper's read buffer
//! (16 KiB), its request channel (a 32-slot tokio block, 9.3 KiB), its 8 KiB header write buffer,
//! and reqwest's boxed futures (8.5 KiB). hyper's `client::conn::http1` would still allocate the
//! channel and both buffers up front. Here the wait holds the socket alone: the request is
//! written from a short-lived buffer, and a read buffer exists only once the socket is readable.
//!
//! It does only what a profile endpoint answers with: a status line, headers, and a body framed
//! by `Content-Length`, `Transfer-Encoding: chunked` or the end of the connection. Anything else
//! (a redirect, a 1xx, another transfer coding, conflicting lengths, a malformed head, a failed
//! connect) is [`Outcome::Fallback`]: the caller repeats the request through reqwest, so that
//! redirects, errors and their messages stay exactly reqwest's.

use std::net::SocketAddr;

use reqwest::header::{ACCEPT, HOST, HeaderMap, HeaderValue, USER_AGENT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::super::error::{Reason, ScrapeError};

/// Headers larger than this are left to reqwest (hyper allows more).
const MAX_HEAD: usize = 64 << 10;
/// Headers beyond this count are left to reqwest.
const MAX_HEADERS: usize = 64;
/// The read buffer, allocated once the answer starts arriving.
const READ_BUF: usize = 16 << 10;

/// The result of an attempt.
pub enum Outcome {
    /// The answer's head; the body is read from [`Body`].
    Response(Head, Body),
    /// An error that reqwest would also have met (the connection failed after it was open).
    Failed(ScrapeError),
    /// Not handled here: repeat the request through reqwest.
    Fallback,
}

/// What the caller needs of the answer's head.
#[derive(Debug)]
pub struct Head {
    pub status: u16,
    pub content_type: Option<String>,
    pub content_length: Option<u64>,
}

/// The address of an `http://` URL whose host is an IP literal (a name would need reqwest's
/// resolver and its Happy Eyeballs connect); `None` when this path does not apply.
pub fn direct_address(url: &reqwest::Url) -> Option<SocketAddr> {
    if url.scheme() != "http" {
        return None;
    }
    let host = url.host_str()?;
    let ip: std::net::IpAddr = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
        .parse()
        .ok()?;
    Some(SocketAddr::new(ip, url.port_or_known_default()?))
}

/// The request bytes: reqwest's defaults (`Accept: */*`, `User-Agent`, `Host`) where `headers`
/// lacks them, as reqwest and hyper-util add them.
fn request_bytes(url: &reqwest::Url, headers: &HeaderMap, user_agent: &HeaderValue) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(b"GET ");
    out.extend_from_slice(url.path().as_bytes());
    if let Some(q) = url.query() {
        out.push(b'?');
        out.extend_from_slice(q.as_bytes());
    }
    out.extend_from_slice(b" HTTP/1.1\r\n");
    let mut line = |name: &[u8], value: &[u8]| {
        out.extend_from_slice(name);
        out.extend_from_slice(b": ");
        out.extend_from_slice(value);
        out.extend_from_slice(b"\r\n");
    };
    if !headers.contains_key(ACCEPT) {
        line(b"accept", b"*/*");
    }
    if !headers.contains_key(USER_AGENT) {
        line(b"user-agent", user_agent.as_bytes());
    }
    if !headers.contains_key(HOST) {
        let host = url.host_str().unwrap_or_default();
        match url.port() {
            Some(port) => line(b"host", format!("{host}:{port}").as_bytes()),
            None => line(b"host", host.as_bytes()),
        }
    }
    for (name, value) in headers {
        line(name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Sends the GET and reads the answer's head.
pub async fn send(
    addr: SocketAddr,
    url: &reqwest::Url,
    headers: &HeaderMap,
    user_agent: &HeaderValue,
) -> Outcome {
    let Ok(mut stream) = TcpStream::connect(addr).await else {
        return Outcome::Fallback;
    };
    // As reqwest's connector does.
    let _ = stream.set_nodelay(true);
    let request = request_bytes(url, headers, user_agent);
    if let Err(e) = stream.write_all(&request).await {
        return Outcome::Failed(request_failed(&e.to_string()));
    }
    drop(request);
    // Wait with no buffer: a CPU scrape spends 14 s here.
    if let Err(e) = stream.readable().await {
        return Outcome::Failed(request_failed(&e.to_string()));
    }
    let mut buf = Vec::with_capacity(READ_BUF);
    loop {
        if buf.len() == buf.capacity() {
            if buf.len() >= MAX_HEAD {
                return Outcome::Fallback;
            }
            buf.reserve(buf.len());
        }
        match stream.read_buf(&mut buf).await {
            Ok(0) => {
                return Outcome::Failed(request_failed(
                    "connection closed before message completed",
                ));
            }
            Ok(_) => {}
            Err(e) => return Outcome::Failed(request_failed(&e.to_string())),
        }
        match parse_head(&buf) {
            Parsed::Partial => continue,
            Parsed::Fallback => return Outcome::Fallback,
            Parsed::Complete(head, framing, len) => {
                let body = Body {
                    stream,
                    buf,
                    start: len,
                    framing,
                };
                return Outcome::Response(head, body);
            }
        }
    }
}

fn request_failed(detail: &str) -> ScrapeError {
    ScrapeError::new(Reason::Connection, format!("request failed: {detail}"))
}

fn body_failed(detail: &str) -> ScrapeError {
    ScrapeError::new(
        Reason::Connection,
        format!("reading the response body failed: {detail}"),
    )
}

#[derive(Debug, PartialEq)]
enum Framing {
    Length(u64),
    Chunked(ChunkState),
    UntilClose,
}

#[derive(Debug, PartialEq)]
enum ChunkState {
    /// Expecting a size line.
    Size,
    /// Inside a chunk's data, this many bytes left.
    Data(u64),
    /// Expecting the CRLF after a chunk's data.
    DataEnd,
    /// After the last chunk: trailer lines up to an empty one.
    Trailers,
    Done,
}

enum Parsed {
    Partial,
    Fallback,
    Complete(Head, Framing, usize),
}

fn parse_head(buf: &[u8]) -> Parsed {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut slots);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Fallback,
    };
    let Some(status) = resp.code else {
        return Parsed::Fallback;
    };
    // 1xx and redirects are reqwest's to handle (it follows redirects when asked to).
    if !(200..300).contains(&status) && !(400..600).contains(&status) {
        return Parsed::Fallback;
    }
    let mut content_type = None;
    let mut content_length: Option<u64> = None;
    let mut chunked = false;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-type") {
            if content_type.is_none() {
                content_type = Some(String::from_utf8_lossy(h.value).into_owned());
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            let Some(n) = parse_length(h.value) else {
                return Parsed::Fallback;
            };
            if content_length.is_some_and(|c| c != n) {
                return Parsed::Fallback;
            }
            content_length = Some(n);
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            if chunked || !h.value.trim_ascii().eq_ignore_ascii_case(b"chunked") {
                return Parsed::Fallback;
            }
            chunked = true;
        }
    }
    let framing = match (chunked, content_length) {
        (true, Some(_)) => return Parsed::Fallback,
        (true, None) => Framing::Chunked(ChunkState::Size),
        _ if status == 204 => Framing::Length(0),
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::UntilClose,
    };
    let head = Head {
        status,
        content_type,
        content_length: if chunked { None } else { content_length },
    };
    Parsed::Complete(head, framing, len)
}

fn parse_length(v: &[u8]) -> Option<u64> {
    let v = v.trim_ascii();
    if v.is_empty() || !v.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(v).ok()?.parse().ok()
}

/// The body of an answer, read chunk by chunk.
pub struct Body {
    stream: TcpStream,
    /// Bytes read and not yet handed out are `buf[start..]`.
    buf: Vec<u8>,
    start: usize,
    framing: Framing,
}

impl Body {
    /// The next piece of the body, or `None` at its end.
    pub async fn chunk(&mut self) -> Result<Option<&[u8]>, ScrapeError> {
        loop {
            if let Some((from, to)) = self.step()? {
                return Ok(Some(&self.buf[from..to]));
            }
            if self.finished() {
                return Ok(None);
            }
            self.fill().await?;
        }
    }

    fn finished(&self) -> bool {
        matches!(
            self.framing,
            Framing::Length(0) | Framing::Chunked(ChunkState::Done)
        )
    }

    /// Reads more from the socket after what is buffered; an early end is an error unless the
    /// body runs to the end of the connection.
    async fn fill(&mut self) -> Result<(), ScrapeError> {
        if self.start == self.buf.len() {
            self.buf.clear();
            self.start = 0;
        } else if self.start > 0 && self.buf.len() == self.buf.capacity() {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.len() == self.buf.capacity() {
            if self.buf.len() >= MAX_HEAD {
                return Err(body_failed("invalid chunk framing"));
            }
            self.buf.reserve(READ_BUF);
        }
        match self.stream.read_buf(&mut self.buf).await {
            Ok(0) => {
                if self.framing == Framing::UntilClose {
                    self.framing = Framing::Length(0);
                    Ok(())
                } else {
                    Err(body_failed("end of file before message length reached"))
                }
            }
            Ok(_) => Ok(()),
            Err(e) => Err(body_failed(&e.to_string())),
        }
    }

    /// Takes the next piece of body data out of what is buffered (a range of `buf`), moving
    /// through the chunked framing; `None` when more must be read first (or the body is done).
    fn step(&mut self) -> Result<Option<(usize, usize)>, ScrapeError> {
        loop {
            let avail = self.buf.len() - self.start;
            match &mut self.framing {
                Framing::Length(0) => return Ok(None),
                Framing::Length(left) | Framing::Chunked(ChunkState::Data(left)) => {
                    if avail == 0 {
                        return Ok(None);
                    }
                    let n = avail.min(usize::try_from(*left).unwrap_or(usize::MAX));
                    *left -= n as u64;
                    if let Framing::Chunked(state @ ChunkState::Data(0)) = &mut self.framing {
                        *state = ChunkState::DataEnd;
                    }
                    let from = self.start;
                    self.start += n;
                    return Ok(Some((from, from + n)));
                }
                Framing::UntilClose => {
                    if avail == 0 {
                        return Ok(None);
                    }
                    let from = self.start;
                    self.start = self.buf.len();
                    return Ok(Some((from, self.start)));
                }
                Framing::Chunked(ChunkState::Done) => return Ok(None),
                Framing::Chunked(state) => {
                    let rest = &self.buf[self.start..];
                    let Some(end) = rest.windows(2).position(|w| w == b"\r\n") else {
                        return Ok(None);
                    };
                    let line = &rest[..end];
                    let next = match state {
                        ChunkState::Size => match chunk_size(line) {
                            Some(0) => ChunkState::Trailers,
                            Some(n) => ChunkState::Data(n),
                            None => return Err(body_failed("invalid chunk size line")),
                        },
                        ChunkState::DataEnd if line.is_empty() => ChunkState::Size,
                        ChunkState::DataEnd => {
                            return Err(body_failed("invalid chunk body CR LF"));
                        }
                        ChunkState::Trailers if line.is_empty() => ChunkState::Done,
                        _ => ChunkState::Trailers,
                    };
                    *state = next;
                    self.start += end + 2;
                }
            }
        }
    }
}

/// A chunk-size line: hex digits, then optional `;extensions`.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let size = line.split(|&b| b == b';').next()?.trim_ascii();
    if size.is_empty() || size.len() > 16 || !size.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(size).ok()?, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::net::TcpListener;

    /// (response head, handled, status, framing, content type)
    type HeadCase = (
        &'static [u8],
        bool,
        u16,
        Option<Framing>,
        Option<&'static str>,
    );

    #[test]
    fn heads() {
        let cases: &[HeadCase] = &[
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: a/b\r\n\r\n",
                true,
                200,
                Some(Framing::Length(12)),
                Some("a/b"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n",
                true,
                200,
                Some(Framing::Chunked(ChunkState::Size)),
                None,
            ),
            (
                b"HTTP/1.0 500 Oops\r\n\r\n",
                true,
                500,
                Some(Framing::UntilClose),
                None,
            ),
            (
                b"HTTP/1.1 204 No Content\r\n\r\n",
                true,
                204,
                Some(Framing::Length(0)),
                None,
            ),
            (
                b"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n",
                false,
                0,
                None,
                None,
            ),
            (b"HTTP/1.1 100 Continue\r\n\r\n", false, 0, None, None),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                false,
                0,
                None,
                None,
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                false,
                0,
                None,
                None,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                false,
                0,
                None,
                None,
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n",
                false,
                0,
                None,
                None,
            ),
            (b"HTTP/1.1 2000 OK\r\n\r\n", false, 0, None, None),
            (b"garbage\r\n\r\n", false, 0, None, None),
        ];
        for (raw, handled, status, framing, content_type) in cases {
            let name = String::from_utf8_lossy(raw);
            match parse_head(raw) {
                Parsed::Complete(head, f, len) => {
                    assert!(handled, "{name}");
                    assert_eq!(head.status, *status, "{name}");
                    assert_eq!(Some(&f), framing.as_ref(), "{name}");
                    assert_eq!(head.content_type.as_deref(), *content_type, "{name}");
                    assert_eq!(len, raw.len(), "{name}");
                }
                Parsed::Fallback => assert!(!handled, "{name}"),
                Parsed::Partial => panic!("partial: {name}"),
            }
        }
        assert!(matches!(
            parse_head(b"HTTP/1.1 200 OK\r\nA: b\r\n"),
            Parsed::Partial
        ));
    }

    #[test]
    fn chunk_sizes() {
        let cases: &[(&[u8], Option<u64>)] = &[
            (b"0", Some(0)),
            (b"1a", Some(26)),
            (b"FF;name=value", Some(255)),
            (b" 10 ", Some(16)),
            (b"", None),
            (b"x1", None),
            (b"11111111111111111", None),
        ];
        for (line, want) in cases {
            assert_eq!(chunk_size(line), *want, "{}", String::from_utf8_lossy(line));
        }
    }

    /// Serves `response` in pieces of `piece` bytes to one connection and returns the request.
    async fn serve_once(
        response: Vec<u8>,
        piece: usize,
    ) -> (SocketAddr, tokio::task::JoinHandle<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let server = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            s.set_nodelay(true).expect("nodelay");
            let mut request = Vec::new();
            while !request.ends_with(b"\r\n\r\n") {
                let mut b = [0u8; 1];
                if s.read(&mut b).await.expect("read") == 0 {
                    break;
                }
                request.push(b[0]);
            }
            for p in response.chunks(piece) {
                if s.write_all(p).await.is_err() {
                    break;
                }
            }
            request
        });
        (addr, server)
    }

    async fn read_all(addr: SocketAddr, headers: &HeaderMap) -> Result<(Head, Vec<u8>), String> {
        let url = reqwest::Url::parse(&format!("http://{addr}/debug/pprof/profile?seconds=1"))
            .expect("url");
        let ua = HeaderValue::from_static("test/1");
        let (head, mut body) = match send(addr, &url, headers, &ua).await {
            Outcome::Response(h, b) => (h, b),
            Outcome::Failed(e) => return Err(e.to_string()),
            Outcome::Fallback => return Err("fallback".into()),
        };
        let mut out = Vec::new();
        while let Some(c) = body.chunk().await.map_err(|e| e.to_string())? {
            out.extend_from_slice(c);
        }
        Ok((head, out))
    }

    /// Bodies framed every way, delivered in pieces of every size, read as reqwest reads them.
    #[tokio::test]
    async fn bodies_match_reqwest() {
        let payload: Vec<u8> = (0..40_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_vec();
        for part in payload.chunks(9_000) {
            chunked.extend_from_slice(format!("{:x};ext=1\r\n", part.len()).as_bytes());
            chunked.extend_from_slice(part);
            chunked.extend_from_slice(b"\r\n");
        }
        chunked.extend_from_slice(b"0\r\nTrailer: x\r\n\r\n");
        let mut length = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n",
            payload.len()
        )
        .into_bytes();
        length.extend_from_slice(&payload);
        let mut close = b"HTTP/1.1 404 Not Found\r\nConnection: close\r\n\r\n".to_vec();
        close.extend_from_slice(&payload);
        for response in [chunked, length, close] {
            let client = reqwest::Client::new();
            let (addr, server) = serve_once(response.clone(), 1 << 20).await;
            let want = client
                .get(format!("http://{addr}/"))
                .send()
                .await
                .expect("reqwest")
                .bytes()
                .await
                .expect("reqwest body");
            server.await.expect("server");
            assert_eq!(want.as_ref(), payload.as_slice());
            for piece in [1, 2, 5, 4096, 1 << 20] {
                let (addr, server) = serve_once(response.clone(), piece).await;
                let (_, got) = read_all(addr, &HeaderMap::new()).await.expect("read");
                assert!(got == want, "piece {piece}: {} bytes", got.len());
                server.await.expect("server");
            }
        }
    }

    #[tokio::test]
    async fn request_has_reqwests_headers_and_early_ends_fail() {
        let mut headers = HeaderMap::new();
        headers.insert("x-scope", HeaderValue::from_static("t1"));
        headers.insert(
            reqwest::header::CONNECTION,
            HeaderValue::from_static("close"),
        );
        let (addr, server) = serve_once(
            b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort".to_vec(),
            3,
        )
        .await;
        let err = read_all(addr, &headers).await.expect_err("short body");
        assert!(
            err.contains("end of file before message length reached"),
            "{err}"
        );
        let request = String::from_utf8(server.await.expect("server")).expect("ascii");
        let port = addr.port();
        for line in [
            "GET /debug/pprof/profile?seconds=1 HTTP/1.1\r\n",
            "accept: */*\r\n",
            "user-agent: test/1\r\n",
            &format!("host: 127.0.0.1:{port}\r\n"),
            "x-scope: t1\r\n",
            "connection: close\r\n",
        ] {
            assert!(request.contains(line), "{line:?} in {request:?}");
        }
        // Closed before the head: the message hyper gives.
        let (addr, server) = serve_once(b"HTTP/1.1 200".to_vec(), 100).await;
        let err = read_all(addr, &headers).await.expect_err("no head");
        assert!(
            err.contains("connection closed before message completed"),
            "{err}"
        );
        server.await.expect("server");
        // Nobody listening: left to reqwest, for its error.
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        assert_eq!(
            read_all(addr, &headers).await.err().as_deref(),
            Some("fallback")
        );
    }

    #[test]
    fn direct_addresses() {
        let cases = [
            ("http://10.0.0.1:6060/x", Some("10.0.0.1:6060")),
            ("http://10.0.0.1/x", Some("10.0.0.1:80")),
            ("http://[::1]:6060/x", Some("[::1]:6060")),
            ("https://10.0.0.1:6060/x", None),
            ("http://localhost:6060/x", None),
        ];
        for (url, want) in cases {
            let url = reqwest::Url::parse(url).expect("url");
            assert_eq!(
                direct_address(&url).map(|a| a.to_string()).as_deref(),
                want,
                "{url}"
            );
        }
    }
}
