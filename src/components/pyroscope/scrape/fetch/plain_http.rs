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
//! It does only what a profile endpoint answers with: a status line (1xx heads skipped, as
//! hyper does), headers, and a body framed by `Content-Length`, `Transfer-Encoding: chunked` or
//! the end of the connection. Once the request has gone out it is never repeated (a CPU profile
//! would run twice, and the repeat could meet "cpu profiling already in use" with the deadline
//! spent): a malformed or oversized answer is an error worded as hyper words it. The one
//! [`Outcome::Fallback`] is a 3xx when redirects are followed: the caller repeats the request
//! through reqwest, which follows them (a redirect answers at once, so nothing long runs twice).
//! A failed connect is reported as reqwest reports it, without a second attempt.

use std::net::SocketAddr;

use reqwest::header::{ACCEPT, HOST, HeaderMap, HeaderValue, USER_AGENT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::super::error::{Reason, ScrapeError};

/// A head larger than this is an error (hyper's limit is larger; a profile endpoint's head is
/// a few hundred bytes).
const MAX_HEAD: usize = 64 << 10;
/// hyper's limit on a response's header count.
const MAX_HEADERS: usize = 100;
/// The read buffer, allocated once the answer starts arriving.
const READ_BUF: usize = 16 << 10;
/// A chunk-size line (with its extensions) longer than this is an error.
const MAX_SIZE_LINE: usize = 16 << 10;
/// Trailers larger than this in total are an error.
const MAX_TRAILERS: usize = 64 << 10;

/// The result of an attempt.
pub enum Outcome {
    /// The answer's head; the body is read from [`Body`].
    Response(Head, Body),
    /// The exchange failed; worded as reqwest would have worded it.
    Failed(ScrapeError),
    /// A redirect while redirects are followed: repeat the request through reqwest.
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
    // Credentials in the URL become an Authorization header in reqwest.
    if url.scheme() != "http" || !url.username().is_empty() || url.password().is_some() {
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
        // `host[:port]` as hyper writes it: the URL has no credentials on this path
        // (`direct_address`), IPv6 hosts keep their brackets, and a default port is dropped.
        line(b"host", url.authority().as_bytes());
    }
    for (name, value) in headers {
        line(name.as_str().as_bytes(), value.as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// Sends the GET and reads the answer's head. With `follow_redirects`, a 3xx is
/// [`Outcome::Fallback`]; without, it is the answer.
pub async fn send(
    addr: SocketAddr,
    url: &reqwest::Url,
    headers: &HeaderMap,
    user_agent: &HeaderValue,
    follow_redirects: bool,
) -> Outcome {
    let mut stream = match TcpStream::connect(addr).await {
        Ok(s) => s,
        // reqwest's cause chain for the same failure (hyper-util's connector).
        Err(e) => {
            return Outcome::Failed(io_failed(
                "request failed: client error (Connect): tcp connect error",
                &e,
            ));
        }
    };
    // As reqwest's connector does.
    let _ = stream.set_nodelay(true);
    let request = request_bytes(url, headers, user_agent);
    if let Err(e) = stream.write_all(&request).await {
        return Outcome::Failed(io_failed(SEND_IO, &e));
    }
    drop(request);
    // Wait with no buffer: a CPU scrape spends 14 s here.
    if let Err(e) = stream.readable().await {
        return Outcome::Failed(io_failed(SEND_IO, &e));
    }
    let mut buf = Vec::with_capacity(READ_BUF);
    loop {
        if buf.len() == buf.capacity() {
            if buf.len() >= MAX_HEAD {
                return Outcome::Failed(request_failed("message head is too large"));
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
            Err(e) => return Outcome::Failed(io_failed(SEND_IO, &e)),
        }
        // Informational heads are skipped (hyper does the same); what follows is parsed anew.
        loop {
            match parse_head(&buf) {
                Parsed::Partial => break,
                Parsed::Informational(len) => {
                    buf.drain(..len);
                }
                Parsed::Invalid(what) => return Outcome::Failed(request_failed(what)),
                Parsed::Complete(head, framing, len) => {
                    if follow_redirects && (300..400).contains(&head.status) {
                        return Outcome::Fallback;
                    }
                    let body = Body {
                        stream,
                        buf,
                        start: len,
                        scanned: 0,
                        trailers: 0,
                        framing,
                    };
                    return Outcome::Response(head, body);
                }
            }
        }
    }
}

/// hyper's text for an I/O failure while sending or awaiting the answer, after reqwest's.
const SEND_IO: &str = "request failed: client error (SendRequest): connection error";
/// reqwest's words for a body whose connection broke.
const BODY_IO: &str = "reading the response body failed: error reading a body from connection";

/// A failure while sending or reading the head, worded as reqwest's cause chain words hyper's.
fn request_failed(detail: &str) -> ScrapeError {
    ScrapeError::new(
        Reason::Connection,
        format!("request failed: client error (SendRequest): {detail}"),
    )
}

fn body_failed(detail: &str) -> ScrapeError {
    ScrapeError::new(Reason::Connection, format!("{BODY_IO}: {detail}"))
}

/// An I/O error after `context`; a timed-out socket is a timeout, as reqwest's `is_timeout`
/// says.
fn io_failed(context: &str, e: &std::io::Error) -> ScrapeError {
    let reason = if e.kind() == std::io::ErrorKind::TimedOut {
        Reason::Timeout
    } else {
        Reason::Connection
    };
    ScrapeError::new(reason, format!("{context}: {e}"))
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
    /// A 1xx head of this many bytes, to skip.
    Informational(usize),
    /// hyper's text for what is wrong.
    Invalid(&'static str),
    Complete(Head, Framing, usize),
}

fn parse_head(buf: &[u8]) -> Parsed {
    let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut resp = httparse::Response::new(&mut slots);
    let len = match resp.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(httparse::Error::Status) => return Parsed::Invalid("invalid HTTP status-code parsed"),
        Err(httparse::Error::Version) => return Parsed::Invalid("invalid HTTP version parsed"),
        Err(httparse::Error::TooManyHeaders) => {
            return Parsed::Invalid("message head is too large");
        }
        Err(_) => return Parsed::Invalid("invalid HTTP header parsed"),
    };
    let Some(status) = resp.code else {
        return Parsed::Invalid("invalid HTTP status-code parsed");
    };
    match status {
        // A protocol switch was not asked for.
        101 => return Parsed::Invalid("received unexpected message from connection"),
        100..=199 => return Parsed::Informational(len),
        200..=999 => {}
        _ => return Parsed::Invalid("invalid HTTP status-code parsed"),
    }
    let mut content_type = None;
    let mut content_length: Option<u64> = None;
    // Whether the last transfer coding seen is chunked; None without Transfer-Encoding.
    let mut chunked: Option<bool> = None;
    for h in resp.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-type") {
            if content_type.is_none() {
                content_type = Some(String::from_utf8_lossy(h.value).into_owned());
            }
        } else if h.name.eq_ignore_ascii_case("content-length") {
            // hyper takes `3, 3` and repeated headers when every value agrees.
            for v in h.value.split(|&b| b == b',') {
                let Some(n) = parse_length(v) else {
                    return Parsed::Invalid("invalid content-length parsed");
                };
                if content_length.is_some_and(|c| c != n) {
                    return Parsed::Invalid("invalid content-length parsed");
                }
                content_length = Some(n);
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding")
            && let Some(last) = h.value.split(|&b| b == b',').next_back()
        {
            chunked = Some(last.trim_ascii().eq_ignore_ascii_case(b"chunked"));
        }
    }
    // As hyper: no body for 204 and 304 whatever the headers say; Transfer-Encoding wins
    // over Content-Length; a coding other than chunked last runs to the end of the connection.
    let framing = match (chunked, content_length) {
        _ if status == 204 || status == 304 => Framing::Length(0),
        (Some(true), _) => Framing::Chunked(ChunkState::Size),
        (Some(false), _) => Framing::UntilClose,
        (None, Some(n)) => Framing::Length(n),
        (None, None) => Framing::UntilClose,
    };
    let head = Head {
        status,
        content_type,
        content_length: if chunked.is_some() {
            None
        } else {
            content_length
        },
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
    /// Bytes after `start` already searched for a line end, so that a line arriving a byte at
    /// a time is scanned once.
    scanned: usize,
    /// Trailer bytes seen so far.
    trailers: usize,
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
            // Only a line can fill the buffer, and `step` caps lines well below this.
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
            Err(e) => Err(io_failed(BODY_IO, &e)),
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
                    let Some(nl) = rest[self.scanned..].iter().position(|&b| b == b'\n') else {
                        self.scanned = rest.len();
                        let trailers = *state == ChunkState::Trailers;
                        if trailers && self.trailers + rest.len() > MAX_TRAILERS {
                            return Err(body_failed("chunk trailers bytes over limit"));
                        }
                        if !trailers && rest.len() > MAX_SIZE_LINE {
                            return Err(body_failed("chunk size line is too large"));
                        }
                        return Ok(None);
                    };
                    let end = self.scanned + nl;
                    self.scanned = 0;
                    let Some(line) = rest[..end].strip_suffix(b"\r") else {
                        return Err(body_failed("invalid chunk size line"));
                    };
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
                        _ => {
                            self.trailers += end + 1;
                            if self.trailers > MAX_TRAILERS {
                                return Err(body_failed("chunk trailers bytes over limit"));
                            }
                            ChunkState::Trailers
                        }
                    };
                    *state = next;
                    self.start += end + 1;
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

    /// What a head parses to.
    #[derive(Debug, PartialEq)]
    enum Want {
        Ok(u16, Framing, Option<&'static str>),
        Info,
        Invalid(&'static str),
    }

    #[test]
    fn heads() {
        use Want::*;
        let chunked = || Framing::Chunked(ChunkState::Size);
        let cases: Vec<(&[u8], Want)> = vec![
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 12\r\nContent-Type: a/b\r\n\r\n",
                Ok(200, Framing::Length(12), Some("a/b")),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n",
                Ok(200, chunked(), None),
            ),
            (
                b"HTTP/1.0 500 Oops\r\n\r\n",
                Ok(500, Framing::UntilClose, None),
            ),
            (
                b"HTTP/1.1 204 No Content\r\n\r\n",
                Ok(204, Framing::Length(0), None),
            ),
            // hyper reads no body for 204 and 304, whatever the headers say.
            (
                b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n",
                Ok(204, Framing::Length(0), None),
            ),
            (
                b"HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n",
                Ok(304, Framing::Length(0), None),
            ),
            (
                b"HTTP/1.1 302 Found\r\nLocation: /x\r\n\r\n",
                Ok(302, Framing::UntilClose, None),
            ),
            (b"HTTP/1.1 100 Continue\r\n\r\n", Info),
            (b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n", Info),
            (
                b"HTTP/1.1 101 Switching Protocols\r\n\r\n",
                Invalid("received unexpected message from connection"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
                Ok(200, chunked(), None),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nContent-Length: 3\r\n\r\n",
                Ok(200, Framing::UntilClose, None),
            ),
            // Chunked wins over a length, as in hyper.
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
                Ok(200, chunked(), None),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\n",
                Ok(200, Framing::Length(3), None),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
                Invalid("invalid content-length parsed"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\n",
                Invalid("invalid content-length parsed"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: -3\r\n\r\n",
                Invalid("invalid content-length parsed"),
            ),
            (
                b"HTTP/1.1 2000 OK\r\n\r\n",
                Invalid("invalid HTTP status-code parsed"),
            ),
            (b"garbage\r\n\r\n", Invalid("invalid HTTP version parsed")),
        ];
        for (raw, want) in cases {
            let name = String::from_utf8_lossy(raw);
            let got = match parse_head(raw) {
                Parsed::Complete(head, f, len) => {
                    assert_eq!(len, raw.len(), "{name}");
                    Ok(head.status, f, head.content_type.map(|c| &*c.leak()))
                }
                Parsed::Informational(len) => {
                    assert_eq!(len, raw.len(), "{name}");
                    Info
                }
                Parsed::Invalid(what) => Invalid(what),
                Parsed::Partial => panic!("partial: {name}"),
            };
            assert_eq!(got, want, "{name}");
        }
        assert!(matches!(
            parse_head(b"HTTP/1.1 200 OK\r\nA: b\r\n"),
            Parsed::Partial
        ));
        // hyper's header count.
        let mut many = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..100 {
            many.extend_from_slice(format!("h{i}: v\r\n").as_bytes());
        }
        many.extend_from_slice(b"\r\n");
        assert!(matches!(parse_head(&many), Parsed::Complete(..)));
        many.splice(17..17, b"one-more: v\r\n".iter().copied());
        assert!(matches!(
            parse_head(&many),
            Parsed::Invalid("message head is too large")
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
        read_all_following(addr, headers, true).await
    }

    async fn read_all_following(
        addr: SocketAddr,
        headers: &HeaderMap,
        follow: bool,
    ) -> Result<(Head, Vec<u8>), String> {
        let url = reqwest::Url::parse(&format!("http://{addr}/debug/pprof/profile?seconds=1"))
            .expect("url");
        let ua = HeaderValue::from_static("test/1");
        let (head, mut body) = match send(addr, &url, headers, &ua, follow).await {
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
        assert_eq!(
            err,
            "reading the response body failed: error reading a body from connection: end of file before message length reached"
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
        // Closed before the head: the message reqwest gives.
        let (addr, server) = serve_once(b"HTTP/1.1 200".to_vec(), 100).await;
        let err = read_all(addr, &headers).await.expect_err("no head");
        assert_eq!(
            err,
            "request failed: client error (SendRequest): connection closed before message completed"
        );
        server.await.expect("server");
    }

    /// Nobody listening: one connect attempt, reported in reqwest's words.
    #[tokio::test]
    async fn refused_connect_reads_as_reqwests() {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        drop(listener);
        let err = reqwest::Client::builder()
            .no_proxy()
            .build()
            .expect("client")
            .get(format!("http://{addr}/"))
            .send()
            .await
            .expect_err("refused");
        let want = super::super::transport_error(&err, "request failed").to_string();
        let got = read_all(addr, &HeaderMap::new())
            .await
            .expect_err("refused");
        assert_eq!(got, want);
    }

    /// Once the request is out, nothing is left to reqwest but a redirect that is followed.
    #[tokio::test]
    async fn answered_requests_are_not_repeated() {
        /// (response, follow redirects, status and body or error text)
        type Case = (
            &'static [u8],
            bool,
            Result<(u16, &'static [u8]), &'static str>,
        );
        let cases: &[Case] = &[
            (
                b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc",
                true,
                Err("request failed: client error (SendRequest): invalid content-length parsed"),
            ),
            (
                b"HTTP/1.1 200 OK\r\nBad Header\r\n\r\n",
                true,
                Err("request failed: client error (SendRequest): invalid HTTP header parsed"),
            ),
            (
                b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
                true,
                Ok((200, b"ok")),
            ),
            (
                b"HTTP/1.1 204 No Content\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nno\r\n0\r\n\r\n",
                true,
                Ok((204, b"")),
            ),
            (
                b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 9\r\n\r\n2\r\nok\r\n0\r\n\r\n",
                true,
                Ok((200, b"ok")),
            ),
            (b"HTTP/1.1 302 Found\r\nLocation: /b\r\n\r\n", true, Err("fallback")),
            (
                b"HTTP/1.1 302 Found\r\nLocation: /b\r\nContent-Length: 2\r\n\r\nmv",
                false,
                Ok((302, b"mv")),
            ),
        ];
        for (response, follow, want) in cases {
            for piece in [1, 1 << 20] {
                let (addr, server) = serve_once(response.to_vec(), piece).await;
                let got = read_all_following(addr, &HeaderMap::new(), *follow).await;
                let got = got
                    .as_ref()
                    .map(|(h, b)| (h.status, b.as_slice()))
                    .map_err(String::as_str);
                assert_eq!(got, *want, "{piece}: {response:?}");
                server.await.expect("server");
            }
        }
    }

    /// A hostile target dripping a chunk-size line or trailers without end is cut off.
    #[tokio::test]
    async fn endless_chunk_lines_fail() {
        let head = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
        let mut size_line = head.to_vec();
        size_line.extend_from_slice(b"1;");
        size_line.resize(size_line.len() + MAX_SIZE_LINE + 10, b'x');
        let mut trailers = head.to_vec();
        trailers.extend_from_slice(b"0\r\n");
        while trailers.len() < head.len() + MAX_TRAILERS + 100 {
            trailers.extend_from_slice(b"x-trailer: 0123456789\r\n");
        }
        trailers.extend_from_slice(b"\r\n");
        let prefix = "reading the response body failed: error reading a body from connection: ";
        for (response, want) in [
            (size_line, "chunk size line is too large"),
            (trailers, "chunk trailers bytes over limit"),
        ] {
            for piece in [7, 1 << 20] {
                let (addr, server) = serve_once(response.clone(), piece).await;
                let err = read_all(addr, &HeaderMap::new()).await.expect_err(want);
                assert_eq!(err, format!("{prefix}{want}"), "{piece}");
                let _ = server.await;
            }
        }
    }

    #[test]
    fn timed_out_reads_are_timeouts() {
        for (kind, reason) in [
            (std::io::ErrorKind::TimedOut, Reason::Timeout),
            (std::io::ErrorKind::ConnectionReset, Reason::Connection),
        ] {
            let e = io_failed(SEND_IO, &std::io::Error::from(kind));
            assert_eq!(e.reason, reason, "{kind:?}");
        }
    }

    #[test]
    fn direct_addresses() {
        let cases = [
            ("http://10.0.0.1:6060/x", Some("10.0.0.1:6060")),
            ("http://10.0.0.1/x", Some("10.0.0.1:80")),
            ("http://[::1]:6060/x", Some("[::1]:6060")),
            ("https://10.0.0.1:6060/x", None),
            ("http://localhost:6060/x", None),
            // reqwest turns URL credentials into an Authorization header.
            ("http://u:p@10.0.0.1:6060/x", None),
            ("http://u@10.0.0.1:6060/x", None),
            ("http://:p@10.0.0.1:6060/x", None),
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
